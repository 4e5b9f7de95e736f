"""Persistence of the materialised state: numpy arrays, CSR matrices and the resource table.

Arrays are stored as little-endian blobs with their dtype and shape recorded
(`state_blobs`). A CSR matrix is three arrays under `<name>.indptr`, `<name>.indices`,
`<name>.data` plus its shape. Loaded arrays are copies (writable): the kernels update
state in place, and `np.frombuffer` over a blob is read-only.
"""

from __future__ import annotations

import json

import numpy as np
import scipy.sparse as sp

from brainbox.storage.db import atomic


def _encode(arr: np.ndarray) -> tuple[str, str, bytes]:
    arr = np.ascontiguousarray(arr)
    dt = arr.dtype.newbyteorder("<") if arr.dtype.byteorder not in ("|", "<", "=") else arr.dtype
    le = arr.astype(dt.newbyteorder("<"), copy=False)
    return le.dtype.str, json.dumps(list(arr.shape)), le.tobytes()


def save_arrays(conn, arrays: dict[str, np.ndarray], *, replace_all: bool = True) -> None:
    """Write named arrays in one transaction (by default replacing every stored array)."""
    rows = [(name, *_encode(a)) for name, a in arrays.items()]
    with atomic(conn):
        if replace_all:
            conn.execute("DELETE FROM state_blobs")
        conn.executemany(
            "INSERT OR REPLACE INTO state_blobs(name, dtype, shape, data) VALUES (?, ?, ?, ?)",
            rows,
        )


def load_arrays(conn) -> dict[str, np.ndarray]:
    out = {}
    for name, dtype, shape, data in conn.execute(
        "SELECT name, dtype, shape, data FROM state_blobs"
    ):
        arr = np.frombuffer(data, dtype=np.dtype(dtype)).reshape(json.loads(shape))
        out[name] = arr.astype(arr.dtype.newbyteorder("="), copy=True)
    return out


def csr_to_arrays(name: str, mat: sp.csr_array) -> dict[str, np.ndarray]:
    return {
        f"{name}.indptr": mat.indptr,
        f"{name}.indices": mat.indices,
        f"{name}.data": mat.data,
        f"{name}.shape": np.asarray(mat.shape, dtype=np.int64),
    }


def arrays_to_csr(name: str, arrays: dict[str, np.ndarray]) -> sp.csr_array | None:
    if f"{name}.indptr" not in arrays:
        return None
    shape = tuple(int(x) for x in arrays[f"{name}.shape"])
    return sp.csr_array(
        (arrays[f"{name}.data"], arrays[f"{name}.indices"], arrays[f"{name}.indptr"]),
        shape=shape,
    )


def save_resources(conn, rows: list[tuple[int, int, str, str]], *, replace_all: bool) -> None:
    """Store resource rows (id, kind, project, key); `replace_all` clears the table first."""
    with atomic(conn):
        if replace_all:
            conn.execute("DELETE FROM resources")
        conn.executemany(
            "INSERT OR REPLACE INTO resources(id, kind, project, key) VALUES (?, ?, ?, ?)", rows
        )


def load_resources(conn) -> list[tuple[int, int, str, str]]:
    return conn.execute("SELECT id, kind, project, key FROM resources ORDER BY id").fetchall()


def resource_counts(conn) -> dict[int, int]:
    return dict(conn.execute("SELECT kind, count(*) FROM resources GROUP BY kind").fetchall())


# --- the checkpoint of `consolidate` (brainbox.retention) ---------------------------------

def save_checkpoint(conn, arrays: dict[str, np.ndarray], resources) -> None:
    """Replace the consolidation checkpoint (the folded state as of the last dropped event:
    its arrays and resources) in the caller's transaction or one of its own."""
    rows = [(name, *_encode(a)) for name, a in arrays.items()]
    with atomic(conn):
        conn.execute("DELETE FROM checkpoint_blobs")
        conn.execute("DELETE FROM checkpoint_resources")
        conn.executemany("INSERT INTO checkpoint_blobs(name, dtype, shape, data) "
                         "VALUES (?, ?, ?, ?)", rows)
        conn.executemany("INSERT INTO checkpoint_resources(id, kind, project, key) "
                         "VALUES (?, ?, ?, ?)", resources)


def load_checkpoint(conn) -> tuple[dict[str, np.ndarray], list] | None:
    """(arrays, resources) of the consolidation checkpoint, or None when there is none."""
    out = {}
    for name, dtype, shape, data in conn.execute(
            "SELECT name, dtype, shape, data FROM checkpoint_blobs"):
        arr = np.frombuffer(data, dtype=np.dtype(dtype)).reshape(json.loads(shape))
        out[name] = arr.astype(arr.dtype.newbyteorder("="), copy=True)
    if not out:
        return None
    return out, conn.execute(
        "SELECT id, kind, project, key FROM checkpoint_resources ORDER BY id").fetchall()


def checkpoint_digest(conn) -> str:
    """SHA-256 over the checkpoint's rows (names, dtypes, shapes, data; resources), which
    the checkpoint's event records: `audit` of the chain covers the record, and the digest
    ties the stored checkpoint to it."""
    import hashlib

    h = hashlib.sha256()
    for row in conn.execute("SELECT name, dtype, shape, data FROM checkpoint_blobs ORDER BY name"):
        for v in row:
            h.update(v if isinstance(v, bytes) else str(v).encode())
    for row in conn.execute("SELECT id, kind, project, key FROM checkpoint_resources ORDER BY id"):
        h.update(json.dumps(list(row), ensure_ascii=False).encode())
    return h.hexdigest()
