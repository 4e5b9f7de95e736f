"""Slow, plain-Python references for the engine kernels in ``brainbox.kernels``.

Written from DESIGN §4 and the kernel contracts, not from the kernels: dicts, lists and
loops, same signatures and the same in-place outputs, so one harness can run a kernel and
its reference on copies of the same arguments and compare everything. Floating point
expressions are written in the order the contract states them (``eta * p * h * d * g``),
so results agree bit for bit.

Differences a caller may see: ``fold_touches`` does not maintain the hash table
(``hkeys``/``hslot`` are left as they were) and ``rebuild_hash`` stores each key in an
arbitrary slot (only the key -> edge mapping is comparable). ``link_edges`` and
``rebuild_adjacency`` lay out the pool slot for slot like the kernels.

``adjacency_rows`` and ``csr_rows`` (scipy) give the rows an adjacency and the edge arrays
hold, as sets, for the tests that do not depend on the layout.

The registry (:mod:`brainbox.eval.reference`) pairs each kernel with its reference here and
drives the parity tests and the benchmarks; ``REFERENCES`` is its {kernel: reference} view
of this module.
"""

import math

import numpy as np

from brainbox.kernels import HIST, N_KEY, WINDOW

# --- Hebbian learning (DESIGN §4.1) -------------------------------------------------------


def gate(w):
    return 1.0 / (1.0 + math.exp(8.0 * (w - 0.5)))


def fold_touches(t_sess, t_res, t_time, start, kind, n, m, act, last, hist, hist_len, deg,
                 win, win_len, hkeys, hslot, esrc, edst, ew, ecount, etime, n_edges):
    capacity = min(len(esrc), len(hkeys) // 2)
    edge_of = {(int(esrc[e]), int(edst[e])): e for e in range(int(n_edges[0]))}
    windows = {}

    def window(s):
        if s not in windows:
            windows[s] = [int(x) for x in win[s, : win_len[s]]]
        return windows[s]

    def learn(src, dst, eta, p, h, d, t):
        e = edge_of.get((src, dst))
        if e is None:
            e = edge_of[(src, dst)] = len(edge_of)
            esrc[e], edst[e], ecount[e] = src, dst, 0
            deg[src] += 1
            w = 0.0
        else:
            w = float(ew[e])
        delta = eta * p * h * d * gate(w)
        ew[e] = np.float32(min(1.0, w + delta * (1.0 - w)))
        ecount[e] += 1
        etime[e] = t

    stopped = len(t_res)
    for i in range(start, len(t_res)):
        if len(edge_of) + 2 * WINDOW > capacity:
            stopped = i
            break
        s, v, t = int(t_sess[i]), int(t_res[i]), float(t_time[i])
        if n[v] == 0:
            n[v], m[v] = 1, 0.0
        else:
            count = int(n[v])
            m[v] = m[v] + 0.02 * (1 - m[v] / 0.95) * max(1 / math.sqrt(max(count, 1)), 0.1)
            n[v] = count + 1
        act[v] = 1.0
        last[v] = t
        hist[v, hist_len[v] % HIST] = t
        hist_len[v] += 1

        earlier = [u for u in window(s) if u != v]
        for index, u in enumerate(earlier):
            p = (index + 1) / len(earlier)
            h = 0.5 if deg[u] > 20 or deg[v] > 20 else 1.0
            eta = 0.2 if kind[u] == 2 or kind[v] == 2 else 0.1
            learn(u, v, eta, p, h, 1.0, t)
            learn(v, u, eta, p, h, 0.5, t)
        windows[s] = (earlier + [v])[-WINDOW:]

    n_edges[0] = len(edge_of)
    for s, w in windows.items():
        win[s, : len(w)] = w
        win_len[s] = len(w)
    return stopped


def find_edge(hkeys, hslot, src, dst):
    for j, key in enumerate(hkeys):
        if key == src * N_KEY + dst:
            return int(hslot[j])
    return -1


def rebuild_hash(esrc, edst, n_edges, hkeys, hslot):
    hkeys[:] = -1
    for e in range(n_edges):
        hkeys[e] = esrc[e] * N_KEY + edst[e]
        hslot[e] = e


def hash_mapping(hkeys, hslot):
    """The key -> edge mapping a hash table stores, whatever its layout."""
    return {int(k): int(e) for k, e in zip(hkeys, hslot) if k != -1}


# --- maintenance (DESIGN §4.2) ------------------------------------------------------------


def decay_state(act, m, ew, n_edges, days, keep):
    act *= 0.85**days
    m *= 0.995**days
    ew[:n_edges] = (ew[:n_edges].astype(np.float64) * 0.98**days).astype(np.float32)
    keep[:n_edges] = ew[:n_edges] >= 0.05


def compact_edges(keep, esrc, edst, ew, ecount, etime, deg, n_edges):
    kept = [e for e in range(n_edges) if keep[e]]
    for e in range(n_edges):
        if not keep[e]:
            deg[esrc[e]] -= 1
    for arr in (esrc, edst, ew, ecount, etime):
        arr[: len(kept)] = arr[kept]
    return len(kept)


# --- spreading activation (DESIGN §4.4) ---------------------------------------------------


def spread_csr(indptr, indices, data, seeds, seed_act, m, is_blocked, hops, topk, w_floor,
               a_floor, act_out, parent_out):
    rows = {
        u: [(int(indices[q]), float(data[q])) for q in range(indptr[u], indptr[u + 1])]
        for u in range(len(act_out))
    }
    return spread_rows(rows, seeds, seed_act, m, is_blocked, hops, topk, w_floor, a_floor,
                       act_out, parent_out)


def spread(adj_off, adj_len, pool_dst, pool_e, ew, seeds, seed_act, m, is_blocked, hops, topk,
           w_floor, a_floor, act_out, parent_out):
    rows = {
        u: [(int(pool_dst[q]), float(ew[pool_e[q]]))
            for q in range(adj_off[u], adj_off[u] + adj_len[u])]
        for u in range(len(act_out))
    }
    return spread_rows(rows, seeds, seed_act, m, is_blocked, hops, topk, w_floor, a_floor,
                       act_out, parent_out)


def spread_rows(rows, seeds, seed_act, m, is_blocked, hops, topk, w_floor, a_floor, act_out,
                parent_out):
    """Spreading activation over ``rows``: {u: [(v, w), ...]} in any order."""
    act, parent = {}, {}
    for u, a in zip(seeds, seed_act):
        u = int(u)
        if not is_blocked[u]:
            act[u] = max(act.get(u, -math.inf), float(a))
    frontier, expanded, visits = sorted(act), set(), 0
    for _ in range(hops):
        improved = set()
        for u in frontier:
            if u in expanded:
                continue
            expanded.add(u)
            eligible = [
                (w, v) for v, w in rows[u] if v != u and w >= w_floor and not is_blocked[v]
            ]
            eligible.sort(key=lambda c: (-c[0], c[1]))
            scale = 1.0 / math.sqrt(max(1, min(len(rows[u]), 50)))
            for w, v in eligible[: max(topk, 0)]:
                visits += 1
                a = act[u] * w * (1.0 + min(m[v], 0.5)) * scale
                if a >= a_floor and a > act.get(v, 0.0):
                    act[v], parent[v] = a, u
                    improved.add(v)
        if not improved:
            break
        frontier = sorted(improved)
    act_out[:] = 0.0
    parent_out[:] = -1
    for v, a in act.items():
        act_out[v] = a
    for v, u in parent.items():
        parent_out[v] = u
    return visits


# --- out-adjacency (DESIGN §4.4) ----------------------------------------------------------


def block_size(count):
    """Slots ``rebuild_adjacency`` gives a node with ``count`` out-edges."""
    return count + max(4, count // 4) if count > 0 else 0


def link_edges(esrc, edst, start, end, adj_off, adj_len, adj_cap, pool_dst, pool_e, pool_used):
    for e in range(start, end):
        u = int(esrc[e])
        n = int(adj_len[u])
        if n == adj_cap[u]:
            cap, base, off = max(4, 2 * n), int(pool_used[0]), int(adj_off[u])
            if base + cap > len(pool_dst):
                return e
            pool_dst[base: base + n] = pool_dst[off: off + n].copy()
            pool_e[base: base + n] = pool_e[off: off + n].copy()
            adj_off[u], adj_cap[u], pool_used[0] = base, cap, base + cap
        pool_dst[adj_off[u] + n], pool_e[adj_off[u] + n] = edst[e], e
        adj_len[u] = n + 1
    return end


def rebuild_adjacency(esrc, edst, n_edges, adj_off, adj_len, adj_cap, pool_dst, pool_e,
                      pool_used):
    out = {}
    for e in range(n_edges):
        out.setdefault(int(esrc[e]), []).append(e)
    caps = [block_size(len(out.get(u, ()))) for u in range(len(adj_off))]
    need = sum(caps)
    adj_len[:], adj_cap[:], adj_off[:], pool_used[0] = 0, 0, 0, 0
    if need > len(pool_dst):
        return need
    base = 0
    for u in range(len(adj_off)):
        edges = out.get(u, [])
        adj_off[u], adj_cap[u], adj_len[u] = base, caps[u], len(edges)
        for j, e in enumerate(edges):
            pool_dst[base + j], pool_e[base + j] = edst[e], e
        base += caps[u]
    pool_used[0] = need
    return need


def adjacency_rows(adj_off, adj_len, pool_dst, pool_e, ew, n_nodes):
    """The rows an adjacency stores: {u: {(v, edge, weight), ...}} for nodes with edges."""
    rows = {}
    for u in range(n_nodes):
        lo, n = int(adj_off[u]), int(adj_len[u])
        if n:
            rows[u] = {(int(pool_dst[q]), int(pool_e[q]), float(ew[pool_e[q]]))
                       for q in range(lo, lo + n)}
    return rows


def csr_rows(esrc, edst, ew, n_edges, n_nodes):
    """The same rows from the edge arrays through scipy's CSR (edge index as data)."""
    import scipy.sparse as sp

    e = np.arange(n_edges)
    mat = sp.csr_array((e + 1, (np.asarray(esrc[:n_edges]), np.asarray(edst[:n_edges]))),
                       shape=(n_nodes, n_nodes))
    rows = {}
    for u in range(n_nodes):
        lo, hi = mat.indptr[u], mat.indptr[u + 1]
        if hi > lo:
            rows[u] = {(int(v), int(k) - 1, float(ew[int(k) - 1]))
                       for v, k in zip(mat.indices[lo:hi], mat.data[lo:hi])}
    return rows


# --- fusion and base level (DESIGN §4.3) --------------------------------------------------


def rrf_fuse(ranks, lam, gamma, k, out):
    n_chan, n_cand = ranks.shape
    for i in range(n_cand):
        total = 0.0
        for c in range(n_chan):
            if ranks[c, i] > 0:
                total += lam[c] * gamma[c, i] / (k + int(ranks[c, i]))
        out[i] = total


def ranks_from_scores(scores, valid):
    order = sorted(
        (i for i in range(len(scores)) if valid[i]),
        key=lambda i: (math.isnan(scores[i]), -float(scores[i]) if not math.isnan(scores[i])
                       else 0.0, i),
    )
    out = np.zeros(len(scores), np.int64)
    for rank, i in enumerate(order, start=1):
        out[i] = rank
    return out


def base_level(hist, hist_len, idx, now, out):
    for j, i in enumerate(idx):
        times = hist[i, : min(int(hist_len[i]), HIST)]
        if len(times) == 0:
            out[j] = -math.inf
            continue
        total = 0.0
        for t in times:
            total += 1.0 / math.sqrt(max((now - t) / 3600.0, 1.0 / 60.0))
        out[j] = math.log(total)


# --- tool n-grams (DESIGN §4.5) -----------------------------------------------------------


def encode_ctx(a, b, c):
    return (a + 1) + (b + 1) * 2**20 + (c + 1) * 2**40


def ngram_pairs(seq_sess, seq_tool, last3, last3_len, out_ctx, out_next):
    recent = {}
    pairs = []
    for s, tool in zip(seq_sess, seq_tool):
        s, tool = int(s), int(tool)
        if s not in recent:
            recent[s] = [int(x) for x in last3[s, : last3_len[s]]]
        tools = recent[s]
        for k in range(1, min(3, len(tools)) + 1):
            slots = [-1] * (3 - k) + tools[-k:]
            pairs.append((encode_ctx(*slots), tool))
        recent[s] = (tools + [tool])[-3:]
    for j, (ctx, tool) in enumerate(pairs):
        out_ctx[j], out_next[j] = ctx, tool
    for s, tools in recent.items():
        last3[s, : len(tools)] = tools
        last3_len[s] = len(tools)
    return len(pairs)


def __getattr__(name):
    if name == "REFERENCES":  # {kernel: reference} for this module's entries, from the registry
        from brainbox.eval.reference import references

        return references(__name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
