"""Recall's file ranking in one kernel (DESIGN §4.3, §4.4).

``rank_files`` computes the seven channels of one recall over the live state arrays and
fuses them, so a recall is one compiled call instead of some hundred small numpy calls
(about 1.3 ms per recall at 100k events before, most of it call overhead). The policy
(which query terms, which lambda for recency, the floor) is decided by the caller in
``brainbox.recall``; this kernel only computes. ``tests/reference.py`` holds the plain
numpy definition (``rank_files_reference``) it must equal.

Channel definitions (ranks start at 1; every tie goes to the lower resource id). Lexical
(BM25) and base level: ``kernels.channels``. The others:

- associative: spreading activation seeded by the ``n_seeds`` best lexical matches, with
  activation score / best score; seeds themselves and files outside the candidates are not
  ranked. Every reached file is ranked.
- snippet: the given (ids, scores), all ranked.
- frequency, recency: the ``top_k`` best candidates by access count and last access time.
- recurrence: targets of the out-edges of the last ``recurrence_from`` resources of the
  session window, scored by their strongest such edge; all ranked.

Fusion (``kernels.fusion``): ``S = sum_c lam_c gamma_c / (rrf_k + r_c)`` in channel order
(gamma is the matched share for lexical, 1 otherwise); confidence ``S / s_max``; results
with confidence below ``min_conf`` are dropped; order by score, then id.
"""

import numpy as np

from ._jit import jit
from .channels import (
    ASSOCIATIVE,
    BASE_LEVEL,
    FREQUENCY,
    LEXICAL,
    N_CHANNELS,
    RECENCY,
    RECURRENCE,
    SNIPPET,
    base_level_ids,
    bm25_scores,
    positive,
)
from .fusion import fuse_floor, fuse_top
from .spreading import spread, spread_clear
from .topk import sorted_desc, top_k


@jit
def rank_files(tids, n_query, max_terms, files, in_proj, doclen, post, path_ptr, path_terms,
               path_w, adj_off, adj_len, pool_dst, pool_e, ew, n_edges, m,
               is_blocked, n_seeds, hops, spread_k, w_floor, a_floor, n, last, hist, hist_len,
               now, prune_base_level, top_n, window, recurrence_from, snip_ids, snip_scores, use, lam, rrf_k,
               s_max, min_conf, edst, rtop, rtop_n, bl_cache, limit, lists=None):
    """Rank the candidate ``files`` (ascending ids; ``in_proj`` their mask over resources).

    ``use`` bool[7]: channels not ablated (snippet: an index is present); ``lam`` float64[7]
    the weights in channel order. Returns ``(status, cand, scores, order, ranks, present,
    parent)``: status 0 when recall has no grounds (no lexical match, no snippet and no
    file in the window), else 1; ``cand`` ascending candidate ids, ``scores`` their fused scores,
    ``order`` positions into cand best first after the floor, ``ranks`` int64[7, C] (0 =
    not ranked by that channel), ``present`` bool[7] channels that ranked something,
    ``parent`` int64[N] the spreading parents (all -1 without spreading).

    ``edst``, ``rtop``, ``rtop_n``: the engine's edge targets and row lists for spreading
    (``kernels.spreading``; ``rtop_n`` of length 0 for none).
    ``bl_cache``: the base-level cache (``base_level_top``), float64[N, 3] or [0, 3].
    ``limit`` > 0: only the ``limit`` best are wanted; ``order`` then holds exactly the first
    ``limit`` positions of the full ranking, ``cand`` only the contenders the fusion had to
    score (ascending; their scores and ranks exact), found without ranking every file the
    deep channels reach (``fuse_top``). ``limit`` <= 0: every candidate.
    ``lists``: ``channel_lists`` of the same arguments, kept by a caller between calls
    (None: computed here).
    """
    lex_ids, lex_sc, share = bm25_scores(tids, n_query, max_terms, files, in_proj, doclen,
                                         post, path_ptr, path_terms, path_w, in_proj.shape[0])
    return rank_lexed(lex_ids, lex_sc, share, files, in_proj, adj_off, adj_len, pool_dst,
                      pool_e, ew, n_edges, m, is_blocked, n_seeds, hops, spread_k, w_floor,
                      a_floor, n, last, hist, hist_len, now, prune_base_level, top_n, window,
                      recurrence_from, snip_ids, snip_scores, use, lam, rrf_k, s_max, min_conf,
                      edst, rtop, rtop_n, bl_cache, limit, None, lists)


@jit
def channel_lists(files, n, last, hist, hist_len, now, prune_base_level, top_n, bl_cache):
    """The frequency, recency and base-level lists of ``rank_files`` (ids best first), which
    do not depend on the query: a caller keeps them until the state or ``now`` changes
    (``brainbox.recall.Index.lists``) instead of scanning every file on each recall."""
    freq = top_k(files, n[files].astype(np.float64), top_n)[0]
    rec = top_k(files, last[files], top_n)[0]
    bl = base_level_ids(files, hist, hist_len, last, now, top_n, prune_base_level, bl_cache)
    return freq, rec, bl


@jit
def rank_lexed(lex_ids, lex_sc, share, files, in_proj, adj_off, adj_len, pool_dst, pool_e, ew,
               n_edges, m, is_blocked, n_seeds, hops, spread_k, w_floor, a_floor, n, last, hist,
               hist_len, now, prune_base_level, top_n, window, recurrence_from, snip_ids,
               snip_scores, use, lam, rrf_k, s_max, min_conf, edst, rtop, rtop_n, bl_cache,
               limit, tl=None, lists=None):
    """``rank_files`` given the lexical channel's ``bm25_scores`` (read only): a caller that
    knows the postings did not change since it last scored the same query (the replay,
    within a task) passes the same scores again instead of rescanning the postings.

    ``tl`` (:data:`TaskLists`, only with ``limit`` > 0): what a caller that ranks the same
    query over and over (the replay, within a task) keeps up to date instead of letting
    every call scan every file: the whole lexical ranking, the frequency and recency
    lists, a subset of ``files`` sure to hold the base-level top ``top_n``, scratch.
    The results are the same (``TaskLists``). ``lists``: as ``rank_files`` (not with ``tl``)."""
    n_res = in_proj.shape[0]
    present = np.zeros(N_CHANNELS, np.bool_)
    empty_i = np.zeros(0, np.int64)
    empty_f = np.zeros(0, np.float64)
    # one empty array shared by each list's unset channels (they are replaced, never
    # written): two allocations per ranking instead of 35
    ch_ids = [empty_i for _ in range(N_CHANNELS)]
    if limit > 0 and tl is not None:
        parent = empty_i  # (not kept: see TaskLists)
    else:
        parent = np.full(n_res, -1, np.int64)

    if limit > 0 and tl is not None:
        lex_sorted, lex_sorted_sc = tl.lex_sorted, tl.lex_sorted_sc
    elif limit > 0:  # the seeds only
        lex_sorted, lex_sorted_sc = top_k(lex_ids, lex_sc, min(n_seeds, lex_ids.shape[0]))
    else:
        lex_sorted, lex_sorted_sc = sorted_desc(lex_ids, lex_sc)
    deep_ids = [empty_i for _ in range(N_CHANNELS)]
    deep_sc = [empty_f for _ in range(N_CHANNELS)]
    deep_dense = [empty_f for _ in range(N_CHANNELS)]
    deep_top = [empty_i for _ in range(N_CHANNELS)]
    win_files = 0
    for j in range(window.shape[0]):
        if in_proj[window[j]]:
            win_files += 1
    if lex_ids.shape[0] == 0 and win_files == 0 and not (use[SNIPPET] and snip_ids.shape[0]):
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
            ids, sc = positive(act, n_res)
        if ids.shape[0]:
            deep_ids[ASSOCIATIVE] = ids
            deep_sc[ASSOCIATIVE] = sc
            deep_dense[ASSOCIATIVE] = act
            if limit <= 0:
                ch_ids[ASSOCIATIVE] = sorted_desc(ids, sc)[0]
            present[ASSOCIATIVE] = True

    if use[SNIPPET] and snip_ids.shape[0]:
        o = np.argsort(snip_ids)
        ids, _ = sorted_desc(snip_ids[o], snip_scores[o])
        ch_ids[SNIPPET] = ids
        present[SNIPPET] = True

    if use[FREQUENCY]:
        if lists is not None:
            ids = lists[0]
        elif limit > 0 and tl is not None:
            ids = tl.lists[0, : tl.list_n[0]].copy()
        else:
            ids, _ = top_k(files, n[files].astype(np.float64), top_n)
        ch_ids[FREQUENCY] = ids
        present[FREQUENCY] = True
    if use[RECENCY]:
        if lists is not None:
            ids = lists[1]
        elif limit > 0 and tl is not None:
            ids = tl.lists[1, : tl.list_n[1]].copy()
        else:
            ids, _ = top_k(files, last[files], top_n)
        ch_ids[RECENCY] = ids
        present[RECENCY] = True
    if use[BASE_LEVEL]:
        if lists is not None:
            ids = lists[2]
        else:
            bl_files = files
            if limit > 0 and tl is not None and tl.list_n[2] >= 0:
                bl_files = tl.bl_files[: tl.list_n[2]]
            ids = base_level_ids(bl_files, hist, hist_len, last, now, top_n,
                                 prune_base_level, bl_cache)
        ch_ids[BASE_LEVEL] = ids
        present[BASE_LEVEL] = True

    if use[RECURRENCE] and window.shape[0] and limit > 0 and tl is not None and \
            tl.rec_best.shape[0] > 0:
        if tl.rec_ids.shape[0]:
            deep_ids[RECURRENCE] = tl.rec_ids
            deep_sc[RECURRENCE] = tl.rec_sc
            deep_dense[RECURRENCE] = tl.rec_best
            deep_top[RECURRENCE] = tl.rec_top  # (empty: fuse_top ranks it)
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
            ids, sc = positive(best, n_res)
            if ids.shape[0]:
                deep_ids[RECURRENCE] = ids
                deep_sc[RECURRENCE] = sc
                deep_dense[RECURRENCE] = best
                if limit <= 0:
                    ch_ids[RECURRENCE] = sorted_desc(ids, sc)[0]
                present[RECURRENCE] = True

    if limit > 0 and tl is not None:
        cand, scores, order, ranks = fuse_top(limit, present, ch_ids, deep_ids, deep_sc,
                                               tl.share_d, n_res, lam, rrf_k, s_max, min_conf,
                                               deep_dense, tl.lex_sorted, tl.lex_rank, tl.slot,
                                               deep_top)
        spread_clear(tl.work, tl.act, tl.parent)
        return 1, cand, scores, order, ranks, present, parent
    if limit > 0:
        share_d = np.zeros(n_res, np.float64)
        for j in range(lex_ids.shape[0]):
            share_d[lex_ids[j]] = share[j]
        cand, scores, order, ranks = fuse_top(limit, present, ch_ids, deep_ids, deep_sc,
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
    scores, order = fuse_floor(ranks, lam, gam, rrf_k, s_max, min_conf, 0)
    return 1, cand, scores, order, ranks, present, parent
