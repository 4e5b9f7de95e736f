"""The text of files that tool results showed (issue 16, Deliver 5: the replay's
history-only snippet channel).

A loader that has a step's output records what it showed of a file on the event, as
``shown`` ``{absolute path: [first line, text, whole]}`` (``brainbox.events`` makes the
paths project-relative and redacts the text; :meth:`TaskBuilder.show
<brainbox.eval.loaders.base.TaskBuilder.show>`). ``first line`` is the 1-based number of
the text's first line, ``whole`` says the text is the entire file. Only what the output
plainly is, line for line, counts:

- a dedicated viewer's result with its line numbers stripped (:func:`numbered`): Claude
  Code ``Read`` (``     1→text``; its structured result's ``file.content`` when present),
  OpenHands ``str_replace_editor view`` (``cat -n``'s ``     1\\ttext``), SWE-agent
  ``open``/``goto``/``scroll_*`` (``12:text`` under ``[File: ...]``);
- a shell step (:func:`shell_views`) that is, after any ``cd``, one viewer of one file:
  ``cat F``, ``cat -n F``, ``nl [-ba] F``, ``head [-n N] F``, ``tail -n +K F``,
  ``sed -n 'A,Bp' F`` (``A,$p``, ``Ap``), optionally piped into ``sed -n 'A,Bp'`` or
  ``head -n N`` (``nl -ba F | sed -n '10,40p'``, the most common view of mini-swe-agent's
  runs). Anything else (``grep -n``, two files, a redirection, ``tail -n 20``, whose first
  line is unknown) shows nothing. The step must have succeeded (exit code 0, no error).

Standard library only.
"""

from __future__ import annotations

import posixpath
import re

from brainbox.shellcmd import analyse, guarded
from brainbox.shellwords import split_commands

ARROW = re.compile(r"^ *(\d+)→(.*)$")  # Claude Code Read
TAB = re.compile(r"^ *(\d+)\t(.*)$")  # cat -n, nl, OpenHands view
COLON = re.compile(r"^(\d+):(.*)$")  # SWE-agent open
_SED = re.compile(r"^(\d+)(?:,(\d+|\$))?p$")
_COUNT = re.compile(r"^-?(\d+)$")


def numbered(text: str, pattern: re.Pattern | None = None) -> tuple[int, str] | None:
    """(first line number, text without the numbers) of a numbered listing: the run of
    consecutively numbered lines from the first numbered one (lines before it, a header,
    are skipped; the run ends at the first line that breaks it: a footer, a clipped
    marker). None when no line is numbered."""
    pattern = pattern or TAB
    start, out = None, []
    for line in (text or "").split("\n"):
        m = pattern.match(line)
        if m is None:
            if start is None:
                continue
            break
        n = int(m.group(1))
        if start is None:
            start = n
        elif n != start + len(out):
            break
        out.append(m.group(2))
    return None if start is None else (start, "\n".join(out))


def _nl_body(text: str) -> str:
    """``nl``'s output without its numbers: numbered lines lose them, a line of blanks is an
    unnumbered blank line (``nl`` numbers non-blank lines only by default)."""
    out = []
    for line in text.split("\n"):
        m = TAB.match(line)
        out.append(m.group(2) if m else ("" if not line.strip() else line))
    return "\n".join(out)


def _lines(text: str) -> str:
    """Output text as a file's lines: the final newline dropped."""
    return text.removesuffix("\n")


def _operands(argv: list[str]) -> list[str]:
    return [w for w in argv[1:] if not w.startswith("-") or w == "-"]


def _head_count(argv: list[str]) -> int | None:
    """N of ``head -n N`` / ``-nN`` / ``-N`` / ``--lines=N`` (10 without one); None for
    anything else (``-c``)."""
    rest = argv[1:]
    words = [w for w in rest if w.startswith("-")]
    if not words:
        return 10
    if len(words) == 1 and _COUNT.match(words[0]):
        return int(_COUNT.match(words[0]).group(1))
    if words == ["-n"] and rest.index("-n") + 1 < len(rest) and rest[rest.index("-n") + 1].isdigit():
        return int(rest[rest.index("-n") + 1])
    if len(words) == 1 and re.fullmatch(r"-n\d+|--lines=\d+", words[0]):
        return int(re.sub(r"\D", "", words[0]))
    return None


def _view(cmd) -> tuple[str, str, int] | None:
    """``(file, kind, first line)`` of one viewer command of one file; kind ``plain``
    (its output is the lines), ``numbered`` (``cat -n``, ``nl -ba``: strip the numbers)
    or ``nl`` (numbers on non-blank lines only). None when it is not one."""
    argv, prog = cmd.argv, cmd.prog
    if cmd.reads or cmd.edits or cmd.creates or cmd.heredocs:
        return None
    if prog == "cat":
        if len(argv) == 2 and not argv[1].startswith("-"):
            return argv[1], "plain", 1
        if len(argv) == 3 and argv[1] == "-n" and not argv[2].startswith("-"):
            return argv[2], "numbered", 1
        return None
    if prog == "nl":
        opts = argv[1:-1]
        if len(argv) < 2 or argv[-1].startswith("-"):
            return None
        if opts in (["-ba"], ["-b", "a"]):
            return argv[-1], "numbered", 1
        return (argv[-1], "nl", 1) if not opts else None
    if prog == "sed":
        if len(argv) == 4 and argv[1] == "-n" and _SED.match(argv[2]):
            return argv[3], "plain", int(_SED.match(argv[2]).group(1))
        return None
    if prog == "head":
        ops = [w for w in argv[1:] if not w.startswith("-")]
        if _head_count(argv) is not None and ops and ops[-1] == argv[-1]:
            return argv[-1], "plain", 1
        return None
    if prog == "tail":
        m = re.fullmatch(r"tail (?:-n ?)?\+(\d+) (\S+)", " ".join(argv))
        return (m.group(2), "plain", int(m.group(1))) if m else None
    return None


def _filter(cmd) -> int | None:
    """The first line (relative, 1-based) a pipe filter keeps: ``sed -n 'A,Bp'`` A,
    ``head -n N`` 1; None for anything else (a filter with a file operand is not one)."""
    argv = cmd.argv
    if cmd.reads or cmd.edits or cmd.creates:
        return None
    if cmd.prog == "sed" and len(argv) == 3 and argv[1] == "-n" and _SED.match(argv[2]):
        return int(_SED.match(argv[2]).group(1))
    if cmd.prog == "head" and _head_count(argv) is not None and \
            not [w for w in _operands(argv) if not w.isdigit()]:
        return 1
    return None


def shell_views(command: str, output: str | None, cwd: str) -> list[tuple[str, int, str, bool]]:
    """What a shell step's ``output`` showed of a file (module docstring): ``[(absolute
    path, first line, text, whole)]``, empty when the step is not a plain view of one
    file. ``cwd``: where the command ran; a leading ``cd`` is followed."""
    if not output or not isinstance(command, str) or len(command) > 2000:
        return []
    pieces = guarded(lambda: split_commands(command), [])
    cmds = [guarded(lambda t=t, h=h: analyse(t, h), None) for t, h in pieces]
    if not cmds or any(c is None for c in cmds):
        return []
    where = cwd
    while cmds and cmds[0].prog == "cd":
        ops = _operands(cmds[0].argv)
        if len(ops) != 1 or "$" in ops[0] or ops[0].startswith("~"):
            return []
        where = posixpath.normpath(posixpath.join(where, ops[0]))
        cmds = cmds[1:]
    if not cmds:
        return []
    view = _view(cmds[0])
    if view is None:
        return []
    path, kind, start = view
    filters = [_filter(c) for c in cmds[1:]]
    if any(f is None for f in filters) or "$" in path or "*" in path:
        return []
    text = _lines(output)
    if kind == "numbered":
        got = numbered(text)
        if got is None:
            return []
        start, text = got
    else:
        if kind == "nl":
            if filters:
                return []
            text = _nl_body(text)
        for f in filters:
            start += f - 1
    whole = kind in ("plain", "numbered", "nl") and start == 1 and not filters and \
        cmds[0].prog in ("cat", "nl")
    return [(posixpath.normpath(posixpath.join(where, path)), start, text, whole)]


_FILE_HEADER = re.compile(r"^\[File: (.+?) \((\d+) lines total\)\]$", re.MULTILINE)


def window_view(observation: str) -> tuple[str, int, str, bool] | None:
    """SWE-agent's file window (``open``, ``goto``, ``scroll_*``, and the window an ``edit``
    or ``create`` shows after it): ``[File: PATH (N lines total)]`` then ``12:text``
    lines; ``(path, first line, text, whole)``, None when the observation has no window."""
    m = _FILE_HEADER.search(observation or "")
    if m is None:
        return None
    got = numbered(observation[m.end():], COLON)
    if got is None:
        return None
    start, text = got
    return m.group(1), start, text, start == 1 and text.count("\n") + 1 == int(m.group(2))
