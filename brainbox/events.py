"""Event normalisation: raw record dicts (CLI `--jsonl`, hooks, trajectory loaders) to the
events stored in the log. Standard library only: this runs in every hook process.

A raw record has `session`, `cwd`, and optionally `project`, `kind`, `tool`, `action`,
`files`, `error`, `exit_code`, `at`, `prompt`, `command`, `args`, `meta`, `shown`.

`shown` (the replay's loaders, issue 16): the text of files a tool result showed, as
`{path: [first line, text, whole]}` (or `{path: text}`, the whole file from line 1):
`first line` 1-based, `whole` True when the text is the entire file. Paths become
project-relative like `files` (outside ones drop), the text is redacted and cut to
MAX_SHOWN characters (then not whole). The key is in the event only when some text is.

Choices:
- The project is `project` when given (then also the root paths are relative to), else
  the repository of `cwd` (`brainbox.identity`: every worktree of a clone is one project,
  `BRAINBOX_PROJECT` overrides it, outside git the directory) with the worktree root,
  the nearest folder above `cwd` holding `.git`, as the root. File paths become POSIX
  paths relative to that root; paths outside it are dropped (a memory of one project
  says nothing about `/tmp/x.py`). An event records its worktree root in `worktree` when
  it is not the project key itself (a linked worktree, or an overridden key).
- Secrets are redacted from every stored text before storage: commands, prompts,
  arguments, errors, the strings in `meta`, and file paths. A path keeps a stable key:
  a secret segment becomes `REDACTED-<8 hex>` (`brainbox.redact.redact_path`), so
  `keys/ghp_....txt` is one resource, the same every time, with no token in it. Doing it
  here covers every channel (hooks, daemon, import, record, jsonl, spool). The project
  root itself is not redacted: it is the key recall matches the working directory against.
- Each event is validated on its own, and a bad one is rejected with a reason (an
  `EventError`) instead of raising something else that would cost the good ones beside it:
  an exit code outside int64 is clamped to it (SQLite's INTEGER; `append_events` raised
  OverflowError on 2^64, report D6), keeping "it failed" while a non-finite one is refused;
  `at` must be finite and within 1970..9999 (a millisecond timestamp, 1.7e12, is year
  55,000: refused, not stored as the far future); values nested deeper than
  MAX_DEPTH, or a `meta` of more than MAX_META_NODES values, are refused instead of raising
  RecursionError.
- An error resource exists only when there is error text; its key is the fingerprint
  (DESIGN §4.6) and the redacted text is kept, bounded, as context.
- A shell tool given as plain `Bash` with a command becomes `Bash:<program>`.
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import os
import posixpath
import time

from brainbox.identity import forget as forget_identities
from brainbox.identity import identify

KINDS = ("tool", "prompt", "session_start", "session_end", "feedback", "maintenance")
ACTIONS = ("read", "edit", "search", "run", "plan", "other")
TOOL_ACTIONS = {
    "Read": "read", "NotebookRead": "read", "View": "read", "open": "read",
    "Edit": "edit", "MultiEdit": "edit", "Write": "edit", "NotebookEdit": "edit",
    "create": "edit", "edit": "edit",
    "Grep": "search", "Glob": "search", "LS": "search", "search_dir": "search",
    "search_file": "search", "find_file": "search", "WebSearch": "search",
    "Bash": "run", "TodoWrite": "plan", "Task": "plan",
}
MAX_COMMAND = 4000
MAX_PROMPT = 8000
MAX_ERROR = 2000
MAX_ARGS = 1000
MAX_FILES = 100
MAX_SHOWN = 1 << 20  # characters of one file's shown text (the code index's file limit)
MAX_DEPTH = 32  # nesting of `meta` (a hook's is 2 deep)
MAX_META_NODES = 2000
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_AT = 253402300799.0  # 9999-12-31T23:59:59Z

_NORM_CACHE: dict[str, str] = {}


class EventError(ValueError):
    """A raw record that cannot be stored (missing session, wrong types)."""


def _text(value, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        value = str(value)
    # Drop lone surrogates (non-UTF-8 bytes decoded with surrogateescape) and NULs; an
    # ASCII string has no surrogate, so it skips the round trip (most text, replay speed).
    if not value.isascii():
        value = value.encode("utf-8", "replace").decode("utf-8")
    if "\x00" in value:
        value = value.replace("\x00", "")
    return value[:limit] if value else None


def project_root(cwd: str) -> str:
    """The project key of `cwd`: its repository (`brainbox.identity`: one for every
    worktree of a clone; `BRAINBOX_PROJECT` overrides it), else `cwd` itself."""
    return identify(cwd)[0]


def forget_project_roots() -> None:
    """Clear the identity cache: the next call reads `.git` afresh (the daemon does so for
    each handed-over hook, as a fresh hook process would)."""
    forget_identities()


def _normpath(path: str) -> str:
    """``posixpath.normpath``, remembered: a replay normalises the same few roots and
    working directories for every event."""
    hit = _NORM_CACHE.get(path)
    if hit is None:
        if len(_NORM_CACHE) > 4096:
            _NORM_CACHE.clear()
        hit = _NORM_CACHE[path] = posixpath.normpath(path)
    return hit


MEMO_CHARS = 2048  # text longer than this is redacted / fingerprinted afresh every time


def _memo(fn):
    """``fn`` (pure, of one string) remembered for short strings: a replay meets the same
    commands, errors and paths again and again (normalisation was 19 µs per synthetic event
    and 7 with these), while a hook process pays nothing. Long text is not kept."""
    cached = functools.lru_cache(maxsize=4096)(fn)

    def call(text):
        return cached(text) if len(text) <= MEMO_CHARS else fn(text)

    call.cache_clear, call.cache_info = cached.cache_clear, cached.cache_info
    return call


@_memo
def _redact(text: str) -> str:
    from brainbox.redact import redact

    return redact(text)


@_memo
def _error_fields(text: str) -> tuple[str, str]:
    """(fingerprint, bounded normalised text) of a redacted error."""
    from brainbox.fingerprint import fingerprint, normalize_error

    return fingerprint(text), normalize_error(text)[:MAX_ERROR]


def relative_path(path: str, cwd: str, root: str) -> str | None:
    """Project-relative POSIX path of `path`, or None when it lies outside `root`."""
    if not path or not isinstance(path, str):
        return None
    if len(path) > MEMO_CHARS:
        return _relative.__wrapped__(path, cwd, root)
    return _relative(path, cwd, root)


@functools.lru_cache(maxsize=8192)
def _relative(path: str, cwd: str, root: str) -> str | None:
    rel = _relative_raw(path, cwd, root)
    if rel is None:
        return None
    from brainbox.redact import redact_path

    return redact_path(rel)


def _relative_raw(path: str, cwd: str, root: str) -> str | None:
    path = path.strip().replace("\\", "/")
    path = path.removeprefix("file://")
    if not path:
        return None
    full = posixpath.normpath(path if path.startswith("/") else posixpath.join(cwd, path))
    root = _normpath(root)
    if full == root:
        return None
    prefix = root if root.endswith("/") else root + "/"
    if not full.startswith(prefix):
        return None
    rel = full[len(prefix):]
    return rel or None


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def duration(value) -> float | None:
    """Seconds of `30d`, `12h`, `2w`, `90m`, `45s` (digits, an optional fraction, a unit);
    None when `value` is not a duration. No `re`: this module is on the record path."""
    v = value.strip() if isinstance(value, str) else ""
    if len(v) < 2 or v[-1] not in _UNITS:
        return None
    whole, dot, frac = v[:-1].strip().partition(".")
    digits = whole + frac
    if not (whole and digits.isascii() and digits.isdigit() and (frac or not dot)):
        return None
    return float(whole + dot + frac) * _UNITS[v[-1]]


def parse_time(at) -> float:
    """Seconds since the epoch of `at` (None or "" = now); EventError unless finite and
    within 1970..9999."""
    if at is None or at == "":
        return time.time()
    if isinstance(at, bool):
        raise EventError("'at' must be a time, not a boolean")
    if isinstance(at, (int, float)):
        return _checked_time(at, at)
    if isinstance(at, str):
        s = at.strip()
        try:
            return _checked_time(float(s), at)
        except ValueError:
            pass
        if s.endswith("Z"):
            s = s[:-1] + "+00:00"
        try:
            dt = _dt.datetime.fromisoformat(s)
        except ValueError as exc:
            raise EventError(f"'at' is not ISO 8601: {_short(at)}") from exc
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=_dt.UTC)
        try:
            return _checked_time(dt.timestamp(), at)
        except (OverflowError, ValueError, OSError) as exc:
            raise EventError(f"'at' is out of range: {_short(at)}") from exc
    raise EventError(f"'at' has an unsupported type: {type(at).__name__}")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _checked_time(value, given) -> float:
    try:
        t = float(value)
    except OverflowError as exc:
        raise EventError(f"'at' is out of range: {_short(given)}") from exc
    if not math.isfinite(t):
        raise EventError(f"'at' must be a finite time: {_short(given)}")
    if not 0.0 <= t <= MAX_AT:
        hint = " (milliseconds? 'at' is in seconds)" if MAX_AT < t < MAX_AT * 1000 else ""
        raise EventError(f"'at' is out of range 1970..9999: {_short(given)}{hint}")
    return t


def _exit_code(value) -> int | None:
    """An integer exit code clamped to int64; EventError for a non-integer or non-finite."""
    if value is None:
        return None
    try:
        code = int(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise EventError(f"'exit_code' must be an integer: {_short(value)}") from exc
    return min(max(code, INT64_MIN), INT64_MAX)


def _clean_meta(meta: dict) -> dict:
    """A copy of `meta` that storage can always write and that holds no secret: strings
    redacted, non-finite floats None, other values as their string; EventError past
    MAX_DEPTH or MAX_META_NODES (walked with a stack: no recursion). Cost: normalise went
    from 3.1 to 4.2 µs per event (best of 8 runs over 20,000 synthetic events, a third with
    a hook's 3-string meta, /tmp bench against c7303d9's events.py)."""
    out: dict = {}
    stack = [(meta, out, 1)]
    nodes = 0
    while stack:
        src, dst, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise EventError(f"'meta' is nested too deeply (more than {MAX_DEPTH} levels)")
        items = src.items() if isinstance(src, dict) else enumerate(src)
        for key, value in items:
            nodes += 1
            if nodes > MAX_META_NODES:
                raise EventError(f"'meta' has more than {MAX_META_NODES} values")
            if isinstance(value, str):
                value = _redact(value) if value else value
            elif isinstance(value, bool) or value is None or isinstance(value, int):
                pass
            elif isinstance(value, float):
                value = value if math.isfinite(value) else None
            elif isinstance(value, (dict, list, tuple)):
                child: dict | list = {} if isinstance(value, dict) else []
                stack.append((value, child, depth + 1))
                value = child
            else:
                value = _redact(str(value))
            if isinstance(dst, dict):
                dst[key if isinstance(key, str) else str(key)] = value
            else:
                dst.append(value)
    return out


def normalize(raw: dict) -> dict:
    """Turn one raw record into a stored event; raises EventError on unusable input (and
    only EventError, whatever the values: nesting that exhausts the stack is one too)."""
    try:
        return _normalize(raw)
    except RecursionError as exc:
        raise EventError("a value is nested too deeply") from exc


def _normalize(raw: dict) -> dict:
    if not isinstance(raw, dict):
        raise EventError("an event must be a JSON object")
    session = _text(raw.get("session") or raw.get("session_id"), 200)
    if not session:
        raise EventError("missing 'session'")
    cwd = _text(raw.get("cwd"), 4096) or os.getcwd()
    cwd = _normpath(cwd.replace("\\", "/"))
    project = _text(raw.get("project"), 4096)
    worktree = None
    if project:
        project = _normpath(project)
        if not project.startswith("/"):
            project = posixpath.normpath(posixpath.join(cwd, project))
        root = project
    else:
        project, root = identify(cwd)
        if root != project:
            worktree = root

    tool = _text(raw.get("tool"), 200)
    tool = tool.strip() if tool else None
    command = _text(raw.get("command"), MAX_COMMAND)
    prompt = _text(raw.get("prompt"), MAX_PROMPT)
    args = _text(raw.get("args"), MAX_ARGS)
    error = _text(raw.get("error"), 64_000)
    command = _redact(command) if command else None
    prompt = _redact(prompt) if prompt else None
    args = _redact(args) if args else None
    error = _redact(error) if error else None

    if tool and tool.lower() == "bash" and command:
        from brainbox.shell import command_tool  # never raises; names at least "Bash"

        tool = command_tool(command)

    kind = raw.get("kind")
    if kind is None:
        kind = "prompt" if prompt and not tool else "tool"
    if kind not in KINDS:
        raise EventError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    if kind == "tool" and not tool:
        raise EventError("a tool event needs 'tool'")

    action = raw.get("action")
    if action not in ACTIONS:
        base = tool.split(":", 1)[0] if tool else None
        action = TOOL_ACTIONS.get(tool or "", TOOL_ACTIONS.get(base or "", "other"))

    files_in = raw.get("files") or []
    if isinstance(files_in, str):
        files_in = [files_in]
    if not isinstance(files_in, (list, tuple)):
        raise EventError("'files' must be a list of paths")
    files: list[str] = []
    for f in files_in[:MAX_FILES]:
        rel = relative_path(_text(f, 4096) or "", cwd, root)
        if rel and rel not in files:
            files.append(rel)

    exit_code = _exit_code(raw.get("exit_code"))

    error_fp = None
    if error:
        error_fp, error = _error_fields(error)

    meta = raw.get("meta")
    if meta is not None:
        if not isinstance(meta, dict):
            raise EventError("'meta' must be an object")
        meta = _clean_meta(meta)

    shown = _shown(raw.get("shown"), cwd, project) if raw.get("shown") else None

    out = {
        "at": parse_time(raw.get("at")),
        "session": session,
        "project": project,
        "worktree": worktree,
        "kind": kind,
        "tool": tool,
        "action": action,
        "files": files,
        "command": command,
        "error": error,
        "error_fp": error_fp,
        "exit_code": exit_code,
        "prompt": prompt,
        "args": args,
        "meta": meta,
    }
    if shown:
        out["shown"] = shown
    return out


def _shown(value, cwd: str, project: str) -> dict:
    """`shown` normalised (module docstring): {relative path: [first line, redacted text,
    whole]}; entries of the wrong shape are dropped, a value that is not an object refused."""
    if not isinstance(value, dict):
        raise EventError("'shown' must map paths to the text shown")
    out: dict[str, list] = {}
    for path, view in list(value.items())[:MAX_FILES]:
        if isinstance(view, str):
            view = [1, view, False]
        if not isinstance(view, (list, tuple)) or len(view) != 3:
            continue
        start, text, whole = view
        if isinstance(start, bool) or not isinstance(start, int) or start < 1 \
                or not isinstance(text, str):
            continue
        rel = relative_path(path if isinstance(path, str) else "", cwd, project)
        clean = _text(text, MAX_SHOWN + 1)
        if not rel or not clean:
            continue
        cut = len(clean) > MAX_SHOWN
        out[rel] = [start, _redact(clean[:MAX_SHOWN]), bool(whole) and not cut]
    return out
