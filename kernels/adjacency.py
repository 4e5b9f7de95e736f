"""A live out-adjacency over the edge arrays, kept up to date in O(new edges) (DESIGN §4.4).

Edges are created in order and only removed by compaction (``hebbian.compact_edges``), so
an append-only index suffices between compactions: each node owns a block of a shared pool.

- per node (length >= the number of resources, grown by the caller): ``adj_off`` int64 start
  of the node's block in the pool, ``adj_len`` int64 entries used (the out-degree),
  ``adj_cap`` int64 block size (0: no block yet);
- the pool (length P): ``pool_dst`` int64 target node and ``pool_e`` int64 edge index of
  each out-edge, so its weight is ``ew[pool_e[q]]``; ``pool_used`` int64[1], the end of the
  last block handed out.

Row u is ``pool_dst[adj_off[u] : adj_off[u] + adj_len[u]]``, in the order its edges were
linked (creation order after a rebuild), *not* sorted by target. A full block moves to the
end of the pool with twice the capacity (at least 4); the old block becomes garbage, which
the next ``rebuild_adjacency`` (after pruning, loading, or when the pool is full) reclaims.

A CSR is the special case ``adj_off = indptr[:-1]``, ``adj_len = diff(indptr)``,
``pool_dst = indices``, ``pool_e = arange(nnz)`` (see ``csr_adjacency``).
"""

import numpy as np

from ._jit import jit

MIN_BLOCK = 4  # smallest block a node gets


@jit
def link_edges(esrc, edst, start, end, adj_off, adj_len, adj_cap, pool_dst, pool_e, pool_used):
    """Append edges ``start..end-1`` to their source's row; return the first edge not linked.

    esrc, edst: int64[E] (read only), edge e is ``esrc[e] -> edst[e]``; every source must be
    below the length of the node arrays. A full block (or none) moves to ``pool_used`` with
    capacity ``max(4, 2 * adj_cap)``, its entries copied in order. Returns ``end`` when done;
    an earlier edge when the pool has no room for a moved block (nothing of that edge is
    written), so the caller grows the pool (or rebuilds compactly) and calls again from there.
    """
    P = pool_dst.shape[0]
    for e in range(start, end):
        u = esrc[e]
        n = adj_len[u]
        if n == adj_cap[u]:
            cap = max(MIN_BLOCK, 2 * n)
            base = pool_used[0]
            if base + cap > P:
                return e
            off = adj_off[u]
            for j in range(n):
                pool_dst[base + j] = pool_dst[off + j]
                pool_e[base + j] = pool_e[off + j]
            adj_off[u] = base
            adj_cap[u] = cap
            pool_used[0] = base + cap
        q = adj_off[u] + n
        pool_dst[q] = edst[e]
        pool_e[q] = e
        adj_len[u] = n + 1
    return end


@jit
def rebuild_adjacency(esrc, edst, n_edges, adj_off, adj_len, adj_cap, pool_dst, pool_e,
                      pool_used):
    """Lay out edges ``0..n_edges-1`` compactly, in node order; return the pool slots needed.

    Every node gets a block of ``slack(c) = c + max(4, c // 4)`` slots for its ``c >= 1``
    out-edges (0 for none), at increasing offsets; rows list their edges in creation order.
    Node arrays (all of them, also past the last source) and ``pool_used`` are rewritten.
    When the pool is shorter than the slots needed, the result is an empty adjacency
    (lengths, capacities and ``pool_used`` 0) and the caller calls again with a larger pool.
    """
    n_nodes = adj_off.shape[0]
    adj_len[:] = 0
    for e in range(n_edges):
        adj_len[esrc[e]] += 1
    need = 0
    for u in range(n_nodes):
        c = adj_len[u]
        cap = c + max(MIN_BLOCK, c // 4) if c > 0 else 0
        adj_off[u] = need
        adj_cap[u] = cap
        need += cap
    if need > pool_dst.shape[0]:
        adj_len[:] = 0
        adj_cap[:] = 0
        adj_off[:] = 0
        pool_used[0] = 0
        return need
    adj_len[:] = 0
    for e in range(n_edges):
        u = esrc[e]
        q = adj_off[u] + adj_len[u]
        pool_dst[q] = edst[e]
        pool_e[q] = e
        adj_len[u] += 1
    pool_used[0] = need
    return need


def csr_adjacency(indptr, indices):
    """The adjacency view of a CSR (plain Python): ``(adj_off, adj_len, pool_dst, pool_e)``.

    ``adj_off = indptr[:-1]`` and ``pool_dst = indices`` are views; ``pool_e`` is
    ``arange(nnz)``, so the CSR's ``data`` serves as the weight array ``ew``.
    """
    indptr = np.asarray(indptr)
    indices = np.asarray(indices)
    return (indptr[:-1], np.diff(indptr), indices,
            np.arange(indices.shape[0], dtype=np.int64))
