"""Counts of the saved state, read with SQL alone (no numpy): `brainbox stats` without
loading the engine.

The saved state answers `stats` exactly when no event lies past its watermark; then the
counts are those `Memory.stats()` computes after loading it: resources by kind from the
resource table, associations from the stored shape of `edge.src`, sessions from the
state's JSON blob. Otherwise `saved_counts` returns None and the caller folds (the
engine, or the warm daemon). Measured (`python -X importtime`): answering `stats` this
way imports no numpy, scipy or numba; loading the state for it costs 0.6 s idle and
several seconds on a loaded machine (newcomer trial: 1.4-3 s).
"""

from __future__ import annotations

import json


def saved_counts(conn) -> dict | None:
    """{events, kinds: {kind: n}, file_projects, associations, sessions, watermark}, or
    None when events past the saved watermark wait to be folded."""
    blob = conn.execute("SELECT data FROM state_blobs WHERE name = 'json'").fetchone()
    if blob is None:
        if conn.execute("SELECT EXISTS(SELECT 1 FROM events)").fetchone()[0]:
            return None
        extra = {"sessions": [], "watermark": 0}
        edges = 0
    else:
        extra = json.loads(bytes(blob[0]).decode())
        shape = conn.execute(
            "SELECT shape FROM state_blobs WHERE name = 'edge.src'").fetchone()
        edges = int(json.loads(shape[0])[0]) if shape else 0
    watermark = int(extra.get("watermark") or 0)
    if conn.execute("SELECT EXISTS(SELECT 1 FROM events WHERE id > ?)",
                    (watermark,)).fetchone()[0]:
        return None
    kinds = dict(conn.execute("SELECT kind, count(*) FROM resources GROUP BY kind").fetchall())
    projects = dict(conn.execute(
        "SELECT kind, count(DISTINCT project) FROM resources GROUP BY kind").fetchall())
    return {
        "events": conn.execute("SELECT count(*) FROM events").fetchone()[0],
        "kinds": kinds,
        "projects_by_kind": projects,
        "associations": edges,
        "sessions": len(extra.get("sessions") or ()),
        "watermark": watermark,
    }
