"""Embedding vectors of the code index's chunks (issue 16): one interface, two stores.

- `code_vectors(chunk_id, vec)` (migration 005) has a row for every embedded chunk and is
  deleted with its chunk (ON DELETE CASCADE): a re-chunked or removed file loses its
  vectors on any connection, with or without sqlite-vec.
- On a connection that can load sqlite-vec (`load_vec`: the sqlean driver,
  `storage.db.connect(prefer_vec=True)`), the vector goes to the `vec0` table `code_vec`
  (rowid = chunk id, the project's root as its partition key, cosine distance) and the
  `code_vectors` row keeps `vec` NULL as its marker. Elsewhere `vec` holds the float32
  bytes, and `knn` scans them with numpy (DESIGN §8: 100k x 384 in about 9 ms).
- A `code_vec` row whose marker is gone (its chunk was deleted, maybe by a connection
  without the extension, which cannot touch a `vec0` table) is stale: `knn` never returns
  it (it keeps only chunk ids with a NULL marker) and `prune` deletes it; `put` replaces
  the row of a reused chunk id.

`knn(conn, root, query, k)` merges both stores (a database written by both kinds of
connection), nearest first, as `(chunk id, cosine distance)`; the distance is `1 - cos`
for unit vectors in both. The model that made the vectors and their dimension are in
`brainbox_meta` (`model`/`dim`, read by the caller). numpy and sqlite_vec are imported
inside the functions that need them; the rest of `storage` stays standard library only.
"""

from __future__ import annotations

from brainbox.storage.db import get_meta, set_meta

TABLE = "code_vec"
MODEL_KEY = "code_vectors_model"
DIM_KEY = "code_vectors_dim"
TABLE_DIM_KEY = "code_vec_dim"  # the dimension `code_vec` was made with


def load_vec(conn) -> bool:
    """Whether `conn` has sqlite-vec, loading it when the driver allows (idempotent)."""
    try:
        conn.execute("SELECT vec_version()").fetchone()
        return True
    except Exception:  # noqa: BLE001, S110 - any driver's "no such function": load it
        pass
    if not hasattr(conn, "enable_load_extension"):
        return False
    try:
        import sqlite_vec

        conn.enable_load_extension(True)
        try:
            sqlite_vec.load(conn)
        finally:
            conn.enable_load_extension(False)
        conn.execute("SELECT vec_version()").fetchone()
        return True
    except Exception:  # noqa: BLE001 - ImportError, or a build that cannot load it
        return False


def _has_table(conn) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (TABLE,)).fetchone() \
        is not None


def model(conn) -> tuple[str | None, int | None]:
    """(model id, dimension) of the stored vectors, (None, None) before any."""
    dim = get_meta(conn, DIM_KEY)
    return get_meta(conn, MODEL_KEY), int(dim) if dim else None


def set_model(conn, model_id: str, dim: int) -> None:
    """Record the model of the vectors; a different model or dimension drops them all
    first (vectors of two models are not comparable). The caller holds the transaction."""
    if model(conn) != (model_id, dim):
        clear(conn)
    set_meta(conn, MODEL_KEY, model_id)
    set_meta(conn, DIM_KEY, str(dim))


def clear(conn) -> None:
    """Every vector of every project."""
    conn.execute("DELETE FROM code_vectors")
    if _has_table(conn) and load_vec(conn):
        conn.execute(f"DROP TABLE {TABLE}")


def put(conn, root: str, chunk_ids, vectors, *, use_vec: bool | None = None) -> str:
    """Store one unit vector per chunk (rows of float32 `vectors`) for chunks of `root`;
    replaces a chunk's old vector. `use_vec` None: sqlite-vec when `load_vec`, else the
    BLOB column. Returns the store used, "sqlite-vec" or "numpy". The caller holds the
    transaction (`atomic`) and has called `set_model`."""
    import numpy as np

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    ids = [int(i) for i in chunk_ids]
    vec = load_vec(conn) if use_vec is None else use_vec and load_vec(conn)
    if not ids:
        return "sqlite-vec" if vec else "numpy"
    dim = str(vectors.shape[1])
    if vec and _has_table(conn) and get_meta(conn, TABLE_DIM_KEY) != dim:
        conn.execute(f"DROP TABLE {TABLE}")  # of another model (cleared without sqlite-vec)
    if vec and not _has_table(conn):
        conn.execute(f"CREATE VIRTUAL TABLE {TABLE} USING vec0(root TEXT partition key, "
                     f"embedding float[{dim}] distance_metric=cosine)")
        set_meta(conn, TABLE_DIM_KEY, dim)
    if _has_table(conn) and load_vec(conn):
        conn.executemany(f"DELETE FROM {TABLE} WHERE rowid = ?", [(i,) for i in ids])
    if vec:
        conn.executemany(f"INSERT INTO {TABLE}(rowid, root, embedding) VALUES (?, ?, ?)",
                         [(i, root, v.tobytes()) for i, v in zip(ids, vectors, strict=True)])
        rows = [(i, None) for i in ids]
    else:
        rows = [(i, v.tobytes()) for i, v in zip(ids, vectors, strict=True)]
    conn.executemany("INSERT INTO code_vectors(chunk_id, vec) VALUES (?, ?) "
                     "ON CONFLICT(chunk_id) DO UPDATE SET vec = excluded.vec", rows)
    return "sqlite-vec" if vec else "numpy"


def delete(conn, chunk_ids) -> None:
    """Drop the vectors of these chunks (deleting a chunk does it by itself)."""
    ids = [(int(i),) for i in chunk_ids]
    conn.executemany("DELETE FROM code_vectors WHERE chunk_id = ?", ids)
    if _has_table(conn) and load_vec(conn):
        conn.executemany(f"DELETE FROM {TABLE} WHERE rowid = ?", ids)


def prune(conn) -> int:
    """Delete the `code_vec` rows whose marker is gone; how many. Needs sqlite-vec."""
    if not (_has_table(conn) and load_vec(conn)):
        return 0
    have = {r[0] for r in conn.execute(f"SELECT rowid FROM {TABLE}")}
    keep = {r[0] for r in conn.execute("SELECT chunk_id FROM code_vectors WHERE vec IS NULL")}
    stale = sorted(have - keep)
    conn.executemany(f"DELETE FROM {TABLE} WHERE rowid = ?", [(i,) for i in stale])
    return len(stale)


def count(conn, root: str) -> dict[str, int]:
    """Vectors of `root`'s chunks: in sqlite-vec (`vec`), as BLOBs (`blob`)."""
    vec, blob = conn.execute(
        "SELECT coalesce(sum(v.vec IS NULL), 0), coalesce(sum(v.vec IS NOT NULL), 0) "
        "FROM code_vectors v JOIN code_chunks c ON c.id = v.chunk_id "
        "JOIN code_files f ON f.id = c.file_id WHERE f.root = ?", (root,)).fetchone()
    return {"vec": vec, "blob": blob}


def any_vector(conn, root: str) -> bool:
    """Whether some chunk of `root` has a vector (a search asks on every query: one row)."""
    return conn.execute(
        "SELECT 1 FROM code_files f JOIN code_chunks c ON c.file_id = f.id "
        "JOIN code_vectors v ON v.chunk_id = c.id WHERE f.root = ? LIMIT 1",
        (root,)).fetchone() is not None


def unembedded(conn, root: str) -> list[tuple]:
    """Chunks of `root` without a vector, by file: `(chunk id, path, sha256, start_line,
    end_line, kind, symbol)`."""
    return [tuple(r) for r in conn.execute(
        "SELECT c.id, f.path, f.sha256, c.start_line, c.end_line, c.kind, c.symbol "
        "FROM code_chunks c JOIN code_files f ON f.id = c.file_id "
        "LEFT JOIN code_vectors v ON v.chunk_id = c.id WHERE f.root = ? AND v.chunk_id IS NULL "
        "ORDER BY f.path, c.start_line, c.id", (root,))]


def version(conn) -> int:
    """A number that changes whenever a vector is stored or deleted (migration 005)."""
    return int(get_meta(conn, "code_vectors_version", "0"))


def matrix(conn, root: str):
    """Every live vector of `root` from both stores: (chunk ids int64, float32 rows)."""
    import numpy as np

    rows = conn.execute(
        "SELECT v.chunk_id, v.vec FROM code_vectors v JOIN code_chunks c ON c.id = v.chunk_id "
        "JOIN code_files f ON f.id = c.file_id WHERE f.root = ?", (root,)).fetchall()
    blobs = {i: b for i, b in rows if b is not None}
    marked = {i for i, b in rows if b is None}
    if marked and _has_table(conn) and load_vec(conn):
        for i, r, emb in conn.execute(f"SELECT rowid, root, embedding FROM {TABLE}"):
            if r == root and i in marked:
                blobs[i] = emb
    ids = np.array(sorted(blobs), dtype=np.int64)
    if not len(ids):
        return ids, np.zeros((0, 0), dtype=np.float32)
    mat = np.frombuffer(b"".join(bytes(blobs[i]) for i in ids.tolist()), dtype=np.float32)
    return ids, mat.reshape(len(ids), -1)


def knn(conn, root: str, query, k: int, *, use_vec: bool | None = None) -> list[tuple]:
    """The `k` chunks of `root` nearest to the unit vector `query`: `[(chunk id, cosine
    distance)]`, nearest first (ties by chunk id). `use_vec` False skips sqlite-vec."""
    import numpy as np

    query = np.ascontiguousarray(query, dtype=np.float32).ravel()
    found: list[tuple[int, float]] = []
    if use_vec is not False and _has_table(conn) and load_vec(conn):
        rows = conn.execute(f"SELECT rowid, distance FROM {TABLE} WHERE embedding MATCH ? "
                            f"AND k = ? AND root = ?", (query.tobytes(), k, root)).fetchall()
        if rows:
            marks = ",".join("?" * len(rows))
            live = {r[0] for r in conn.execute(
                f"SELECT chunk_id FROM code_vectors WHERE vec IS NULL AND chunk_id IN ({marks})",
                [r[0] for r in rows])}
            found += [(int(i), float(d)) for i, d in rows if i in live]
    blobs = conn.execute(
        "SELECT v.chunk_id, v.vec FROM code_vectors v JOIN code_chunks c ON c.id = v.chunk_id "
        "JOIN code_files f ON f.id = c.file_id WHERE f.root = ? AND v.vec IS NOT NULL",
        (root,)).fetchall()
    if blobs:
        ids = np.fromiter((r[0] for r in blobs), dtype=np.int64, count=len(blobs))
        mat = np.frombuffer(b"".join(r[1] for r in blobs), dtype=np.float32)
        mat = mat.reshape(len(blobs), -1)
        dist = 1.0 - mat @ query
        top = np.argpartition(dist, k - 1)[:k] if len(dist) > k else np.arange(len(dist))
        found += [(int(ids[i]), float(dist[i])) for i in top]
    found.sort(key=lambda r: (r[1], r[0]))
    return found[:k]
