"""Splitting a shell command line into simple commands, and a simple command into words.

**Parsing.** A small quote-aware scanner splits the command on ``&&``, ``||``, ``;``, ``|``,
``&`` and newlines outside quotes, drops comments, keeps ``$(...)`` and backticks opaque,
and takes heredoc bodies out of the text (``cat <<'EOF' > f`` is an edit of ``f``; a
``patch``/``git apply`` heredoc yields the ``+++ b/<path>`` files it changes). Each piece is
then split into words with POSIX quoting rules (a regex tokenizer equivalent to
:mod:`shlex` in POSIX mode, 4x faster on agents' long quoted scripts; an unbalanced quote
runs to the end instead of raising; see :func:`split_words`). No input raises.

What the words mean is :mod:`brainbox.shellcmd`'s business; :mod:`brainbox.shell` is the
public face. Standard library only: the agent hooks import this on the hot path.
"""

from __future__ import annotations

import re

__all__ = ["split_commands", "split_words"]

_PLAIN_STOP = re.compile(r"[\\'\"#$`<\n&|;()]")
_DQ_STOP = re.compile(r'["\\]')


class _Piece:
    """One simple command: its text (heredoc operators removed) and heredoc bodies."""

    __slots__ = ("heredocs", "text")

    def __init__(self):
        self.text = []
        self.heredocs: list[str] = []


def split_commands(command: str) -> list[tuple[str, list[str]]]:
    """Split a command line into simple commands: ``[(text, heredoc_bodies), ...]``.

    Splits on ``&&``, ``||``, ``;``, ``|``, ``&`` and newlines outside quotes; removes
    comments, backslash-newline continuations and heredoc bodies (returned alongside the
    piece that opened them); keeps ``$(...)`` and backticks whole. Parentheses and braces
    of subshells/groups act as separators. Never raises.
    """
    s = command if isinstance(command, str) else ""
    n = len(s)
    pieces: list[_Piece] = []
    cur = _Piece()
    pending: list[tuple[str, bool, _Piece]] = []  # (delimiter, strip_tabs, owner)
    quote = None
    i = 0

    def flush():
        nonlocal cur
        if "".join(cur.text).strip() or any(owner is cur for _, _, owner in pending):
            pieces.append(cur)
        cur = _Piece()

    while i < n:
        if quote == "'":
            j = s.find("'", i)
            j = n - 1 if j < 0 else j
            cur.text.append(s[i : j + 1])
            quote = None
            i = j + 1
            continue
        if quote == '"':
            m = _DQ_STOP.search(s, i)
            if m is None:
                cur.text.append(s[i:])
                break
            j = m.start()
            if s[j] == "\\":
                cur.text.append(s[i : j + 2])
                i = j + 2
                continue
            cur.text.append(s[i : j + 1])
            quote = None
            i = j + 1
            continue
        m = _PLAIN_STOP.search(s, i)
        if m is None:
            cur.text.append(s[i:])
            break
        if m.start() > i:
            cur.text.append(s[i : m.start()])
            i = m.start()
        c = s[i]
        if c == "\\":
            if i + 1 < n and s[i + 1] == "\n":
                i += 2
                continue
            cur.text.append(s[i : i + 2])
            i += 2
            continue
        if c in "'\"":
            quote = c
            cur.text.append(c)
            i += 1
            continue
        if c == "#":
            prev = cur.text[-1][-1:] if cur.text else ""
            if not prev or prev.isspace():
                j = s.find("\n", i)
                i = n if j < 0 else j
                continue
            cur.text.append(c)
            i += 1
            continue
        if c == "$":
            if i + 1 < n and s[i + 1] == "(":
                j, depth = i + 2, 1
                while j < n and depth:
                    depth += {"(": 1, ")": -1}.get(s[j], 0)
                    j += 1
                cur.text.append(s[i:j])
                i = j
                continue
            cur.text.append(c)
            i += 1
            continue
        if c == "`":
            j = s.find("`", i + 1)
            j = n if j < 0 else j + 1
            cur.text.append(s[i:j])
            i = j
            continue
        if s.startswith("<<<", i):
            cur.text.append(" <<< ")
            i += 3
            continue
        if s.startswith("<<", i):
            j = i + 2
            strip = False
            if j < n and s[j] == "-":
                strip, j = True, j + 1
            while j < n and s[j] in " \t":
                j += 1
            k = j
            while k < n and not s[k].isspace() and s[k] not in ";&|<>()":
                k += 1
            delim = s[j:k].replace("'", "").replace('"', "").replace("\\", "")
            if delim:
                pending.append((delim, strip, cur))
            cur.text.append(" ")
            i = k
            continue
        if c == "<":
            cur.text.append(c)
            i += 1
            continue
        if c == "\n":
            flush()
            i += 1
            if pending:
                i = _consume_heredocs(s, i, pending)
                pending = []
            continue
        if s.startswith("&&", i) or s.startswith("||", i):
            flush()
            i += 2
            continue
        prev = cur.text[-1][-1:] if cur.text else ""
        if c == "&":
            if prev == ">" or s.startswith("&>", i):  # >&2, &>file: a redirection
                cur.text.append(c)
                i += 1
                continue
            flush()
            i += 1
            continue
        if c == "|":
            if prev == ">":  # >| clobber
                cur.text.append(c)
                i += 1
                continue
            flush()
            i += 2 if s.startswith("|&", i) else 1
            continue
        # ; ( )
        flush()
        i += 1
    flush()
    if pending:  # heredoc opened on the last line without a body
        _consume_heredocs(s, n, pending)
    return [("".join(p.text).strip(), p.heredocs) for p in pieces]


def _consume_heredocs(s: str, i: int, pending) -> int:
    """Read heredoc bodies starting at ``i``; attach each to its piece; return new index."""
    n = len(s)
    for delim, strip, owner in pending:
        body = []
        while i < n:
            j = s.find("\n", i)
            line = s[i:] if j < 0 else s[i:j]
            i = n if j < 0 else j + 1
            if (line.lstrip("\t") if strip else line).rstrip() == delim:
                break
            body.append(line)
        owner.heredocs.append("\n".join(body))
    return i


_FD_DUP = re.compile(r"(?<![^\s])\d*>&\s*(?:\d+|-)(?=\s|$)")
_FD_REDIR = re.compile(r"(?<![^\s])\d+(>>?|<)")


_TOKEN = re.compile(
    r"""(\s+)|(&>>|&>|>>|>\||>&|<<<|<>|>|<|&|\|)|'([^']*)'?|"((?:[^"\\]|\\.)*)"?"""
    r"""|\\(.)|([^\s'"\\<>&|]+)""",
    re.DOTALL,
)
_DQ_ESCAPE = re.compile(r'\\([\\"$`\n])')


def _dq_unescape(m: re.Match) -> str:
    return "" if m.group(1) == "\n" else m.group(1)  # backslash-newline joins lines


def split_words(text: str) -> list[str]:
    """Split one simple command into words with POSIX shell quoting (as ``shlex`` in POSIX
    mode with punctuation for redirections), redirection operators as their own words.

    A regex tokenizer rather than :class:`shlex.shlex`: agents write long quoted scripts
    (``sed -i '...'``, ``python -c "..."``) and shlex's per-character loop took 60% of
    loading mini-swe-agent's 9.5k steps; this is 4x faster on the 19.8k real commands of the
    dev data and agrees with shlex on all but 4 of them (where it follows bash: ``\\$``
    and ``\\``` inside double quotes lose the backslash). An unclosed quote runs to the
    end of the text instead of raising.
    """
    text = _FD_DUP.sub(" ", text)  # 2>&1, >&2
    text = _FD_REDIR.sub(r" \1 ", text)  # 2>/dev/null -> > /dev/null
    words: list[str] = []
    cur: list[str] | None = None
    for m in _TOKEN.finditer(text):
        space, op, sq, dq, esc, plain = m.groups()
        if space is not None:
            if cur is not None:
                words.append("".join(cur))
                cur = None
            continue
        if op is not None:
            if cur is not None:
                words.append("".join(cur))
                cur = None
            words.append(op)
            continue
        if cur is None:
            cur = []
        if sq is not None:
            cur.append(sq)
        elif dq is not None:
            cur.append(_DQ_ESCAPE.sub(_dq_unescape, dq))
        elif esc is not None:
            cur.append(esc if esc != "\n" else "")
        elif plain is not None:
            cur.append(plain)
    if cur is not None:
        words.append("".join(cur))
    return words
