"""Structural priors in recall (issue 16, Deliver 2; DESIGN §3, §4.7).

The code graph (`brainbox.codegraph`: import 0.2, call up to 0.35, inherit 0.3) is a
separate CSR `P` over the files memory knows. Where spreading and explain read an edge,
its effective weight is the learned `W` where an edge was learned, else `P`:

    E = W + P * [W has no edge]

so a file memory has seen but never used with a seed is reached along the import that
links them, and a learned association, weaker or stronger, always replaces the prior.
Only files memory knows are nodes (a file of the index memory never saw is a candidate
through the snippet channel, not a node of the graph).

The effective graph is built per recall only when the associative channel is in use
(`recall.uses_associative`: weight 0 in the default fusions, 4 under `--fusion fixed`),
so the default recall pays nothing for it. Its rows are read by scanning (no row lists):
the spreading kernel's result is the same (`kernels.spreading`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import sparse


class Effective(NamedTuple):
    """`E` as the spreading kernel's pooled adjacency (a CSR: entry q is edge q)."""

    adj_off: np.ndarray
    adj_len: np.ndarray
    pool_dst: np.ndarray
    pool_e: np.ndarray
    ew: np.ndarray  # float32
    n_edges: int
    P: sparse.csr_array  # the prior alone, n_res x n_res (explain, and a via's weight)
    W: sparse.csr_array  # what was learned, the same shape


def prior(conn, state, project: str) -> sparse.csr_array | None:
    """`P` over the state's resources (n_res x n_res float32 CSR): the code graph's edges
    between files of `project` that memory knows; None when the project has no code graph
    edge between two of them."""
    from brainbox import codegraph
    from brainbox.state import FILE

    rids, paths = [], []
    for (kind, proj, key), rid in state.res_index.items():
        if kind == FILE and proj == project:
            rids.append(rid)
            paths.append(key)
    if len(paths) < 2:
        return None
    P = codegraph.prior_matrix(conn, project, paths).tocoo()
    if P.nnz == 0:
        return None
    rid = np.asarray(rids, np.int64)
    n = state.n_res
    out = sparse.csr_array((P.data.astype(np.float32), (rid[P.row], rid[P.col])),
                           shape=(n, n), dtype=np.float32)
    out.sort_indices()
    return out


def _resized(m: sparse.csr_array, n: int) -> sparse.csr_array:
    if m.shape == (n, n):
        return m
    m = sparse.csr_array(m)
    m.resize((n, n))
    return m


def effective(state, P: sparse.csr_array) -> Effective:
    """`E = W + P * [no W edge]` over the state's resources, as kernel arrays."""
    n = state.n_res
    W = _resized(state.matrices()["W"], n)
    P = _resized(P, n)
    learned = W.copy()
    learned.data = np.ones_like(learned.data)
    only = (P - P.multiply(learned)).tocsr()
    only.eliminate_zeros()
    E = (W + only).tocsr()
    E.sort_indices()
    indptr = E.indptr.astype(np.int64)
    nnz = int(indptr[-1])
    return Effective(indptr[:-1].copy(), np.diff(indptr), E.indices.astype(np.int64),
                     np.arange(nnz, dtype=np.int64), E.data.astype(np.float32), nnz, P, W)


def edge(eff: Effective, src: int, dst: int) -> tuple[float, bool]:
    """(effective weight, structural?) of the edge src -> dst (0.0, False without one)."""
    w = float(eff.W[src, dst]) if src < eff.W.shape[0] and dst < eff.W.shape[1] else 0.0
    if w != 0.0 or _has(eff.W, src, dst):
        return w, False
    p = float(eff.P[src, dst]) if src < eff.P.shape[0] and dst < eff.P.shape[1] else 0.0
    return p, p > 0.0


def _has(m: sparse.csr_array, i: int, j: int) -> bool:
    if i >= m.shape[0]:
        return False
    lo, hi = m.indptr[i], m.indptr[i + 1]
    return bool(np.any(m.indices[lo:hi] == j))


def incoming(P: sparse.csr_array | None, W: sparse.csr_array, rid: int) -> list[tuple]:
    """The structural edges into `rid` that nothing learned replaces: [(src, weight)]."""
    if P is None or rid >= P.shape[1]:
        return []
    col = P[:, [rid]].tocoo()
    return [(int(r), float(v)) for r, v in zip(col.row, col.data)
            if not _has(W, int(r), rid)]
