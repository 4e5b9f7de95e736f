"""How this process runs the kernels: compiled (numba) or as plain Python, decided once,
before the first kernel module is imported; and saying so when kernels compile.

A command that is about to open a memory calls :func:`prepare` (standard library only until
then). On a warm cache (``brainbox warmup`` left its marker, keyed by the kernels' source
hash and the numba and Python versions: ``brainbox.kernels._cache``) kernels load from the
cache. On a cold cache a small memory needs no compiled kernels at all: the kernels run as
their Python functions (the same code, and the same results: tests/test_warmup.py and the
``NUMBA_DISABLE_JIT=1`` pass of the kernel tests), while ``brainbox warmup`` fills the cache
in a detached background process. Measured with whole ``brainbox recall`` processes on an
empty cache (``NUMBA_CACHE_DIR=$(mktemp -d)``), load average about 1 unless said:

- demo memory (480 events, folded): compiled 54.7 s (39 kernels compiled; one run),
  Python 0.49 / 0.51 / 0.60 s;
- 5,000 / 40,000 events, folded: Python 0.8 s / 1.1 s (compiled, warm cache: 1.2 / 1.7 s:
  loading the cached kernels costs more than the Python recall);
- 200,000 events: Python 6.8 / 8.1 s at load 4-6 (loading the state runs its hash and
  adjacency rebuilds as Python loops); in one go at load 18-21: 40,000 events 7.5 / 7.6 s,
  100,000 9.4 / 11.4 s, 200,000 16.4 / 10.6 s, where compiling took 443 s (load 11): the
  Python path is the faster first answer up to ``PYTHON_MAX_EVENTS`` and beyond, but a
  process that stays (the daemon) pays it on every request until it restarts;
- folding in Python: 5,000 events in 2.2 s (0.45 ms each), so at most
  ``PYTHON_MAX_PENDING`` unfolded events.

Above either threshold the process compiles (what it needs only: ``brainbox.kernels``
imports its modules lazily) and prints its progress on stderr (:func:`report_compiles`).
``BRAINBOX_JIT=numba`` or ``=python`` overrides the policy; ``NUMBA_DISABLE_JIT=1`` means
Python. A long-lived process (the daemon) that chose Python keeps it until it restarts.

:func:`spawn_background` starts ``brainbox warmup`` (:mod:`brainbox.warm`) as a detached
process (new session, stdin closed, output appended to ``warmup.log`` in the home, 0600),
unless the cache is warm or a warm-up already runs: the child inherits an exclusive
``flock`` on ``warmup.lock`` in the cache directory, so concurrent first commands (or homes
sharing one cache, as the tests do) start one warm-up between them, and the lock goes away
with the process however it ends. ``BRAINBOX_NO_BACKGROUND_WARMUP=1`` turns it off (CI,
test suites that install hooks many times, a user who wants no background CPU).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from pathlib import Path

from brainbox.kernels import _cache

PYTHON_MAX_EVENTS = 200_000
PYTHON_MAX_PENDING = 5_000


def cache_dir() -> str:
    """The directory the kernels are cached in (numba's ``CACHE_DIR`` for this package)."""
    return _cache.cache_dir()


def is_warm(part: str = "engine") -> bool:
    """Whether ``brainbox warmup`` filled the cache for this source, numba and Python."""
    return os.path.exists(_cache.marker_path(part))


def mode() -> str:
    """"python" or "numba": this process's mode (fixed once a kernel module is imported)."""
    return "python" if _numba_disabled() else _cache.MODE


def _numba_disabled() -> bool:
    return os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0")


def _fixed() -> bool:
    return "brainbox.kernels._jit" in sys.modules


def force(which: str) -> str:
    """Run the kernels as ``which`` ("numba" or "python") in this process, whatever the cache
    (``brainbox warmup`` compiles on purpose); a no-op once a kernel module is imported, and
    under ``NUMBA_DISABLE_JIT=1``. Returns the mode."""
    if which not in _cache.MODES:
        raise ValueError(f"unknown kernel mode {which!r}")
    if not _fixed():
        _cache.MODE = which
    return mode()


def memory_size(db_path=None) -> tuple[int, int] | None:
    """(events, events not yet folded) of the memory at ``db_path``; (0, 0) when there is no
    database yet; None when it cannot be read (the command itself will say why)."""
    from brainbox import paths, store
    from brainbox.storage import db as dbmod

    path = Path(db_path) if db_path else Path(paths.db_path())
    if str(path) == ":memory:" or not path.exists():
        return (0, 0)
    try:
        conn = store.connect(path)
    except Exception:  # noqa: BLE001 - any failure: let the command report it
        return None
    try:
        total = int(dbmod.max_event_id(conn))
        folded = int(dbmod.get_meta(conn, "watermark", "0") or 0)
    except Exception:  # noqa: BLE001
        return None
    finally:
        conn.close()
    return total, max(0, total - folded)


def choose(db_path=None) -> str:
    """Decide this process's mode for the memory at ``db_path`` (see the module docstring)
    and return it; a no-op once a kernel module is imported."""
    if _fixed():
        return mode()
    forced = os.environ.get("BRAINBOX_JIT", "").lower()
    if forced in ("numba", "jit", "1"):
        _cache.MODE = "numba"
    elif forced in ("python", "off", "0") or _numba_disabled():
        _cache.MODE = "python"
    elif is_warm():
        _cache.MODE = "numba"
    else:
        size = memory_size(db_path)
        small = size is None or (size[0] <= PYTHON_MAX_EVENTS and size[1] <= PYTHON_MAX_PENDING)
        _cache.MODE = "python" if small else "numba"
    return mode()


def prepare(db_path=None, *, background: bool = True, stream=None) -> str:
    """The one call a command makes before it opens the memory at ``db_path``: choose the
    mode; on a cold cache start the warm-up in the background and, when this process will
    compile, say so on stderr. Returns the mode."""
    chosen = choose(db_path)
    if not is_warm():
        if chosen == "numba":
            report_compiles(stream)
        if background:
            if chosen == "python":
                spawn_background()
            else:  # after this process's own compiles, not beside them (2 cores)
                atexit.register(spawn_background)
    return chosen


# --- the background warm-up --------------------------------------------------------

WARMUP_LOG = "warmup.log"
WARMUP_LOCK = "warmup.lock"


def spawn_background(*, replay: bool = True) -> int | None:
    """Start ``brainbox warmup`` detached (see the module docstring); returns its pid, or
    None when the cache is warm, a warm-up already runs, or it cannot be started (a first
    command must never fail for its warm-up: the reason goes to the log when there is one)."""
    if os.environ.get("BRAINBOX_NO_BACKGROUND_WARMUP"):
        return None
    if is_warm("engine") and (not replay or is_warm("replay")):
        return None
    import fcntl
    import subprocess

    from brainbox import paths
    from brainbox.storage import files

    lock = log = None
    try:
        home = files.private_dir(paths.home(), tighten=True, what="brainbox home")
        cache = cache_dir()
        os.makedirs(cache, mode=0o700, exist_ok=True)
        lock = files.open_private(os.path.join(cache, WARMUP_LOCK), os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None  # another warm-up holds it
        log = files.open_private(os.path.join(home, WARMUP_LOG))
        os.write(log, f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} warm-up started by pid "
                      f"{os.getpid()}\n".encode())
        env = {k: v for k, v in os.environ.items()
               if k not in ("BRAINBOX_JIT", "NUMBA_DISABLE_JIT")}
        argv = [sys.executable, "-m", "brainbox.cli.entry", "warmup"]
        if not replay:
            argv.append("--no-replay")
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                 env=env, start_new_session=True, pass_fds=(lock,))
        return child.pid
    except Exception as exc:  # noqa: BLE001 - see the docstring
        if log is not None:
            os.write(log, f"could not start the warm-up: {exc}\n".encode())
        return None
    finally:
        for fd in (lock, log):
            if fd is not None:
                os.close(fd)


# --- saying so when kernels compile ----------------------------------------------------


class CompileReport:
    """Counts numba compilations (cache misses only: a kernel loaded from the cache fires no
    event) and shows them on ``stream``: a live line with the elapsed time when the stream is
    a terminal, else one line when the first compile starts and one at :meth:`close`.
    ``step`` (e.g. "recall 2/4") prefixes the live line."""

    def __init__(self, stream=None, *, live: bool | None = None, label: str = "brainbox"):
        self.stream = stream or sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.live = bool(isatty and isatty()) if live is None else live
        self.label = label
        self.step = ""
        self.compiled = 0
        self.current = ""
        self.started: float | None = None
        self.seconds = 0.0  # wall time spent inside top-level compiles
        self._depth = 0
        self._t_top = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._listener = None
        self._closed = False

    # numba listener protocol
    def on_start(self, event):
        with self._lock:
            self.current = getattr(event.data.get("dispatcher"), "__name__", "?")
            if self._depth == 0:
                self._t_top = time.perf_counter()
            self._depth += 1
            first = self.started is None
            if first:
                self.started = time.perf_counter()
        if first:
            if self.live:
                self._ticker = threading.Thread(target=self._tick, daemon=True)
                self._ticker.start()
            else:
                self._write(f"{self.label}: compiling kernels (one time; later runs load them "
                            f"from {cache_dir()}) ...\n")
        self._show()

    def on_end(self, event):
        with self._lock:
            self._depth -= 1
            self.compiled += 1
            if self._depth == 0:
                self.seconds += time.perf_counter() - self._t_top
        self._show()

    def set_step(self, text: str) -> None:
        self.step = text
        self._show()

    def install(self) -> CompileReport:
        from numba.core import event as ev

        class _Listener(ev.Listener):
            def on_start(_, event):
                self.on_start(event)

            def on_end(_, event):
                self.on_end(event)

        self._listener = _Listener()
        ev.register("numba:compile", self._listener)
        return self

    def _line(self) -> str:
        el = time.perf_counter() - (self.started or time.perf_counter())
        step = f" {self.step}:" if self.step else ""
        now = f" ({self.current})" if self._depth else ""
        return (f"{self.label}:{step} compiling kernels (one time), {self.compiled} compiled, "
                f"{el:.0f} s{now}")

    def _show(self):
        if self.live and not self._closed and self.started is not None:
            self._write("\r\033[K" + self._line())

    def _tick(self):
        while not self._stop.wait(0.5):
            self._show()

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed pipe must not break the command
            pass

    def close(self) -> None:
        """Stop listening; print the closing line if anything compiled."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._listener is not None:
            from numba.core import event as ev

            ev.unregister("numba:compile", self._listener)
            self._listener = None
        if self.started is not None:
            el = time.perf_counter() - self.started
            self._write(("\r\033[K" if self.live else "") +
                        f"{self.label}: compiled {self.compiled} kernels in {el:.1f} s "
                        f"(one time; cached in {cache_dir()})\n")

    def __enter__(self):
        return self.install()

    def __exit__(self, *exc):
        self.close()


_REPORT: CompileReport | None = None


def report_compiles(stream=None) -> CompileReport | None:
    """Show this process's compilations on stderr until it exits (once per process; nothing
    in Python mode, where nothing compiles)."""
    global _REPORT
    if mode() == "python":
        return None
    if _REPORT is None:
        _REPORT = CompileReport(stream).install()
        atexit.register(_REPORT.close)
    return _REPORT
