"""Recall's file ranking in one kernel (DESIGN §4.3, §4.4).

``rank_files`` computes the seven channels of one recall over the live state arrays and
fuses them, so a recall is one compiled call instead of some hundred small numpy calls
(about 1.3 ms per recall at 100k events before, most of it call overhead). The policy
(which query terms, which lambda for recency, the floor) is decided by the caller in
``brainbox.recall``; this kernel only computes. ``tests/reference.py`` holds the plain
numpy definition (``rank_files_reference``) it must equal.

Channel definitions (ranks start at 1; every tie goes to the lower resource id):

- lexical: BM25 (k1 1.2, b 0.75) of the query term ids over the candidates' context-term
  documents (the postings table: term -> resource -> tf); ``n_docs`` = number of
  candidate files, ``avgdl`` = their mean document length, a term's document frequency
  counted among the candidates. With more than ``max_terms`` terms, only the
  ``max_terms`` with the fewest documents overall are scored (ties: lower term id), and
  the matched share is then measured against ``max_terms``. Every matched file is
  ranked.
- associative: spreading activation seeded by the ``n_seeds`` best lexical matches, with
  activation score / best score; seeds themselves and files outside the candidates are not
  ranked. Every reached file is ranked.
- snippet: the given (ids, scores), all ranked.
- frequency, recency, base level: the ``top_k`` best candidates by access count, last
  access time and ACT-R base level. Base level is computed exactly only for files that can
  reach the top k: ``B_i <= ln(c_i / sqrt(max(age_last, 1 min)))`` (c_i accesses kept) and
  ``B_i >= ln(1 / sqrt(max(age_last, 1 min)))``, so a file whose upper bound is below the
  k-th best lower bound is skipped.
- recurrence: targets of the out-edges of the last ``recurrence_from`` resources of the
  session window, scored by their strongest such edge; all ranked.

Fusion: ``S = sum_c lam_c gamma_c / (rrf_k + r_c)`` in channel order (gamma is the matched
share for lexical, 1 otherwise); confidence ``S / s_max``; results with confidence below
``min_conf`` are dropped; order by score, then id.
"""

import math

import numpy as np

from ._jit import jit
from .fusion import MIN_AGE_HOURS, SECONDS_PER_HOUR, base_level, rrf_fuse
from .spread import spread

LEXICAL, ASSOCIATIVE, SNIPPET, FREQUENCY, RECENCY, BASE_LEVEL, RECURRENCE = range(7)
N_CHANNELS = 7
BM25_K1, BM25_B = 1.2, 0.75
BOUND_SLACK = 1e-9  # relative slack on the base-level bound against float rounding


RADIX_FROM = 1024  # below this a merge sort is faster here


@jit
def order_desc(scores):
    """Stable permutation sorting float64 ``scores`` in descending order (ties keep their
    input order). Large inputs: an LSD radix sort over order-preserving 64-bit keys, 8 passes
    of 8 bits (3.5x faster than numba's merge sort on 5,000 scores here); small: merge sort.
    No NaN."""
    n = scores.shape[0]
    if n < RADIX_FROM:
        return np.argsort(-scores, kind="mergesort")
    bits = np.ascontiguousarray(scores).view(np.uint64)
    key = np.empty(n, np.uint64)
    sign = np.uint64(1) << np.uint64(63)
    ones = ~np.uint64(0)
    for i in range(n):
        b = bits[i]
        # ascending order-preserving key (negatives: all bits flipped; else the sign bit),
        # complemented for descending order
        key[i] = ((b ^ ones) if (b & sign) else (b | sign)) ^ ones
    idx = np.arange(n)
    tmp_i = np.empty(n, np.int64)
    tmp_k = np.empty(n, np.uint64)
    count = np.empty(257, np.int64)
    for p in range(8):
        shift = np.uint64(8 * p)
        count[:] = 0
        for i in range(n):
            count[((key[i] >> shift) & np.uint64(255)) + np.uint64(1)] += 1
        if count[1:].max() == n:  # one digit everywhere: this pass moves nothing
            continue
        for d in range(256):
            count[d + 1] += count[d]
        for i in range(n):
            d = (key[i] >> shift) & np.uint64(255)
            j = count[d]
            count[d] = j + 1
            tmp_i[j] = idx[i]
            tmp_k[j] = key[i]
        idx, tmp_i = tmp_i, idx
        key, tmp_k = tmp_k, key
    return idx


@jit
def _sorted_desc(ids, scores):
    """(ids, scores) by descending score; ``ids`` ascending on input, so a stable sort
    leaves ties in id order."""
    o = order_desc(scores)
    return ids[o], scores[o]


@jit
def top_k(ids, scores, k):
    """The ``k`` best (ids, scores) by descending score, ties by lower id; ``ids`` must be
    ascending. O(n) selection plus a sort of the k kept."""
    n = ids.shape[0]
    if n <= k:
        return _sorted_desc(ids, scores)
    neg = -scores
    kth = np.partition(neg, k - 1)[k - 1]
    out_i = np.empty(k, np.int64)
    out_s = np.empty(k, np.float64)
    c = 0
    for j in range(n):  # strictly better than the k-th value: at most k - 1 of them
        if neg[j] < kth:
            out_i[c] = ids[j]
            out_s[c] = scores[j]
            c += 1
    for j in range(n):  # then ties with it, in id order
        if c == k:
            break
        if neg[j] == kth:
            out_i[c] = ids[j]
            out_s[c] = scores[j]
            c += 1
    return _sorted_desc(out_i, out_s)


@jit
def bm25_scores(tids, n_query, max_terms, files, in_proj, doclen, post, n_res):
    """Lexical channel: (matched ids ascending, scores, matched share); see the module doc.

    tids int64[Q] ascending distinct known term ids; n_query distinct query terms (known or
    not); post the postings :class:`~.table.Table` (a = term id, b = resource, value = tf).
    """
    nq = tids.shape[0]
    n_terms = post.off.shape[0]
    keep = np.ones(nq, np.bool_)
    share_den = max(n_query, 1)
    if max_terms > 0 and nq > max_terms:
        df = np.zeros(nq, np.int64)
        for qi in range(nq):
            t = tids[qi]
            if t < n_terms:
                df[qi] = post.len[t]
        order = np.argsort(df, kind="mergesort")  # ties: lower term id (tids ascending)
        keep[:] = False
        for j in range(max_terms):
            keep[order[j]] = True
        share_den = max_terms

    n_docs = files.shape[0]
    total = 0.0
    for j in range(n_docs):
        total += doclen[files[j]]
    avgdl = total / n_docs if n_docs else 0.0
    if avgdl == 0.0:
        avgdl = 1.0
    score = np.zeros(n_res, np.float64)
    matched = np.zeros(n_res, np.float64)
    for qi in range(nq):
        t = tids[qi]
        if not keep[qi] or t >= n_terms:
            continue
        lo = post.off[t]
        hi = lo + post.len[t]
        cnt = 0
        for q in range(lo, hi):
            if in_proj[post.pool_b[q]]:
                cnt += 1
        if cnt == 0:
            continue
        idf = math.log(1.0 + (n_docs - cnt + 0.5) / (cnt + 0.5))
        for q in range(lo, hi):
            r = post.pool_b[q]
            if not in_proj[r]:
                continue
            tf = post.ev[post.pool_e[q]]
            dl = doclen[r]
            score[r] += idf * tf * (BM25_K1 + 1) / (
                tf + BM25_K1 * (1 - BM25_B + BM25_B * dl / avgdl))
            matched[r] += 1.0
    n_match = 0
    for j in range(n_docs):
        if matched[files[j]] > 0.0:
            n_match += 1
    ids = np.empty(n_match, np.int64)
    sc = np.empty(n_match, np.float64)
    share = np.empty(n_match, np.float64)
    c = 0
    for j in range(n_docs):  # files ascending, so ids ascending
        f = files[j]
        if matched[f] > 0.0:
            ids[c] = f
            sc[c] = score[f]
            share[c] = matched[f] / share_den
            c += 1
    return ids, sc, share


@jit
def base_level_top(files, hist, hist_len, last, now, k, prune):
    """The ``k`` best candidates by ACT-R base level, pruned by its bounds (module doc)
    when ``prune``; the bounds need ``last`` to be each file's latest access time, which
    holds when events were folded in time order (the caller knows)."""
    width = hist.shape[1]
    n = files.shape[0]
    n_acc = 0
    for j in range(n):
        if hist_len[files[j]] > 0:
            n_acc += 1
    if n_acc <= k or not prune:  # score them all
        bl = np.empty(n, np.float64)
        base_level(hist, hist_len, files, now, bl)
        return top_k(files, bl, k)
    acc = np.empty(n_acc, np.int64)
    lasts = np.empty(n_acc, np.float64)
    c = 0
    for j in range(n):
        f = files[j]
        if hist_len[f] > 0:
            acc[c] = f
            lasts[c] = last[f]
            c += 1
    # the k-th most recent access bounds the k-th best base level from below
    kth_last = -np.partition(-lasts, k - 1)[k - 1]
    age_k = max((now - kth_last) / SECONDS_PER_HOUR, MIN_AGE_HOURS)
    n_cand = 0
    cand = np.empty(n_acc, np.int64)
    for j in range(n_acc):
        f = acc[j]
        cnt = min(hist_len[f], width)
        age = max((now - lasts[j]) / SECONDS_PER_HOUR, MIN_AGE_HOURS)
        # cnt / sqrt(age) >= 1 / sqrt(age_k)  <=>  cnt^2 age_k >= age
        if cnt * cnt * age_k * (1.0 + BOUND_SLACK) >= age:
            cand[n_cand] = f
            n_cand += 1
    cand = cand[:n_cand]
    bl = np.empty(n_cand, np.float64)
    base_level(hist, hist_len, cand, now, bl)
    return top_k(cand, bl, k)


@jit
def _all_desc(mask_score, n_res):
    """Every resource with a positive score in a dense array, best first."""
    c = 0
    for i in range(n_res):
        if mask_score[i] > 0.0:
            c += 1
    ids = np.empty(c, np.int64)
    sc = np.empty(c, np.float64)
    c = 0
    for i in range(n_res):
        if mask_score[i] > 0.0:
            ids[c] = i
            sc[c] = mask_score[i]
            c += 1
    return _sorted_desc(ids, sc)


@jit
def rank_files(tids, n_query, max_terms, files, in_proj, doclen, post, adj_off, adj_len, pool_dst, pool_e, ew, n_edges, m,
               is_blocked, n_seeds, hops, spread_k, w_floor, a_floor, n, last, hist, hist_len,
               now, prune_base_level, top_n, window, recurrence_from, snip_ids, snip_scores, use, lam, rrf_k,
               s_max, min_conf):
    """Rank the candidate ``files`` (ascending ids; ``in_proj`` their mask over resources).

    ``use`` bool[7]: channels not ablated (snippet: an index is present); ``lam`` float64[7]
    the weights in channel order. Returns ``(status, cand, scores, order, ranks, present,
    parent)``: status 0 when recall has no grounds (no lexical match and no file in the
    window), else 1; ``cand`` ascending candidate ids, ``scores`` their fused scores,
    ``order`` positions into cand best first after the floor, ``ranks`` int64[7, C] (0 =
    not ranked by that channel), ``present`` bool[7] channels that ranked something,
    ``parent`` int64[N] the spreading parents (all -1 without spreading).
    """
    n_res = in_proj.shape[0]
    present = np.zeros(N_CHANNELS, np.bool_)
    ch_ids = [np.zeros(0, np.int64) for _ in range(N_CHANNELS)]
    parent = np.full(n_res, -1, np.int64)
    empty_i = np.zeros(0, np.int64)

    lex_ids, lex_sc, share = bm25_scores(tids, n_query, max_terms, files, in_proj, doclen,
                                         post, n_res)
    lex_sorted, lex_sorted_sc = _sorted_desc(lex_ids, lex_sc)
    win_files = 0
    for j in range(window.shape[0]):
        if in_proj[window[j]]:
            win_files += 1
    if lex_ids.shape[0] == 0 and win_files == 0:
        return (0, empty_i, np.zeros(0), empty_i, np.zeros((N_CHANNELS, 0), np.int64), present,
                parent)
    if use[LEXICAL] and lex_ids.shape[0]:
        ch_ids[LEXICAL] = lex_sorted
        present[LEXICAL] = True

    if use[ASSOCIATIVE] and lex_ids.shape[0] and n_edges > 0:
        ns = min(n_seeds, lex_sorted.shape[0])
        seeds = lex_sorted[:ns].copy()
        seed_act = lex_sorted_sc[:ns] / lex_sorted_sc[0]
        act = np.zeros(n_res, np.float64)
        spread(adj_off, adj_len, pool_dst, pool_e, ew, seeds, seed_act, m, is_blocked, hops,
               spread_k, w_floor, a_floor, act, parent)
        for j in range(ns):
            act[seeds[j]] = 0.0
        for i in range(n_res):
            if not in_proj[i]:
                act[i] = 0.0
        ids, _ = _all_desc(act, n_res)
        if ids.shape[0]:
            ch_ids[ASSOCIATIVE] = ids
            present[ASSOCIATIVE] = True

    if use[SNIPPET] and snip_ids.shape[0]:
        o = np.argsort(snip_ids)
        ids, _ = _sorted_desc(snip_ids[o], snip_scores[o])
        ch_ids[SNIPPET] = ids
        present[SNIPPET] = True

    if use[FREQUENCY]:
        ids, _ = top_k(files, n[files].astype(np.float64), top_n)
        ch_ids[FREQUENCY] = ids
        present[FREQUENCY] = True
    if use[RECENCY]:
        ids, _ = top_k(files, last[files], top_n)
        ch_ids[RECENCY] = ids
        present[RECENCY] = True
    if use[BASE_LEVEL]:
        ids, _ = base_level_top(files, hist, hist_len, last, now, top_n, prune_base_level)
        ch_ids[BASE_LEVEL] = ids
        present[BASE_LEVEL] = True

    if use[RECURRENCE] and window.shape[0]:
        best = np.zeros(n_res, np.float64)
        hit = False
        for j in range(max(0, window.shape[0] - recurrence_from), window.shape[0]):
            u = window[j]
            lo = adj_off[u]
            for q in range(lo, lo + adj_len[u]):
                v = pool_dst[q]
                if in_proj[v]:
                    w = np.float64(ew[pool_e[q]])
                    best[v] = max(best[v], w)
                    hit = True
        if hit:
            ids, _ = _all_desc(best, n_res)
            if ids.shape[0]:
                ch_ids[RECURRENCE] = ids
                present[RECURRENCE] = True

    # candidates: the union, ascending
    pos = np.full(n_res, -1, np.int64)
    for c in range(N_CHANNELS):
        if present[c]:
            ids = ch_ids[c]
            for j in range(ids.shape[0]):
                pos[ids[j]] = 0
    n_cand = 0
    for i in range(n_res):
        if pos[i] == 0:
            pos[i] = n_cand
            n_cand += 1
    cand = np.empty(n_cand, np.int64)
    for i in range(n_res):
        if pos[i] >= 0:
            cand[pos[i]] = i
    ranks = np.zeros((N_CHANNELS, n_cand), np.int64)
    gam = np.ones((N_CHANNELS, n_cand), np.float64)
    for c in range(N_CHANNELS):
        if present[c]:
            ids = ch_ids[c]
            for j in range(ids.shape[0]):
                ranks[c, pos[ids[j]]] = j + 1
    if present[LEXICAL]:
        for j in range(lex_ids.shape[0]):
            gam[LEXICAL, pos[lex_ids[j]]] = share[j]
    scores = np.zeros(n_cand, np.float64)
    rrf_fuse(ranks, lam, gam, rrf_k, scores)
    n_keep = 0
    for j in range(n_cand):
        if scores[j] / s_max >= min_conf:
            n_keep += 1
    keep = np.empty(n_keep, np.int64)
    kept = np.empty(n_keep, np.float64)
    c = 0
    for j in range(n_cand):
        if scores[j] / s_max >= min_conf:
            keep[c] = j
            kept[c] = scores[j]
            c += 1
    order, _ = _sorted_desc(keep, kept)
    return 1, cand, scores, order, ranks, present, parent
