"""The code index's tables (issue 16): one row per indexed file, one per chunk.

Schema (migration 003, `storage.db`):
- `code_files(id, root, path, sha256, size, language, chunker, indexed_at)`: `root` is the
  project's absolute folder, `path` relative to it with `/`; `sha256` carries its version
  prefix (`sha256:<hex>`, STYLE §7); `chunker` names what split the file and its version
  (`tree-sitter/2`, `lines/2`, `lines/2/no-grammar`; version 1 had no full-text rows), so
  a change of chunking rules, or a grammar installed since, re-chunks files whose bytes
  did not change.
- `code_chunks(id, file_id, start_line, end_line, kind, symbol)`: lines are 1-based and
  inclusive; `kind` is function, method, class, type, impl, module or lines; `symbol` the
  qualified name (`Class.method`), NULL for windows of lines. Deleting a file's row deletes
  its chunks (ON DELETE CASCADE; `connect()` turns foreign keys on). `name` (migration
  007, a generated column, indexed) is the last dotted part of `symbol`, the name the
  chunk defines.

- `code_fts(path, symbol, body)` (migration 004): an FTS5 table, rowid = the chunk's id,
  holding pre-split terms (the caller splits: `brainbox.text`), not the source text; the
  file on disk is the source of that, and the hash says whether it is still the text that
  was chunked. A trigger deletes a chunk's row with the chunk.

Standard library only, like the rest of `storage`.
"""

from __future__ import annotations

# bm25() column weights (path, symbol, body): see `search`.
WEIGHTS = (1.0, 1.0, 1.0)


def file_states(conn, root: str) -> dict[str, tuple[str, str]]:
    """{path: (sha256, chunker)} of every file indexed under `root`."""
    rows = conn.execute("SELECT path, sha256, chunker FROM code_files WHERE root = ?", (root,))
    return {path: (sha, chunker) for path, sha, chunker in rows}


def put_file(conn, root: str, path: str, *, sha256: str, size: int, language: str | None,
             chunker: str, indexed_at: float,
             chunks: list[tuple[int, int, str, str | None]],
             terms: list[tuple[str, str, str]] | None = None) -> None:
    """Store (or replace) one file and its chunks `(start_line, end_line, kind, symbol)`,
    and, with `terms` (one `(path, symbol, body)` string of space-separated terms per
    chunk, in the same order), their full-text rows. The caller holds the transaction
    (`atomic`)."""
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
    if terms:
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM code_chunks WHERE file_id = ? ORDER BY id", (file_id,))]
        conn.executemany("INSERT INTO code_fts(rowid, path, symbol, body) VALUES (?, ?, ?, ?)",
                         [(i, *t) for i, t in zip(ids, terms, strict=True)])


def remove_files(conn, root: str, paths) -> int:
    """Drop these files (and their chunks) from the index of `root`; how many were there."""
    n = 0
    for path in paths:
        n += conn.execute("DELETE FROM code_files WHERE root = ? AND path = ?",
                          (root, path)).rowcount
    return n


def file_chunk_counts(conn, root: str) -> dict[str, int]:
    """{path: number of chunks} of every file indexed under `root` (what `forget` would
    drop from the index)."""
    return {str(p): int(n) for p, n in conn.execute(
        "SELECT f.path, count(c.id) FROM code_files f LEFT JOIN code_chunks c "
        "ON c.file_id = f.id WHERE f.root = ? GROUP BY f.path", (root,))}


def chunk_ids_of(conn, root: str, paths) -> list[int]:
    """The chunk ids of these files of `root`."""
    ids: list[int] = []
    paths = sorted(set(paths))
    for i in range(0, len(paths), 500):
        part = paths[i:i + 500]
        ids += [r[0] for r in conn.execute(
            "SELECT c.id FROM code_chunks c JOIN code_files f ON f.id = c.file_id "
            f"WHERE f.root = ? AND f.path IN ({', '.join('?' for _ in part)})",
            (root, *part))]
    return ids


def optimize_fts(conn) -> None:
    """Merge the full-text index's segments into one. A deleted FTS5 row leaves its terms
    in the index's segments (with a delete marker) until a merge rewrites them; `forget`
    must not leave them in the file, and `optimize` rewrites every segment without them
    (the freed pages are zeroed by `secure_delete`). The caller holds the transaction."""
    conn.execute("INSERT INTO code_fts(code_fts) VALUES ('optimize')")


def has_files(conn, root: str) -> bool:
    """Whether any file is indexed under `root` (one row of the (root, path) index: recall
    asks on every prompt, and counting sympy's chunks took 2.5 ms)."""
    return conn.execute("SELECT 1 FROM code_files WHERE root = ? LIMIT 1",
                        (root,)).fetchone() is not None


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


def search(conn, root: str, match: str, limit: int) -> list[tuple]:
    """Chunks of `root` matching the FTS5 expression `match` (the caller builds it from
    quoted terms), best first: `(path, start_line, end_line, kind, symbol, bm25, chunk
    id)`, where `bm25` is FTS5's `bm25()` (lower is better) with `weights` per column
    (path, symbol, body)."""
    return [tuple(r) for r in conn.execute(
        "SELECT f.path, c.start_line, c.end_line, c.kind, c.symbol, bm25(code_fts, ?, ?, ?) "
        "AS score, c.id "
        "FROM code_fts JOIN code_chunks c ON c.id = code_fts.rowid "
        "JOIN code_files f ON f.id = c.file_id "
        "WHERE code_fts MATCH ? AND f.root = ? ORDER BY score, f.path, c.start_line LIMIT ?",
        (*WEIGHTS, match, root, limit))]


def defining(conn, root: str, names) -> list[tuple]:
    """The chunks of `root` that define one of `names` (their `name`, case-sensitive):
    `(path, start_line, end_line, kind, symbol, name, chunk id)`, by path and line.
    Through the name index, chunks first: left to itself SQLite scanned the project's
    chunks, computing each one's generated name (22 ms a query on sympy's 24k chunks,
    against under 1 ms)."""
    names = sorted(set(names))
    if not names:
        return []
    marks = ",".join("?" * len(names))
    return [tuple(r) for r in conn.execute(
        "SELECT f.path, c.start_line, c.end_line, c.kind, c.symbol, c.name, c.id "
        "FROM code_chunks c INDEXED BY code_chunks_name CROSS JOIN code_files f "
        f"ON f.id = c.file_id WHERE c.name IN ({marks}) AND f.root = ? "
        "ORDER BY f.path, c.start_line, c.id",
        (*names, root))]


def first_chunks(conn, root: str, paths) -> dict[str, tuple]:
    """{path: its first chunk `(path, start_line, end_line, kind, symbol, chunk id)`} for
    those of `paths` indexed under `root`."""
    paths = sorted(set(paths))
    if not paths:
        return {}
    marks = ",".join("?" * len(paths))
    out: dict[str, tuple] = {}
    for r in conn.execute(
            "SELECT f.path, c.start_line, c.end_line, c.kind, c.symbol, c.id "
            "FROM code_chunks c JOIN code_files f ON f.id = c.file_id "
            f"WHERE f.root = ? AND f.path IN ({marks}) ORDER BY f.path, c.start_line, c.id",
            (root, *paths)):
        out.setdefault(r[0], tuple(r))
    return out


def file_count(conn, root: str) -> int:
    """Files indexed under `root`."""
    return conn.execute("SELECT count(*) FROM code_files WHERE root = ?", (root,)).fetchone()[0]


def chunk_rows(conn, root: str, chunk_ids) -> dict[int, tuple]:
    """{chunk id: (path, start_line, end_line, kind, symbol)} for those of `chunk_ids` that
    are chunks of `root`."""
    ids = [int(i) for i in chunk_ids]
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {r[0]: tuple(r[1:]) for r in conn.execute(
        f"SELECT c.id, f.path, c.start_line, c.end_line, c.kind, c.symbol FROM code_chunks c "
        f"JOIN code_files f ON f.id = c.file_id WHERE f.root = ? AND c.id IN ({marks})",
        [root, *ids])}


def fts_rows(conn, root: str) -> int:
    """How many chunks of `root` have a full-text row."""
    return conn.execute(
        "SELECT count(*) FROM code_fts JOIN code_chunks c ON c.id = code_fts.rowid "
        "JOIN code_files f ON f.id = c.file_id WHERE f.root = ?", (root,)).fetchone()[0]


def term_rows(conn, terms) -> dict[str, int]:
    """{term: number of full-text rows holding it} for those of `terms` that are indexed
    (all projects of the database together; `code_fts_terms`)."""
    terms = list(terms)
    if not terms:
        return {}
    marks = ",".join("?" * len(terms))
    return dict(conn.execute(
        f"SELECT term, doc FROM code_fts_terms WHERE term IN ({marks})", terms).fetchall())


def chunk_count(conn) -> int:
    """Chunks in the database, all projects."""
    return conn.execute("SELECT count(*) FROM code_chunks").fetchone()[0]
