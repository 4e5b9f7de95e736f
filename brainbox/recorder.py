"""The record path: normalise raw records and append them to the event log.

Standard library only (no numpy, numba or click): `brainbox record` and the PostToolUse
hook run this in a fresh process per tool call. Validation is per record (see
`brainbox.events`): `parse_jsonl` and `normalize_many` return the good events and a reason
for each bad one, and what they return is always storable. Learning happens later, lazily, when a
process that has the kernels folds the log forward.
"""

from __future__ import annotations

import json
import time

from brainbox import store
from brainbox.events import EventError, normalize
from brainbox.storage import db as dbmod


def normalize_many(raws) -> tuple[list[dict], list[tuple[int, str]]]:
    """Normalise records; returns (events, [(1-based position, message)] of rejects).
    Each record stands alone: `normalize` raises only EventError, so one bad value (an
    exit code past int64, a NaN time, nesting past the stack) never costs the others."""
    good, bad = [], []
    for i, raw in enumerate(raws, start=1):
        try:
            good.append(normalize(raw))
        except EventError as exc:
            bad.append((i, str(exc)))
    return good, bad


def parse_jsonl(lines) -> tuple[list[dict], list[tuple[int, str]]]:
    """Parse JSON lines; blank lines are skipped, bad ones reported by line number."""
    raws, bad = [], []
    for no, line in enumerate(lines, start=1):
        if isinstance(line, bytes):
            line = line.decode("utf-8", "replace")
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            bad.append((no, f"not JSON ({exc.msg})"))
            continue
        except RecursionError:  # the json module recurses once per nesting level
            bad.append((no, "nested too deeply to parse"))
            continue
        if not isinstance(obj, dict):
            bad.append((no, "not a JSON object"))
            continue
        try:
            raws.append((no, normalize(obj)))
        except EventError as exc:
            bad.append((no, str(exc)))
    return [e for _, e in raws], bad


def append(events: list[dict], conn=None, *, retries: int = 5) -> int:
    """Append normalised events; retries briefly when another writer holds the lock."""
    if not events:
        return 0
    own = conn is None
    if own:
        conn = store.connect()
    try:
        for attempt in range(retries + 1):
            try:
                return dbmod.append_events(conn, events)
            except Exception as exc:  # sqlite3 or sqlean OperationalError
                if "locked" not in str(exc) or attempt == retries:
                    raise
                time.sleep(0.02 * (attempt + 1))
    finally:
        if own:
            conn.close()
    return 0
