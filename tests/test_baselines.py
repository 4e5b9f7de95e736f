"""The replay's baselines: each incremental structure against a brute-force reference,
and the BM25 documents against the engine's own context terms."""

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brainbox.eval.baselines import (
    Baselines,
    Bm25,
    CoSession,
    Frequency,
    RandomRanks,
    Recency,
    ToolTransitions,
)
from brainbox.eval.probes import Registry
from brainbox.events import normalize
from brainbox.state import FILE, State

touches = st.lists(st.integers(0, 12), max_size=80)


@given(touches, st.integers(1, 13), st.integers(1, 10))
def test_recency_is_last_touch_first_within_the_universe(seq, n_universe, k):
    r = Recency()
    last = {}
    for step, i in enumerate(seq):
        r.touch(i)
        last[i] = step
    want = sorted((i for i in last if i < n_universe), key=lambda i: -last[i])[:k]
    assert r.top(k, n_universe) == want


@given(touches, st.integers(1, 13), st.integers(1, 10))
def test_frequency_is_count_first_then_who_reached_it_first(seq, n_universe, k):
    f = Frequency()
    count, reached = {}, {}
    for step, i in enumerate(seq):
        f.touch(i)
        count[i] = count.get(i, 0) + 1
        reached[i] = step  # the step at which i reached its current count
    want = sorted((i for i in count if i < n_universe), key=lambda i: (-count[i], reached[i]))
    assert f.top(k, n_universe) == want[:k]


def brute_bm25(docs: dict, stats_docs: dict, query: list, n_docs: int, k: int, n_universe: int):
    """BM25 with (N, df, avgdl) from ``stats_docs`` and tf/dl from ``docs``."""
    avgdl = (sum(len(v) for v in stats_docs.values()) / n_docs) or 1.0
    scores = {}
    for d, terms in docs.items():
        if d >= n_universe:
            continue
        s = 0.0
        for t in query:
            tf = terms.count(t)
            if tf:
                df = sum(1 for v in stats_docs.values() if t in v)
                idf = math.log1p((n_docs - df + 0.5) / (df + 0.5))
                s += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(terms) / avgdl))
        if s > 0:
            scores[d] = s
    return sorted(scores, key=lambda d: (-round(scores[d], 9), d))[:k]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000))
def test_bm25_matches_a_brute_force_with_statistics_frozen_at_task_start(seed):
    rng = random.Random(seed)
    words = ["auth", "login", "token", "cache", "user", "view"]
    b, docs = Bm25(), {}
    n = rng.randint(1, 8)
    for d in range(n):
        terms = [rng.choice(words) for _ in range(rng.randint(0, 6))]
        docs[d] = terms
        b.add(d, terms)
    query = list(dict.fromkeys(rng.choice(words) for _ in range(3)))
    frozen = {d: list(v) for d, v in docs.items()}
    b.set_query(query, n)
    assert b.top(10, n) == brute_bm25(docs, frozen, query, n, 10, n)
    for _ in range(rng.randint(1, 5)):  # the task touches some documents, adds new ones
        d = rng.randint(0, n + 1)
        terms = [rng.choice(words) for _ in range(rng.randint(1, 4))]
        docs.setdefault(d, []).extend(terms)
        b.add(d, terms)
        assert b.top(3, n) == brute_bm25(docs, frozen, query, n, 3, n)


def test_cosession_counts_shared_past_sessions_and_falls_back_to_the_previous_task():
    c = CoSession()
    for files in ([0, 1], [1, 2], [0, 1, 3]):
        c.begin_task()
        for f in files:
            c.touch(f)
        c.end_task()
    c.begin_task()
    # No file yet: seeds = previous task's files {0, 1, 3}.
    # pair counts: 0-0:2 0-1:2 0-3:1, 1-1:3 1-0:2 1-2:1 1-3:1, 3-3:1 3-0:1 3-1:1
    # scores: 0: 2+2+1=5, 1: 2+3+1=6, 2: 1, 3: 1+1+1=3
    assert c.top(10, 4) == [1, 0, 3, 2]
    c.touch(2)  # now only this task's file 2: shares one session with 1 and with itself
    assert c.top(10, 4) == [1, 2]
    assert c.top(10, 2) == [1]


def test_first_task_of_a_series_has_no_cosession_ranking():
    c = CoSession()
    c.begin_task()
    assert c.top(10, 5) == []


def test_tool_transitions_rank_what_followed_the_last_tool_in_past_sessions():
    t = ToolTransitions()
    for seq in ([0, 1, 2], [0, 1, 1], [0, 2]):
        t.begin_task()
        for x in seq:
            t.touch(x)
        t.end_task()
    t.begin_task()
    assert t.top(3, 3) == [0]  # every session started with 0
    t.touch(0)
    assert t.top(3, 3) == [1, 2]  # 0->1 in two sessions, 0->2 in one
    t.touch(1)
    assert t.top(3, 3) == [1, 2]  # 1->1 once, 1->2 once: ties by id


def test_random_rankings_are_a_pure_function_of_seed_series_task_and_step():
    a = RandomRanks(42, "s", 0)
    a.begin_task("t1", 20, 10, 50)
    b = RandomRanks(42, "s", 0)
    b.begin_task("t1", 5, 10, 50)  # another task length: the same rows
    for step in range(5):
        ra = a.top(step, 50)
        assert ra == b.top(step, 50)
        assert len(ra) == len(set(ra)) == 10 and all(0 <= i < 50 for i in ra)
    c = RandomRanks(43, "s", 0)
    c.begin_task("t1", 20, 10, 50)
    assert [c.top(s, 50) for s in range(5)] != [a.top(s, 50) for s in range(5)]


def test_random_ranking_of_a_tiny_universe_is_a_permutation_of_it():
    r = RandomRanks(1, "s", 1)
    r.begin_task("t", 3, 3, 2)
    assert sorted(r.top(1, 2)) == [0, 1]
    assert r.top(1, 0) == []


@pytest.mark.parametrize("k,n", [(3, 1), (3, 2), (3, 3), (3, 5), (10, 12), (10, 40), (10, 5000)])
def test_random_top_all_is_every_step_of_top(k, n):
    """``top_all`` (every step at once, the compiled replay's input) holds ``top`` of each
    step, -1 padded: universes where draws repeat often, and where they rarely do."""
    r = RandomRanks(7, "s", 1)
    r.begin_task("t", 300, k, n)
    rows = r.top_all(n)
    assert rows.shape == (301, k)
    for step in range(301):
        want = r.top(step, n)
        assert rows[step].tolist() == want + [-1] * (k - len(want))
    # the compiled replay's draws (kernels.baselines.random_top_all) are the same rows
    from brainbox.eval.compiled import CompiledBaselines

    cb = CompiledBaselines(7, "s")
    cb.t_rand = r
    np.testing.assert_array_equal(cb.random_top_all(True, n), rows)


def test_random_top_is_roughly_uniform():
    r = RandomRanks(0, "s", 0)
    r.begin_task("t", 3000, 1, 4)
    firsts = [r.top(s, 4)[0] for s in range(3000)]
    for i in range(4):
        assert 650 < firsts.count(i) < 850


@pytest.mark.parametrize("seed", [0, 1])
def test_bm25_documents_hold_the_engine_context_terms(seed):
    """The baseline tokenises like the engine: for every file, its document's term counts
    equal the engine's context-term row (path tokens, prompt terms, argument terms)."""
    rng = random.Random(seed)
    paths = ["src/auth/login_form.py", "src/cache/store.py", "tests/test_auth.py", "README.md"]
    state, base = State(), Baselines(seed, "x")
    base.begin_task("t", "fix the LoginForm token cache", 10, 0, 0)
    freg, treg = Registry(), Registry()
    for i in range(40):
        sess = f"s{i // 10}"
        if i % 10 == 0:
            ev = normalize({"session": sess, "cwd": "/p", "project": "/p", "kind": "prompt",
                            "prompt": rng.choice(["fix the LoginForm token", "cache user view"]),
                            "at": i})
            state.fold([ev])
            base.prompt(sess, ev["prompt"])
            continue
        files = rng.sample(paths, rng.randint(0, 2)) if i > 4 else paths
        ev = normalize({"session": sess, "cwd": "/p", "project": "/p",
                        "tool": rng.choice(["Read", "Grep"]), "files": files,
                        "args": rng.choice([None, "userToken", "cache_store"]), "at": i})
        state.fold([ev])
        tid, new_tool = treg.add(ev["tool"], 0)
        triples = [(*freg.add(f, 0), f) for f in ev["files"]]
        base.tool_event(sess, tid, ev["tool"], new_tool, triples, ev["args"])
    docs = state.docs()
    assert len(freg) == 4
    for fid, path in enumerate(freg.keys):
        rid = state.res_index[(FILE, "/p", path)]
        row = docs[[rid]].tocoo()
        engine = {state.terms[c]: int(v) for c, v in zip(row.col, row.data)}
        mine = base.f_bm25.doc_terms(fid)
        assert mine == engine, path


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 9), min_size=1, max_size=5), min_size=1, max_size=6),
       st.lists(st.integers(0, 11), max_size=6), st.integers(1, 12))
def test_cosession_matches_a_brute_force_sum_over_shared_sessions(past, now, n_universe):
    c = CoSession()
    for files in past:
        c.begin_task()
        for f in files:
            c.touch(f)
        c.end_task()
    sessions = [set(s) for s in past]
    c.begin_task()

    def brute(seeds):
        score = {}
        for g in range(12):
            v = sum(1 for f in seeds for s in sessions if f in s and g in s)
            if v and g < n_universe:
                score[g] = v
        return sorted(score, key=lambda g: (-score[g], g))[:10]

    assert c.top(10, n_universe) == brute(dict.fromkeys(past[-1]))
    seen = []
    for f in now:
        c.touch(f)
        if f not in seen:
            seen.append(f)
        assert c.top(10, n_universe) == brute(seen)


@given(st.lists(st.integers(0, 5), max_size=40), st.integers(1, 12))
def test_dense_top_k_is_best_positive_scores_ties_by_id(scores, k):
    import numpy as np

    from brainbox.eval.baselines import top_dense

    want = sorted((i for i, v in enumerate(scores) if v > 0), key=lambda i: (-scores[i], i))
    assert top_dense(np.asarray(scores, np.int64), k) == want[:k]
