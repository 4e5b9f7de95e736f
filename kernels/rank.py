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
from collections import namedtuple

import numpy as np

from ._jit import jit
from .fusion import MIN_AGE_HOURS, SECONDS_PER_HOUR, base_level, bl_sum, rrf_fuse
from .spread import spread, spread_clear

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
    ascending. One pass with a threshold: items go to a buffer of 4k only when they beat
    the k-th best score kept so far, and a full buffer is cut back to its k best (a later
    item equal to that score loses the tie to the k kept); then the k are sorted."""
    n = ids.shape[0]
    if n <= k:
        return _sorted_desc(ids, scores)
    if k <= 0:
        return ids[:0].copy(), scores[:0].copy()
    cap = 4 * k
    buf_i = np.empty(cap, np.int64)
    buf_s = np.empty(cap, np.float64)
    for j in range(k):
        buf_i[j] = ids[j]
        buf_s[j] = scores[j]
    c = k
    thr = buf_s[:k].min()  # the k-th best so far: only strictly better items can enter
    for j in range(k, n):
        x = scores[j]
        if x > thr:
            if c == cap:
                c, thr = _cut(buf_i, buf_s, c, k)
                if not x > thr:
                    continue
            buf_i[c] = ids[j]
            buf_s[c] = x
            c += 1
    c, thr = _cut(buf_i, buf_s, c, k)
    return _sorted_desc(buf_i[:c].copy(), buf_s[:c].copy())


@jit
def top_k_above(ids, scores, k, guess):
    """``top_k(ids, scores, k)``, first keeping only the scores above ``guess`` (a caller's
    estimate of the k-th best, e.g. the previous one): when at least k are above it, the k
    best are among them (each of the k best is at least the k-th best, above the guess);
    otherwise it ranks them all. Exact for any guess; fast when it is close."""
    n = ids.shape[0]
    c = 0
    for j in range(n):
        c += scores[j] > guess
    if c < k or c == n:
        return top_k(ids, scores, k)
    sel_i = np.empty(c, np.int64)
    sel_s = np.empty(c, np.float64)
    c = 0
    for j in range(n):
        if scores[j] > guess:
            sel_i[c] = ids[j]
            sel_s[c] = scores[j]
            c += 1
    return top_k(sel_i, sel_s, k)


@jit
def first_depth(limit):
    """The depth to which ``_fuse_top`` first ranks the deep channels."""
    return max(64, 4 * limit)


@jit
def _cut(buf_i, buf_s, c, k):
    """Keep the k best of the buffer's first c (in buffer order, which is id order among
    equal scores); return (k, the k-th best score)."""
    kth = -np.partition(-buf_s[:c], k - 1)[k - 1]
    n_gt = 0
    for j in range(c):  # strictly better than the k-th: at most k - 1
        if buf_s[j] > kth:
            n_gt += 1
    tie_i = np.empty(k - n_gt, np.int64)  # then ties with it, first ones first
    t = 0
    for j in range(c):
        if t == k - n_gt:
            break
        if buf_s[j] == kth:
            tie_i[t] = buf_i[j]
            t += 1
    w = 0
    for j in range(c):
        if buf_s[j] > kth:
            buf_i[w] = buf_i[j]
            buf_s[w] = buf_s[j]
            w += 1
    for j in range(t):
        buf_i[n_gt + j] = tie_i[j]
        buf_s[n_gt + j] = kth
    _merge_by_id(buf_i, buf_s, n_gt, n_gt + t)  # keep the buffer in id order
    return n_gt + t, kth


@jit
def _merge_by_id(buf_i, buf_s, mid, end):
    """Merge the id-ascending runs [0, mid) and [mid, end) into one id-ascending run."""
    a_i = buf_i[:mid].copy()
    a_s = buf_s[:mid].copy()
    b_i = buf_i[mid:end].copy()
    b_s = buf_s[mid:end].copy()
    p = q = w = 0
    while p < mid and q < end - mid:
        if a_i[p] < b_i[q]:
            buf_i[w] = a_i[p]
            buf_s[w] = a_s[p]
            p += 1
        else:
            buf_i[w] = b_i[q]
            buf_s[w] = b_s[q]
            q += 1
        w += 1
    while p < mid:
        buf_i[w] = a_i[p]
        buf_s[w] = a_s[p]
        p += 1
        w += 1
    while q < end - mid:
        buf_i[w] = b_i[q]
        buf_s[w] = b_s[q]
        q += 1
        w += 1


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
def base_level_top(files, hist, hist_len, last, now, k, prune, cache):
    """The ``k`` best candidates by ACT-R base level, pruned by bounds when ``prune``; the
    bounds need ``last`` to be each file's latest access time, which holds when events were
    folded in time order (the caller knows).

    ``cache`` float64[N, 3] (or [0, 3]: none) remembers per file the sum
    ``S = sum_j max(age_j, 1 min) ** -0.5`` (``B = ln S``), the time it was computed at and
    the file's access count then; it is read and updated here and only ever narrows the
    work (zeros: nothing cached). While a file gains no access its ``S`` only falls, and
    each term falls at most by ``sqrt(x / (x + d))`` after ``d`` hours, ``x`` the age of the
    newest access then (at least a minute); so ``S(now)`` lies in
    ``[S(T) sqrt(x / (x + d)), S(T)]`` and only files whose upper bound reaches the k-th best
    lower bound are computed. Without a cache the bound is ``ln(c / sqrt(age_last))``
    against ``ln(1 / sqrt(age_last))`` (``c`` the accesses kept)."""
    if prune and cache.shape[0] > 0:  # the order from the bounds, then exact values
        ids = base_level_ids(files, hist, hist_len, last, now, k, prune, cache)
        bl = np.empty(ids.shape[0], np.float64)
        base_level(hist, hist_len, ids, now, bl)
        return ids, bl
    return _base_level_top_plain(files, hist, hist_len, last, now, k, prune)


@jit
def _base_level_top_plain(files, hist, hist_len, last, now, k, prune):
    """``base_level_top`` without a cache."""
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
def base_level_ids(files, hist, hist_len, last, now, k, prune, cache):
    """The ids of ``base_level_top`` (same order), computing exact sums only where the
    order needs them: with the cache's bounds, candidates sorted by upper bound fall into
    runs of overlapping intervals; a run of one is placed by its bounds, a longer run is
    computed exactly and sorted. Recall uses only the order of this channel."""
    if not (prune and cache.shape[0] > 0):
        return _base_level_top_plain(files, hist, hist_len, last, now, k, prune)[0]
    width = hist.shape[1]
    lo, hi, exact, n_acc = _bl_bounds(files, hist, hist_len, last, now, cache)
    if n_acc <= k:  # every file with an access is in, then the rest by id
        return _base_level_top_plain(files, hist, hist_len, last, now, k, False)[0]
    cj = _reaching(lo, hi, k)
    n_c = cj.shape[0]
    by_hi = cj[order_desc(hi[cj])]  # ties keep file order (ascending ids)
    out = np.empty(k, np.int64)
    n_out = 0
    i = 0
    while i < n_c and n_out < k:
        a = i
        min_lo = lo[by_hi[i]]
        i += 1
        while i < n_c and hi[by_hi[i]] * (1.0 + BOUND_SLACK) >= min_lo:
            min_lo = min(min_lo, lo[by_hi[i]])
            i += 1
        if i - a == 1:
            out[n_out] = files[by_hi[a]]
            n_out += 1
            continue
        run = by_hi[a:i].copy()
        run.sort()  # file order: ascending ids
        val = np.empty(run.shape[0], np.float64)
        for r in range(run.shape[0]):
            j = run[r]
            if not exact[j]:
                f = files[j]
                sv = bl_sum(hist, f, min(hist_len[f], width), now)
                cache[f, 0] = sv
                cache[f, 1] = now
                lo[j] = sv
                hi[j] = sv
                exact[j] = True
            val[r] = lo[j]
        o = order_desc(val)
        for r in range(run.shape[0]):
            if n_out == k:
                break
            out[n_out] = files[run[o[r]]]
            n_out += 1
    return out[:n_out]


@jit
def _reaching(lo, hi, k):
    """Positions (ascending) whose upper bound ``hi`` reaches the k-th best lower bound
    ``lo`` (within ``BOUND_SLACK``): the only ones that can be among the k best."""
    kth = -np.partition(-lo, k - 1)[k - 1]
    out = np.empty(lo.shape[0], np.int64)
    c = 0
    for j in range(lo.shape[0]):
        if hi[j] > 0.0 and hi[j] * (1.0 + BOUND_SLACK) >= kth:
            out[c] = j
            c += 1
    return out[:c]


@jit
def _bl_bounds(files, hist, hist_len, last, now, cache):
    """Per file: (lower, upper) bound of the base-level sum at ``now`` from the cache (both
    exact for files computed now; -1 for files never accessed), exactness, files accessed."""
    width = hist.shape[1]
    n = files.shape[0]
    lo = np.empty(n, np.float64)
    hi = np.empty(n, np.float64)
    exact = np.zeros(n, np.bool_)
    n_acc = 0
    for j in range(n):
        f = files[j]
        h = hist_len[f]
        if h <= 0:
            lo[j] = -1.0
            hi[j] = -1.0
            continue
        n_acc += 1
        t = cache[f, 1]
        if cache[f, 2] == h and t <= now and t >= last[f]:
            s = cache[f, 0]
            hi[j] = s
            if t == now:
                lo[j] = s
                exact[j] = True
            else:
                x = max((t - last[f]) / SECONDS_PER_HOUR, MIN_AGE_HOURS)
                lo[j] = s * math.sqrt(x / (x + (now - t) / SECONDS_PER_HOUR))
        else:
            s = bl_sum(hist, f, min(h, width), now)
            cache[f, 0] = s
            cache[f, 1] = now
            cache[f, 2] = h
            lo[j] = s
            hi[j] = s
            exact[j] = True
    return lo, hi, exact, n_acc


@jit
def _positive(dense, n_res):
    """(ids ascending, scores) of every resource with a positive score in a dense array."""
    c = 0
    for i in range(n_res):
        if dense[i] > 0.0:
            c += 1
    ids = np.empty(c, np.int64)
    sc = np.empty(c, np.float64)
    c = 0
    for i in range(n_res):
        if dense[i] > 0.0:
            ids[c] = i
            sc[c] = dense[i]
            c += 1
    return ids, sc


@jit
def _beats(s_a, i_a, s_b, i_b):
    """Does (score s_a, id i_a) rank before (s_b, i_b)? Higher score, then lower id."""
    return s_a > s_b or (s_a == s_b and i_a < i_b)


DIRECT_COUNT = 8  # _ranks_of counts item by item up to this many items


@jit
def _ranks_of(ids, sc, q_ids, q_sc):
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
    for j in range(ids.shape[0]):
        s_j = sc[j]
        i_j = ids[j]
        lo, hi = 0, m  # first queried item that (s_j, i_j) beats
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
def _fuse_floor(ranks, lam, gam, rrf_k, s_max, min_conf, limit):
    """Fused scores of the candidates (``rrf_fuse``) and the positions that pass the floor,
    best first (ties: lower position); only the first ``limit`` when ``limit`` > 0."""
    n_cand = ranks.shape[1]
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
    if limit > 0:
        return scores, top_k(keep, kept, limit)[0]
    return scores, _sorted_desc(keep, kept)[0]


DEEP = (LEXICAL, ASSOCIATIVE, RECURRENCE)  # channels that rank everything they reach
NEED_MAX = 48  # contenders ranked exactly by counting before the lists are deepened


@jit
def _fuse_top(limit, present, lists, deep_ids, deep_sc, share, n_res, lam, rrf_k, s_max,
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
    while True:
        tops = [np.zeros(0, np.int64) for _ in range(N_CHANNELS)]
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
        dense = [np.zeros(0, np.float64) for _ in range(N_CHANNELS)]
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
        for s in range(n_c):
            i = cid[s]
            for c in range(N_CHANNELS):
                if not present[c]:
                    continue
                g = share[i] if c == LEXICAL else 1.0
                r = rk[c, s]
                if r == 0 and c == LEXICAL and exact_lex:
                    r = lex_rank[i]
                    rk[c, s] = r
                    if r == 0:
                        continue
                if r > 0:
                    term = lam[c] * g / (rrf_k + r)
                    lb[s] += term
                    ub[s] += term
                elif not complete[c] and dense[c][i] > 0.0:
                    ub[s] += lam[c] * g / (rrf_k + (depth[c] + 1))
                    lb[s] += lam[c] * g / (rrf_k + deep_ids[c].shape[0])
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
        certain = not open_out or out_ub < theta or out_ub / s_max < min_conf
        if not certain:
            for s in range(n_c):
                slot[cid[s]] = -1
            R *= 4
            continue
        n_live = 0
        n_need = 0
        live = np.empty(n_c, np.int64)
        for s in range(n_c):
            if ub[s] >= theta and ub[s] / s_max >= min_conf:
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
                    r = _ranks_of(deep_ids[c], deep_sc[c], q_i[:nq], q_s[:nq])
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
        scores, order = _fuse_floor(ranks, lam, gam, rrf_k, s_max, min_conf, limit)
        return cand, scores, order, ranks


@jit
def rank_files(tids, n_query, max_terms, files, in_proj, doclen, post, adj_off, adj_len, pool_dst, pool_e, ew, n_edges, m,
               is_blocked, n_seeds, hops, spread_k, w_floor, a_floor, n, last, hist, hist_len,
               now, prune_base_level, top_n, window, recurrence_from, snip_ids, snip_scores, use, lam, rrf_k,
               s_max, min_conf, edst, rtop, rtop_n, bl_cache, limit):
    """Rank the candidate ``files`` (ascending ids; ``in_proj`` their mask over resources).

    ``use`` bool[7]: channels not ablated (snippet: an index is present); ``lam`` float64[7]
    the weights in channel order. Returns ``(status, cand, scores, order, ranks, present,
    parent)``: status 0 when recall has no grounds (no lexical match and no file in the
    window), else 1; ``cand`` ascending candidate ids, ``scores`` their fused scores,
    ``order`` positions into cand best first after the floor, ``ranks`` int64[7, C] (0 =
    not ranked by that channel), ``present`` bool[7] channels that ranked something,
    ``parent`` int64[N] the spreading parents (all -1 without spreading).

    ``edst``, ``rtop``, ``rtop_n``: the engine's edge targets and row lists for spreading
    (``kernels.spread``; ``rtop_n`` of length 0 for none).
    ``bl_cache``: the base-level cache (``base_level_top``), float64[N, 3] or [0, 3].
    ``limit`` > 0: only the ``limit`` best are wanted; ``order`` then holds exactly the first
    ``limit`` positions of the full ranking, ``cand`` only the contenders the fusion had to
    score (ascending; their scores and ranks exact), found without ranking every file the
    deep channels reach (``_fuse_top``). ``limit`` <= 0: every candidate.
    """
    lex_ids, lex_sc, share = bm25_scores(tids, n_query, max_terms, files, in_proj, doclen,
                                         post, in_proj.shape[0])
    return rank_lexed(lex_ids, lex_sc, share, files, in_proj, adj_off, adj_len, pool_dst,
                      pool_e, ew, n_edges, m, is_blocked, n_seeds, hops, spread_k, w_floor,
                      a_floor, n, last, hist, hist_len, now, prune_base_level, top_n, window,
                      recurrence_from, snip_ids, snip_scores, use, lam, rrf_k, s_max, min_conf,
                      edst, rtop, rtop_n, bl_cache, limit)


@jit
def rank_lexed(lex_ids, lex_sc, share, files, in_proj, adj_off, adj_len, pool_dst, pool_e, ew,
               n_edges, m, is_blocked, n_seeds, hops, spread_k, w_floor, a_floor, n, last, hist,
               hist_len, now, prune_base_level, top_n, window, recurrence_from, snip_ids,
               snip_scores, use, lam, rrf_k, s_max, min_conf, edst, rtop, rtop_n, bl_cache,
               limit, tl=None):
    """``rank_files`` given the lexical channel's ``bm25_scores`` (read only): a caller that
    knows the postings did not change since it last scored the same query (the replay,
    within a task) passes the same scores again instead of rescanning the postings.

    ``tl`` (:data:`TaskLists`, only with ``limit`` > 0): what a caller that ranks the same
    query over and over (the replay, within a task) keeps up to date instead of letting
    every call scan every file: the whole lexical ranking, the frequency and recency
    lists, a subset of ``files`` sure to hold the base-level top ``top_n``, scratch.
    The results are the same (``TaskLists``)."""
    n_res = in_proj.shape[0]
    present = np.zeros(N_CHANNELS, np.bool_)
    ch_ids = [np.zeros(0, np.int64) for _ in range(N_CHANNELS)]
    empty_i = np.zeros(0, np.int64)
    if limit > 0 and tl is not None:
        parent = empty_i  # (not kept: see TaskLists)
    else:
        parent = np.full(n_res, -1, np.int64)

    if limit > 0 and tl is not None:
        lex_sorted, lex_sorted_sc = tl.lex_sorted, tl.lex_sorted_sc
    elif limit > 0:  # the seeds only
        lex_sorted, lex_sorted_sc = top_k(lex_ids, lex_sc, min(n_seeds, lex_ids.shape[0]))
    else:
        lex_sorted, lex_sorted_sc = _sorted_desc(lex_ids, lex_sc)
    deep_ids = [np.zeros(0, np.int64) for _ in range(N_CHANNELS)]
    deep_sc = [np.zeros(0, np.float64) for _ in range(N_CHANNELS)]
    deep_dense = [np.zeros(0, np.float64) for _ in range(N_CHANNELS)]
    deep_top = [np.zeros(0, np.int64) for _ in range(N_CHANNELS)]
    win_files = 0
    for j in range(window.shape[0]):
        if in_proj[window[j]]:
            win_files += 1
    if lex_ids.shape[0] == 0 and win_files == 0:
        return (0, empty_i, np.zeros(0), empty_i, np.zeros((N_CHANNELS, 0), np.int64), present,
                parent)
    if use[LEXICAL] and lex_ids.shape[0]:
        ch_ids[LEXICAL] = lex_sorted
        deep_ids[LEXICAL] = lex_ids
        deep_sc[LEXICAL] = lex_sc
        present[LEXICAL] = True

    if use[ASSOCIATIVE] and lex_ids.shape[0] and n_edges > 0:
        ns = min(n_seeds, lex_sorted.shape[0])
        seeds = lex_sorted[:ns].copy()
        seed_act = lex_sorted_sc[:ns] / lex_sorted_sc[0]
        if limit > 0 and tl is not None:  # over the reached nodes only (SpreadWork)
            act = tl.act
            spread(adj_off, adj_len, pool_dst, pool_e, ew, seeds, seed_act, m, is_blocked,
                   hops, spread_k, w_floor, a_floor, act, tl.parent, edst, rtop, rtop_n,
                   tl.work)
            for j in range(ns):
                act[seeds[j]] = 0.0
            reached = np.sort(tl.work.reached[: tl.work.n_reached[0]])
            c = 0
            for j in range(reached.shape[0]):
                r = reached[j]
                if in_proj[r] and act[r] > 0.0:
                    reached[c] = r
                    c += 1
                else:
                    act[r] = 0.0
            ids = reached[:c]
            sc = act[ids]
        else:
            act = np.zeros(n_res, np.float64)
            spread(adj_off, adj_len, pool_dst, pool_e, ew, seeds, seed_act, m, is_blocked,
                   hops, spread_k, w_floor, a_floor, act, parent, edst, rtop, rtop_n)
            for j in range(ns):
                act[seeds[j]] = 0.0
            for i in range(n_res):
                if not in_proj[i]:
                    act[i] = 0.0
            ids, sc = _positive(act, n_res)
        if ids.shape[0]:
            deep_ids[ASSOCIATIVE] = ids
            deep_sc[ASSOCIATIVE] = sc
            deep_dense[ASSOCIATIVE] = act
            if limit <= 0:
                ch_ids[ASSOCIATIVE] = _sorted_desc(ids, sc)[0]
            present[ASSOCIATIVE] = True

    if use[SNIPPET] and snip_ids.shape[0]:
        o = np.argsort(snip_ids)
        ids, _ = _sorted_desc(snip_ids[o], snip_scores[o])
        ch_ids[SNIPPET] = ids
        present[SNIPPET] = True

    if use[FREQUENCY]:
        if limit > 0 and tl is not None:
            ids = tl.lists[0, : tl.list_n[0]].copy()
        else:
            ids, _ = top_k(files, n[files].astype(np.float64), top_n)
        ch_ids[FREQUENCY] = ids
        present[FREQUENCY] = True
    if use[RECENCY]:
        if limit > 0 and tl is not None:
            ids = tl.lists[1, : tl.list_n[1]].copy()
        else:
            ids, _ = top_k(files, last[files], top_n)
        ch_ids[RECENCY] = ids
        present[RECENCY] = True
    if use[BASE_LEVEL]:
        bl_files = files
        if limit > 0 and tl is not None and tl.list_n[2] >= 0:
            bl_files = tl.bl_files[: tl.list_n[2]]
        ids = base_level_ids(bl_files, hist, hist_len, last, now, top_n, prune_base_level,
                             bl_cache)
        ch_ids[BASE_LEVEL] = ids
        present[BASE_LEVEL] = True

    if use[RECURRENCE] and window.shape[0] and limit > 0 and tl is not None and \
            tl.rec_best.shape[0] > 0:
        if tl.rec_ids.shape[0]:
            deep_ids[RECURRENCE] = tl.rec_ids
            deep_sc[RECURRENCE] = tl.rec_sc
            deep_dense[RECURRENCE] = tl.rec_best
            deep_top[RECURRENCE] = tl.rec_top  # (empty: _fuse_top ranks it)
            present[RECURRENCE] = True
    elif use[RECURRENCE] and window.shape[0]:
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
            ids, sc = _positive(best, n_res)
            if ids.shape[0]:
                deep_ids[RECURRENCE] = ids
                deep_sc[RECURRENCE] = sc
                deep_dense[RECURRENCE] = best
                if limit <= 0:
                    ch_ids[RECURRENCE] = _sorted_desc(ids, sc)[0]
                present[RECURRENCE] = True

    if limit > 0 and tl is not None:
        cand, scores, order, ranks = _fuse_top(limit, present, ch_ids, deep_ids, deep_sc,
                                               tl.share_d, n_res, lam, rrf_k, s_max, min_conf,
                                               deep_dense, tl.lex_sorted, tl.lex_rank, tl.slot,
                                               deep_top)
        spread_clear(tl.work, tl.act, tl.parent)
        return 1, cand, scores, order, ranks, present, parent
    if limit > 0:
        share_d = np.zeros(n_res, np.float64)
        for j in range(lex_ids.shape[0]):
            share_d[lex_ids[j]] = share[j]
        cand, scores, order, ranks = _fuse_top(limit, present, ch_ids, deep_ids, deep_sc,
                                               share_d, n_res, lam, rrf_k, s_max, min_conf,
                                               deep_dense, empty_i, empty_i, empty_i, deep_top)
        return 1, cand, scores, order, ranks, present, parent

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
    scores, order = _fuse_floor(ranks, lam, gam, rrf_k, s_max, min_conf, 0)
    return 1, cand, scores, order, ranks, present, parent


TaskLists = namedtuple("TaskLists", (
    "lex_sorted lex_sorted_sc lex_rank share_d lists list_n bl_files slot rec_best rec_ids "
    "rec_sc rec_top work act parent"))
TaskLists.__doc__ = """What ``rank_lexed`` needs from a caller that ranks one query many times while
the state changes a little between calls (the replay, event by event within a task).

- ``lex_sorted``, ``lex_sorted_sc``: every lexical match, best first (``task_lex``);
  ``lex_rank`` int64[N] each resource's 1-based rank there (0: no match) and ``share_d``
  float64[N] its matched share; so the lexical ranks of the fusion's contenders are exact
  without counting, and the seeds need no selection.
- ``lists`` int64[2, top_n]: the frequency and recency channels' lists, ``list_n[0:2]``
  their lengths; ``bl_files``: ascending files, the first ``list_n[2]`` of which are sure
  to hold the base-level top ``top_n`` until the horizon given to ``task_lists``
  (``list_n[2]`` -1: use every file). ``task_touch`` keeps all three exact after each event.
- ``slot`` int64[N] all -1: the fusion's scratch.
- ``rec_best`` float64[N]: the recurrence channel's scores (each project file's strongest
  edge from the window's last ``recurrence_from`` resources, 0 if none), which the caller
  keeps from cached rows (``kernels.replay``); zero-length: scan the rows here.
  ``rec_ids``/``rec_sc``: its positive entries, ids ascending; ``rec_top`` its best
  ``first_depth(limit)`` ids, best first, if the caller ranked them already (zero-length:
  the fusion ranks them).
- ``work`` (:data:`~.spread.SpreadWork`), ``act`` float64[N] all 0, ``parent`` int64[N] all
  -1: spreading's scratch, so that the associative channel costs what it reaches, not a
  pass over every resource (left clean on return). Parents are not returned with
  ``tl`` (an empty array): the replay does not read them.
"""


@jit
def task_lists(files, n, last, hist, hist_len, t0, t1, top_n, prune, cache, n_res, cap):
    """``(lists, list_n, bl_files, slot, lex_rank, share_d)`` of :data:`TaskLists` for the
    candidate ``files`` (ascending) at time ``t0``, with the base-level subset valid for
    any ``now`` in ``[t0, t1]`` while only touched files (``task_touch``) gain accesses.

    Base-level subset: from the cache's bounds at ``t0`` (``_bl_bounds``), each file's sum
    at ``t1`` is at least ``lo(t0) sqrt(x / (x + d))`` (``x`` its newest access's age at
    ``t0``, at least a minute; ``d = t1 - t0`` in hours) and at any time in between at
    most ``hi(t0)``; files whose upper bound is below the ``top_n``-th best such lower
    bound never reach the top (touched files only gain and are added). ``cap``: room for
    files added later."""
    lists = np.full((2, max(top_n, 1)), -1, np.int64)
    list_n = np.full(3, -1, np.int64)
    ids, _ = top_k(files, n[files].astype(np.float64), top_n)
    lists[0, : ids.shape[0]] = ids
    list_n[0] = ids.shape[0]
    ids, _ = top_k(files, last[files], top_n)
    lists[1, : ids.shape[0]] = ids
    list_n[1] = ids.shape[0]
    bl_files = np.empty(files.shape[0] + cap, np.int64)
    if prune and cache.shape[0] > 0 and top_n > 0:
        lo, hi, _, n_acc = _bl_bounds(files, hist, hist_len, last, t0, cache)
        if n_acc > top_n:
            d = max(t1 - t0, 0.0) / SECONDS_PER_HOUR
            lo1 = lo.copy()
            for j in range(files.shape[0]):
                f = files[j]
                if lo[j] > 0.0:
                    x = max((t0 - last[f]) / SECONDS_PER_HOUR, MIN_AGE_HOURS)
                    lo1[j] = lo[j] * math.sqrt(x / (x + d))
            keep = files[_reaching(lo1, hi, top_n)]
            bl_files[: keep.shape[0]] = keep
            list_n[2] = keep.shape[0]
    slot = np.full(n_res, -1, np.int64)
    return lists, list_n, bl_files, slot, np.zeros(n_res, np.int64), np.zeros(n_res)


RESORT_MOVES = 4  # task_lex: insertion moves allowed per item before sorting afresh


@jit
def _resorted(lex_ids, lex_sc, old_sorted, lex_rank):
    """``_sorted_desc(lex_ids, lex_sc)`` from the previous ranking ``old_sorted`` (with
    ``lex_rank`` its ranks): the items in their old order, new ones after in id order, then
    an insertion sort by (score desc, id asc), the same total order as the stable sort.
    Scores of one query move little from one recomputation to the next (a few documents
    change, and the mean length a little), so this is about linear; past
    ``RESORT_MOVES`` moves per item it sorts afresh instead."""
    n = lex_ids.shape[0]
    m = old_sorted.shape[0]
    at_id = np.full(m, -1, np.int64)
    at_sc = np.empty(m, np.float64)
    srt = np.empty(n, np.int64)
    srt_sc = np.empty(n, np.float64)
    n_new = 0
    for j in range(n):
        i = lex_ids[j]
        r = lex_rank[i] - 1
        if 0 <= r < m and old_sorted[r] == i:
            at_id[r] = i
            at_sc[r] = lex_sc[j]
        else:
            n_new += 1
    c = 0
    for p in range(m):
        if at_id[p] >= 0:
            srt[c] = at_id[p]
            srt_sc[c] = at_sc[p]
            c += 1
    if n_new:
        for j in range(n):
            i = lex_ids[j]
            r = lex_rank[i] - 1
            if not (0 <= r < m and old_sorted[r] == i):
                srt[c] = i
                srt_sc[c] = lex_sc[j]
                c += 1
    budget = RESORT_MOVES * n
    moves = 0
    for q in range(1, n):
        x = srt[q]
        s = srt_sc[q]
        p = q
        while p > 0 and (srt_sc[p - 1] < s or (srt_sc[p - 1] == s and srt[p - 1] > x)):
            srt[p] = srt[p - 1]
            srt_sc[p] = srt_sc[p - 1]
            p -= 1
        srt[p] = x
        srt_sc[p] = s
        moves += q - p
        if moves > budget:
            return _sorted_desc(lex_ids, lex_sc)
    return srt, srt_sc


@jit
def task_lex(lex_ids, lex_sc, share, old_sorted, lex_rank, share_d):
    """The lexical part of :data:`TaskLists` for new ``bm25_scores``: the whole ranking,
    resorted from the previous one (``old_sorted``, ``_resorted``); clears the previous
    ranking's entries from the dense arrays and fills them anew; returns
    ``(lex_sorted, lex_sorted_sc)``."""
    srt, srt_sc = _resorted(lex_ids, lex_sc, old_sorted, lex_rank)
    for j in range(old_sorted.shape[0]):
        lex_rank[old_sorted[j]] = 0
        share_d[old_sorted[j]] = 0.0
    for p in range(srt.shape[0]):
        lex_rank[srt[p]] = p + 1
    for j in range(lex_ids.shape[0]):
        share_d[lex_ids[j]] = share[j]
    return srt, srt_sc


@jit
def _list_drop(lists, list_n, li, r):
    """Take ``r`` out of ``lists[li]`` if it is there."""
    cnt = list_n[li]
    row = lists[li]
    for j in range(cnt):
        if row[j] == r:
            for q in range(j, cnt - 1):
                row[q] = row[q + 1]
            list_n[li] = cnt - 1
            return


@jit
def _list_put(lists, list_n, li, keys, r, kmax):
    """Put ``r`` where it goes in ``lists[li]`` (sorted by ``keys`` desc, id asc, at most
    ``kmax``; the rest of the list must be in order), if it makes the cut."""
    _list_drop(lists, list_n, li, r)
    cnt = list_n[li]
    row = lists[li]
    kr = keys[r]
    p = cnt
    while p > 0 and (keys[row[p - 1]] < kr or (keys[row[p - 1]] == kr and row[p - 1] > r)):
        p -= 1
    if p < kmax:
        end = min(cnt, kmax - 1)
        for q in range(end, p, -1):
            row[q] = row[q - 1]
        row[p] = r
        list_n[li] = end + 1


@jit
def task_touch(lists, list_n, bl_files, n, last, rs, top_n):
    """Candidate files ``rs`` were touched (their counts and last accesses grew; every other
    file's stayed) or joined the candidates: update the frequency and recency lists (all
    of ``rs`` out first, so the rest is in order, then each back where it goes) and add
    them to the base-level subset (kept ascending)."""
    if top_n <= 0:
        return
    for li in range(2):
        for r in rs:
            _list_drop(lists, list_n, li, r)
    for r in rs:
        _list_put(lists, list_n, 0, n, r, top_n)
        _list_put(lists, list_n, 1, last, r, top_n)
    c = list_n[2]
    if c < 0:
        return
    for r in rs:
        p = np.searchsorted(bl_files[:c], r)
        if p < c and bl_files[p] == r:
            continue
        for q in range(c, p, -1):
            bl_files[q] = bl_files[q - 1]
        bl_files[p] = r
        c += 1
    list_n[2] = c
