"""Rank fusion and ACT-R base-level activation (DESIGN §4.3).

Fused score ``S(i) = sum_c lam_c gamma_c(i) / (k + r_c(i))`` over the channels that rank i;
channel ranks are 1-based, 0 meaning "not ranked by this channel".
"""

import math

import numpy as np

from ._jit import jit

SECONDS_PER_HOUR = 3600.0
MIN_AGE_HOURS = 1.0 / 60.0  # an access younger than a minute counts as a minute old


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
def base_level(hist, hist_len, idx, now, out):
    """ACT-R base level ``B = ln sum_j max((now - t_j) / 1 h, 1/60) ** -0.5``.

    hist float64[N, H] ring buffer of access times, hist_len int64[N] accesses recorded (the
    first ``min(hist_len, H)`` slots hold times), idx int64[q] nodes to score, now float
    seconds; all read only. out float64[q]: ``out[j]`` is B of node ``idx[j]``, -inf for a
    node never accessed.
    """
    width = hist.shape[1]
    for j in range(idx.shape[0]):
        i = idx[j]
        cnt = min(hist_len[i], width)
        if cnt <= 0:
            out[j] = -np.inf
            continue
        out[j] = math.log(bl_sum(hist, i, cnt, now))


@jit
def bl_sum(hist, i, cnt, now):
    """``sum_j max((now - t_j) / 1 h, 1/60) ** -0.5`` over the first ``cnt`` slots of row
    ``i`` of ``hist``: the base level before its log (one definition, so every caller gets
    the same bits)."""
    total = 0.0
    for q in range(cnt):
        age = (now - hist[i, q]) / SECONDS_PER_HOUR
        total += 1.0 / math.sqrt(max(age, MIN_AGE_HOURS))
    return total
