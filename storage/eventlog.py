"""The event log as rows of every stored column, for `brainbox export` and `restore`, and
the counts `--as-of` needs (standard library only; `brainbox.archive`, `brainbox.asof`).

Choices:
- The columns are the table's own (`PRAGMA table_info`), in table order, so a column a
  later migration adds (the hash chain's `hash`, provenance's `source`) is exported and
  restored without this module knowing it. Values are as stored: `files` and `meta` stay
  their JSON text, nothing is re-redacted or decoded.
- An export reads in one read transaction (`snapshot`): its two passes (the manifest's
  counts and sha256, then the lines) see the same log while hooks keep appending.
- A restore into an empty log keeps every id and uid (and the AUTOINCREMENT high-water
  mark, so an id a `forget` freed is never reused); a merge appends through
  `db.append_events`, the one path that gives an event its id (and, where the chain
  exists, its hash).
"""

from __future__ import annotations

import contextlib

from brainbox.storage import db as _db


def columns(conn) -> list[str]:
    """The events table's columns, in table order."""
    return [r[1] for r in conn.execute("PRAGMA table_info(events)")]


@contextlib.contextmanager
def snapshot(conn):
    """One read transaction: every read inside sees the same log."""
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        conn.execute("COMMIT")


def _where(project: str | None, since: float | None) -> tuple[str, tuple]:
    clauses, args = [], []
    if project is not None:
        clauses.append("project = ?")
        args.append(project)
    if since is not None:
        clauses.append("at >= ?")
        args.append(float(since))
    return "".join(f" AND {c}" for c in clauses), tuple(args)


def iter_rows(conn, *, project: str | None = None, since: float | None = None,
              batch: int = 20_000):
    """Every stored column of the events (of `project`, at or after `since`), in id
    order, as dicts in table order."""
    cols = columns(conn)
    where, args = _where(project, since)
    names = ", ".join(f'"{c}"' for c in cols)
    last = -1
    while True:
        rows = conn.execute(f"SELECT {names} FROM events WHERE id > ?{where} "
                            f"ORDER BY id LIMIT ?", (last, *args, batch)).fetchall()
        if not rows:
            return
        for row in rows:
            yield dict(zip(cols, row))
        last = rows[-1][0]


def chain_head(conn) -> str | None:
    """The last event's `hash` (the hash chain's head), None without the column."""
    if "hash" not in columns(conn):
        return None
    row = conn.execute("SELECT hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
    return row[0] if row else None


def id_high_water(conn) -> int:
    """The largest id the log ever gave (deleted events' included)."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
    return max(int(row[0]) if row else 0, _db.max_event_id(conn))


def time_span(conn) -> tuple[float | None, int]:
    """(the earliest `at`, the number of events)."""
    lo, n = conn.execute("SELECT min(at), count(*) FROM events").fetchone()
    return (None if lo is None else float(lo)), int(n)


def count_until(conn, until: float) -> int:
    """Events with `at` <= until."""
    return conn.execute("SELECT count(*) FROM events WHERE at <= ?",
                        (float(until),)).fetchone()[0]


def present_uids(conn, uids: list[str]) -> set[str]:
    """Those of `uids` the log holds."""
    found: set[str] = set()
    for i in range(0, len(uids), 500):
        part = uids[i: i + 500]
        found.update(r[0] for r in conn.execute(
            f"SELECT uid FROM events WHERE uid IN ({', '.join('?' for _ in part)})", part))
    return found


def has_same(conn, row: dict, cols: list[str]) -> bool:
    """Whether the log holds an event equal to `row` in every column of `cols`."""
    where = " AND ".join(f'"{c}" IS ?' for c in cols)
    return conn.execute(f"SELECT 1 FROM events WHERE {where} LIMIT 1",
                        [row.get(c) for c in cols]).fetchone() is not None


def insert_rows(conn, rows: list[dict], cols: list[str], high_water: int = 0) -> int:
    """Insert `rows` with their own ids (every column of `cols`), in one transaction,
    and lift the id high-water mark to `high_water`. Returns the rows inserted."""
    names = ", ".join(f'"{c}"' for c in cols)
    sql = f"INSERT INTO events ({names}) VALUES ({', '.join('?' for _ in cols)})"
    with _db.atomic(conn):
        conn.executemany(sql, ([r.get(c) for c in cols] for r in rows))
        if high_water > id_high_water(conn):
            conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'events'",
                         (int(high_water),))
            conn.execute("INSERT INTO sqlite_sequence (name, seq) SELECT 'events', ? "
                         "WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence "
                         "WHERE name = 'events')", (int(high_water),))
    return len(rows)


def append_rows(conn, rows: list[dict]) -> int:
    """Append stored rows as new events (new ids, `db.append_events`), in one
    transaction. Returns the last id."""
    import json

    events = []
    for r in rows:
        ev = {k: v for k, v in r.items() if k not in ("id", "hash")}
        ev["files"] = json.loads(r["files"]) if r.get("files") else []
        ev["meta"] = json.loads(r["meta"]) if r.get("meta") else None
        events.append(ev)
    return _db.append_events(conn, events) if events else _db.max_event_id(conn)
