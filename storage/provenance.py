"""Provenance questions to the event log (issue 19, item 3; standard library only): the
events of some sources, the sources of the events behind a file or an association, and
the tools' durations the hooks recorded.

`events.source` (migration 010) is "hook", "import", "mcp", "cli", or NULL, which the
questions here call "unknown" (the replay, the demo, a library caller, an old row that
named no hook).
"""

from __future__ import annotations

import json
import statistics

from brainbox.storage.db import iter_events

SOURCES = ("hook", "import", "mcp", "cli", "unknown")


def events_of(conn, sources, after: int = 0):
    """The events of `sources` (names of SOURCES) with id > after, in id order."""
    named = [s for s in sources if s != "unknown"]
    clause = "source IN ({})".format(", ".join("?" for _ in named)) if named else "0"
    if "unknown" in sources:
        clause += " OR source IS NULL"
    return iter_events(conn, after=after, where=f" AND ({clause})", args=tuple(named))


def _naming(path: str) -> tuple[str, str]:
    """A LIKE prefilter on the stored JSON list (a `%` or `_` in the path only widens it)
    and the exact test, for events naming file `path`."""
    return f"%{json.dumps(path, ensure_ascii=False)}%", path


_NAMES = ("files LIKE ? AND EXISTS (SELECT 1 FROM json_each(events.files) "
          "WHERE value = ?)")


def file_sources(conn, project: str, path: str) -> dict[str, int]:
    """Events of `project` naming file `path`, counted by source."""
    rows = conn.execute(
        f"SELECT coalesce(source, 'unknown'), count(*) FROM events WHERE project = ? AND "
        f"{_NAMES} GROUP BY 1 ORDER BY 1", (project, *_naming(path)))
    return {str(s): int(n) for s, n in rows}


def pair_sources(conn, project: str, a: str, b: str) -> dict[str, int]:
    """The events behind an association of files `a` and `b` of `project`, counted by
    source: the events naming either file in the sessions that named both (a window is
    a session's, so an association is learnt only there)."""
    rows = conn.execute(
        f"SELECT coalesce(source, 'unknown'), count(*) FROM events WHERE project = ? AND "
        f"(({_NAMES}) OR ({_NAMES})) AND session IN ("
        f"SELECT session FROM events WHERE project = ? AND {_NAMES} INTERSECT "
        f"SELECT session FROM events WHERE project = ? AND {_NAMES}) GROUP BY 1 ORDER BY 1",
        (project, *_naming(a), *_naming(b), project, *_naming(a), project, *_naming(b)))
    return {str(s): int(n) for s, n in rows}


def tool_durations(conn) -> dict[str, dict]:
    """Each tool's recorded call durations (`meta.duration_ms`, Claude Code's PostToolUse):
    {tool: {"calls": n, "median_ms": m}}, tools by name."""
    rows = conn.execute(
        "SELECT tool, json_extract(meta, '$.duration_ms') FROM events WHERE kind = 'tool' "
        "AND meta LIKE '%\"duration_ms\"%' AND json_valid(meta)")
    by: dict[str, list[int]] = {}
    for tool, ms in rows:
        if isinstance(ms, int) and tool:
            by.setdefault(str(tool), []).append(ms)
    return {t: {"calls": len(v), "median_ms": statistics.median(v)}
            for t, v in sorted(by.items())}


def new_calls(conn, events: list[dict]) -> list[dict]:
    """`events` without the tool calls already stored: a call is its session and its
    `meta.tool_use_id` (a PostToolBatch after the PostToolUse of its calls). One query per
    session, on the events' session index."""
    out, known = [], {}
    for e in events:
        use = (e.get("meta") or {}).get("tool_use_id")
        if e.get("kind") != "tool" or not use:
            out.append(e)
            continue
        seen = known.get(e["session"])
        if seen is None:
            seen = known[e["session"]] = {str(r[0]) for r in conn.execute(
                "SELECT json_extract(meta, '$.tool_use_id') FROM events WHERE session = ? "
                "AND kind = 'tool' AND meta LIKE '%\"tool_use_id\"%' AND json_valid(meta)",
                (e["session"],)) if r[0] is not None}
        if use not in seen:
            seen.add(use)
            out.append(e)
    return out
