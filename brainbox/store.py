"""The store as `cli` sees it: the public face of `brainbox.storage` (issue 14).

`cli` goes through `brainbox`, never into `storage` (the layering rule: `storage` holds all
SQL and never imports `brainbox`; `cli` imports `brainbox` only). This module names what
the command line, the hooks and the daemon need from the store, and adds the one thing
storage may not know: where brainbox's home is (`brainbox.paths`). `connect()` without a
path opens the default database, and the home folder is the one folder it tightens to 0700.

Standard library only, and cheap: importing it loads `storage.files` (`os`, `stat`), not
`sqlite3`. The prompt hook's socket client uses the file helpers and `StoreError` and must
not pay for `sqlite3` (tests/test_startup.py checks its imports); the database names below
load `storage.db` (and `sqlite3`) on first use (module `__getattr__`, PEP 562). Measured
with `python -X importtime` (5 runs, the 2-core machine loaded by a test run): `sqlite3`
costs 2.9-11 ms cumulative, this module 9-12 ms with `paths` and `storage.files`; the prompt
hook's whole budget is a few hundred ms and the client path is kept free of `sqlite3`.
"""

from __future__ import annotations

import os

from brainbox import paths
from brainbox.storage.files import (
    StoreError,
    check_file,
    open_private,
    private_dir,
    strict_dir,
    write_private,
)

__all__ = ["StoreError", "audit", "check_file", "connect", "new_calls", "open_private",
           "private_dir", "saved_counts", "strict_dir", "tool_durations", "write_private"]

# Names served from `storage.db`, imported on first use (not in `__all__`: they exist only
# through `__getattr__`).
_DB = frozenset({
    "BUSY_TIMEOUT_MS", "SCHEMA_VERSION", "append_events", "atomic", "count_events",
    "db_bytes", "get_meta", "iter_events", "max_event_id", "quick_check", "scrub",
    "session_events", "set_meta",
})


def connect(path=None, *, prefer_vec: bool = False, check: bool = True):
    """Open (creating if needed) a brainbox database: `path`, else `paths.db_path()`.

    `":memory:"` gives a private in-memory database. The database's folder is tightened
    to 0700 only when it is brainbox's home (`paths.is_home`), never a folder the user
    chose for `BRAINBOX_DB`. Raises `StoreError` with one line (see `storage.db.connect`).
    """
    from brainbox.storage import db

    path = os.fspath(path) if path is not None else paths.db_path()
    tighten = path != ":memory:" and paths.is_home(os.path.dirname(os.path.abspath(path)))
    return db.connect(path, prefer_vec=prefer_vec, check=check, tighten=tighten)


def tool_durations(conn) -> dict[str, dict]:
    """Each tool's calls the host timed and their median `duration_ms`
    (`storage.provenance`)."""
    from brainbox.storage import provenance

    return provenance.tool_durations(conn)


def new_calls(conn, events: list[dict]) -> list[dict]:
    """`events` without the tool calls stored already (`storage.provenance`)."""
    from brainbox.storage import provenance

    return provenance.new_calls(conn, events)


def saved_counts(conn) -> dict | None:
    """The saved state's counts read with SQL alone, or None (`storage.summary`)."""
    from brainbox.storage import summary

    return summary.saved_counts(conn)


def audit(conn) -> dict:
    """The hash chain's verdict (`storage.chain.audit`): {ok, events, head[, bad_id,
    problem, detail]}."""
    from brainbox.storage import chain, db

    return chain.audit(conn, db.CHAIN_COLUMNS)


def __getattr__(name: str):
    if name in _DB:
        from brainbox.storage import db

        value = getattr(db, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
