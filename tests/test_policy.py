"""Recall's policy (``brainbox.kernels.policy``, built by ``brainbox.recall.plan``): the plan's
validation, and the jitted rules against their plain definitions."""

import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brainbox import kernels as K
from brainbox.kernels import policy as KP
from brainbox.recall import (
    CHANNELS,
    LAMBDA,
    RECENCY_SESSION,
    RRF_K,
    TOP_K,
    Index,
    Params,
    RankArgs,
    plan,
    rank_args,
)
from brainbox.state import State
from brainbox.workload import normalized


def test_the_default_plan_holds_recalls_constants():
    p = plan()
    assert p.lam.tolist() == [LAMBDA[c] for c in CHANNELS]
    assert p.use.tolist() == [c != "snippet" for c in CHANNELS]
    assert (p.rrf_k, p.recency_session, p.top_n) == (RRF_K, RECENCY_SESSION, TOP_K)
    d = Params()
    assert (p.min_conf, p.seeds, p.hops, p.topk, p.w_floor, p.a_floor, p.recurrence_from,
            p.max_terms) == (d.min_confidence, d.seeds, d.hops, d.topk, d.w_floor, d.a_floor,
                             d.recurrence_from, d.max_query_terms)
    assert plan(snippets=True).use.all()
    ab = plan(Params(ablate=frozenset({"lexical", "recency"})))
    assert [c for c, on in zip(CHANNELS, ab.use.tolist()) if not on] == [
        "lexical", "snippet", "recency"]
    assert CHANNELS[KP.RECENCY] == "recency" and CHANNELS[KP.RECURRENCE] == "recurrence"
    assert len(CHANNELS) == KP.N_CHANNELS


@pytest.mark.parametrize("params, word", [
    (Params(ablate=frozenset({"lexicon"})), "lexicon"),
    (Params(w_floor=-0.1), "w_floor"),
    (Params(a_floor=-1e-9), "a_floor"),
    (Params(min_confidence=1.5), "min_confidence"),
    (Params(min_confidence=float("nan")), "min_confidence"),
    (Params(seeds=-1), "seeds"),
    (Params(hops=1.5), "hops"),
    (Params(topk=True), "topk"),
    (Params(recurrence_from=-2), "recurrence_from"),
    (Params(max_query_terms=None), "max_query_terms"),
])
def test_a_bad_plan_is_refused_in_one_line(params, word):
    with pytest.raises(ValueError) as e:
        plan(params)
    assert word in str(e.value) and "\n" not in str(e.value)


def test_bad_params_fail_a_recall_before_any_ranking():
    s = State()
    s.fold(normalized(events=60, files=10, sessions=3, projects=1, seed=1))
    with pytest.raises(ValueError, match="w_floor"):
        rank_args(Index(s), "auth", params=Params(w_floor=-1.0))


def test_rank_args_are_named_as_the_kernels_parameters():
    fn = getattr(K.rank_files, "py_func", K.rank_files)
    assert RankArgs._fields == tuple(inspect.signature(fn).parameters)


def plain_refers(deictic, n_query, q_ids, window, in_proj, path_ptr, path_terms):
    """The rule as written in brainbox.recall's docstring, with sets."""
    files = [r for r in window.tolist() if in_proj[r]]
    if not files:
        return False
    if deictic:
        return True
    if n_query == 0:
        return False
    seen = set()
    for r in files:
        seen |= set(path_terms[path_ptr[r]:path_ptr[r + 1]].tolist())
    return len({t for t in q_ids.tolist() if t >= 0} & seen) * 2 >= n_query


@settings(max_examples=300, deadline=None)
@given(n_res=st.integers(1, 30), n_terms=st.integers(1, 12), seed=st.integers(0, 2**31),
       win=st.integers(0, 25), n_q=st.integers(0, 8), unknown=st.integers(0, 3),
       deictic=st.booleans())
def test_refers_to_session_equals_its_plain_definition(n_res, n_terms, seed, win, n_q, unknown,
                                                        deictic):
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 4, n_res)
    path_ptr = np.zeros(n_res + 1, np.int64)
    path_ptr[1:] = np.cumsum(lens)
    path_terms = rng.integers(0, n_terms, max(int(path_ptr[-1]), 1)).astype(np.int64)
    in_proj = rng.random(n_res) < 0.7
    window = rng.integers(0, n_res, win).astype(np.int64)
    q = rng.choice(n_terms, min(n_q, n_terms), replace=False).astype(np.int64)
    q_ids = np.concatenate((q, np.full(unknown, -1, np.int64)))
    args = (deictic, q_ids.shape[0], q_ids, window, in_proj, path_ptr, path_terms)
    assert bool(KP.refers_to_session(*args)) == plain_refers(*args)


@settings(max_examples=100, deadline=None)
@given(ablate=st.sets(st.sampled_from(CHANNELS)), snippets=st.booleans(), refers=st.booleans())
def test_weights_equal_their_plain_definition(ablate, snippets, refers):
    p = plan(Params(ablate=frozenset(ablate)), snippets=snippets)
    lam, s_max = KP.weights(p, refers)
    want = [RECENCY_SESSION if (c == "recency" and refers) else LAMBDA[c] for c in CHANNELS]
    assert lam.tolist() == want
    assert s_max == sum(w for w, on in zip(want, p.use.tolist()) if on) / (RRF_K + 1)
    assert p.lam.tolist() == [LAMBDA[c] for c in CHANNELS]  # the plan is left as it was


def test_path_terms_are_each_files_path_tokens_and_grow_with_the_state():
    from brainbox.kernels.codes import FILE
    from brainbox.text import path_tokens

    evs = normalized(events=200, files=20, sessions=4, projects=2, seed=3)
    s = State()
    s.fold(evs[:100])
    ptr, terms = s.path_terms()
    n0 = s.n_res
    assert ptr.shape[0] == n0 + 1
    s.fold(evs[100:])
    ptr, terms = s.path_terms()
    assert ptr.shape[0] == s.n_res + 1 and s.n_res > n0
    for r in range(s.n_res):
        got = [s.terms[t] for t in terms[ptr[r]:ptr[r + 1]].tolist()]
        want = path_tokens(s.res_key[r]) if s.res_kind[r] == FILE else []
        assert got == want
    loaded = State.from_arrays(s.to_arrays(), s.resource_rows())
    lp, lt = loaded.path_terms()
    assert lp.tolist() == ptr.tolist() and lt[: ptr[-1]].tolist() == terms[: ptr[-1]].tolist()



def test_path_terms_of_a_window_fill_its_rows_only(monkeypatch):
    """A recall asks for its session window's rows: they equal the full table's, the rest are
    empty, and no other file's path is tokenised (the hook process's first recall)."""
    from brainbox import state as state_mod

    evs = normalized(events=200, files=20, sessions=4, projects=2, seed=3)
    s = State()
    s.fold(evs)
    window = np.asarray([3, 1, 3, s.n_res - 1], np.int64)
    seen = []
    real = state_mod.path_tokens
    monkeypatch.setattr(state_mod, "path_tokens", lambda key: seen.append(key) or real(key))
    wp, wt = s.path_terms(window)
    assert len(seen) <= len(set(window.tolist()))
    monkeypatch.undo()
    ptr, terms = s.path_terms()
    assert wp.shape == ptr.shape
    for r in range(s.n_res):
        row = wt[wp[r]:wp[r + 1]].tolist()
        assert row == (terms[ptr[r]:ptr[r + 1]].tolist() if r in window.tolist() else [])


def plain_refers_by_text(state, query, window, project):
    """The rule over strings: the query's tokens against the path tokens of the window's
    files of the project (how recall decided it before the rule was compiled)."""
    from brainbox.kernels.codes import FILE
    from brainbox.text import is_deictic, path_tokens, tokens

    files = [r for r in window.tolist()
             if state.res_kind[r] == FILE and state.res_project[r] == project]
    if not files:
        return False
    if is_deictic(query):
        return True
    qs = set(tokens(query))
    if not qs:
        return False
    seen = set()
    for r in files:
        seen |= set(path_tokens(state.res_key[r]))
    return len(qs & seen) * 2 >= len(qs)


@settings(max_examples=60, deadline=None)
@given(words=st.lists(st.sampled_from(
    ["auth", "login", "billing", "invoice", "src", "py", "test", "this", "again", "zzz",
     "token", "session", "api", "models"]), max_size=6), sess=st.integers(0, 40))
def test_recalls_recency_switch_is_the_rule_over_path_tokens(words, sess):
    from brainbox.recall import session_resources

    s = _folded()
    project = s.res_project[next(r for r in range(s.n_res) if s.res_kind[r] == 0)]
    sessions = list(s.sess_index)
    session = sessions[sess % len(sessions)]
    query = " ".join(words)
    args = rank_args(Index(s), query, project=project, session=session)
    want = plain_refers_by_text(s, query, session_resources(s, session), project)
    assert args.lam[KP.RECENCY] == (RECENCY_SESSION if want else LAMBDA["recency"])


_STATE = []


def _folded():
    if not _STATE:
        s = State()
        s.fold(normalized(events=1500, files=60, sessions=40, projects=2, seed=4))
        _STATE.append(s)
    return _STATE[0]
