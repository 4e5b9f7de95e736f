"""The tamper-evident hash chain over the event log (issue 19, item 4). Standard library only:
`append_events` stamps every event it writes, on the record hook's path.

Choices:
- Each event's `hash` is the SHA-256 hex of `prev + canon(row)`: `prev` is the hash of the
  event before it in id order, or, when the ids before it were deleted by brainbox, the
  hash the deletion record gives for the last deleted id (`""` before the first event);
  `canon(row)` is `json.dumps` of the stored column values, id included, with sort_keys,
  separators (",", ":") and ensure_ascii=False. Columns whose value is NULL are left out,
  so a column added later with NULL in old rows (e.g. provenance) keeps their hashes.
  The hash is computed from the row as read back after the insert, so SQLite's type
  affinity (an int `at` stored as REAL) cannot make a row disagree with its hash.
- Hashes are computed under the write lock (`atomic` is BEGIN IMMEDIATE), reading the
  head once per batch: concurrent hook processes append one batch after another.
  A skipped duplicate `uid` would burn an AUTOINCREMENT id (an unrecorded gap), so
  duplicates are filtered before the insert.
- A deletion (`forget`, `consolidate`) writes, in its transaction, one `maintenance`
  event with `meta.op` "erase" (or "checkpoint") whose `gaps` are `[first, last,
  hash of the last deleted]` for each run of consecutive deleted ids, with its `reason`
  and `count`: never the deleted text. The state's fold ignores those ops (it only reads
  their time, which is the log's latest, so the clock does not move). Records of gaps
  are never deleted themselves. A SHA-256 of the deleted rows could confirm a guessed
  short content (a path, a command), so they keep only the chain's hash, which is as
  strong: guessing a row means guessing its id, time and every column, and the hash
  input starts with the previous hash.
- SHA-256 comes from the interpreter's own `_sha2`/`_sha256` module: `hashlib` imports
  OpenSSL's `_hashlib`, 3-12 ms (`python -X importtime`, 5 runs) the record hook did
  not pay before; `_sha256` takes 0.3-0.5 ms.
- `audit` walks the log in id order, streaming (50,000 rows a batch), and names the first
  bad id: `edited` (the row's hash does not match its content, the next row chains from
  its stored hash), `deleted` (an id gap no record covers), `inserted` (a row inside a
  recorded gap, without a hash, or one the chain continues past), `reordered` (a row's
  stored hash matches its content under another id). A chain has no secret: someone who
  rewrites the hashes from an edit on cannot be told from brainbox; the head (`audit`
  prints it, `export` records it) kept elsewhere shows that.
- A project merge (`projectmerge`) rewrites old rows' project; it re-chains from the first
  changed id (`rechain`), and the merge's own maintenance event is in the chain.
- Scale (`benchmarks/measure_audit.py`, the 2-core machine shared): chaining 1,000,000
  stored events (migration 009) took 23.1 s and auditing them 16.0 s (200,000: 5.4 s and
  4.5 s), in batches of 50,000 rows, memory flat.
"""

from __future__ import annotations

import bisect
import json

try:  # the C SHA-256 alone: `hashlib` loads OpenSSL, 3-12 ms on the hook's path
    from _sha2 import sha256 as _sha256  # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256 as _sha256  # Python 3.11
    except ImportError:  # pragma: no cover - a build without them
        from hashlib import sha256 as _sha256

BATCH = 50_000


def canon(cols, row) -> str:
    return json.dumps({k: v for k, v in zip(cols, row) if v is not None}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)


def link(prev: str, cols, row) -> str:
    return _sha256((prev + canon(cols, row)).encode("utf-8")).hexdigest()


def head(conn) -> tuple[int, str]:
    """(the last event's id, its hash) or (0, "")."""
    row = conn.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
    return (int(row[0]), row[1] or "") if row else (0, "")


def new_uids(conn, rows: list[tuple], uid_at: int) -> list[tuple]:
    """`rows` without those whose uid (at `uid_at`) is stored or repeated in the batch."""
    uids = [r[uid_at] for r in rows if r[uid_at] is not None]
    if not uids:
        return rows
    seen = set()
    for i in range(0, len(uids), 500):
        part = uids[i:i + 500]
        seen.update(r[0] for r in conn.execute(
            f"SELECT uid FROM events WHERE uid IN ({', '.join('?' for _ in part)})", part))
    out = []
    for r in rows:
        u = r[uid_at]
        if u is not None:
            if u in seen:
                continue
            seen.add(u)
        out.append(r)
    return out


def stamp(conn, cols, after: int, prev: str) -> int:
    """Hash the events past id `after` (just inserted, in this transaction) onto `prev`;
    `cols`: the hashed columns (`storage.db.CHAIN_COLUMNS`, the id first), as everywhere
    here. Returns the last id (`after` when there was none)."""
    rows = conn.execute(f"SELECT {', '.join(cols)} FROM events WHERE id > ? ORDER BY id",
                        (after,)).fetchall()
    out = []
    for row in rows:
        prev = link(prev, cols, row)
        out.append((prev, row[0]))
    conn.executemany("UPDATE events SET hash = ? WHERE id = ?", out)
    return out[-1][1] if out else after


# --- gaps -----------------------------------------------------------------------------------

class Gaps:
    """The recorded gaps: runs of deleted ids, each with the hash the next event chains to."""

    def __init__(self, runs):
        self.runs = sorted((int(a), int(b), str(h)) for a, b, h in runs)
        self.firsts = [r[0] for r in self.runs]
        self.by_last = {b: (a, h) for a, b, h in self.runs}

    @classmethod
    def load(cls, conn) -> Gaps:
        runs = []
        for (meta,) in conn.execute(f"SELECT meta FROM events WHERE {GAP_RECORDS}"):
            try:
                m = json.loads(meta)
                if m.get("op") in ("erase", "checkpoint"):
                    runs += [g for g in m.get("gaps") or () if len(g) == 3]
            except (ValueError, TypeError, AttributeError):
                continue
        return cls(runs)

    def inside(self, i: int) -> bool:
        k = bisect.bisect_right(self.firsts, i) - 1
        return k >= 0 and self.runs[k][0] <= i <= self.runs[k][1]

    def bridge(self, prev_id: int, i: int) -> str | None:
        """The hash event `i` chains to when ids prev_id+1 .. i-1 are missing: the recorded
        gap ending at i-1, if recorded gaps cover the whole run; else None."""
        end, h = i - 1, None
        while end > prev_id:
            got = self.by_last.get(end)
            if got is None:
                return None
            h = got[1] if h is None else h
            end = got[0] - 1
        return h if end == prev_id else None


def runs_of(ids: list[int]) -> list[tuple[int, int]]:
    """Runs of consecutive ids: [1, 2, 3, 7] -> [(1, 3), (7, 7)]."""
    out: list[list[int]] = []
    for i in sorted(set(ids)):
        if out and i == out[-1][1] + 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return [(a, b) for a, b in out]


def gap_runs(conn, ids: list[int]) -> list[list]:
    """[first, last, hash of last] of each run of consecutive ids (about to be deleted)."""
    out = []
    for a, b in runs_of(ids):
        row = conn.execute("SELECT hash FROM events WHERE id = ?", (b,)).fetchone()
        out.append([a, b, (row[0] or "") if row else ""])
    return out


def seq(conn) -> int:
    """The last id AUTOINCREMENT gave (deleted or not)."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
    return int(row[0]) if row else 0


def gap_record(conn, meta: dict) -> dict:
    """The maintenance event recording gaps (`meta`: op, reason, count, gaps...), at the
    log's latest time, so folding it does not move the state's clock."""
    import time

    at = conn.execute("SELECT max(at) FROM events").fetchone()[0] or time.time()
    return {"at": at, "session": "brainbox:maintenance", "project": "", "kind": "maintenance",
            "files": [], "meta": {**meta, "done_at": time.time()}}


GAP_RECORDS = "kind = 'maintenance' AND meta LIKE '%\"gaps\"%'"


# --- walking the chain ----------------------------------------------------------------------

def _rows(conn, cols, after: int = 0, batch: int = BATCH):
    sel = f"SELECT {', '.join(cols)}, hash FROM events WHERE id > ? ORDER BY id LIMIT ?"
    while True:
        rows = conn.execute(sel, (after, batch)).fetchall()
        if not rows:
            return
        yield from rows
        after = rows[-1][0]


def rechain(conn, cols, start: int = 1) -> tuple[list[list], str]:
    """Recompute the hashes of every event with id >= start, in id order (the caller holds
    the transaction). Id gaps no record covers (ids forgotten before the chain) are bridged
    by the previous event's hash. Returns (those gaps as [first, last, bridge], the head)."""
    gaps = Gaps.load(conn)
    prev_row = conn.execute("SELECT id, hash FROM events WHERE id < ? ORDER BY id DESC LIMIT 1",
                            (start,)).fetchone()
    prev_id, prev = (int(prev_row[0]), prev_row[1] or "") if prev_row else (0, "")
    old: list[list] = []
    out = []
    for row in _rows(conn, cols, after=prev_id):
        i = row[0]
        if i != prev_id + 1:
            h = gaps.bridge(prev_id, i)
            if h is None:
                old.append([prev_id + 1, i - 1, prev])
            else:
                prev = h
        prev = link(prev, cols, row[:-1])
        prev_id = i
        if row[-1] != prev:
            out.append((prev, i))
        if len(out) >= BATCH:
            conn.executemany("UPDATE events SET hash = ? WHERE id = ?", out)
            out = []
    conn.executemany("UPDATE events SET hash = ? WHERE id = ?", out)
    last = seq(conn)
    if last > prev_id and gaps.bridge(prev_id, last + 1) is None:
        old.append([prev_id + 1, last, prev])
    return old, prev


# --- audit ----------------------------------------------------------------------------------

def _find_moved(conn, cols, prev: str, want: int):
    """The row whose stored hash is its content's under id `want` after `prev`: moved."""
    for row in _rows(conn, cols):
        if row[0] != want and row[-1] and link(prev, cols, (want,) + tuple(row[1:-1])) == row[-1]:
            return row[0]
    return None


def _next_row(conn, cols, i: int):
    return conn.execute(f"SELECT {', '.join(cols)}, hash FROM events WHERE id > ? ORDER BY id "
                        "LIMIT 1", (i,)).fetchone()


def audit(conn, cols) -> dict:
    """Verify the chain: {ok, events, head, [bad_id, problem, detail]}."""
    gaps = Gaps.load(conn)
    prev_id, prev, n = 0, "", 0

    def bad(i, problem, detail):
        return {"ok": False, "events": n, "bad_id": i, "problem": problem, "detail": detail,
                "head": prev}

    for row in _rows(conn, cols):
        i, stored = row[0], row[-1]
        if gaps.inside(i):
            return bad(i, "inserted", f"event {i} lies in a gap brainbox recorded as deleted")
        expect = prev
        if i != prev_id + 1:
            h = gaps.bridge(prev_id, i)
            if h is None:
                nxt = _next_row(conn, cols, i)
                if stored is None or (nxt is not None and nxt[-1] == link(prev, cols, nxt[:-1])):
                    return bad(i, "inserted", f"event {i} does not chain and the chain "
                               "continues past it")
                moved = _find_moved(conn, cols, prev, prev_id + 1)
                if moved is not None:
                    return bad(prev_id + 1, "reordered",
                               f"the event stored as id {prev_id + 1} now has id {moved}")
                return bad(prev_id + 1, "deleted",
                           f"ids {prev_id + 1}..{i - 1} are missing and no deletion record "
                           "covers them")
            expect = h
        if stored is None or link(expect, cols, row[:-1]) != stored:
            moved = _find_moved(conn, cols, expect, i) if i == prev_id + 1 else None
            if moved is not None:
                return bad(i, "reordered", f"the event stored as id {i} now has id {moved}")
            nxt = _next_row(conn, cols, i)
            if stored is None:
                return bad(i, "inserted", f"event {i} has no hash")
            if nxt is not None and nxt[-1] == link(stored, cols, nxt[:-1]):
                return bad(i, "edited", f"event {i}'s content does not match its hash")
            if nxt is not None and nxt[-1] == link(expect, cols, nxt[:-1]):
                return bad(i, "inserted", f"event {i} does not chain and the chain "
                           "continues past it")
            return bad(i, "edited", f"event {i}'s hash does not chain")
        prev, prev_id, n = stored, i, n + 1
    last = seq(conn)
    if last > prev_id and gaps.bridge(prev_id, last + 1) is None:
        return bad(prev_id + 1, "deleted", f"ids {prev_id + 1}..{last} (the last "
                   "events) are missing and no deletion record covers them")
    return {"ok": True, "events": n, "head": prev}
