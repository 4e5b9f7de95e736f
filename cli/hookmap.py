"""Agent hook payloads (Claude Code, Codex CLI) to brainbox raw record dicts.

Runs in a fresh process for every tool call, so it imports only `json`, `os` and `re`
(`brainbox.shell` lazily, for Bash commands) and never raises: any payload, however
malformed, maps to a list of records, possibly empty. The engine (`brainbox.events`)
normalises paths, redacts secrets and rejects what it cannot store; this module only
reads the agents' fields and bounds their size.

A raw record has every key of the schema: `session`, `cwd`, `tool`, `files`, `error`,
`exit_code`, `at` (None = now), `prompt`, `command`, `args`, `kind`, `action`, and
`meta` (agent, hook event, tool-use id, per-file actions). Session records also carry
`source` (session_start) or `reason` (session_end), copied into `meta`.

Events (Claude Code's names; Codex's new hooks use the same ones and the same fields):
- `PostToolUse` -> one 'tool' record. Claude Code fires it only for calls that succeeded.
- `PostToolUseFailure` (Claude Code) -> one 'tool' record with the failure's `error`
  text (and `is_interrupt`); a Bash failure's text starts "Exit code N", parsed.
- `UserPromptSubmit` -> one 'prompt' record, our own injected blocks
  (`<brainbox-context>`...`</brainbox-context>`) stripped.
- `SessionStart` -> 'session_start' with `source` (startup, resume, clear, compact).
- `SessionEnd` -> 'session_end' with the payload's `reason` (clear, logout, ...).
- `Stop` -> 'session_end' with reason 'stop'. Stop ends a turn, not a session (Claude
  Code fires it after every answer; Codex has no SessionEnd at all), so the engine can
  tell a real end from a turn end by this reason.
- `PostToolBatch` (Claude Code: a batch of parallel calls, after all resolved) -> one
  'tool' record per call, each as its PostToolUse would map, in a canonical order, with
  `meta.batch` (the batch's size). The calls' list is `tool_calls` in one account of the
  hooks reference and `tool_results` in another (items: `tool_name`, `tool_input`,
  `tool_use_id`, `tool_response` or `tool_result`, `error_message`): both are read.
  When PostToolUse fired for the same calls too, the batch leaves out the calls stored
  already (same session and tool-use id; `cli.handler.record`).
- Anything else (PreToolUse, Notification, PreCompact, ...) -> [].

Every event: a sub-agent's call carries `agent_id` and `agent_type` (Claude Code), kept
in `meta` (the fold gives a sub-agent its own window, `brainbox.state`); a tool call's
`duration_ms` is kept in `meta` when it is an integer in [0, 2^40) (`brainbox stats`
gives each tool's median).

Codex specifics. Codex >= 0.124 runs Claude-style hooks (`hook_event_name`, `tool_name`,
`tool_input`, `tool_response`, `turn_id`): shell calls arrive as tool 'Bash' with
`tool_input.command`; file edits as 'apply_patch' with the patch text in
`tool_input.command` (its `*** Add/Update/Delete File:` and `*** Move to:` lines give
the edited files); MCP tools as `mcp__server__tool`. A string `tool_response` is scanned
for "Exit code: N" / "Process exited with code N". The legacy `notify` program gets
`{"type": "agent-turn-complete", "thread-id", "turn-id", "cwd", "input-messages",
"last-assistant-message"}` as its last argv argument after the turn; it maps to one
'prompt' record (the last input message) whose time is the end of the turn.

Actions: Read/NotebookRead -> read; Edit/Write/MultiEdit/NotebookEdit/apply_patch ->
edit; Grep/Glob/LS -> search (their `pattern` goes to `args`, their `path` and at most 20
of `tool_response.filenames` to `files`); Bash -> edit if the command edits a file, read
if it only reads some, else run; TodoWrite/ExitPlanMode -> plan; anything else -> other
(MCP and unknown tools keep their names; a `path`/`file_path` argument still counts).

Bounds: command 4 KB, prompt 8 KB, error 2 KB (first line + tail), args 1 KB, 50 files;
lone surrogates become U+FFFD and NULs are dropped, so every string encodes as UTF-8;
an exit code is clamped to int64 (text exit codes have at most 6 digits), since SQLite cannot bind a larger one.

The installed hook's event (argv) decides which event a payload is; the payload's
`hook_event_name` is used only when the hook was run without one.
"""

from __future__ import annotations

import json
import os
import re

CONTEXT_OPEN = "<brainbox-context>"
CONTEXT_CLOSE = "</brainbox-context>"

MAX_COMMAND = 4096
MAX_PROMPT = 8192
MAX_ERROR = 2048
MAX_ARGS = 1024
MAX_FILES = 50
MAX_SEARCH_FILES = 20
MAX_PATH = 4096
MAX_NAME = 256
MAX_BATCH = 64  # calls of one PostToolBatch kept
MAX_DURATION_MS = 1 << 40  # a tool call's duration_ms kept when in [0, this): 34 years
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1  # what SQLite stores as an INTEGER
# Shell parsing is linear but not free; a 10 MB heredoc must not cost the hook its budget.
MAX_SHELL_SCAN = 16384

READ_TOOLS = frozenset({"Read", "NotebookRead"})
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"})
SEARCH_TOOLS = frozenset({"Grep", "Glob", "LS"})
PLAN_TOOLS = frozenset({"TodoWrite", "ExitPlanMode"})
SHELL_TOOLS = frozenset({"Bash", "shell", "local_shell", "exec_command", "container.exec"})
_RANK = {"other": 0, "plan": 0, "run": 0, "search": 1, "read": 2, "edit": 3}
PATH_KEYS = ("file_path", "notebook_path", "path", "filePath", "filename")

# Patterns are compiled on first use (re caches them): most hook calls need none, and
# compiling all at import cost about 1.5 ms of the per-call budget.
_CONTEXT_BLOCK = re.escape(CONTEXT_OPEN) + r".*?(?:" + re.escape(CONTEXT_CLOSE) + r"|\Z)"
_EXIT_LINE = (
    r"(?im)^\s*(?:Error:\s*)?(?:Exit code|Process exited with code|exit status)[:\s]+(-?\d{1,6})"
)
_TOOL_USE_ERROR = r"</?tool_use_error>"
_SURROGATE = "[\ud800-\udfff]"
_PATCH_FILE = r"(?m)^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$"


def payload_to_records(agent: str, payload: dict, event: str | None = None) -> list[dict]:
    """Map one hook payload to raw record dicts; never raises.

    `event` is the installed hook's event (the command passes it as an argument) and
    decides when given: a PostToolUse hook whose payload says SessionStart is a tool call
    (reliability report D13: it printed a SessionStart block). The payload's
    `hook_event_name` names the event only when there is no argument.
    """
    try:
        return _records(agent, payload, event)
    except Exception:  # noqa: BLE001 - totality: a hook must never break the agent
        return []


def strip_context(text: str) -> str:
    """Remove brainbox's own injected blocks from prompt text (an unclosed block runs to
    the end; a stray closing marker is dropped)."""
    if CONTEXT_OPEN in text:
        text = re.sub(_CONTEXT_BLOCK, "", text, flags=re.DOTALL)
    if CONTEXT_CLOSE in text:
        text = text.replace(CONTEXT_CLOSE, "")
    return text.strip()


def files_actions(
    tool: str | None, tool_input, tool_response=None, cwd: str | None = None
) -> list[tuple[str, str]]:
    """(path, action) pairs a tool call touched, at most MAX_FILES, in first-seen order."""
    pairs: list[tuple[str, str]] = []
    name = tool or ""
    inp = tool_input if isinstance(tool_input, dict) else {}
    resp = tool_response if isinstance(tool_response, dict) else {}
    if name in SHELL_TOOLS:
        command = _command_text(inp.get("command"))
        if command:
            pairs.extend(_shell_files(command, cwd))
    elif name == "apply_patch":
        patch = inp.get("command") or inp.get("patch") or inp.get("input")
        if isinstance(patch, str):
            pairs.extend(
                (m.group(1) or m.group(2), "edit")
                for m in re.finditer(_PATCH_FILE, patch[:1_000_000])
            )
    elif name in SEARCH_TOOLS:
        path = inp.get("path")
        if isinstance(path, str) and path.strip() not in ("", ".", "./") and path != cwd:
            pairs.append((path, "search"))
        found = resp.get("filenames")
        if isinstance(found, list):
            pairs.extend((f, "search") for f in found[:MAX_SEARCH_FILES] if isinstance(f, str))
    else:
        action = _action(name)
        for key in PATH_KEYS:
            value = inp.get(key)
            if isinstance(value, str) and value:
                pairs.append((value, action))
                break
        else:
            # Read and Write responses name the file too (`file.filePath`, `filePath`).
            got = resp.get("filePath")
            inner = resp.get("file")
            if not isinstance(got, str) and isinstance(inner, dict):
                got = inner.get("filePath")
            if isinstance(got, str) and got and (name in READ_TOOLS or name in EDIT_TOOLS):
                pairs.append((got, action))
    # One entry per path; a path both read and edited counts as edited.
    out: dict[str, str] = {}
    for path, action in pairs:
        if not isinstance(path, str):
            continue
        path = _clean(path).strip()
        if not path or len(path) > MAX_PATH:
            continue
        if path in out:
            if _RANK[action] > _RANK[out[path]]:
                out[path] = action
        elif len(out) < MAX_FILES:
            out[path] = action
    return list(out.items())


# --------------------------------------------------------------------------- internals


def _record(session: str, cwd, kind: str, **fields) -> dict:
    """A raw record with every key (None when unknown; no files, action "other"), then
    `fields`."""
    return {"session": session, "cwd": cwd, "tool": None, "files": [], "error": None,
            "exit_code": None, "at": None, "prompt": None, "command": None, "args": None,
            "kind": kind, "action": "other", **fields}


def _records(agent, payload, event) -> list[dict]:
    if not isinstance(payload, dict):
        return []
    agent = agent if isinstance(agent, str) else ""
    name = event if isinstance(event, str) and event else payload.get("hook_event_name")
    if not isinstance(name, str):
        name = ""
    if not name and payload.get("type") == "agent-turn-complete":
        return _notify(agent, payload)

    base = _record(_session(payload), _cwd(payload), "tool")
    meta = {"agent": _clean(agent)[:32] or None, "event": _clean(name)[:64] or None}
    turn = payload.get("turn_id")
    if isinstance(turn, str) and turn:
        meta["turn"] = _clean(turn)[:MAX_NAME]
    for key, limit in (("agent_id", MAX_NAME), ("agent_type", 64)):
        value = payload.get(key)  # a sub-agent's call (Claude Code): its own window
        if isinstance(value, str) and value.strip():
            meta[key] = _clean(value).strip()[:limit]

    if name in ("PostToolUse", "PostToolUseFailure"):
        rec = _tool_record(base, meta, payload, failed=name == "PostToolUseFailure")
        return [rec] if rec else []
    if name == "PostToolBatch":
        return _batch(base, meta, payload)
    if name == "UserPromptSubmit":
        prompt = payload.get("prompt")
        if not isinstance(prompt, str):
            prompt = ""
        base.update(kind="prompt", action="other", prompt=_prompt(prompt), meta=meta)
        return [base]
    if name == "SessionStart":
        source = _short(payload.get("source"))
        meta["source"] = source
        base.update(kind="session_start", source=source, meta=meta)
        return [base]
    if name in ("SessionEnd", "Stop"):
        reason = "stop" if name == "Stop" else (_short(payload.get("reason")) or "other")
        meta["reason"] = reason
        base.update(kind="session_end", reason=reason, meta=meta)
        return [base]
    return []


def _tool_record(base, meta, payload, failed) -> dict | None:
    tool = payload.get("tool_name")
    if not isinstance(tool, str) or not tool.strip():
        return None
    tool = _clean(tool).strip()[:MAX_NAME]
    inp = _as_dict(payload.get("tool_input"))
    resp = payload.get("tool_response")
    if isinstance(resp, str) and resp[:1] in "{[":
        resp = _as_dict(resp) or resp
    cwd = base["cwd"]

    command = None
    record_tool = tool
    if tool in SHELL_TOOLS:
        command = _command_text(inp.get("command"))
        record_tool = _shell_tool(command) if command else "Bash"
        if command:
            command = _clip(_clean(command), MAX_COMMAND)

    pairs = files_actions(tool, inp, resp, cwd)
    files = [p for p, _ in pairs]
    actions = {a for _, a in pairs}
    if tool in SHELL_TOOLS:
        action = "edit" if "edit" in actions else "read" if "read" in actions else "run"
    else:
        action = _action(tool)
    if len(actions) > 1 or (actions and action not in actions):
        meta["file_actions"] = [a for _, a in pairs]

    error, exit_code = _failure(payload, resp) if failed else _response_error(resp)
    use_id = payload.get("tool_use_id")
    if isinstance(use_id, str) and use_id:
        meta["tool_use_id"] = _clean(use_id)[:MAX_NAME]
    duration = payload.get("duration_ms")
    if isinstance(duration, (int, float)) and not isinstance(duration, bool) \
            and 0 <= duration < MAX_DURATION_MS:
        meta["duration_ms"] = int(duration)
    base.update(
        tool=record_tool,
        files=files,
        action=action,
        command=command,
        args=_args(tool, inp),
        error=error,
        exit_code=exit_code,
        meta=meta,
    )
    return base


def _batch(base, meta, payload) -> list[dict]:
    """`PostToolBatch`: one record per call of the batch, each mapped as its PostToolUse
    (or PostToolUseFailure, when the call carries an error) would be, in a canonical order
    (by tool-use id, then tool and input), so the fold does not depend on the order the
    host listed parallel calls in; `meta.batch` is the batch's size. The list is
    `tool_calls` (or `tool_results`, or `calls`: the shape is not settled in the docs)."""
    calls = next((payload[k] for k in ("tool_calls", "tool_results", "calls")
                  if isinstance(payload.get(k), list)), [])
    envelope = {k: v for k, v in payload.items() if k not in ("tool_calls", "tool_results",
                                                              "calls")}
    out = []
    for call in calls[:MAX_BATCH]:
        if not isinstance(call, dict):
            continue
        one = dict(envelope, **call)
        if "tool_response" not in call:
            for key in ("tool_result", "tool_output", "result"):
                if key in call:
                    one["tool_response"] = call[key]
                    break
        failed = any(isinstance(call.get(k), str) and call[k].strip()
                     for k in ("error", "error_message")) or call.get("is_error") is True
        if failed and not isinstance(call.get("error"), str):
            one["error"] = call.get("error_message") or "tool failed"
        rec = _tool_record(dict(base), dict(meta), one, failed=failed)
        if rec:
            out.append(rec)
    out.sort(key=lambda r: (r["meta"].get("tool_use_id") or "", r["tool"] or "",
                            json.dumps(r["files"]), r["command"] or ""))
    for rec in out:
        rec["meta"]["batch"] = len(out)
    return out


def _notify(agent, payload) -> list[dict]:
    """Codex's legacy `notify` payload (after each turn): the turn's last user message."""
    messages = payload.get("input-messages") or payload.get("input_messages")
    prompt = None
    if isinstance(messages, list):
        texts = [m for m in messages if isinstance(m, str)]
        prompt = texts[-1] if texts else None
    elif isinstance(messages, str):
        prompt = messages
    if prompt is None:
        return []
    session = payload.get("thread-id") or payload.get("thread_id") or payload.get("session_id")
    meta = {"agent": _clean(agent)[:32] or None, "event": "agent-turn-complete"}
    turn = payload.get("turn-id") or payload.get("turn_id")
    if isinstance(turn, str) and turn:
        meta["turn"] = _clean(turn)[:MAX_NAME]
    return [_record(_clean(session)[:MAX_NAME] if isinstance(session, str) else "",
                    _cwd(payload), "prompt", prompt=_prompt(prompt), meta=meta)]


def _action(tool: str) -> str:
    if tool in READ_TOOLS:
        return "read"
    if tool in EDIT_TOOLS:
        return "edit"
    if tool in SEARCH_TOOLS:
        return "search"
    if tool in SHELL_TOOLS:
        return "run"
    if tool in PLAN_TOOLS:
        return "plan"
    return "other"


def _args(tool: str, inp: dict) -> str | None:
    if tool in ("Grep", "Glob"):
        keys = ("pattern",)
    elif tool == "WebFetch":
        keys = ("url",)
    elif tool == "WebSearch":
        keys = ("query",)
    elif tool == "Task":
        keys = ("subagent_type",)
    elif tool == "Skill":
        keys = ("skill",)
    else:
        return None
    for key in keys:
        value = inp.get(key)
        if isinstance(value, str) and value:
            return _clip(_clean(value), MAX_ARGS)
    return None


def _shell_files(command: str, cwd: str | None) -> list[tuple[str, str]]:
    if len(command) > MAX_SHELL_SCAN:
        cut = command.rfind("\n", 0, MAX_SHELL_SCAN)
        command = command[: cut if cut > 0 else MAX_SHELL_SCAN]
    try:
        from brainbox.shell import command_files

        got = command_files(command, cwd or None)
    except Exception:  # noqa: BLE001 - missing or broken shell parser: no files
        return []
    out = []
    if isinstance(got, (list, tuple)):
        for item in got[: MAX_FILES * 2]:
            if isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str):
                out.append((item[0], _SHELL_FACTS.get(item[1], "read")))
    return out


# brainbox.shell's file facts -> the stored per-file actions (meta.file_actions): a whole-
# file write is an edit, as the Write tool is; running a script is not reading it.
_SHELL_FACTS = {"edit": "edit", "create": "edit", "run": "run"}


def _shell_tool(command: str) -> str:
    try:
        from brainbox.shell import command_tool

        tool = command_tool(command[:MAX_SHELL_SCAN])
    except Exception:  # noqa: BLE001 - missing or broken shell parser: plain Bash
        return "Bash"
    return _clean(tool)[:MAX_NAME] if isinstance(tool, str) and tool else "Bash"


def _response_error(resp) -> tuple[str | None, int | None]:
    """Error text and exit code a successful-looking tool_response may still carry."""
    if isinstance(resp, str):
        code = _exit_from_text(resp)
        if code:
            return _bound_error(resp), code
        return None, code
    if not isinstance(resp, dict):
        return None, None
    code = None
    for key in ("exit_code", "exitCode", "returncode", "returnCode", "exit_status"):
        value = resp.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            code = _int64(value)
            break
        if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 8:
            code = int(value)
            break
    flagged = resp.get("is_error") is True or resp.get("isError") is True
    interrupted = resp.get("interrupted") is True
    text = None
    err = resp.get("error")
    if isinstance(err, str) and err.strip():
        text = err
    elif isinstance(err, dict):
        text = _first_str(err, ("message", "error", "text"))
    failed = flagged or interrupted or bool(code) or text is not None
    if not failed:
        return None, code
    stderr = resp.get("stderr")
    if isinstance(stderr, str) and stderr.strip():
        text = f"{text}\n{stderr}" if text else stderr
    if text is None:
        text = _first_str(resp, ("output", "stdout", "content", "message"))
    if interrupted:
        text = f"interrupted\n{text}" if text else "interrupted"
    if text is None:
        text = f"exit code {code}" if code else "tool error"
    return _bound_error(text), code


def _failure(payload, resp) -> tuple[str, int | None]:
    """PostToolUseFailure: the `error` string (or `error_message`), maybe an interrupt."""
    text = payload.get("error")
    if not isinstance(text, str):
        text = payload.get("error_message")
    if isinstance(text, dict):
        text = _first_str(text, ("message", "error", "text"))
    if isinstance(text, str) and "tool_use_error>" in text[:200]:
        text = re.sub(_TOOL_USE_ERROR, "", text)  # Claude Code's wrapper in transcripts
    if not isinstance(text, str) or not text.strip():
        text, _ = _response_error(resp)
    interrupted = payload.get("is_interrupt") is True
    if not text:
        text = "interrupted" if interrupted else "tool failed"
    elif interrupted and "interrupt" not in text[:200].lower():
        text = f"interrupted\n{text}"
    return _bound_error(text), _exit_from_text(text)


def _int64(value: int) -> int:
    """`value` clamped to SQLite's INTEGER range: a larger one raised OverflowError at
    the insert, and the spooled event then blocked every later one (report D6)."""
    return max(INT64_MIN, min(INT64_MAX, value))


def _exit_from_text(text: str) -> int | None:
    m = re.search(_EXIT_LINE, text[:512])
    return int(m.group(1)) if m else None


def _bound_error(text: str) -> str:
    text = _clean(text).strip()
    if len(text) <= MAX_ERROR:
        return text
    # The first line says what failed ("Exit code 1"); the tail holds the actual error.
    nl = text.find("\n")
    head = text[: nl if 0 < nl < 200 else 200]
    tail = text[-(MAX_ERROR - len(head) - 5) :]
    return f"{head}\n...\n{tail}"


def _prompt(text: str) -> str:
    # Strip first (markers may sit beyond the cut), but bound the work on huge input.
    return _clip(strip_context(_clean(text[: MAX_PROMPT * 8])), MAX_PROMPT)


def _session(payload) -> str:
    session = payload.get("session_id")
    if isinstance(session, str) and session.strip():
        return _clean(session).strip()[:MAX_NAME]
    path = payload.get("transcript_path")
    if isinstance(path, str) and path:
        stem = os.path.splitext(os.path.basename(path))[0]
        return _clean(stem)[:MAX_NAME]
    return ""


def _cwd(payload) -> str:
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd.strip() and len(cwd) <= MAX_PATH:
        return _clean(cwd)
    try:
        return os.getcwd()
    except OSError:
        return ""


def _command_text(value) -> str | None:
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value[:1000]):
        # Codex's older local shell passes argv; `bash -lc "<script>"` carries the script.
        if (
            len(value) == 3
            and value[1] in ("-c", "-lc")
            and value[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh")
        ):
            return value[2]
        return " ".join(_quote(v) for v in value[:1000])
    return None


def _quote(word: str) -> str:
    if word and re.fullmatch(r"[\w@%+=:,./-]+", word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def _as_dict(value) -> dict:
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value[:1] == "{" and len(value) < 1_000_000:
        try:
            got = json.loads(value)
        except ValueError:
            return {}
        return got if isinstance(got, dict) else {}
    return {}


def _first_str(d: dict, keys) -> str | None:
    for key in keys:
        value = d.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _short(value) -> str | None:
    return _clean(value)[:64] or None if isinstance(value, str) else None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit]


def _clean(text: str) -> str:
    """UTF-8-encodable text: lone surrogates -> U+FFFD, NULs dropped."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    if text.isascii():
        return text
    return re.sub(_SURROGATE, "\ufffd", text)
