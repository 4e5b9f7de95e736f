"""The daemon's background step that keeps code indexes current (`brainbox.reindex`).

One thread beside the request threads, with its own database connection: it never takes
the service's lock, so no reply (a handed-over prompt hook) waits for parsing, and tool
hooks never talk to the daemon at all (they append their events themselves). It runs a
`reindex.tick` every `reindex_every` seconds (`BRAINBOX_REINDEX_EVERY`, default
`DEFAULT_EVERY`), at once after a request folded new events (`wake`), and again without
waiting while a tick still found work (a backlog is worked off a bounded tick at a time).
A tick's SQLite writes are short: files are parsed before the write lock is taken
(`codeindex`), so a hook's insert waits for inserts only (busy timeout).

A failure is one line on stderr (`daemon.log` for a detached daemon) and the next tick
retries on a fresh connection; it never ends the daemon. A tick that re-indexed files
logs one line with its counts.
"""

from __future__ import annotations

import sys
import threading
import time

from brainbox.cli import hookconf

DEFAULT_EVERY = 2.0  # seconds between ticks when no request wakes the thread


def every() -> float:
    try:
        return max(0.05, float(hookconf.config("reindex_every", DEFAULT_EVERY)))
    except (TypeError, ValueError):
        return DEFAULT_EVERY


def log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} brainbox daemon: {message}",
          file=sys.stderr, flush=True)


class Reindexer:
    """`start()`, `wake()` after new events, `stop()` (joins the thread)."""

    def __init__(self, db: str, interval: float | None = None):
        self.db = db
        self.interval = every() if interval is None else interval
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="brainbox-reindex",
                                        daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        conn = None
        busy = False
        while not self._stop.is_set():
            if not busy:
                self._wake.wait(self.interval)
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                if conn is None:
                    from brainbox import store

                    conn = store.connect(self.db)
                busy = self.step(conn)
            except Exception as exc:  # noqa: BLE001 - the daemon outlives a failed tick
                log(f"re-index failed: {type(exc).__name__}: {exc}")
                busy = False
                if conn is not None:
                    try:
                        conn.close()
                    except Exception:  # noqa: BLE001, S110 - a broken connection: dropped
                        pass
                    conn = None
        if conn is not None:
            conn.close()

    def step(self, conn) -> bool:
        """One tick; True when it found edit events (there may be more)."""
        from brainbox import reindex

        out = reindex.tick(conn)
        if out is None:
            return False
        if out["files"]:
            log(f"re-indexed {out['indexed']} changed, {out['removed']} removed, "
                f"{out['unchanged']} unchanged files of {', '.join(out['projects'])} "
                f"(events to {out['cursor']})")
        return True
