"""What a shell command does, read from its text: the files it touches and its tool identity.

Agents run most of their work through a shell, so a recorded ``Bash`` step says little until
its command is read. This module turns one command string into

- ``command_files(command, cwd)``: the file paths it touches, each with its fact
  (``'read'``, ``'edit'``, ``'create'`` or ``'run'``; see :mod:`brainbox.shellcmd`), in
  order of appearance, deduplicated;
- ``command_tool(command)``: its tool identity ``Bash:<program>``;
- ``command_action(command)``: the event action (``read | edit | search | run | other``;
  a ``create`` is an ``edit`` event);
- ``command_terms(command)``: search patterns worth indexing as context terms (grep/rg
  patterns, ``find -name`` values);
- ``describe(command, cwd, seen)``: all four from one parse (what the loaders use).

**Test labels.** A test runner's argument that is neither a path nor a source file
(``python tests/runtests.py admin_views.tests.Foo``, ``python -m unittest
tests.test_x.TestY``) is a test label, not a file: it is dropped, unless ``seen`` (a
predicate the caller passes: the loaders' "a file of this exact path was already touched
in the task") says that resolved path is a file, when it is a ``run`` of it.
``command_files`` has no such knowledge and drops every label.

**Tool identity.** Every agent's shell tool maps to the capitalised prefix ``Bash:`` (Claude
Code ``Bash``, mini-swe-agent's only action, SWE-agent's plain commands, OpenHands
``execute_bash``), followed by the program of the first command that does work: a leading
``cd X &&`` (and ``pushd``, ``export``, ``source``, ``conda activate``) is skipped, as are
environment assignments (``A=1``), ``sudo``, ``env``, ``time``, ``nohup``, ``nice``,
``command``, ``exec`` and ``timeout [opts] N``. ``python -m X`` becomes ``X`` (``python -m
pytest`` -> ``Bash:pytest``), ``python3``/``python3.9`` become ``python``, ``pip3`` ``pip``,
``py.test`` ``pytest``; path prefixes go (``/usr/bin/git`` -> ``git``, ``./gradlew`` ->
``gradlew``); a script run by path gets its interpreter (``./run.sh`` -> ``Bash:bash``,
``./x.py`` -> ``Bash:python``); ``bash -c '...'`` is read through. A command with no
program at all is ``Bash``.

**Where the rules live.** :mod:`brainbox.shellwords` splits the text into simple commands
and words (quotes, heredocs, comments; no input raises); :mod:`brainbox.shellcmd` reads one
simple command (wrappers, the program's name, which operands are files, Python snippets);
this module puts a line's commands together: ``cd`` and the working directory, the tool
identity, the action and the search terms. A command this module cannot read yields no
files and the tool ``Bash``.

Standard library only: the agent hooks import this on the hot path.
"""

from __future__ import annotations

import posixpath

from brainbox.shellcmd import (
    LABEL,
    READERS,
    VALUE_OPTS,
    Command,
    analyse,
    files_of,
    git_sub_index,
    git_subcommand,
    guarded,
    has_extension,
    is_recursive,
    looks_like_file,
    operands,
    program_name,
    python_files,
    word_set,
)
from brainbox.shellwords import split_commands

__all__ = [
    "command_action",
    "command_files",
    "command_terms",
    "command_tool",
    "cwd_after",
    "describe",
    "has_extension",
    "looks_like_file",
    "python_files",
    "split_commands",
]

_SEARCHERS = word_set("grep egrep fgrep rg ag ack find fd locate ls tree which whereis type")
_RUNNERS = word_set(
    "python pytest tox nox make cmake mvn mvnw gradle gradlew java javac node npm npx yarn pnpm "
    "go cargo rustc gcc g++ clang ruby perl php bash sh zsh pip conda uv poetry sphinx-build "
    "test nosetests coverage mypy pylint flake8 ruff black isort pre-commit docker source ."
)
_GREP_LIKE = word_set("grep egrep fgrep rg ag ack")
# Whole leading commands that set up the shell and do no work of their own.
_SETUP = word_set(
    "cd pushd popd export set unset source . alias ulimit umask shopt declare local true :"
)


def _resolve(path: str, base: str | None) -> str:
    if path.startswith("~"):
        return path
    if base and not path.startswith("/"):
        path = posixpath.join(base, path)
    return posixpath.normpath(path) if path else path


def _cd_target(argv: list[str]) -> str | None:
    ops = [w for w in argv[1:] if not w.startswith("-") or w == "-"]
    if not ops:
        return None
    t = ops[0]
    if t == "-" or "$" in t or "`" in t or t.startswith("~"):
        return None
    return t




def _parse(command) -> list[Command]:
    """The simple commands of ``command``, analysed; never raises."""
    if not isinstance(command, str) or not command.strip():
        return []
    out = []
    for text, heredocs in guarded(lambda: split_commands(command), []):
        cmd = guarded(lambda t=text, h=heredocs: analyse(t, h), None)
        if cmd is not None:
            out.append(cmd)
    return out


def _script_of(argv: list[str]) -> str | None:
    """The script ``python [opts] script.py ...`` runs (None for -c, -m, stdin)."""
    i = 1
    while i < len(argv):
        w = argv[i]
        if w in ("-c", "-m", "-"):
            return None
        if w.startswith("-"):
            i += 2 if w in ("-W", "-X", "-Q") else 1
            continue
        return w
    return None


def _files(
    cmds: list[Command],
    cwd: str | None,
    writes: list | None = None,
    runs: list | None = None,
    known=None,
) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    seen = set()
    here = cwd
    for cmd in cmds:
        if runs is not None and cmd.prog == "python":
            script = _script_of(cmd.argv)
            if script and looks_like_file(script):
                runs.append((_resolve(script, here), here))
        if writes is not None and cmd.heredocs:
            targets = cmd.creates + cmd.edits
            if cmd.prog == "tee":
                targets += operands(cmd.argv, set())
            for t in targets:
                if looks_like_file(t):
                    writes.append((_resolve(t, here), cmd.heredocs[0]))
        if cmd.prog in ("cd", "pushd"):
            t = _cd_target(cmd.argv)
            if t is not None:
                here = _resolve(t, here)
            continue
        files, gitdir = guarded(lambda c=cmd: files_of(c), ([], None))
        base = _resolve(gitdir, here) if gitdir else here
        for path, action in files:
            if not looks_like_file(path):
                continue
            resolved = _resolve(path, base)
            if action == LABEL:  # a test label, unless a file of that path was seen
                if known is None or not known(resolved):
                    continue
                action = "run"
            key = (resolved, action)
            if key not in seen:
                seen.add(key)
                out.append(key)
    return out


def _first_work(cmds: list[Command]) -> Command | None:
    """The first simple command that does work; else the first command at all (``cd x``)."""
    first = None
    for cmd in cmds:
        if not cmd.prog:
            continue
        first = first or cmd
        if cmd.prog in _SETUP or cmd.prog == "for":
            continue
        if cmd.prog == "conda" and len(cmd.argv) > 1 and cmd.argv[1] in ("activate", "deactivate"):
            continue
        return cmd
    return first


def _program(cmds: list[Command], depth: int = 0) -> str | None:
    cmd = _first_work(cmds)
    if cmd is None:
        return None
    prog, argv = cmd.prog, cmd.argv
    if prog == "python":
        for j, w in enumerate(argv[1:], 1):
            if w == "-m" and j + 1 < len(argv):
                return program_name(argv[j + 1].split(".", 1)[0])
            if not w.startswith("-"):
                break
        return "python"
    if prog in ("bash", "sh", "zsh") and "-c" in argv and depth < 3:
        j = argv.index("-c")
        if j + 1 < len(argv):
            inner = _program(_parse(argv[j + 1]), depth + 1)
            if inner:
                return inner
    if "/" in argv[0]:
        ext = posixpath.splitext(argv[0])[1]
        if ext == ".py":
            return "python"
        if ext in (".sh", ".bash"):
            return "bash"
    if prog.endswith(".sh"):
        return "bash"
    return prog or None


def _action(cmds: list[Command], files: list[tuple[str, str]], prog: str | None) -> str:
    if any(a in ("edit", "create") for _, a in files):
        return "edit"
    cmd = _first_work(cmds)
    if cmd is None:
        return "other"
    first = cmd.prog
    if first in _GREP_LIKE or first in _SEARCHERS or first in ("fd", "rg"):
        return "search"
    if first == "git":
        sub = git_subcommand(cmd.argv)
        if sub == "grep":
            return "search"
        return "read" if sub in ("diff", "show", "log", "blame", "status") else "other"
    if first in READERS or first in ("sed", "awk", "gawk"):
        return "read" if files or first in READERS else "other"
    if prog in _RUNNERS or first in _RUNNERS or "/" in cmd.argv[0]:
        return "run"
    return "other"


def _terms(cmds: list[Command]) -> str | None:
    terms: list[str] = []
    for cmd in cmds:
        argv, prog = cmd.argv, cmd.prog
        if not argv:
            continue
        git_grep = prog == "git" and git_subcommand(argv) == "grep"
        if git_grep:  # searches the whole work tree by default
            argv = argv[git_sub_index(argv) :]
            prog = "grep"
        if prog in _GREP_LIKE:
            key = "rg" if prog in ("rg", "ag", "ack") else "grep"
            pats = [argv[j + 1] for j, w in enumerate(argv[:-1]) if w in ("-e", "--regexp")]
            pats += [w.split("=", 1)[1] for w in argv if w.startswith("--regexp=")]
            ops = operands(argv, VALUE_OPTS[key])
            searches_files = (
                git_grep or len(ops) > (0 if pats else 1) or prog != "grep" or is_recursive(argv)
            )
            if searches_files:  # a grep filtering a pipe is output filtering, not search
                terms += pats or ops[:1]
        elif prog in ("find", "fd"):
            for j, w in enumerate(argv[:-1]):
                if w in ("-name", "-iname", "-path", "-ipath", "-regex"):
                    terms.append(argv[j + 1])
            if prog == "fd":
                terms += operands(argv, {"-e", "-t", "-d", "-E"})[:1]
    terms = [t for t in terms if t and t.strip()]
    return " ".join(dict.fromkeys(terms)) if terms else None


def command_files(command: str, cwd: str | None = None) -> list[tuple[str, str]]:
    """File paths ``command`` touches, each with its fact: ``'read'``, ``'edit'`` (in
    place), ``'create'`` (a whole-file write) or ``'run'`` (a script or test file run).

    >>> command_files("cd pkg && sed -i 's/a/b/' mod.py && cat mod.py", "/w")
    [('/w/pkg/mod.py', 'edit'), ('/w/pkg/mod.py', 'read')]
    >>> command_files("cat <<'EOF' > r.py && python r.py && python tests/runtests.py a.b.C")
    [('r.py', 'create'), ('r.py', 'run'), ('tests/runtests.py', 'run')]

    Relative paths are joined to the directory of a preceding ``cd`` (itself resolved
    against ``cwd`` when given). Deduplicated on (path, fact), in order. Test labels
    (``a.b.C`` above) are not files. Never raises.
    """
    return guarded(lambda: _files(_parse(command), cwd), [])


def command_tool(command: str) -> str:
    """Tool identity of a shell step: ``Bash:<program>`` (see the module docstring).

    >>> command_tool("cd /testbed && timeout 60 python -m pytest tests/x.py -q")
    'Bash:pytest'
    >>> command_tool("FOO=1 /usr/bin/git diff")
    'Bash:git'
    """
    prog = guarded(lambda: _program(_parse(command)), None)
    return f"Bash:{prog}" if prog else "Bash"


def command_action(command: str) -> str:
    """Event action of a shell step: ``edit`` if it edits a file, else by its first program:
    ``read`` (cat, head, sed -n, git diff, ...), ``search`` (grep, find, ls, ...), ``run``
    (python, pytest, make, ...), else ``other``.
    """
    return describe(command)["action"]


def command_terms(command: str) -> str | None:
    """Search patterns in a command (grep/rg/ag/git grep patterns, find -name/-path values).

    >>> command_terms('grep -rn "def separability_matrix" astropy/')
    'def separability_matrix'
    """
    return guarded(lambda: _terms(_parse(command)), None)


def describe(command: str, cwd: str | None = None, seen=None) -> dict:
    """All of the above from one parse:
    ``{"tool", "files", "action", "terms", "writes", "runs"}``.

    ``seen(path) -> bool``, when given, names the files already touched (``path`` is
    resolved against ``cwd``): a test-runner argument that is not plainly a file is kept,
    as a ``run``, only when it is one of them (module docstring, "Test labels").

    ``writes`` lists ``(path, text)`` for files the command fills from a heredoc
    (``cat <<'EOF' > fix.py``) and ``runs`` ``(script, cwd)`` for the Python scripts it
    runs (``cwd`` after any ``cd``), so a loader that remembers scripts can see what
    running ``fix.py`` opens (:func:`python_files`). Loaders call this once per shell step.
    """
    cmds = _parse(command)
    writes: list = []
    runs: list = []
    files = guarded(lambda: _files(cmds, cwd, writes, runs, seen), [])
    prog = guarded(lambda: _program(cmds), None)
    return {
        "tool": f"Bash:{prog}" if prog else "Bash",
        "files": files,
        "action": guarded(lambda: _action(cmds, files, prog), "other"),
        "terms": guarded(lambda: _terms(cmds), None),
        "writes": writes,
        "runs": runs,
    }


def cwd_after(command: str, cwd: str | None) -> str | None:
    """The working directory after ``command`` in a persistent shell: its top-level ``cd``
    commands applied in order to ``cwd`` (``cd -``, ``cd ~`` and ``cd $X`` leave it unknown:
    ``cwd`` is returned unchanged for them)."""
    here = cwd
    for cmd in _parse(command):
        if cmd.prog in ("cd", "pushd"):
            t = _cd_target(cmd.argv)
            if t is not None:
                here = _resolve(t, here)
    return here
