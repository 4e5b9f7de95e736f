"""Recall's policy (``brainbox.kernels.policy``, built by ``brainbox.recall.plan``): the plan's
validation, and the jitted rules against their plain definitions."""

import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brainbox import confidence
from brainbox import kernels as K
from brainbox.kernels import policy as KP
from brainbox.recall import (
    CHANNELS,
    FUSION,
    LAMBDA,
    PATH_WEIGHT,
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
    assert p.lam.tolist() == [FUSION["chosen"][c] for c in CHANNELS]
    # a channel of weight 0 (associative, by default) is not computed
    assert p.use.tolist() == [c not in ("snippet", "associative") for c in CHANNELS]
    fixed = plan(Params(fusion="fixed"))
    assert fixed.lam.tolist() == [LAMBDA[c] for c in CHANNELS]  # the paper's weights
    assert fixed.use.tolist() == [c != "snippet" for c in CHANNELS]
    assert (p.rrf_k, p.recency_session, p.top_n) == (RRF_K, RECENCY_SESSION, TOP_K)
    d = Params()
    assert (p.seeds, p.hops, p.topk, p.w_floor, p.a_floor, p.recurrence_from,
            p.max_terms) == (d.seeds, d.hops, d.topk, d.w_floor, d.a_floor,
                             d.recurrence_from, d.max_query_terms)
    # the relevance floor is a probability, a score ratio per context through the map
    assert (p.min_conf, p.min_conf_session) == (
        confidence.floor("prompt", d.min_probability),
        confidence.floor("session", d.min_probability))
    assert p.path_w == PATH_WEIGHT
    assert plan(Params(fusion="fixed"), snippets=True).use.all()
    ab = plan(Params(ablate=frozenset({"lexical", "recency"}), fusion="fixed"))
    assert [c for c, on in zip(CHANNELS, ab.use.tolist()) if not on] == [
        "lexical", "snippet", "recency"]
    assert CHANNELS[KP.RECENCY] == "recency" and CHANNELS[KP.RECURRENCE] == "recurrence"
    assert len(CHANNELS) == KP.N_CHANNELS


@pytest.mark.parametrize("params, word", [
    (Params(ablate=frozenset({"lexicon"})), "lexicon"),
    (Params(w_floor=-0.1), "w_floor"),
    (Params(a_floor=-1e-9), "a_floor"),
    (Params(min_probability=1.5), "min_probability"),
    (Params(min_probability=float("nan")), "min_probability"),
    (Params(seeds=-1), "seeds"),
    (Params(hops=1.5), "hops"),
    (Params(topk=True), "topk"),
    (Params(recurrence_from=-2), "recurrence_from"),
    (Params(max_query_terms=None), "max_query_terms"),
    (Params(fusion="online"), "fusion"),
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
    # then the optional `lists` (Index.lists: kept by the caller, not part of a recall's args)
    assert RankArgs._fields + ("lists",) == tuple(inspect.signature(fn).parameters)


@settings(max_examples=300, deadline=None)
@given(n_res=st.integers(1, 30), seed=st.integers(0, 2**31), win=st.integers(0, 25))
def test_in_session_equals_its_plain_definition(n_res, seed, win):
    rng = np.random.default_rng(seed)
    in_proj = rng.random(n_res) < 0.3
    window = rng.integers(0, n_res, win).astype(np.int64)
    assert bool(KP.in_session(window, in_proj)) == any(in_proj[r] for r in window.tolist())


@settings(max_examples=100, deadline=None)
@given(ablate=st.sets(st.sampled_from(CHANNELS)), snippets=st.booleans(), refers=st.booleans(),
       fusion=st.sampled_from(sorted(FUSION)))
def test_weights_equal_their_plain_definition(ablate, snippets, refers, fusion):
    p = plan(Params(ablate=frozenset(ablate), fusion=fusion), snippets=snippets)
    lam, s_max = KP.weights(p, refers, np.zeros(len(CHANNELS) + 1))  # no credit: gains 1
    base = FUSION[fusion]
    want = ([RECENCY_SESSION if c == "recency" else base[c] for c in CHANNELS] if refers
            else p.lam_prompt.tolist())
    assert lam.tolist() == want
    assert s_max == sum(w for w, on in zip(want, p.use.tolist()) if on) / (RRF_K + 1)
    assert p.lam.tolist() == [base[c] for c in CHANNELS]  # the plan is left as it was


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


@settings(max_examples=60, deadline=None)
@given(words=st.lists(st.sampled_from(
    ["auth", "login", "billing", "invoice", "src", "py", "test", "this", "again", "zzz",
     "token", "session", "api", "models"]), max_size=6), sess=st.integers(0, 40))
def test_recalls_recency_switch_is_whether_the_session_touched_a_project_file(words, sess):
    """Whatever the query: recency weighs RECENCY_SESSION exactly when the session's window
    holds a file of the project (with the deictic/path-term condition it had before issue
    15, "zzz" in a session that touched project files kept recency at 1)."""
    from brainbox.kernels.codes import FILE
    from brainbox.recall import session_resources

    s = _folded()
    project = s.res_project[next(r for r in range(s.n_res) if s.res_kind[r] == 0)]
    sessions = list(s.sess_index)
    session = sessions[sess % len(sessions)]
    query = " ".join(words)
    args = rank_args(Index(s), query, project=project, session=session)
    want = any(s.res_kind[r] == FILE and s.res_project[r] == project
               for r in session_resources(s, session).tolist())
    assert args.lam[KP.RECENCY] == (RECENCY_SESSION if want else FUSION["chosen"]["recency"])


_STATE = []


def _folded():
    if not _STATE:
        s = State()
        s.fold(normalized(events=1500, files=60, sessions=40, projects=2, seed=4))
        _STATE.append(s)
    return _STATE[0]
