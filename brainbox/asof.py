"""Answers as of a time (issue 19 item 1): `recall`, `predict`, `explain`, `stats` and `log`
with `--as-of T` give what memory would have answered at T.

Choices:
- As of T means from the events with `at` <= T, in id order (ids order the log; `at` may
  go back and forth across concurrent sessions, and an imported transcript's events carry
  their own old times): exactly the memory that only ever saw those events, because the
  state is a fresh `State` folded over them (`learning.fold`, as `Memory.rebuild` does).
  Nothing is saved: an `AsOf` never writes the database.
- Its clock is the fold's, the newest `at` folded (<= T). Live recall never reads the wall
  clock: its "now" for recency is the state's clock, the newest event it folded, so that
  is the answer memory gave at T; setting the clock to T itself would give an answer no
  memory ever gave, between two events.
- The log as it is now: events a `forget` deleted are gone from every past answer too,
  and a project merge's rewritten keys are the merged ones. The code index (not event
  sourced) is today's.
- After `consolidate`, folding starts from its checkpoint (as `rebuild` does), and a time
  before the checkpoint's last event is refused: those events are gone.
- No cache: folding from scratch costs what `brainbox rebuild` costs without the save
  (measured in the README's section), and each `--as-of` is a one-off question from the
  command line; a daemon does not answer it.
"""

from __future__ import annotations

import datetime as _dt

from brainbox import BrainboxError, learning
from brainbox.memory import Memory
from brainbox.recall import Index
from brainbox.state import State
from brainbox.storage import db as dbmod
from brainbox.storage import eventlog


def iso(at: float) -> str:
    return _dt.datetime.fromtimestamp(float(at), _dt.UTC).isoformat(timespec="seconds") \
        .replace("+00:00", "Z")


class AsOf(Memory):
    """A read-only `Memory` whose state is folded from the events with `at` <= `at`."""

    def __init__(self, conn, at: float, *, path: str | None = None):
        super().__init__(conn, autosave=False, path=path)
        self.at = float(at)

    @classmethod
    def open(cls, path=None, at: float | None = None) -> AsOf:  # type: ignore[override]
        """The memory of the database `path` as of `at`; BrainboxError (one line) when
        the log is empty or `at` is before its first event."""
        mem = Memory.open(path, autosave=False)
        try:
            first, n = eventlog.time_span(mem.conn)
            if not n:
                raise BrainboxError("the memory has no events: there is nothing to answer "
                                    "as of a time")
            if at is None or float(at) < first:
                raise BrainboxError(f"--as-of {iso(at or 0)} is before the first event "
                                    f"({iso(first)})")
        except BaseException:
            mem.close()
            raise
        return cls(mem.conn, at, path=mem.path)

    @property
    def state(self) -> State:
        if self._state is None:
            from brainbox import retention

            st = retention.base_state(self.conn)  # `consolidate`'s checkpoint, else empty
            if st.watermark and self.at < st.clock:
                raise BrainboxError(
                    f"--as-of {iso(self.at)} is before the consolidation checkpoint "
                    f"({iso(st.clock)}): the events before it were folded into it")
            learning.fold(st, dbmod.iter_events(self.conn, after=st.watermark, until=self.at))
            self._state = st
            self._index = Index(st)
        return self._state

    def sync(self) -> int:
        _ = self.state
        return 0

    def save(self, *, replace: bool = False) -> None:
        raise BrainboxError("a memory as of a time is read-only")

    def rebuild(self) -> dict:
        raise BrainboxError("a memory as of a time is read-only")

    def record(self, event) -> int:
        raise BrainboxError("a memory as of a time is read-only")

    def stats(self) -> dict:
        out = super().stats()
        out["events"] = eventlog.count_until(self.conn, self.at)
        out["as_of"] = self.at
        return out

    def count_events(self) -> int:
        return eventlog.count_until(self.conn, self.at)


def injection_log(mem: AsOf, pending: list[dict] = (), *, session: str | None = None,
                  limit: int | None = None) -> list[dict]:
    """`brainbox log --as-of T`: the injections shown at or before T, each with what had
    become of it by T: scored by a `feedback` event at or before T, else pending (scored
    later, or still in a session file)."""
    from brainbox import corrections

    scored, later = [], []
    for ev in dbmod.feedback_events(mem.conn, session):
        (scored if float(ev["at"]) <= mem.at else later).append(ev)
    waiting = [{"session": ev["session"], "project": ev["project"], "at": it["at"],
                "items": [it]}
               for ev in later if (ev.get("meta") or {}).get("op") == "feedback"
               for it in (ev.get("meta") or {}).get("items") or ()
               if it.get("at") is not None and float(it["at"]) <= mem.at]
    waiting += [b for b in pending if float(b.get("at") or 0) <= mem.at]
    return corrections.entries(scored, waiting, session=session, limit=limit)


__all__ = ["AsOf", "injection_log", "iso"]
