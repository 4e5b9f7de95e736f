"""The daemon's wire protocol: what the client (`client`, the hooks) and the server
(`daemon`, `service`) must agree on, written once.

JSON lines over a Unix `SOCK_STREAM` socket. A request is one object `{"op": ..., ...}`
ending in a newline; the answer is `{"ok": true, "result": ...}` or `{"ok": false,
"error": msg}`. A connection may carry several requests. Ops: `ping`, `recall`,
`predict`, `explain`, `suggest` (the prompt hook's compact list), `start` (the SessionStart
list), `sync` (alias `fold`), `stats`, `stop`, and `hook` (below). Every request may name
the database it means (`db`); a daemon serving another file answers with an error, and
the client falls back to working in-process.

`hook`: a prompt, SessionStart or Stop hook hands its whole raw payload over (`agent`,
`event`, `payload`, `at`, the hook's `cwd`, its resolved `settings` and `budget`). The
daemon does what the hook would have done (map, normalise, record, recall, remember the
suggestions, score and fold at Stop: `handler.handle` with the service in place of the
socket) and answers `{"output": <the line the hook prints, or null>}`. Before doing
anything it acknowledges with the line `ACK`: that line moves the duty to record from the
hook to the daemon. If sending it fails (the hook gave up and shut its reading side, or
exited) the daemon does nothing, and the hook records locally; once it is sent the daemon
records first (or spools) and answers after, even if the hook has stopped waiting. The
hook shuts its reading side before giving up, so an acknowledgement is either already
queued for it to read, or fails to send: exactly one of the two records
(`client.handoff`).

`record`: a tool call's hook (PostToolUse, PostToolUseFailure), the same fields plus the
event's `uid` (`spool.stamp`). The daemon maps, redacts and commits (or spools) the event
under that id and only then sends `ACK`, then the answer. A hook that has not read the
receipt within `client.RECORD_ACK_WAIT` records the event itself, under the same id: the
log stores an id once, so the event is stored once whoever writes it, and never lost.
The raw payload crosses only the socket (0600 in a 0700 folder); what touches the disk is
redacted.

Each request must arrive whole within REQUEST_DEADLINE (5 s) of the connection or of the
previous answer: a total deadline, not a per-byte timeout. In the trial (D14) one client
sending a byte every 4 s held the daemon, which served one connection at a time,
indefinitely.

Standard library only (`json`, `os`): the prompt hook imports this module.
"""

from __future__ import annotations

import json
import os

MAX_LINE = 1 << 20  # bytes of one request line; an answer may be up to 8 times that
ACK = b'{"ack": true}\n'  # the `hook` op's receipt: from here on the daemon records
ACK_OPS = frozenset({"hook"})
DURABLE_OPS = frozenset({"record"})  # the receipt comes once the event is stored
REQUEST_DEADLINE = 5.0  # seconds for one whole request line ($BRAINBOX_DAEMON_DEADLINE)
MAX_CWD = 4096  # hookmap.MAX_PATH: a longer `cwd` falls back to the hook's own directory


def request_deadline() -> float:
    """REQUEST_DEADLINE, or `$BRAINBOX_DAEMON_DEADLINE` (at least 0.05 s)."""
    try:
        return max(0.05, float(os.environ.get("BRAINBOX_DAEMON_DEADLINE") or REQUEST_DEADLINE))
    except ValueError:
        return REQUEST_DEADLINE


def encode(message: dict, default=None) -> bytes:
    """One request or answer as its line, UTF-8 (`default` as in `json.dumps`: the server
    passes `str`, so an answer always goes out; a client's bad request raises)."""
    return json.dumps(message, ensure_ascii=False, default=default).encode("utf-8",
                                                                         "replace") + b"\n"


def encode_ascii(message: dict) -> bytes:
    """A `hook` request's line, ASCII JSON: lone surrogates of a payload survive the trip
    as escapes. Raises TypeError/ValueError/RecursionError for what JSON cannot hold."""
    return json.dumps(message).encode("ascii") + b"\n"


def usable_cwd(cwd) -> bool:
    """A payload's `cwd` that names a folder: a non-blank string of at most MAX_CWD."""
    return isinstance(cwd, str) and bool(cwd.strip()) and len(cwd) <= MAX_CWD


def hook_cwd(payload: dict, here) -> dict:
    """The payload as the hook process would have mapped it: hookmap falls back to the
    process's working directory, and a relative `cwd` is resolved against it; the daemon's
    own directory is neither, so the hook sends its own (`here`)."""
    if not isinstance(here, str) or not here.startswith("/"):
        return payload
    cwd = payload.get("cwd")
    if not usable_cwd(cwd):
        return dict(payload, cwd=here)
    if not cwd.startswith("/"):
        return dict(payload, cwd=os.path.join(here, cwd))
    return payload
