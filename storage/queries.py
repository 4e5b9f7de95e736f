"""Read-only questions to the event log that the data verbs ask before they act (standard
library only): when the memory began (decay's floor) and what a `forget` would delete (its
count and its paths, for `--dry-run` and the confirmation of a folder or a glob)."""

from __future__ import annotations

import datetime as _dt
import json


def memory_birth(conn) -> float | None:
    """Unix time the database was made (its first migration), None when unknown."""
    try:
        row = conn.execute("SELECT min(applied_at) FROM schema_migrations").fetchone()
    except Exception:  # no migrations table: not a database we made
        return None
    if not row or not row[0]:
        return None
    try:
        dt = _dt.datetime.fromisoformat(str(row[0]))
    except ValueError:
        return None
    return dt.replace(tzinfo=_dt.timezone.utc).timestamp()
