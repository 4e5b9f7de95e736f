"""Embeddings of the code index's chunks (issue 16, Deliver 3; DESIGN §4.7).

`embed_index(conn, root, embedder)` gives a vector to every chunk of `root` that has none:
the chunks of new and changed files (re-chunking a file deletes its chunks, and with them
their vectors: `storage.vectors`), and all of them when the model changed (vectors of
another model are dropped first). It runs after `codeindex.build`, so the keyword index is
complete even when embedding is interrupted or there is no model; the next run goes on
where it stopped. A chunk's text is read back from its file, and used only when the file's
sha256 is still the indexed one (else the file changed since: the next index re-chunks it).

The text embedded for a chunk is its path, its symbol and its lines (a class with its
methods: the model reads the first `embed.MAX_TOKENS` pieces, header and docstring first).
Chunks go to the model `PER_TRANSACTION` at a time, each batch stored in one transaction.
"""

from __future__ import annotations

import hashlib
import os
import time

from brainbox.storage import vectors as _vec
from brainbox.storage.db import atomic

PER_TRANSACTION = 256


def chunk_text(path: str, symbol: str | None, lines: list[str], start: int, end: int) -> str:
    """What is embedded for the chunk of `path` on lines `start`..`end` (1-based)."""
    head = f"{path} {symbol}" if symbol else path
    return head + "\n" + "\n".join(lines[start - 1:end])


def _texts(root: str, rows) -> tuple[list[int], list[str], int]:
    """(chunk ids, texts, files skipped because they changed or vanished) for `rows` of
    `storage.vectors.unembedded`."""
    ids, texts, skipped = [], [], 0
    by_file: dict[tuple[str, str], list] = {}
    for r in rows:
        by_file.setdefault((r[1], r[2]), []).append(r)
    for (path, sha), chunks in by_file.items():
        try:
            with open(os.path.join(root, path), "rb") as fh:
                data = fh.read()
        except OSError:
            skipped += 1
            continue
        if "sha256:" + hashlib.sha256(data).hexdigest() != sha:
            skipped += 1
            continue
        lines = data.decode("utf-8", "replace").split("\n")
        for cid, _p, _s, start, end, _kind, symbol in chunks:
            ids.append(cid)
            texts.append(chunk_text(path, symbol, lines, start, end))
    return ids, texts, skipped


def embed_index(conn, root: str, embedder, *, progress=None, use_vec: bool | None = None,
                per_transaction: int = PER_TRANSACTION) -> dict:
    """Embed the chunks of `root` that have no vector (module docstring). `progress(done,
    total)` after each batch. Returns {vectors: made now, seconds, store, skipped_files}."""
    root = os.path.abspath(root)
    t0 = time.perf_counter()
    with atomic(conn):
        _vec.set_model(conn, embedder.id, embedder.dim)
        _vec.prune(conn)
    ids, texts, skipped = _texts(root, _vec.unembedded(conn, root))
    store = None
    for s in range(0, len(ids), per_transaction):
        vecs = embedder.embed(texts[s:s + per_transaction])
        with atomic(conn):
            store = _vec.put(conn, root, ids[s:s + per_transaction], vecs, use_vec=use_vec)
        if progress:
            progress(min(s + per_transaction, len(ids)), len(ids))
    return {"vectors": len(ids), "seconds": round(time.perf_counter() - t0, 3),
            "store": store, "skipped_files": skipped}


def vector_count(conn, root: str) -> int:
    """Chunks of `root` with a vector (either store)."""
    c = _vec.count(conn, os.path.abspath(root))
    return c["vec"] + c["blob"]


def has_vectors(conn, root: str) -> bool:
    return _vec.any_vector(conn, os.path.abspath(root))


def stored_model(conn) -> tuple[str | None, int | None]:
    """(model id, dimension) of the stored vectors."""
    return _vec.model(conn)


# (database file, root) -> (vectors version, chunk ids, matrix): see `nearest`.
_MATRICES: dict = {}


def nearest(conn, root: str, query_vec, k: int, *, use_vec: bool | None = None,
            cached: bool = False):
    """`[(chunk id, cosine distance)]` of the `k` chunks of `root` nearest `query_vec`,
    nearest first. By default through `storage.vectors.knn` (sqlite-vec's kNN, or the
    numpy scan of the BLOBs). With `cached`, a warm process keeps the project's vectors
    as one matrix and ranks by one product: sympy's 24,434 x 384 (37.5 MB of memory),
    20 problem statements, k = 50, warm p50 on the loaded 2-core machine, two runs:
    sqlite-vec's kNN 29.4 and 24.1 ms, the numpy scan read from SQLite 144 and 158 ms
    (the same 50 neighbours), the cached matrix 2.0 ms (benchmarks/measure_vectors.py).
    Search uses it: fused p50 81-90 ms with sqlite-vec's kNN, 61-66 ms with it. The matrix is read again when the
    database's `code_vectors_version` changed (any vector stored or deleted, by any
    process: a trigger counts them, migration 005). Not for ":memory:" databases."""
    root = os.path.abspath(root)
    name = conn.execute("PRAGMA database_list").fetchone()[2]
    if not cached or not name:
        return _vec.knn(conn, root, query_vec, k, use_vec=use_vec)
    import numpy as np

    stamp = _vec.version(conn)
    hit = _MATRICES.get((name, root))
    if hit is None or hit[0] != stamp:
        hit = (stamp, *_vec.matrix(conn, root))
        _MATRICES[(name, root)] = hit
    _stamp, ids, mat = hit
    if not len(ids):
        return []
    # einsum, not `@`: OpenBLAS's threads spin after a product and slowed the next query's
    # embedding from 59 to 86 ms (p50, 20 queries back to back); einsum is as fast here
    # (7.9 against 7.5 ms for 24,435 x 384) and stays on this thread.
    dist = 1.0 - np.einsum("ij,j->i", mat, np.asarray(query_vec, dtype=np.float32).ravel())
    top = np.argpartition(dist, k - 1)[:k] if len(dist) > k else np.arange(len(dist))
    found = sorted(((int(ids[i]), float(dist[i])) for i in top), key=lambda r: (r[1], r[0]))
    return found[:k]
