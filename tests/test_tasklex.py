"""The compiled replay's lexical columns (``kernels.replay.tasklex``): the task's query
terms as dense columns over the project's files, scored bit for bit as the postings walk
(``kernels.channels.bm25_scores``) and its plain reference score them, while terms are
added, files appear and query terms become known."""

import numpy as np
import pytest

from brainbox import kernels as K
from brainbox.eval.reference import rank as RR
from brainbox.kernels.replay import tasklex as TL
from brainbox.kernels.table import new_table, table_add


def _known(q_sorted, n_terms):
    return q_sorted[(q_sorted >= 0) & (q_sorted < n_terms)]


@pytest.mark.parametrize("seed", range(12))
def test_columns_score_as_the_postings_do(seed):
    rng = np.random.default_rng(seed)
    n_res = int(rng.integers(20, 160))
    n_terms_all = int(rng.integers(4, 40))
    files = np.sort(rng.choice(n_res, int(rng.integers(1, n_res)), replace=False))
    in_proj = np.zeros(n_res, np.bool_)
    in_proj[files] = True
    # path terms per resource (some repeated, some unqueried, -1 for none)
    lens = rng.integers(0, 4, n_res)
    path_ptr = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    path_terms = rng.integers(-1, n_terms_all, int(path_ptr[-1])).astype(np.int64)
    q = rng.choice(n_terms_all, int(rng.integers(1, min(12, n_terms_all) + 1)), replace=False)
    q_sorted = np.sort(np.concatenate((q, np.full(int(rng.integers(0, 3)), -1)))).astype(
        np.int64)
    max_terms = int(rng.choice([0, 1, 2, 5]))
    path_w = float(rng.choice([0.0, 2.0]))
    post = new_table(8, 16)
    doclen = rng.integers(0, 3, n_res).astype(np.float64)  # lengths from other terms too
    n_cur = int(rng.integers(1, n_res + 1))  # resources that exist so far
    n_terms = int(rng.integers(1, n_terms_all + 1))  # terms the vocabulary holds so far

    def add(t, r):
        nonlocal post
        post = table_add(post, t, r, 1.0)
        doclen[r] += 1.0

    n_cur = max(n_cur, int(files[0]) + 1)  # a query term known and in a file, at least
    n_terms = max(n_terms, int(q.min()) + 1)
    add(int(q.min()), int(files[0]))
    for _ in range(int(rng.integers(0, 300))):  # the postings before the task
        add(int(rng.integers(0, n_terms)), int(rng.integers(0, n_cur)))
    pos, tf, cnt = TL.task_terms(q_sorted, files, n_res, post)
    checked = matched = 0
    for step in range(40):
        for _ in range(int(rng.integers(0, 12))):
            t, r = int(rng.integers(0, n_terms)), int(rng.integers(0, n_cur))
            add(t, r)
            TL.task_term_add(q_sorted, pos, tf, cnt, t, r)
        n_docs = int(np.searchsorted(files, n_cur))
        if n_docs:
            tids = _known(q_sorted, n_terms)
            got = TL.task_bm25(q_sorted, n_terms, max_terms, post.len, files, n_docs, doclen,
                               tf, cnt, path_ptr, path_terms, path_w)
            walk = K.bm25_scores(tids, q.shape[0], max_terms, files[:n_docs], in_proj,
                                 doclen, post, path_ptr, path_terms, path_w, n_res)
            ref = RR.bm25_scores(tids, q.shape[0], max_terms, files[:n_docs], in_proj,
                                 doclen, post, path_ptr, path_terms, path_w, n_res)
            for a, b in zip(got, walk):
                np.testing.assert_array_equal(a, b)  # bit for bit
            np.testing.assert_array_equal(got[0], ref[0])
            np.testing.assert_allclose(got[1], ref[1], rtol=1e-12, atol=0)
            checked += 1
            matched += got[0].shape[0]
        n_cur = min(n_res, n_cur + int(rng.integers(0, 4)))  # resources appear
        n_terms = min(n_terms_all, n_terms + int(rng.integers(0, 2)))  # and terms
    assert checked > 0 and (matched > 0 or max_terms > 0)  # q.min() is in files[0]


def test_columns_only_for_common_terms():
    """``use_columns``: columns when the query's postings fill a quarter of
    ``terms x files``; not for rare terms, an unknown query or no files."""
    post = new_table(8, 16)
    for r in range(8):
        post = table_add(post, 0, r, 1.0)  # term 0 in all 8 files
    post = table_add(post, 1, 0, 1.0)  # term 1 in one
    files = np.arange(8, dtype=np.int64)
    assert TL.use_columns(np.asarray([0, 1], np.int64), 8, post)  # 9 of 16
    assert not TL.use_columns(np.asarray([1, 2, 3], np.int64), 8, post)  # 1 of 24
    assert not TL.use_columns(np.asarray([-1], np.int64), 8, post)
    assert not TL.use_columns(np.asarray([0], np.int64), 0, post)
    pos, tf, cnt = TL.task_terms(np.asarray([-1, 0, 1], np.int64), files, 10, post)
    assert pos.tolist() == list(range(8)) + [-1, -1]
    assert cnt.tolist() == [0, 8, 1] and tf[1].tolist() == [1.0] * 8
    TL.task_term_add(np.asarray([-1, 0, 1], np.int64), pos, tf, cnt, 1, 3)  # a new pair
    TL.task_term_add(np.asarray([-1, 0, 1], np.int64), pos, tf, cnt, 1, 9)  # not a file
    TL.task_term_add(np.asarray([-1, 0, 1], np.int64), pos, tf, cnt, 5, 3)  # not queried
    assert cnt.tolist() == [0, 8, 2] and tf[2, 3] == 1.0 and tf.sum() == 10.0
