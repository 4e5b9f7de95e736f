"""The resident daemon (`brainbox serve`): one `Memory` kept open (state, CSR, jitted
kernels warm), its operations (`service.Service`) answered over a Unix socket. The
protocol is `wire`'s; the standard-library client (the hooks' side) is `client`.

Choices:
- One daemon per BRAINBOX_HOME: `daemon.lock` is held with `fcntl.flock` for the daemon's
  life (the kernel drops it when the process dies, so a crash never leaves a stale lock).
  A second `serve` finds the lock held and exits 0 at once.
- The socket is `brainbox.paths.socket_path()`: `$BRAINBOX_HOME/daemon.sock`; when that
  path is too long for `sun_path` (108 bytes, deep temporary folders reach it) it is
  `$XDG_RUNTIME_DIR/brainbox-<hash>.sock` when that folder is ours, not a symlink and
  0700, else `/tmp/brainbox-<uid>/<hash>.sock`. In the trial (D3) another user
  pre-created that folder 0777, replaced the socket with its own, read the raw prompt and
  wrote the hook's output. Now `serve` makes it with a plain `mkdir` 0700 and, when it
  exists, `lstat` must show a real folder of ours with mode 0700 (`brainbox.store.
  strict_dir`); else the daemon logs why and does not start, and the hooks work
  in-process. The client checks the socket before connecting and the peer after
  (`client.trusted_connect`).
- Every file the daemon writes (`daemon.log`, `daemon.json`, `daemon.spawn`, the lock) is
  opened with `O_NOFOLLOW` and left 0600 whatever the umask (`brainbox.store`): a symlink
  planted in the home is refused, never followed (D8, D15). The home itself must be ours
  and not writable by others.
- The daemon binds only after it is warm (state loaded, kernels compiled or loaded from
  the numba cache), so a client that connects gets a fast answer; before that the client
  sees no daemon and works in-process.
- Connections are served concurrently, a thread each (at most MAX_CONNECTIONS; more are
  closed at once and those clients work in-process), and one lock guards the Memory, so
  requests run one at a time but reading them does not. Each request must arrive whole
  within `wire.REQUEST_DEADLINE` (trial D14).
- At start, before it warms up or writes anything, the daemon runs `PRAGMA quick_check`
  on its database (10-42 ms per 10,000 events): a damaged file stops it with a logged
  one-line reason.
- Once bound, a background thread keeps the code indexes current from the edits in the
  event log (`reindexer`, `brainbox.reindex`): off the request path, with its own
  connection, a bounded batch per tick; woken when a request folded new events, else every
  `BRAINBOX_REINDEX_EVERY` seconds (default 2). It does not count as activity: the idle
  exit is unchanged.
- It exits after `BRAINBOX_DAEMON_IDLE` seconds without a request (default 1800; or
  config.json's `daemon_idle`), on SIGTERM/SIGINT, on `stop`, or when its resident memory
  (`/proc/self/statm`; the peak from `resource` where there is no /proc) is over
  `BRAINBOX_DAEMON_MAX_RSS_MB` (default 2048; `daemon_max_rss_mb`): checked after every
  answered request and every RSS_EVERY seconds, logged, and then it stops accepting
  connections and exits once the requests in hand are answered; the next hook that finds
  no daemon starts a fresh one. A warm daemon over an empty memory holds about 190 MB.
- One daemon process at a time: the spawner is serialised (`client.spawn`), the lock is
  released last, and the process then ends with `os._exit` (no interpreter finalisation
  after the lock is free, while a fresh daemon may already be starting).
"""

from __future__ import annotations

import errno
import json
import os
import sys
import time

from brainbox import paths
from brainbox.cli import client, hookconf, wire
from brainbox.cli.service import Service, rss_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

DEFAULT_IDLE = 1800.0
DEFAULT_MAX_RSS_MB = 2048.0
RSS_EVERY = 30.0  # seconds between the idle loop's memory checks (requests check after each)
DRAIN_WAIT = 30.0  # at exit, for the connections in hand to be answered
SAVE_AFTER_IDLE = 5.0
MAX_CONNECTIONS = 32


def idle_seconds() -> float:
    try:
        return max(1.0, float(hookconf.config("daemon_idle", DEFAULT_IDLE)))
    except (TypeError, ValueError):
        return DEFAULT_IDLE


def max_rss_bytes() -> int:
    """The memory ceiling: `BRAINBOX_DAEMON_MAX_RSS_MB` / `daemon_max_rss_mb` MiB."""
    try:
        mb = float(hookconf.config("daemon_max_rss_mb", DEFAULT_MAX_RSS_MB))
    except (TypeError, ValueError):
        mb = DEFAULT_MAX_RSS_MB
    return int((mb if mb > 0 else DEFAULT_MAX_RSS_MB) * (1 << 20))


def over_ceiling(service: Service, ceiling: int) -> bool:
    """True (and the daemon told to stop, with a line in daemon.log) once it holds more
    than `ceiling` bytes; the requests in hand are answered first (`serve`)."""
    if service.stop_requested or not ceiling:
        return service.over_ceiling
    rss = rss_bytes()
    if rss <= ceiling:
        return False
    service.over_ceiling = True
    service.stop_requested = True
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} brainbox daemon: resident memory "
          f"{rss >> 20} MiB is over the ceiling of {ceiling >> 20} MiB "
          f"(BRAINBOX_DAEMON_MAX_RSS_MB); exiting once the requests in hand are answered",
          file=sys.stderr, flush=True)
    return True



def serve(home: Path | None = None, idle: float | None = None, warm: bool = True) -> int:
    """Run the daemon in this process until idle, stopped or signalled. Returns 0, 3
    when another daemon already serves this home, or 1 when it refuses to start (an
    unsafe home or socket folder, a damaged database: the reason is on stderr, which is
    daemon.log for a detached daemon)."""
    import fcntl
    import selectors
    import signal
    import threading
    from pathlib import Path

    from brainbox import store

    home = Path(home if home is not None else paths.home())
    try:
        store.private_dir(home, what="home", tighten=True)
        lock_fd = store.open_private(home / client.LOCK_NAME, os.O_RDWR | os.O_CREAT)
    except (OSError, store.StoreError) as exc:
        return _refuse(f"{exc}")
    idle = idle_seconds() if idle is None else idle
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock_fd)
        return 3
    os.ftruncate(lock_fd, 0)
    os.write(lock_fd, str(os.getpid()).encode())
    path = paths.socket_path(home)
    if os.path.dirname(path) != os.path.abspath(home):
        problem = client.folder_problem(path)
        if problem:
            os.close(lock_fd)
            return _refuse(f"socket folder {problem}")
    service = Service()
    try:
        store.quick_check(service.memory().conn)
    except Exception as exc:  # noqa: BLE001 - StoreError, BrainboxError: a one-line reason
        if service.mem is not None:
            service.mem.close()
        os.close(lock_fd)
        return _refuse(f"{exc}")
    listener = None
    reindexer = None
    info = home / client.INFO_NAME
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
    service.ceiling = ceiling = max_rss_bytes()

    def on_signal(signum, frame):
        service.stop_requested = True

    old = {}
    try:
        from brainbox import jitmode

        compiled = jitmode.mode() == "numba"
        # Python because the cache was cold (not because BRAINBOX_JIT/NUMBA_DISABLE_JIT say so)
        cold = not compiled and not jitmode.is_warm()
        if warm:  # SIGTERM keeps its default action here: it ends a warming daemon at once
            service.refresh()
            service.save()
            if compiled:  # in Python mode there is nothing to compile
                from brainbox.warm import warmup

                warmup()
            try:  # compile the recall path on this memory's shapes too
                service.op_suggest({"query": "warm up", "project": "/"})
            except Exception:  # noqa: BLE001, S110 - warming only: the first request compiles
                pass
        old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            os.unlink(path)
        except OSError:
            pass
        import socket

        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)  # the socket is 0600 from the moment it exists
        try:
            listener.bind(path)
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        listener.listen(64)
        listener.setblocking(False)
        store.write_private(info, json.dumps({"pid": os.getpid(), "socket": path,
                                              "db": service.db,
                                              "started": service.started}).encode())
        from brainbox.cli.reindexer import Reindexer

        reindexer = Reindexer(service.db)
        reindexer.start()
        service.on_folded = reindexer.wake
        sel = selectors.DefaultSelector()
        sel.register(listener, selectors.EVENT_READ)
        service.last = checked = time.monotonic()
        while not service.stop_requested:
            now = time.monotonic()
            if now - checked > RSS_EVERY:
                checked = now
                if over_ceiling(service, ceiling):
                    break
            quiet = now - service.last
            if quiet > idle and not service.active:
                break
            if cold and quiet > SAVE_AFTER_IDLE and not service.active and jitmode.is_warm():
                break  # the background warm-up is done: the next daemon runs compiled
            if service.dirty and quiet > SAVE_AFTER_IDLE and not service.active:
                with service.lock:
                    service.save()
            if not sel.select(timeout=min(1.0, max(0.05, idle - quiet))):
                continue
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            service.last = time.monotonic()
            if not slots.acquire(blocking=False):
                conn.close()  # at capacity: that client works in-process
                continue
            threading.Thread(target=serve_slot, args=(service, conn, slots),
                             daemon=True).start()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if listener is not None:  # no new connection: a hook that comes now works alone
            listener.close()
            try:
                if os.stat(path).st_ino and _is_socket(path):
                    os.unlink(path)
            except OSError:
                pass
        service.stop_requested = True
        if reindexer is not None:
            reindexer.stop()  # a tick in progress ends its file batch first
        drain_by = time.monotonic() + DRAIN_WAIT
        while service.active and time.monotonic() < drain_by:
            time.sleep(0.02)  # the requests in hand are answered; their loops then end
        try:
            if service.lock.acquire(timeout=30):  # let a request in progress finish
                service.close()
        finally:
            try:
                info.unlink()
            except OSError:
                pass
            os.close(lock_fd)  # releases the flock
    return 0


def _refuse(reason: str) -> int:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} brainbox daemon: refusing to start: "
          f"{reason}; hooks work in-process", file=sys.stderr, flush=True)
    return 1


def _is_socket(path: str) -> bool:
    import stat

    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def serve_slot(service: Service, conn, slots) -> None:
    with service.activity():
        try:
            serve_connection(service, conn)
        finally:
            slots.release()


def serve_connection(service: Service, conn) -> None:
    """Answer the requests of one connection (its own thread). Each request line must
    arrive whole within the deadline; the Memory is used under `service.lock`."""
    budget = wire.request_deadline()
    deadline = time.monotonic() + budget
    buf = bytearray()
    try:
        while not service.stop_requested:
            nl = buf.find(b"\n")
            if nl < 0:
                if len(buf) > wire.MAX_LINE:
                    _send(conn, {"ok": False, "error": "request too large"})
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    return  # too slow: a total deadline, whatever trickles in
                conn.settimeout(left)
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
                continue
            line, buf = bytes(buf[:nl]), buf[nl + 1:]
            if not line.strip():
                continue
            try:
                req = json.loads(line)
            except ValueError:
                answer = {"ok": False, "error": "not JSON"}
            else:
                conn.settimeout(budget)
                with service.lock:
                    service.last = time.monotonic()
                    answer = service.handle(req, ack=lambda: _send_ack(conn))
            if answer is None:  # the client gave up before the receipt: nothing was done
                return
            conn.settimeout(budget)
            _send(conn, answer)
            over_ceiling(service, service.ceiling)  # if over, this loop ends (stop_requested)
            deadline = time.monotonic() + budget
    except OSError as exc:
        if exc.errno not in (errno.EPIPE, errno.ECONNRESET, None):
            print(f"brainbox daemon: connection error: {exc}", file=sys.stderr)
    finally:
        conn.close()


def _send_ack(conn) -> bool:
    """Send the receipt; False when the client has shut its reading side or gone."""
    try:
        conn.sendall(wire.ACK)
        return True
    except OSError:
        return False


def _send(conn, answer: dict) -> None:
    conn.sendall(wire.encode(answer, default=str))


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m brainbox.cli.daemon")
    p.add_argument("--serve", action="store_true", help="run the daemon in the foreground")
    p.add_argument("--idle", type=float, default=None)
    args = p.parse_args(argv)
    if not args.serve:
        print(json.dumps(client.status()))
        return 0
    return serve(idle=args.idle)


if __name__ == "__main__":  # pragma: no cover - the detached daemon's entry
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # the lock is free: end now, not after finalising numba and numpy
