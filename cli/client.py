"""The daemon's standard-library client: trusted connect, one request, spawn, status and
stop, and the hooks' handoff of a whole event (the protocol is `wire`'s).

Why a daemon: a prompt hook is a fresh process, and importing numpy, scipy and the numba
kernels costs about a second (DESIGN §8), far over the prompt budget. The daemon keeps one
`Memory` open and answers over a Unix socket; this side of it is `_socket` + `json` only.

Choices:
- The socket is `brainbox.paths.socket_path()` (`$BRAINBOX_HOME/daemon.sock`, or a private
  folder when that path is too long for `sun_path`). In the trial (D3) another user
  pre-created the fallback folder 0777, replaced the socket with its own, read the raw
  prompt and wrote the hook's output. The client (`trusted_connect`, also the hooks'
  handoff) checks the folder and the socket file with `lstat` before connecting and the
  peer's uid (`SO_PEERCRED`) after: an answer from any other uid is never read.
- One daemon per BRAINBOX_HOME: `daemon.lock` is held with `fcntl.flock` for the daemon's
  life (the kernel drops it when the process dies, so a crash never leaves a stale lock).
- Stale socket: a client that cannot connect takes the lock without blocking; if it gets
  it, no daemon is alive, so it unlinks the socket file and starts one. A spawn marker
  (`daemon.spawn`, 15 s) keeps a burst of hooks from starting many.
- Every file written here (`daemon.log`, `daemon.spawn`, the lock) is opened with
  `O_NOFOLLOW` and left 0600 whatever the umask (`brainbox.store`): a symlink planted in
  the home is refused, never followed (D8, D15).

Record handoff (`handoff` with `ack_wait`, the `record` op): a tool call's hook waits
RECORD_ACK_WAIT at most for the receipt, which the daemon sends once the event is
committed; without it in time (no daemon, a busy or wedged one) the hook records the
event itself under the same `uid`, so a late commit of the daemon's stores nothing twice.

Handoff (`handoff`): a hook sends its raw payload in one `hook` request and prints the
line the daemon returns. If the acknowledgement has not come in time (the daemon is busy
or wedged, leaving `HANDOFF_RESERVE` of the budget), the hook shuts the socket's reading
side, reads what is already queued, and records locally only if no acknowledgement is
there: after the shutdown the daemon's send of one fails, and a daemon whose
acknowledgement fails does nothing.
"""

from __future__ import annotations

# The C module, not `socket`: the client is on the prompt hook's path, and `socket.py`
# costs ~9 ms of enum building at import; `_socket.socket` has every method used here.
# Nothing else beyond the standard library's cheapest modules is imported at module level
# (not pathlib, not brainbox.store's database half: sqlite3): the prompt hook imports this.
import _socket
import errno
import json
import os
import sys
import time

from brainbox import paths
from brainbox.cli import wire

TYPE_CHECKING = False  # `typing` is not imported at run time, for the same reason
if TYPE_CHECKING:
    from pathlib import Path

LOCK_NAME = "daemon.lock"
INFO_NAME = "daemon.json"
LOG_NAME = "daemon.log"
SPAWN_NAME = "daemon.spawn"
SPAWN_GUARD = 15.0
LOG_MAX = 1 << 20
HANDOFF_RESERVE = 0.3  # of the budget, kept to record locally when the daemon never takes it
RECORD_ACK_WAIT = 0.025  # a tool call's wait for its receipt ($BRAINBOX_RECORD_ACK_MS)
HANDOFF_RX = 1 << 16  # the receipt's buffer (or a refusal's line), shared with the watchdog


# --------------------------------------------------------------------------- connect


def socket_problem(path: str) -> str | None:
    """Why a socket path cannot be trusted before connecting (lstat only: microseconds),
    or None. Its folder must be ours (a home may be a symlink to a folder of ours; any
    other folder may not) and writable by nobody else; the socket file ours."""
    folder = os.path.dirname(path)
    try:
        st = os.lstat(folder)
        if (st.st_mode & 0o170000) == 0o120000:
            if os.path.basename(path) != paths.SOCK_NAME:  # only a home may be a symlink
                return f"{folder} is a symlink"
            st = os.stat(folder)
    except OSError as exc:
        return f"{folder}: {exc.strerror}"
    if st.st_uid != os.geteuid():
        return f"{folder} belongs to uid {st.st_uid}"
    if st.st_mode & 0o022:
        return f"{folder} is writable by others"
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    if (st.st_mode & 0o170000) != 0o140000:
        return f"{path} is not a socket"
    if st.st_uid != os.geteuid():
        return f"{path} belongs to uid {st.st_uid}"
    return None


def trusted_connect(s, path: str) -> None:
    """`s.connect(path)` to a daemon of ours, or an OSError: a refused path raises
    PermissionError before connecting, a peer of another uid (`SO_PEERCRED`, Linux) after
    it, with nothing sent or read. The hooks' handoff calls this in place of connect."""
    problem = socket_problem(path)
    if problem:
        raise PermissionError(errno.EPERM, f"untrusted daemon socket: {problem}")
    s.connect(path)
    peercred = getattr(_socket, "SO_PEERCRED", None)
    if peercred is None:  # not Linux: the lstat checks above are what we have
        return
    cred = s.getsockopt(_socket.SOL_SOCKET, peercred, 12)  # struct ucred: pid, uid, gid
    uid = int.from_bytes(cred[4:8], sys.byteorder)
    if uid != os.geteuid():
        raise PermissionError(errno.EPERM, f"untrusted daemon socket: {path} is served by "
                                           f"uid {uid}")


# --------------------------------------------------------------------------- client


def request(req: dict, timeout: float = 1.0, home: Path | None = None) -> dict | None:
    """Send one request; the decoded answer, or None when no daemon answered in time."""
    deadline = time.monotonic() + max(0.001, timeout)
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(max(0.001, timeout))
        trusted_connect(s, paths.socket_path(home))
        s.sendall(wire.encode(req))
        buf = bytearray()
        while not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            s.settimeout(left)
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
            if len(buf) > wire.MAX_LINE * 8:
                return None
        answer = json.loads(bytes(buf))
        return answer if isinstance(answer, dict) else None
    except (OSError, ValueError):
        return None
    finally:
        s.close()


def call(op: str, timeout: float = 1.0, home: Path | None = None, **fields):
    """`request` for one op: the result, or None (no daemon, timeout, or an error)."""
    answer = request({"op": op, "db": paths.db_path(), **fields}, timeout, home)
    if answer and answer.get("ok"):
        return answer.get("result")
    return None


def lock_free(home: Path) -> bool:
    """True when no process holds the daemon lock (so no daemon is alive or starting)."""
    import fcntl

    from brainbox.store import StoreError, open_private

    try:
        fd = open_private(os.path.join(home, LOCK_NAME), os.O_RDWR | os.O_CREAT)
    except (OSError, StoreError):
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    return True


def spawn(home: Path | None = None, force: bool = False) -> bool:
    """Start a detached daemon unless one is alive or was started moments ago, or its
    home or socket folder is unsafe (then the reason goes to daemon.log, if it can)."""
    from pathlib import Path

    from brainbox import store

    home = Path(home if home is not None else paths.home())
    try:
        store.private_dir(home, what="home", tighten=True)
    except store.StoreError:
        return False
    try:  # held until the daemon is started: concurrent spawners take turns (`_spawn`)
        marker = store.open_private(home / SPAWN_NAME, os.O_RDWR | os.O_CREAT)
    except (OSError, store.StoreError):
        return False  # a marker we may not write (a planted symlink): no daemon
    try:
        return _spawn(home, marker, force)
    finally:
        os.close(marker)  # releases its flock


def _spawn(home, marker: int, force: bool) -> bool:
    """`spawn` under the marker's flock. The marker holds the last spawner's pid and its
    mtime says when: a hook that finds it younger than SPAWN_GUARD starts nothing, so
    fifty hooks that find no daemon at once start one (checked and written under the
    lock: without it two could both find it old, tests/test_daemon_limits.py)."""
    import fcntl
    import subprocess

    from brainbox import store

    fcntl.flock(marker, fcntl.LOCK_EX)
    st = os.fstat(marker)
    if not force and st.st_size and time.time() - st.st_mtime < SPAWN_GUARD:
        return False
    log = home / LOG_NAME
    try:
        if log.lstat().st_size > LOG_MAX:
            os.replace(log, log.with_suffix(".log.1"))
    except OSError:
        pass
    try:
        out = os.fdopen(store.open_private(log), "ab")
    except (OSError, store.StoreError):
        return False  # a log we may not write (a planted symlink): no daemon, no log
    with out:
        os.ftruncate(marker, 0)
        os.pwrite(marker, str(os.getpid()).encode(), 0)
        path = paths.socket_path(home)
        if os.path.dirname(path) != os.path.abspath(home):
            problem = folder_problem(path)
            if problem:
                _log(out, f"refusing to start: socket folder {problem}; hooks work in-process")
                return False
        if not lock_free(home):
            return False
        try:
            os.unlink(path)  # stale: nobody holds the lock
        except OSError:
            pass
        subprocess.Popen(
            [sys.executable, "-m", "brainbox.cli.daemon", "--serve"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out,
            start_new_session=True, close_fds=True, cwd=str(home),
        )
    return True


def folder_problem(path: str) -> str | None:
    """The fallback socket folder (not the home): made 0700 here, or why it is refused."""
    folder = os.path.dirname(path)
    if paths.private_runtime(folder):
        return None
    from brainbox.store import strict_dir

    return strict_dir(folder)


def _log(out, line: str) -> None:
    out.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} brainbox daemon: {line}\n".encode())
    out.flush()


def _lock_pid(home: Path) -> int | None:
    """The pid the daemon wrote into its lock file when it took the lock."""
    try:
        with open(os.path.join(home, LOCK_NAME), encoding="utf-8") as fh:
            return int(fh.read().strip() or 0) or None
    except (OSError, ValueError):
        return None


def status(home: Path | None = None) -> dict:
    from pathlib import Path

    home = Path(home if home is not None else paths.home())
    info = {"running": False, "socket": paths.socket_path(home), "pid": None, "db": None}
    answer = request({"op": "ping"}, 1.0, home)
    if answer and answer.get("ok"):
        info.update(running=True, **answer["result"])
        return info
    info["starting"] = home.exists() and not lock_free(home)
    try:
        info["pid"] = json.loads((home / INFO_NAME).read_text()).get("pid")
    except (OSError, ValueError):
        pass
    return info


def stop(home: Path | None = None, wait: float = 10.0) -> dict:
    """Ask the daemon to exit; SIGTERM its pid if it does not within `wait` seconds."""
    import signal
    from pathlib import Path

    home = Path(home if home is not None else paths.home())
    before = status(home)
    if not before["running"] and not before.get("starting"):
        return {"stopped": False, "was_running": False}
    pid = before.get("pid") or _lock_pid(home)
    if before["running"]:
        request({"op": "stop"}, 2.0, home)
    elif pid:  # still warming up: it has no socket yet, and SIGTERM ends it at once
        try:
            os.kill(int(pid), signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if lock_free(home):
            return {"stopped": True, "was_running": True, "pid": pid}
        time.sleep(0.05)
    if pid:
        try:
            os.kill(int(pid), signal.SIGTERM)
        except OSError:
            pass
        time.sleep(0.5)
    return {"stopped": lock_free(home), "was_running": True, "pid": pid, "forced": True}



# --------------------------------------------------------------------------- handoff


def handoff(data: bytes, path: str, guard,
            ack_wait: float | None = None) -> tuple[bool, str | None]:
    """Send one `hook` (or `record`) request; see the module docstring for who records.
    `ack_wait`: seconds from now for the receipt at most (a `record`'s)."""
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    rx = bytearray(HANDOFF_RX)
    state = {"taken": False, "output": None}
    try:
        left = guard.remaining()
        ack_by = guard.deadline - min(HANDOFF_RESERVE, 0.5 * max(0.0, left))
        if ack_wait is not None:
            ack_by = min(ack_by, time.monotonic() + ack_wait)
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
                if not state["taken"] and daemon_took(s, rx):
                    state["taken"] = True  # queued before we shut the reading side
                    guard.committed, guard.outcome = True, "handed to the daemon"
                guard.sock = None
        s.close()
    if not state["taken"] and guard.daemon_state is None:
        guard.daemon_state = "timeout"
    return state["taken"], state["output"]


def _exchange(s, data: bytes, rx: bytearray, ack_by: float, guard, state: dict) -> None:
    """Send the request, read the receipt (then the hook is the daemon's) and the answer."""
    s.sendall(data)
    # the first line goes into `rx`, where the watchdog looks too (`daemon_took`)
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
    if not rx.startswith(wire.ACK):  # an error (another database, an older daemon)
        guard.daemon_state = "refused"
        return
    with guard.lock:
        state["taken"] = True
        guard.committed = True  # the watchdog must not spool it too
        guard.outcome = "handed to the daemon"
    buf = bytearray(view[len(wire.ACK):pos])
    answer_by = guard.hard_deadline - 0.005
    while b"\n" not in buf:
        left = answer_by - time.monotonic()
        if left <= 0 or len(buf) > 8 * wire.MAX_LINE:
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


def record_ack_wait() -> float:
    """RECORD_ACK_WAIT, or `$BRAINBOX_RECORD_ACK_MS` (milliseconds, 1 at least)."""
    given = os.environ.get("BRAINBOX_RECORD_ACK_MS")
    try:
        return max(0.001, float(given) / 1000) if given else RECORD_ACK_WAIT
    except ValueError:
        return RECORD_ACK_WAIT


def daemon_took(s, rx) -> bool:
    """Settle a handoff this process is giving up on: shut the reading side (the daemon's
    receipt can no longer be sent), then look for one sent before. The peek comes before
    the buffer check: a concurrent read by the main thread has copied the receipt into
    `rx` by the time the kernel stops showing it (both hold the socket's read lock)."""
    try:
        s.shutdown(_socket.SHUT_RD)
    except OSError:
        pass
    try:
        s.setblocking(False)
        peek = s.recv(len(wire.ACK), _socket.MSG_PEEK)
    except OSError:
        peek = b""
    return peek == wire.ACK or (rx is not None and rx.startswith(wire.ACK))


