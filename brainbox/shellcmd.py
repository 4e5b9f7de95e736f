"""One simple command, read from its words: its program, and the files it touches.

:mod:`brainbox.shellwords` splits a command line into simple commands and words; this
module reads one of them (:func:`analyse`: redirections, wrappers such as ``sudo``,
``env``, ``timeout N``, the program's name) and names the files its operands are, program
by program (:func:`files_of`). :mod:`brainbox.shell` puts the commands of a line together
(``cd`` and the working directory, the tool identity, the action) and is the public face.

**What counts as a file.** A word that has an extension or a slash, and no glob
characters, ``$``, ``=`` or URL scheme; ``/dev/*``, ``/proc/*`` and bare version numbers
are not files. Directory operands of recursive commands (``grep -r``, ``rg``, ``rm -r``,
``cp -r``) count only when the last component has an extension. Relative paths are joined
to the directory of a preceding ``cd`` (and to ``cwd`` when given; ``git -C DIR`` joins its
own operands to DIR); the result is ``posixpath.normpath``-ed.

**What a command does to a file** (its *fact*): ``read``, ``edit`` (an in-place change:
``sed -i``, ``>>``, ``patch``, ``tee -a``, ``rm``, ``git checkout --``), ``create`` (a
whole-file write of the path: ``>``, a heredoc into a file, ``tee``, the target of ``cp``,
``mv``, ``ln`` and ``install``, ``touch``, a Python ``open(P, 'w')`` of a path the snippet
does not also read) or ``run`` (a script run by its interpreter or by path, ``bash x.sh``,
``source x.sh``, the script and test files given to a test runner). A run is a touch of
the file, not a read: ``python tests/runtests.py ...`` made the test runner a read of most
tasks of a Django-style repository. ``create`` says nothing about whether the path
existed; a loader that knows the task's earlier touches decides that
(:class:`brainbox.eval.loaders.base.TaskBuilder`).

**Test labels are not files.** A test runner's argument (``pytest``, ``python -m
unittest``, ``runtests.py``, ``bin/test``, ...) is a file only if it has a path separator
or ends in a source extension (:data:`SOURCE_EXTENSIONS`; ``tests/test_x.py::T`` is
``tests/test_x.py``). Anything else (``admin_views.tests.Foo``, ``tests.test_x.TestY``,
``module.submodule``) is a *label*: :func:`files_of` gives it the fact :data:`LABEL`, and
:mod:`brainbox.shell` keeps it, as a ``run``, only when the caller says a file of that
exact path was already seen (``has_extension`` alone took ``admin_views.tests.Foo`` for a
file with the extension ``.Foo``).

**Python snippets.** ``python -c CODE`` and ``python <<EOF`` bodies are scanned for the
files they ``open()`` (:func:`python_files`): agents often patch a file with a script
rather than an editor. :func:`brainbox.shell.describe` also reports heredoc-written files
and the scripts a command runs, so a loader can connect ``cat <<EOF > fix.py`` with a later
``python fix.py``.

Standard library only: the agent hooks import this on the hot path.
"""

from __future__ import annotations

import posixpath
import re

from brainbox.shellwords import split_words

__all__ = [
    "LABEL",
    "READERS",
    "SOURCE_EXTENSIONS",
    "VALUE_OPTS",
    "Command",
    "analyse",
    "files_of",
    "git_sub_index",
    "git_subcommand",
    "guarded",
    "has_extension",
    "is_recursive",
    "looks_like_file",
    "operands",
    "program_name",
    "python_files",
    "word_set",
]


def word_set(text: str) -> frozenset[str]:
    """A set of names written as one space-separated string (keeps the tables short)."""
    return frozenset(text.split())


def guarded(fn, default):
    """``fn()``, or ``default`` if it raises: the single place the shell modules swallow
    errors. Agent text is arbitrary and the record hook must never crash on it."""
    try:
        return fn()
    except Exception:  # noqa: BLE001 - see the docstring
        return default


# Programs whose non-option operands are files they read.
READERS = word_set(
    "cat head tail nl less more wc file stat bat diff cmp colordiff sort uniq cut tac xxd od "
    "strings md5sum sha1sum sha256sum jq yq column fold fmt iconv hexdump view "
    "readlink realpath dos2unix unix2dos javac"
)
# The fact of a test runner's argument that may be a test label rather than a file.
LABEL = "label"
# Extensions of files a test runner is given (source files, doctest text): a runner's
# argument with one of these and no slash is still a file (``pytest test_x.py``).
SOURCE_EXTENSIONS = word_set(
    ".py .pyx .pyi .ipynb .js .jsx .mjs .cjs .ts .tsx .java .kt .kts .scala .groovy .go .rs "
    ".rb .php .c .cc .cpp .cxx .h .hpp .cs .swift .m .ex .exs .erl .hs .lua .pl .r .jl .sh "
    ".bash .zsh .feature .robot .rst .txt .md"
)
# Options (per program) that take a value in the next word.
VALUE_OPTS = {
    "head": word_set("-n -c"),
    "tail": word_set("-n -c -s --pid"),
    "grep": word_set(
        "-e -f -m -A -B -C -d -D --exclude --include --exclude-dir --color --label "
        "--max-count --context"
    ),
    "rg": word_set(
        "-e -f -m -A -B -C -g -t -T --glob --type --type-not -M --max-count -j --max-depth "
        "-r --replace --iglob"
    ),
    "sed": word_set("-e -f -l --expression --file"),
    "awk": word_set("-f -v -F"),
    "python": word_set("-c -m -W -X -Q"),
    "pytest": word_set(
        "-k -m -p -c -o -W -n --tb --rootdir --deselect --ignore --maxfail --durations --cov "
        "--junitxml --basetemp --log-level -r --confcutdir --import-mode --timeout"
    ),
    "cp": word_set("-t --target-directory -S --suffix"),
    "mv": word_set("-t --target-directory -S --suffix"),
    "tee": word_set(""),
    "sort": word_set("-k -t -o -S -T"),
    "cut": word_set("-d -f -c -b"),
    "diff": word_set("-U -C -L --label -x -X"),
    "patch": word_set("-p -d -o -r -F -D -B -i --input"),
    "nl": word_set("-b -s -v -w -i -n -l -d -f -h"),
    "wc": word_set(""),
    "less": word_set("-x -y -z -b -j"),
    "git": word_set("-C -c --git-dir --work-tree"),
    "javac": word_set(
        "-cp -classpath --class-path -d -sourcepath -source -target --release -encoding "
        "-processorpath -s -h"
    ),
}
# Leading words that only wrap the real program.
_WRAPPERS = word_set("sudo env time nohup nice command exec builtin stdbuf ionice xvfb-run")
_WRAPPER_VALUE_OPTS = word_set("-u -g -C -n -c -o -e -i")
_SHELL_KEYWORDS = word_set(
    "if then else elif fi do done while until for case esac in ! { } select function"
)
_GLOB = re.compile(r"[*?\[\]{}$`<>|;&=]")
_EXT = re.compile(r"\.[A-Za-z_][A-Za-z0-9_+-]{0,15}$")
_VERSIONISH = re.compile(r"^[\d.]+$")
_NOT_PATH = re.compile(r"[()'\",:\\^!%\x00-\x1f]")
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
_PY = re.compile(r"^(?:python|pypy)(?:\d+(?:\.\d+)*)?[mtw]?$")
_PIP = re.compile(r"^pip\d+(?:\.\d+)*$")
_REDIRECT_CREATE = frozenset({">", ">|", "&>", ">&"})  # truncate: a whole-file write
_REDIRECT_APPEND = frozenset({">>", "&>>"})
_MAX_PATH = 400
# Extensionless names that are files all the same (a bare word otherwise is not a path).
_BARE_FILES = word_set(
    "Makefile makefile GNUmakefile Dockerfile Containerfile AUTHORS LICENSE LICENCE COPYING "
    "NOTICE README CHANGES CHANGELOG HISTORY CONTRIBUTORS MANIFEST VERSION Procfile Gemfile "
    "Rakefile Vagrantfile Jenkinsfile CODEOWNERS Pipfile BUILD WORKSPACE"
)


class Command:
    """One simple command: ``reads`` (``< f``), ``edits`` (``>> f``) and ``creates``
    (``> f``) are its redirection targets."""

    __slots__ = ("argv", "creates", "edits", "heredocs", "prog", "raw", "reads")

    def __init__(self, prog, argv, reads, edits, heredocs, raw, creates=()):
        self.prog, self.argv, self.reads, self.edits = prog, argv, reads, edits
        self.heredocs, self.raw, self.creates = heredocs, raw, list(creates)


def program_name(word: str) -> str:
    base = word.rsplit("/", 1)[-1]
    if _PY.match(base):
        return "python"
    if _PIP.match(base):
        return "pip"
    if base == "py.test":
        return "pytest"
    return base


def _strip_wrappers(argv: list[str]) -> list[str]:
    """Drop env assignments and wrapper programs (sudo, env, time, timeout N, ...)."""
    i = 0
    while i < len(argv):
        w = argv[i]
        name = w.rsplit("/", 1)[-1]
        if _ENV_ASSIGN.match(w) or (name in _SHELL_KEYWORDS and name != "for"):
            i += 1
        elif name in _WRAPPERS:
            i += 1
            while i < len(argv) and (argv[i].startswith("-") or _ENV_ASSIGN.match(argv[i])):
                if argv[i] in _WRAPPER_VALUE_OPTS and name in ("sudo", "nice", "stdbuf"):
                    i += 1  # sudo -u USER, nice -n 10, stdbuf -o L
                i += 1
        elif name == "timeout":
            i += 1
            while i < len(argv) and argv[i].startswith("-"):
                if argv[i] in ("-s", "-k", "--signal", "--kill-after"):
                    i += 1
                i += 1
            i += 1  # the duration
        elif name == "xargs":
            i += 1
            while i < len(argv) and argv[i].startswith("-"):
                if argv[i] in ("-I", "-n", "-P", "-d", "-L", "-s", "-E", "-a"):
                    i += 1
                i += 1
        else:
            break
    return argv[i:]


def looks_like_file(w: str) -> bool:
    """Is ``w`` plausibly a file path (see the module docstring)?"""
    if not w or len(w) > _MAX_PATH or w.startswith("-") or "://" in w:
        return False
    if _GLOB.search(w) or "\n" in w or " " in w or "\t" in w:
        return False
    if w in (".", "..", "/", "~") or w.startswith(("/dev/", "/proc/", "/sys/")) or w == "/dev/null":
        return False
    if _VERSIONISH.match(w) or _NOT_PATH.search(w):
        return False
    last = w.rstrip("/").rsplit("/", 1)[-1]
    if not last or last in (".", ".."):
        return False
    return "/" in w or bool(_EXT.search(last)) or last in _BARE_FILES


def has_extension(w: str) -> bool:
    """Does the last component of ``w`` have a file extension (``x.py``, ``.gitignore``), or
    is it a well-known extensionless file (``Makefile``, ``AUTHORS``)?"""
    last = w.rstrip("/").rsplit("/", 1)[-1]
    return (bool(_EXT.search(last)) or last in _BARE_FILES) and not w.endswith("/")


def operands(argv: list[str], value_opts: set[str]) -> list[str]:
    """Non-option words after the program, skipping the values of value-taking options."""
    out, i, dashdash = [], 1, False
    while i < len(argv):
        w = argv[i]
        if dashdash:
            out.append(w)
        elif w == "--":
            dashdash = True
        elif w.startswith("-") and len(w) > 1:
            if w in value_opts:
                i += 1
        else:
            out.append(w)
        i += 1
    return out


def is_recursive(argv: list[str]) -> bool:
    for w in argv[1:]:
        if w in ("--recursive", "--dereference-recursive"):
            return True
        if w.startswith("-") and not w.startswith("--") and ("r" in w[1:] or "R" in w[1:]):
            return True
    return False


def _patch_targets(body: str) -> list[str]:
    out = []
    for m in re.finditer(r"^\+\+\+ (?:b/)?(\S+)", body, re.MULTILINE):
        if m.group(1) != "/dev/null":
            out.append(m.group(1))
    return out


def analyse(text: str, heredocs: list[str]) -> Command | None:
    words = split_words(text)
    # redirections
    argv, reads, edits, creates = [], [], [], []
    i = 0
    while i < len(words):
        w = words[i]
        if w in _REDIRECT_CREATE or w in _REDIRECT_APPEND:
            if i + 1 < len(words):
                (creates if w in _REDIRECT_CREATE else edits).append(words[i + 1])
            i += 2
            continue
        if w == "<":
            if i + 1 < len(words):
                reads.append(words[i + 1])
            i += 2
            continue
        if w == "<<<":
            i += 2
            continue
        if w in ("&", "|", "<>"):
            i += 1
            continue
        argv.append(w)
        i += 1
    argv = _strip_wrappers(argv)
    if not argv:
        if reads or edits or creates:
            return Command("", [], reads, edits, heredocs, text, creates)
        return None
    prog = program_name(argv[0])
    return Command(prog, argv, reads, edits, heredocs, text, creates)


def files_of(cmd: Command) -> tuple[list[tuple[str, str]], str | None]:
    """Files (path, fact) of one analysed command, plus the directory a ``git -C`` names.

    Facts: ``read``, ``edit``, ``create``, ``run`` and :data:`LABEL` (see the module
    docstring)."""
    prog, argv = cmd.prog, cmd.argv
    out: list[tuple[str, str]] = [(p, "read") for p in cmd.reads]
    base = None
    if not argv:
        return out + _redirected(cmd), None
    if prog in ("grep", "egrep", "fgrep", "rg", "ag", "ack"):
        key = "rg" if prog in ("rg", "ag", "ack") else "grep"
        opts = VALUE_OPTS[key]
        ops = operands(argv, opts)
        has_e = any(
            w in ("-e", "-f", "--regexp", "--file") or w.startswith("--regexp=") for w in argv[1:]
        )
        paths = ops if has_e else ops[1:]
        recursive = prog != "grep" and prog not in ("egrep", "fgrep") or is_recursive(argv)
        for p in paths:
            if not recursive or has_extension(p):
                out.append((p, "read"))
    elif prog == "sed":
        inplace = any(re.match(r"-[a-zA-Z]*i", w) or w.startswith("--in-place") for w in argv[1:])
        has_e = any(w in ("-e", "-f", "--expression", "--file") for w in argv[1:])
        ops = [w for w in operands(argv, VALUE_OPTS["sed"]) if w]
        paths = ops if has_e else ops[1:]
        out += [(p, "edit" if inplace else "read") for p in paths]
    elif prog == "awk" or prog in ("gawk", "mawk"):
        has_f = "-f" in argv[1:]
        ops = operands(argv, VALUE_OPTS["awk"])
        inplace = "inplace" in argv
        paths = ops if has_f else ops[1:]
        out += [(p, "edit" if inplace else "read") for p in paths if "=" not in p]
    elif prog in READERS:
        ops = operands(argv, VALUE_OPTS.get(prog, set()))
        if prog in ("head", "tail"):
            ops = [p for p in ops if not re.fullmatch(r"[+-]?\d+", p)]
        out += [(p, "read") for p in ops]
    elif prog == "python":
        for body in cmd.heredocs:  # python <<'EOF' ... EOF
            out += python_files(body)
        i = 1
        while i < len(argv):
            w = argv[i]
            if w == "-m" and i + 1 < len(argv):
                mod = argv[i + 1]
                rest = argv[i + 1 :]
                if mod in (
                    "pytest",
                    "py.test",
                    "unittest",
                    "nose",
                    "coverage",
                    "doctest",
                    "pdb",
                    "trace",
                    "cProfile",
                    "timeit",
                ):
                    out += _test_paths(rest)
                break
            if w == "-c":
                if i + 1 < len(argv):
                    out += python_files(argv[i + 1])
                break
            if w == "-":
                break
            if w.startswith("-"):
                if w in ("-W", "-X", "-Q"):
                    i += 1
                i += 1
                continue
            out.append((w, "run"))
            if posixpath.basename(w) in ("test", "runtests.py", "run_tests.py", "runtests"):
                out += _test_paths(argv[i:])
            break
    elif prog in ("pytest", "nosetests", "tox", "coverage") or prog == "test" and "/" in argv[0]:
        out += _test_paths(argv)
    elif prog == "git":
        out += _git_files(argv)
        for j, w in enumerate(argv[1:-1], 1):
            if w == "-C":
                base = argv[j + 1]
                break
    elif prog in ("cp", "mv", "ln", "install"):
        ops = operands(argv, VALUE_OPTS.get(prog, set()))
        recursive = is_recursive(argv) or "-a" in argv
        target = None
        for j, w in enumerate(argv):
            if w in ("-t", "--target-directory") and j + 1 < len(argv):
                target = argv[j + 1]
            elif w.startswith("--target-directory="):
                target = w.split("=", 1)[1]
        if target is None and len(ops) >= 2:
            target, ops = ops[-1], ops[:-1]
        srcs = [p for p in ops if not recursive or has_extension(p)]
        if prog != "ln":
            out += [(p, "read") for p in srcs]
        if target is not None:
            if target.endswith("/") or (
                not has_extension(target) and srcs and all(has_extension(p) for p in srcs)
            ):
                out += [
                    (posixpath.join(target, p.rstrip("/").rsplit("/", 1)[-1]), "create")
                    for p in srcs
                ]
            elif not recursive or has_extension(target):
                out.append((target, "create"))
    elif prog in ("touch", "rm", "truncate", "unlink", "shred"):
        ops = operands(argv, {"-s", "--size", "-d", "-r", "-t"} if prog != "rm" else set())
        recursive = prog == "rm" and is_recursive(argv)
        fact = "create" if prog == "touch" else "edit"
        out += [(p, fact) for p in ops if not recursive or has_extension(p)]
    elif prog == "tee":
        append = any(w in ("-a", "--append") for w in argv[1:])
        out += [(p, "edit" if append else "create") for p in operands(argv, set())]
    elif prog == "patch":
        ops = operands(argv, VALUE_OPTS["patch"])
        for j, w in enumerate(argv):
            if w in ("-i", "--input") and j + 1 < len(argv):
                out.append((argv[j + 1], "read"))
            elif w.startswith("--input="):
                out.append((w.split("=", 1)[1], "read"))
        if ops:
            out.append((ops[0], "edit"))
        for body in cmd.heredocs:
            out += [(p, "edit") for p in _patch_targets(body)]
    elif prog in ("bash", "sh", "zsh", "source", "."):
        ops = operands(argv, {"-o", "-O"})
        if "-c" not in argv and ops:
            out.append((ops[0], "run"))
    elif "/" in argv[0] and has_extension(argv[0]):  # ./run.sh, scripts/x.py
        out.append((argv[0], "run"))
    return out + _redirected(cmd), base


def _redirected(cmd: Command) -> list[tuple[str, str]]:
    return [(p, "create") for p in cmd.creates] + [(p, "edit") for p in cmd.edits]


def _test_paths(argv: list[str]) -> list[tuple[str, str]]:
    """A test runner's operands: files it runs, or :data:`LABEL` (module docstring)."""
    out = []
    for p in operands(argv, VALUE_OPTS["pytest"]):
        p = p.split("::", 1)[0]
        ext = posixpath.splitext(p.rsplit("/", 1)[-1])[1]
        is_file = has_extension(p) and ("/" in p or ext in SOURCE_EXTENSIONS)
        out.append((p, "run" if is_file else LABEL))
    return out


def git_sub_index(argv: list[str]) -> int:
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in VALUE_OPTS["git"] else 1
    return i


def git_subcommand(argv: list[str]) -> str:
    i = git_sub_index(argv)
    return argv[i] if i < len(argv) else ""


def _git_files(argv: list[str]) -> list[tuple[str, str]]:
    i = git_sub_index(argv)
    if i >= len(argv):
        return []
    sub, rest = argv[i], argv[i:]
    ops = operands(
        rest,
        {
            "-U",
            "-n",
            "--format",
            "-L",
            "-S",
            "-G",
            "--since",
            "--until",
            "--author",
            "--grep",
            "-m",
            "-b",
            "-B",
            "-e",
            "-f",
        },
    )
    if sub in ("diff", "show", "log", "blame", "annotate", "cat-file"):
        out = []
        for p in ops:
            if ":" in p and not p.startswith("/"):
                p = p.split(":", 1)[1]
            if has_extension(p) and ".." not in p.split("/")[0]:
                out.append((p, "read"))
        return out
    if sub == "grep":
        ops = operands(rest, VALUE_OPTS["grep"])
        has_e = "-e" in rest
        return [(p, "read") for p in (ops if has_e else ops[1:]) if has_extension(p)]
    if sub in ("checkout", "restore"):
        if "--" in rest:
            return [(p, "edit") for p in rest[rest.index("--") + 1 :]]
        return [(p, "edit") for p in ops if has_extension(p)]
    if sub in ("rm", "mv"):
        return [(p, "edit") for p in ops]
    if sub == "apply":
        return [(p, "read") for p in ops]
    return []


_PY_ASSIGN = re.compile(
    r"""^[ \t]*(\w+)\s*=\s*[rbuRBU]?(['"])([^'"\n]+)\2\s*(?:#.*)?$""", re.MULTILINE
)
_PY_OPEN = re.compile(
    r"""\bopen\(\s*(?:[rbuRBU]?(['"])([^'"\n]+)\1|(\w+))\s*"""
    r"""(?:,\s*(?:mode\s*=\s*)?[rbuRBU]?(['"])([rwabxtU+]+)\4)?"""
)
_PY_PATHIO = re.compile(
    r"""\bPath\(\s*(?:[rbuRBU]?(['"])([^'"\n]+)\1|(\w+))\s*\)"""
    r"""\.(read_text|read_bytes|write_text|write_bytes)\b"""
)


def python_files(code: str) -> list[tuple[str, str]]:
    """Files a Python snippet opens, from its text: ``open(P[, mode])`` and
    ``Path(P).read_text/write_text`` with ``P`` a string literal or a variable assigned one
    (``file_path = 'pkg/mod.py'``). Mode ``w``/``x`` and ``write_text``/``write_bytes`` write
    the whole file: a ``create``, unless the snippet also reads that path (then it
    rewrites the file it read: an ``edit``); ``a`` or ``+`` is an ``edit``; else a ``read``.
    Agents often patch files with such scripts instead of an editor. Never raises."""
    if not isinstance(code, str) or "open" not in code and "Path(" not in code:
        return []
    return guarded(lambda: _python_files(code), [])


def _python_files(code: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    names = {m.group(1): m.group(3) for m in _PY_ASSIGN.finditer(code)}
    for m in _PY_OPEN.finditer(code):
        path = m.group(2) if m.group(2) is not None else names.get(m.group(3) or "")
        mode = m.group(5) or "r"
        if path:
            fact = "create" if "w" in mode or "x" in mode else "read"
            out.append((path, "edit" if "a" in mode or "+" in mode else fact))
    for m in _PY_PATHIO.finditer(code):
        path = m.group(2) if m.group(2) is not None else names.get(m.group(3) or "")
        if path:
            out.append((path, "create" if m.group(4).startswith("write") else "read"))
    read = {p for p, a in out if a == "read"}
    return [
        (p, "edit" if a == "create" and p in read else a)
        for p, a in out
        if "{" not in p and "%" not in p
    ]
