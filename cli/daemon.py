"""The resident daemon (`brainbox serve`) and its standard-library client.

Why a daemon: a prompt hook is a fresh process, and importing numpy, scipy and the numba
kernels costs about a second (DESIGN §8), far over the prompt budget. The daemon keeps one
`Memory` open (state, CSR, jitted kernels warm) and answers over a Unix socket; the hook's
side of it is `socket` + `json` only (this module's top half imports nothing else).

Protocol: JSON lines over `SOCK_STREAM`. A request is one object `{"op": ..., ...}` ending
in a newline; the answer is `{"ok": true, "result": ...}` or `{"ok": false, "error": msg}`.
A connection may carry several requests. Ops: `ping`, `recall`, `predict`, `suggest`
(the prompt hook's compact list), `start` (the SessionStart list), `sync` (alias `fold`),
`stats`, `stop`, and `hook` (below). Every request may name the database it means (`db`);
a daemon serving another file answers with an error, and the client falls back to working
in-process.

`hook`: a prompt, SessionStart or Stop hook hands its whole raw payload over
(`agent`, `event`, `payload`, `at`, the hook's `cwd`, its resolved `settings` and
`budget`). The daemon does what the hook would have done (map, normalise, record, recall,
remember the suggestions, score and fold at Stop: `hooks._dispatch` with this service in
place of the socket) and answers `{"output": <the line the hook prints, or null>}`.
Before doing anything it acknowledges with the line `{"ack": true}`: that line moves the
duty to record from the hook to the daemon. If sending it fails (the hook gave up and
shut its reading side, or exited) the daemon does nothing, and the hook records locally;
once it is sent the daemon records first (or spools) and answers after, even if the hook
has stopped waiting. The hook shuts its reading side before giving up, so an
acknowledgement is either already queued for it to read, or fails to send: exactly one of
the two records (`hooks._handoff`).

Choices:
- One daemon per BRAINBOX_HOME: `daemon.lock` is held with `fcntl.flock` for the daemon's
  life (the kernel drops it when the process dies, so a crash never leaves a stale lock).
  A second `serve` finds the lock held and exits 0 at once.
- The socket is `$BRAINBOX_HOME/daemon.sock`; when that path is too long for `sun_path`
  (108 bytes, deep temporary folders reach it) it is `$XDG_RUNTIME_DIR/brainbox-<hash>.sock`
  when that folder is ours, not a symlink and 0700, else `/tmp/brainbox-<uid>/<hash>.sock`.
  In the trial (D3) another user pre-created that folder 0777, replaced the socket with
  its own, read the raw prompt and wrote the hook's output. Now `serve` makes it with a
  plain `mkdir` 0700 and, when it exists, `lstat` must show a real folder of ours with
  mode 0700 (`storage.files.strict_dir`); else the daemon logs why and does not start,
  and the hooks work in-process. The client (`trusted_connect`, also the hooks' handoff)
  checks the folder and the socket file with `lstat` before connecting and the peer's
  uid (`SO_PEERCRED`) after: an answer from any other uid is never read.
- Every file the daemon writes (`daemon.log`, `daemon.json`, `daemon.spawn`, the lock) is
  opened with `O_NOFOLLOW` and left 0600 whatever the umask (`storage.files`): a symlink
  planted in the home is refused, never followed (D8, D15). The home itself must be ours
  and not writable by others.
- The daemon binds only after it is warm (state loaded, kernels compiled or loaded from
  the numba cache), so a client that connects gets a fast answer; before that the client
  sees no daemon and works in-process.
- Stale socket: a client that cannot connect takes the lock without blocking; if it gets
  it, no daemon is alive, so it unlinks the socket file and starts one. A spawn marker
  (`daemon.spawn`, 15 s) keeps a burst of hooks from starting many.
- Connections are served concurrently, a thread each (at most MAX_CONNECTIONS; more are
  closed at once and those clients work in-process), and one lock guards the Memory, so
  requests run one at a time but reading them does not. Each request must arrive whole
  within REQUEST_DEADLINE (5 s) of the connection or of the previous answer: a total
  deadline, not a per-byte timeout. In the trial (D14) one client sending a byte every 4 s
  held the daemon, which served one connection at a time, indefinitely.
- At start, before it warms up or writes anything, the daemon runs `PRAGMA quick_check`
  on its database (10-42 ms per 10,000 events): a damaged file stops it with a logged
  one-line reason.
- Before answering, the daemon drains the hooks' spool, notices deleted events (`forget`
  makes the count drop: the state is then reloaded from disk) and folds what is new
  (`Memory.sync()` folds only events past the watermark). It saves the state when idle
  for 5 s, on `sync`, and on exit, not on every prompt: saving rewrites every array.
- It exits after `BRAINBOX_DAEMON_IDLE` seconds without a request (default 1800), on
  SIGTERM/SIGINT, or on `stop`.
"""

from __future__ import annotations

# The C module, not `socket`: the client is on the prompt hook's path, and `socket.py`
# costs ~9 ms of enum building at import; `_socket.socket` has every method used here.
# Nothing else beyond the standard library's cheapest modules is imported at module level
# (not pathlib, not brainbox.storage: sqlite3): the prompt hook imports this module.
import _socket
import errno
import json
import os
import sys
import time

from brainbox import paths

TYPE_CHECKING = False  # `typing` is not imported at run time, for the same reason
if TYPE_CHECKING:
    from pathlib import Path

LOCK_NAME = "daemon.lock"
INFO_NAME = "daemon.json"
LOG_NAME = "daemon.log"
SPAWN_NAME = "daemon.spawn"
DEFAULT_IDLE = 1800.0
SAVE_AFTER_IDLE = 5.0
SPAWN_GUARD = 15.0
MAX_LINE = 1 << 20
LOG_MAX = 1 << 20
MAX_CONNECTIONS = 32
REQUEST_DEADLINE = 5.0  # seconds for one whole request line ($BRAINBOX_DAEMON_DEADLINE)
ACK = b'{"ack": true}\n'  # the `hook` op's receipt: from here on the daemon records
ACK_OPS = frozenset({"hook"})


# --------------------------------------------------------------------------- paths


def _socket_problem(path: str) -> str | None:
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
    problem = _socket_problem(path)
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


def idle_seconds() -> float:
    from brainbox.cli.hooks import config

    try:
        return max(1.0, float(config("daemon_idle", DEFAULT_IDLE)))
    except (TypeError, ValueError):
        return DEFAULT_IDLE


# --------------------------------------------------------------------------- client


def request(req: dict, timeout: float = 1.0, home: Path | None = None) -> dict | None:
    """Send one request; the decoded answer, or None when no daemon answered in time."""
    deadline = time.monotonic() + max(0.001, timeout)
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(max(0.001, timeout))
        trusted_connect(s, paths.socket_path(home))
        s.sendall(json.dumps(req, ensure_ascii=False).encode("utf-8", "replace") + b"\n")
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
            if len(buf) > MAX_LINE * 8:
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


def _lock_free(home: Path) -> bool:
    """True when no process holds the daemon lock (so no daemon is alive or starting)."""
    import fcntl

    from brainbox.storage.files import StoreError, open_private

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
    import subprocess
    from pathlib import Path

    from brainbox.storage import files

    home = Path(home if home is not None else paths.home())
    try:
        files.private_dir(home, what="home", tighten=True)
    except files.StoreError:
        return False
    marker = home / SPAWN_NAME
    try:
        if not force and time.time() - marker.lstat().st_mtime < SPAWN_GUARD:
            return False
    except OSError:
        pass
    log = home / LOG_NAME
    try:
        if log.lstat().st_size > LOG_MAX:
            os.replace(log, log.with_suffix(".log.1"))
    except OSError:
        pass
    try:
        out = os.fdopen(files.open_private(log), "ab")
    except (OSError, files.StoreError):
        return False  # a log we may not write (a planted symlink): no daemon, no log
    with out:
        try:
            files.write_private(marker, str(os.getpid()).encode())
        except (OSError, files.StoreError):
            return False
        path = paths.socket_path(home)
        if os.path.dirname(path) != os.path.abspath(home):
            problem = _folder_problem(path)
            if problem:
                _log(out, f"refusing to start: socket folder {problem}; hooks work in-process")
                return False
        if not _lock_free(home):
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


def _folder_problem(path: str) -> str | None:
    """The fallback socket folder (not the home): made 0700 here, or why it is refused."""
    folder = os.path.dirname(path)
    if paths.private_runtime(folder):
        return None
    from brainbox.storage.files import strict_dir

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
    info["starting"] = home.exists() and not _lock_free(home)
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
        if _lock_free(home):
            return {"stopped": True, "was_running": True, "pid": pid}
        time.sleep(0.05)
    if pid:
        try:
            os.kill(int(pid), signal.SIGTERM)
        except OSError:
            pass
        time.sleep(0.5)
    return {"stopped": _lock_free(home), "was_running": True, "pid": pid, "forced": True}


# --------------------------------------------------------------------------- service


class Service:
    """The daemon's operations over one Memory; also used in-process by the hooks when no
    daemon can be had (then `autosave` saves what a request folded)."""

    def __init__(self, db: str | None = None, autosave: bool = False):
        self.db = os.path.abspath(db) if db else paths.db_path()
        self.autosave = autosave
        self.mem = None
        self.count = 0
        self.dirty = False
        self.requests = 0
        self.started = time.time()
        self.stop_requested = False
        import threading

        self.lock = threading.RLock()  # one request at a time uses the Memory
        self.active = 0  # connections being served (the daemon's threads)
        self.last = time.monotonic()  # the last request's time, for the idle exit
        self._count_lock = threading.Lock()

    def activity(self):
        """A context that counts one connection as active (the daemon does not save or
        exit while one is)."""
        import contextlib

        @contextlib.contextmanager
        def active():
            with self._count_lock:
                self.active += 1
            try:
                yield
            finally:
                with self._count_lock:
                    self.active -= 1
                self.last = time.monotonic()

        return active()

    def memory(self):
        if self.mem is None:
            from brainbox import jitmode

            # The daemon and the hooks' in-process fallback: on a cold cache a small memory
            # runs the kernels as Python (the daemon binds in seconds, not after minutes of
            # compiling) while `brainbox warmup` fills the cache in the background; a
            # Python daemon exits once the cache is warm, so the next one is compiled.
            jitmode.prepare(self.db)
            from brainbox.memory import Memory

            self.mem = Memory.open(self.db, autosave=False)
            self.count = 0
        return self.mem

    def close(self) -> None:
        if self.mem is not None:
            self.save()
            self.mem.close()
            self.mem = None

    def save(self) -> None:
        if self.mem is not None and self.dirty:
            self.mem.save()
            self.dirty = False

    def refresh(self) -> int:
        """Ingest spooled hook events, reload after deletions, fold what is new."""
        from brainbox.cli.hooks import drain_spool

        mem = self.memory()
        try:
            drain_spool(mem.conn)
        except Exception:  # noqa: BLE001 - a bad spool file must not stop recall
            pass
        folded = mem.sync()
        total = mem.count_events()
        if self.count and total != self.count + folded:
            # Events were deleted (forget) or rewritten: the folded state is stale.
            self.mem.close()
            self.mem = None
            mem = self.memory()
            folded = mem.sync()
            total = mem.count_events()
        self.count = total
        if folded:
            self.dirty = True
            if self.autosave:
                self.save()
        return folded

    def handle(self, req, ack=None) -> dict | None:
        """Answer one request. `ack` (over a socket) sends the receipt of an op in
        ACK_OPS once the request is known to be valid; when it returns False the client
        has given up, nothing is done and None is returned (there is nobody to answer)."""
        self.requests += 1
        if not isinstance(req, dict):
            return {"ok": False, "error": "a request must be a JSON object"}
        op = req.get("op")
        if req.get("db") and os.path.abspath(str(req["db"])) != self.db and op != "ping":
            return {"ok": False, "error": f"this daemon serves {self.db}"}
        fn = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
        if fn is None:
            return {"ok": False, "error": f"unknown op {op!r}"}
        if ack is not None and op in ACK_OPS and not ack():
            return None
        try:
            return {"ok": True, "result": fn(req)}
        except Exception as exc:  # noqa: BLE001 - the daemon outlives a bad request
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}

    # --- ops ---------------------------------------------------------------------------

    def op_ping(self, req):
        return {"pid": os.getpid(), "db": self.db, "uptime": round(time.time() - self.started, 3),
                "requests": self.requests}

    def op_sync(self, req):
        folded = self.refresh()
        self.save()
        return {"folded": folded}

    op_fold = op_sync

    def op_stats(self, req):
        self.refresh()
        return self.memory().stats()

    def op_recall(self, req):
        from brainbox.recall import recall

        self.refresh()
        mem = self.memory()
        project = req.get("project") or _project(req.get("cwd"))
        results = recall(mem.index, str(req.get("query") or ""), project=project,
                         session=req.get("session"), limit=int(req.get("limit") or 10))
        return [r.as_dict() for r in results]

    def op_explain(self, req):
        """`Memory.explain` for the client's path, query and (absolute) cwd: a relative path
        is resolved against the client's folder, never the daemon's."""
        self.refresh()
        cwd = req.get("cwd")
        if not (isinstance(cwd, str) and os.path.isabs(cwd)):
            raise ValueError("explain needs the client's absolute cwd")
        return self.memory().explain(str(req.get("path") or ""), str(req.get("query") or ""),
                                     session=req.get("session"), project=req.get("project"),
                                     cwd=cwd)

    def op_predict(self, req):
        self.refresh()
        tools = self.memory().predict_tools(req.get("session"), k=int(req.get("k") or 3))
        return [{"tool": t, "score": s} for t, s in tools]

    def op_suggest(self, req):
        from brainbox.cli.hooks import format_suggestions

        self.refresh()
        mem = self.memory()
        project = req.get("project") or _project(req.get("cwd"))
        limit = max(1, min(int(req.get("limit") or 5), 10))
        items = mem.suggest(str(req.get("query") or ""), project=project,
                            session=req.get("session"), limit=limit)
        tools = []
        if items and req.get("session"):
            tools = [t for t, _ in mem.predict_tools(req.get("session"), k=1)]
        text, items = format_suggestions(items, tools, int(req.get("max_chars") or 500))
        return {"text": text, "items": items, "tools": tools}

    def op_start(self, req):
        from brainbox.cli.hooks import format_start

        self.refresh()
        project = req.get("project") or _project(req.get("cwd"))
        items = self.memory().session_start(project, req.get("session"), 40)
        text, items = format_start(items, int(req.get("max_chars") or 1200))
        return {"text": text, "items": items}

    def op_stop(self, req):
        self.stop_requested = True
        return {"stopping": True, "pid": os.getpid()}

    def op_hook(self, req):
        """A hook's whole work on its raw payload (module docstring): record first (or
        spool: never lost once acknowledged), then answer. Returns {"output": line|None}."""
        from brainbox.cli import hooks

        from brainbox import events as evmod

        agent = req.get("agent") if isinstance(req.get("agent"), str) else ""
        event = req.get("event") if isinstance(req.get("event"), str) else None
        payload = req.get("payload")
        if not isinstance(payload, dict):
            raise TypeError("'payload' must be an object")
        at = req.get("at")
        at = float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else None
        try:
            budget = max(0.05, float(req.get("budget") or 1.0))
        except (TypeError, ValueError):
            budget = 1.0
        payload = _hook_cwd(payload, req.get("cwd"))
        evmod._ROOT_CACHE.clear()  # a fresh hook process would look for `.git` afresh
        guard = hooks._Guard(budget, False, (agent, event))
        guard.payload = payload
        if at is not None:
            guard.started = at
        guard.service = self
        settings = req.get("settings")
        guard.settings = hooks.settings(settings if isinstance(settings, dict) else {})
        try:
            guard.conn = self.memory().conn
        except Exception:  # noqa: BLE001 - record() opens its own (or spools)
            guard.conn = None
        try:
            output = hooks._dispatch(agent, event, payload, guard, at=at)
        except BaseException as exc:
            hooks._safe(guard.spool_uncommitted)
            hooks.log_failure(agent, event, f"daemon: {type(exc).__name__}: {exc}", exc)
            raise
        finally:
            guard.close()
        return {"output": output}


def _hook_cwd(payload: dict, here) -> dict:
    """The payload as the hook process would have mapped it: hookmap falls back to the
    process's working directory, and a relative `cwd` is resolved against it; the daemon's
    own directory is neither, so the hook sends its own (`here`)."""
    if not isinstance(here, str) or not here.startswith("/"):
        return payload
    cwd = payload.get("cwd")
    if not (isinstance(cwd, str) and cwd.strip() and len(cwd) <= 4096):
        return dict(payload, cwd=here)
    if not cwd.startswith("/"):
        return dict(payload, cwd=os.path.join(here, cwd))
    return payload


def _project(cwd) -> str:
    from brainbox.events import project_root

    return project_root(cwd if isinstance(cwd, str) and cwd else os.getcwd())


# --------------------------------------------------------------------------- server


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

    from brainbox.storage import files

    home = Path(home if home is not None else paths.home())
    try:
        files.private_dir(home, what="home", tighten=True)
        lock_fd = files.open_private(home / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    except (OSError, files.StoreError) as exc:
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
        problem = _folder_problem(path)
        if problem:
            os.close(lock_fd)
            return _refuse(f"socket folder {problem}")
    service = Service()
    try:
        from brainbox.storage import db as dbmod

        dbmod.quick_check(service.memory().conn)
    except Exception as exc:  # noqa: BLE001 - StoreError, BrainboxError: a one-line reason
        if service.mem is not None:
            service.mem.close()
        os.close(lock_fd)
        return _refuse(f"{exc}")
    listener = None
    info = home / INFO_NAME
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

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
            except Exception:  # noqa: BLE001
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
        files.write_private(info, json.dumps({"pid": os.getpid(), "socket": path,
                                              "db": service.db,
                                              "started": service.started}).encode())
        sel = selectors.DefaultSelector()
        sel.register(listener, selectors.EVENT_READ)
        service.last = time.monotonic()
        while not service.stop_requested:
            now = time.monotonic()
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
            threading.Thread(target=_serve_slot, args=(service, conn, slots),
                             daemon=True).start()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        try:
            if service.lock.acquire(timeout=30):  # let a request in progress finish
                service.close()
        finally:
            if listener is not None:
                listener.close()
                try:
                    if os.stat(path).st_ino and _is_socket(path):
                        os.unlink(path)
                except OSError:
                    pass
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


def _deadline() -> float:
    try:
        return max(0.05, float(os.environ.get("BRAINBOX_DAEMON_DEADLINE") or REQUEST_DEADLINE))
    except ValueError:
        return REQUEST_DEADLINE


def _serve_slot(service: Service, conn, slots) -> None:
    with service.activity():
        try:
            _serve_connection(service, conn)
        finally:
            slots.release()


def _serve_connection(service: Service, conn) -> None:
    """Answer the requests of one connection (its own thread). Each request line must
    arrive whole within the deadline; the Memory is used under `service.lock`."""
    budget = _deadline()
    deadline = time.monotonic() + budget
    buf = bytearray()
    try:
        while not service.stop_requested:
            nl = buf.find(b"\n")
            if nl < 0:
                if len(buf) > MAX_LINE:
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
            deadline = time.monotonic() + budget
    except OSError as exc:
        if exc.errno not in (errno.EPIPE, errno.ECONNRESET, None):
            print(f"brainbox daemon: connection error: {exc}", file=sys.stderr)
    finally:
        conn.close()


def _send_ack(conn) -> bool:
    """Send the receipt; False when the client has shut its reading side or gone."""
    try:
        conn.sendall(ACK)
        return True
    except OSError:
        return False


def _send(conn, answer: dict) -> None:
    conn.sendall(json.dumps(answer, ensure_ascii=False, default=str).encode("utf-8", "replace")
                 + b"\n")


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m brainbox.cli.daemon")
    p.add_argument("--serve", action="store_true", help="run the daemon in the foreground")
    p.add_argument("--idle", type=float, default=None)
    args = p.parse_args(argv)
    if not args.serve:
        print(json.dumps(status()))
        return 0
    return serve(idle=args.idle)


if __name__ == "__main__":  # pragma: no cover - the detached daemon's entry
    sys.exit(main())
