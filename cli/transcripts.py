"""`brainbox import claude|codex`: past agent sessions into the memory, incrementally.

Past sessions go through exactly the hooks' normalisation: each tool call becomes the
payload its PostToolUse (or PostToolUseFailure) hook would have received, each user
prompt a UserPromptSubmit payload, and `hookmap.payload_to_records` maps them; only `at`
differs (the transcript's timestamp instead of "now"), and each event's provenance:
`source` "import", `meta.transcript` (the file) and `meta.offset` (its line's first
byte). So an import and a live session
build the same memory, and our own injected blocks are stripped the same way.

Standard library only. `cli` must not import `eval`: the Claude Code lines are read by
`brainbox.transcript`, the reader the replay's loader (`eval/loaders/claude_code.py`) uses
too; what is here is the import's: payloads, offsets, cursors, subagent sessions.

Claude Code (`~/.claude/projects/<encoded path>/<session>.jsonl`): each tool call
(`brainbox.transcript.items`, joined with its result) becomes a PostToolUse payload
(PostToolUseFailure for an error result), each prompt a UserPromptSubmit payload; a call
without a `tool_use_id` cannot be joined and is left out. A tool's time is its
result's (the hook fires when the tool completes). Subagent transcripts
(`<session>/subagents/agent-*.jsonl`) are imported as session `<session>/<agentId>`: a
subagent works in a context of its own, so its co-access window is its own too.

Codex CLI (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`, `$CODEX_HOME` honoured): lines
`{"timestamp", "type", "payload"}` with `session_meta` (id, cwd), `turn_context` (cwd),
`event_msg` `user_message` (the prompt as typed) and `response_item`s: `function_call`
(`shell`, `shell_command`, `exec_command`, `container.exec` -> the hooks' `Bash` with the
command; `apply_patch`), `custom_tool_call` (freeform `apply_patch`), `local_shell_call`,
each joined by `call_id` with its `*_output`. An output that is JSON with
`metadata.exit_code` gives the exit code; a text output is scanned by hookmap ("Exit code:
N"). Codex's PostToolUse also fires for failed commands, so every call maps to PostToolUse.
Older rollouts without the envelope (items at the top level) are read too.

Incremental: per file a cursor in `brainbox_meta` (`import:<agent>:<path>` -> byte
offset, size, mtime, a hash of the first line) is written in the same transaction as the
file's events. A re-run reads from the offset; an unchanged file costs one stat. A call
whose result is not yet written holds the cursor back (and everything after it) while the
file changed in the last `HOLD` seconds (the session may be live); older unanswered calls
are skipped, as the hooks would never have seen them complete. A file whose first line
changed is a different file and is read from the start.

The cursor records what was imported, not what was seen: a `--since` or `--project` import
also writes the line ranges it read with its filters (`gaps`), and a later import whose
filters admit more reads those ranges again for what every earlier filter left out, so each
event is imported once (`--since 7d` on the 10-month-old spotter
transcripts imported 0 events and marked all 9 files read, so a plain import afterwards got
0 of their 476 events; it now gets all 476, and a third import 0). Only regular files are read (a FIFO hung the import, a folder named x.jsonl
raised); a file none of whose first 50 complete lines is a line of the agent's transcripts
is counted as `not_transcripts` and left without a cursor (a garbage file, or Claude
transcripts given to `import codex`). The compaction subagent (`agent-acompact-*`, handed
"Your task is to create a detailed summary of the conversation so far...") and compaction
summaries are not prompts. `import_report` turns the counts into the command's output and
exit code (1 for a missing path or nothing that is a transcript).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from pathlib import Path

from brainbox import transcript

HOLD = 600.0
_CODEX_SKIP = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions",
               "<user_shell_command>", "<turn_aborted>")
_CODEX_SHELL = {"shell", "shell_command", "exec_command", "container.exec", "local_shell"}


# --------------------------------------------------------------------------- lines


def _lines(path: Path, offset: int):
    """(start offset, end offset, parsed dict) of complete lines from `offset`."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        pos = offset
        for raw in fh:
            if not raw.endswith(b"\n"):
                break  # a line still being written
            start, pos = pos, pos + len(raw)
            try:
                d = json.loads(raw.decode("utf-8", "replace"))
            except ValueError:
                continue
            if isinstance(d, dict):
                yield start, pos, d


# --------------------------------------------------------------------------- Claude Code


def claude_items(path: Path, offset: int = 0):
    """Parse from `offset`: items (start offset, at, payload, resolved) in order, where
    payloads are hook payloads (`brainbox.transcript` reads the lines)."""
    lines = [(start, d) for start, _, d in _lines(path, offset)]
    session_override = next((f"{d.get('sessionId')}/{d.get('agentId')}" for _, d in lines
                             if d.get("isSidechain") and d.get("agentId")), None)
    items = []
    for it in transcript.items(lines):
        if it["type"] == "prompt":
            payload = {"session_id": session_override or it["session_id"], "cwd": it["cwd"],
                       "transcript_path": str(path), "hook_event_name": "UserPromptSubmit",
                       "prompt": it["prompt"]}
            items.append((it["line"], it["timestamp"], payload, True))
            continue
        if not it["tool_use_id"]:
            continue  # nothing to join its result by: a hook never saw it complete
        payload = {"session_id": session_override or it["session_id"], "cwd": it["cwd"],
                   "transcript_path": str(path), "tool_name": it["tool_name"],
                   "tool_input": it["tool_input"], "tool_use_id": it["tool_use_id"]}
        at = it["timestamp"]
        if it["has_result"]:
            at = it["result_timestamp"] or at
            if it["is_error"]:
                payload.update(hook_event_name="PostToolUseFailure", error=it["result_text"],
                               is_interrupt=False)
            else:
                payload.update(hook_event_name="PostToolUse", tool_response=it["tool_response"])
        items.append((it["line"], at, payload, it["has_result"]))
    return items


# --------------------------------------------------------------------------- Codex CLI


def _codex_output(raw) -> object:
    if isinstance(raw, dict):
        raw = raw.get("output", raw)
    if not isinstance(raw, str):
        return raw
    if raw[:1] == "{":
        try:
            d = json.loads(raw)
        except ValueError:
            return raw
        if isinstance(d, dict):
            meta = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
            out = {"output": d.get("output", "")}
            if isinstance(meta.get("exit_code"), int):
                out["exit_code"] = meta["exit_code"]
            return out
    return raw


def _codex_call(p: dict, cwd: str | None):
    """(tool_name, tool_input, cwd) of a Codex call item."""
    kind, name = p.get("type"), p.get("name") or ""
    if kind == "local_shell_call":
        action = p.get("action") or {}
        return "Bash", {"command": action.get("command")}, action.get("working_directory") or cwd
    if kind == "custom_tool_call":
        return name, {"command": p.get("input")} if name == "apply_patch" else {"input": p.get(
            "input")}, cwd
    args = p.get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            args = {"input": args} if name != "apply_patch" else {"command": args}
    if not isinstance(args, dict):
        args = {}
    if name in _CODEX_SHELL:
        command = args.get("command") if "command" in args else args.get("cmd")
        if isinstance(command, list) and command[:1] == ["apply_patch"] and len(command) > 1:
            return "apply_patch", {"command": command[1]}, args.get("workdir") or cwd
        return "Bash", {"command": command}, args.get("workdir") or cwd
    if name == "apply_patch":
        return "apply_patch", {"command": args.get("input") or args.get("patch")}, cwd
    return name, args, cwd


def codex_items(path: Path, offset: int = 0):
    session = None
    m = re.search(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})", path.name)
    session = m.group(1) if m else path.stem
    cwd = None
    calls, outputs, order = {}, {}, []
    typed_prompts = False
    user_items = []
    # session_meta sits on the first line: read it even when resuming mid-file
    if offset:
        for _, _, d in _lines(path, 0):
            p = d.get("payload") if isinstance(d.get("payload"), dict) else d
            if d.get("type") == "session_meta":
                session = p.get("id") or session
                cwd = p.get("cwd") or cwd
            break
    for start, end, d in _lines(path, offset):
        kind = d.get("type")
        p = d.get("payload") if isinstance(d.get("payload"), dict) else d
        at = d.get("timestamp")
        if kind == "session_meta":
            session = p.get("id") or session
            cwd = p.get("cwd") or cwd
            continue
        if kind == "turn_context":
            cwd = p.get("cwd") or cwd
            continue
        if kind == "event_msg":
            if p.get("type") == "user_message" and isinstance(p.get("message"), str):
                typed_prompts = True
                order.append(("prompt", (start, at, p["message"], cwd)))
            continue
        ptype = p.get("type")
        if ptype == "message" and p.get("role") == "user":
            user_items.append(("prompt", (start, at, transcript.text_of(p.get("content")), cwd)))
        elif ptype in ("function_call", "custom_tool_call", "local_shell_call"):
            cid = p.get("call_id") or p.get("id")
            if cid:
                calls[cid] = (start, at, p, cwd)
                order.append(("tool", cid))
        elif ptype in ("function_call_output", "custom_tool_call_output") and p.get("call_id"):
            outputs.setdefault(p["call_id"], (at, p.get("output")))
    if not typed_prompts:  # older rollouts: no event_msg, use user messages
        order = sorted(order + user_items, key=lambda x: x[1][0] if x[0] == "prompt"
                       else calls[x[1]][0])
    items = []
    for kind, ref in order:
        if kind == "prompt":
            start, at, text, pcwd = ref
            text = (text or "").strip()
            if not text or text.startswith(_CODEX_SKIP):
                continue
            items.append((start, at, {"session_id": session, "cwd": pcwd,
                                      "hook_event_name": "UserPromptSubmit", "prompt": text},
                          True))
            continue
        start, at, p, ccwd = calls[ref]
        name, inp, ccwd = _codex_call(p, ccwd)
        out = outputs.get(ref)
        payload = {"session_id": session, "cwd": ccwd, "hook_event_name": "PostToolUse",
                   "tool_name": name, "tool_input": inp, "tool_use_id": ref}
        if out is not None:
            at = out[0] or at
            payload["tool_response"] = _codex_output(out[1])
        items.append((start, at, payload, out is not None))
    return items


# --------------------------------------------------------------------------- import


def parse_since(value: str | None) -> float | None:
    """`30d`, `12h`, `2w`, `90m` or an ISO date -> a Unix time; None for no limit."""
    if not value:
        return None
    from brainbox.events import EventError, duration, parse_time

    secs = duration(value)
    if secs is not None:
        return time.time() - secs

    try:
        return parse_time(value)
    except EventError as exc:
        raise ValueError(f"expected 30d, 12h, 2w or a date, got {value!r}") from exc


def default_root(agent: str) -> Path:
    if agent == "claude":
        return Path.home() / ".claude" / "projects"
    codex = os.environ.get("CODEX_HOME")
    return (Path(codex).expanduser() if codex else Path.home() / ".codex") / "sessions"


def _regular(path: Path) -> bool:
    """A regular file (a FIFO would block the read, a folder named x.jsonl raise)."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def _candidates(agent: str, root: Path) -> list[Path]:
    root = Path(root).expanduser()
    if not root.is_dir():
        return [root] if os.path.lexists(root) else []
    pattern = "*.jsonl" if agent == "claude" else "rollout-*.jsonl"
    files = sorted(root.rglob(pattern))
    if agent == "codex" and not any(_regular(f) for f in files):
        files = sorted(root.rglob("*.jsonl"))
    # a session before its subagents (both sort by path: `<id>.jsonl` < `<id>/...`)
    return files


def find_files(agent: str, root: Path) -> list[Path]:
    """The transcript files under `root` (or `root` itself): regular files only."""
    return [p for p in _candidates(agent, root) if _regular(p)]


_CLAUDE_TYPES = {"user", "assistant", "summary", "system", "file-history-snapshot",
                 "queue-operation", "progress"}
_CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted",
                "message", "function_call", "function_call_output", "custom_tool_call",
                "custom_tool_call_output", "local_shell_call", "reasoning"}


def _looks_like(agent: str, path: Path, lines: int = 50) -> bool:
    """Whether one of the first complete lines is a line of this agent's transcripts."""
    for i, (_, _, d) in enumerate(_lines(path, 0)):
        if agent == "claude":
            if d.get("type") in _CLAUDE_TYPES and ("sessionId" in d or "message" in d
                                                    or "summary" in d):
                return True
        elif d.get("type") in _CODEX_TYPES or (isinstance(d.get("payload"), dict)
                                               and "timestamp" in d):
            return True
        if i + 1 >= lines:
            break
    return False


AGENT_NAMES = {"claude": "Claude Code", "codex": "Codex"}


def import_report(stats: dict) -> tuple[str, str | None, int]:
    """(stdout line, stderr line or None, exit code) for an `import_sessions` result:
    exit 1 when the path is missing or none of its files is a transcript of the agent; an
    existing folder without transcripts exits 0 with a note."""
    name = AGENT_NAMES.get(stats["agent"], stats["agent"])
    if stats.get("missing"):
        return "imported 0 events", f"brainbox: no such file or folder: {stats['root']}", 1
    line = (f"imported {stats['events']} events ({stats['tools']} tool calls, "
            f"{stats['prompts']} prompts) from {stats['files_read']} of {stats['files']} files")
    bad = stats.get("not_transcripts", 0)
    if bad:
        line += f"; {bad} file{'s' if bad != 1 else ''} not {name} transcripts"
    if stats.get("not_files"):
        line += f"; {stats['not_files']} not regular files skipped"
    if stats["files"] and bad == stats["files"]:  # garbage, or the other agent's files
        return line, f"brainbox: found no {name} sessions under {stats['root']}", 1
    if stats["files"] == 0:  # an empty folder: nothing to import yet is not an error
        return line, f"brainbox: no {name} transcripts under {stats['root']}", 0
    return line, None, 0


def _head_hash(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha1(fh.readline()).hexdigest()[:16]


def _inside(path: str | None, project: str | None) -> bool:
    if not project:
        return True
    if not isinstance(path, str) or not path:
        return False
    p, root = os.path.normpath(path), os.path.normpath(project)
    return p == root or p.startswith(root.rstrip("/") + "/")


def import_sessions(agent: str, root=None, *, project: str | None = None,
                    since: float | None = None, conn=None, now: float | None = None) -> dict:
    """Import every transcript under `root` past its cursor; returns counts."""
    from brainbox import store
    from brainbox.cli.hookmap import payload_to_records
    from brainbox.cli.spool import drain_spool
    from brainbox.events import EventError, normalize, parse_time

    if agent not in ("claude", "codex"):
        raise ValueError(f"unknown agent {agent!r}")
    root = Path(root).expanduser() if root else default_root(agent)
    now = time.time() if now is None else now
    project = os.path.abspath(os.path.expanduser(project)) if project else None
    own = conn is None
    conn = conn or store.connect()
    parse = claude_items if agent == "claude" else codex_items
    stats = {"agent": agent, "root": str(root), "files": 0, "files_read": 0, "events": 0,
             "tools": 0, "prompts": 0, "skipped": 0, "rejected": 0, "held_back": 0,
             "not_transcripts": 0, "not_files": 0, "missing": not os.path.lexists(root)}
    try:
        drain_spool(conn)
        candidates = _candidates(agent, root)
        files = [p for p in candidates if _regular(p)]
        stats["not_files"] = len(candidates) - len(files)
        for path in files:
            stats["files"] += 1
            try:
                st = path.stat()
            except OSError:
                continue
            if since is not None and st.st_mtime < since:
                continue
            key = f"import:{agent}:{path.resolve()}"
            try:
                cur = json.loads(store.get_meta(conn, key) or "{}")
            except ValueError:
                cur = {}
            # gaps: [lo, hi, filters] line ranges read under --since/--project filters
            # ([cutoff, project] each): what every one of them left out is still missing,
            # and an import whose filter admits some of it reads the range again
            gaps = _gaps(cur.get("gaps"))
            todo = [g for g in gaps if not _covered(g[2], since, project)]
            if cur and cur.get("size") == st.st_size and cur.get("mtime") == st.st_mtime \
                    and not todo:
                continue
            offset = int(cur.get("offset") or 0)
            head = _head_hash(path)
            if cur.get("head") != head or offset > st.st_size:
                offset, gaps, todo = 0, [], []
            if offset == 0 and st.st_size and not _looks_like(agent, path):
                stats["not_transcripts"] += 1
                continue
            stats["files_read"] += 1
            live = now - st.st_mtime < HOLD
            groups: list[tuple[int, list[dict]]] = []  # (line offset, its events)
            until = st.st_size
            for start, at, payload, resolved in parse(path, min([offset] + [g[0] for g in todo])):
                old = start < offset  # read before: only what a gap left out
                if not resolved:
                    if old:
                        continue
                    if live:
                        # hold back from this call's line: calls sharing the line with
                        # it are imported next time, together
                        until = start
                        while groups and groups[-1][0] >= start:
                            groups.pop()
                        stats["held_back"] += 1
                        break
                    stats["skipped"] += 1
                    continue
                if not _inside(payload.get("cwd"), project):
                    continue
                try:
                    when = parse_time(at) if at else None
                except EventError:
                    when = None
                if since is not None and when is not None and when < since:
                    continue
                if old:
                    gap = next((g for g in todo if g[0] <= start < g[1]), None)
                    if gap is None or not _left_out(gap[2], when, payload.get("cwd")):
                        continue  # imported before
                evs = []
                for rec in payload_to_records(agent, payload):
                    rec["at"] = when
                    if project:
                        rec["project"] = project
                    # provenance (issue 19): the transcript and its line's byte offset
                    rec["meta"] = dict(rec.get("meta") or {}, transcript=str(path),
                                       offset=start)
                    try:
                        evs.append(dict(normalize(rec), source="import"))
                    except EventError:
                        stats["rejected"] += 1
                groups.append((start, evs))
            events = [e for _, evs in groups for e in evs]
            for e in events:
                stats["tools" if e["kind"] == "tool" else "prompts"] += 1
            if until == st.st_size:
                until = _complete_size(path, st.st_size)
            cursor = {"offset": until, "size": st.st_size, "mtime": st.st_mtime, "head": head}
            if until < st.st_size:
                cursor["size"] = cursor["mtime"] = None  # read it again next time
            if since is None and project is None:
                gaps = []  # whatever was left out, this import took
            else:
                mine = [since, project]
                gaps = [[lo, hi, fs + [mine] if g in todo else fs]
                        for g in gaps for lo, hi, fs in [g]]
                if until > offset:
                    gaps.append([offset, until, [mine]])
            if gaps:
                cursor["gaps"] = _merge(gaps)
            with store.atomic(conn):
                if events:
                    store.append_events(conn, events)
                store.set_meta(conn, key, json.dumps(cursor))
            stats["events"] += len(events)
    finally:
        if own:
            conn.close()
    return stats


def _gaps(raw) -> list[list]:
    """A cursor's gaps as [lo, hi, [[cutoff, project], ...]] (a bare cutoff: an older form)."""
    out = []
    for g in raw or ():
        if isinstance(g, list) and len(g) == 3:
            fs = g[2] if isinstance(g[2], list) else [[g[2], None]]
            out.append([int(g[0]), int(g[1]), [list(f) for f in fs]])
    return out


def _left_out(filters, when, cwd) -> bool:
    """Whether every filter ([cutoff, project]) an item was read under left it out."""
    return all((cut is not None and when is not None and when < cut)
               or (proj is not None and not _inside(cwd, proj)) for cut, proj in filters)


def _covered(filters, since, project) -> bool:
    """Whether nothing a gap left out passes this import's filters: one of its filters
    admitted all that these admit (a cutoff no later, a project that holds ours)."""
    return any((cut is None or (since is not None and since >= cut))
               and (proj is None or (project is not None and _inside(project, proj)))
               for cut, proj in filters)


def _merge(gaps: list[list]) -> list[list]:
    """Adjacent gaps with the same filters as one."""
    out: list[list] = []
    for lo, hi, fs in sorted(gaps, key=lambda g: (g[0], g[1])):
        if out and out[-1][1] == lo and out[-1][2] == fs:
            out[-1][1] = hi
        else:
            out.append([lo, hi, fs])
    return out


def _complete_size(path: Path, size: int) -> int:
    """The offset after the last complete line (a partial last line is read next time)."""
    with open(path, "rb") as fh:
        fh.seek(max(0, size - 1))
        if fh.read(1) == b"\n" or size == 0:
            return size
        step = 65536
        pos = size
        while pos > 0:
            lo = max(0, pos - step)
            fh.seek(lo)
            chunk = fh.read(pos - lo)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                return lo + nl + 1
            pos = lo
        return 0
