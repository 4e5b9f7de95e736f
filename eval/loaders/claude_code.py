"""Claude Code session transcripts (``~/.claude/projects/*/<session>.jsonl``).

Two layers:

- :func:`iter_transcript` reads any real transcript and yields its tool calls (each
  ``tool_use`` joined with its ``tool_result`` by ``tool_use_id``) and the user's prompts, in
  order. It knows nothing of benchmarks: what a line means is :mod:`brainbox.transcript`,
  the reader ``brainbox import claude`` uses too.
- :func:`load` reads the SWE-bench Lite benchmark sessions (``claude-code-swebench-lite``:
  a directory with ``sessions/*.jsonl`` and ``index.tsv``, or one session file) and yields
  :class:`~brainbox.eval.loaders.base.Task` objects.

Benchmark paths. The published sessions were sanitised: the run directory
(``/Users/<user>/Desktop/swebench_9_15``) became ``./swebench_9_15`` in ``cwd`` and in
paths, sometimes ``~/desktop/swebench_9_15``. We read that directory as the container
root ``/``, so the checkout ``./swebench_9_15/testbed`` is the project ``/testbed`` (the
same root mini-swe-agent uses) and relative paths resolve against the line's ``cwd``.
Agents sometimes cloned a second copy inside the first or into
``testbed/<owner>__<repo>-<PR>/``; those prefixes are collapsed onto ``/testbed``.
Files outside ``testbed`` (``manual.yaml``, ``output/``, scratch tests next to it) drop.

Dropped as harness boilerplate (the run's ``manual.yaml`` prescribes them; they are not
the agent's work on the issue): reading ``manual.yaml``; ``rm -rf testbed``;
``git clone``; ``git fetch``/``checkout`` of a commit hash; ``pip install -e testbed`` (or
``.``); the patch export ``git add -A`` / ``git diff --cached``; and anything touching
``output/`` (``<id>_preds.json``). A Bash step is dropped only when every part of it is
boilerplate or a neutral helper (``cd``, ``head``, ``tail``, ``echo``, ``ls``, ``pwd``).

Tools: ``Read``/``Edit``/``Write``/``MultiEdit``/``NotebookEdit`` use ``input.file_path``
(``notebook_path``); ``Grep``/``Glob`` use ``path`` and put the pattern in ``args``;
``Bash`` goes through :mod:`brainbox.shell`; the rest (``TodoWrite``, ``Task``, ...) are the
tool name only. Timestamps are the ``tool_use`` line's.
"""

from __future__ import annotations

import csv
import json
import posixpath
import re
from collections.abc import Iterator
from pathlib import Path

from brainbox import shell, transcript
from brainbox.eval.loaders.base import Task, TaskBuilder, parse_task_id, to_unix, warn_skip
from brainbox.eval.loaders.shown import ARROW, numbered

__all__ = ["is_transcript", "iter_transcript", "load", "load_session"]

SOURCE = "claude_code"
PROJECT = "/testbed"
TASK_PREFIX = "Fix this bug to solve the issue based on manual.yaml:"

# File tool -> the fact of its file (base.py); Write writes the whole file: a create.
_FILE_TOOLS = {
    "Read": "read",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Write": "create",
    "NotebookEdit": "edit",
    "NotebookRead": "read",
}
_SEARCH_TOOLS = {"Grep", "Glob", "LS"}
_TOOL_ACTION = {
    "TodoWrite": "plan",
    "ExitPlanMode": "plan",
    "EnterPlanMode": "plan",
    "WebFetch": "search",
    "WebSearch": "search",
    "BashOutput": "run",
    "KillShell": "run",
    "KillBash": "run",
    "TaskOutput": "run",
}


# --------------------------------------------------------------------------- transcript


def _read_lines(path: Path, strict: bool):
    """Parsed JSON lines with their line numbers. ``strict``: return ``None`` on the first
    bad line (the caller skips the task); else skip bad lines with a warning."""
    out = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for no, raw in enumerate(fh, 1):
            raw = raw.strip()
            if not raw:
                continue
            try:
                d = json.loads(raw)
            except json.JSONDecodeError as exc:
                warn_skip(
                    path, f"bad JSON line ({exc.msg})" + ("; task skipped" if strict else ""), no
                )
                if strict:
                    return None
                continue
            if isinstance(d, dict):
                out.append((no, d))
    return out


def iter_transcript(path) -> Iterator[dict]:
    """Tool calls and user prompts of one Claude Code transcript, in file order.

    Yields ``{"type": "tool", "session_id", "cwd", "timestamp", "tool_name", "tool_input",
    "tool_response", "is_error"}`` (plus ``result_text``, ``result_timestamp``,
    ``tool_use_id``, ``uuid``, ``is_sidechain``, ``agent_id``, ``has_result``) for every
    ``tool_use``, joined with its ``tool_result``: ``tool_response`` is the line's structured
    ``toolUseResult`` (what a PostToolUse hook receives) when present, else the result text;
    a call without a result (interrupted, end of file) has ``tool_response=None``. Yields
    ``{"type": "prompt", "session_id", "cwd", "timestamp", "prompt"}`` (plus ``uuid``,
    ``is_sidechain``) for user prompts: lines carrying tool results, ``isMeta`` lines, slash
    command and local-command echoes, interruption notices, compaction summaries and system
    lines are not prompts. ``progress``, ``summary``, ``file-history-snapshot`` and
    ``queue-operation`` lines are skipped. A bad JSON line is skipped with a warning.
    Each item's ``line`` is its line number. The lines are read here, their meaning is
    :mod:`brainbox.transcript`'s (shared with ``brainbox import claude``).
    """
    path = Path(path)
    yield from transcript.items(_read_lines(path, strict=False))


def is_transcript(path) -> bool:
    """Does ``path`` look like a Claude Code JSONL transcript?"""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for _, raw in zip(range(20), fh):
                try:
                    d = json.loads(raw)
                except json.JSONDecodeError:
                    continue
                if (
                    isinstance(d, dict)
                    and "sessionId" in d
                    and d.get("type") in ("user", "assistant", "progress", "system", "summary")
                ):
                    return True
    except OSError:
        return False
    return False


# --------------------------------------------------------------------------- benchmark paths

_BASE = re.compile(r"(?:~/[^\s'\"/]*|\.|(?:/[^\s'\"/]+)+)?/swebench_9_15(?=/|\b)", re.IGNORECASE)
_REPO_DIR = re.compile(r"^[\w.-]+__[\w.-]+(?:-\d+)?(?:/|$)")


def _debase(text: str) -> str:
    """Replace the sanitised run directory by the container root ``/``."""
    return _BASE.sub(lambda m: "" if text[m.end() : m.end() + 1] == "/" else "/", text)


def _collapse(path: str) -> str:
    """``/testbed/testbed/x`` and ``/testbed/<owner>__<repo>-N/x`` -> ``/testbed/x``."""
    if not path.startswith(PROJECT + "/"):
        return path
    rest = path[len(PROJECT) + 1 :]
    while rest == "testbed" or rest.startswith("testbed/"):
        rest = rest[8:]
    m = _REPO_DIR.match(rest)
    if m:
        rest = rest[m.end() :]
    return f"{PROJECT}/{rest}".rstrip("/") if rest else PROJECT


def _container_cwd(cwd) -> str:
    if not cwd:
        return "/"
    p = _debase(str(cwd))
    if not p.startswith("/"):
        p = "/" + p
    return _collapse(posixpath.normpath(p))


def _container_path(path, cwd: str) -> str | None:
    if not isinstance(path, str) or not path.strip():
        return None
    p = _debase(path.strip())
    if p.startswith("~"):
        return None
    p = posixpath.normpath(posixpath.join(cwd, p))
    return _collapse(p)


# --------------------------------------------------------------------------- boilerplate

_SHA = re.compile(r"\b[0-9a-f]{7,40}\b")
_NEUTRAL = {"cd", "head", "tail", "echo", "ls", "pwd", "true", "sleep"}


def _boilerplate_piece(text: str) -> bool | None:
    """True: harness boilerplate; None: neutral helper; False: real work."""
    words = text.split()
    if not words:
        return None
    prog = words[0]
    if (
        "manual.yaml" in text
        or "_preds.json" in text
        or re.search(r"(^|[\s=])/output(/|\s|$)", text)
        or re.fullmatch(r"mkdir\s+(-p\s+)?(\./)?output/?", text)
    ):
        return True
    if prog == "rm" and re.fullmatch(r"rm\s+-\w+\s+(\S*/)?testbed/?", text):
        return True
    if prog == "git":
        rest = re.sub(r"^git\s+(-C\s+\S+\s+)?", "", text)
        if rest.startswith("clone "):
            return True
        if re.match(r"(fetch|checkout)\b", rest) and _SHA.search(rest):
            return True
        return re.fullmatch(r"(add\s+-A|diff\s+--cached)(\s+.*)?", rest) is not None
    if re.match(r"pip\d*\s+install\s+(-q\s+)?-e\s+(\S*testbed/?|\.)(\s|$)", text):
        return True
    if prog in _NEUTRAL:
        return None
    return False


def _is_boilerplate_command(command: str) -> bool:
    flags = [_boilerplate_piece(t) for t, _ in shell.split_commands(command)]
    return any(f is True for f in flags) and all(f is not False for f in flags)


# --------------------------------------------------------------------------- tasks


def _error_text(item: dict) -> str | None:
    if not item["is_error"]:
        return None
    text = item.get("result_text") or (
        item["tool_response"] if isinstance(item["tool_response"], str) else ""
    )
    text = re.sub(r"</?tool_use_error>", "", text or "").strip()
    text = re.sub(r"^Exit code -?\d+\n?", "", text)  # the code goes to exit_code
    return text.strip() or "error"


def _exit_code(item: dict) -> int | None:
    if not item["has_result"]:
        return None
    if item["is_error"]:
        m = re.match(r"\s*Exit code (-?\d+)", item.get("result_text") or "")
        return int(m.group(1)) if m else None
    return 0


def _stdout(item: dict) -> str | None:
    """A Bash step's standard output (its structured result's ``stdout``), else None."""
    resp = item.get("tool_response")
    out = resp.get("stdout") if isinstance(resp, dict) else None
    return _debase(out) if isinstance(out, str) else None


def _read_view(item: dict) -> tuple[int, str, bool] | None:
    """(first line, text, whole) a Read result showed (:mod:`.shown`): the structured
    result's ``file`` (``content``, ``startLine``, ``numLines``, ``totalLines``) when
    present, else the result text with its ``     1→`` line numbers stripped."""
    resp = item.get("tool_response")
    f = resp.get("file") if isinstance(resp, dict) else None
    if isinstance(f, dict) and isinstance(f.get("content"), str):
        start = f.get("startLine") if isinstance(f.get("startLine"), int) else 1
        lines, total = f.get("numLines"), f.get("totalLines")
        whole = start == 1 and isinstance(total, int) and lines == total
        return max(start, 1), f["content"], whole
    got = numbered(item.get("result_text") or "", ARROW)
    return None if got is None else (got[0], got[1], False)


def _add_tool(b: TaskBuilder, item: dict) -> None:
    name = item["tool_name"] or "unknown"
    inp = item["tool_input"] or {}
    cwd = _container_cwd(item["cwd"])
    at = to_unix(item["timestamp"])
    error = _error_text(item)
    if name == "Bash":
        command = inp.get("command") or ""
        if not isinstance(command, str):
            command = str(command)
        if "manual.yaml" in command or _is_boilerplate_command(_debase(command)):
            return
        b.shell(
            _debase(command),
            cwd=cwd,
            at=at,
            error=error,
            exit_code=_exit_code(item),
            path_map=_collapse,
            shown=command,
            output=_stdout(item),
        )
        return
    if name in _FILE_TOOLS:
        raw = inp.get("file_path") or inp.get("notebook_path") or inp.get("path")
        p = _container_path(raw, cwd)
        if isinstance(raw, str) and ("manual.yaml" in raw or (p or "").startswith("/output/")):
            return
        files = [(p, _FILE_TOOLS[name])] if p else []
        if p and name == "Write" and not error:
            content = inp.get("content")
            b.note_file(p, _debase(content) if isinstance(content, str) else None)
        action = "edit" if _FILE_TOOLS[name] == "create" else _FILE_TOOLS[name]
        ev = b.tool(name, files=files, action=action, cwd=cwd, at=at, error=error,
                    file_tool=True)
        if p and name == "Read" and not error:
            view = _read_view(item)
            if view is not None:
                b.show(ev, p, *view)
        return
    if name in _SEARCH_TOOLS:
        p = _container_path(inp.get("path"), cwd) if inp.get("path") else None
        pattern = inp.get("pattern")
        extra = " ".join(str(inp[k]) for k in ("glob", "type") if inp.get(k))
        args = " ".join(x for x in (str(pattern) if pattern else "", extra) if x) or None
        files = []
        if p and shell.has_extension(p):  # a directory to search in is not a file touched
            files = [(p, "read")]
        b.tool(
            name,
            files=files,
            action="search",
            cwd=cwd,
            at=at,
            error=error,
            args=args,
            file_tool=True,
        )
        return
    b.tool(name, action=_TOOL_ACTION.get(name, "other"), cwd=cwd, at=at, error=error)


def _parse_task_prompt(text: str) -> tuple[str, str] | None:
    m = re.search(r"instance_id:\s*(\S+)", text)
    if not m:
        return None
    _, _, statement = text.partition("problem_statement:")
    return m.group(1), statement.strip()


def load_session(path, task_id: str | None = None) -> Task | None:
    """One benchmark session file -> Task (``None``, with a warning, when unusable)."""
    path = Path(path)
    lines = _read_lines(path, strict=True)
    if lines is None:
        return None
    items = list(transcript.items(lines))
    start = next(
        (
            i
            for i, it in enumerate(items)
            if it["type"] == "prompt" and it["prompt"].startswith(TASK_PREFIX)
        ),
        None,
    )
    if start is None:
        start = next((i for i, it in enumerate(items) if it["type"] == "prompt"), None)
    if start is None:
        warn_skip(path, "no task prompt; task skipped")
        return None
    parsed = _parse_task_prompt(items[start]["prompt"])
    tid = task_id or (parsed[0] if parsed else None)
    if not tid:
        warn_skip(path, "no instance_id in the task prompt; task skipped")
        return None
    description = parsed[1] if parsed else items[start]["prompt"]
    b = TaskBuilder(session=tid, project=PROJECT)
    for it in items[start + 1 :]:
        if it["type"] == "prompt":
            b.prompt(it["prompt"], at=to_unix(it["timestamp"]), cwd=_container_cwd(it["cwd"]))
        else:
            _add_tool(b, it)
    first = items[start]
    meta = {"session_id": first.get("session_id")}
    try:
        return b.task(tid, description, SOURCE, path, meta)
    except ValueError as exc:
        warn_skip(path, f"{exc}; task skipped")
        return None


def _index(folder: Path) -> list[tuple[str, Path]]:
    idx = folder / "index.tsv"
    rows = []
    if idx.exists():
        with open(idx, encoding="utf-8") as fh:
            for no, r in enumerate(csv.DictReader(fh, delimiter="\t"), 2):
                iid, f = r.get("instance_id"), r.get("session_file")
                if not iid or not f:
                    warn_skip(idx, "row without instance_id/session_file", no)
                    continue
                rows.append((iid, folder / f))
        return rows
    sessions = folder / "sessions" if (folder / "sessions").is_dir() else folder
    return [(None, p) for p in sorted(sessions.glob("*.jsonl"))]


def _sort_key(item):
    iid, p = item
    try:
        repo, order = parse_task_id(iid or "")
        return (repo, order, iid)
    except ValueError:
        return ("~", 0, str(p))


def load(path) -> Iterator[Task]:
    """Tasks of a benchmark folder (``index.tsv`` + ``sessions/``) or of one session file,
    by repository then PR number."""
    path = Path(path)
    if path.is_file():
        t = load_session(path)
        if t is not None:
            yield t
        return
    for iid, p in sorted(_index(path), key=_sort_key):
        if not p.exists():
            warn_skip(p, "session file listed in index.tsv is missing; task skipped")
            continue
        t = load_session(p, iid)
        if t is not None:
            yield t
