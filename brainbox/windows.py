"""Which co-access window an event folds into (issue 17, sub-agents).

Claude Code runs sub-agents (the Task tool) inside the main session: their hook payloads
carry the main `session_id` plus `agent_id` and `agent_type` (kept in `meta` by
`cli.hookmap`). A sub-agent reads and edits in a context of its own, interleaved in time
with the main agent's calls, so linking its files with the main agent's (one window, the
session's) would learn associations neither agent had. Each sub-agent therefore gets a
window of its own: the event folds into the window (and the tool n-gram history) of the
session row `<session>/<agent_id>`, the very key `brainbox import` gives a sub-agent's
transcript (`cli.transcripts`), so a sub-agent learns the same whether hooks saw it or an
import read it. Everything else stays the session's: its prompt's context terms, the
learned fusion's opening credit, feedback and the procedures (`brainbox.state.encode`
passes the session row for those).
"""

from __future__ import annotations


def window_key(ev: dict) -> str:
    """The window (session row key) `ev` folds into: its session, or `<session>/<agent_id>`
    for a sub-agent's event."""
    meta = ev.get("meta")
    agent = meta.get("agent_id") if isinstance(meta, dict) else None
    if agent and isinstance(agent, str):
        return f"{ev['session']}/{agent}"
    return ev["session"]


def window(state, ev: dict, sid: int) -> int:
    """The session row of `ev`'s window in `state`: `sid` (its session's row) unless `ev`
    is a sub-agent's (`window_key`), whose own row is made on first use."""
    meta = ev.get("meta")
    if not (isinstance(meta, dict) and meta.get("agent_id")):
        return sid
    return state.session(window_key(ev))
