"""The association graph's storage, which `brainbox.state.State` extends: the edges, their
hash, the out-adjacency recall reads, and the CSR matrices derived from them.

Edges live in growable arrays (src, dst, float32 weight, count, last update) with an
open-addressing hash on (src, dst); the CSR matrices `W`, `C` (counts) and `T` (times)
are derived from them on demand in canonical (row, column) order (`explain`, the MCP server).
Recall reads the graph through a live out-adjacency instead (`adjacency()`,
kernels/adjacency.py): edges are linked into it after each fold in O(new edges), it is laid
out again after pruning, on load and when its pool fills, and it is never persisted.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from brainbox import kernels as K

ADJ_POOL = 4096  # smallest out-adjacency pool (slots)


def grow(arr: np.ndarray, n: int, fill=0) -> np.ndarray:
    """`arr` with room for at least `n` rows (itself if it has; else a copy at least twice
    as long, new rows `fill`)."""
    if arr.shape[0] >= n:
        return arr
    cap = max(n, 2 * arr.shape[0], 16)
    out = np.full((cap,) + arr.shape[1:], fill, dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return out


class Graph(NamedTuple):
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    order: np.ndarray
    n_edges: int
    n_res: int


class Adjacency(NamedTuple):
    """The out-adjacency as `kernels.spread` takes it (kernels/adjacency.py)."""

    off: np.ndarray  # int64[n_res] start of each row in the pool
    len: np.ndarray  # int64[n_res] out-degree
    dst: np.ndarray  # int64[P] target of each pool entry
    edge: np.ndarray  # int64[P] edge index of each pool entry
    ew: np.ndarray  # float32[E] edge weights


class EdgeStore:
    """Edge arrays, hash and out-adjacency (module docstring). The adjacency's node arrays
    (`adj_off`, `adj_len`, `adj_cap`) are grown with the owner's other node arrays."""

    def __init__(self):
        # edges
        self.n_edges = np.zeros(1, np.int64)
        self.alloc_edges(1024)
        self._graph = None
        self._csr_key = np.zeros(0, np.int64)  # sorted src * N_KEY + dst of linked edges
        self._csr_order = np.zeros(0, np.int64)  # edge index at each CSR position
        self._csr_linked = 0  # edges 0.._csr_linked-1 are in the CSR structure
        # out-adjacency of the edges (kernels/adjacency.py): derived, never persisted; node
        # arrays grow with the other node arrays, the pool on demand
        self.adj_off = np.zeros(0, np.int64)
        self.adj_len = np.zeros(0, np.int64)
        self.adj_cap = np.zeros(0, np.int64)
        self.pool_dst = np.zeros(ADJ_POOL, np.int64)
        self.pool_e = np.zeros(ADJ_POOL, np.int64)
        self.pool_used = np.zeros(1, np.int64)
        self.adj_linked = 0  # edges 0..adj_linked-1 are in the adjacency

    # --- allocation ------------------------------------------------------------------

    def alloc_edges(self, cap: int) -> None:
        self.esrc = np.zeros(cap, np.int64)
        self.edst = np.zeros(cap, np.int64)
        self.ew = np.zeros(cap, np.float32)
        self.ecount = np.zeros(cap, np.int64)
        self.etime = np.zeros(cap, np.float64)
        self.hkeys, self.hslot = self.hash_table(2 * cap)

    @staticmethod
    def hash_table(slots: int) -> tuple[np.ndarray, np.ndarray]:
        """Empty edge hash (hkeys, hslot): key and edge index side by side, the two columns
        of one int64[slots, 2], so a probe reads one cache line (kernels/hebbian.py)."""
        table = np.full((slots, 2), -1, np.int64)
        return table[:, 0], table[:, 1]

    def grow_edges(self) -> None:
        """Twice the room for edges; the hash is laid out again over the live ones."""
        cap = 2 * self.esrc.shape[0]
        for name in ("esrc", "edst", "ew", "ecount", "etime"):
            setattr(self, name, grow(getattr(self, name), cap))
        self.hkeys, self.hslot = self.hash_table(2 * cap)
        K.rebuild_hash(self.esrc, self.edst, int(self.n_edges[0]), self.hkeys, self.hslot)

    def edges_changed(self) -> None:
        """Edges or weights changed: the CSR matrices are derived again when next read.
        Called on every fold of touches too: ``edits`` counts the calls (what recall's
        per-state caches are keyed on, `brainbox.recall.Index.lists`)."""
        self._graph = None
        self.edits = getattr(self, "edits", 0) + 1

    def edges_renumbered(self) -> None:
        """Edges were dropped and renumbered (pruning): the CSR structure is made afresh."""
        self._graph = None
        self.edits = getattr(self, "edits", 0) + 1
        self._csr_linked = -1

    # --- out-adjacency (kernels/adjacency.py) ------------------------------------------

    def link_adjacency(self) -> None:
        """Link the edges created since the last call: O(new edges). A full pool is laid
        out again compactly (O(E), amortised over at least E/4 new edges)."""
        ne = int(self.n_edges[0])
        if self.adj_linked == ne:
            return
        if self.adj_linked > ne:  # edges went away without a rebuild
            self.rebuild_adjacency()
            return
        done = K.link_edges(self.esrc, self.edst, self.adj_linked, ne, self.adj_off,
                            self.adj_len, self.adj_cap, self.pool_dst, self.pool_e,
                            self.pool_used)
        if done < ne:
            self.rebuild_adjacency()
        else:
            self.adj_linked = ne

    def rebuild_adjacency(self) -> None:
        """Lay out all edges compactly with slack per node (after pruning, loading, or when
        the pool is full); the pool keeps at least half the slots used free for growth."""
        ne = int(self.n_edges[0])
        args = (self.adj_off, self.adj_len, self.adj_cap)
        need = K.rebuild_adjacency(self.esrc, self.edst, ne, *args, self.pool_dst,
                                   self.pool_e, self.pool_used)
        if need + need // 2 > self.pool_dst.shape[0]:
            size = max(2 * need, ADJ_POOL)
            self.pool_dst = np.zeros(size, np.int64)
            self.pool_e = np.zeros(size, np.int64)
            K.rebuild_adjacency(self.esrc, self.edst, ne, *args, self.pool_dst, self.pool_e,
                                self.pool_used)
        self.adj_linked = ne

    def adjacency(self) -> Adjacency:
        """The live out-adjacency over the `n_res` resources, as `kernels.spread` reads it:
        row u is `dst[off[u] : off[u] + len[u]]` (any order), entry q weighs `ew[edge[q]]`.
        Views of the state's arrays: valid until the next fold, decay or edge creation."""
        self.link_adjacency()
        n = self.n_res
        return Adjacency(self.adj_off[:n], self.adj_len[:n], self.pool_dst, self.pool_e,
                         self.ew)

    def out_edges(self, u: int) -> tuple[np.ndarray, np.ndarray]:
        """Row u of the adjacency: (targets int64, weights float32), in no particular order."""
        self.link_adjacency()
        lo = int(self.adj_off[u])
        q = slice(lo, lo + int(self.adj_len[u]))
        return self.pool_dst[q], self.ew[self.pool_e[q]]

    # --- derived matrices ------------------------------------------------------------

    def graph(self) -> Graph:
        """W as CSR arrays (indptr, int32 indices, float32 data) in canonical order, with
        `order` (the edge index of each entry).

        Incremental: edges created since the last call are merged into the sorted key array
        (O(E) memmove, no sort of the whole graph); weights are re-gathered when they changed.
        Pruning reorders edges, so `decay` forces a full rebuild.
        """
        ne = int(self.n_edges[0])
        if self._graph is not None and self._graph.n_edges == ne and self._graph.n_res == self.n_res:
            return self._graph
        if self._csr_linked < 0 or self._csr_linked > ne:
            self._csr_linked = 0
            self._csr_key = np.zeros(0, np.int64)
            self._csr_order = np.zeros(0, np.int64)
        if ne > self._csr_linked:
            new = np.arange(self._csr_linked, ne, dtype=np.int64)
            keys = self.esrc[new] * K.N_KEY + self.edst[new]
            srt = np.argsort(keys, kind="stable")
            keys, new = keys[srt], new[srt]
            pos = np.searchsorted(self._csr_key, keys)
            self._csr_key = np.insert(self._csr_key, pos, keys)
            self._csr_order = np.insert(self._csr_order, pos, new)
            self._csr_linked = ne
        order = self._csr_order
        indptr = np.searchsorted(self._csr_key, np.arange(self.n_res + 1, dtype=np.int64) * K.N_KEY)
        self._graph = Graph(indptr, self.edst[order].astype(np.int32), self.ew[order], order,
                            ne, self.n_res)
        return self._graph

    def matrices(self) -> dict[str, sp.csr_array]:
        """W (weights), C (co-access counts) and T (last update) as scipy CSR arrays."""
        g = self.graph()
        shape = (self.n_res, self.n_res)
        same = (g.indices, g.indptr)
        return {
            "W": sp.csr_array((g.data, *same), shape=shape),
            "C": sp.csr_array((self.ecount[g.order], *same), shape=shape),
            "T": sp.csr_array((self.etime[g.order], *same), shape=shape),
        }
