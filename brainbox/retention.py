"""`forget --session S`, `forget --before T` and `consolidate --keep 30d` (issue 19, items 5
and 6): deleting events by session, by age, and dropping old raw events while the folded
state stays what they produced. Standard library at import (`forget --dry-run` needs no
numpy); the state is loaded only to consolidate.

Choices:
- Every deletion goes through `storage.chain.erase`: in its transaction, one maintenance
  event records the gaps it leaves (ids and the hash chain's bridge, never the text), so
  `brainbox audit` stays ok; records of gaps are never deleted, by any of these.
- After deleting, the memory is rebuilt (state blobs and resource rows rewritten, so no
  key of a forgotten file stays in them), `secure_delete` has zeroed the freed pages, and
  a TRUNCATE checkpoint empties the WAL (`storage.db.scrub`).
- T is an ISO 8601 date or time (UTC when no zone), Unix seconds, or a duration back from
  now (`30d`, `12h`, `2w`, `90m`, `45s`). `--before` later than now, or deleting every
  event of the log, is refused without `--yes`; an empty session or T is refused.
- `consolidate --keep D` folds the longest run of the log, from the first id, whose events
  are all older than now - D (an imported old event with a new id stops the run there:
  the fold needs a prefix) into a checkpoint (`checkpoint_blobs`, `checkpoint_resources`:
  the state's arrays and resources as of the last dropped event), and deletes that run in
  the same transaction. Its record is a maintenance event with `op` "checkpoint": the
  gaps, `upto` (the last folded id), the count and a SHA-256 digest of the checkpoint's
  rows. `Memory.rebuild` starts from the checkpoint and folds the events past it, so the
  state equals the one before. A second consolidate starts from the first's checkpoint.
- `forget PATH` refuses a file the checkpoint holds (its events are folded into the
  checkpoint's arrays and cannot be taken out of them one by one); `forget --session`
  and `--before` delete the surviving events only and say how many are folded in it.
"""

from __future__ import annotations

import time

from brainbox import BrainboxError
from brainbox.events import duration
from brainbox.storage import queries


class RetentionRefused(BrainboxError):
    """Input `forget --session/--before` or `consolidate` will not act on: exit 2."""


def cutoff(value: str | None, now: float | None = None, option: str = "--before") -> float:
    """The Unix time `value` names: a duration back from `now`, else an ISO 8601 time."""
    from brainbox.events import EventError, parse_time

    if value is None or not str(value).strip():
        raise RetentionRefused(f"{option} is empty; give a time (2026-11-01) or a duration (30d)")
    now = time.time() if now is None else now
    secs = duration(value)
    if secs is not None:
        return now - secs
    try:
        return parse_time(value)
    except EventError:
        raise RetentionRefused(f"{option}: expected an ISO 8601 time (2026-11-01T09:30Z) or "
                               f"a duration (30d, 12h, 2w), got {value!r}") from None


def plan(conn, *, session: str | None = None, before: str | None = None,
         now: float | None = None, yes: bool = False) -> dict:
    """What `forget --session/--before` deletes: {what, ids, cutoff?}; refuses bad input."""
    if (session is None) == (before is None):
        raise RetentionRefused("forget: give one of PATH, --session or --before")
    now = time.time() if now is None else now
    if session is not None:
        if not session.strip():
            raise RetentionRefused("forget: --session is empty; name a session")
        out = {"what": f"session {session}", "session": session,
               "ids": queries.session_event_ids(conn, session)}
    else:
        t = cutoff(before, now)
        if t > now + 60 and not yes:
            raise RetentionRefused(f"forget: --before {before} is in the future, so every "
                                   "event would go; pass --yes to mean it (--dry-run counts)")
        out = {"what": f"events before {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(t))} "
                       "UTC", "cutoff": t, "ids": queries.event_ids_before(conn, t)}
    kept = len(queries.checkpoint_keys(conn))
    if kept:
        out["checkpoint_resources"] = kept
    if out["ids"] and len(out["ids"]) >= queries.plain_event_count(conn) and not yes:
        raise RetentionRefused(f"forget: this deletes every event ({len(out['ids'])}); pass "
                               "--yes to mean it (--dry-run counts)")
    return out


def counted(conn, *, session: str | None = None, before: str | None = None,
            now: float | None = None) -> dict:
    """`forget --session/--before --dry-run`: what would go, deleting nothing."""
    from brainbox.forgetting import NotInMemory

    p = plan(conn, session=session, before=before, now=now, yes=True)
    ids = p.pop("ids")
    if not ids:
        raise NotInMemory(f"nothing in memory: no {p['what']}")
    return {"dry_run": True, **p, "events": len(ids)}


def forget(mem, *, session: str | None = None, before: str | None = None,
           now: float | None = None, yes: bool = False) -> dict:
    """`forget --session S` / `forget --before T`: delete those events (with the record of
    their gaps), rebuild, scrub. Nothing to delete is `forgetting.NotInMemory` (exit 1)."""
    from brainbox.forgetting import NotInMemory
    from brainbox.storage import db as dbmod

    dbmod.quick_check(mem.conn)  # damaged pages: a one-line error before any write
    p = plan(mem.conn, session=session, before=before, now=now, yes=yes)
    ids = p.pop("ids")
    if not ids:
        raise NotInMemory(f"nothing in memory: no {p['what']}")
    reason = "forget --session" if session is not None else "forget --before"
    deleted = queries.delete_events(mem.conn, ids, reason)
    mem.rebuild()
    dbmod.scrub(mem.conn)
    return {"dry_run": False, **p, "deleted_events": deleted}


# --- consolidate ---------------------------------------------------------------------------

def base_state(conn):
    """The state folding starts from: the consolidation checkpoint, else an empty State."""
    from brainbox.state import State
    from brainbox.storage import arrays

    got = arrays.load_checkpoint(conn)
    return State() if got is None else State.from_arrays(*got)


def consolidate(mem, keep: str, *, now: float | None = None, dry_run: bool = False) -> dict:
    """Fold the events older than the keep window into the checkpoint and drop them (see
    the module's notes). Returns {dry_run, keep, cutoff, events, upto}."""
    import itertools

    from brainbox import learning
    from brainbox.storage import arrays
    from brainbox.storage import db as dbmod

    secs = duration(keep)
    if secs is None or secs <= 0:
        raise RetentionRefused(f"consolidate: --keep expects a positive duration such as 30d "
                               f"or 12h, got {keep!r}")
    now = time.time() if now is None else now
    t = now - secs
    upto = queries.prefix_before(mem.conn, t)
    ids = queries.ids_upto(mem.conn, upto)
    out = {"dry_run": dry_run, "keep": keep, "cutoff": t, "events": len(ids), "upto": upto}
    if dry_run or not ids:
        return out
    dbmod.quick_check(mem.conn)
    st = base_state(mem.conn)
    learning.fold(st, itertools.takewhile(lambda e: e["id"] <= upto,
                                          dbmod.iter_events(mem.conn, after=st.watermark)))
    with dbmod.atomic(mem.conn):
        arrays.save_checkpoint(mem.conn, st.to_arrays(), st.resource_rows(0))
        digest = arrays.checkpoint_digest(mem.conn)
        out["events"] = queries.delete_events(mem.conn, ids, "consolidate", op="checkpoint",
                                              extra={"upto": upto, "keep": keep,
                                                     "digest": digest})
    mem.rebuild()
    dbmod.scrub(mem.conn)
    return out
