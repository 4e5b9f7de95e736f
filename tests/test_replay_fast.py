"""The compiled replay loop (eval/compiled.py + kernels/replay/loop.py) against the Python reference
loop (eval/replay.py): identical task records, on the workload generator and on real
trajectories of every development source."""

from collections import defaultdict

import numpy as np
import pytest

from brainbox.eval import sources as S
from brainbox.eval.compiled import MultiProject, replay_series_fast
from brainbox.eval.replay import replay_series
from brainbox.events import normalize
from tests.records import real_tasks


def same_records(tasks, **kw):
    tasks = list(tasks)
    want = replay_series(tasks, **kw)
    got = replay_series_fast(tasks, **kw)
    assert got["events"] == want["events"]
    assert got["skipped_events"] == want["skipped_events"]
    assert len(got["tasks"]) == len(want["tasks"])
    for a, b in zip(got["tasks"], want["tasks"]):
        assert a == b, a["id"]
    # the engine's predictions for calibration: same files, confidences and outcomes
    assert got["calibration"] == want["calibration"]
    # the opening rankings and what they credited (brainbox.learning)
    assert got["openings"] == want["openings"]
    return want


@pytest.mark.parametrize("project, fusion", [(0, "learned"), (1, "learned"), (0, "fixed"),
                                             (0, "fitted"), (1, "chosen")])
def test_synthetic_series_give_identical_records(project, fusion):
    """``fixed``: the paper's weights, so the associative channel (weight 0 by default)
    is compared too; ``learned`` and ``fitted`` rank each opening prompt with the gains the
    project's earlier sessions credited (``brainbox.learning``)."""
    spec = S.synthetic_spec(4000, 2, 3)
    want = same_records(S.synthetic_tasks(spec, project), series="syn", seed=7, fusion=fusion)
    ops = want["openings"]
    assert len(ops) >= 8 and sum(len(o["credited"]) for o in ops) >= 30
    scored = sum(t["probes"]["P2"]["scored"] for t in want["tasks"])
    assert scored > 500  # the comparison covers many predictions
    cal = want["calibration"]
    assert len(cal["hit"]) > 1000 and 0 < sum(cal["hit"]) < len(cal["hit"])
    assert set(cal["context"]) == {0, 1}


@pytest.mark.parametrize("ablate", [("lexical",), ("associative", "recency"), ("base_level",)])
def test_ablations_give_identical_records(ablate):
    spec = S.synthetic_spec(1500, 1, 5)
    same_records(S.synthetic_tasks(spec, 0), series="syn", seed=1, ablate=ablate)


SOURCES = ["claude-code-swebench-lite", "mini-swe-agent-gemini3-verified",
           "openhands-codeact-verified50", "sweagent-java-multiswebench"]


@pytest.mark.parametrize("source", SOURCES)
def test_real_series_give_identical_records(data_dir, source):
    tasks = real_tasks(data_dir, source)
    by_repo = defaultdict(list)
    for t in tasks:
        by_repo[t.repo].append(t)
    # the two largest repositories, their first 25 tasks in order
    for repo in sorted(by_repo, key=lambda r: -len(by_repo[r]))[:2]:
        series = sorted(by_repo[repo], key=lambda t: t.order)[:25]
        same_records(series, series=f"{source}:{repo}", seed=42)
        same_records(series, series=f"{source}:{repo}", seed=42, fusion="fixed")


def test_a_task_over_two_projects_is_refused_so_the_reference_loop_runs_it():
    spec = S.synthetic_spec(400, 1, 2)
    tasks = list(S.synthetic_tasks(spec, 0))
    ev = dict(tasks[1].events[2])
    ev["cwd"] = ev["project"] = "/elsewhere"
    tasks[1].events.append(ev)
    normalize(ev)  # a valid event
    with pytest.raises(MultiProject):
        replay_series_fast(tasks, series="x")


@pytest.mark.parametrize("enabled", [True, False])
def test_the_garbage_collector_is_paused_during_a_series_and_restored_after(enabled):
    """``gc_paused``: off while the loop runs (a series holds a million event dicts, which
    every full collection walks), and as it was afterwards, also after a refused task."""
    import gc

    spec = S.synthetic_spec(400, 1, 2)
    tasks = list(S.synthetic_tasks(spec, 0))
    seen = []
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        replay_series_fast(tasks[:3], series="x", on_task=lambda n: seen.append(gc.isenabled()))
        assert seen == [False, False, False]
        assert gc.isenabled() is enabled
        ev = dict(tasks[1].events[2])
        ev["cwd"] = ev["project"] = "/elsewhere"
        tasks[1].events.append(ev)
        with pytest.raises(MultiProject):
            replay_series_fast(tasks, series="x")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("seed", range(8))
def test_recurrence_maximum_of_cached_rows(seed):
    """``recurrence_max``: the element-wise maximum of the window's cached rows (0 where none),
    its positive entries in id order, and those above the guess, as numpy gives them;
    ``recurrence_top`` then ranks the channel's top as ``top_k_above`` does, for guesses below,
    at, between and above the scores."""
    import numpy as np

    from brainbox.kernels.replay.loop import recurrence_max, recurrence_top
    from brainbox.kernels.topk import top_k_above

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    top = rng.integers(1, 6, (8, n)) / 4.0
    if seed % 2:  # saturated: many entries share the best score
        top = np.minimum(top, 0.75)
    rows = np.where(rng.random((8, n)) < 0.3, top, 0.0)
    src = rng.choice(8, int(rng.integers(0, 6)), replace=False).astype(np.int64)
    want = rows[src].max(axis=0) if src.size else np.zeros(n)
    for guess in (0.0, 0.25, 0.5, 0.6, 1.0, 1.25, 2.0):
        best, ids, sc = np.full(n, 9.0), np.empty(n, np.int64), np.empty(n)
        sel_i, sel_s = np.empty(n, np.int64), np.empty(n)
        c, a = recurrence_max(rows, src, best, ids, sc, guess, sel_i, sel_s)
        np.testing.assert_array_equal(best, want)
        np.testing.assert_array_equal(ids[:c], np.flatnonzero(want > 0))
        np.testing.assert_array_equal(sc[:c], want[want > 0])
        np.testing.assert_array_equal(sel_i[:a], np.flatnonzero(want > guess))
        np.testing.assert_array_equal(sel_s[:a], want[want > guess])
        for k in {1, 3, 10, 60, c}:
            if not 0 < k <= c:
                continue
            got = recurrence_top(ids[:c], sc[:c], sel_i, sel_s, a, k)
            ref = top_k_above(ids[:c], sc[:c], k, guess)
            np.testing.assert_array_equal(got[0], ref[0])
            np.testing.assert_array_equal(got[1], ref[1])


def test_recurrence_cache_follows_the_rows():
    """The replay's recurrence cache (``kernels.replay.loop.recurrence_row`` /
    ``recurrence_fold``): rows cached as dense weights and kept by edge look-ups after each
    event equal the rows read afresh from the edge arrays, event after event (least
    recently used rows come and go; the edge arrays grow in between)."""
    import numpy as np

    from brainbox.eval.compiled import engine_arrays
    from brainbox.kernels.replay import loop as KR
    from brainbox.state import State
    from brainbox.workload import normalized

    evs = normalized(events=2600, files=120, sessions=40, projects=1, seed=11)
    whole = State()
    whole.fold(evs)
    n_all = whole.n_res
    in_proj = np.zeros(n_all, np.bool_)
    in_proj[whole.proj_files[evs[0]["project"]]] = True
    s = State()
    s.fold(evs[:2000])
    rc_ids = np.full(6, -1, np.int64)
    rc_age = np.full(6, -1, np.int64)
    rc_dense = np.zeros((6, n_all))
    checked = 0
    for i, e in enumerate(evs[2000:]):
        enc = s.encode([e])
        sid = int(enc.ev_sess[0])
        touched = enc.tch_res[enc.tch_ptr[0]:enc.tch_ptr[1]].copy()
        before = s.win[sid, : s.win_len[sid]].copy()
        s.apply(enc)
        E = engine_arrays(s, np.asarray([s.adj_linked], np.int64))
        if touched.size:
            KR.recurrence_fold(rc_ids, rc_dense, touched, np.concatenate((before, touched)),
                               E.hkeys, E.hslot, E.ew, in_proj)
        for u in s.win[sid, : s.win_len[sid]][-5:]:
            KR.recurrence_row(rc_ids, rc_age, rc_dense, u, i, E.adj_off, E.adj_len, E.pool_dst,
                              E.pool_e, E.ew, in_proj)
        ne = int(s.n_edges[0])
        for slot, u in enumerate(rc_ids.tolist()):
            if u < 0:
                continue
            want = np.zeros(n_all)
            out = (s.esrc[:ne] == u) & in_proj[s.edst[:ne]]
            want[s.edst[:ne][out]] = s.ew[:ne][out]
            np.testing.assert_array_equal(rc_dense[slot], want)
            checked += 1
    assert checked > 1000 and len(set(rc_ids.tolist())) == 6


def test_a_state_that_does_not_mine_learns_the_same_arrays():
    """The compiled replay folds with ``State.mine`` off (nothing it scores reads open
    errors, advice or procedures): the learned arrays are those of a state that mines,
    and the miners stay empty."""
    from brainbox.state import State
    from brainbox.workload import normalized as synthetic

    events = synthetic(600)
    assert any(ev.get("error_fp") for ev in events)
    full, lean = State(), State()
    lean.mine = False
    full.fold(events)
    lean.fold(events)
    a, b = full.to_arrays(), lean.to_arrays()
    assert a.keys() == b.keys()
    for k in sorted(set(a) - {"json"}):  # "json": the miners' state, among others
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert full.open_errors.by_project and full.advice.trail
    assert not lean.open_errors.by_project and not lean.advice.trail


def test_the_recurrence_cache_outlives_a_task_until_the_project_changes():
    """``eval.compiled._RecurrenceCache``: the rows come back to the next task widened
    with zeros for the new resources, and start afresh for another project (or another
    numbering of its files)."""

    from brainbox.eval.compiled import _RecurrenceCache
    from brainbox.kernels.replay.loop import REC_SLOTS

    c = _RecurrenceCache()
    ids, age, dense = c.arrays(("/p", 1), 5)
    assert dense.shape == (REC_SLOTS, 5) and (ids == -1).all()
    ids[0], age[0], dense[0, 3] = 7, 2, 0.5
    ids, age, dense = c.arrays(("/p", 1), 9)  # the project's mask grew
    assert dense.shape == (REC_SLOTS, 9) and ids[0] == 7 and age[0] == 2
    assert dense[0, 3] == 0.5 and dense[0, 5:].sum() == 0.0
    ids, age, dense = c.arrays(("/p", 2), 9)  # renumbered
    assert ids[0] == -1 and dense.sum() == 0.0
    ids[0], dense[0, 1] = 3, 1.0
    ids, _, dense = c.arrays(("/q", 2), 9)  # another project
    assert ids[0] == -1 and dense.sum() == 0.0
