"""Keeping the code index current from the event log (issue 16): what the daemon re-indexes.

Issue 16: "Edits seen by the PostToolUse hook mark files stale, and the daemon (never the
hook) re-indexes them." The hook writes nothing new for it: the event log already says
which files were edited (tool events with action `edit`: Edit, Write, MultiEdit, a shell
`rm`, `sed -i`, `>`...: `brainbox.events`, `brainbox.shellcmd`). What is kept besides is
how far the log has been applied, two event ids in `brainbox_meta`:
- `CURSOR_KEY`: every edit event up to it has been applied to the index of its project
  (the daemon's `tick` moves it);
- `codeindex.BUILT_KEY` + root: the last event before `brainbox index` listed the
  project's files (`codeindex.build` writes it), so edits up to it are in what it read.
A file of an indexed project is stale when an edit event past both ids names it
(`stale`). There are no stale marks to keep in step with the log, and `forget`, which
deletes events, deletes their staleness with them.

`tick(conn)` is one bounded step: the next `MAX_EVENTS` edit events past the cursor,
grouped by project (`select`, pure), at most `MAX_FILES` files in all, cut at an event's
boundary so the cursor never skips half an event; one `codeindex.index_files` call per
project (keyword index: incremental by hash, so a file edited back to its indexed bytes
is only hashed; a file gone from disk is dropped). Projects without a code index are
skipped (`codesearch.indexed`). A file the index does not hold yet (created by the agent)
is indexed only when `brainbox index` would list it (`codeindex.listed`: tracked by git,
or not ignored by a .gitignore), never an ignored `.env`.

Vectors: re-chunking a file deletes its chunks' vectors with them (`storage.vectors`), so
search never ranks a vector of old text; the new chunks have none until the next
`brainbox index`, which embeds what is missing once a project has vectors. Until then
those chunks are found by keywords only. The daemon loads no embedding model for this:
onnxruntime and the model cost 0.45-0.55 s and hundreds of MB (DESIGN §8).

Without a daemon nothing re-indexes until the next `brainbox index`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from brainbox import codeindex, codesearch
from brainbox.storage import queries
from brainbox.storage.db import atomic, get_meta, set_meta

CURSOR_KEY = "code_reindex_cursor"
# Events read per tick, and files re-indexed per tick across projects. 64 files: on the
# sympy snapshot indexing took 10.5 s for 9,000 files (about 1.2 ms a file, more for a
# large one), so a tick is tens of milliseconds of parsing, well under a second even for
# 64 large files; the cursor catches up over later ticks.
MAX_EVENTS = 500
MAX_FILES = 64


@dataclass
class Selection:
    """What one tick re-indexes: files per project, in the order first edited, and the
    last event id it covers (the new cursor)."""

    cursor: int
    files: dict[str, list[str]] = field(default_factory=dict)

    def count(self) -> int:
        return sum(len(v) for v in self.files.values())


def select(rows, cursor: int, indexed, built: dict[str, int],
           max_files: int = MAX_FILES) -> Selection:
    """The files the edit events `rows` (`(id, project, files)`, id order, all past
    `cursor`) ask to re-index: only in projects `indexed(project)` says have a code index,
    only events past the project's `built` id; at most `max_files` distinct files, cut
    before the event that would pass it (a first event alone over the bound is taken
    whole, so the cursor always moves)."""
    out = Selection(cursor)
    seen: dict[str, set[str]] = {}
    known: dict[str, bool] = {}
    for event_id, project, files in rows:
        if project not in known:
            known[project] = bool(project) and bool(indexed(project))
        if known[project] and event_id > built.get(project, 0) and files:
            have = seen.setdefault(project, set())
            new = [f for f in dict.fromkeys(files) if f not in have]
            if new and out.count() and out.count() + len(new) > max_files:
                break
            have.update(new)
            out.files.setdefault(project, []).extend(new)
        out.cursor = event_id
    out.files = {p: fs for p, fs in out.files.items() if fs}
    return out


def built_at(conn, project: str) -> int:
    """The last event id before `brainbox index` last listed `project`'s files (0: never)."""
    return int(get_meta(conn, codeindex.BUILT_KEY + project, "0") or 0)


def cursor(conn) -> int:
    return int(get_meta(conn, CURSOR_KEY, "0") or 0)


def tick(conn, *, max_events: int = MAX_EVENTS, max_files: int = MAX_FILES) -> dict | None:
    """Apply the next edit events to the code index (module docstring). None when there
    were none; else {cursor, files (re-indexed or checked), indexed, removed, unchanged,
    skipped (new files `brainbox index` would not list), projects}."""
    start = cursor(conn)
    rows = queries.edits_after(conn, start, max_events)
    if not rows:
        return None
    built: dict[str, int] = {}
    for _id, project, _files in rows:
        if project not in built:
            built[project] = built_at(conn, project)
    sel = select(rows, start, lambda p: codesearch.indexed(conn, p), built, max_files)
    out = {"cursor": sel.cursor, "files": 0, "indexed": 0, "removed": 0, "unchanged": 0,
           "skipped": 0, "projects": sorted(sel.files)}
    for project, files in sel.files.items():
        keep = _takeable(conn, project, files)
        out["skipped"] += len(files) - len(keep)
        report = codeindex.index_files(conn, project, sorted(keep))
        out["files"] += report.seen
        out["indexed"] += report.indexed
        out["removed"] += report.removed
        out["unchanged"] += report.unchanged
    with atomic(conn):
        set_meta(conn, CURSOR_KEY, str(sel.cursor))
    return out


def stale(conn, project: str) -> list[str]:
    """The files of `project` edited since the code index last read them: named by an
    edit event past both the daemon's cursor and the last `brainbox index`. Files the
    index will not take (outside the project, ignored) are not counted."""
    after = max(cursor(conn), built_at(conn, project))
    return sorted(_takeable(conn, project, queries.project_edited_files(conn, project, after)))


def _takeable(conn, project: str, files) -> set[str]:
    """Those of `files` the index holds, and the others `brainbox index` would list."""
    known = codeindex.indexed_paths(conn, project)
    new = [f for f in files if f not in known]
    return set(files) - set(new) | codeindex.listed(project, new)
