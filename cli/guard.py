"""A hook's wall-clock budget (DESIGN §7): `Guard`, shared by the hook process and the
daemon (which runs a handed-over hook under a guard of its own, without the watchdog).

Whatever happens the hook process exits 0 and prints nothing but a well-formed answer.
The budget (`hookconf.budget`) is kept two ways: cooperatively (SQLite waits get a busy
timeout of the time left, the daemon socket a timeout of the time left, the in-process
fallback only starts with 0.3 s left), and by a watchdog thread that at the deadline keeps
what was not committed and calls `os._exit(0)`; SQLite is crash-safe, so that exit never
damages the database. No asynchronous exception is used: a SIGALRM handler raising
inside library code (an import, a `sqlite3` call) was tried first and lost committed
transactions under concurrency.

Reading stdin has a wait of its own (`hookconf.stdin_wait`), bounded with `select`: the
budget used to start at process start for tool calls too, so a payload written
0.25-0.5 s after spawn (or one read slowly on a loaded machine: 21 of 8,880 events in the
trial's 8-way run) met a deadline with nothing to keep and was lost (reliability report
D1). While reading, the deadline is that wait's; `arrived()` starts the budget.

Standard library only (`threading` at construction).
"""

from __future__ import annotations

import json
import os
import time

from brainbox.cli import client, hookconf, spool
from brainbox.cli.hooklog import log_failure

WATCHDOG_LOCK_WAIT = 0.3
EXIT_MARGIN = 0.1


class Guard:
    """The wall-clock budget: `remaining()` for cooperative checks, and a watchdog thread
    (in a real hook process) that spools and exits at the deadline."""

    def __init__(self, seconds: float, hard: bool, who: tuple, since_start: bool = False,
                 reading: float | None = None):
        import threading

        # A prompt's budget counts from process start (the agent waits for the whole
        # process); a tool call's counts the hook's own work (interpreter start-up is
        # beyond our control and measured by benchmarks/bench_hooks.py), from the moment
        # its payload has arrived (`arrived`). While `reading` (seconds), the payload may
        # still come: the deadline is that wait's, or the budget's if later.
        age = process_age() if hard and since_start else 0.0
        self.seconds = seconds
        self.since_start = since_start
        now = time.monotonic()
        self.budget_deadline = now + seconds - min(age, 0.8 * seconds) if since_start else None
        self._set_deadline(max(self.budget_deadline or 0.0, now + (reading or seconds)),
                           backstop=bool(reading))
        self.spawn_daemon = False
        self.started = time.time()
        self.who = who
        self.chunks: list[bytes] | None = None  # stdin as read so far
        self.read_done = False
        self.payload = None  # the parsed payload, mapped and spooled if the deadline comes
        self.pending: list[dict] | None = None
        self.committed = False
        self.outcome = "recorded"  # once committed: what became of the event (for the log)
        self.reported = False  # that outcome is in the log already
        self.sock = None  # a daemon handoff in flight, and its receive buffer
        self.rx: bytearray | None = None
        self.daemon_state: str | None = None  # after a failed handoff: absent, refused, timeout
        self.settings: dict | None = None
        self.service = None  # in the daemon: the Service that answers in place of the socket
        self.local = None  # in a hook process: makes an in-process Service (no daemon)
        self.conn = None  # in the daemon: its open connection, used to record
        self.uid: str | None = None  # a tool call's event id, the same in hook and daemon
        self.acknowledge = None  # in the daemon: sends a `record` op's receipt (`durable`)
        # held while committing, spooling, ingesting a spool file or writing the answer
        self.lock = threading.RLock()
        self._done = threading.Event()
        self._moved = threading.Event()  # the deadline changed: the watchdog looks again
        self.thread = None
        if hard:
            self.thread = threading.Thread(target=self._watch, daemon=True)
            self.thread.start()

    def _set_deadline(self, deadline: float, backstop: bool = False) -> None:
        self.deadline = deadline
        # the watchdog fires EXIT_MARGIN early: spooling, starting a daemon and exiting
        # take time too (and the thread waits for the GIL behind a busy main thread).
        # While reading, the main thread ends the wait itself; the watchdog is a backstop.
        margin = min(EXIT_MARGIN, 0.1 * self.seconds)
        self.hard_deadline = deadline + (EXIT_MARGIN if backstop else -margin)

    def arrived(self) -> None:
        """The payload is here: the budget starts now (a prompt's: from process start,
        but with a tool call's budget at least, to record it)."""
        now = time.monotonic()
        if self.since_start:
            self._set_deadline(max(self.budget_deadline, now + hookconf.budget("tool")))
        else:
            self._set_deadline(now + self.seconds)
        if self.thread is not None:
            self._moved.set()

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def _watch(self) -> None:
        while True:
            left = self.hard_deadline - time.monotonic()
            if left <= 0:
                break
            self._moved.wait(left)
            self._moved.clear()
            if self._done.is_set():
                return
        got = self.lock.acquire(timeout=WATCHDOG_LOCK_WAIT)
        try:
            # Without the lock a commit is still running: the spooled copy carries the
            # same event ids (`uid`), so the drain stores it once.
            kept = self._spool()
            if self.reported:  # said once: a loss is counted once
                kept = "as logged before"
            log_failure(*self.who, f"timeout after {self.seconds:.2f} s ({kept}"
                        f"{'' if got else ', lock not free'})")
            if self.spawn_daemon:
                client.spawn()
        except BaseException:  # noqa: BLE001, S110 - the deadline: exit whatever happened
            pass
        finally:
            os._exit(0)

    def spool_uncommitted(self) -> str:
        with self.lock:
            return self._spool()

    def _spool(self) -> str:
        """Keep what this hook was recording and say what became of it: its normalised
        (redacted) events, mapped here from the payload (or the bytes read) when the
        deadline came before they existed. Never the raw payload: it holds file contents
        and command output, which are never stored (report D2)."""
        if self.committed:
            return self.outcome
        # `committed` only once kept: a watchdog that could not get the lock must not take
        # a spool still being written for a kept event (it writes its own copy: same uids)
        outcome = self._keep()
        self.outcome, self.committed = outcome, True
        return outcome

    def _keep(self) -> str:
        if self.sock is not None and client.daemon_took(self.sock, self.rx):
            return "handed to the daemon"  # the daemon acknowledged: it records, not us
        try:
            events = self.pending if self.pending else self._map()
        except Exception as exc:  # noqa: BLE001
            return f"event lost: the payload could not be mapped ({type(exc).__name__}: {exc})"
        if events is None:
            return "event lost: no payload had arrived"
        if not events:
            return "nothing to record"
        try:
            if spool.spool_write(events) is None:
                return f"event lost: the spool is full ({spool.SPOOL_MAX_FILES} files)"
        except Exception as exc:  # noqa: BLE001 - full disk, read-only or unsafe home
            return f"event lost: cannot spool ({type(exc).__name__}: {exc})"
        return "spooled"

    def _map(self) -> list[dict] | None:
        payload = self.payload
        if payload is None:
            if self.read_done:
                return []  # empty, or refused (and logged) by the payload's reader
            if not self.chunks:
                return None
            payload = json.loads(b"".join(self.chunks).decode("utf-8", "replace"))
            if not isinstance(payload, dict):
                return []
        agent, event = self.who
        return spool.stamp(spool.to_events(agent, payload, event, self.started)[0], self.uid)

    def durable(self) -> None:
        """The events are committed or spooled: send the receipt, if one is owed (once)."""
        ack, self.acknowledge = self.acknowledge, None
        if ack is not None:
            ack()

    def close(self) -> None:
        self._done.set()
        self._moved.set()


class Null:
    """A stdout/stderr that swallows what is written (nothing stray reaches the agent)."""

    def write(self, s):
        return len(s)

    def flush(self):
        pass


def process_age() -> float:
    """Seconds since this process started (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            ticks = int(fh.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/uptime", "rb") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0
