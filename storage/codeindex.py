"""The code index's tables (issue 16): one row per indexed file, one per chunk.

Schema (migration 003, `storage.db`):
- `code_files(id, root, path, sha256, size, language, chunker, indexed_at)`: `root` is the
  project's absolute folder, `path` relative to it with `/`; `sha256` carries its version
  prefix (`sha256:<hex>`, STYLE §7); `chunker` names what split the file and its version
  (`tree-sitter/1`, `lines/1`, `lines/1/no-grammar`), so a change of chunking rules, or a
  grammar installed since, re-chunks files whose bytes did not change.
- `code_chunks(id, file_id, start_line, end_line, kind, symbol)`: lines are 1-based and
  inclusive; `kind` is function, method, class, type, impl, module or lines; `symbol` the
  qualified name (`Class.method`), NULL for windows of lines. Deleting a file's row deletes
  its chunks (ON DELETE CASCADE; `connect()` turns foreign keys on).

Chunk text is not stored: the file on disk is the source of it, and the hash says whether
it is still the text that was chunked (full-text search, a later step, decides what it
keeps). Standard library only, like the rest of `storage`.
"""

from __future__ import annotations


def file_states(conn, root: str) -> dict[str, tuple[str, str]]:
    """{path: (sha256, chunker)} of every file indexed under `root`."""
    rows = conn.execute("SELECT path, sha256, chunker FROM code_files WHERE root = ?", (root,))
    return {path: (sha, chunker) for path, sha, chunker in rows}


def put_file(conn, root: str, path: str, *, sha256: str, size: int, language: str | None,
             chunker: str, indexed_at: float,
             chunks: list[tuple[int, int, str, str | None]]) -> None:
    """Store (or replace) one file and its chunks `(start_line, end_line, kind, symbol)`.
    The caller holds the transaction (`atomic`)."""
    conn.execute("DELETE FROM code_files WHERE root = ? AND path = ?", (root, path))
    cur = conn.execute(
        "INSERT INTO code_files(root, path, sha256, size, language, chunker, indexed_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (root, path, sha256, size, language, chunker, indexed_at))
    file_id = cur.lastrowid
    conn.executemany(
        "INSERT INTO code_chunks(file_id, start_line, end_line, kind, symbol) "
        "VALUES (?, ?, ?, ?, ?)",
        [(file_id, s, e, k, sym) for s, e, k, sym in chunks])


def remove_files(conn, root: str, paths) -> int:
    """Drop these files (and their chunks) from the index of `root`; how many were there."""
    n = 0
    for path in paths:
        n += conn.execute("DELETE FROM code_files WHERE root = ? AND path = ?",
                          (root, path)).rowcount
    return n


def totals(conn, root: str) -> dict[str, int]:
    """Files, chunks and source bytes indexed under `root`."""
    files, size = conn.execute(
        "SELECT count(*), coalesce(sum(size), 0) FROM code_files WHERE root = ?",
        (root,)).fetchone()
    (chunks,) = conn.execute(
        "SELECT count(*) FROM code_chunks JOIN code_files f ON f.id = code_chunks.file_id "
        "WHERE f.root = ?", (root,)).fetchone()
    return {"files": files, "chunks": chunks, "bytes": size}


def chunks_of(conn, root: str, path: str) -> list[tuple[int, int, str, str | None]]:
    """The chunks of one indexed file, in line order."""
    return [tuple(r) for r in conn.execute(
        "SELECT c.start_line, c.end_line, c.kind, c.symbol FROM code_chunks c "
        "JOIN code_files f ON f.id = c.file_id WHERE f.root = ? AND f.path = ? "
        "ORDER BY c.start_line, c.end_line DESC, c.id", (root, path))]
