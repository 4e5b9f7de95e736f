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
    from brainbox.storage import chain
    from brainbox.storage.db import CHAIN_COLUMNS, append_events, atomic

    with atomic(conn):
        merge_id = append_events(conn, [event])
        first = conn.execute("SELECT min(id) FROM events WHERE project = ? AND id < ?",
                             (src, merge_id)).fetchone()[0]
        moved = conn.execute(
            "UPDATE events SET project = ?, worktree = coalesce(worktree, ?) "
            "WHERE project = ? AND id < ?", (dst, src, src, merge_id)).rowcount
        if first is not None:  # the rewritten rows and all after them: hashed anew
            chain.rechain(conn, CHAIN_COLUMNS, int(first))
    return merge_id, int(moved)


def project_files(conn, project: str) -> dict[str, int]:
    """The files the project's events touch, each with how many events touch it."""
    rows = conn.execute(
        "SELECT j.value, count(DISTINCT e.id) FROM events AS e, json_each(e.files) AS j "
        "WHERE e.project = ? GROUP BY j.value", (project,))
    return {str(path): int(n) for path, n in rows}


def events_mentioning(conn, project: str, files, texts) -> list[int]:
    """Ids of the project's events that touch one of `files` (exactly) or whose command,
    arguments, error or prompt text contain one of `texts` (case-sensitive substrings):
    a prompt naming a forgotten file goes with it (issue 19: no byte of the path stays)."""
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
                "OR instr(args, ?) > 0 OR instr(error, ?) > 0 OR instr(prompt, ?) > 0)",
                (project, text, text, text, text)))
    return sorted(ids)


def project_event_ids(conn, project: str) -> list[int]:
    """Every event of the project, prompts included."""
    return [r[0] for r in conn.execute("SELECT id FROM events WHERE project = ? ORDER BY id",
                                       (project,))]


def delete_events(conn, ids, reason: str = "forget", *, op: str = "erase",
                  extra: dict | None = None) -> int:
    """Delete these events and append the record of the gaps they leave in the hash chain
    (`storage.chain`: [first, last, hash of the last deleted] of each run of ids, the
    reason and the count; never their text), in one transaction (the caller's when it
    holds one). Records of gaps are never deleted. Returns how many went (0 writes
    nothing)."""
    from brainbox.storage import chain
    from brainbox.storage.db import append_events, atomic

    with atomic(conn):
        keep = {r[0] for r in conn.execute(f"SELECT id FROM events WHERE {chain.GAP_RECORDS}")}
        ids = sorted({int(i) for i in ids} - keep)
        if not ids:
            return 0
        gaps = chain.gap_runs(conn, ids)
        record = chain.gap_record(conn, {"op": op, "reason": reason, "gaps": gaps})
        before = conn.total_changes
        for k in range(0, len(ids), 500):
            part = ids[k:k + 500]
            conn.execute(f"DELETE FROM events WHERE id IN ({', '.join('?' for _ in part)})",
                         part)
        deleted = conn.total_changes - before
        last, prev = chain.head(conn)
        if chain.seq(conn) > last:  # the tail went: chain to its last deleted hash
            prev = {b: h for _, b, h in gaps}.get(chain.seq(conn), prev)
        record["meta"].update(count=deleted, **(extra or {}))
        append_events(conn, [record], prev=prev)
    return deleted


def delete_events_mentioning(conn, project: str, path: str) -> int:
    """Delete every event of `project` whose files, command, args or error mention `path`."""
    needle = f"%{path}%"
    ids = [r[0] for r in conn.execute(
        "SELECT id FROM events WHERE project = ? AND (files LIKE ? OR command LIKE ? OR "
        "args LIKE ? OR error LIKE ?)", (project, needle, needle, needle, needle))]
    return delete_events(conn, ids)


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


# --- forget --session / --before, consolidate (brainbox.retention) ------------------------

_NOT_GAPS = "NOT (kind = 'maintenance' AND meta LIKE '%\"gaps\"%')"


def session_event_ids(conn, session: str) -> list[int]:
    """Every event of the session (records of deletions never)."""
    return [r[0] for r in conn.execute(
        f"SELECT id FROM events WHERE session = ? AND {_NOT_GAPS} ORDER BY id", (session,))]


def event_ids_before(conn, cutoff: float) -> list[int]:
    """Every event older than `cutoff` (Unix seconds), records of deletions never."""
    return [r[0] for r in conn.execute(
        f"SELECT id FROM events WHERE at < ? AND {_NOT_GAPS} ORDER BY id", (float(cutoff),))]


def prefix_before(conn, cutoff: float) -> int:
    """The last id C such that every event with id <= C is older than `cutoff` (0 when the
    first is not): the longest run of the log `consolidate` can fold into a checkpoint."""
    first_new = conn.execute(f"SELECT min(id) FROM events WHERE at >= ? AND {_NOT_GAPS}",
                             (float(cutoff),)).fetchone()[0]
    if first_new is None:
        return int(conn.execute(f"SELECT coalesce(max(id), 0) FROM events WHERE {_NOT_GAPS}"
                                ).fetchone()[0])
    return int(conn.execute(f"SELECT coalesce(max(id), 0) FROM events WHERE id < ? AND "
                            f"{_NOT_GAPS}", (first_new,)).fetchone()[0])


def plain_event_count(conn) -> int:
    """Events that are not records of deletions."""
    return int(conn.execute(f"SELECT count(*) FROM events WHERE {_NOT_GAPS}").fetchone()[0])


def ids_upto(conn, last: int) -> list[int]:
    """The ids <= last, records of deletions left out."""
    return [r[0] for r in conn.execute(
        f"SELECT id FROM events WHERE id <= ? AND {_NOT_GAPS} ORDER BY id", (int(last),))]


def checkpoint_keys(conn) -> set[tuple[str, str]]:
    """(project, key) of every resource the consolidation checkpoint holds."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'checkpoint_resources'"
                        ).fetchone():
        return set()
    return {(str(p), str(k)) for p, k in conn.execute(
        "SELECT project, key FROM checkpoint_resources")}
