"""SQLite connection, migrations and the append-only event log. Standard library only.

This module is on the record hook's hot path (a fresh process per tool call), so it
imports neither numpy nor sqlean: `connect()` takes a driver argument, and the record
path uses the standard `sqlite3`. Array persistence, which needs numpy, lives in
`brainbox.storage.arrays`.

Choices:
- The database is the path the caller gives (brainbox's default, `$BRAINBOX_DB` else
  `<home>/brainbox.db`, is `brainbox.paths`'s: storage never imports brainbox); it is
  created with mode 0600 (the home folder 0700, when the caller says it is the home).
- Before SQLite sees the path, `storage.files` checks it with `stat` (microseconds, so on
  every open): the folder ours (or root's) and not writable by others, the file a regular
  file of ours (an own file with group/other bits is set to 0600). Another user's planted
  database, a shared folder, a dangling symlink, a directory or a FIFO (which blocked the
  open forever) are refused with one line (trial D8, D11).
- Before anything writes to an existing file we check it read-only: the SQLite header,
  that it is brainbox's (`brainbox_meta` holds `application = brainbox`, also stamped in
  `PRAGMA application_id`), and that its schema is not newer than ours. A file that fails
  a check is left byte-identical and a `StoreError` says why. Damaged pages behind an
  intact header need a whole-file pass, `quick_check` (10-42 ms per 10,000 events, see
  there): it runs before a migration, at daemon start, in `rebuild`, `forget`, `doctor`.
- Errors the user can act on say what they are: a full disk "disk full", a read-only file
  or folder "read-only" (both used to say "corrupt", trial D11), raised as StoreError by
  `connect` and `atomic`; the transaction is rolled back, so nothing stored is lost.
- `secure_delete` is on for every connection, and `forget` ends with a TRUNCATE
  checkpoint (`scrub`): the forgotten text used to stay in free pages and in the WAL
  (trial D9: 20 of 22 copies). Cost, measured on a copy of a 10,000-event store (one
  event appended per fresh connection, as a hook does; median of 300; two rounds
  alternating on the loaded 2-core machine; `benchmarks/measure_store_checks.py`):
  append 6.9 and 14.8 ms with it, 10.1 and 11.1 ms without, and in a second run 2.0 and
  1.8 ms with, 3.0 and 8.5 ms without; rebuild+save 0.9-1.3 s with, 1.2-2.8 s without:
  within the noise. Append-only inserts free nothing, so there is nothing to zero.
- WAL, `busy_timeout` 5 s, `synchronous=NORMAL` (WAL keeps it crash-consistent), foreign
  keys on. NORMAL, not FULL, chosen by measurement (issue 20, a hook's one-event commit,
  `benchmarks/measure_post_tool.py --breakdown`, best of 3 per process, medians of 15-20
  processes): 0.14-0.29 ms with NORMAL against 0.42-4.8 ms with FULL (quiet machine,
  then at load 10), whose fsync of the WAL at every commit would be the slowest and least
  predictable part of a hook's own work (tens of ms on a laptop's or a busy disk). What it costs: after a
  power loss or an OS crash (not a process crash or kill: the WAL is in the OS cache) the
  transactions committed since the WAL was last synced (at a checkpoint) may be rolled
  back: the last moments' events are lost, the file is never corrupt. FULL would make
  every acknowledged commit durable through a power loss too. The daemon's receipt of a
  tool call (`record` op) comes after such a commit: the same promise. Migrations are named functions applied in order, each in one transaction
  together with its row in `schema_migrations`; `PRAGMA user_version` mirrors the count so
  the hot path checks the version without a query.
- Event ids are AUTOINCREMENT: an id is never reused after `forget`, so the fold watermark
  stays meaningful.
- A hook's events carry a random `uid` (unique index, NULL for other writers); appending an
  event whose uid is stored is a no-op, which makes replaying a spool file idempotent
  (migration 002; its own transaction like every migration).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path

from brainbox.storage import chain as _chain
from brainbox.storage import files as _files
from brainbox.storage import migrations as _migrations
from brainbox.storage.files import StoreError

APPLICATION_ID = 0x62626F78  # "bbox"
SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 5000


# StoreError is defined beside the folder checks (standard library only, so a hook can
# catch it without sqlite3) and re-exported here, where callers have always found it.


# --- migrations: storage.migrations, and the chain's here ---------------------------

def _m010_event_chain(conn) -> None:
    """The hash chain (`storage.chain`): `events.hash`, the checkpoint tables of `consolidate`
    (`brainbox.retention`), and the chain over the stored events in id order; ids forgotten
    before it are recorded as gaps, bridged by the hash before them."""
    conn.execute("ALTER TABLE events ADD COLUMN hash TEXT")
    conn.execute("CREATE TABLE checkpoint_blobs (name TEXT PRIMARY KEY, dtype TEXT NOT NULL, "
                 "shape TEXT NOT NULL, data BLOB NOT NULL)")
    conn.execute("CREATE TABLE checkpoint_resources (id INTEGER PRIMARY KEY, kind INTEGER NOT "
                 "NULL, project TEXT NOT NULL, key TEXT NOT NULL)")
    old, head = _chain.rechain(conn, CHAIN_COLUMNS, 1)
    if old:
        append_events(conn, [_chain.gap_record(conn, {
            "op": "erase", "reason": "before the chain", "gaps": old,
            "count": sum(b - a + 1 for a, b, _ in old)})], prev=head)


MIGRATIONS = _migrations.MIGRATIONS + [("010_event_chain", _m010_event_chain)]
SCHEMA_VERSION = len(MIGRATIONS)


# --- connection -----------------------------------------------------------------------

# The SQLite library this process opened its first database file with (None: none yet).
_PROCESS_DRIVER = None


def _driver(prefer_vec: bool, memory: bool = False):
    """The DB-API module to open a database with: with `prefer_vec`, sqlean (whose SQLite
    can load sqlite-vec) when installed, else the standard library's sqlite3.

    One process opens every database file with one library, the first it chose: two
    copies of SQLite in one process do not see each other's POSIX locks, and closing a
    file through one drops the locks the other holds on it, so a checkpoint can then
    overwrite pages another connection is using (SQLite's "How To Corrupt", 2.2.1). This
    happened: the daemon's memory (sqlean) and its re-indexer thread (sqlite3) left page
    1 of the database overwritten by a b-tree leaf page in 2 of 10 runs of a hook test.
    A process whose first file was opened with sqlite3 keeps it (vector search then
    scans with numpy). A private in-memory database shares no file and fixes nothing."""
    global _PROCESS_DRIVER
    if _PROCESS_DRIVER is not None:
        return _PROCESS_DRIVER
    driver = sqlite3
    if prefer_vec:
        try:
            import sqlean

            driver = sqlean
        except ImportError:
            pass
    if not memory:
        _PROCESS_DRIVER = driver
    return driver


def _check_existing(path: Path, driver) -> None:
    """Read-only checks of an existing database file, through SQLite (a read-only
    connection); never writes to it.

    The file is never opened here by Python itself: this process may hold connections to
    it, and closing any descriptor of a file drops every POSIX lock the process holds on
    it. Reading the header with `open()` did that: another process then took the lock
    that says no one else uses the database, checkpointed, and deleted the -wal and -shm
    that this process's connections went on writing to. Their commits were invisible to
    other processes, and a later checkpoint from the deleted WAL overwrote page 1 with a
    b-tree page (the daemon's test, 2 runs in 10). SQLite's own descriptors stay open
    until no connection of the process locks the file."""
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        raise _os_error(exc, path) from exc
    if size == 0:
        return  # an empty file is a new database
    try:
        _inspect(path, driver, "ro")
    except driver.OperationalError as exc:
        # A WAL database left with a -wal file by a killed process (a hook's watchdog exits
        # hard) cannot be read through a read-only connection: recovering the WAL index
        # needs write access to the -shm file. Reading through a normal connection writes
        # nothing to the database file itself.
        if _CORRUPT in str(exc) or "malformed" in str(exc):
            raise StoreError(_not_sqlite(path, exc)) from exc
        try:
            _inspect(path, driver, "rw")
        except driver.DatabaseError as exc2:
            raise (_store_error(exc2, path) or StoreError(
                f"{path} is corrupt ({exc2}); left untouched")) from exc2
    except driver.DatabaseError as exc:
        raise StoreError(_not_sqlite(path, exc)) from exc


_CORRUPT = "not a database"


def _not_sqlite(path, exc) -> str:
    if _CORRUPT in str(exc):
        return f"{path} is not a SQLite database (or its header is damaged); left untouched"
    return f"{path} is corrupt ({exc}); left untouched"


def _inspect(path: Path, driver, mode: str) -> None:
    conn = driver.connect(f"file:{path}?mode={mode}", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            return
        if "brainbox_meta" not in tables:
            raise StoreError(f"{path} is a SQLite database but not brainbox's; left untouched")
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{path} has schema version {version}, newer than this brainbox "
                f"({SCHEMA_VERSION}); upgrade brainbox. The file was left untouched"
            )
        conn.execute("SELECT count(*) FROM brainbox_meta").fetchone()
    finally:
        conn.close()


# --- errors a user can act on ---------------------------------------------------------

_KEPT = "nothing was written and what was stored is kept"


def _db_path(conn) -> str:
    try:
        return next((r[2] for r in conn.execute("PRAGMA database_list") if r[1] == "main"),
                    "") or ":memory:"
    except Exception:  # noqa: BLE001 - only for the message
        return "the database"


def _writable(path) -> bool:
    return os.access(path, os.W_OK)


def _space_left(folder) -> int:
    try:
        st = os.statvfs(folder)
    except OSError:
        return 1 << 30
    return st.f_bavail * st.f_frsize


def _store_error(exc: BaseException, path) -> StoreError | None:
    """A SQLite error the user can act on, as a StoreError that says what it is: "disk
    full" or "read-only", never "corrupt" (the trial's full disk and read-only home were
    both reported as corrupt, which invites deleting a healthy file). None otherwise."""
    if not isinstance(exc, Exception) or isinstance(exc, StoreError):
        return None
    if type(exc).__name__ not in ("OperationalError", "DatabaseError", "IntegrityError"):
        return None
    msg = str(exc).lower()
    path = str(path)
    folder = os.path.dirname(os.path.abspath(path)) if path != ":memory:" else None
    if "disk is full" in msg or "no space" in msg:
        return StoreError(f"{path}: disk full; {_KEPT} (free some space and retry)")
    if folder is None or not any(w in msg for w in (
            "readonly", "read-only", "unable to open", "disk i/o error", "cannot open")):
        return None
    if "readonly" in msg or "read-only" in msg or not _writable(folder) or (
            os.path.exists(path) and not _writable(path)):
        where = "folder " + folder if not _writable(folder) else path
        return StoreError(f"{path}: read-only ({where} cannot be written); {_KEPT}")
    if "disk i/o error" in msg and _space_left(folder) < (256 << 10):
        return StoreError(f"{path}: disk full; {_KEPT} (free some space and retry)")
    return None


def _os_error(exc: OSError, path) -> StoreError:
    import errno

    if exc.errno == errno.ENOSPC:
        return StoreError(f"{path}: disk full; {_KEPT} (free some space and retry)")
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return StoreError(f"{path}: read-only ({exc.strerror}); {_KEPT}")
    return StoreError(f"{path}: {exc.strerror or exc}")


def quick_check(conn, path=None) -> None:
    """`PRAGMA quick_check`: every page and b-tree of the file is sound. Raises a one-line
    StoreError before anything writes into a damaged file.

    It reads the whole file once: 10-12 ms on a 19.5 MB store of 10,000 events with its
    state (4,766 pages, page cache warm, median of 5; SQLite 3.40 and 3.50 alike), and
    42 ms while a test run shared the 2 cores (`benchmarks/measure_store_checks.py`);
    `integrity_check` takes 2-2.5 times as long. Too much for every hook (a tool hook's whole
    budget is 0.2 s and it grows with the file), so it runs where a whole-file pass is
    already paid for: daemon start, `rebuild`, `forget`, `doctor`, and before a migration.
    The trial's damaged store (bytes overwritten across 40 KB at one third, header intact)
    fails it: `Tree 11 page 1245 cell 1: invalid page number ...`."""
    try:
        rows = conn.execute("PRAGMA quick_check(1)").fetchall()
    except Exception as exc:  # "database disk image is malformed": re-raised otherwise
        if type(exc).__name__ not in ("DatabaseError", "OperationalError"):
            raise
        rows = [(str(exc),)]
    first = str(rows[0][0]) if rows else "no answer"
    if first == "ok":
        return
    detail = "; ".join(ln for ln in first.splitlines() if not ln.startswith("***"))[:200]
    path = path or _db_path(conn)
    raise StoreError(f"{path} is damaged (quick_check: {detail}); it was left untouched: "
                     f"recover it with `sqlite3 {path} .recover` or restore a backup")


def scrub(conn) -> None:
    """After a deletion that must not linger (`forget`): `secure_delete` (set on every
    connection) has zeroed the freed pages; a TRUNCATE checkpoint moves the WAL's copies
    of the old pages into the file and empties the WAL. A reader holding an old snapshot
    (the daemon mid-request) makes the checkpoint partial; it is retried on busy."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()


# --- opening --------------------------------------------------------------------------


def connect(path: str | Path, *, prefer_vec: bool = False, check: bool = True,
            tighten: bool = False):
    """Open (creating if needed) a brainbox database and bring its schema up to date.

    `path` ":memory:" gives a private in-memory database (replay). Storage does not know
    where brainbox's home is (`brainbox.paths`; `brainbox.store.connect` supplies the
    default path): with `tighten` the database's folder is set to 0700 when it is an own
    folder open to others (the caller says so for the home, never for a folder the user
    chose). With `prefer_vec`, the sqlean driver is used when installed so sqlite-vec can
    be loaded, unless this process opened a file with sqlite3 already (`_driver`). Before SQLite sees the file: its folder must be ours (or root's) and not writable by others, the file a
    regular file of ours (`storage.files`); a foreign, shared-writable, dangling, directory
    or FIFO path is refused with a one-line StoreError and nothing is opened.
    """
    memory = str(path) == ":memory:"
    driver = _driver(prefer_vec, memory)
    if not memory:
        path = Path(path)
        _files.private_dir(path.parent, what="database folder", tighten=tighten)
        exists = _files.check_file(path, what="database")
        if exists and check:
            _check_existing(path, driver)
        if not exists:
            try:
                fd = _files.open_private(path, os.O_CREAT | os.O_WRONLY)
            except OSError as exc:
                raise _os_error(exc, path) from exc
            os.close(fd)
    try:
        conn = driver.connect(
            str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
            check_same_thread=False,
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA secure_delete = ON")
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            if not memory:
                if os.path.getsize(path):  # an existing file: never migrate a damaged one
                    quick_check(conn, path)
                conn.execute("PRAGMA journal_mode = WAL")
            migrate(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except driver.DatabaseError as exc:
        raise (_store_error(exc, path) or StoreError(f"{path}: {exc}")) from exc
    return conn


def migrate(conn) -> list[str]:
    """Apply pending migrations, each in one transaction with its record row."""
    applied = []
    for i, (name, fn) in enumerate(MIGRATIONS, start=1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Created inside the first migration's transaction, so no other process ever
            # sees a half-made database (a lone schema_migrations table); and another
            # process may have migrated between our version check and the lock.
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT (datetime('now')))"
            )
            if conn.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (name,)).fetchone():
                conn.execute("ROLLBACK")
                continue
            fn(conn)
            conn.execute("INSERT INTO schema_migrations(name) VALUES (?)", (name,))
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {i}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        applied.append(name)
    return applied


@contextlib.contextmanager
def atomic(conn):
    """One transaction (or a savepoint when one is already open)."""
    if conn.in_transaction:
        name = f"sp{id(conn)}_{os.getpid()}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
    else:
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:  # SQLite rolls back by itself on a full disk
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except Exception as exc:
            err = _store_error(exc, _db_path(conn))
            if err is None:
                raise
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise err from exc


# --- event log ------------------------------------------------------------------------

EVENT_COLUMNS = (
    "at", "session", "project", "kind", "tool", "action", "files", "command",
    "error", "error_fp", "exit_code", "prompt", "args", "meta", "worktree", "source",
)
CHAIN_COLUMNS = ("id",) + EVENT_COLUMNS + ("uid",)  # hashed by `storage.chain`
# An event whose `uid` is stored already is skipped (not an error): the spool's replay.
# `chain.new_uids` leaves them out first (a skipped insert would burn an id).
_INSERT = (
    f"INSERT INTO events ({', '.join(EVENT_COLUMNS)}, uid) "
    f"VALUES ({', '.join('?' for _ in EVENT_COLUMNS)}, ?)"
)


def _event_row(ev: dict) -> tuple:
    files = ev.get("files") or []
    meta = ev.get("meta")
    return (
        ev["at"], ev["session"], ev["project"], ev["kind"], ev.get("tool"), ev.get("action"),
        json.dumps(files, ensure_ascii=False), ev.get("command"), ev.get("error"),
        ev.get("error_fp"), ev.get("exit_code"), ev.get("prompt"), ev.get("args"),
        json.dumps(meta, ensure_ascii=False) if meta is not None else None,
        ev.get("worktree"), ev.get("source"), ev.get("uid"),
    )


def append_events(conn, events: list[dict], prev: str | None = None) -> int:
    """Append normalised events in one transaction, each hashed onto the chain
    (`storage.chain`; `prev`: the hash to chain to, when the last ids were just deleted);
    returns the last id. An event with a `uid` already in the log is skipped (the id
    returned is still the log's last)."""
    with atomic(conn):
        last, head = _chain.head(conn)
        rows = _chain.new_uids(conn, [_event_row(e) for e in events], len(EVENT_COLUMNS))
        if not rows:
            return last
        conn.executemany(_INSERT, rows)
        return _chain.stamp(conn, CHAIN_COLUMNS, last, head if prev is None else prev)


def _row_event(row) -> dict:
    ev = dict(zip(("id",) + EVENT_COLUMNS, row))
    ev["files"] = json.loads(ev["files"]) if ev["files"] else []
    ev["meta"] = json.loads(ev["meta"]) if ev["meta"] else None
    return ev


def iter_events(conn, after: int = 0, batch: int = 50_000, until: float | None = None,
                where: str = "", args=()):
    """Events with id > after (and `at` <= until, when given: `--as-of`), in id order, as
    dicts (`where`: more of the WHERE clause, starting with AND, its `?` bound to `args`:
    `storage.provenance`)."""
    cols = ", ".join(("id",) + EVENT_COLUMNS)
    when, bound = ("", ()) if until is None else (" AND at <= ?", (float(until),))
    last = after
    while True:
        rows = conn.execute(
            f"SELECT {cols} FROM events WHERE id > ?{when}{where} ORDER BY id LIMIT ?",
            (last, *bound, *args, batch)).fetchall()
        if not rows:
            return
        for row in rows:
            yield _row_event(row)
        last = rows[-1][0]


def max_event_id(conn) -> int:
    return conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]


def count_events(conn) -> int:
    return conn.execute("SELECT count(*) FROM events").fetchone()[0]


def session_events(conn, session: str, after: int = 0) -> list[dict]:
    cols = ", ".join(("id",) + EVENT_COLUMNS)
    rows = conn.execute(
        f"SELECT {cols} FROM events WHERE session = ? AND id > ? ORDER BY id", (session, after)
    ).fetchall()
    return [_row_event(r) for r in rows]


def feedback_events(conn, session: str | None = None) -> list[dict]:
    """The `feedback` events (the Stop hook's scored suggestions, the user's corrections,
    resolves), of `session` when given, newest first (`brainbox log`)."""
    cols = ", ".join(("id",) + EVENT_COLUMNS)
    where, args = "kind = 'feedback'", ()
    if session is not None:
        where, args = where + " AND session = ?", (session,)
    rows = conn.execute(f"SELECT {cols} FROM events WHERE {where} ORDER BY id DESC", args)
    return [_row_event(r) for r in rows]


def projects(conn) -> list[tuple[str, int]]:
    return conn.execute(
        "SELECT project, count(*) FROM events GROUP BY project ORDER BY count(*) DESC"
    ).fetchall()


# --- meta -----------------------------------------------------------------------------

def get_meta(conn, key: str, default: str | None = None) -> str | None:
    row = conn.execute("SELECT value FROM brainbox_meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else default


def set_meta(conn, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO brainbox_meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def db_bytes(conn) -> int:
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    count = conn.execute("PRAGMA page_count").fetchone()[0]
    return page * count
