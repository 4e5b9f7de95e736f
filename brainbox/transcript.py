"""Claude Code transcripts (`~/.claude/projects/<encoded path>/<session>.jsonl`): the one
reader of their lines, for `brainbox import claude` (`cli/transcripts.py`) and for the
replay's loader (`eval/loaders/claude_code.py`). Standard library only.

There were two readers of the same format (issue 14); they agreed on every transcript we
have (the 173 Claude JSONL files under `shared/data` and the test fixtures gave the same
items through both, checked when they were merged) and differed only where no transcript
goes: the loader did not know the compaction subagent's prompt, the importer did not
flatten a `tool_result` nested in a result. This module has the union of both rules.

Lines: `assistant` lines carry `tool_use` blocks, the following `user` lines their
`tool_result` blocks (joined by `tool_use_id`, the first result of an id wins) and the
structured `toolUseResult` a PostToolUse hook receives as `tool_response`. A user line is a
prompt unless it carries tool results, is meta, a compaction summary, a slash-command or
local-command echo, an interruption notice or a system reminder (`INJECTED`), or comes from
the compaction subagent (`agentId` `acompact-*`, handed "Your task is to create a detailed
summary of the conversation so far..."). `progress`, `summary`, `file-history-snapshot`,
`queue-operation` and `system` lines yield nothing.

Reading the file is the caller's: the importer reads from a byte offset and stops at a line
still being written; the loader numbers lines and warns about bad JSON. Both hand `items`
the parsed lines, each with a tag of their own (offset or line number) that comes back on
the items it yields.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

INJECTED = (
    "<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
    "<local-command-stderr>", "<local-command-caveat>", "Caveat: The messages below",
    "[Request interrupted", "<bash-input>", "<bash-stdout>", "<bash-stderr>",
    "<system-reminder>", "<user-prompt-submit-hook>", "This session is being continued",
    "<task-notification>", "<bash-notification>", "<agent-notification>",
    "Your task is to create a detailed summary of the conversation so far",
)
COMPACT_AGENT = "acompact"  # agentId (and file agent-acompact-*.jsonl) of compaction


def text_of(content) -> str:
    """Flatten a message or `tool_result` `content` (a string or a list of parts) to text:
    text parts (Codex's `input_text`/`output_text` too), plain strings, and the content
    of a nested `tool_result`, joined by newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, dict):
                if c.get("type") in ("text", "input_text", "output_text"):
                    parts.append(str(c.get("text", "")))
                elif c.get("type") == "tool_result":
                    parts.append(text_of(c.get("content")))
            elif isinstance(c, str):
                parts.append(c)
        return "\n".join(parts)
    return str(content)


def prompt_text(d: dict) -> str | None:
    """The user's prompt on a `user` line, or None (tool results, injections, meta)."""
    if d.get("isMeta") or d.get("isCompactSummary") or d.get("isVisibleInTranscriptOnly"):
        return None
    if str(d.get("agentId") or "").startswith(COMPACT_AGENT):
        return None  # the compaction subagent is handed the conversation to summarise
    msg = d.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, list) and any(
            isinstance(c, dict) and c.get("type") == "tool_result" for c in content):
        return None
    text = text_of(content).strip()
    if not text or text.startswith(INJECTED):
        return None
    return text


def items(lines: Iterable[tuple[object, dict]]) -> Iterator[dict]:
    """Tool calls and user prompts of parsed transcript lines `(tag, line)`, in order.

    A tool call: `{"type": "tool", "line", "session_id", "cwd", "timestamp", "tool_name",
    "tool_input", "tool_response", "is_error", "result_text", "result_timestamp",
    "tool_use_id", "uuid", "is_sidechain", "agent_id", "has_result"}`: `tool_response` is
    the result line's structured `toolUseResult` when present, else the result's text; a
    call without a result (interrupted, end of file) has `tool_response=None`. A prompt:
    `{"type": "prompt", "line", "session_id", "cwd", "timestamp", "prompt", "uuid",
    "is_sidechain"}`. `line` is the tag of the line the item comes from.
    """
    lines = list(lines)
    results: dict[str, tuple[dict, dict]] = {}
    for _, d in lines:
        if d.get("type") != "user":
            continue
        content = (d.get("message") or {}).get("content")
        if isinstance(content, list):
            for c in content:
                if isinstance(c, dict) and c.get("type") == "tool_result" and c.get("tool_use_id"):
                    results.setdefault(c["tool_use_id"], (c, d))
    for tag, d in lines:
        kind = d.get("type")
        if kind == "assistant":
            content = (d.get("message") or {}).get("content")
            if not isinstance(content, list):
                continue
            for c in content:
                if not (isinstance(c, dict) and c.get("type") == "tool_use"):
                    continue
                res, rline = results.get(c.get("id"), (None, None))
                text = text_of(res.get("content")) if res else None
                structured = rline.get("toolUseResult") if rline else None
                yield {
                    "type": "tool",
                    "line": tag,
                    "session_id": d.get("sessionId"),
                    "cwd": d.get("cwd"),
                    "timestamp": d.get("timestamp"),
                    "tool_name": c.get("name"),
                    "tool_input": c.get("input") if isinstance(c.get("input"), dict) else {},
                    "tool_response": structured if structured is not None else text,
                    "is_error": bool(res.get("is_error")) if res else False,
                    # extras: the raw text the model saw, ids, and where the call ran
                    "result_text": text,
                    "result_timestamp": rline.get("timestamp") if rline else None,
                    "tool_use_id": c.get("id"),
                    "uuid": d.get("uuid"),
                    "is_sidechain": bool(d.get("isSidechain")),
                    "agent_id": d.get("agentId"),
                    "has_result": res is not None,
                }
        elif kind == "user":
            text = prompt_text(d)
            if text is not None:
                yield {
                    "type": "prompt",
                    "line": tag,
                    "session_id": d.get("sessionId"),
                    "cwd": d.get("cwd"),
                    "timestamp": d.get("timestamp"),
                    "prompt": text,
                    "uuid": d.get("uuid"),
                    "is_sidechain": bool(d.get("isSidechain")),
                }
