"""`brainbox hook <agent> <Event>`: the agent hook processes (Claude Code, Codex CLI).

The agent runs one fresh process per event and pipes its JSON payload to stdin. Events:

- `PostToolUse` / `PostToolUseFailure`: map the payload (`hookmap.payload_to_records`),
  normalise and append through `brainbox.recorder`. Standard library only: this module
  and everything it imports on that path avoid click, numpy, numba, scipy and sqlean.
- `UserPromptSubmit`: record the prompt (our injected block stripped by hookmap), then
  ask the daemon for a compact list (`path — why` lines plus `next tool: X`) and print it
  as `hookSpecificOutput.additionalContext`, or print nothing when nothing is relevant.
  What was suggested is remembered per session (`$BRAINBOX_HOME/sessions/<id>.jsonl`,
  one line appended per prompt: rewriting a file costs 1-4 ms on ext4, which starts
  writeback on a truncate or a rename over an existing file) for scoring at Stop.
- `SessionStart`: record it and print the project's most likely files, bounded by a
  token budget (characters / 4, `session_start_tokens`, default 300).
- `Stop` / `SessionEnd`: record it, score the session's pending suggestions against the
  tool events that followed them, append ONE `feedback` event (DESIGN §4.8 reward), and
  fold (the daemon's `sync`, else in-process). A turn without suggestions only records:
  Stop fires after every answer, and an in-process fold costs the kernels' import; the
  next reader folds lazily anyway.

Reliability (DESIGN §7). Whatever happens the process exits 0 and prints nothing but a
well-formed answer. The budget (tool events 0.2 s of the hook's own work, counted from
the moment the payload has arrived; the others 1.5 s from process start, since the agent
waits for the whole process, and at least a tool call's budget after the payload arrives;
`BRAINBOX_HOOK_BUDGET_TOOL` / `_PROMPT` or `config.json`) is kept two ways:
cooperatively (SQLite waits get a busy timeout of the time left, the daemon socket a
timeout of the time left, the in-process fallback only starts with 0.3 s left), and by a
watchdog thread that at the deadline keeps what was not committed and calls
`os._exit(0)`; SQLite is crash-safe, so that exit never damages the database. No
asynchronous exception is used: a SIGALRM handler raising inside library code (an import,
a `sqlite3` call) was tried first and lost committed transactions under concurrency.

Reading stdin has a wait of its own (`STDIN_WAIT` 2 s, `BRAINBOX_HOOK_STDIN_WAIT`),
bounded with `select`: the budget used to start at process start for tool calls too, so a
payload written 0.25-0.5 s after spawn (or one read slowly on a loaded machine: 21 of
8,880 events in the trial's 8-way run) met a deadline with nothing to keep and was lost
(reliability report D1). A payload that never comes, or stays incomplete with stdin open,
is logged as "event lost".

Events that could not be committed in time (lock contention, a slow disk, an unusable
database, a deadline before the mapping) go to the spool, `$BRAINBOX_HOME/spool/*.jsonl`,
one atomic rename each, as normalised (redacted) events: when the deadline comes before
the mapping, the watchdog maps the payload itself (milliseconds, bounded by hookmap's
limits). The raw payload never touches the disk: it holds file contents and command
output, secrets included, that the log never stores (report D2: 25 of 32 planted secrets
were found in raw spool files). The next hook, the daemon and the importer drain the
spool, so a timeout never loses an event. Every event carries a random `uid` before it is
committed or spooled and the log stores a uid once (`storage.db` migration 002), so a
drain killed between its commit and its unlink, or a watchdog that spooled while a
commit finished, stores nothing twice (report D7: the whole file was stored again). A
lock shared with the watchdog makes "commit" and "spool" exclusive besides. A spool file
the database refuses for its content (an exit code beyond int64 spooled by an older
version) is stored event by event and the rest moves to `spool/bad/`, logged once; it
used to fail every drain and block every file after it (report D6). A database that
fails (locked, full, read-only) leaves the file for a later drain.

Files (reliability report D8, D15; `brainbox.storage.files`): the spool folder must be a
real folder of ours with mode 0700 (never a symlink: a planted link received the events),
spool files and `hook-errors.log` are opened with `O_NOFOLLOW` and are 0600 whatever the
umask. Failures are logged with their traceback to `$BRAINBOX_HOME/hook-errors.log`
(rotated at 256 KiB, one old file kept); when that cannot be written (refused, read-only
home, full disk), to `$XDG_RUNTIME_DIR/brainbox-hook-errors.log` if that is a private
folder of ours, else nowhere. The log says what became of the event: "spooled", "event
lost: ..." (never "recorded" unless it was). When `main` is the whole process it ends
with `os._exit(0)` once its answer is flushed: the agent waits for the exit, and the
interpreter's finalisation has nothing left to do (`_exit_now`).

The installed hook's event (argv) decides what a payload is, not its `hook_event_name`:
a PostToolUse hook whose payload says SessionStart is a tool call and prints nothing
(report D13: it printed a SessionStart block, with the daemon deciding by the payload).

Without a daemon (none running, or `daemon: off`), a prompt answers in-process within the
budget, then starts a daemon detached (after answering, so the two do not compete for
the CPU); if the budget runs out it degrades to recording only.

With a daemon (`_handoff`), every event but a tool call (UserPromptSubmit, SessionStart,
Stop, SessionEnd) is handed over whole: the hook sends its raw payload in one `hook`
request and prints the line the daemon returns; the daemon maps, records, recalls and
remembers (`daemon.Service.op_hook` runs `_dispatch` below with itself in place of the
socket). On that path this process imports only json, os, sys, time, threading,
`select` and `_socket` (and `brainbox.cli.daemon`, whose top imports nothing else): not hookmap,
recorder, events, redact or sqlite3, which cost more than the whole round trip. Who
records: the daemon acknowledges receipt with a line of its own before doing anything;
after that line the daemon records (first, then answers; it spools if the database
refuses), whether or not the hook still waits. If the acknowledgement has not come in
time (the daemon is busy or wedged, leaving `HANDOFF_RESERVE` of the budget), the hook
shuts the socket's reading side, reads what is already queued, and records locally only
if no acknowledgement is there: after the shutdown the daemon's send of one fails, and a
daemon whose acknowledgement fails does nothing. The socket is reached through
`daemon.trusted_connect` (its folder and file ours, the peer our uid): an untrusted one gets
nothing (report D3). No daemon, an untrusted socket, another database, or a daemon
without the `hook` op: the hook does everything itself, as above. Tool calls never touch
the daemon.
"""

from __future__ import annotations

import json
import os
import sys
import time

from brainbox import paths

TOOL_EVENTS = frozenset({"PostToolUse", "PostToolUseFailure"})
DEFAULT_BUDGET = {"tool": 0.2, "prompt": 1.5}
WATCHDOG_LOCK_WAIT = 0.3
STDIN_WAIT = 2.0  # for the payload to arrive (agents write it at once; the trial's late
# writer 0.25-0.5 s after spawn); the tool budget starts when it has
EXIT_MARGIN = 0.1
MAX_STDIN = 16 << 20
LOG_NAME = "hook-errors.log"
LOG_MAX = 256 << 10
SPOOL_MAX_FILES = 20_000
INJECT_CHARS = 500
SESSION_START_TOKENS = 300
HANDOFF_EVENTS = frozenset({"UserPromptSubmit", "SessionStart", "Stop", "SessionEnd"})
HANDOFF_RESERVE = 0.3  # of the budget, kept to record locally when the daemon never takes it
HANDOFF_RX = 1 << 16  # the receipt's buffer (or a refusal's line), shared with the watchdog
MAX_CWD = 4096  # hookmap.MAX_PATH: a longer `cwd` falls back to the process's
HARD_EXIT = True  # tests that call `main` in-process set this False
_ENV = {
    "hook_budget_prompt": "BRAINBOX_HOOK_BUDGET_PROMPT",
    "hook_budget_tool": "BRAINBOX_HOOK_BUDGET_TOOL",
    "hook_stdin_wait": "BRAINBOX_HOOK_STDIN_WAIT",
    "daemon_idle": "BRAINBOX_DAEMON_IDLE",
    "daemon": "BRAINBOX_DAEMON",
    "inject": "BRAINBOX_INJECT",
    "inject_chars": "BRAINBOX_INJECT_CHARS",
    "session_start_tokens": "BRAINBOX_SESSION_START_TOKENS",
}
_config_cache: dict | None = None


# --------------------------------------------------------------------------- config


def config(key: str, default=None):
    """A setting: the environment variable wins, then `$BRAINBOX_HOME/config.json`."""
    global _config_cache
    env = _ENV.get(key)
    if env and os.environ.get(env) not in (None, ""):
        return os.environ[env]
    if _config_cache is None:
        try:
            with open(os.path.join(paths.home(), "config.json"), encoding="utf-8") as fh:
                loaded = json.load(fh)
            _config_cache = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            _config_cache = {}
    return _config_cache.get(key, default)


def enabled(key: str) -> bool:
    value = config(key, True)
    return str(value).strip().lower() not in ("0", "off", "false", "no")


def _as_int(value, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def settings(given: dict | None = None) -> dict:
    """What the prompt and SessionStart answers depend on, resolved once: `given` (a hook
    request's, in the daemon) wins, then the environment and `config.json`."""
    given = given or {}

    def pick(key, default):
        return given[key] if key in given else config(key, default)

    return {"inject": str(pick("inject", True)).strip().lower() not in ("0", "off", "false",
                                                                          "no"),
            "inject_chars": _as_int(pick("inject_chars", INJECT_CHARS), INJECT_CHARS),
            "session_start_tokens": _as_int(pick("session_start_tokens", SESSION_START_TOKENS),
                                            SESSION_START_TOKENS)}


def _settings(guard) -> dict:
    if guard.settings is None:
        guard.settings = settings()
    return guard.settings


def _seconds(key: str, default: float) -> float:
    """A duration setting; `default` when it is not a number in (0, 3600)."""
    try:
        value = float(config(key, default))
    except (TypeError, ValueError):
        return default
    return value if 0 < value < 3600 else default


def budget(kind: str) -> float:
    return _seconds(f"hook_budget_{kind}", DEFAULT_BUDGET[kind])


def stdin_wait() -> float:
    return _seconds("hook_stdin_wait", STDIN_WAIT)


# --------------------------------------------------------------------------- guard


class _Guard:
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
        age = _process_age() if hard and since_start else 0.0
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
        self.conn = None  # in the daemon: its open connection, used to record
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
            self._set_deadline(max(self.budget_deadline, now + budget("tool")))
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
                from brainbox.cli import daemon

                daemon.spawn()
        except BaseException:  # noqa: BLE001
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
        if self.sock is not None and _daemon_took(self.sock, self.rx):
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
            if spool_write(events) is None:
                return f"event lost: the spool is full ({SPOOL_MAX_FILES} files)"
        except Exception as exc:  # noqa: BLE001 - full disk, read-only or unsafe home
            return f"event lost: cannot spool ({type(exc).__name__}: {exc})"
        return "spooled"

    def _map(self) -> list[dict] | None:
        payload = self.payload
        if payload is None:
            if self.read_done:
                return []  # empty, or refused (and logged) by _read_payload
            if not self.chunks:
                return None
            payload = json.loads(b"".join(self.chunks).decode("utf-8", "replace"))
            if not isinstance(payload, dict):
                return []
        from brainbox.cli.hookmap import payload_to_records

        from brainbox.recorder import normalize_many

        agent, event = self.who
        records = payload_to_records(agent, payload, event)
        for r in records:
            if r.get("at") is None:
                r["at"] = self.started
        return _stamp(normalize_many(records)[0])

    def close(self) -> None:
        self._done.set()
        self._moved.set()


class _Null:
    def write(self, s):
        return len(s)

    def flush(self):
        pass


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None, stdin=None, stdout=None) -> int:
    """Run one hook; always returns 0. `stdin`/`stdout` default to the process's."""
    global _config_cache
    argv = list(argv or [])
    agent = argv[0] if argv else ""
    event = argv[1] if len(argv) > 1 else None
    out = stdout if stdout is not None else sys.stdout
    saved = sys.stdout, sys.stderr
    guard = None
    _config_cache = None
    try:
        kind = "tool" if event in TOOL_EVENTS else "prompt"
        guard = _Guard(budget(kind), HARD_EXIT, (agent, event), since_start=kind == "prompt",
                       reading=stdin_wait())
        sys.stdout = sys.stderr = _Null()  # nothing stray reaches the agent
        payload = _read_payload(stdin, guard, agent, event)
        guard.payload, guard.read_done, guard.chunks = payload, True, None
        guard.arrived()
        if payload is not None:
            taken, answer = _via_daemon(agent, event, payload, guard)
            if not taken:
                answer = _dispatch(agent, event, payload, guard)
            if answer and guard.remaining() > 0:
                with guard.lock:
                    sys.stdout, sys.stderr = saved
                    out.write(answer + "\n")
                    out.flush()
    except BaseException as exc:  # noqa: BLE001 - a hook never breaks the agent
        if guard is not None:
            _safe(guard.spool_uncommitted)
        log_failure(agent, event, f"{type(exc).__name__}: {exc}", exc)
    finally:
        sys.stdout, sys.stderr = saved
        if guard is not None:
            guard.close()
            if guard.spawn_daemon:  # after the answer: it would compete for the CPU
                from brainbox.cli import daemon

                _safe(daemon.spawn)
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


def _process_age() -> float:
    """Seconds since this process started (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            ticks = int(fh.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/uptime", "rb") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def _safe(fn, *args):
    try:
        return fn(*args)
    except BaseException:  # noqa: BLE001
        return None


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
            log_failure(agent, event, f"event lost: no payload within {stdin_wait():.2f} s")
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
            log_failure(agent, event, f"event lost: stdin still open after {stdin_wait():.2f}"
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
    if name not in HANDOFF_EVENTS or not enabled("daemon"):
        return False, None
    cwd = payload.get("cwd")
    usable = isinstance(cwd, str) and bool(cwd.strip()) and len(cwd) <= MAX_CWD
    if usable and not cwd.startswith("/"):
        return False, None  # relative to this process's directory: map it here
    try:
        here = os.getcwd()
    except OSError:
        if not usable:
            return False, None
        here = ""
    from brainbox.cli import daemon

    req = {"op": "hook", "db": paths.db_path(), "agent": agent, "event": event,
           "payload": payload, "at": time.time(), "cwd": here, "settings": _settings(guard),
           "budget": round(max(0.0, guard.remaining()), 3)}
    try:  # ASCII JSON: lone surrogates survive the trip as escapes, as in the payload
        data = json.dumps(req).encode("ascii") + b"\n"
    except (TypeError, ValueError, RecursionError):
        return False, None
    if len(data) > daemon.MAX_LINE:
        return False, None
    return _handoff(data, paths.socket_path(), guard)


def _handoff(data: bytes, path: str, guard) -> tuple[bool, str | None]:
    """Send one `hook` request; see the module docstring for who records."""
    import _socket

    from brainbox.cli.daemon import trusted_connect

    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    rx = bytearray(HANDOFF_RX)
    state = {"taken": False, "output": None}
    try:
        left = guard.remaining()
        ack_by = guard.deadline - min(HANDOFF_RESERVE, 0.5 * max(0.0, left))
        try:
            s.settimeout(max(0.001, ack_by - time.monotonic()))
            trusted_connect(s, path)  # a socket or peer not ours gets nothing (report D3)
        except PermissionError:
            guard.daemon_state = "refused"
            return False, None
        except OSError:
            guard.daemon_state = "absent"
            return False, None
        with guard.lock:
            guard.sock, guard.rx = s, rx
        try:
            _exchange(s, data, rx, ack_by, guard, state)
        except (OSError, ValueError):
            pass
    finally:
        with guard.lock:
            if guard.sock is s:
                if not state["taken"] and _daemon_took(s, rx):
                    state["taken"] = True  # queued before we shut the reading side
                    guard.committed, guard.outcome = True, "handed to the daemon"
                guard.sock = None
        s.close()
    if not state["taken"] and guard.daemon_state is None:
        guard.daemon_state = "timeout"
    return state["taken"], state["output"]


def _exchange(s, data: bytes, rx: bytearray, ack_by: float, guard, state: dict) -> None:
    """Send the request, read the receipt (then the hook is the daemon's) and the answer."""
    from brainbox.cli.daemon import ACK, MAX_LINE

    s.sendall(data)
    # the first line goes into `rx`, where the watchdog looks too (`_daemon_took`)
    view = memoryview(rx)
    pos = 0
    while rx.find(b"\n", 0, pos) < 0:
        left = ack_by - time.monotonic()
        if left <= 0 or pos >= len(rx):
            return
        s.settimeout(left)
        n = s.recv_into(view[pos:])
        if not n:
            return
        pos += n
    if not rx.startswith(ACK):  # an error (another database, an older daemon)
        guard.daemon_state = "refused"
        return
    with guard.lock:
        state["taken"] = True
        guard.committed = True  # the watchdog must not spool it too
        guard.outcome = "handed to the daemon"
    buf = bytearray(view[len(ACK):pos])
    answer_by = guard.hard_deadline - 0.005
    while b"\n" not in buf:
        left = answer_by - time.monotonic()
        if left <= 0 or len(buf) > 8 * MAX_LINE:
            return
        s.settimeout(left)
        chunk = s.recv(65536)
        if not chunk:
            return
        buf += chunk
    answer = json.loads(bytes(buf[:buf.index(b"\n")]))
    result = answer.get("result") if isinstance(answer, dict) and answer.get("ok") else None
    out = result.get("output") if isinstance(result, dict) else None
    state["output"] = out if isinstance(out, str) and out else None


def _daemon_took(s, rx) -> bool:
    """Settle a handoff this process is giving up on: shut the reading side (the daemon's
    receipt can no longer be sent), then look for one sent before. The peek comes before
    the buffer check: a concurrent read by the main thread has copied the receipt into
    `rx` by the time the kernel stops showing it (both hold the socket's read lock)."""
    import _socket

    from brainbox.cli.daemon import ACK

    try:
        s.shutdown(_socket.SHUT_RD)
    except OSError:
        pass
    try:
        s.setblocking(False)
        peek = s.recv(len(ACK), _socket.MSG_PEEK)
    except OSError:
        peek = b""
    return peek == ACK or (rx is not None and rx.startswith(ACK))


# --------------------------------------------------------------------------- dispatch


def _dispatch(agent, event, payload, guard, at: float | None = None) -> str | None:
    """Map, record and answer one hook (in the hook process, or in the daemon for a
    handed-over one, where `at` is the hook's time and `guard.service` the daemon)."""
    from brainbox.cli.hookmap import payload_to_records

    from brainbox.recorder import normalize_many

    records = payload_to_records(agent, payload, event)
    if at is not None:
        for r in records:
            if r.get("at") is None:
                r["at"] = at
    events, bad = normalize_many(records)
    for _, msg in bad:
        log_failure(agent, event, f"event rejected: {msg}")
    if not events:
        return None
    last_id = record(events, guard)
    ev = events[0]
    kind = ev["kind"]
    if kind == "tool":
        return None
    if kind == "prompt":
        return _on_prompt(ev, last_id, guard)
    if kind == "session_start":
        return _on_start(ev, guard)
    if kind == "session_end":
        _on_stop(ev, guard)
    return None


def record(events: list[dict], guard: _Guard) -> int | None:
    """Append normalised events within the budget; spool them when that fails."""

    from brainbox import recorder

    guard.pending = _stamp(events)
    conn = guard.conn  # the daemon's own connection, else one opened here
    own = conn is None
    try:
        if own:
            conn = _connect(guard)
        else:
            wait_ms = int(max(0.02, guard.remaining() - 0.03) * 1000)
            conn.execute(f"PRAGMA busy_timeout = {wait_ms}")
        with guard.lock:  # the watchdog must not spool what is being committed
            last = recorder.append(events, conn, retries=2)
            guard.committed = True
        if guard.remaining() > 0.05 and os.path.isdir(spool_dir()):
            drain_spool(conn, guard.lock, until=guard.deadline - 0.05)
        return last
    except Exception as exc:  # noqa: BLE001 - locked, corrupt, newer schema, disk full
        kept = guard.spool_uncommitted()
        kept = "event spooled" if kept == "spooled" else kept
        log_failure(*guard.who, f"{kept}: {type(exc).__name__}: {exc}", exc)
        guard.reported = True
        return None
    finally:
        if own and conn is not None:
            _safe(conn.close)
        elif not own:
            from brainbox.storage.db import BUSY_TIMEOUT_MS

            _safe(conn.execute, f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def _stamp(events: list[dict]) -> list[dict]:
    """Give each event an id of its own (`uid`, 96 random bits) before it is committed or
    spooled: the log stores an id once, so a spooled copy of a committed event (a drain
    killed before its unlink, a watchdog that spooled while the commit ran) is not stored
    twice (report D7)."""
    for e in events:
        if not e.get("uid"):
            e["uid"] = os.urandom(12).hex()
    return events


def _connect(guard):
    """Open the database with a busy timeout of the time left. Opening is retried
    briefly: while several processes create or checkpoint a new database at once, the
    read-only pre-check can see it half-made (a transient `StoreError`)."""
    from brainbox.storage import db as dbmod

    for attempt in range(6):
        try:
            conn = dbmod.connect()
            wait_ms = int(max(0.02, guard.remaining() - 0.03) * 1000)
            conn.execute(f"PRAGMA busy_timeout = {wait_ms}")
            return conn
        except dbmod.StoreError:
            if attempt == 5 or guard.remaining() < 0.06:
                raise
            time.sleep(0.01 * (attempt + 1))
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------- prompt


def _on_prompt(ev: dict, last_id, guard) -> str | None:
    conf = _settings(guard)
    if not conf["inject"] or not ev.get("prompt"):
        return None
    max_chars = conf["inject_chars"]
    req = {"op": "suggest", "query": ev["prompt"], "session": ev["session"],
           "project": ev["project"], "limit": 5, "max_chars": max_chars}
    result = ask(req, guard)
    if not result or not result.get("text"):
        return None
    remember(ev["session"], {
        "after_id": last_id or 0, "at": ev["at"], "project": ev["project"],
        "chars": len(result["text"]),
        "items": [{"path": it["path"], "rank": it["rank"], "via": it.get("via")}
                  for it in result.get("items") or ()],
    })
    return json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                              "additionalContext": result["text"]}},
                      ensure_ascii=False)


def _on_start(ev: dict, guard) -> str | None:
    conf = _settings(guard)
    if not conf["inject"]:
        return None
    tokens = conf["session_start_tokens"]
    req = {"op": "start", "session": ev["session"], "project": ev["project"],
           "max_chars": max(0, tokens) * 4}
    result = ask(req, guard)
    if not result or not result.get("text"):
        return None
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart",
                                              "additionalContext": result["text"]}},
                      ensure_ascii=False)


def ask(req: dict, guard) -> dict | None:
    """The daemon's answer; without one, start it and answer in-process (if time allows)."""
    if guard.service is not None:  # running inside the daemon
        answer = guard.service.handle(dict(req, db=guard.service.db))
        return answer.get("result") if answer and answer.get("ok") else None

    from brainbox.cli import daemon

    if guard.daemon_state == "absent":  # the handoff found no daemon a moment ago
        guard.spawn_daemon = True
    elif enabled("daemon") and guard.daemon_state != "timeout":
        req = dict(req, db=paths.db_path())
        answer = daemon.request(req, timeout=max(0.01, guard.remaining() - 0.05))
        if answer is not None:
            if answer.get("ok"):
                return answer.get("result")
        else:
            guard.spawn_daemon = True  # started once this hook has answered (or given up)
    if guard.remaining() < 0.3:
        return None
    service = daemon.Service(autosave=True)
    try:
        answer = service.handle(dict(req, db=service.db))
    finally:
        _safe(service.close)
    return answer.get("result") if answer.get("ok") else None


def _clean_line(text: str) -> str:
    from brainbox.cli.hookmap import CONTEXT_CLOSE, CONTEXT_OPEN

    text = " ".join(str(text).split())
    return text.replace(CONTEXT_OPEN, "").replace(CONTEXT_CLOSE, "")


def _wrap(header: str, lines: list[str]) -> str:
    from brainbox.cli.hookmap import CONTEXT_CLOSE, CONTEXT_OPEN

    return "\n".join([CONTEXT_OPEN, header, *lines, CONTEXT_CLOSE])


def format_suggestions(items: list[dict], tools: list[str], max_chars: int):
    """The prompt's injected block, at most `max_chars`: (text, the items it lists)."""
    header = "brainbox memory, files past sessions used for work like this (observations):"
    items = list(items)
    tail = [f"next tool: {_clean_line(tools[0])}"] if tools else []
    while items:
        lines = [f"- {_clean_line(it['path'])} — {_clean_line(it['why'])}" for it in items]
        text = _wrap(header, lines + tail)
        if len(text) <= max_chars:
            return text, items
        items.pop()
    return "", []


def format_start(items: list[dict], max_chars: int):
    """The SessionStart block within `max_chars` (the token budget times 4)."""
    header = "brainbox memory, this project's most used files (observations):"
    lines, kept = [], []
    for it in items:
        line = f"- {_clean_line(it['path'])} — {_clean_line(it['why'])}"
        if len(_wrap(header, lines + [line])) > max_chars:
            break
        lines.append(line)
        kept.append(it)
    return (_wrap(header, lines), kept) if lines else ("", [])


# --------------------------------------------------------------------------- feedback


PENDING_BATCHES = 50  # per session, the newest kept
PENDING_MAX_BYTES = 256 << 10  # past this the pending file is cut to its newest batches


def _session_file(session: str) -> str:
    """`sessions/<id>.jsonl`: the id itself when it is a plain name (Claude's and Codex's
    are UUIDs), else a hash of it (hashlib costs ~5 ms of import on the prompt path). The
    same name with `.json` is the previous format (one object), still read at Stop."""
    if 0 < len(session) <= 80 and session.replace("-", "").replace("_", "").isalnum() \
            and session.isascii():
        name = session
    else:
        import hashlib

        name = "h-" + hashlib.sha1(session.encode("utf-8", "replace")).hexdigest()[:24]
    return os.path.join(paths.home(), "sessions", f"{name}.jsonl")


def remember(session: str, batch: dict) -> None:
    """Append one prompt's suggestions to the session's pending file (one write)."""
    path = _session_file(session)
    line = (json.dumps(batch, ensure_ascii=False) + "\n").encode("utf-8", "replace")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    try:
        fd = os.open(path, flags, 0o600)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, flags, 0o600)
    try:
        os.write(fd, line)
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if size > PENDING_MAX_BYTES:
        _trim_pending(path)


def _trim_pending(path: str) -> None:
    """Keep the newest PENDING_BATCHES lines (rare: a long session with no Stop)."""
    with open(path, "rb") as fh:
        lines = fh.read().splitlines(keepends=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as fh:
        fh.writelines(ln for ln in lines[-PENDING_BATCHES:] if ln.endswith(b"\n"))
    os.replace(tmp, path)


def _read_pending(path: str, legacy: bool) -> list:
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    if legacy:  # the previous format, `.json`: {"session", "batches": [...]}
        try:
            data = json.loads(text)
        except ValueError:
            return []
        batches = data.get("batches") if isinstance(data, dict) else None
        return batches if isinstance(batches, list) else []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line torn by a crash
    return out


def take_pending(session: str) -> list[dict]:
    """Claim (rename) and read the session's pending suggestions; [] when none."""
    path = _session_file(session)
    batches: list = []
    for name in (path[:-1], path):  # the previous `.json`, then `.jsonl`
        claimed = f"{name}.scoring.{os.getpid()}"
        try:
            os.rename(name, claimed)
        except OSError:
            continue
        try:
            batches.extend(_read_pending(claimed, legacy=name != path))
        except OSError:
            pass
        finally:
            _safe(os.unlink, claimed)
    return [b for b in batches[-PENDING_BATCHES:] if isinstance(b, dict) and b.get("items")]


def _on_stop(ev: dict, guard) -> None:
    from brainbox.storage import db as dbmod

    from brainbox.events import normalize
    from brainbox.feedback import score

    batches = take_pending(ev["session"])
    if batches:
        conn = guard.conn or dbmod.connect()
        try:
            start = min(int(b.get("after_id") or 0) for b in batches)
            events = dbmod.session_events(conn, ev["session"], after=start)
        finally:
            if conn is not guard.conn:
                conn.close()
        by_project: dict[str, list[dict]] = {}
        for b in batches:
            by_project.setdefault(b.get("project") or ev["project"], []).append(b)
        feedback = []
        for project, group in by_project.items():
            items, reward = score(group, events)
            feedback.append(normalize({
                "session": ev["session"], "cwd": project, "project": project,
                "kind": "feedback", "at": ev["at"],
                "meta": {"op": "feedback", "items": items, "reward": reward,
                         "suggestions": len(group)},
            }))
        record(feedback, guard)
        fold(guard)


def fold(guard) -> None:
    """Fold the log forward: through the daemon when one runs, else in-process."""
    if guard.service is not None:  # running inside the daemon
        guard.service.handle({"op": "sync"})
        return

    from brainbox.cli import daemon

    if enabled("daemon") and guard.daemon_state not in ("absent", "timeout"):
        answer = daemon.request({"op": "sync", "db": paths.db_path()},
                                timeout=max(0.01, guard.remaining() - 0.05))
        if answer is not None and answer.get("ok"):
            return
    if guard.remaining() < 0.3:
        return
    service = daemon.Service(autosave=True)
    try:
        service.op_sync({})
    finally:
        _safe(service.close)


# --------------------------------------------------------------------------- spool


def spool_dir() -> str:
    return os.path.join(paths.home(), "spool")


class UnsafeSpool(OSError):
    """The spool folder is a symlink, not a folder, or not ours: never written or read."""


def _spool_folder(create: bool = True) -> str:
    """The spool folder, checked: a real folder (never a symlink: another user's planted
    link received the events, report D8), ours, mode 0700; created so when missing."""
    from brainbox.storage import files

    d = spool_dir()
    if create:
        files.private_dir(paths.home(), what="brainbox home", tighten=True)
    elif not os.path.lexists(d):
        raise FileNotFoundError(d)
    why = files.strict_dir(d)
    if why:
        raise UnsafeSpool(f"spool refused: {why}")
    return d


def spool_write(events: list[dict]) -> str | None:
    """Keep events that could not be committed: one 0600 file, written then renamed; None
    when the spool is full. Raises OSError (or StoreError) when it cannot be written."""
    from brainbox.storage import files

    d = _spool_folder()
    if len(os.listdir(d)) >= SPOOL_MAX_FILES:
        log_failure("", "", f"spool full ({SPOOL_MAX_FILES} files); {len(events)} events lost")
        return None
    name = os.path.join(d, f"{time.time_ns():020d}-{os.getpid()}.jsonl")
    tmp = name + ".tmp"
    data = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events)
    fd = files.open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        try:
            view = memoryview(data.encode("utf-8", "replace"))
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, name)
    except BaseException:
        _safe(os.unlink, tmp)  # a full disk leaves no half-written file behind
        raise
    return name


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def drain_spool(conn, lock=None, until: float | None = None) -> int:
    """Append spooled events (oldest first) and delete their files; returns the count.
    A file is claimed by renaming it, so two drainers never append it at once; a claim left
    by a process that died (or by this one, after a failure) is taken over, and appending
    it again stores nothing twice (each event's `uid`). A file the database refuses for
    what it holds (an exit code beyond int64, a missing field) is stored event by event,
    and what still fails moves to `spool/bad/` with its reason logged once; when the
    database itself fails (locked, full, read-only) the file is put back and the drain
    stops. `until` (monotonic) bounds a hook's drain. Never raises for a spool file."""
    try:
        d = _spool_folder(create=False)
        names = sorted(os.listdir(d))
    except Exception:  # noqa: BLE001 - missing, unsafe (refused), unreadable
        return 0
    total = 0
    me = os.getpid()
    for name in names:
        if until is not None and time.monotonic() > until:
            break
        if ".jsonl.claimed." in name:
            try:
                owner = int(name.rsplit(".", 1)[1])
            except ValueError:
                continue
            if owner != me and _alive(owner):
                continue
        elif not name.endswith(".jsonl"):
            if name.endswith(".tmp"):  # being written, or left by a process that was killed
                _safe(_unlink_if_old, os.path.join(d, name))
            continue
        base = name.split(".claimed.")[0]
        claimed = os.path.join(d, f"{base}.claimed.{me}")
        with lock or _NOLOCK:  # a hook's watchdog waits: append + unlink stay together
            try:
                os.rename(os.path.join(d, name), claimed)
            except OSError:
                continue
            try:
                total += _ingest(conn, claimed, base)
            except _DatabaseDown:
                _safe(os.rename, claimed, os.path.join(d, base))  # for a later drain
                break
            except Exception:  # noqa: BLE001 - unreadable, or no room to quarantine: the
                # file goes back and is retried (what it stored is not stored twice)
                _safe(os.rename, claimed, os.path.join(d, base))
    return total


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NOLOCK = _NoLock()


class _DatabaseDown(Exception):
    """The database failed, not the file: it stays for a later drain."""


def _database_failed(exc: BaseException) -> bool:
    """A failure of the database (locked, busy, full, read-only, corrupt: sqlite3's and
    sqlean's OperationalError and plain DatabaseError, or brainbox's StoreError), as
    opposed to one of the events (OverflowError, IntegrityError, TypeError, ...)."""
    return type(exc).__name__ in ("OperationalError", "DatabaseError", "StoreError")


def _from_raw(raw: dict) -> list[dict]:
    """Events of a raw payload spooled by an older version (before mapping existed there)."""
    from brainbox.cli.hookmap import payload_to_records

    from brainbox.recorder import normalize_many

    records = payload_to_records(raw.get("agent") or "", raw.get("payload"), raw.get("event"))
    for r in records:
        if r.get("at") is None:
            r["at"] = raw.get("at")
    return normalize_many(records)[0]


def _unlink_if_old(path: str, age: float = 60.0) -> None:
    if time.time() - os.path.getmtime(path) > age:
        os.unlink(path)


def _ingest(conn, claimed: str, base: str) -> int:
    """Append one claimed spool file, then delete it (see `drain_spool`)."""
    from brainbox.storage import db as dbmod

    events, bad = [], []
    with open(claimed, encoding="utf-8", errors="replace") as fh:
        for no, line in enumerate(fh, start=1):
            try:
                e = json.loads(line)
                if isinstance(e, dict) and isinstance(e.get("raw"), dict):
                    got = _from_raw(e["raw"])
                elif isinstance(e, dict) and all(k in e for k in ("at", "session", "project",
                                                                    "kind")):
                    got = [e]
                else:
                    got = []
            except Exception as exc:  # noqa: BLE001 - a torn or foreign line
                if line.strip():
                    bad.append((line, f"line {no}: {type(exc).__name__}: {exc}"))
                continue
            for k, ev in enumerate(got):
                if not ev.get("uid"):  # an older hook's file: an id from its name and place
                    ev["uid"] = f"{base}:{no}:{k}"
                events.append(ev)
    stored = 0
    if events:
        try:
            dbmod.append_events(conn, events)
            stored = len(events)
        except Exception as exc:  # noqa: BLE001
            if _database_failed(exc):
                raise _DatabaseDown(str(exc)) from exc
            for ev in events:  # one at a time: the others are stored
                try:
                    dbmod.append_events(conn, [ev])
                    stored += 1
                except Exception as exc1:  # noqa: BLE001
                    if _database_failed(exc1):
                        raise _DatabaseDown(str(exc1)) from exc1
                    bad.append((json.dumps(ev, ensure_ascii=False, default=str) + "\n",
                                f"{type(exc1).__name__}: {exc1}"))
    if bad:
        _quarantine(claimed, base, bad)
    os.unlink(claimed)
    return stored


def _quarantine(claimed: str, base: str, bad: list[tuple[str, str]]) -> None:
    """Keep what the database refused in `spool/bad/<file>` (0600), logged once."""
    from brainbox.storage import files

    folder = os.path.join(os.path.dirname(claimed), "bad")
    why = files.strict_dir(folder)
    if why:
        raise UnsafeSpool(f"quarantine refused: {why}")
    path = os.path.join(folder, base)
    fd = files.open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, "".join(line for line, _ in bad).encode("utf-8", "replace"))
    finally:
        os.close(fd)
    log_failure("", "", f"spool {base}: {len(bad)} event(s) quarantined to spool/bad/{base}:"
                f" {bad[0][1]}")


# --------------------------------------------------------------------------- log


def log_failure(agent, event, what: str, exc: BaseException | None = None) -> None:
    """Append one entry (with the traceback) to hook-errors.log (0600, never through a
    symlink: `storage.files.open_private`); never raises. When the log cannot be written
    (refused, read-only home, full disk) the entry goes to `$XDG_RUNTIME_DIR`, if that is
    a private folder of ours (`_fallback_log`)."""
    entry = ""
    try:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
        entry = f"=== {stamp} pid={os.getpid()} agent={agent} event={event}: {what[:500]}\n"
        if exc is not None:
            import traceback

            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            entry += tb[-4000:]
        _append_log(os.path.join(paths.home(), LOG_NAME), entry, rotate=True)
    except BaseException as why:  # noqa: BLE001
        _safe(_fallback_log, entry, why)


def _append_log(path: str, entry: str, rotate: bool) -> None:
    import stat as _stat

    from brainbox.storage import files

    files.private_dir(os.path.dirname(path), what="brainbox home", tighten=True)
    if rotate:
        try:
            st = os.lstat(path)
            if _stat.S_ISREG(st.st_mode) and st.st_size > LOG_MAX:
                os.replace(path, path + ".1")
        except OSError:
            pass
    fd = files.open_private(path)
    try:
        os.write(fd, entry.encode("utf-8", "replace"))
    finally:
        os.close(fd)


def _fallback_log(entry: str, why: BaseException) -> None:
    """The entry, and why the home's log refused it, in `$XDG_RUNTIME_DIR/brainbox-hook-
    errors.log`: only when that folder is a real one of ours, mode 0700 (the XDG rule);
    otherwise nowhere (writing beside a planted symlink is what must not happen)."""
    path = fallback_log_path()
    if path is None:
        return
    try:
        if os.path.getsize(path) > LOG_MAX:
            return  # bounded: the first entries say what went wrong
    except OSError:
        pass
    note = f"(hook-errors.log in {paths.home()} not written: {type(why).__name__}: {why})\n"
    _append_log(path, entry + note, rotate=False)


def fallback_log_path() -> str | None:
    """`$XDG_RUNTIME_DIR/brainbox-hook-errors.log` when that folder is a private one of ours
    (where entries go that the home's log refused), else None."""
    from brainbox.storage import files

    run = os.environ.get("XDG_RUNTIME_DIR")
    if not run or not os.path.isabs(run) or not os.path.isdir(run) or \
            files.strict_dir(run) is not None:
        return None
    return os.path.join(run, "brainbox-" + LOG_NAME)


def last_errors(n: int = 5) -> list[str]:
    """The newest `n` entries of hook-errors.log and of the fallback log (for `brainbox
    doctor`), oldest first; an entry starts with its local time, so they sort by it."""
    entries = []
    for path in (os.path.join(paths.home(), LOG_NAME), fallback_log_path()):
        if path is None:
            continue
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                fh.seek(max(0, os.path.getsize(path) - 64_000))
                text = fh.read()
        except OSError:
            continue
        entries += [e for e in text.split("=== ")[1:] if e.strip()]
    entries.sort(key=lambda e: e[:19])  # stable: one log's order is kept within a second
    return [e.rstrip()[:2000] for e in entries[-n:]]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
