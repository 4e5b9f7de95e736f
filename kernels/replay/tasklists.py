"""The task lists of the compiled replay (:data:`TaskLists`): what ``kernels.rank.rank_lexed``
keeps from one call to the next when it ranks the same query event after event within a
task, so that a recall does not scan every file.
"""

import math
from collections import namedtuple

import numpy as np

from .._jit import jit
from ..channels import MIN_AGE_HOURS, SECONDS_PER_HOUR, base_level_bounds, reaching
from ..topk import sorted_desc, top_k

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
  keeps from cached rows (``kernels.replay.loop``); zero-length: scan the rows here.
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

    Base-level subset: from the cache's bounds at ``t0`` (``base_level_bounds``), each file's sum
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
        lo, hi, _, n_acc = base_level_bounds(files, hist, hist_len, last, t0, cache)
        if n_acc > top_n:
            d = max(t1 - t0, 0.0) / SECONDS_PER_HOUR
            lo1 = lo.copy()
            for j in range(files.shape[0]):
                f = files[j]
                if lo[j] > 0.0:
                    x = max((t0 - last[f]) / SECONDS_PER_HOUR, MIN_AGE_HOURS)
                    lo1[j] = lo[j] * math.sqrt(x / (x + d))
            keep = files[reaching(lo1, hi, top_n)]
            bl_files[: keep.shape[0]] = keep
            list_n[2] = keep.shape[0]
    slot = np.full(n_res, -1, np.int64)
    return lists, list_n, bl_files, slot, np.zeros(n_res, np.int64), np.zeros(n_res)


RESORT_MOVES = 4  # task_lex: insertion moves allowed per item before sorting afresh


@jit
def _resorted(lex_ids, lex_sc, old_sorted, lex_rank):
    """``sorted_desc(lex_ids, lex_sc)`` from the previous ranking ``old_sorted`` (with
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
            return sorted_desc(lex_ids, lex_sc)
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
