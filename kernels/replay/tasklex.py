"""The lexical channel of one task's query, kept as dense columns (the compiled replay).

Within a task the replay ranks the same query (the task's description) event after
event, and the lexical channel's scores must be recomputed whenever the postings change:
each context-term addition moves a document's length and so the mean length every score
depends on. ``channels.bm25_scores`` walks every query term's postings for that, a
scattered read per posting (entry, term frequency, document length, in-project mask).
When the query's terms are common (a repository's files share them), that walk was about
9% of a 5,000-file replay.

Here the task keeps, per query term, its term frequency in each project file as a dense
column (``task_terms``), kept exact by ``task_term_add`` as the replay adds context terms,
and ``task_bm25`` scores from the columns in file order. It is ``bm25_scores`` of the
same arguments, the same floating-point operations in the same order for every file and
term, so the scores are bit for bit those of the walk (tests/test_tasklex.py, and the
reference registry's ``task_bm25`` in tests/test_parity.py). The columns cost
``terms x project files``, so a task whose query terms are rare keeps the walk
(``use_columns``).
"""

import math

import numpy as np

from .._jit import jit
from ..channels import mean_length, path_idf, scored_terms, term_mask
from ..scoring import BM25_B, BM25_K1

COLUMN_SHARE = 4  # columns when the query's postings fill at least 1/4 of them


@jit
def use_columns(q_sorted, n_files, post):
    """Are dense columns worth it for these query term ids (ascending; -1: unknown)? Yes
    when their postings fill at least ``1 / COLUMN_SHARE`` of ``terms x n_files``."""
    n_terms = post.off.shape[0]
    nq = 0
    total = 0
    for k in range(q_sorted.shape[0]):
        t = q_sorted[k]
        if t >= 0:
            nq += 1
            if t < n_terms:
                total += post.len[t]
    return nq > 0 and n_files > 0 and total * COLUMN_SHARE >= nq * n_files


@jit
def task_terms(q_sorted, files, n_res, post):
    """``(pos, tf, cnt)``: ``pos`` int64[n_res] each project file's position in ``files``
    (-1: not one), ``tf`` float64[Q, F] each query term's frequency in each file (from the
    postings table ``post``), ``cnt`` int64[Q] how many files hold it; ``Q`` the entries of
    ``q_sorted`` (ascending term ids, -1 for a term the vocabulary does not hold: an all-0
    column), ``F`` the project's files (``files`` ascending, including those the task has
    not reached yet: they hold no terms until it does)."""
    pos = np.full(n_res, -1, np.int64)
    for j in range(files.shape[0]):
        pos[files[j]] = j
    nq = q_sorted.shape[0]
    tf = np.zeros((nq, files.shape[0]), np.float64)
    cnt = np.zeros(nq, np.int64)
    n_terms = post.off.shape[0]
    for k in range(nq):
        t = q_sorted[k]
        if t < 0 or t >= n_terms:
            continue
        lo = post.off[t]
        for q in range(lo, lo + post.len[t]):
            r = post.pool_b[q]
            j = pos[r] if r < n_res else -1
            if j >= 0:
                tf[k, j] = post.ev[post.pool_e[q]]
                cnt[k] += 1
    return pos, tf, cnt


@jit
def task_term_add(q_sorted, pos, tf, cnt, tid, rid):
    """Term ``tid`` was added once to resource ``rid``'s document (``table_add(post, tid,
    rid, 1.0)``): the columns follow."""
    if rid >= pos.shape[0]:
        return
    j = pos[rid]
    if j < 0:
        return
    k = np.searchsorted(q_sorted, tid)
    if k < q_sorted.shape[0] and q_sorted[k] == tid:
        if tf[k, j] == 0.0:
            cnt[k] += 1
        tf[k, j] += 1.0


@jit
def task_bm25(q_sorted, n_terms, max_terms, post_len, files, n_docs, doclen, tf, cnt,
              path_ptr, path_terms, path_w):
    """``channels.bm25_scores(tids, _, max_terms, files[:n_docs], in_proj, doclen, post,
    path_ptr, path_terms, path_w, _)`` from the columns (``task_terms``), ``tids`` the
    entries of ``q_sorted`` below ``n_terms`` (the terms known now) and ``post_len`` the
    postings' ``len`` (each term's document count overall, for ``max_terms``)."""
    known = np.empty(q_sorted.shape[0], np.int64)  # column of each known term, ascending
    nq = 0
    for k in range(q_sorted.shape[0]):
        if 0 <= q_sorted[k] < n_terms:
            known[nq] = k
            nq += 1
    known = known[:nq]
    tids = q_sorted[known]
    keep = scored_terms(tids, max_terms, post_len)
    avgdl = mean_length(doclen, files, n_docs)
    den = np.empty(n_docs, np.float64)  # each file's length term, as bm25_scores has it
    for j in range(n_docs):
        den[j] = BM25_K1 * (1 - BM25_B + BM25_B * doclen[files[j]] / avgdl)
    score = np.zeros(n_docs, np.float64)
    matched = np.zeros(n_docs, np.float64)
    mass = 0.0
    q_idf = np.zeros(nq, np.float64)
    for qi in range(nq):
        k = known[qi]
        c = cnt[k]
        if not keep[qi] or c == 0:
            continue
        idf = math.log(1.0 + (n_docs - c + 0.5) / (c + 0.5))
        mass += idf
        q_idf[qi] = idf
        col = tf[k]
        for j in range(n_docs):  # a file without the term adds exactly 0 to both
            x = col[j]
            score[j] += idf * x * (BM25_K1 + 1) / (x + den[j])
            matched[j] += idf if x > 0.0 else 0.0
    qmask = term_mask(tids)
    ids = np.empty(n_docs, np.int64)
    sc = np.empty(n_docs, np.float64)
    c = 0
    for j in range(n_docs):
        if matched[j] > 0.0:
            f = files[j]
            ids[c] = f
            sc[c] = score[j] * (matched[j] / mass) + path_w * path_idf(
                tids, q_idf, path_terms, path_ptr[f], path_ptr[f + 1], qmask)
            c += 1
    return ids[:c], sc[:c], np.ones(c, np.float64)
