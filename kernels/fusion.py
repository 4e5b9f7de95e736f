"""Rank fusion (DESIGN §4.3).

Fused score ``S(i) = sum_c lam_c gamma_c(i) / (k + r_c(i))`` over the channels that rank i;
channel ranks are 1-based, 0 meaning "not ranked by this channel". In recall (``kernels.rank``)
the sum is taken in channel order (gamma is the matched share for lexical, 1 otherwise);
confidence ``S / s_max``; results with confidence below ``min_conf`` are dropped; order by
score, then id. ``fuse_top`` finds the exact ``limit`` best without ranking every file the
deep channels reach.
"""

import math

import numpy as np

from ._jit import jit
from .channels import ASSOCIATIVE, LEXICAL, N_CHANNELS, RECURRENCE
from .topk import sorted_desc, top_k


@jit
def rrf_fuse(ranks, lam, gamma, k, out):
    """Weighted reciprocal-rank fusion.

    ranks int32/int64[C, K] (0 absent, else rank >= 1), lam float64[C], gamma float64[C, K],
    k float; all read only. out float64[K], overwritten with
    ``sum over c with ranks[c, i] > 0 of lam[c] * gamma[c, i] / (k + ranks[c, i])``, summed
    in channel order.
    """
    n_chan, n_cand = ranks.shape
    out[:n_cand] = 0.0
    for c in range(n_chan):
        for i in range(n_cand):
            r = ranks[c, i]
            if r > 0:
                out[i] += lam[c] * gamma[c, i] / (k + r)


@jit
def ranks_from_scores(scores, valid):
    """1-based ranks by descending score among valid entries, 0 for invalid ones.

    scores float32/float64[K], valid bool[K] (read only). Ranks are ordinal (1..n_valid):
    ties go to the lower index; NaN ranks after every number. O(K log K) (stable mergesort).
    Returns a new int64[K].
    """
    n_cand = scores.shape[0]
    out = np.zeros(n_cand, np.int64)
    idx = np.empty(n_cand, np.int64)  # valid numbers first, then valid NaNs
    keys = np.empty(n_cand, np.float64)
    n_num = 0
    for i in range(n_cand):
        if valid[i] and not math.isnan(scores[i]):
            idx[n_num] = i
            keys[n_num] = -np.float64(scores[i])
            n_num += 1
    order = np.argsort(keys[:n_num], kind="mergesort")
    for r in range(n_num):
        out[idx[order[r]]] = r + 1
    rank = n_num
    for i in range(n_cand):
        if valid[i] and math.isnan(scores[i]):
            rank += 1
            out[i] = rank
    return out

@jit
def ratio(score, s_max):
    """``score / s_max`` with IEEE semantics (NaN for 0 / 0, infinity for x / 0) as numpy
    and the reference divide: compiled code raises ZeroDivisionError instead, which a
    recall whose every channel in use weighs 0 (all ablated but recency, at a prompt) hit."""
    if s_max == 0.0:
        if score == 0.0 or math.isnan(score):
            return math.nan
        return math.copysign(math.inf, score) * math.copysign(1.0, s_max)
    return score / s_max


@jit
def first_depth(limit):
    """The depth to which ``fuse_top`` first ranks the deep channels."""
    return max(64, 4 * limit)



@jit
def _beats(s_a, i_a, s_b, i_b):
    """Does (score s_a, id i_a) rank before (s_b, i_b)? Higher score, then lower id."""
    return s_a > s_b or (s_a == s_b and i_a < i_b)


DIRECT_COUNT = 8  # ranks_of counts item by item up to this many items


@jit
def ranks_of(ids, sc, q_ids, q_sc):
    """1-based ranks of the items (q_ids, q_sc) within the channel (ids, sc), each item
    one of the channel's: one pass over the channel, a binary search each; for a few
    items, a plain count per item (branch-free, so the compiler vectorises it)."""
    m = q_ids.shape[0]
    if m <= DIRECT_COUNT:
        out = np.empty(m, np.int64)
        for a in range(m):
            qs = q_sc[a]
            qi = q_ids[a]
            c = 0
            for j in range(ids.shape[0]):
                c += (sc[j] > qs) | ((sc[j] == qs) & (ids[j] < qi))
            out[a] = c + 1
        return out
    o = np.empty(m, np.int64)
    # the queried items best first (a few dozen: insertion sort)
    for a in range(m):
        p = a
        while p > 0 and _beats(q_sc[a], q_ids[a], q_sc[o[p - 1]], q_ids[o[p - 1]]):
            o[p] = o[p - 1]
            p -= 1
        o[p] = a
    cnt = np.zeros(m + 1, np.int64)
    w_s = q_sc[o[m - 1]]  # the worst queried item: most of a deep channel ranks below it,
    w_i = q_ids[o[m - 1]]  # so one comparison settles those without a search
    for j in range(ids.shape[0]):
        s_j = sc[j]
        i_j = ids[j]
        if not _beats(s_j, i_j, w_s, w_i):
            cnt[m] += 1
            continue
        lo, hi = 0, m - 1  # first queried item that (s_j, i_j) beats
        while lo < hi:
            mid = (lo + hi) // 2
            if _beats(s_j, i_j, q_sc[o[mid]], q_ids[o[mid]]):
                hi = mid
            else:
                lo = mid + 1
        cnt[lo] += 1
    out = np.empty(m, np.int64)
    run = 1
    for t in range(m):
        run += cnt[t]
        out[o[t]] = run
    return out


@jit
def fuse_floor(ranks, lam, gam, rrf_k, s_max, min_conf, limit):
    """Fused scores of the candidates (``rrf_fuse``) and the positions that pass the floor,
    best first (ties: lower position); only the first ``limit`` when ``limit`` > 0."""
    n_cand = ranks.shape[1]
    scores = np.zeros(n_cand, np.float64)
    rrf_fuse(ranks, lam, gam, rrf_k, scores)
    n_keep = 0
    for j in range(n_cand):
        if ratio(scores[j], s_max) >= min_conf:
            n_keep += 1
    keep = np.empty(n_keep, np.int64)
    kept = np.empty(n_keep, np.float64)
    c = 0
    for j in range(n_cand):
        if ratio(scores[j], s_max) >= min_conf:
            keep[c] = j
            kept[c] = scores[j]
            c += 1
    if limit > 0:
        return scores, top_k(keep, kept, limit)[0]
    return scores, sorted_desc(keep, kept)[0]


DEEP = (LEXICAL, ASSOCIATIVE, RECURRENCE)  # channels that rank everything they reach
NEED_MAX = 48  # contenders ranked exactly by counting before the lists are deepened


@jit
def fuse_top(limit, present, lists, deep_ids, deep_sc, share, n_res, lam, rrf_k, s_max,
              min_conf, deep_dense, lex_sorted, lex_rank, slot, deep_top):
    """The exact ``limit`` best of the fusion without ranking every reached file.

    ``lists[c]``: complete rankings (ids best first) of the snippet, frequency, recency and
    base-level channels; ``deep_ids[c]``/``deep_sc[c]``: everything the lexical, associative
    and recurrence channels reach (ids ascending, scores); ``share`` dense lexical gamma.
    A threshold algorithm: the deep channels are ranked to a depth R; a file below depth R
    in channel c has rank > R there, so its term is at most lam_c / (rrf_k + R + 1), and a
    file in no list gets at most the sum of those bounds. With the limit-th best lower bound
    above that, and every contender whose upper bound reaches it ranked exactly, the top
    ``limit`` is certain; otherwise R grows fourfold. Same outputs as the full fusion,
    restricted to the contenders left (module doc).

    Optional inputs that save passes over every resource (zero-length arrays: none):
    ``deep_dense[c]`` the deep channel's scores as a dense array (read only; else one is
    built when needed); ``lex_sorted`` and ``lex_rank`` the whole lexical ranking (ids best
    first) and every resource's 1-based rank in it (0: not matched), which make lexical
    ranks exact without counting; ``slot`` int64[n_res] all -1 (left so on return);
    ``deep_top[c]`` the deep channel's best ``first_depth(limit)`` (or all), best first."""
    exact_lex = lex_rank.shape[0] > 0
    if slot.shape[0] < n_res:
        slot = np.full(n_res, -1, np.int64)
    max_n = 0
    for c in DEEP:
        if present[c]:
            max_n = max(max_n, deep_ids[c].shape[0])
    R = first_depth(limit)
    no_i = np.zeros(0, np.int64)  # the lists' unset channels (replaced, never written)
    no_f = np.zeros(0, np.float64)
    while True:
        tops = [no_i for _ in range(N_CHANNELS)]
        depth = np.zeros(N_CHANNELS, np.int64)
        complete = np.ones(N_CHANNELS, np.bool_)
        for c in range(N_CHANNELS):
            if not present[c]:
                continue
            is_deep = c == LEXICAL or c == ASSOCIATIVE or c == RECURRENCE
            if c == LEXICAL and exact_lex:
                ids = lex_sorted[: min(R, lex_sorted.shape[0])]
                tops[c] = ids
                complete[c] = ids.shape[0] == lex_sorted.shape[0]
            elif is_deep:
                if 0 < deep_top[c].shape[0] == min(R, deep_ids[c].shape[0]):
                    ids = deep_top[c]
                else:
                    ids, _ = top_k(deep_ids[c], deep_sc[c], min(R, deep_ids[c].shape[0]))
                tops[c] = ids
                complete[c] = ids.shape[0] == deep_ids[c].shape[0]
            else:
                tops[c] = lists[c]
            depth[c] = tops[c].shape[0]
        total = 0
        for c in range(N_CHANNELS):
            total += depth[c]
        cid = np.empty(total, np.int64)
        rk = np.zeros((N_CHANNELS, total), np.int64)
        n_c = 0
        for c in range(N_CHANNELS):
            t = tops[c]
            for p in range(t.shape[0]):
                i = t[p]
                s = slot[i]
                if s < 0:
                    s = n_c
                    slot[i] = s
                    cid[s] = i
                    n_c += 1
                rk[c, s] = p + 1
        # bounds, summed in channel order like rrf_fuse (rounding is monotone)
        lb = np.zeros(n_c, np.float64)
        ub = np.zeros(n_c, np.float64)
        unknown = np.zeros(n_c, np.bool_)
        dense = [no_f for _ in range(N_CHANNELS)]
        for c in DEEP:
            if present[c] and not complete[c] and not (c == LEXICAL and exact_lex):
                if deep_dense[c].shape[0] >= n_res:
                    dense[c] = deep_dense[c]
                    continue
                d = np.zeros(n_res, np.float64)
                ids = deep_ids[c]
                sc = deep_sc[c]
                for j in range(ids.shape[0]):
                    d[ids[j]] = sc[j]
                dense[c] = d
        # channel by channel, so each contender still sums in channel order; the
        # channel's arrays are read out of the lists once per channel, not per contender
        # (each list read is a reference count up and down: 18% of the replay loop's
        # compiled time went to them when this was contender by contender, perf)
        for c in range(N_CHANNELS):
            if not present[c]:
                continue
            lam_c = lam[c]
            is_lex = c == LEXICAL
            open_c = not complete[c]
            d = dense[c]
            ub_r = rrf_k + (depth[c] + 1)
            lb_r = rrf_k + deep_ids[c].shape[0]
            for s in range(n_c):
                i = cid[s]
                g = share[i] if is_lex else 1.0
                r = rk[c, s]
                if r == 0 and is_lex and exact_lex:
                    r = lex_rank[i]
                    rk[c, s] = r
                    if r == 0:
                        continue
                if r > 0:
                    term = lam_c * g / (rrf_k + r)
                    lb[s] += term
                    ub[s] += term
                elif open_c and d[i] > 0.0:
                    ub[s] += lam_c * g / ub_r
                    lb[s] += lam_c * g / lb_r
                    unknown[s] = True
        theta = -np.inf
        if n_c >= limit:
            theta = -np.partition(-lb, limit - 1)[limit - 1]
        out_ub = 0.0
        open_out = False
        for c in DEEP:
            if present[c] and not complete[c]:
                out_ub += lam[c] * 1.0 / (rrf_k + (depth[c] + 1))
                open_out = True
        certain = not open_out or out_ub < theta or ratio(out_ub, s_max) < min_conf
        if not certain:
            for s in range(n_c):
                slot[cid[s]] = -1
            R *= 4
            continue
        n_live = 0
        n_need = 0
        live = np.empty(n_c, np.int64)
        for s in range(n_c):
            if ub[s] >= theta and ratio(ub[s], s_max) >= min_conf:
                live[n_live] = s
                n_live += 1
                if unknown[s]:
                    n_need += 1
        if n_need > NEED_MAX and R < max_n:
            for s in range(n_c):
                slot[cid[s]] = -1
            R *= 4
            continue
        live = live[:n_live]
        if n_need:
            for c in DEEP:
                if not present[c] or complete[c] or (c == LEXICAL and exact_lex):
                    continue
                d = dense[c]
                q_i = np.empty(n_need, np.int64)
                q_s = np.empty(n_need, np.float64)
                q_s_slot = np.empty(n_need, np.int64)
                nq = 0
                for a in range(n_live):
                    s = live[a]
                    i = cid[s]
                    if rk[c, s] == 0 and d[i] > 0.0:
                        q_i[nq] = i
                        q_s[nq] = d[i]
                        q_s_slot[nq] = s
                        nq += 1
                if nq:
                    r = ranks_of(deep_ids[c], deep_sc[c], q_i[:nq], q_s[:nq])
                    for a in range(nq):
                        rk[c, q_s_slot[a]] = r[a]
        # the live contenders, ascending ids, with their exact scores
        lid = np.sort(cid[live])
        cand = lid
        n_cand = cand.shape[0]
        ranks = np.zeros((N_CHANNELS, n_cand), np.int64)
        gam = np.ones((N_CHANNELS, n_cand), np.float64)
        for j in range(n_cand):
            s = slot[cand[j]]
            for c in range(N_CHANNELS):
                if present[c]:
                    ranks[c, j] = rk[c, s]
            if present[LEXICAL]:
                gam[LEXICAL, j] = share[cand[j]]
        for s in range(n_c):
            slot[cid[s]] = -1
        scores, order = fuse_floor(ranks, lam, gam, rrf_k, s_max, min_conf, limit)
        return cand, scores, order, ranks
