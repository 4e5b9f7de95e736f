"""`brainbox hook <agent> <Event>`: the agent hook processes (Claude Code, Codex CLI).

The agent runs one fresh process per event and pipes its JSON payload to stdin. This
module is that process: read the payload (`_read_payload`), keep the budget (`guard`),
hand the event to the daemon (`client.handoff`) or handle it here (`handler.handle`:
map, record, answer), and spool what could not be committed (`spool`). What each event
does is `handler`'s docstring; the settings are `hookconf`'s, the log `hooklog`'s.

Standard library only on the tool-event path: this module and everything it imports
there avoid click, numpy, numba, scipy and sqlean (tests/test_startup.py, test_hooks.py).

Reliability (DESIGN §7, `guard`). Whatever happens the process exits 0 and prints
nothing but a well-formed answer. A payload that never comes, or stays incomplete with
stdin open, is logged as "event lost". When `main` is the whole process it ends with
`os._exit(0)` once its answer is flushed: the agent waits for the exit, and the
interpreter's finalisation has nothing left to do (`_exit_now`).

The installed hook's event (argv) decides what a payload is, not its `hook_event_name`:
a PostToolUse hook whose payload says SessionStart is a tool call and prints nothing
(report D13: it printed a SessionStart block, with the daemon deciding by the payload).

With a daemon (`_via_daemon`), every event but a tool call (UserPromptSubmit,
SessionStart, Stop, SessionEnd, and PreToolUse, whose advice is the daemon's to give
within the tool budget) is handed over whole: the hook sends its raw payload in
one `hook` request (`wire`) and prints the line the daemon returns; the daemon maps,
records, recalls and remembers. On that path this process imports only json, os, sys,
time, threading, `select` and `_socket` (and the `brainbox.cli` modules named here,
whose top imports nothing else): not hookmap, recorder, events, redact or sqlite3, which
cost more than the whole round trip. The socket is reached through
`client.trusted_connect` (its folder and file ours, the peer our uid): an untrusted one
gets nothing (report D3). No daemon, an untrusted socket, another database, or a daemon
without the `hook` op: the hook does everything itself, and starts a daemon once it has
answered.

A tool call (PostToolUse, PostToolUseFailure) is handed over too, as a `record` request
(issue 20: the direct path's imports, mapping, redaction and commit cost ~0.9x Python's
start-up again): the hook gives the event its `uid` and waits `client.RECORD_ACK_WAIT`
at most for the receipt, which the daemon sends only once the event is committed (or
spooled). Without it (no daemon, a busy or wedged one, a stopped one) the hook maps and
commits the event itself under the same uid, so the event is stored once whoever writes
it, and never lost. A tool call starts no daemon: the prompt hooks do.

Health (`health`): a hook that handled its event itself and logged no failure records
its kind's success (one `utime`); one handed to the daemon is the daemon's to record.
"""

from __future__ import annotations

import json
import os
import sys
import time

from brainbox import paths
from brainbox.cli import client, handler, health, hookconf, spool, wire
from brainbox.cli.guard import WATCHDOG_LOCK_WAIT, Guard, Null
from brainbox.cli.hooklog import failures, log_failure, safe

TOOL_EVENTS = frozenset({"PostToolUse", "PostToolUseFailure", "PostToolBatch"})
HANDOFF_EVENTS = frozenset({"UserPromptSubmit", "SessionStart", "Stop", "SessionEnd",
                            "PreToolUse"})
MAX_STDIN = 16 << 20
HARD_EXIT = True  # tests that call `main` in-process set this False


def main(argv: list[str] | None = None, stdin=None, stdout=None) -> int:
    """Run one hook; always returns 0. `stdin`/`stdout` default to the process's."""
    argv = list(argv or [])
    agent = argv[0] if argv else ""
    event = argv[1] if len(argv) > 1 else None
    out = stdout if stdout is not None else sys.stdout
    saved = sys.stdout, sys.stderr
    guard = None
    taken = False
    failed_before = failures(agent, event)
    hookconf.reset()
    try:
        kind = "tool" if event in TOOL_EVENTS or event == "PreToolUse" else "prompt"
        guard = Guard(hookconf.budget(kind), HARD_EXIT, (agent, event),
                      since_start=kind == "prompt", reading=hookconf.stdin_wait())
        guard.local = _local_service
        sys.stdout = sys.stderr = Null()  # nothing stray reaches the agent
        payload = _read_payload(stdin, guard, agent, event)
        guard.payload, guard.read_done, guard.chunks = payload, True, None
        guard.arrived()
        if payload is not None:
            taken, answer = _via_daemon(agent, event, payload, guard)
            if not taken:
                answer = handler.handle(agent, event, payload, guard)
            if answer and guard.remaining() > 0:
                with guard.lock:
                    sys.stdout, sys.stderr = saved
                    out.write(answer + "\n")
                    out.flush()
    except BaseException as exc:  # noqa: BLE001 - a hook never breaks the agent
        if guard is not None:
            safe(guard.spool_uncommitted)
        log_failure(agent, event, f"{type(exc).__name__}: {exc}", exc)
    finally:
        sys.stdout, sys.stderr = saved
        if guard is not None:
            guard.close()
            if not taken and failures(agent, event) == failed_before:
                safe(health.succeeded, agent, event)  # handed over: the daemon records it
            if guard.spawn_daemon:  # after the answer: it would compete for the CPU
                safe(client.spawn)
    if HARD_EXIT and guard is not None and _whole_process(argv):
        _exit_now(guard, out)
    return 0


def _whole_process(argv: list[str]) -> bool:
    """True when this `main` is the whole process (`brainbox hook ...`, `python -m
    brainbox.cli.entry hook ...`, `python -m brainbox.cli.hooks ...`), not a caller's."""
    args = sys.argv[1:]
    return args == argv or args == ["hook", *argv]


def _exit_now(guard, out) -> None:
    """End the process without the interpreter's finalisation, which the agent waits for
    (~2 ms for this module's imports; 16 ms here for `python -c pass` itself, whose `site`
    imports more): by now every event is committed, spooled or the daemon's, every file
    closed, and the answer is flushed. A watchdog caught spooling is waited for (it exits
    the process itself)."""
    try:
        out.flush()
    except BaseException:  # noqa: BLE001, S110 - nothing to do about it but exit
        pass
    if guard.thread is not None:
        guard.thread.join(WATCHDOG_LOCK_WAIT + 1.0)
    os._exit(0)


def _read_payload(stdin, guard, agent, event) -> dict | None:
    """The payload, read until EOF or `stdin_wait()` seconds (the guard's deadline while
    reading); a payload that is whole JSON when the wait ends is used all the same."""
    src = stdin if stdin is not None else sys.stdin
    if src is None:
        return None
    buf = getattr(src, "buffer", src)
    fd = _stdin_fd(buf) if stdin is None else None
    if fd is None:  # a caller's file object (tests, in-process callers): read it whole
        data = buf.read(MAX_STDIN + 1)
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        whole = True
    else:
        whole = _read_fd(fd, guard)
        data = b"".join(guard.chunks)
    if not data:
        if not whole:
            log_failure(agent, event,
                        f"event lost: no payload within {hookconf.stdin_wait():.2f} s")
        return None
    if len(data) > MAX_STDIN:
        if fd is None:
            while buf.read(1 << 20) and guard.remaining() > 0.02:
                pass  # drain so the agent's write does not fail; the payload is dropped
        else:
            _read_fd(fd, guard, keep=False)
        log_failure(agent, event, f"payload over {MAX_STDIN >> 20} MiB dropped")
        return None
    try:
        payload = json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError) as exc:
        if not whole:
            log_failure(agent, event, "event lost: stdin still open after "
                        f"{hookconf.stdin_wait():.2f}"
                        f" s and {len(data)} bytes are not a whole payload")
            return None
        log_failure(agent, event, f"payload is not JSON ({str(exc)[:100]}); {len(data)} bytes")
        return None
    if not isinstance(payload, dict):
        log_failure(agent, event, f"payload is a JSON {type(payload).__name__}, not an object")
        return None
    return payload


def _stdin_fd(buf) -> int | None:
    try:
        fd = buf.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    return fd if isinstance(fd, int) and fd >= 0 else None


def _read_fd(fd: int, guard, keep: bool = True) -> bool:
    """Read `fd` into `guard.chunks` (where the watchdog finds it) until EOF (True), more
    than MAX_STDIN bytes (True) or the guard's deadline (False). `select` bounds each
    wait, so a late or never-closing writer costs the wait, not the event."""
    import select

    if guard.chunks is None:
        guard.chunks = []
    size = sum(map(len, guard.chunks))
    while keep is False or size <= MAX_STDIN:
        left = guard.remaining()
        if left <= 0:
            return False
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except (OSError, ValueError):
            ready = [fd]  # not selectable: a blocking read, the watchdog still bounds it
        if not ready:
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return True
        if keep:
            guard.chunks.append(chunk)
            size += len(chunk)
    return True


# --------------------------------------------------------------------------- handoff


def _via_daemon(agent, event, payload: dict, guard) -> tuple[bool, str | None]:
    """Hand a non-tool hook to the daemon: (True, the line to print or None) once the
    daemon has acknowledged it (it records), (False, None) when this process must."""
    # the installed event decides, as in hookmap (report D13)
    name = event if isinstance(event, str) and event else payload.get("hook_event_name")
    tool = name in TOOL_EVENTS
    if not (tool or name in HANDOFF_EVENTS) or not hookconf.enabled("daemon"):
        return False, None
    cwd = payload.get("cwd")
    usable = wire.usable_cwd(cwd)
    if usable and not cwd.startswith("/"):
        return False, None  # relative to this process's directory: map it here
    try:
        here = os.getcwd()
    except OSError:
        if not usable:
            return False, None
        here = ""
    req = {"op": "hook", "db": paths.db_path(), "agent": agent, "event": event,
           "payload": payload, "at": time.time(), "cwd": here, "settings": handler.settings(guard),
           "budget": round(max(0.0, guard.remaining()), 3),
           "project_env": os.environ.get("BRAINBOX_PROJECT", "")}  # the key is the hook's
    if tool:  # acknowledged once committed, under this id, which a fallback write reuses
        guard.uid = req["uid"] = spool.new_uid()
        req["op"] = "record"
    try:  # ASCII JSON: lone surrogates survive the trip as escapes, as in the payload
        data = wire.encode_ascii(req)
    except (TypeError, ValueError, RecursionError):
        return False, None
    if len(data) > wire.MAX_LINE:
        return False, None
    return client.handoff(data, paths.socket_path(), guard,
                          client.record_ack_wait() if tool else None)


def _local_service():
    """The in-process service of a hook that has no daemon (`guard.local`): it saves what
    a request folded. Imports the engine: only when no daemon answered."""
    from brainbox.cli.service import Service

    return Service(autosave=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
