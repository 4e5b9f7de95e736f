"""Recall's ranking kernel (``brainbox.kernels.rank_files``) against its plain reference
(tests/reference_rank.py) on states folded from the workload generator, plus hand cases.
Run once more with ``NUMBA_DISABLE_JIT=1`` (Makefile)."""

import inspect
import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brainbox import kernels as K
from brainbox.eval.reference import rank as RR
from brainbox.kernels.rank import channel_lists
from brainbox.recall import CHANNELS, Index, Params, predict_tools, rank_args
from brainbox.state import FILE, State
from brainbox.workload import WORDS, normalized

ARG = {name: i for i, name in enumerate(inspect.signature(RR.rank_files).parameters)}
SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def assert_same_ranking(got, want, limit=0, parents=True):
    """Equal results; with ``limit`` > 0 (``got`` from a limited call) the same first
    ``limit`` results with the same scores and ranks, and the same presence and parents
    (unless ``parents`` is False: a call given ``TaskLists`` returns none)."""
    assert got[0] == want[0]
    if not got[0]:
        return
    if limit > 0:
        _, cand, scores, order, ranks, present, parent = got
        w_top = want[3][:limit]
        assert order.size == w_top.size
        np.testing.assert_array_equal(cand[order], want[1][w_top])
        np.testing.assert_array_equal(scores[order], want[2][w_top])
        np.testing.assert_array_equal(ranks[:, order], want[4][:, w_top])
        np.testing.assert_array_equal(present, want[5])
        if parents:
            np.testing.assert_array_equal(parent, want[6])
        else:
            assert parent.size == 0
        return
    _, cand, scores, order, ranks, present, parent = got
    np.testing.assert_array_equal(present, want[5])
    np.testing.assert_array_equal(cand, want[1])
    np.testing.assert_array_equal(ranks, want[4])
    np.testing.assert_array_equal(scores, want[2])  # same sums in the same order: exact
    np.testing.assert_array_equal(order, want[3])
    np.testing.assert_array_equal(parent, want[6])


_STATES: dict = {}


def folded(seed: int, events: int, batches: int) -> tuple[State, list]:
    key = (seed, events, batches)
    if key not in _STATES:
        evs = normalized(events=events, files=max(30, events // 40), sessions=max(5, events // 60),
                         projects=2, seed=seed)
        s = State()
        cuts = np.linspace(0, len(evs), batches + 1).astype(int)
        for a, b in itertools.pairwise(cuts):
            s.fold(evs[a:b])
        _STATES[key] = (s, evs)
    return _STATES[key]


@SETTINGS
@given(seed=st.integers(0, 5), events=st.sampled_from([300, 1500]),
       batches=st.integers(1, 4), words=st.lists(st.sampled_from(WORDS + ["zzz", "this"]),
                                                 min_size=0, max_size=20),
       sess=st.integers(-1, 30), dt=st.floats(0, 5e5), ablate=st.sets(st.sampled_from(CHANNELS)),
       max_terms=st.sampled_from([0, 2, 12]), floors=st.sampled_from([(0.2, 0.05), (0.0, 0.0)]),
       top_n=st.sampled_from([3, 100]), limit=st.sampled_from([1, 3, 10, 40]),
       fusion=st.sampled_from(["chosen", "fixed"]))
def test_rank_files_matches_reference(seed, events, batches, words, sess, dt, ablate, max_terms,
                                      floors, top_n, limit, fusion):
    s, evs = folded(seed, events, batches)
    sessions = list(s.sess_index)
    session = sessions[sess % len(sessions)] if sess >= 0 else None
    project = evs[-1]["project"]
    p = Params(ablate=frozenset(ablate), max_query_terms=max_terms, w_floor=floors[0],
               a_floor=floors[1], fusion=fusion)  # "fixed": the associative channel too
    args = list(rank_args(Index(s), " ".join(words), project=project, session=session,
                          now=s.clock + dt, params=p))
    args[ARG["top_n"]] = top_n
    want = RR.rank_files(*args)
    got = K.rank_files(*args)
    assert_same_ranking(got, want)
    args[ARG["limit"]] = limit  # the first `limit` alike, found with less ranking
    assert_same_ranking(K.rank_files(*args), want, limit)
    lists = channel_lists(*(args[ARG[a]] for a in (  # kept by the caller (Index.lists)
        "files", "n", "last", "hist", "hist_len", "now", "prune_base_level", "top_n",
        "bl_cache")))
    assert_same_ranking(K.rank_files(*args, lists), want, limit)
    args[ARG["bl_cache"]] = np.zeros((0, 3))  # without the base-level cache
    assert_same_ranking(K.rank_files(*args), want, limit)
    args[ARG["prune_base_level"]] = False  # no base-level pruning: the same top k
    args[ARG["limit"]] = 0
    assert_same_ranking(K.rank_files(*args), want)


def test_recall_keeps_the_query_free_lists_until_a_fold():
    """`Index.lists` serves the frequency, recency and base-level lists from its cache
    while nothing changed, and computes them afresh after a fold or at another `now`: the
    rankings equal the kernel's own every time."""
    evs = normalized(events=1200, files=40, sessions=12, seed=4)
    s = State()
    s.fold(evs[:800])
    idx = Index(s)
    project = evs[0]["project"]

    def check(now=None):
        args = rank_args(idx, "fix the auth bug", project=project, now=now, limit=10)
        assert_same_ranking(K.rank_files(*args, idx.lists(args)), K.rank_files(*args), 10)
        return idx.lists(args)

    first = check()
    assert check() is first  # kept
    assert check(s.clock + 3600.0) is not first  # another now
    s.fold(evs[800:])
    again = check()
    assert again is not first and check() is again


def test_a_loaded_state_ranks_like_the_folded_one():
    """Postings rebuilt from saved arrays (in another order) rank exactly alike."""
    evs = normalized(events=800, files=40, sessions=12, seed=2)
    a = State()
    a.fold(evs)
    b = State.from_arrays(a.to_arrays(), a.resource_rows())
    for q in ["fix the auth bug", "login session token", "zzz"]:
        ra = K.rank_files(*rank_args(Index(a), q, project=evs[0]["project"]))
        rb = K.rank_files(*rank_args(Index(b), q, project=evs[0]["project"]))
        assert_same_ranking(ra, rb)


def test_top_k_ties_go_to_lower_id():
    ids = np.arange(10, 20, dtype=np.int64)
    sc = np.asarray([1.0, 3, 3, 2, 3, 0, 2, 3, 1, 2])
    got, gsc = K.top_k(ids, sc, 5)
    assert got.tolist() == [11, 12, 14, 17, 13]
    assert gsc.tolist() == [3, 3, 3, 3, 2]
    assert K.top_k(ids, sc, 20)[0].tolist() == [11, 12, 14, 17, 13, 16, 19, 10, 18, 15]


def table(entries):
    """A postings table from (term, resource, tf) triples."""
    t, r, v = zip(*entries)
    return K.table_from_entries(np.asarray(t), np.asarray(r), np.asarray(v, float))


def test_bm25_hand_computed():
    """Two files; term 0 in both (tf 1 and 2), term 1 only in file 1 (tf 1)."""
    post = table([(0, 0, 1.0), (0, 1, 2.0), (1, 1, 1.0)])
    doclen = np.asarray([2.0, 3.0])
    files = np.asarray([0, 1], np.int64)
    in_proj = np.ones(2, np.bool_)
    ids, sc, share = K.bm25_scores(np.asarray([0, 1], np.int64), 3, 0, files, in_proj, doclen,
                                   post, *no_paths(2), 2)
    avgdl = 2.5
    idf0 = math.log(1 + (2 - 2 + 0.5) / 2.5)
    idf1 = math.log(1 + (2 - 1 + 0.5) / 1.5)

    def term(idf, tf, dl):
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))

    # BM25 times the file's share of the query's IDF mass (file 0 holds term 0 only)
    mass = idf0 + idf1
    assert ids.tolist() == [0, 1]
    assert sc[0] == pytest.approx(term(idf0, 1, 2.0) * idf0 / mass)
    assert sc[1] == pytest.approx(term(idf0, 2, 3.0) + term(idf1, 1, 3.0))
    assert share.tolist() == [1.0, 1.0]  # the coverage is in the score: gamma is 1
    # only file 0 in the project: one document, term 1 unmatched
    ids, sc, _ = K.bm25_scores(np.asarray([0, 1], np.int64), 2, 0, files[:1],
                               np.asarray([True, False]), doclen, post, *no_paths(2), 2)
    assert ids.tolist() == [0]
    assert sc[0] == pytest.approx(math.log(1 + 0.5 / 1.5) * 2.2 / (1 + 1.2))


def test_bm25_a_file_matching_one_word_does_not_outrank_one_matching_most_of_the_query():
    """DESIGN §4.3: file 0 holds one query word (t0) nine times; file 1 holds the other two
    (t1, t2) once, which together carry more of the query's IDF mass. Plain BM25 ranks file
    0 first (2.25 vs 1.98); times the coverage (1/3 vs 2/3 of the mass, about) file 1 is
    first (1.11 vs 0.99)."""
    # t0 in file 0 only; t1 in files 1, 2; t2 in files 1, 3; t3 (not queried) in file 4
    post = table([(0, 0, 9.0), (1, 1, 1.0), (2, 1, 1.0), (1, 2, 1.0), (2, 3, 1.0),
                  (3, 4, 1.0)])
    doclen = np.asarray([9.0, 2.0, 1.0, 1.0, 1.0])
    files = np.arange(5, dtype=np.int64)
    ids, sc, _ = K.bm25_scores(np.asarray([0, 1, 2], np.int64), 3, 0, files,
                               np.ones(5, np.bool_), doclen, post, *no_paths(5), 5)
    order = ids[np.argsort(-sc, kind="mergesort")].tolist()
    assert order[:2] == [1, 0]


FIXED = Params(fusion="fixed")  # the paper's weights: the associative channel ranks too


def no_paths(n_res):
    """``bm25_scores``' path arguments for files without path terms (no path bonus)."""
    return np.zeros(n_res + 1, np.int64), np.full(1, -1, np.int64), 2.0


def test_a_query_term_in_the_path_adds_its_idf_times_the_path_weight_once():
    """Files 0 and 1 hold terms 0 and 1 alike in their documents; term 1 is also in file
    1's path, twice (``a/b/b.py``): file 1 gains ``path_w`` x IDF(term 1), once."""
    post = table([(0, 0, 1.0), (1, 0, 1.0), (0, 1, 1.0), (1, 1, 1.0), (2, 2, 1.0)])
    doclen = np.asarray([2.0, 2.0, 1.0])
    files = np.arange(3, dtype=np.int64)
    path_ptr = np.asarray([0, 0, 3, 3], np.int64)
    path_terms = np.asarray([1, 1, 2], np.int64)  # file 1's path: terms 1, 1, 2 (2 unqueried)
    tids = np.asarray([0, 1], np.int64)
    plain = K.bm25_scores(tids, 2, 0, files, np.ones(3, np.bool_), doclen, post,
                          *no_paths(3)[:2], 0.0, 3)
    got = K.bm25_scores(tids, 2, 0, files, np.ones(3, np.bool_), doclen, post, path_ptr,
                        path_terms, 2.0, 3)
    idf1 = math.log(1 + (3 - 2 + 0.5) / 2.5)
    assert got[0].tolist() == plain[0].tolist() == [0, 1]
    assert got[1][0] == plain[1][0]
    assert got[1][1] == pytest.approx(plain[1][1] + 2.0 * idf1)
    want = RR.bm25_scores(tids, 2, 0, files, np.ones(3, np.bool_), doclen, post, path_ptr,
                          path_terms, 2.0, 3)
    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=0)


def test_max_terms_keeps_the_rarest():
    """Term 0 is in both files, term 1 in one: with max_terms=1 only term 1 scores."""
    post = table([(0, 0, 1.0), (0, 1, 1.0), (1, 1, 1.0)])
    ids, _sc, share = K.bm25_scores(np.asarray([0, 1], np.int64), 2, 1, np.asarray([0, 1]),
                                   np.ones(2, np.bool_), np.ones(2), post, *no_paths(2), 2)
    assert ids.tolist() == [1] and share.tolist() == [1.0]
    ids, _sc, _ = K.bm25_scores(np.asarray([0, 1], np.int64), 2, 0, np.asarray([0, 1]),
                                np.ones(2, np.bool_), np.ones(2), post, *no_paths(2), 2)
    assert ids.tolist() == [0, 1]  # max_terms 0: every term scores


def test_table_counts_pairs_and_lists_them_by_key():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 40, 3000)
    b = rng.integers(0, 500, 3000)
    t = K.new_table(2, 4)  # tiny: every array grows on the way
    for lo in range(0, 3000, 700):
        t = K.table_add_many(t, a[lo:lo + 700], b[lo:lo + 700], np.ones(700)[: len(a[lo:lo + 700])])
    want = {}
    for i, j in zip(a.tolist(), b.tolist()):
        want.setdefault(i, {})[j] = want.setdefault(i, {}).get(j, 0) + 1
    for i in range(45):
        got_b, got_v = K.table_rows(t, i)
        assert dict(zip(got_b.tolist(), got_v.tolist())) == want.get(i, {})
        for j in list(want.get(i, {}))[:3]:
            assert t.ev[K.table_find(t, i, j)] == want[i][j]
    assert K.table_find(t, 0, 10_000) == -1


def test_base_level_pruning_needs_time_order():
    """Folding an event older than the clock turns pruning off (its bound would be wrong)."""
    evs = normalized(events=300, files=30, sessions=6, seed=1)
    s = State()
    s.fold(evs)
    assert s.in_order
    late = dict(evs[5], at=evs[0]["at"] - 10)
    s.fold([late])
    assert not s.in_order
    assert rank_args(Index(s), "auth", project=evs[0]["project"])[ARG["prune_base_level"]] is False


@SETTINGS
@given(seed=st.integers(0, 5), events=st.sampled_from([300, 1500]), batches=st.integers(1, 4),
       sess=st.integers(0, 40), k=st.sampled_from([1, 3, 10]), support=st.sampled_from([1, 4, 50]))
def test_predict_tools_matches_reference(seed, events, batches, sess, k, support):
    s, _ = folded(seed, events, batches)
    sessions = list(s.sess_index) + [None, "unknown"]
    session = sessions[sess % len(sessions)]
    got = predict_tools(s, session, k=k, min_support=support)
    want = RR.predict_tools(s, session, k=k, min_support=support)
    assert [t for t, _ in got] == [t for t, _ in want]
    assert [v for _, v in got] == [v for _, v in want]


def test_ngram_counts_survive_persistence():
    evs = normalized(events=600, files=30, sessions=10, seed=4)
    a = State()
    a.fold(evs)
    b = State.from_arrays(a.to_arrays(), a.resource_rows())
    assert a.ngrams() == b.ngrams() and len(a.ngrams()) > 3
    for sess in list(a.sess_index)[:5]:
        assert predict_tools(a, sess) == predict_tools(b, sess)


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.integers(0, 300), n_codes=st.integers(1, 40),
       weighted=st.booleans(), cuts=st.lists(st.integers(0, 300), max_size=4))
def test_ngram_count_counts_like_a_dict(seed, n, n_codes, weighted, cuts):
    """``ngram_count`` (existing pairs bumped in place, new ones through ``table_add``),
    from tables small enough to grow, in any split into calls: each context code gets
    the next dense id when first seen and each (context, tool) the sum of its weights in
    order, as a plain dict counts them."""
    from brainbox.kernels.predict import LOW_BITS, LOW_MASK, ngram_count

    rng = np.random.default_rng(seed)
    pool = [K.encode_ctx(*(int(t) for t in rng.integers(-1, 30, 3))) for _ in range(n_codes)]
    codes = np.asarray(pool, np.int64)[rng.integers(0, n_codes, n)]
    tools = rng.integers(0, 12, n).astype(np.int64)
    weights = rng.random(n) if weighted else np.zeros(0)
    ctx, grams_want = {}, {}
    for i in range(n):
        c = ctx.setdefault(int(codes[i]), len(ctx))
        key = (c, int(tools[i]))
        grams_want[key] = grams_want.get(key, 0.0) + (float(weights[i]) if weighted else 1.0)
    ctxmap, grams = K.new_table(1, 1), K.new_table(1, 1)
    bounds = [0, *sorted(min(c, n) for c in cuts), n]
    for lo, hi in itertools.pairwise(bounds):
        w = weights[lo:hi] if weighted else weights
        ctxmap, grams = ngram_count(ctxmap, grams, codes[lo:hi], tools[lo:hi], hi - lo, w)
    assert int(ctxmap.n[0]) == len(ctx) and int(grams.n[0]) == len(grams_want)
    for code, c in ctx.items():
        assert K.table_find(ctxmap, code >> LOW_BITS, code & LOW_MASK) == c
    for (c, tool), v in grams_want.items():
        e = K.table_find(grams, c, tool)
        assert e >= 0 and grams.ev[e] == v


@SETTINGS
@given(seed=st.integers(0, 5), events=st.sampled_from([300, 1500]), sess=st.integers(0, 40),
       k=st.sampled_from([1, 3, 10]), support=st.sampled_from([1, 4, 50]))
def test_predict_kernel_matches_its_contract(seed, events, sess, k, support):
    s, _ = folded(seed, events, 2)
    sid = sess % (len(s.sess_index) + 1) - 1
    adj = s.adjacency()
    args = (s.kind, s.n, s.n_res, s.last3, s.last3_len, sid, s.ctxmap, s.grams, adj.off,
            adj.len, adj.dst, adj.edge, s.ew, support, k)
    got, want = K.predict_kernel(*args), RR.predict_kernel(*args)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@SETTINGS
@given(scores=st.lists(st.integers(0, 5), min_size=0, max_size=60), k=st.integers(1, 70),
       now=st.floats(0, 1e6))
def test_small_kernels_match_their_references(scores, k, now):
    ids = np.arange(3, 3 + len(scores), dtype=np.int64)
    sc = np.asarray(scores, np.float64)
    for a, b in zip(K.top_k(ids, sc, k), RR.top_k(ids, sc, k)):
        np.testing.assert_array_equal(a, b)
    rng = np.random.default_rng(len(scores))
    n = len(scores) + 3
    hist = np.sort(rng.uniform(0, now + 1, (n, 50)), axis=1)
    hist_len = rng.integers(0, 80, n)
    hist_len[hist_len > 50] = 50  # keep hist sorted so that `last` is the latest access
    last = np.asarray([hist[i, hist_len[i] - 1] if hist_len[i] else 0.0 for i in range(n)])
    for prune in (False, True):
        got = K.base_level_top(ids, hist, hist_len, last, now, k, prune, np.zeros((0, 3)))
        want = RR.base_level_top(ids, hist, hist_len, last, now, k, prune)
        np.testing.assert_array_equal(got[0], want[0])


@SETTINGS
@given(n=st.sampled_from([0, 1, 5, 1023, 1024, 3000]), kind=st.sampled_from(["ties", "floats", "neg"]),
       seed=st.integers(0, 100))
def test_order_desc_is_a_stable_descending_sort(n, kind, seed):
    rng = np.random.default_rng(seed)
    scores = {"ties": rng.integers(0, 4, n).astype(float), "floats": rng.random(n) * 1e3,
              "neg": np.where(rng.random(n) < 0.1, -np.inf, -rng.random(n))}[kind]
    np.testing.assert_array_equal(K.order_desc(scores), RR.order_desc(scores))


@SETTINGS
@given(seed=st.integers(0, 1000), n=st.sampled_from([5, 40, 300]), k=st.sampled_from([1, 3, 10]),
       steps=st.lists(st.tuples(st.floats(0, 2e5) | st.floats(0, 10), st.integers(0, 4),
                                st.booleans()), min_size=1, max_size=25))
def test_base_level_cache_gives_the_exact_top_k(seed, n, k, steps):
    """A cache carried across calls (time moving forward and now and then back, files
    gaining accesses between calls) never changes the top k."""
    rng = np.random.default_rng(seed)
    width = 50
    hist = np.zeros((n, width))
    hist_len = np.zeros(n, np.int64)
    last = np.zeros(n)
    now = 1e6
    for i in range(n):  # some history, oldest first, ring buffer like fold_touches
        for t in np.sort(rng.uniform(0, now, rng.integers(0, 70))):
            hist[i, hist_len[i] % width] = t
            hist_len[i] += 1
            last[i] = t
    ids = np.arange(n, dtype=np.int64)
    cache = np.zeros((n, 3))
    cache_ids = np.zeros((n, 3))  # base_level_ids keeps its own
    for dt, touches, back in steps:  # back: a query at an earlier time (cache not trusted)
        back = back and dt > 0
        now = now - dt if back else now + dt
        if not back:
            for i in rng.integers(0, n, touches):
                hist[i, hist_len[i] % width] = now
                hist_len[i] += 1
                last[i] = now
        got = K.base_level_top(ids, hist, hist_len, last, now, k, True, cache)
        want = RR.base_level_top(ids, hist, hist_len, last, now, k, True)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        order = K.base_level_ids(ids, hist, hist_len, last, now, k, True, cache_ids)
        np.testing.assert_array_equal(order, want[0])
        if back:
            now += dt


def test_base_level_cache_by_hand():
    """Two files, one access each, 1 h and 4 h old: B = ln 1 and ln 0.5; after a further
    5 h the order holds (ln(1/sqrt 6) > ln(1/3)); then the older file is touched and leads."""
    h = 3600.0
    hist = np.zeros((2, 50))
    hist[0, 0], hist[1, 0] = 9 * h, 6 * h
    hist_len = np.asarray([1, 1])
    last = hist[:, 0].copy()
    cache = np.zeros((2, 3))
    ids = np.arange(2, dtype=np.int64)
    got = K.base_level_top(ids, hist, hist_len, last, 10 * h, 1, True, cache)
    assert got[0].tolist() == [0] and got[1][0] == pytest.approx(0.0)
    assert cache[0].tolist() == [1.0, 10 * h, 1.0]
    # at 15 h file 1's bounds [0.5 sqrt(4/9), 0.5] reach file 0's [sqrt(1/6), 1]: both computed
    got = K.base_level_top(ids, hist, hist_len, last, 15 * h, 1, True, cache)
    assert got[0].tolist() == [0] and got[1][0] == pytest.approx(math.log(1 / math.sqrt(6)))
    assert cache[:, 1].tolist() == [15 * h, 15 * h]
    hist[1, 1] = 15.5 * h
    hist_len[1] = 2
    last[1] = 15.5 * h
    got = K.base_level_top(ids, hist, hist_len, last, 16 * h, 1, True, cache)
    # file 1: 1 / sqrt(10) + 1 / sqrt(0.5) = 1.730 > file 0: 1 / sqrt(7) = 0.378
    assert got[0].tolist() == [1]
    assert got[1][0] == pytest.approx(math.log(1 / math.sqrt(10) + 1 / math.sqrt(0.5)))
    assert cache[0, 1] == 15 * h  # file 0's bound (at most 0.408) kept it out: not recomputed


def test_limited_ranking_on_a_larger_state():
    """Hundreds of files, so the lexical, associative and recurrence channels reach more
    files than the first depth the limited fusion ranks: the first `limit` results still
    equal the reference's, and the limited call scored fewer candidates."""
    evs = normalized(events=6000, files=300, sessions=100, projects=1, seed=5)
    s = State()
    s.fold(evs)
    index = Index(s)
    project = evs[0]["project"]
    sessions = list(s.sess_index)
    pruned = 0
    for q in ["fix the auth login bug in auth", "cache", "report export this", "zzz"]:
        for session in (None, sessions[-1], sessions[len(sessions) // 2]):
            for dt in (0.0, 7200.0):
                args = list(rank_args(index, q, project=project, session=session,
                                      now=s.clock + dt, params=FIXED))
                want = RR.rank_files(*args)
                for limit in (1, 10, 30):
                    args[ARG["limit"]] = limit
                    got = K.rank_files(*args)
                    assert_same_ranking(got, want, limit)
                    if got[0]:
                        pruned += got[1].size < want[1].size
    assert pruned > 0


def _fuse_reference(present, lists, deep, share, lam, rrf_k, s_max, min_conf):
    """Every channel ranked in full, fused in channel order, floored, best first."""
    ranks = {}
    for c in range(7):
        if not present[c]:
            continue
        if c in deep:
            ids, sc = deep[c]
            order = sorted(range(len(ids)), key=lambda j: (-sc[j], ids[j]))
            ranks[c] = {int(ids[j]): p + 1 for p, j in enumerate(order)}
        else:
            ranks[c] = {int(i): p + 1 for p, i in enumerate(lists[c])}
    cand = sorted(set().union(*ranks.values())) if ranks else []
    score = {}
    for i in cand:
        v = 0.0
        for c in range(7):
            if c in ranks and i in ranks[c]:
                v += lam[c] * (share[i] if c == 0 else 1.0) / (rrf_k + ranks[c][i])
        score[i] = v
    best = sorted((i for i in cand if score[i] / s_max >= min_conf), key=lambda i: (-score[i], i))
    return best, score, ranks


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.sampled_from([30, 300, 3000]),
       levels=st.sampled_from([3, 50, 10_000]), limit=st.sampled_from([1, 10, 50, 400]),
       lam_deep=st.sampled_from([0.2, 4.0, 30.0]), min_conf=st.sampled_from([0.0, 0.05, 0.3]),
       on=st.lists(st.booleans(), min_size=7, max_size=7), given_lex=st.booleans(),
       given_dense=st.booleans())
def test_fuse_top_matches_full_fusion(seed, n, levels, limit, lam_deep, min_conf, on,
                                      given_lex, given_dense):
    """The threshold fusion against full ranking on random channels: many ties (few score
    levels), deep channels much heavier than the listed ones or much lighter, floors; with
    and without the whole lexical ranking given (exact lexical ranks, as the replay passes
    them) and the deep channels' dense scores."""
    from brainbox.kernels.fusion import first_depth, fuse_top

    rng = np.random.default_rng(seed)
    present = np.asarray(on, np.bool_)
    deep, lists = {}, []
    deep_ids, deep_sc = [], []
    for c in range(7):
        if c in (0, 1, 6):
            reach = np.flatnonzero(rng.random(n) < rng.uniform(0.05, 1.0))
            sc = (rng.integers(1, levels + 1, reach.size) / levels).astype(np.float64)
            deep[c] = (reach, sc)
            present[c] &= reach.size > 0
            deep_ids.append(reach.astype(np.int64))
            deep_sc.append(sc)
            lists.append(np.zeros(0, np.int64))
        else:
            lists.append(rng.permutation(n)[: rng.integers(1, min(n, 100) + 1)].astype(np.int64))
            deep_ids.append(np.zeros(0, np.int64))
            deep_sc.append(np.zeros(0))
    share = rng.integers(1, 5, n) / 4.0
    lam = np.asarray([lam_deep, lam_deep, 4.0, 2.0, 1.0, 0.5, lam_deep])
    s_max = lam[present].sum() / 21.0 if present.any() else 1.0
    best, score, ranks = _fuse_reference(present, lists, deep, share, lam, 20.0, s_max, min_conf)
    from numba.typed import List

    none_i = np.zeros(0, np.int64)
    dense = [np.zeros(0) for _ in range(7)]
    if given_dense:
        for c in (1, 6):
            dense[c] = np.zeros(n)
            dense[c][deep_ids[c]] = deep_sc[c]
    lex_sorted, lex_rank, slot = none_i, none_i, none_i
    if given_lex:
        ids, sc = deep_ids[0], deep_sc[0]
        lex_sorted = ids[np.lexsort((ids, -sc))]
        lex_rank = np.zeros(n, np.int64)
        lex_rank[lex_sorted] = np.arange(1, lex_sorted.size + 1)
        slot = np.full(n, -1, np.int64)
    tops = [np.zeros(0, np.int64) for _ in range(7)]
    if given_dense:  # and the deep channels' first depth, ranked
        for c in (1, 6):
            o = np.lexsort((deep_ids[c], -deep_sc[c]))
            tops[c] = deep_ids[c][o][: first_depth(limit)]
    cand, scores, order, rk = fuse_top(limit, present, List(lists), List(deep_ids),
                                        List(deep_sc), share, n, lam, 20.0, s_max, min_conf,
                                        List(dense), lex_sorted, lex_rank, slot, List(tops))
    if given_lex:
        assert (slot == -1).all()  # the scratch is left as it was given
    top = best[:limit]
    assert cand[order].tolist() == top
    assert scores[order].tolist() == [score[i] for i in top]
    for c in range(7):
        want = [ranks[c].get(i, 0) if c in ranks else 0 for i in top]
        assert rk[c, order].tolist() == want


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.integers(1, 3000), k=st.integers(1, 300),
       levels=st.sampled_from([1, 2, 5, 1000]))
def test_top_k_matches_a_full_sort(seed, n, k, levels):
    """Many ties and buffer cuts: the threshold pass equals sorting everything."""
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(10 * n, n, replace=False)).astype(np.int64)
    sc = rng.integers(0, levels, n).astype(np.float64) * rng.choice([1.0, -0.5])
    got = K.top_k(ids, sc, k)
    want = RR.top_k(ids, sc, k)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("seed,query,gap", [(3, "fix the auth login bug in auth", 0.0),
                                            (4, "cache report", 7200.0),
                                            (5, "zzz", 0.0)])
def test_task_lists_rank_like_a_fresh_call(seed, query, gap):
    """The replay's per-task lists (``rank.TaskLists``: whole lexical ranking, frequency and
    recency lists kept by ``task_touch``, base-level subset for the task's horizon) give
    every event of a task the same first results as a call that scans everything."""
    from brainbox.kernels.replay.tasklists import TaskLists, task_lex, task_lists, task_touch

    evs = normalized(events=4000, files=800, sessions=60, projects=1, seed=seed)
    head, task = evs[:3850], evs[3850:]
    for e in task:
        e["at"] = e["at"] + gap
    s = State()
    s.fold(head)
    whole = State()
    whole.fold(evs)
    cap = whole.n_res + 8
    index = Index(s)
    project = evs[0]["project"]
    session = task[0]["session"]
    args = list(rank_args(index, query, project=project, session=session,
                          now=task[0]["at"], limit=10, params=FIXED))
    files = args[ARG["files"]]
    lists, list_n, bl_files, slot, lex_rank, share_d = task_lists(
        files, s.n, s.last, s.hist, s.hist_len, task[0]["at"], task[-1]["at"], 100,
        s.in_order, s.bl_cache, cap, 200)
    assert list_n[2] >= 100 and list_n[2] < files.size  # a true subset for base level
    known = set(files.tolist())
    lex_sorted, lex_sc = np.zeros(0, np.int64), np.zeros(0)
    work, act, parent = K.spread_work(cap), np.zeros(cap), np.full(cap, -1, np.int64)
    compared = 0
    for e in task:
        args = list(rank_args(index, query, project=project, session=session, now=e["at"],
                              limit=10, params=FIXED))
        files = args[ARG["files"]]
        joined = sorted(set(files.tolist()) - known)
        task_touch(lists, list_n, bl_files, s.n, s.last, np.asarray(joined, np.int64), 100)
        known |= set(files.tolist())
        tids, nq, mt, _, in_proj, doclen, post, pp, pt, pw = args[:10]
        lex_ids, lex_s, share = K.bm25_scores(tids, nq, mt, files, in_proj, doclen, post,
                                              pp, pt, pw, in_proj.shape[0])
        lex_sorted, lex_sc = task_lex(lex_ids, lex_s, share, lex_sorted, lex_rank, share_d)
        # the lists themselves against a fresh selection (an event touches several files)
        np.testing.assert_array_equal(lists[0, : list_n[0]],
                                      RR.top_k(files, s.n[files].astype(float), 100)[0])
        np.testing.assert_array_equal(lists[1, : list_n[1]],
                                      RR.top_k(files, s.last[files], 100)[0])
        bl_top = K.base_level_top(files, s.hist, s.hist_len, s.last, e["at"], 100, False,
                                  np.zeros((0, 3)))[0]
        assert set(bl_top.tolist()) <= set(bl_files[: list_n[2]].tolist())
        tl = TaskLists(lex_sorted, lex_sc, lex_rank, share_d, lists, list_n, bl_files, slot,
                       np.zeros(0), np.zeros(0, np.int64), np.zeros(0),
                       np.zeros(0, np.int64), work, act, parent)
        rest = args[10:]
        want = K.rank_lexed(lex_ids, lex_s, share, files, in_proj, *rest)
        got = K.rank_lexed(lex_ids, lex_s, share, files, in_proj, *rest, tl)
        assert_same_ranking(got, want, 10, parents=False)
        assert not act.any() and (parent == -1).all()  # spreading's scratch left clean
        assert not (work.expanded.any() or work.mark.any() or work.queued.any())
        compared += bool(want[0])
        s.fold([e])
        index.refresh()
        touched = [s.res_index[(FILE, project, f)] for f in e.get("files") or ()
                   if (FILE, project, f) in s.res_index]
        task_touch(lists, list_n, bl_files, s.n, s.last, np.asarray(touched, np.int64), 100)
    assert compared > 100
    assert (slot == -1).all()


@SETTINGS
@given(seed=st.integers(0, 10_000), n_files=st.integers(1, 300), k=st.sampled_from([1, 5, 100]),
       levels=st.sampled_from([2, 5, 1000]), batch=st.integers(1, 6))
def test_task_touch_keeps_the_lists_exact(seed, n_files, k, levels, batch):
    """Frequency and recency lists kept by ``task_touch`` equal a fresh ``top_k`` after every
    batch of touched files (several at once, with many equal counts and times), and the
    base-level subset gains exactly the touched files."""
    from brainbox.kernels.replay.tasklists import task_lists, task_touch

    rng = np.random.default_rng(seed)
    n_res = n_files + 20
    files = np.sort(rng.choice(n_res, n_files, replace=False)).astype(np.int64)
    n = np.zeros(n_res, np.int64)
    last = np.zeros(n_res)
    n[files] = rng.integers(0, levels, n_files)
    last[files] = rng.integers(0, levels, n_files).astype(float)
    hist = np.zeros((n_res, 50))
    hist_len = np.zeros(n_res, np.int64)
    lists, list_n, bl_files, _slot, _, _ = task_lists(files, n, last, hist, hist_len, 0.0, 1.0,
                                                     k, False, np.zeros((0, 3)), n_res, 1)
    assert list_n[2] == -1  # no pruning asked: every file is a base-level candidate
    list_n[2] = 0  # follow the subset from empty: it gains the touched files
    added = set()
    now = float(levels)
    for _ in range(20):
        rs = rng.choice(files, min(batch, n_files), replace=False)
        rs = np.concatenate([rs, rs[:1]])  # a file touched twice in one event
        n[rs] += 1
        now += float(rng.integers(0, 2))  # equal times too
        last[rs] = now
        task_touch(lists, list_n, bl_files, n, last, rs.astype(np.int64), k)
        added |= set(rs.tolist())
        np.testing.assert_array_equal(lists[0, : list_n[0]],
                                      RR.top_k(files, n[files].astype(float), k)[0])
        np.testing.assert_array_equal(lists[1, : list_n[1]], RR.top_k(files, last[files], k)[0])
        assert bl_files[: list_n[2]].tolist() == sorted(added)


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.integers(1, 2000), m=st.integers(1, 40),
       levels=st.sampled_from([1, 3, 1000]))
def test_ranks_of_counts_like_a_sort(seed, n, m, levels):
    """``ranks_of`` (a count per item for a few items, binary searches for more) gives each
    queried item its 1-based rank in the channel sorted by score, then lower id."""
    from brainbox.kernels.fusion import ranks_of

    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(5 * n, n, replace=False)).astype(np.int64)
    sc = rng.integers(1, levels + 1, n).astype(np.float64)
    pick = rng.choice(n, min(m, n), replace=False)
    order = np.lexsort((ids, -sc))
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(1, n + 1)
    got = ranks_of(ids, sc, ids[pick].copy(), sc[pick].copy())
    np.testing.assert_array_equal(got, rank[pick])


@SETTINGS
@given(seed=st.integers(0, 5), sess=st.integers(0, 40), k=st.sampled_from([1, 3, 10]))
def test_predict_kernel_given_its_tool_list(seed, sess, k):
    """Given the tool list (as the replay keeps it), prediction equals finding the tools
    itself."""
    s, _ = folded(seed, 1500, 2)
    n_res = s.n_res
    sid = sess % (len(s.sess_index) + 1) - 1
    adj = s.adjacency()
    args = (s.kind, s.n, n_res, s.last3, s.last3_len, sid, s.ctxmap, s.grams, adj.off,
            adj.len, adj.dst, adj.edge, s.ew, 2, k)
    tools = K.tool_ids(s.kind, 0, n_res)
    assert tools.tolist() == [r for r in range(n_res) if s.kind[r] == 1]
    got, want = K.predict_kernel(*args, tools), K.predict_kernel(*args)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@SETTINGS
@given(seed=st.integers(0, 10_000), n_old=st.integers(0, 300), n_add=st.integers(0, 40),
       levels=st.sampled_from([3, 50, 10**9]), jitter=st.sampled_from([0.0, 0.01, 0.3, 5.0]))
def test_task_lex_resorts_like_a_fresh_sort(seed, n_old, n_add, levels, jitter):
    """``task_lex`` ranks new scores from the previous ranking (insertion, or afresh past
    its move budget): the same order as sorting, with ties, matches joining and scores
    moved a little or a lot; ranks and shares follow."""
    from brainbox.kernels.replay.tasklists import task_lex

    rng = np.random.default_rng(seed)
    n_res = 2 * (n_old + n_add) + 5
    ids = np.sort(rng.choice(n_res, n_old + n_add, replace=False)).astype(np.int64)
    old = np.sort(rng.choice(ids, n_old, replace=False)).astype(np.int64)
    sc0 = rng.integers(1, levels, n_old).astype(np.float64)
    lex_rank, share_d = np.zeros(n_res, np.int64), np.zeros(n_res)
    old_sorted, _ = task_lex(old, sc0, np.full(n_old, 0.5), np.zeros(0, np.int64), lex_rank,
                             share_d)
    base = dict(zip(old.tolist(), sc0.tolist()))
    sc = np.asarray([base.get(i, float(rng.integers(1, levels))) for i in ids.tolist()])
    moved = rng.random(sc.size) < 0.3
    sc = np.where(moved, np.round(sc * (1 + jitter * rng.random(sc.size)), 1), sc)
    share = rng.random(ids.size)
    got, got_sc = task_lex(ids, sc, share, old_sorted, lex_rank, share_d)
    want, want_sc = RR.top_k(ids, sc, ids.size)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_sc, want_sc)
    want_rank = np.zeros(n_res, np.int64)
    want_rank[want] = np.arange(1, want.size + 1)
    np.testing.assert_array_equal(lex_rank, want_rank)
    want_share = np.zeros(n_res)
    want_share[ids] = share
    np.testing.assert_array_equal(share_d, want_share)


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.integers(0, 400), k=st.sampled_from([1, 10, 64]),
       levels=st.sampled_from([2, 10, 10**6]), guess=st.floats(-0.5, 1.5))
def test_top_k_above_a_guess_is_top_k(seed, n, k, levels, guess):
    """Whatever the guess of the k-th best (too low, close, too high, equal to a tied
    score), ``top_k_above`` gives ``top_k``."""
    from brainbox.kernels.topk import top_k_above
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(4 * n + 1, n, replace=False)).astype(np.int64)
    sc = rng.integers(0, levels, n) / levels
    if n and rng.random() < 0.3:
        guess = float(np.sort(sc)[::-1][min(k, n) - 1])  # exactly the k-th best
    got = top_k_above(ids, sc, k, guess)
    want = RR.top_k(ids, sc, k)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_every_channel_in_use_weighing_zero_ranks_nothing():
    """All channels ablated but recency, at a prompt (recency weighs 0 there): s_max is 0,
    and the kernel keeps nothing as the reference does (0 / 0 is NaN), instead of raising
    ZeroDivisionError (found by the property test above)."""
    evs = normalized(events=300, files=30, sessions=5, projects=2, seed=1)
    s = State()
    s.fold(evs)
    p = Params(ablate=frozenset(set(CHANNELS) - {"recency"}))
    args = rank_args(Index(s), "auth", project=evs[-1]["project"], params=p)
    assert args.s_max == 0.0
    for limit in (0, 3):
        args = args._replace(limit=limit)
        got = K.rank_files(*args)
        assert got[0] == 1 and got[3].size == 0
        assert_same_ranking(got, RR.rank_files(*args), limit)
