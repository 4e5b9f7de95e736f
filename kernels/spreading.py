"""Spreading activation over the association graph: masked top-k, max-times (DESIGN §4.4).

A frontier of nodes is expanded hop by hop; each node is expanded at most once and follows
at most ``topk`` of its strongest eligible out-edges. A target keeps its best activation,
not the sum (a max-times semiring product), which bounds the work to
``seeds * (k + k**2 + k**3)`` edge visits for three hops.

The graph is read through the pooled out-adjacency of ``adjacency.py`` (the engine keeps it
live as edges are created); a CSR is the special case ``adj_off = indptr[:-1]``,
``adj_len = diff(indptr)``, ``pool_dst = indices``, ``pool_e = arange(nnz)``, ``ew = data``
(``spread_csr``). Rows come in any order, so results do not depend on it.

Choices the design leaves open, fixed here:

- Within a hop the frontier is expanded in ascending node id, and an expansion reads the
  node's activation at that moment (it may have improved earlier in the same hop).
- The masked top-k takes the heaviest eligible out-edges, equal weights by lower target id.
- Self-loops are never followed: a node cannot be its own parent. They still count in the
  row's degree, which is the number of stored entries.
- Blocked seeds (tools) are dropped: they get no activation and are not expanded.
- A node improved after its expansion keeps the better activation and parent but is not
  expanded again. With gains above 1 (``w`` near 1, ``m >= 0.5``, degree 1) two nodes can
  become each other's parent, so walk ``parent_out`` with a visited set.
"""

import math
from collections import namedtuple

import numpy as np

from ._jit import jit
from .adjacency import csr_adjacency
from .hebbian import ROW_TOP, row_top_build

M_CAP = 0.5  # reinforcement bonus is at most +50%
DEG_CAP = 50  # degree normalisation saturates at 50 out-edges


SpreadWork = namedtuple("SpreadWork", "expanded queued mark frontier nxt reached n_reached")
SpreadWork.__doc__ = """Scratch that ``spread`` reuses from call to call instead of allocating and
clearing arrays of every node (a caller that spreads many times over a large graph: the
replay). ``spread_work(N)`` makes it; see ``spread``'s ``work``."""


@jit
def spread_work(n_nodes):
    """A clean :data:`SpreadWork` for ``n_nodes`` nodes."""
    return SpreadWork(np.zeros(n_nodes, np.bool_), np.zeros(n_nodes, np.bool_),
                      np.zeros(n_nodes, np.bool_), np.empty(n_nodes, np.int64),
                      np.empty(n_nodes, np.int64), np.empty(n_nodes, np.int64),
                      np.zeros(1, np.int64))


@jit
def spread_clear(work, act_out, parent_out):
    """After reading a ``spread(..., work)``'s results: ``act_out`` back to 0 and
    ``parent_out`` to -1 where it wrote them, and nothing reached."""
    for j in range(work.n_reached[0]):
        r = work.reached[j]
        act_out[r] = 0.0
        parent_out[r] = -1
    work.n_reached[0] = 0


@jit
def spread(adj_off, adj_len, pool_dst, pool_e, ew, seeds, seed_act, m, is_blocked, hops, topk,
           w_floor, a_floor, act_out, parent_out, edst=None, rtop=None, rtop_n=None,
           work=None):
    """Spread activation from ``seeds`` for ``hops`` hops; return the number of edges followed.

    Graph (read only), for nodes 0..N-1 (longer node arrays are fine): row u is the entries
    ``q`` in ``adj_off[u] .. adj_off[u] + adj_len[u] - 1``, each an out-edge
    ``u -> pool_dst[q]`` of weight ``ew[pool_e[q]]`` (float32, read as float64), in any
    order, without duplicate targets; ``adj_len[u]`` is u's degree. Integer arrays int32 or
    int64. seeds int64[s], seed_act float64[s] (a repeated seed keeps its largest
    activation); m float64[N] reinforcement; is_blocked bool[N] nodes never passed through
    nor activated.
    Out: act_out float64[N] (zeroed, then the best activation of every reached node),
    parent_out int64[N] (-1, then the node each activated non-seed got its best activation
    from).

    From node u, candidates are out-edges u -> v with ``w >= w_floor``, v not blocked and
    v != u; the ``topk`` heaviest are followed (ties: lower target id first), each
    transferring ``a_v = act[u] * w * (1 + min(m[v], 0.5)) / sqrt(max(1, min(deg u, 50)))``,
    kept when ``a_v >= a_floor`` and ``a_v > act[v]``; improved nodes form the next hop's
    frontier.

    With the engine's row lists (``edst`` int64[E], ``rtop``/``rtop_n`` as
    ``hebbian.fold_touches`` keeps them; the caller's ``is_blocked`` must be "is a tool") and
    ``topk <= ROW_TOP``, a row's heaviest edges are read from its list (made from the row the
    first time) instead of scanning the row: the same edges in the same order. Nodes at or
    beyond ``rtop_n``'s length (e.g. empty arrays: no lists) scan their row.

    With ``work`` (:data:`SpreadWork`, clean: as ``spread_work`` makes it and ``spread_clear``
    leaves it), ``act_out`` and ``parent_out`` must come in all 0 and -1 (they are not
    cleared here: the call costs nothing per node of the graph), and the nodes whose entries
    were written are listed in ``work.reached[:work.n_reached[0]]`` (non-blocked seeds and
    activated nodes, each once, in no order); ``spread_clear`` restores all three.
    """
    n_nodes = act_out.shape[0]
    if work is None:
        act_out[:] = 0.0
        parent_out[:] = -1
        expanded = np.zeros(n_nodes, np.bool_)
        queued = np.zeros(n_nodes, np.bool_)
        mark = np.zeros(0, np.bool_)
        frontier = np.empty(n_nodes, np.int64)
        nxt = np.empty(n_nodes, np.int64)
        reached = np.empty(0, np.int64)
    else:
        expanded, queued, mark = work.expanded, work.queued, work.mark
        frontier, nxt, reached = work.frontier, work.nxt, work.reached
    track = work is not None
    n_reached = 0
    k = max(topk, 0)
    top_w = np.empty(k, np.float64)
    top_v = np.empty(k, np.int64)
    row_w = np.empty(64, np.float64)

    n_front = 0
    for j in range(seeds.shape[0]):
        u = seeds[j]
        if is_blocked[u]:
            continue
        a = seed_act[j]
        if track and not mark[u]:
            mark[u] = True
            reached[n_reached] = u
            n_reached += 1
        if not queued[u]:
            queued[u] = True
            frontier[n_front] = u
            n_front += 1
            act_out[u] = a
        elif a > act_out[u]:
            act_out[u] = a
    frontier[:n_front].sort()
    for j in range(n_front):
        queued[frontier[j]] = False

    visits = 0
    for _ in range(hops):
        n_next = 0
        for f in range(n_front):
            u = frontier[f]
            if expanded[u]:
                continue
            expanded[u] = True
            lo = adj_off[u]
            deg = adj_len[u]
            if rtop is not None and k <= ROW_TOP and u < rtop_n.shape[0]:
                if rtop_n[u] < 0:
                    row_top_build(adj_off, adj_len, pool_e, ew, edst, is_blocked, u, rtop,
                                  rtop_n)
                cnt = 0
                for j in range(rtop_n[u]):
                    if cnt == k:
                        break
                    w = rtop[u, j, 2]
                    if not (w >= w_floor):
                        break
                    top_w[cnt] = w
                    top_v[cnt] = np.int64(rtop[u, j, 1])
                    cnt += 1  # noqa: SIM113 - the kept count, read after the loop's breaks
            else:
                # gather the row's weights first: the loads are independent, so their cache
                # misses overlap (ew is in edge order, not row order); reading them inside the
                # branchy loop below made spread 2.3x slower than over a CSR (1M events, 709k
                # edges: p50 6.6 ms vs 2.9 ms); gathered, 1.7-2.0 ms
                if deg > row_w.shape[0]:
                    row_w = np.empty(2 * deg, np.float64)
                for j in range(deg):
                    row_w[j] = ew[pool_e[lo + j]]
                # masked top-k by insertion into a buffer sorted by (weight desc, target asc);
                # rows are in no particular order, so equal weights compare their targets
                cnt = 0
                for j in range(deg):
                    v = pool_dst[lo + j]
                    w = row_w[j]
                    if v == u or not (w >= w_floor) or is_blocked[v]:
                        continue
                    if cnt < k:
                        pos = cnt
                        cnt += 1
                    elif cnt > 0 and (w > top_w[cnt - 1] or (w == top_w[cnt - 1]
                                                             and v < top_v[cnt - 1])):
                        pos = cnt - 1
                    else:
                        continue
                    while pos > 0 and (top_w[pos - 1] < w or (top_w[pos - 1] == w
                                                              and top_v[pos - 1] > v)):
                        top_w[pos] = top_w[pos - 1]
                        top_v[pos] = top_v[pos - 1]
                        pos -= 1
                    top_w[pos] = w
                    top_v[pos] = v
            a_u = act_out[u]
            scale = 1.0 / math.sqrt(max(1, min(deg, DEG_CAP)))
            for r in range(cnt):
                v = top_v[r]
                visits += 1
                a = a_u * top_w[r] * (1.0 + min(m[v], M_CAP)) * scale
                if a >= a_floor and a > act_out[v]:
                    act_out[v] = a
                    parent_out[v] = u
                    if track and not mark[v]:
                        mark[v] = True
                        reached[n_reached] = v
                        n_reached += 1
                    if not queued[v]:
                        queued[v] = True
                        nxt[n_next] = v
                        n_next += 1
        if n_next == 0:
            break
        nxt[:n_next].sort()
        for j in range(n_next):
            queued[nxt[j]] = False
        frontier, nxt = nxt, frontier
        n_front = n_next
    if work is not None:
        for j in range(n_reached):
            expanded[reached[j]] = False  # (queued is all False after every hop)
            mark[reached[j]] = False
        work.n_reached[0] = n_reached
    return visits


def spread_csr(indptr, indices, data, seeds, seed_act, m, is_blocked, hops, topk, w_floor,
               a_floor, act_out, parent_out):
    """``spread`` over a CSR (plain Python; tests and benchmarks): the same arguments with
    ``indptr``, ``indices`` (sorted or not within rows), ``data`` float32 for the graph."""
    adj_off, adj_len, pool_dst, pool_e = csr_adjacency(indptr, indices)
    return spread(adj_off, adj_len, pool_dst, pool_e, data, seeds, seed_act, m, is_blocked,
                  hops, topk, w_floor, a_floor, act_out, parent_out)
