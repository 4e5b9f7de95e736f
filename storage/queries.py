"""Read-only questions to the event log that the data verbs ask before they act (standard
library only): when the memory began (decay's floor) and what a `forget` would delete (its
count and its paths, for `--dry-run` and the confirmation of a folder or a glob)."""

from __future__ import annotations

import datetime as _dt


def memory_birth(conn) -> float | None:
    """Unix time the database was made (its first migration), None when unknown."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                        "name = 'schema_migrations'").fetchone():
        return None
    row = conn.execute("SELECT min(applied_at) FROM schema_migrations").fetchone()
    if not row or not row[0]:
        return None
    try:
        dt = _dt.datetime.fromisoformat(str(row[0]))
    except ValueError:
        return None
    return dt.replace(tzinfo=_dt.UTC).timestamp()


# --- forget -----------------------------------------------------------------------------

def stored_projects(conn) -> list[str]:
    """Every project root that has events."""
    return [r[0] for r in conn.execute("SELECT DISTINCT project FROM events WHERE project != ''")]


def project_event_counts(conn) -> dict[str, int]:
    """Each project key that has events, with how many."""
    return {str(p): int(n) for p, n in conn.execute(
        "SELECT project, count(*) FROM events WHERE project != '' GROUP BY project")}


def merge_project(conn, event: dict, src: str, dst: str) -> tuple[int, int]:
    """Append the `merge_project` maintenance `event` and move every earlier event of
    project `src` to `dst` (keeping `src` as its worktree when it had none), in one
    transaction. Returns (the event's id, events moved)."""
    from brainbox.storage.db import append_events, atomic

    with atomic(conn):
        merge_id = append_events(conn, [event])
        moved = conn.execute(
            "UPDATE events SET project = ?, worktree = coalesce(worktree, ?) "
            "WHERE project = ? AND id < ?", (dst, src, src, merge_id)).rowcount
    return merge_id, int(moved)


def project_files(conn, project: str) -> dict[str, int]:
    """The files the project's events touch, each with how many events touch it."""
    rows = conn.execute(
        "SELECT j.value, count(DISTINCT e.id) FROM events AS e, json_each(e.files) AS j "
        "WHERE e.project = ? GROUP BY j.value", (project,))
    return {str(path): int(n) for path, n in rows}


def events_mentioning(conn, project: str, files, texts) -> list[int]:
    """Ids of the project's events that touch one of `files` (exactly) or whose command,
    arguments or error text contain one of `texts` (case-sensitive substrings)."""
    ids: set[int] = set()
    files = sorted(set(files))
    for i in range(0, len(files), 500):
        chunk = files[i:i + 500]
        ids.update(r[0] for r in conn.execute(
            "SELECT DISTINCT e.id FROM events AS e, json_each(e.files) AS j "
            f"WHERE e.project = ? AND j.value IN ({', '.join('?' for _ in chunk)})",
            (project, *chunk)))
    for text in sorted(set(texts)):
        if text:
            ids.update(r[0] for r in conn.execute(
                "SELECT id FROM events WHERE project = ? AND (instr(command, ?) > 0 "
                "OR instr(args, ?) > 0 OR instr(error, ?) > 0)", (project, text, text, text)))
    return sorted(ids)


def project_event_ids(conn, project: str) -> list[int]:
    """Every event of the project, prompts included."""
    return [r[0] for r in conn.execute("SELECT id FROM events WHERE project = ? ORDER BY id",
                                       (project,))]


def delete_events(conn, ids) -> int:
    """Delete the events with these ids in one transaction; returns how many went."""
    from brainbox.storage.db import atomic

    ids = list(ids)
    with atomic(conn):
        before = conn.total_changes
        conn.executemany("DELETE FROM events WHERE id = ?", [(i,) for i in ids])
        return conn.total_changes - before


# --- the code index kept current (brainbox.reindex) --------------------------------------

def edits_after(conn, after: int, limit: int) -> list[tuple[int, str, list[str]]]:
    """The first `limit` tool events with action `edit` (Edit, Write, a shell `rm`, `sed
    -i`, a redirect: `brainbox.events`) past event id `after`, in id order: `(id,
    project, files)`."""
    import json

    rows = conn.execute(
        "SELECT id, project, files FROM events WHERE id > ? AND kind = 'tool' "
        "AND action = 'edit' ORDER BY id LIMIT ?", (int(after), int(limit)))
    return [(int(i), str(p), [str(f) for f in json.loads(files or "[]")])
            for i, p, files in rows]


def project_edited_files(conn, project: str, after: int) -> list[str]:
    """The files the project's edit events past event id `after` touch, sorted."""
    return [str(r[0]) for r in conn.execute(
        "SELECT DISTINCT j.value FROM events AS e, json_each(e.files) AS j "
        "WHERE e.id > ? AND e.project = ? AND e.kind = 'tool' AND e.action = 'edit' "
        "ORDER BY j.value", (int(after), project))]
