"""Error normalisation and fingerprinting (DESIGN §4.6).

An error becomes a memory resource through its *fingerprint*, ``TYPE|operation``
(``TYPE_ERROR|property_access``, ``PYTHON_TRACEBACK|importing``, ``GENERIC_ERROR|unknown``):
a small, stable vocabulary, so that the same failure met in two sessions is one node. The
*normalised text* is kept beside it as human-readable context.

Both functions run inside the PostToolUse hook: standard library only, every regex compiled
once at import, they never raise, and their work is bounded:

* a text longer than 64 KiB is cut to its first 16 KiB and last 48 KiB (compilers report the
  root cause first, Python and test runners summarise last);
* table rows carry *needles*, literals of which at least one occurs in every match. A row's
  regex runs only on the lines that contain one of its needles (at most 16 lines per
  needle, 500 characters either side of it), never over the whole text: ``str.find`` costs
  ~15 us per 64 KiB where one ``sre`` scan of a needle-less pattern costs 5-15 ms;
* every pattern is linear: bounded repetitions, no nested quantifiers over overlapping
  classes.

normalize_error
    Drops ANSI escapes and control characters; removes stack frames (Python ``File "...",
    line N, in f`` with its source line, carets, JS ``at f (file:line:col)``, Java
    ``at pkg.Cls.m(File.java:12)`` and ``... N more``, Go goroutine dumps, pytest
    ``path.py:N: in f``); then replaces timestamps with ``T``, UUIDs and long hex ids with
    ``H``, ``0x...`` with ``0xX``, quoted strings (single, double or back-quoted) with
    ``'X'``, ``:line:col`` with ``:X:X``, ``file.ext:N`` with ``file.ext:X``, ``line N``
    with ``line X``, test counts (``3 failed``) and durations with ``N``, and numbers of four
    or more digits with ``N``. Lines are whitespace-collapsed, de-duplicated and joined with
    one space. For a Python traceback only the final exception line is kept: it is the part
    that identifies the failure. The result is at most 500 characters; for longer texts the
    first and the last *informative* lines (mentioning error, fail, cannot...) are kept.

fingerprint
    Classification runs in three ordered stages; inside each table the **first matching
    row wins**, so rows are ordered from specific to general:

    1. ``_TOOL_TABLE`` over the whole (bounded) text: markers that say which tool produced
       the output. Compilers before test runners (a test run that fails to build is a build
       failure), test runners before build tools (``mvn test`` with failing tests is a test
       failure, not a generic ``BUILD FAILURE``), then package managers, git, the shell,
       and process-level failures (out of memory, crashes, panics, agent timeouts).
    2. The focal exception: the final exception line of the last Python traceback (else the
       last pytest ``E   XError:`` line), the root cause of a Java stack trace (last
       ``Caused by:``, else the thrown class), the error line of a Node stack trace, or else
       the last bare ``XError: msg`` line. It is classified by its language's table
       (``_PYTHON_TABLE``, ``_JS_TABLE``), then by the message table, then by its class:
       ``PYTHON_EXCEPTION|<class>``, ``JS_ERROR|<class>``; Java always gives
       ``JAVA_EXCEPTION|<class>`` (simple class name, lower-cased).
    3. ``_MESSAGE_TABLE`` over the whole text: OS, network and generic phrases (``No such
       file or directory``, ``Permission denied``, ``timed out``, ``Connection refused``...).

    Otherwise ``GENERIC_ERROR|unknown``. TYPE is ``[A-Z0-9_]+`` and operation
    ``[a-z0-9_]+``. Changing a row's output changes every stored fingerprint it produced,
    so rows are appended or refined, never renamed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["MAX_NORMALIZED_CHARS", "UNKNOWN_FINGERPRINT", "fingerprint", "normalize_error"]

UNKNOWN_FINGERPRINT = "GENERIC_ERROR|unknown"
MAX_NORMALIZED_CHARS = 500

_MAX_SCAN = 64 * 1024  # examine at most this many characters of a huge output ...
_HEAD = 16 * 1024  # ... made of the first _HEAD and the last _MAX_SCAN - _HEAD characters
_MAX_LINE = 1000  # a line is cut to this length before it is normalised
_NEEDLE_HITS = 16  # lines examined per needle
_NEEDLE_WINDOW = 500  # characters either side of a needle examined within a long line
_NORMALIZE_HEAD = 2 * 1024  # normalize_error reads the first 2 KiB ...
_NORMALIZE_TAIL = 6 * 1024  # ... and the last 6 KiB (of the 64 KiB window): its output is 500 chars
_NORMALIZE_RAW_BUDGET = 2000  # raw characters picked for normalisation (before the 500 cut)

# --------------------------------------------------------------------------- cleaning

_ANSI = re.compile(
    r"\x1b(?:\[[0-?]{0,32}[ -/]{0,8}[@-~]|\][^\x07\x1b\n]{0,512}(?:\x07|\x1b\\)|[@-Z\\-_])"
)
_CONTROL = dict.fromkeys([*range(9), 11, 12, *range(14, 32), 127])  # keeps \t \n \r


def _clean(text: object) -> str:
    """Coerce anything to a bounded str without ANSI escapes or control characters."""
    if text is None:
        return ""
    if isinstance(text, (bytes, bytearray, memoryview)):
        raw = bytes(text)
        if len(raw) > _MAX_SCAN:
            raw = raw[:_HEAD] + b"\n" + raw[-(_MAX_SCAN - _HEAD) :]
        text = raw.decode("utf-8", "replace")
    elif not isinstance(text, str):
        try:
            text = str(text)
        except Exception:  # noqa: BLE001 - str() of an arbitrary object may raise anything
            return ""
    if len(text) > _MAX_SCAN:
        text = text[:_HEAD] + "\n" + text[-(_MAX_SCAN - _HEAD) :]
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.translate(_CONTROL)


# ------------------------------------------------------------------- needle-guided search


def _segments(
    t: str, needle: str, reverse: bool = False, limit: int = _NEEDLE_HITS
) -> Iterator[tuple[int, str]]:
    """(offset, text) of the lines of ``t`` holding ``needle`` (the first or the last
    ``limit`` such lines), cut to _NEEDLE_WINDOW characters either side of it."""
    n = len(t)
    pos = n if reverse else 0
    for _ in range(limit):
        i = t.rfind(needle, 0, pos) if reverse else t.find(needle, pos)
        if i < 0:
            return
        ls = t.rfind("\n", 0, i) + 1
        le = t.find("\n", i + len(needle))
        if le < 0:
            le = n
        start = max(ls, i - _NEEDLE_WINDOW)
        yield start, t[start : min(le, i + len(needle) + _NEEDLE_WINDOW)]
        if reverse:
            if ls == 0:
                return
            pos = ls - 1
        else:
            pos = le + 1
            if pos >= n:
                return


def _search(
    rx: re.Pattern[str], needles: tuple[str, ...], t: str, mode: str = "any"
) -> re.Match[str] | None:
    """A match of ``rx`` on the lines of ``t`` that hold one of ``needles``.

    mode "any" returns the first match found on the first or the last _NEEDLE_HITS / 2
    lines holding a needle (markers sit at the top or at the bottom of an output);
    "first" / "last" the match that starts earliest / latest in ``t`` among the first /
    last _NEEDLE_HITS lines holding each needle."""
    if mode == "any":
        half = _NEEDLE_HITS // 2
        for needle in needles:
            for reverse in (False, True):
                for _, seg in _segments(t, needle, reverse, half):
                    m = rx.search(seg)
                    if m is not None:
                        return m
        return None
    best: re.Match[str] | None = None
    best_pos = -1
    for needle in needles:
        for offset, seg in _segments(t, needle, reverse=mode == "last"):
            if mode == "last":
                m = None
                for m in rx.finditer(seg):
                    pass
            else:
                m = rx.search(seg)
            if m is None:
                continue
            pos = offset + m.start()
            if best is None or (pos > best_pos if mode == "last" else pos < best_pos):
                best, best_pos = m, pos
            break  # later segments of this needle lie beyond this one
    return best


# --------------------------------------------------------------- focal exception lines

_TB_HEADER = "Traceback (most recent call last):"
_EXC_SUFFIXES = ("Error", "Exception", "Exit", "Interrupt")
_PY_EXC_LINE = re.compile(r"((?:[A-Za-z_]\w{0,80}\.){0,12}([A-Za-z_]\w{0,80}))(?::(?: .*)?)?$")
_PYTEST_E_LINE = re.compile(
    r"^E {1,12}((?:[A-Za-z_]\w{0,80}\.){0,12}[A-Z]\w{0,80}(?:Error|Exception|Exit|Interrupt|Warning))(?::.*)?$",
    re.MULTILINE,
)
_BARE_EXC_LINE = re.compile(
    r"^((?:[A-Za-z_]\w{0,80}\.){0,12}[A-Z]\w{0,80}(?:Error|Exception|Exit|Interrupt))(?::.*)?$",
    re.MULTILINE,
)
_JAVA_FRAME = re.compile(
    r"^\s+at [\w$.<>/-]{1,300}\((?:[\w$ -]{1,120}\.(?:java|kt|scala|groovy)(?::\d+)?|Native Method|Unknown Source)\)",
    re.MULTILINE,
)
_JAVA_FRAME_NEEDLES = (".java:", "(Native Method)", "(Unknown Source)", ".kt:", ".scala:")
_JAVA_CAUSED_BY = re.compile(
    r"^Caused by: (?:[a-z_$][\w$]{0,80}\.){1,12}([A-Z][\w$]{0,120})\b", re.MULTILINE
)
_JAVA_THROWN = re.compile(
    r"(?:^Exception in thread \"[^\"\n]{0,200}\" |^)(?:[a-z_$][\w$]{0,80}\.){1,12}"
    r"([A-Z][\w$]{0,120}(?:Exception|Error|Throwable|Failure))\b",
    re.MULTILINE,
)
_JS_FRAME = re.compile(
    r"^\s+at (?:async )?(?:[^\s()]{1,300} \()?[^\s()]{0,500}:\d+:\d+\)?\s*$|node:internal/",
    re.MULTILINE,
)
_JS_ERR_LINE = re.compile(
    r"^(?:Uncaught )?([A-Z]\w{0,80}(?:Error|Exception)|Error)(?: \[[A-Z0-9_]{1,80}\])?: .*$",
    re.MULTILINE,
)
_JAVA_PACKAGE = re.compile(r"(?:java|javax|jakarta|com|org|io|net|kotlin)\.")


_STRICT_EXC_SUFFIXES = (
    "Error",
    "Exception",
    "Warning",
    "Exit",
    "Interrupt",
    "Iteration",
    "Failed",
    "Failure",
    "Timeout",
    "Expired",
    "Fault",
)


def _python_final_exception(t: str) -> tuple[str, str] | None:
    """(line, class) of the final exception line of the last Python traceback in ``t``.

    It is the first unindented line after the last ``Traceback`` header whose class looks
    like an exception (``...Error``, ``...Warning``, ``re.error``...), else the first one
    shaped ``pkg.mod.Name: message``. Program output often interleaves with the frames
    (stdout and stderr merged: ``i: 5`` between two frames), so the first unindented line
    is not enough.
    """
    i = t.rfind(_TB_HEADER)
    if i < 0:
        return None
    loose: tuple[str, str] | None = None
    for line in t[i + len(_TB_HEADER) :].split("\n"):
        if not line.strip() or line[0] in " \t":
            continue
        if line.startswith(("During handling", "The above exception")):
            continue
        line = line.strip()[:_MAX_LINE]
        m = _PY_EXC_LINE.match(line)
        if m is None:
            continue
        dotted, cls = m.group(1), m.group(2)
        if (
            cls.endswith(_STRICT_EXC_SUFFIXES)
            or cls in ("KeyboardInterrupt", "StopIteration")
            or (cls == "error" and "." in dotted)
        ):
            return line, cls
        if loose is None and "." in dotted and cls[:1].isupper():  # pkg.mod.Failed: ...
            loose = line, cls
    return loose


def _focus(t: str) -> tuple[str, str, str] | None:
    """(language, focal line, exception class) of the most telling exception in ``t``."""
    py = _python_final_exception(t)
    if py:
        return "py", py[0], py[1]
    if "Exception in thread" in t or _search(_JAVA_FRAME, _JAVA_FRAME_NEEDLES, t):
        m = _search(_JAVA_CAUSED_BY, ("Caused by: ",), t, "last")
        if m:
            return "java", m.group(0), m.group(1)
        m = _search(
            _JAVA_THROWN,
            ("Exception in thread", "Exception", "Error", "Throwable", "Failure"),
            t,
            "first",
        )
        if m:
            return "java", m.group(0), m.group(1)
    if "node:internal/" in t or _search(_JS_FRAME, ("    at ",), t):
        m = _search(_JS_ERR_LINE, ("Error", "Exception"), t, "first")
        if m:
            return "js", m.group(0), m.group(1)
    m = _search(_PYTEST_E_LINE, ("\nE ",), t, "last") or _search(
        _BARE_EXC_LINE, _EXC_SUFFIXES, t, "last"
    )
    if m:
        dotted = m.group(1)
        cls = dotted.rsplit(".", 1)[-1]
        line = m.group(0)
        if _JAVA_PACKAGE.match(dotted) and cls.endswith("Exception"):
            return "java", line, cls
        if line.startswith("E "):
            line = line[1:].strip()
        return "py", line, cls
    return None


# --------------------------------------------------------------------------- tables

Row = tuple[tuple[str, ...], "re.Pattern[str]", str, str]


def _table(rows: list[tuple[tuple[str, ...], str, str, str]]) -> list[Row]:
    return [(needles, re.compile(rx, re.MULTILINE), typ, op) for needles, rx, typ, op in rows]


# Stage 1: which tool produced the output. Compilers, then test runners, then build tools
# and package managers, then git, then the shell and process-level failures.
# Each row: (needles, regex, TYPE, operation); every match of regex contains a needle.
# fmt: off
_TOOL_TABLE = _table([
    # -- compilers
    ((".java:", "COMPILATION ERROR"), r"^\S{1,500}\.java:\d+: error: |\[ERROR\] \S{0,500}\.java:\[\d+,\d+\]|^\[ERROR\] COMPILATION ERROR", "COMPILE_ERROR", "javac"),
    (("error TS",), r"\berror TS\d{3,5}: ", "COMPILE_ERROR", "tsc"),
    (("error[E", "could not compile", ".rs:"), r"^error\[E\d{4}\]: |^error: could not compile `|^\s*--> \S{1,500}\.rs:\d+:\d+", "COMPILE_ERROR", "rustc"),
    ((".go:", "[build failed]"), r"^\S{1,500}\.go:\d+:\d+: |^FAIL\s+\S+ \[build failed\]", "COMPILE_ERROR", "go"),
    ((": error: ", ": fatal error: "), r"^\S{1,500}\.(?:c|cc|cpp|cxx|h|hh|hpp):\d+:\d+: (?:fatal )?error: ", "COMPILE_ERROR", "gcc"),
    (("undefined reference to", "ld: "), r"\bundefined reference to `|\bld: symbol\(s\) not found|^ld: ", "LINK_ERROR", "ld"),
    # -- agent tools (Claude Code, SWE-agent): the edit or read itself failed
    (("String to replace not found", "did not match any", "No replacement was performed"), r"String to replace not found|old_str .{0,200} did not match any|No replacement was performed", "EDIT_ERROR", "string_replace"),
    (("matches of the string to replace", "Multiple occurrences of old_str"), r"Found \d+ matches of the string to replace|Multiple occurrences of old_str", "EDIT_ERROR", "ambiguous_match"),
    (("No changes to make",), r"No changes to make: old_string and new_string are exactly the same", "EDIT_ERROR", "no_change"),
    (("has not been read yet", "modified since read"), r"File has not been read yet|has been modified since read", "EDIT_ERROR", "stale_read"),
    (("exceeds maximum allowed tokens",), r"exceeds maximum allowed tokens", "TOOL_ERROR", "output_too_large"),
    (("InputValidationError",), r"InputValidationError", "TOOL_ERROR", "invalid_input"),
    # -- linters and type checkers
    (("Your code has been rated at", "************* Module ", ".py:"), r"Your code has been rated at|^\*{13} Module |^\S{1,500}\.py:\d+:\d+: [CRWEFI]\d{4}: ", "LINT_ERROR", "pylint"),
    ((".py:",), r"^\S{1,500}\.pyi?:\d+: error: .{1,1000}\[[a-z][a-z0-9-]{1,60}\]\s*$|^Found \d+ errors? in \d+ files? \(checked", "TYPE_CHECK_ERROR", "mypy"),
    ((".py:",), r"^\S{1,500}\.pyi?:\d+:\d+: [A-Z]{1,3}\d{2,4} ", "LINT_ERROR", "flake8"),
    # -- test runners
    (("FAILED ", "ERROR ", " failed"), r"^(?:FAILED|ERROR) \S{1,500}::\S|^=+ (?:.{0,200}, )?\d+ failed\b.{0,200} in [\d.]+s|^\d+ failed(?:, \d+ \w+){0,6} in [\d.]+s", "TEST_FAILURE", "pytest"),
    (("tests finished:", "DO *NOT* COMMIT!"), r"tests finished: .{0,300}\b[1-9]\d* (?:failed|exceptions?)\b|DO \*NOT\* COMMIT!", "TEST_FAILURE", "sympy"),
    (("FAILED (",), r"^FAILED \((?:failures|errors)=\d+", "TEST_FAILURE", "unittest"),
    (("Tests:", " › "), r"^Tests:\s+\d+ failed|^\s*● .{1,300} › ", "TEST_FAILURE", "jest"),
    ((" failing",), r"^\s*\d+ failing\s*$", "TEST_FAILURE", "mocha"),
    (("test result: FAILED", "failures:"), r"^test result: FAILED\.|^failures:\s*$", "TEST_FAILURE", "cargo_test"),
    (("--- FAIL: ", "FAIL\t", "FAIL "), r"^--- FAIL: |^FAIL\s+\S+\s+[\d.]+s\s*$", "TEST_FAILURE", "go_test"),
    (("Tests run:", "There are test failures", "[ERROR] Failures:", "[ERROR] Errors:"), r"Tests run: \d+, Failures: [1-9]|Tests run: \d+, Failures: \d+, Errors: [1-9]|There are test failures|^\[ERROR\] (?:Failures|Errors):\s*$", "TEST_FAILURE", "junit"),
    (("> Task ", " failed"), r"^> Task \S*test\S* FAILED|\d+ tests? completed, \d+ failed", "TEST_FAILURE", "gradle"),
    # -- build tools and package managers
    (("Could not resolve dependencies", "Could not find artifact", "Failed to read artifact descriptor", "Non-resolvable ", "Could not transfer artifact"), r"Could not resolve dependencies|Could not find artifact|Failed to read artifact descriptor|Non-resolvable (?:parent POM|import POM)|Could not transfer artifact", "DEPENDENCY_ERROR", "maven"),
    (("[ERROR] ", "BUILD FAILURE"), r"^\[ERROR\] Failed to execute goal|^\[INFO\] BUILD FAILURE|^\[ERROR\] .{0,200}(?:The goal you specified|No goals have been specified)", "BUILD_ERROR", "maven"),
    (("FAILURE: Build failed", "BUILD FAILED in "), r"^FAILURE: Build failed|^BUILD FAILED in ", "BUILD_ERROR", "gradle"),
    (("npm ERR!", "npm error"), r"^npm (?:ERR!|error) code ERESOLVE|^npm (?:ERR!|error) (?:code E404|404 Not Found)", "DEPENDENCY_ERROR", "npm"),
    (("npm ERR!", "npm error"), r"^npm (?:ERR!|error) [Mm]issing script", "COMMAND_NOT_FOUND", "npm_script"),
    (("npm ERR!", "npm error"), r"^npm (?:ERR!|error) ", "BUILD_ERROR", "npm"),
    (("Could not find a version", "No matching distribution", "ResolutionImpossible", "externally-managed-environment", "Invalid requirement", "not a valid editable requirement"), r"Could not find a version that satisfies the requirement|No matching distribution found|ResolutionImpossible|error: externally-managed-environment|ERROR: Invalid requirement|is not a valid editable requirement", "DEPENDENCY_ERROR", "pip"),
    (("Failed building wheel", "subprocess-exited-with-error", "Failed to build installable wheels"), r"Failed building wheel|error: subprocess-exited-with-error|Failed to build installable wheels", "BUILD_ERROR", "pip"),
    (("*** ",), r"^make(?:\[\d+\])?: \*\*\* ", "BUILD_ERROR", "make"),
    ((" error:", "Extension error", "Theme error"), r"^(?:Sphinx (?:version )?error|Extension error|Theme error|Configuration error|Sphinx error):?\s*$|^(?:Extension|Theme|Configuration) error:", "BUILD_ERROR", "sphinx"),
    # -- git
    (("fatal: not a git repository", "fatal: cannot change to"), r"^fatal: not a git repository|^fatal: cannot change to", "GIT_ERROR", "repository"),
    (("CONFLICT (", "Automatic merge failed", "could not apply", "Merging is not possible", "fix conflicts"), r"^CONFLICT \(|Automatic merge failed|^error: (?:could not apply|Merging is not possible)|fix conflicts and then commit", "GIT_ERROR", "merge_conflict"),
    (("would be overwritten by", "Please commit your changes or stash them"), r"would be overwritten by (?:merge|checkout)|Please commit your changes or stash them", "GIT_ERROR", "dirty_worktree"),
    (("error: pathspec", "fatal: ", "unknown revision"), r"^error: pathspec .{1,300} did not match|^fatal: ambiguous argument|unknown revision or path|^fatal: bad (?:revision|object)|^fatal: invalid reference|^fatal: Needed a single revision", "GIT_ERROR", "revision"),
    (("! [rejected]", "failed to push some refs", "non-fast-forward", "has no upstream"), r"! \[rejected\]|failed to push some refs|non-fast-forward|^fatal: The current branch .{1,200} has no upstream", "GIT_ERROR", "push"),
    (("fatal: ", "Permission denied (publickey"), r"^fatal: (?:[Cc]ould not read from remote repository|repository .{1,300} not found|unable to access|Authentication failed)|Permission denied \(publickey", "GIT_ERROR", "remote"),
    (("patch failed", "patch does not apply", "corrupt patch", "No valid patches"), r"^error: patch failed|patch does not apply|^(?:error|fatal): corrupt patch|^error: No valid patches in input", "GIT_ERROR", "apply_patch"),
    (("nothing to commit", "nothing added to commit", "no changes added to commit"), r"^nothing (?:added )?to commit|^no changes added to commit", "GIT_ERROR", "nothing_to_commit"),
    (("fatal: ", "error: ", "hint: "), r"^fatal: |^error: (?:src refspec|failed to push|unable to|cannot lock ref|Your local changes)|^hint: ", "GIT_ERROR", "fatal"),
    # -- shell
    (("command not found", ": not found", "is not recognized as an internal"), r"command not found|^(?:\S{1,200}: )?(?:(?:line )?\d+: )?\S{1,200}: not found\s*$|is not recognized as an internal or external command", "COMMAND_NOT_FOUND", "shell"),
    (("syntax error", "unexpected EOF while looking", "Syntax error: "), r"syntax error near unexpected token|unexpected EOF while looking for matching|^\S{1,200}: (?:line \d+: )?syntax error|Syntax error: ", "SYNTAX_ERROR", "shell"),
    (("sed: ", "awk: "), r"^sed: -e expression #\d+|^sed: can't read|^awk: (?:cmd\. line|syntax error)", "SHELL_ERROR", "text_tool"),
    (("no matches found: ", "No match."), r"^\S{0,200}:? ?(?:\d+: )?no matches found: |^No match\.$", "SHELL_ERROR", "glob_no_match"),
    (("usage: ", "Usage: ", "unrecognized arguments: ", "unrecognized option", "invalid option -- ", "unknown option", "unexpected argument"), r"^usage: |^Usage: |unrecognized arguments: |^error: unrecognized option|invalid option -- |unknown option|^error: unexpected argument", "USAGE_ERROR", "cli_arguments"),
    # -- process level
    (("heap out of memory", "MemoryError", "Cannot allocate memory", "OutOfMemoryError", "out of memory", "OOM", "Killed"), r"JavaScript heap out of memory|\bMemoryError\b|Cannot allocate memory|java\.lang\.OutOfMemoryError|\bout of memory\b|\bOOM\b|^Killed\s*$", "OUT_OF_MEMORY", "memory"),
    (("Segmentation fault", "core dumped", "SIGSEGV", "Bus error", "Aborted (core"), r"Segmentation fault|core dumped|SIGSEGV|Bus error|Aborted \(core", "CRASH", "signal"),
    (("panic: ",), r"^panic: runtime error: invalid memory address or nil pointer dereference", "GO_PANIC", "nil_pointer"),
    (("panic: ",), r"^panic: runtime error: index out of range", "GO_PANIC", "index_out_of_range"),
    (("panic: ",), r"^panic: ", "GO_PANIC", "panic"),
    (("JAVA_HOME",), r"JAVA_HOME is not (?:defined correctly|set)|JAVA_HOME environment variable is not", "ENVIRONMENT_ERROR", "java_home"),
    (("panicked at",), r"^thread '[^'\n]{0,200}' panicked at", "RUST_PANIC", "panic"),
    (("timed out and has been killed", " Timeout ", "Exceeded timeout of", "ms exceeded"), r"timed out and has been killed|\+{3,} Timeout \+{3,}|Exceeded timeout of \d+|Timeout of \d+ms exceeded", "TIMEOUT", "command"),
])
# fmt: on

# Stage 2, Python: classified on the final exception line (class and message).
_PY = r"^(?:\w{1,80}\.){0,12}"
# fmt: off
_PYTHON_TABLE = [
    (re.compile(_PY + rx), typ, op)
    for rx, typ, op in [
        (r"(?:ModuleNotFoundError|ImportError)\b", "PYTHON_TRACEBACK", "importing"),
        (r"AttributeError\b", "PYTHON_ATTRIBUTE_ERROR", "attribute_access"),
        (r"KeyError\b", "PYTHON_KEY_ERROR", "key_lookup"),
        (r"IndexError\b", "PYTHON_INDEX_ERROR", "index_access"),
        (r"TypeError\b.{0,300}(?:missing \d+ required|takes (?:from )?\d+ (?:to \d+ )?positional|unexpected keyword argument|got multiple values for|required (?:positional|keyword)[- ]only)", "PYTHON_TYPE_ERROR", "call_signature"),
        (r"TypeError\b.{0,300}is not callable", "PYTHON_TYPE_ERROR", "call"),
        (r"TypeError\b.{0,300}(?:not subscriptable|does not support item assignment|indices must be)", "PYTHON_TYPE_ERROR", "subscript"),
        (r"TypeError\b.{0,300}(?:unsupported operand|not supported between|bad operand type)", "PYTHON_TYPE_ERROR", "operator"),
        (r"TypeError\b.{0,300}(?:not iterable|has no len)", "PYTHON_TYPE_ERROR", "iteration"),
        (r"TypeError\b", "PYTHON_TYPE_ERROR", "type_mismatch"),
        (r"ValueError\b.{0,300}(?:too many values to unpack|not enough values to unpack)", "PYTHON_VALUE_ERROR", "unpacking"),
        (r"ValueError\b.{0,300}(?:invalid literal|could not convert)", "PYTHON_VALUE_ERROR", "conversion"),
        (r"ValueError\b", "PYTHON_VALUE_ERROR", "value_check"),
        (r"(?:NameError|UnboundLocalError)\b", "PYTHON_NAME_ERROR", "name_lookup"),
        (r"(?:SyntaxError|IndentationError|TabError)\b", "SYNTAX_ERROR", "parsing"),
        (r"AssertionError\b", "ASSERTION_ERROR", "test_assertion"),
        (r"FileNotFoundError\b", "FILE_NOT_FOUND", "file_access"),
        (r"PermissionError\b", "PERMISSION_DENIED", "file_access"),
        (r"IsADirectoryError\b", "FILE_ERROR", "is_directory"),
        (r"NotADirectoryError\b", "FILE_ERROR", "not_directory"),
        (r"FileExistsError\b", "FILE_ERROR", "already_exists"),
        (r"ZeroDivisionError\b", "PYTHON_ARITHMETIC_ERROR", "division"),
        (r"(?:OverflowError|FloatingPointError)\b", "PYTHON_ARITHMETIC_ERROR", "overflow"),
        (r"RecursionError\b", "PYTHON_RECURSION_ERROR", "recursion"),
        (r"NotImplementedError\b", "PYTHON_NOT_IMPLEMENTED", "not_implemented"),
        (r"Unicode(?:Decode|Encode)?Error\b", "ENCODING_ERROR", "unicode"),
        (r"JSONDecodeError\b", "PARSE_ERROR", "json"),
        (r"(?:re|sre_constants)\.error\b|PatternError\b", "PARSE_ERROR", "regex"),
        (r"CalledProcessError\b", "PYTHON_SUBPROCESS_ERROR", "subprocess"),
        (r"(?:TimeoutError|TimeoutExpired|ReadTimeout|ConnectTimeout|Timeout)\b", "TIMEOUT", "python"),
        (r"(?:ConnectionRefusedError|ConnectionResetError|ConnectionError|MaxRetryError|NewConnectionError)\b", "NETWORK_ERROR", "connection"),
        (r"(?:HTTPError|URLError)\b", "NETWORK_ERROR", "http"),
        (r"MemoryError\b", "OUT_OF_MEMORY", "memory"),
        (r"KeyboardInterrupt\b", "INTERRUPTED", "signal"),
        (r"StopIteration\b", "PYTHON_STOP_ITERATION", "iteration"),
        (r"RuntimeError\b", "PYTHON_RUNTIME_ERROR", "runtime"),
    ]
]
# fmt: on

# Stage 2, JavaScript/TypeScript on Node: classified on the error line.
# fmt: off
_JS_TABLE = [
    (re.compile(rx), typ, op)
    for rx, typ, op in [
        (r"TypeError: Cannot (?:read|set) propert(?:y|ies) ", "TYPE_ERROR", "property_access"),
        (r"TypeError: .{0,300} is not a function", "TYPE_ERROR", "function_call"),
        (r"TypeError: .{0,300} is not a constructor", "TYPE_ERROR", "constructor"),
        (r"TypeError: .{0,300} is not iterable", "TYPE_ERROR", "iteration"),
        (r"TypeError: Cannot destructure", "TYPE_ERROR", "destructuring"),
        (r"TypeError: Assignment to constant", "TYPE_ERROR", "assignment"),
        (r"TypeError\b", "TYPE_ERROR", "type_mismatch"),
        (r"ReferenceError\b", "REFERENCE_ERROR", "name_lookup"),
        (r"SyntaxError\b", "SYNTAX_ERROR", "parsing"),
        (r"RangeError: Maximum call stack", "STACK_OVERFLOW", "recursion"),
        (r"RangeError\b", "RANGE_ERROR", "value_check"),
        (r"Cannot find module|ERR_MODULE_NOT_FOUND|ERR_PACKAGE_PATH_NOT_EXPORTED", "MODULE_NOT_FOUND", "importing"),
        (r"AssertionError\b|ERR_ASSERTION", "ASSERTION_ERROR", "test_assertion"),
    ]
]
# fmt: on

# Stage 3 (and fallback for focal lines): OS, network and generic phrases anywhere.
# fmt: off
_MESSAGE_TABLE = _table([
    (("No module named", "cannot import name", "ImportError", "ModuleNotFoundError"), r"\bNo module named\b|\bcannot import name\b|ImportError\b|ModuleNotFoundError\b", "PYTHON_TRACEBACK", "importing"),
    (("Cannot find module", "Can't resolve", "ERR_MODULE_NOT_FOUND"), r"Cannot find module '|Module not found: Error: Can't resolve|ERR_MODULE_NOT_FOUND", "MODULE_NOT_FOUND", "importing"),
    (("o such file or directory", "ENOENT", "FileNotFoundError", "NoSuchFileException", "file or directory not found", "an't open file", "cannot find the", " does not exist", "not found: "), r"[Nn]o such file or directory|\bENOENT\b|FileNotFoundError|NoSuchFileException|file or directory not found|[Cc]an't open file|cannot find the (?:file|path) specified|^(?:<tool_use_error>)?(?:File|Path|Directory) does not exist|^ERROR: (?:file )?not found: ", "FILE_NOT_FOUND", "file_access"),
    (("Permission denied", "EACCES", "EPERM", "PermissionError", "Operation not permitted", "AccessDeniedException"), r"Permission denied|\bEACCES\b|\bEPERM\b|PermissionError|Operation not permitted|AccessDeniedException", "PERMISSION_DENIED", "file_access"),
    (("Read-only file system", "EROFS"), r"Read-only file system|\bEROFS\b", "PERMISSION_DENIED", "read_only_fs"),
    (("No space left on device", "ENOSPC", "Disk quota exceeded"), r"No space left on device|\bENOSPC\b|Disk quota exceeded", "DISK_FULL", "file_write"),
    (("Is a directory", "EISDIR"), r"Is a directory|\bEISDIR\b", "FILE_ERROR", "is_directory"),
    (("Not a directory", "ENOTDIR"), r"Not a directory|\bENOTDIR\b", "FILE_ERROR", "not_directory"),
    (("File exists", "EEXIST"), r"File exists|\bEEXIST\b", "FILE_ERROR", "already_exists"),
    (("Connection refused", "ECONNREFUSED", "ConnectionRefusedError"), r"Connection refused|\bECONNREFUSED\b|ConnectionRefusedError", "NETWORK_ERROR", "connection"),
    (("Connection reset", "ECONNRESET", "Broken pipe", "EPIPE"), r"Connection reset|\bECONNRESET\b|Broken pipe|\bEPIPE\b", "NETWORK_ERROR", "connection"),
    (("Could not resolve host", "ENOTFOUND", "EAI_AGAIN", "getaddrinfo", "Name or service not known", "name resolution", "nodename nor servname"), r"Could not resolve host|\bENOTFOUND\b|\bEAI_AGAIN\b|getaddrinfo|Name or service not known|Temporary failure in name resolution|nodename nor servname", "NETWORK_ERROR", "dns"),
    (("CERTIFICATE_VERIFY_FAILED", "certificate verify failed", "SSLError", "signed certificate"), r"CERTIFICATE_VERIFY_FAILED|certificate verify failed|SSLError|self[- ]signed certificate", "NETWORK_ERROR", "tls"),
    (("Network is unreachable", "No route to host", "ENETUNREACH", "EHOSTUNREACH"), r"Network is unreachable|No route to host|\bENETUNREACH\b|\bEHOSTUNREACH\b", "NETWORK_ERROR", "connection"),
    (("timed out", "ETIMEDOUT", "TimeoutError", "TimeoutException", "eadline exceeded", "timeout expired"), r"timed out|\bETIMEDOUT\b|TimeoutError|TimeoutException|[Dd]eadline exceeded|\btimeout expired\b", "TIMEOUT", "command"),
    (("HTTP Error ", "HTTPError: ", "Client Error", "Server Error", "status code "), r"HTTP Error \d{3}|HTTPError: \d{3}|\b[45]\d\d (?:Client|Server) Error|status code [45]\d\d", "NETWORK_ERROR", "http"),
    (("Address already in use", "EADDRINUSE"), r"Address already in use|\bEADDRINUSE\b", "NETWORK_ERROR", "address_in_use"),
    (("Interrupted: ", " error"), r"Interrupted: \d+ errors? during collection|^=+ \d+ errors? in [\d.]+s", "TEST_COLLECTION_ERROR", "pytest"),
    (("FAIL: ",), r"^FAIL: ", "TEST_FAILURE", "check"),
    (("SyntaxError", "IndentationError", "TabError", "invalid syntax"), r"\b(?:SyntaxError|IndentationError|TabError)\b|invalid syntax", "SYNTAX_ERROR", "parsing"),
    (("AssertionError", "assertion failed"), r"\bAssertionError\b|assertion failed", "ASSERTION_ERROR", "test_assertion"),
    (("Cannot read propert",), r"Cannot read propert(?:y|ies) of (?:undefined|null)", "TYPE_ERROR", "property_access"),
    (("treated as error", "-Werror"), r"[Ww]arning, treated as error|-Werror|warnings? (?:are|being) treated as errors?", "WARNING_AS_ERROR", "warnings"),
    (("UnicodeDecodeError", "UnicodeEncodeError", "codec can't"), r"\bUnicode(?:Decode|Encode)Error\b|codec can't (?:decode|encode)", "ENCODING_ERROR", "unicode"),
    (("SIGKILL", "SIGTERM", "Terminated"), r"\bSIGKILL\b|\bSIGTERM\b|^Terminated\s*$", "CRASH", "signal"),
])
# fmt: on

_OP_SANITIZE = re.compile(r"[^a-z0-9]+")


def _op_from_class(cls: str) -> str:
    op = _OP_SANITIZE.sub("_", cls.lower()).strip("_")[:48]
    return op or "unknown"


def _first_row(table: list[Row], text: str) -> str | None:
    present: dict[str, bool] = {}  # one str.find per distinct needle
    for needles, rx, typ, op in table:
        live = []
        for nd in needles:
            hit = present.get(nd)
            if hit is None:
                hit = present[nd] = nd in text
            if hit:
                live.append(nd)
        if live and _search(rx, tuple(live), text):
            return f"{typ}|{op}"
    return None


def _first_line_row(table: list[tuple[re.Pattern[str], str, str]], line: str) -> str | None:
    for rx, typ, op in table:
        if rx.search(line):
            return f"{typ}|{op}"
    return None


def fingerprint(text: str) -> str:
    """``TYPE|operation`` for an error output; ``GENERIC_ERROR|unknown`` if nothing matches.

    >>> fingerprint("TypeError: Cannot read properties of undefined (reading 'x')\\n    at f (/a.js:1:2)")
    'TYPE_ERROR|property_access'
    """
    try:
        t = _clean(text)
        if not t.strip():
            return UNKNOWN_FINGERPRINT
        hit = _first_row(_TOOL_TABLE, t)
        if hit:
            return hit
        focus = _focus(t)
        if focus:
            lang, line, cls = focus
            line = line[:_MAX_LINE]
            if lang == "java":
                return f"JAVA_EXCEPTION|{_op_from_class(cls)}"
            table = _PYTHON_TABLE if lang == "py" else _JS_TABLE
            hit = _first_line_row(table, line) or _first_row(_MESSAGE_TABLE, line)
            if hit:
                return hit
            prefix = "PYTHON_EXCEPTION" if lang == "py" else "JS_ERROR"
            return f"{prefix}|{_op_from_class(cls)}"
        return _first_row(_MESSAGE_TABLE, t) or UNKNOWN_FINGERPRINT
    except Exception:  # noqa: BLE001 - a hook never breaks the agent (DESIGN §7)
        return UNKNOWN_FINGERPRINT


# ---------------------------------------------------------------------- normalisation

_DROP_LINE = re.compile(
    r"^\s*(?:"
    r"Traceback \(most recent call last\):?"
    r"|During handling of the above exception.*"
    r"|The above exception was the direct cause.*"
    r"|[\^~]+"  # Python 3.11+ carets, compiler underlines
    r"|at (?:async )?[^\s()]{1,300} \(.*\)\s*\{?"  # JS: at f (file:1:2)
    r"|at (?:async )?[^\s()]{0,500}:\d+:\d+\)?"  # JS: at file:1:2
    r"|at [\w$.<>/-]{1,300}\([^()\n]{0,200}\)"  # Java: at pkg.Cls.m(File.java:12)
    r"|\.\.\. \d+ (?:more|common frames omitted)"
    r"|goroutine \d+ \[.*"
    r"|\S{1,500}\.go:\d+(?: \+0x[0-9a-f]+)?"
    r"|\S{1,500}\.py:\d+: in \S+"  # pytest --tb=short frames
    r"|\d+: 0x[0-9a-f]+ - .*"  # Rust backtrace frames
    r"|\d{0,6}\s{0,4}\|.*"  # rustc / tsc source gutter: "2 |     x"
    r")\s*$"
)
_PY_FRAME = re.compile(r'^\s*File "[^"\n]{0,1000}", line \d+')
_GO_FUNC = re.compile(r"^\S{1,500}\(.*\)$")

_SUBS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(
            r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?"
        ),
        "T",
    ),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}\b"), "T"),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,9})?\b"), "T"),
    (
        re.compile(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
        ),
        "H",
    ),
    (re.compile(r"\b0[xX][0-9a-fA-F]{1,64}\b"), "0xX"),
    # quoted strings; an opening quote preceded by a word character is an apostrophe (can't)
    (re.compile(r"(?<![\w'])'[^'\n]{0,300}'"), "'X'"),
    (re.compile(r'(?<![\w"])"(?:[^"\\\n]|\\.){0,300}"'), "'X'"),
    (re.compile(r"`[^`\n]{0,300}`"), "'X'"),
    (re.compile(r":\d+:\d+\b"), ":X:X"),
    (re.compile(r"\(\d+,\d+\)"), "(X,X)"),  # tsc: file.ts(12,5)
    (re.compile(r"\[\d+,\d+\]"), "[X,X]"),  # maven: File.java:[12,5]
    (re.compile(r"(\.[A-Za-z]\w{0,9}):\d+\b"), r"\1:X"),  # file.py:12
    (
        re.compile(
            r"\b([Ll]ine|LINE|[Cc]olumn|col|lineno|position|pos|char|offset)(\s{0,3}[:=]?\s{0,3})\d+"
        ),
        r"\1\2X",
    ),
    (
        re.compile(
            r"\b\d+ (failed|passed|errors?|skipped|warnings?|deselected|xfailed|xpassed|failures?|tests?)\b"
        ),
        r"N \1",
    ),
    (re.compile(r"\b\d+(?:\.\d+)?(ms|s)\b"), r"N\1"),
    (re.compile(r"(?<![\w-])(?=[0-9a-f]{0,64}[0-9])(?=[0-9a-f]{0,64}[a-f])[0-9a-f]{7,64}\b"), "H"),
    (re.compile(r"\b\d{4,}\b"), "N"),
    (re.compile(r"[=\-_*#~]{4,}"), " "),
]
_WS = re.compile(r"\s+")
_INFORMATIVE = re.compile(
    r"[Ee]rror|ERROR|[Ee]xception|[Ff]ail|FAIL|[Ff]atal|FATAL|[Pp]anic|[Dd]enied|not found|[Nn]o such|"
    r"[Cc]annot|[Cc]an't|[Uu]nable|[Ii]nvalid|refused|timed out|[Kk]illed|[Aa]bort|undefined|[Mm]issing"
)


def _strip_frames(t: str) -> list[str]:
    out: list[str] = []
    skip_source = False
    for line in t.split("\n"):
        if skip_source:
            skip_source = False
            if line[:1] in (" ", "\t") and not _PY_FRAME.match(line):
                continue
        if not line.strip():
            continue
        if len(line) > _MAX_LINE:
            line = line[:_MAX_LINE]
        if _PY_FRAME.match(line):
            skip_source = True
            continue
        if _DROP_LINE.match(line):
            if ".go:" in line and out and _GO_FUNC.match(out[-1].strip()):
                out.pop()
            continue
        out.append(line)
    return out


def _pick(lines: list[str], budget: int, sep: int = 1) -> list[str]:
    """Lines to keep within ``budget`` characters: all if they fit, else the first
    informative line and as many of the last informative lines as fit (in order)."""
    if sum(len(s) + sep for s in lines) <= budget:
        return lines
    keys = [i for i, s in enumerate(lines) if _INFORMATIVE.search(s)]
    if not keys:
        out, used = [], 0
        for s in lines:
            if used + len(s) > budget:
                if not out:
                    out.append(s[:budget])
                break
            out.append(s)
            used += len(s) + sep
        return out
    first = keys[0]
    picked = [lines[first][:budget]]
    used = len(picked[0]) + sep
    tail: list[str] = []
    for i in reversed(keys[1:]):
        if used + len(lines[i]) + sep > budget:
            break
        tail.append(lines[i])
        used += len(lines[i]) + sep
    return picked + tail[::-1]


def normalize_error(text: str) -> str:
    """A short, stable form of an error message (see the module docstring)."""
    try:
        t = _clean(text)
        if not t.strip():
            return ""
        py = _python_final_exception(t)
        if py:
            lines = [py[0]]
        else:
            if len(t) > _NORMALIZE_HEAD + _NORMALIZE_TAIL:
                t = t[:_NORMALIZE_HEAD] + "\n" + t[-_NORMALIZE_TAIL:]
            # the substitutions are the costly part: pick ~2000 raw characters first
            lines = _pick(_strip_frames(t), _NORMALIZE_RAW_BUDGET)
        body = "\n".join(lines)
        for rx, repl in _SUBS:
            body = rx.sub(repl, body)
        out: list[str] = []
        seen: set[str] = set()
        for line in body.split("\n"):
            s = _WS.sub(" ", line).strip()
            if s and s not in seen:
                seen.add(s)
                out.append(s)
        return " ".join(_pick(out, MAX_NORMALIZED_CHARS))[:MAX_NORMALIZED_CHARS].rstrip()
    except Exception:  # noqa: BLE001 - never break the hook
        return ""
