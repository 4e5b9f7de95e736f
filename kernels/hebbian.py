"""Windowed Hebbian learning and maintenance (DESIGN §4.1, §4.2).

State lives in flat arrays owned by the caller (the engine grows them and persists them):

- nodes (length N): ``n`` int64 access count, ``m`` float64 reinforcement, ``act`` float64
  activation, ``last`` float64 last access time, ``hist`` float64[N, 50] ring buffer of access
  times (slot ``hist_len % 50``), ``hist_len`` int64 accesses ever recorded, ``deg`` int64
  out-degree, ``kind`` int8 (0 file, 1 tool, 2 error);
- session windows (S rows): ``win`` int64[S, 25] last distinct resources, oldest first,
  ``win_len`` int64[S];
- edges (capacity E, the first ``n_edges[0]`` used, in creation order): ``esrc``/``edst``
  int64, ``ew`` float32 weight, ``ecount`` int64 co-access count, ``etime`` float64 last update;
- an open-addressing hash (key ``src * 2**31 + dst`` -> edge index): ``hkeys`` int64[H]
  (H a power of two, -1 empty), ``hslot`` int64[H]; linear probing, load kept <= 1/2.
  Both directions of a pair have the same home slot (``_pair_home``), so the lookup of
  ``u -> v`` and ``v -> u`` is one probe run, mostly within one cache line.

Layout. Kernels take each array as an argument and accept any strides. The engine
(``brainbox.graph.EdgeStore.hash_table``) passes ``hkeys`` and ``hslot`` as the two columns of one
int64[H, 2], so a probe reads the key and the edge index from one cache line instead of two
(about 10% off ``fold_touches`` on the 1M-event workload). The edge attributes stay separate
contiguous arrays: most updates go to a few thousand hot edges, created early and so at low
indices, which pack densely per array; a 32-byte record per edge (weight, count, time side by
side) measured slower.

The hash mixes 32-bit lanes with multipliers below 2**27 (Mueller's integer hash), so no
product ever overflows int64: the same code gives the same table compiled and under
``NUMBA_DISABLE_JIT=1`` (numpy scalars would warn on a wrapping splitmix64). Edges are never
deleted from the table; pruning compacts the edge arrays and rebuilds the table.
"""

import math

import numpy as np

from ._jit import jit
from .codes import ERROR as KIND_ERROR
from .codes import TOOL as KIND_TOOL

WINDOW = 25  # distinct resources per session window
HIST = 50  # access times kept per resource
HUB_DEGREE = 20  # more associations than this halves the step
HUB_FACTOR = 0.5
ETA, ETA_ERROR = 0.1, 0.2
D_FORWARD, D_REVERSE = 1.0, 0.5
GATE_SLOPE, GATE_MID = 8.0, 0.5
M_RATE, M_MAX, M_FLOOR = 0.02, 0.95, 0.1
DECAY_ACT, DECAY_M, DECAY_W = 0.85, 0.995, 0.98  # per day
PRUNE_BELOW = 0.05
N_KEY = 1 << 31  # hash key = src * N_KEY + dst
RESERVE = 2 * WINDOW  # most edges one touch can create
EMPTY = -1
GATE_MEMO = 1024  # gate values fold_touches remembers (a power of two)
ROW_TOP = 10  # out-edges per row kept in order for spreading (its top k is at most this)
# the step's position weight p = (q + 1) / L for a window of L others, looked up instead of
# divided per pair (the same IEEE quotients; a global array is a constant to numba): the
# division sat in each update's dependency chain
P_POS = np.zeros((WINDOW + 1, WINDOW))
for _L in range(1, WINDOW + 1):
    P_POS[_L, :_L] = (np.arange(_L) + 1) / _L
del _L


@jit
def mix32(x):
    """Mix a value in [0, 2**32) to [0, 2**32); products stay below 2**59."""
    x = ((x >> 16) ^ x) * 0x45D9F3B & 0xFFFFFFFF
    x = ((x >> 16) ^ x) * 0x45D9F3B & 0xFFFFFFFF
    return (x >> 16) ^ x


@jit
def key_home(key):
    """Hash of a key ``a * 2**31 + b`` (a < 2**32, b < 2**31), before masking (the edge
    hash uses it through ``_pair_home``; ``kernels/table.py`` directly)."""
    return mix32(mix32(key >> 31) ^ (key & 0x7FFFFFFF))


@jit
def _pair_home(src, dst):
    """Home of edge ``src -> dst`` in the edge hash, before masking: ``key_home`` of the pair in
    ascending order, so ``dst -> src`` has the same home."""
    return mix32(mix32(min(src, dst)) ^ max(src, dst))


# The probe loop is written out in each kernel rather than factored into a helper taking the
# arrays: numba increments and decrements the reference count of every array passed to a call
# (atomic operations, even when inlined); that made fold_touches about 2x slower (measured
# on 10k resources and 0.8M edges).


@jit(inline="always")
def find_edge(hkeys, hslot, src, dst):
    """Index of edge ``src -> dst``, or -1 if absent. Read-only on both arrays. Inlined:
    the replay's folds call it per window pair, and each call counted both arrays'
    references up and down (0.75% of a 5,000-file replay in ``perf``)."""
    key = src * N_KEY + dst
    mask = hkeys.shape[0] - 1
    j = _pair_home(src, dst) & mask
    for _ in range(hkeys.shape[0]):  # bounded: a full table without the key ends the loop
        k = hkeys[j]
        if k == key:
            return hslot[j]
        if k == EMPTY:
            return -1
        j = (j + 1) & mask
    return -1


@jit
def rebuild_hash(esrc, edst, n_edges, hkeys, hslot):
    """Clear ``hkeys`` to -1 and insert edges ``0..n_edges-1`` (after growth or pruning).

    esrc, edst: int64[E] (read only); hkeys, hslot: int64[H], H a power of two and at least
    ``n_edges + 1`` (the engine keeps H >= 2 * E), written in place.
    """
    hkeys[:] = EMPTY
    mask = hkeys.shape[0] - 1
    for e in range(n_edges):
        key = esrc[e] * N_KEY + edst[e]
        j = _pair_home(esrc[e], edst[e]) & mask
        while hkeys[j] != EMPTY:
            j = (j + 1) & mask
        hkeys[j] = key
        hslot[j] = e


@jit
def fold_touches(t_sess, t_res, t_time, start, kind, n, m, act, last, hist, hist_len, deg,
                 win, win_len, hkeys, hslot, esrc, edst, ew, ecount, etime, n_edges,
                 rtop=None, rtop_n=None, memo=None):
    """Fold touches ``start..T-1`` into node, window and edge state (DESIGN §4.1).

    Inputs (read only): t_sess int64[T] session row in ``win``, t_res int64[T] resource id,
    t_time float64[T], kind int8[N]. Everything else is state (see the module docstring),
    updated in place; ``n_edges`` is int64[1].

    Per touch of v in session s at time t: update v's node (count, reinforcement,
    activation 1, last time, history); for each u of the window without v, oldest first at
    position i of L, step u -> v with ``eta p h`` and v -> u with ``eta p h / 2``, where
    ``p = (i+1)/L``, ``h = 0.5`` if deg[u] or deg[v] > 20 (read once per u, before its two
    steps), ``eta = 0.2`` if u or v is an error else 0.1; then move v to the window's end.
    The step is ``delta = eta p h d g(w)``, ``w <- min(1, w + delta (1 - w))`` in float64,
    stored as float32; a new edge starts from w = 0 and increments ``deg[src]``.

    Speed (none of it changes a result): the 2L edges of a touch are looked up before any is
    updated, in two passes (hash every pair and load its home slot, then probe), so their
    cache misses overlap (the weights and counts are loaded there too); each pair is one
    probe run (both directions share a home); and
    ``g(w)`` comes from a memo of (w, g(w)) pairs when the same float32 weight was gated
    before in this call (a saturated weight stops moving: about half the updates on the
    1M-event workload). The memo holds only values this code computed and is keyed by the
    exact weight, so a hit returns the same bits as the exp would.

    Returns the index of the first touch not processed: T when done, or an earlier i when
    fewer than 50 edge slots remain (``n_edges + 50 > min(E, H // 2)``); the caller then
    grows the edge arrays and the hash (``rebuild_hash``) and calls again with start=i. The
    result does not depend on how the touches are split into calls.

    ``rtop`` float64[N, ROW_TOP, 3] / ``rtop_n`` int64[N] (optional): per node, its heaviest
    out-edges to non-tool targets other than itself as (edge index, target, weight), by
    (weight desc, target asc), ``rtop_n`` of them, or -1 for a node without a list
    (``row_top_build`` makes one).
    Every weight change here keeps the lists exact (weights only grow in a fold, so an edge
    lighter than a full list's last cannot be in it or enter it: one comparison).

    ``memo`` float64[GATE_MEMO, 2] (optional): the gate memo, kept by a caller that folds a
    few touches per call (the replay, event by event) instead of filling a new one each
    call; it only ever holds (w, g(w)) pairs this code computed, so any memo gives the
    same result. Start it filled with NaN.
    """
    T = t_res.shape[0]
    cap = min(esrc.shape[0], hkeys.shape[0] // 2)
    mask = hkeys.shape[0] - 1
    # per touch, for window position q: the pair's home slot and the key stored there; then
    # for edges u->v (2q) and v->u (2q+1) the edge index (-1 new) and weight before the touch
    home = np.empty(WINDOW, np.int64)
    first = np.empty(WINDOW, np.int64)
    found = np.empty(2 * WINDOW, np.int64)
    found_w = np.empty(2 * WINDOW, np.float32)
    found_c = np.empty(2 * WINDOW, np.int64)  # and its count before the touch
    found_bits = found_w.view(np.int32)  # the memo's index: low bits of the float32
    if memo is None:
        memo = np.full((GATE_MEMO, 2), np.nan)  # (w, g(w)); a NaN key matches nothing
    for i in range(start, T):
        if n_edges[0] + RESERVE > cap:
            return i
        s = t_sess[i]
        v = t_res[i]
        t = t_time[i]

        # 1. the node
        nv = n[v]
        if nv == 0:
            n[v] = 1
            m[v] = 0.0
        else:
            m[v] += M_RATE * (1.0 - m[v] / M_MAX) * max(1.0 / math.sqrt(max(nv, 1)), M_FLOOR)
            n[v] = nv + 1
        act[v] = 1.0
        last[v] = t
        hist[v, hist_len[v] % HIST] = t
        hist_len[v] += 1

        # 2. remove v from the window (shift in place), then learn from what remains
        L = win_len[s]
        j = 0
        while j < L and win[s, j] != v:
            j += 1
        if j < L:
            for q in range(j, L - 1):
                win[s, q] = win[s, q + 1]
            L -= 1
        # look up all 2L edges first: the probes are independent, so their cache misses
        # overlap instead of queueing behind each update; keys of one touch are distinct, so
        # what was found stays valid. The first pass has no branch on loaded data, so the
        # home slots of all pairs are fetched at once.
        for q in range(L):
            hq = _pair_home(win[s, q], v) & mask
            home[q] = hq
            first[q] = hkeys[hq]
        for q in range(L):
            u = win[s, q]
            k_fwd = u * N_KEY + v
            k_rev = v * N_KEY + u
            e_fwd = -1
            e_rev = -1
            slot = home[q]
            k = first[q]
            while k != EMPTY:  # load <= 1/2: an empty slot ends every run
                if k == k_fwd:
                    e_fwd = hslot[slot]
                    if e_rev >= 0:
                        break
                elif k == k_rev:
                    e_rev = hslot[slot]
                    if e_fwd >= 0:
                        break
                slot = (slot + 1) & mask
                k = hkeys[slot]
            found[2 * q] = e_fwd
            found[2 * q + 1] = e_rev
            found_w[2 * q] = ew[e_fwd] if e_fwd >= 0 else 0.0
            found_w[2 * q + 1] = ew[e_rev] if e_rev >= 0 else 0.0
            found_c[2 * q] = ecount[e_fwd] if e_fwd >= 0 else 0
            found_c[2 * q + 1] = ecount[e_rev] if e_rev >= 0 else 0

        v_error = kind[v] == KIND_ERROR
        for q in range(L):
            u = win[s, q]
            p = P_POS[L, q]  # (q + 1) / L
            h = HUB_FACTOR if (deg[u] > HUB_DEGREE or deg[v] > HUB_DEGREE) else 1.0
            eta = ETA_ERROR if (v_error or kind[u] == KIND_ERROR) else ETA
            c = eta * p * h
            for r in range(2):  # earlier -> later (d = 1), then the reverse (d = 1/2)
                if r == 0:
                    src, dst, d = u, v, D_FORWARD
                else:
                    src, dst, d = v, u, D_REVERSE
                e = found[2 * q + r]
                w = np.float64(found_w[2 * q + r])  # 0 for a new edge
                if e < 0:  # a new edge; probe again, this touch may have taken slots since
                    slot = _pair_home(src, dst) & mask
                    while hkeys[slot] != EMPTY:
                        slot = (slot + 1) & mask
                    e = n_edges[0]
                    n_edges[0] = e + 1
                    hkeys[slot] = src * N_KEY + dst
                    hslot[slot] = e
                    esrc[e] = src
                    edst[e] = dst
                    deg[src] += 1
                mk = found_bits[2 * q + r] & (GATE_MEMO - 1)
                if memo[mk, 0] == w:
                    g = memo[mk, 1]
                else:
                    g = 1.0 / (1.0 + math.exp(GATE_SLOPE * (w - GATE_MID)))
                    memo[mk, 0] = w
                    memo[mk, 1] = g
                ew[e] = min(1.0, w + c * d * g * (1.0 - w))  # delta = eta p h d g(w)
                ecount[e] = found_c[2 * q + r] + 1
                etime[e] = t
                if rtop is not None:  # noqa: SIM102 - numba prunes only a bare `is not None` test
                    if rtop_n[src] >= 0 and dst != src and kind[dst] != KIND_TOOL:
                        row_top_offer(rtop, rtop_n, ew, edst, src, e)

        # 3. v becomes the newest; a full window drops its oldest
        if L == WINDOW:
            for q in range(L - 1):
                win[s, q] = win[s, q + 1]
            L -= 1
        win[s, L] = v
        win_len[s] = L + 1
    return T


@jit
def _heavier(w_a, v_a, w_b, v_b):
    """Does an edge of weight w_a to v_a come before one of w_b to v_b in a row's order?"""
    return w_a > w_b or (w_a == w_b and v_a < v_b)


@jit
def row_top_offer(rtop, rtop_n, ew, edst, u, e):
    """Edge ``e`` of row ``u`` got heavier: keep ``u``'s list (``fold_touches``) exact. The
    list holds (edge, target, weight) side by side, so this reads only the row's list."""
    cnt = rtop_n[u]
    w = np.float64(ew[e])
    v = edst[e]
    if cnt == ROW_TOP and rtop[u, cnt - 1, 0] != e and not _heavier(
            w, v, rtop[u, cnt - 1, 2], rtop[u, cnt - 1, 1]):
        return  # not in the list (it would be at least as heavy as the tail) and not entering
    pos = -1
    for j in range(cnt):
        if rtop[u, j, 0] == e:
            pos = j
            break
    if pos < 0:
        if cnt < ROW_TOP:
            pos = cnt
            rtop_n[u] = cnt + 1
        else:
            pos = cnt - 1  # the tail drops out
    _settle(rtop, u, pos, e, v, w)


@jit
def _settle(rtop, u, pos, e, v, w):
    """Put (e, v, w) at ``pos`` of u's list or above it, shifting lighter entries down."""
    while pos > 0 and _heavier(w, v, rtop[u, pos - 1, 2], rtop[u, pos - 1, 1]):
        rtop[u, pos, 0] = rtop[u, pos - 1, 0]
        rtop[u, pos, 1] = rtop[u, pos - 1, 1]
        rtop[u, pos, 2] = rtop[u, pos - 1, 2]
        pos -= 1
    rtop[u, pos, 0] = e
    rtop[u, pos, 1] = v
    rtop[u, pos, 2] = w


@jit
def row_top_build(adj_off, adj_len, pool_e, ew, edst, is_blocked, u, rtop, rtop_n):
    """Make node ``u``'s list (``fold_touches``) from its whole adjacency row: the ROW_TOP
    heaviest out-edges to targets not blocked and not ``u``, by (weight desc, target asc)."""
    cnt = 0
    lo = adj_off[u]
    for q in range(lo, lo + adj_len[u]):
        e = pool_e[q]
        v = edst[e]
        if v == u or is_blocked[v]:
            continue
        w = np.float64(ew[e])
        if cnt < ROW_TOP:
            pos = cnt
            cnt += 1
        elif _heavier(w, v, rtop[u, cnt - 1, 2], rtop[u, cnt - 1, 1]):
            pos = cnt - 1
        else:
            continue
        _settle(rtop, u, pos, e, v, w)
    rtop_n[u] = cnt


@jit
def decay_state(act, m, ew, n_edges, days, keep):
    """Apply ``days`` (may be fractional) of decay in place and mark edges to keep.

    act, m: float64[N] scaled by 0.85**days and 0.995**days; ew: float32[E], the first
    ``n_edges`` scaled by 0.98**days (computed in float64, stored as float32); keep: bool[>=
    n_edges] out, ``keep[e] = ew[e] >= 0.05`` after decay (entries past n_edges untouched).
    """
    fa = DECAY_ACT**days
    fm = DECAY_M**days
    fw = DECAY_W**days
    for i in range(act.shape[0]):
        act[i] *= fa
    for i in range(m.shape[0]):
        m[i] *= fm
    for e in range(n_edges):
        ew[e] = np.float64(ew[e]) * fw
        keep[e] = ew[e] >= PRUNE_BELOW


@jit
def compact_edges(keep, esrc, edst, ew, ecount, etime, deg, n_edges):
    """Move kept edges to the front (order preserved); return the new edge count.

    keep: bool[>= n_edges] (read only); esrc, edst, ew, ecount, etime: edge arrays, written
    in place (entries past the new count are left as they were); deg: int64[N], decremented
    at the source of every dropped edge. The caller must then call ``rebuild_hash``.
    """
    k = 0
    for e in range(n_edges):
        if keep[e]:
            if k != e:
                esrc[k] = esrc[e]
                edst[k] = edst[e]
                ew[k] = ew[e]
                ecount[k] = ecount[e]
                etime[k] = etime[e]
            k += 1
        else:
            deg[esrc[e]] -= 1
    return k
