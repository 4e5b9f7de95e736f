"""Next-tool prediction (DESIGN §4.5) and the n-gram counts it reads, compiled.

Counts live in two :class:`~.table.Table` s: ``ctxmap`` gives each context code
(``ngram.encode_ctx``, up to 2**60) a dense id, its entry index, keyed by
``(code >> 30, code & (2**30 - 1))``; ``grams`` counts ``(context id, next tool)``.

Prediction for a session whose last tools are ``last3[sid, :last3_len[sid]]``:

1. the longest suffix (3, 2, 1 tools) whose context was seen at least ``min_support``
   times ranks the tools that followed it by count (ties: lower id);
2. else the direct tool -> tool associations of the last tool, by weight (ties: lower id);
3. that ranking is fused with the frequency ranking of all tools (count, ties: lower id) by
   RRF: ``1 / (60 + r_seq) + 0.5 / (60 + r_freq)``, summed in that order; the ``k`` best,
   ties by lower id.
"""

import numpy as np

from ._jit import jit
from .codes import TOOL as KIND_TOOL
from .hebbian import EMPTY, N_KEY, key_home
from .table import table_add, table_find

RRF_K = 60.0
W_SEQ, W_FREQ = 1.0, 0.5
LOW_BITS = 30
LOW_MASK = (1 << LOW_BITS) - 1


@jit
def ctx_id(ctxmap, code):
    """Dense id of a context code, -1 if never seen."""
    return table_find(ctxmap, code >> LOW_BITS, code & LOW_MASK)


@jit
def ngram_count(ctxmap, grams, codes, tools, n, weights):
    """Add ``weights[i]`` to pair ``(codes[i], tools[i])`` for i < n (an empty ``weights``
    counts 1 each); returns (ctxmap, grams), grown as needed.

    A pair already counted is found and bumped here, with the tables' hash arrays read out
    once (``table_find`` and ``table_add`` written out); only a new pair goes through
    ``table_add``. Passing a table to a call counts each of its 12 arrays' references up
    and down: this kernel and the calls it made were 41% of the replay loop's reference
    counting (counted with a breakpoint on NRT_incref/decref)."""
    c_hk, c_hs = ctxmap.hkeys, ctxmap.hslot
    g_hk, g_hs, g_ev = grams.hkeys, grams.hslot, grams.ev
    for i in range(n):
        code = codes[i]
        hi = code >> LOW_BITS
        lo = code & LOW_MASK
        key = hi * N_KEY + lo
        mask = c_hk.shape[0] - 1
        j = key_home(key) & mask
        c = -1
        while c_hk[j] != EMPTY:  # load <= 1/2: an empty slot ends every run
            if c_hk[j] == key:
                c = c_hs[j]
                break
            j = (j + 1) & mask
        if c < 0:
            c = ctxmap.n[0]
            ctxmap = table_add(ctxmap, hi, lo, 1.0)
            c_hk, c_hs = ctxmap.hkeys, ctxmap.hslot
        x = weights[i] if weights.shape[0] else 1.0
        key = c * N_KEY + tools[i]
        mask = g_hk.shape[0] - 1
        j = key_home(key) & mask
        e = -1
        while g_hk[j] != EMPTY:
            if g_hk[j] == key:
                e = g_hs[j]
                break
            j = (j + 1) & mask
        if e >= 0:
            g_ev[e] += x
        else:
            grams = table_add(grams, c, tools[i], x)
            g_hk, g_hs, g_ev = grams.hkeys, grams.hslot, grams.ev
    return ctxmap, grams


@jit
def _rank_desc(ids, vals):
    """ids by descending value, ties by lower id."""
    o = np.argsort(ids)
    ids = ids[o]
    vals = vals[o]
    o = np.argsort(-vals, kind="mergesort")
    return ids[o]


@jit
def tool_ids(kind, lo, hi):
    """The tool resources among ``lo .. hi - 1``, ascending."""
    c = 0
    for r in range(lo, hi):
        if kind[r] == KIND_TOOL:
            c += 1
    out = np.empty(c, np.int64)
    c = 0
    for r in range(lo, hi):
        if kind[r] == KIND_TOOL:
            out[c] = r
            c += 1
    return out


@jit
def predict_kernel(kind, n, n_res, last3, last3_len, sid, ctxmap, grams, adj_off, adj_len,
                   pool_dst, pool_e, ew, min_support, k, tools=None):
    """The ``k`` best next tools (ids, scores) for session row ``sid`` (-1: no session);
    resources ``>= n_res`` are ignored. See the module docstring.

    ``tools``: ``tool_ids(kind, 0, n_res)``, from a caller that keeps it (the replay) so
    that a prediction costs nothing per resource; else it is found here."""
    if tools is None:
        tools = tool_ids(kind, 0, n_res)
    n_tools = tools.shape[0]
    counts = np.empty(n_tools, np.float64)
    for c in range(n_tools):
        counts[c] = n[tools[c]]
    if n_tools == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    seq = np.zeros(0, np.int64)
    if sid >= 0:
        L = last3_len[sid]
        found = False
        for order in range(min(3, L), 0, -1):
            a = last3[sid, L - 3] + 1 if order == 3 else 0
            b = last3[sid, L - 2] + 1 if order >= 2 else 0
            code = a + b * (1 << 20) + (last3[sid, L - 1] + 1) * (1 << 40)
            cid = ctx_id(ctxmap, code)
            if cid < 0 or cid >= grams.off.shape[0]:
                continue
            lo = grams.off[cid]
            hi = lo + grams.len[cid]
            total = 0.0
            for q in range(lo, hi):
                total += grams.ev[grams.pool_e[q]]
            if total >= min_support:
                ids = grams.pool_b[lo:hi].copy()
                vals = np.empty(hi - lo, np.float64)
                for q in range(lo, hi):
                    vals[q - lo] = grams.ev[grams.pool_e[q]]
                seq = _rank_desc(ids, vals)
                found = True
                break
        if not found and L > 0:
            last = last3[sid, L - 1]
            lo = adj_off[last]
            cnt = 0
            for q in range(lo, lo + adj_len[last]):
                if kind[pool_dst[q]] == KIND_TOOL:
                    cnt += 1
            ids = np.empty(cnt, np.int64)
            vals = np.empty(cnt, np.float64)
            cnt = 0
            for q in range(lo, lo + adj_len[last]):
                v = pool_dst[q]
                if kind[v] == KIND_TOOL:
                    ids[cnt] = v
                    vals[cnt] = ew[pool_e[q]]
                    cnt += 1
            seq = _rank_desc(ids, vals)
    # scores per tool (position in ``tools``): the sequence term, then the frequency term
    score = np.zeros(n_tools, np.float64)
    for r in range(seq.shape[0]):
        p = np.searchsorted(tools, seq[r])
        if p < n_tools and tools[p] == seq[r]:  # (a tool >= n_res is ignored)
            score[p] += W_SEQ / (RRF_K + (r + 1))
    freq = _rank_desc(tools, counts)
    for r in range(freq.shape[0]):
        score[np.searchsorted(tools, freq[r])] += W_FREQ / (RRF_K + (r + 1))
    o = _rank_desc(np.arange(n_tools), score)[:k]  # every tool is in the frequency ranking
    return tools[o], score[o]
