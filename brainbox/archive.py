"""`brainbox export` and `brainbox restore` (issue 19 item 2): the event log, the truth the
state is folded from, as a JSONL file and back.

The file: a first line, the manifest, then one event per line, every stored column
(`storage.eventlog`) as stored (redacted when it was recorded; nothing is redacted again
or decoded: `files` and `meta` are their JSON text):

    {"format": "brainbox-events", "version": 1, "schema": 8, "columns": [...],
     "events": N, "kinds": {...}, "first_id": 1, "last_id": N, "id_high_water": N,
     "project": null, "since": null, "chain_head": null, "sha256": "..."}

`sha256` is over the event lines' bytes (each with its newline); `chain_head` is the hash
of the log's last event where the hash chain exists (a `hash` column), else null. An
export of the same log is the same bytes.

A restore reads and checks the whole file before it opens the database (the manifest,
every line, the schema, the counts, the ids, the sha256): a broken file is one line naming
its line number and nothing is touched. Into an empty log every id and uid is kept (so
the chain and `audit` hold); with `merge` the events whose uid the log lacks are appended
with new ids (an event without a uid: when no stored event has its every column but the
id and hash). Then the state is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os

from brainbox import BrainboxError

FORMAT = "brainbox-events"
VERSION = 1
REQUIRED = {"id": int, "at": (int, float), "session": str, "project": str, "kind": str}
NEW_COLUMNS = ("hash",)  # a merged event's own value of these is the target log's, not the file's


class ArchiveError(BrainboxError):
    """An export or restore refused: one line, nothing written."""


def _line(row: dict) -> bytes:
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode("utf-8") + b"\n"


def export(conn, write, *, project: str | None = None, since: float | None = None) -> dict:
    """Write the manifest and the events (of `project`, at or after `since`) with
    `write(bytes)`, from one snapshot of the log. Returns the manifest."""
    from brainbox.storage import db, eventlog

    with eventlog.snapshot(conn):
        digest, n, first, last, kinds = hashlib.sha256(), 0, None, None, {}
        for row in eventlog.iter_rows(conn, project=project, since=since):
            digest.update(_line(row))
            n += 1
            first = row["id"] if first is None else first
            last = row["id"]
            kinds[row["kind"]] = kinds.get(row["kind"], 0) + 1
        manifest = {"format": FORMAT, "version": VERSION, "schema": db.SCHEMA_VERSION,
                    "columns": eventlog.columns(conn), "events": n,
                    "kinds": dict(sorted(kinds.items())), "first_id": first, "last_id": last,
                    "id_high_water": eventlog.id_high_water(conn), "project": project,
                    "since": since, "chain_head": eventlog.chain_head(conn),
                    "sha256": digest.hexdigest()}
        write(json.dumps(manifest, ensure_ascii=False).encode("utf-8") + b"\n")
        for row in eventlog.iter_rows(conn, project=project, since=since):
            write(_line(row))
    return manifest


def export_file(conn, out: str, **kw) -> dict:
    """`export` into the file `out`, written 0600 and atomically (`store.write_private`: a
    temporary file beside it, renamed over it when complete), so an interrupted export
    leaves `out` as it was."""
    from brainbox import store

    chunks: list[bytes] = []
    manifest = export(conn, chunks.append, **kw)
    try:
        store.write_private(os.path.abspath(out), b"".join(chunks))
    except OSError as exc:
        raise ArchiveError(f"cannot write {out}: {exc.strerror or exc}") from None
    return manifest


# --- reading an export ------------------------------------------------------------------


def read(path: str) -> tuple[dict, list[dict]]:
    """The manifest and the events of an export, checked whole: ArchiveError naming the
    file and line of the first fault."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ArchiveError(f"cannot read {path}: {exc.strerror or exc}") from None
    lines = data.splitlines(keepends=True)
    if not lines:
        raise ArchiveError(f"{path} is empty: not a brainbox export")
    manifest = _manifest(path, lines[0])
    cols = manifest["columns"]
    digest, rows, last, uids = hashlib.sha256(), [], 0, set()
    for no, raw in enumerate(lines[1:], start=2):
        digest.update(raw)
        row = _event(path, no, raw, cols)
        if row["id"] <= last:
            raise ArchiveError(f"{path} line {no}: id {row['id']} is not after {last}")
        last = row["id"]
        uid = row.get("uid")
        if uid is not None:
            if uid in uids:
                raise ArchiveError(f"{path} line {no}: uid {uid} appears twice")
            uids.add(uid)
        rows.append(row)
    if not lines[-1].endswith(b"\n"):
        raise ArchiveError(f"{path} line {len(lines)}: the file ends mid-line (truncated?)")
    if manifest["events"] != len(rows):
        raise ArchiveError(f"{path}: the manifest counts {manifest['events']} events, the "
                           f"file holds {len(rows)} (truncated?)")
    ends = (rows[0]["id"], rows[-1]["id"]) if rows else (None, None)
    if (manifest.get("first_id"), manifest.get("last_id")) != ends:
        raise ArchiveError(f"{path}: the manifest's first and last ids "
                           f"{manifest.get('first_id')}..{manifest.get('last_id')} are not "
                           f"the file's {ends[0]}..{ends[1]}")
    if digest.hexdigest() != manifest["sha256"]:
        raise ArchiveError(f"{path}: the events' sha256 is not the manifest's (the file "
                           f"was changed after export)")
    return manifest, rows


def _manifest(path: str, raw: bytes) -> dict:
    from brainbox.storage import db

    try:
        m = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        m = None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise ArchiveError(f"{path} line 1: not a brainbox export (no {FORMAT} manifest)")
    if m.get("version") != VERSION:
        raise ArchiveError(f"{path} line 1: export format version {m.get('version')!r} "
                           f"(this brainbox reads version {VERSION})")
    schema = m.get("schema")
    if not isinstance(schema, int) or schema > db.SCHEMA_VERSION:
        raise ArchiveError(f"{path} line 1: written at schema {schema!r}, newer than this "
                           f"brainbox's {db.SCHEMA_VERSION}; upgrade brainbox to restore it")
    cols = m.get("columns")
    if not isinstance(cols, list) or not all(isinstance(c, str) for c in cols) \
            or not set(REQUIRED) <= set(cols):
        raise ArchiveError(f"{path} line 1: the manifest's columns are missing or incomplete")
    if not isinstance(m.get("events"), int) or not isinstance(m.get("sha256"), str):
        raise ArchiveError(f"{path} line 1: the manifest has no event count or sha256")
    return m


def _event(path: str, no: int, raw: bytes, cols: list[str]) -> dict:
    where = f"{path} line {no}"
    try:
        row = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ArchiveError(f"{where}: not JSON ({str(exc).split(':')[0]})") from None
    if not isinstance(row, dict):
        raise ArchiveError(f"{where}: not a JSON object")
    extra = sorted(set(row) - set(cols))
    if extra:
        raise ArchiveError(f"{where}: column {extra[0]!r} is not in the manifest")
    odd = next((c for c, v in row.items() if v is not None and (
        isinstance(v, bool) or not isinstance(v, (str, int, float)))), None)
    if odd is not None:
        raise ArchiveError(f"{where}: {odd} holds a {type(row[odd]).__name__}, not a stored "
                           f"value (text, number or null)")
    for name, kind in REQUIRED.items():
        value = row.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ArchiveError(f"{where}: {name} is missing or not a {_kind(kind)}")
    for name, want in (("files", list), ("meta", dict)):
        text = row.get(name)
        if text is None:
            continue
        try:
            ok = isinstance(text, str) and isinstance(json.loads(text), want)
        except ValueError:
            ok = False
        if not ok:
            raise ArchiveError(f"{where}: {name} is not the JSON text of a "
                               f"{want.__name__}")
    return row


def _kind(kind) -> str:
    return "number" if isinstance(kind, tuple) else {int: "integer", str: "string"}[kind]


# --- restoring ----------------------------------------------------------------------------


def restore(db_path: str, path: str, *, merge: bool = False, dry_run: bool = False) -> dict:
    """Restore the export `path` into the database `db_path` (module docstring). Returns
    {file, events (in the file), restored, skipped (present already), merge, dry_run,
    ids_kept, chain_head}; `dry_run` writes nothing (and creates no database)."""
    manifest, rows = read(path)  # before anything opens the database
    out = {"file": os.path.abspath(path), "events": len(rows), "merge": merge,
           "dry_run": dry_run, "chain_head": manifest.get("chain_head")}
    if dry_run and not os.path.exists(db_path):
        return {**out, "restored": len(rows), "skipped": 0, "ids_kept": True, "present": 0}
    from brainbox.memory import Memory
    from brainbox.storage import db as dbmod
    from brainbox.storage import eventlog

    with Memory.open(db_path) as mem:
        conn = mem.conn
        cols = eventlog.columns(conn)
        lacking = [c for c in manifest["columns"] if c not in cols
                   and any(r.get(c) is not None for r in rows)]
        if lacking:
            raise ArchiveError(f"{path}: column {lacking[0]!r} is not in this database "
                               f"(written by a newer brainbox?); nothing restored")
        present = eventlog.time_span(conn)[1]
        if present and not merge:
            raise ArchiveError(f"{db_path} holds {present} events: restore goes into an "
                               f"empty database; pass --merge to add the file's new events")
        with dbmod.atomic(conn):
            new = _new_rows(conn, rows, cols) if present else rows
            out.update(restored=len(new), skipped=len(rows) - len(new), present=present,
                       ids_kept=not present)
            if dry_run:
                return out
            if present:
                eventlog.append_rows(conn, new)
            else:
                keep = [c for c in cols if c in manifest["columns"]]
                eventlog.insert_rows(conn, new, keep, int(manifest.get("id_high_water") or 0))
        out["folded"] = mem.rebuild()["events"]
    return out


def _new_rows(conn, rows: list[dict], cols: list[str]) -> list[dict]:
    """The rows a merge appends: uid not in the log; without a uid, no stored event equal
    in every column but the id and the chain's."""
    from brainbox.storage import eventlog

    held = eventlog.present_uids(conn, [r["uid"] for r in rows if r.get("uid") is not None])
    same = [c for c in cols if c != "id" and c not in NEW_COLUMNS]
    return [r for r in rows if (r["uid"] not in held if r.get("uid") is not None
                                else not eventlog.has_same(conn, r, same))]


__all__ = ["ArchiveError", "export", "export_file", "read", "restore"]
