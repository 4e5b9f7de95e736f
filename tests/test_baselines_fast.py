"""The compiled baselines (kernels/replay/baselines.py via eval/compiled.py) against the
Python reference (eval/baselines.py): identical rankings at every step on random event
streams and on real trajectories, hand-computed ties, capacity handling, and a call from
jitted code. Runs under NUMBA_DISABLE_JIT=1 too."""


import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brainbox.eval.baselines import Baselines
from brainbox.eval.compiled import CompiledBaselines, replay_calls, run_calls
from brainbox.eval.probes import Registry
from brainbox.kernels._jit import jit
from brainbox.kernels.replay import baselines as K

WORDS = ["auth", "login", "token", "cache", "user", "view", "store", "core", "model", "x"]
PATHS = ["src/auth/login.py", "src/cache/store.py", "tests/test_auth.py", "README.md",
         "src/user_view.py", "core/model/util.py", "a.py", "lib/auth.py", "docs/x"]
TOOLS = ["Read", "Edit", "Bash:grep", "Grep", "str_replace_editor:view", "Write"]
SESSIONS = ["s0", "s1", "s2"]

text = st.one_of(st.none(), st.just(""), st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join),
                 st.lists(st.sampled_from(WORDS + PATHS), max_size=4).map("_".join))
tool_event = st.tuples(st.just("tool"), st.sampled_from(SESSIONS), st.sampled_from(TOOLS),
                       st.lists(st.sampled_from(PATHS), max_size=4), text,
                       st.integers(0, 10_000))
prompt_event = st.tuples(st.just("prompt"), st.sampled_from(SESSIONS), text)
task = st.tuples(text, st.sampled_from(SESSIONS),
                 st.lists(st.one_of(tool_event, tool_event, prompt_event), max_size=14),
                 st.integers(0, 10_000), st.integers(0, 10_000))
streams = st.lists(task, min_size=1, max_size=6)


def tiny(cb: CompiledBaselines) -> CompiledBaselines:
    """Start from capacity 1 everywhere, so every growth path runs."""
    cb.state = K.new_state(files=1, tools=1, sessions=1, terms=1, file_entries=1,
                           tool_entries=1, pairs=1, transitions=1, seen=1)
    return cb


def drive(stream, k_files, k_tools, universe_mode, small):
    """Feed ``stream`` to both implementations, comparing every ranking.

    universe_mode 0: the replay's protocol (the frozen universe everywhere);
    1: a random universe per task (begin_task and rankings); 2: also random per ranking."""
    ref = Baselines(7, "series", k_files, k_tools)
    cb = CompiledBaselines(7, "series", k_files, k_tools)
    if small:
        tiny(cb)
    files, tools = Registry(), Registry()
    for ti, (query, sess, events, u1, u2) in enumerate(stream):
        nf, nt = len(files), len(tools)
        if universe_mode:
            nf, nt = u1 % (nf + 3), u2 % (nt + 3)
        for b in (ref, cb):
            b.begin_task(f"t{ti}", query or "", len(events), nf, nt)
        assert ref.rank_files(nf, 0) == cb.rank_files(nf, 0)
        assert ref.rank_tools(nt, 0) == cb.rank_tools(nt, 0)
        for b in (ref, cb):
            b.prompt(sess, query or "")
        for step, ev in enumerate(events):
            if ev[0] == "prompt":
                for b in (ref, cb):
                    b.prompt(ev[1], ev[2])
                continue
            _, s, tool, paths, args, u = ev
            ru_f, ru_t = (u % (len(files) + 3), u % (len(tools) + 3)) if universe_mode == 2 \
                else (nf, nt)
            assert ref.rank_tools(ru_t, step + 1) == cb.rank_tools(ru_t, step + 1), (ti, step)
            assert ref.rank_files(ru_f, step + 1) == cb.rank_files(ru_f, step + 1), (ti, step)
            tid, new = tools.add(tool, ti)
            triples = [(*files.add(p, ti), p) for p in paths]
            for b in (ref, cb):
                b.tool_event(s, tid, tool, new, triples, args)
        last = len(events)  # the random rows stop at step len(events)
        assert ref.rank_files(nf, last) == cb.rank_files(nf, last)
        assert ref.rank_tools(nt, last) == cb.rank_tools(nt, last)
        for b in (ref, cb):
            b.end_task()
    return cb


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams, st.integers(1, 12), st.integers(1, 5), st.booleans())
def test_random_streams_rank_as_the_reference_under_the_replay_protocol(stream, kf, kt, small):
    drive(stream, kf, kt, 0, small)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams, st.integers(1, 12), st.integers(1, 5), st.sampled_from([1, 2]), st.booleans())
def test_random_streams_rank_as_the_reference_with_arbitrary_universes(stream, kf, kt, mode,
                                                                        small):
    """Universes smaller than the documents seen (negative idf, docs beyond N in the static
    list) and universes that change between rankings of one task (the reference's
    co-session incremental rule is path dependent then): still identical."""
    drive(stream, kf, kt, mode, small)


# --- real data

SERIES = ("trajectories/sweagent-java-multiswebench", "fasterxml/jackson-databind")


def test_real_series_ranks_as_the_reference(data_dir):
    """The first 30 tasks of one repository series, driven as the replay drives its
    baselines (a ranking before every tool event): every ranking identical (skipped
    without ../shared/data: the ``data_dir`` fixture)."""
    from brainbox.eval.sources import load_source, select

    src, repo = SERIES
    tasks, _ = load_source(data_dir / src)
    ts = dict(select(tasks))[repo][:30]
    calls = list(replay_calls(ts))
    want = run_calls(Baselines(42, repo), calls)
    got = run_calls(tiny(CompiledBaselines(42, repo)), calls)
    assert len(want) == len(got) > 500
    for i, (a, b) in enumerate(zip(want, got)):
        assert a == b, i
    assert sum(1 for r in want if r[2]) > 100  # BM25 ranked something, often


# --- hand-computed cases (ties)

def both(k_files=10, k_tools=3):
    return Baselines(0, "s", k_files, k_tools), CompiledBaselines(0, "s", k_files, k_tools)


def feed(bs, *calls):
    for b in bs:
        for name, *args in calls:
            getattr(b, name)(*args)


def files_of(bs, n_universe, method):
    j = ["recency", "frequency", "bm25", "cosession"].index(method)
    out = [b.rank_files(n_universe, 1)[j] for b in bs]
    assert out[0] == out[1]
    return out[1]


def tools_of(bs, n_universe, method):
    j = ["recency", "frequency", "bm25", "cosession"].index(method)
    out = [b.rank_tools(n_universe, 1)[j] for b in bs]
    assert out[0] == out[1]
    return out[1]


def ev(tool, tid, new_tool, *files, args=None, session="s"):
    return ("tool_event", session, tid, tool, new_tool, list(files), args)


def test_recency_within_an_event_the_last_listed_is_the_most_recent():
    bs = both()
    feed(bs, ("begin_task", "t", "", 3, 0, 0),
         ev("Read", 0, True, (0, True, "a.py"), (1, True, "b.py")),
         ev("Read", 0, False, (2, True, "c.py")),
         ev("Edit", 1, True, (0, False, "a.py"), (2, False, "c.py")))
    assert files_of(bs, 3, "recency") == [2, 0, 1]
    assert files_of(bs, 2, "recency") == [0, 1]
    assert tools_of(bs, 2, "recency") == [1, 0]


def test_frequency_ties_go_to_who_reached_the_count_first():
    bs = both()
    feed(bs, ("begin_task", "t", "", 4, 0, 0),
         ev("Read", 0, True, (0, True, "a.py")),
         ev("Read", 0, False, (1, True, "b.py")),
         ev("Read", 0, False, (1, False, "b.py")),  # b reaches 2 first
         ev("Grep", 1, True, (0, False, "a.py"), (2, True, "c.py")),
         ev("Grep", 1, False),
         ev("Grep", 1, False))
    assert files_of(bs, 3, "frequency") == [1, 0, 2]
    assert tools_of(bs, 2, "frequency") == [0, 1]  # 3 calls each; Read got there first
    assert files_of(bs, 1, "frequency") == [0]


def test_bm25_equal_scores_rank_by_id_and_live_counts_reorder():
    bs = both()
    feed(bs, ("begin_task", "t0", "", 3, 0, 0),
         ev("Read", 0, True, (0, True, "pkg/auth.py"), (1, True, "lib/auth.py"),
            (2, True, "pkg/cache.py")),
         ("end_task",),
         ("begin_task", "t1", "fix auth", 3, 3, 1))
    # N=3, df(auth)=2, all documents two terms long: files 0 and 1 score the same.
    assert files_of(bs, 3, "bm25") == [0, 1]
    # File 1 gets "auth" again: tf 2, length 3 -> 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / 2))
    # = 1.205 > 1.0 (file 0: 2.2 / (1 + 1.2)).
    feed(bs, ev("Grep", 1, True, (1, False, "lib/auth.py"), args="auth"))
    assert files_of(bs, 3, "bm25") == [1, 0]
    assert tools_of(bs, 2, "bm25") == [1]  # its argument "auth"
    assert tools_of(bs, 1, "bm25") == []


def test_cosession_ties_by_id_and_fallback_to_the_previous_task():
    bs = both()
    feed(bs, ("begin_task", "t0", "", 1, 0, 0),
         ev("Read", 0, True, (0, True, "f0.py"), (1, True, "f1.py")), ("end_task",),
         ("begin_task", "t1", "", 1, 2, 1),
         ev("Read", 0, False, (1, False, "f1.py"), (2, True, "f2.py")), ("end_task",),
         ("begin_task", "t2", "", 1, 3, 1))
    # Rows: 1 -> {0: 1, 1: 2, 2: 1}, 2 -> {1: 1, 2: 1}. No file yet: seeds = task t1's.
    assert files_of(bs, 3, "cosession") == [1, 2, 0]
    feed(bs, ev("Read", 0, False, (2, False, "f2.py")))
    assert files_of(bs, 3, "cosession") == [1, 2]  # one shared session each: by id
    assert files_of(bs, 2, "cosession") == [1]


def test_tool_transitions_ties_by_id():
    bs = both(k_tools=3)
    names = ["A", "B", "C"]
    seen = set()
    for t, seq in enumerate(([0, 1, 2], [0, 2, 1])):
        feed(bs, ("begin_task", f"t{t}", "", 3, 0, len(seen)))
        for x in seq:
            feed(bs, ev(names[x], x, x not in seen))
            seen.add(x)
        feed(bs, ("end_task",))
    feed(bs, ("begin_task", "t2", "", 3, 0, 3))
    assert tools_of(bs, 3, "cosession") == [0]
    feed(bs, ev("A", 0, False))
    assert tools_of(bs, 3, "cosession") == [1, 2]  # 0->1 once, 0->2 once
    assert tools_of(bs, 2, "cosession") == [1]


# --- capacities and the kernel API

def _ids(*xs):
    return np.array(xs, np.int64)


def test_reserve_leaves_room_for_a_task_and_statuses_change_nothing():
    B = K.new_state(files=1, tools=1, sessions=1, terms=1, file_entries=1, tool_entries=1,
                    pairs=1, transitions=1, seen=1)
    out = np.empty((4, 5), np.int64)
    # Out of room: a status, and the state is unchanged.
    snap = [a.copy() for a in B]
    assert K.begin_task(B, _ids(3), 0, 0) == K.NEED_TERMS
    st = K.tool_event(B, 0, 0, True, _ids(0), _ids(0, 1), np.ones(2, np.bool_),
                         _ids(0, 1, 2), _ids(0, 0), _ids(0))
    assert st == K.NEED_FILES
    assert all(np.array_equal(a, b) for a, b in zip(snap, B))
    assert K.prompt(B, -1, _ids()) == K.BAD_INPUT
    # Reserve per the documented bounds: two events, three file touches, two files.
    B = K.reserve(B, files=2, tools=1, sessions=1, terms=4, tool_events=2, file_touches=3,
                  task_files=2, file_term_adds=1 + 1 + 3 * (1 + 64),
                  tool_term_adds=1 + 2 * (1 + 64))
    cap = K.capacities(B)
    assert K.begin_task(B, _ids(3, 2, 3), 0, 0) == K.OK
    assert K.prompt(B, 0, _ids(2, 3)) == K.OK
    assert K.tool_event(B, 0, 0, True, _ids(0), _ids(0, 1), np.ones(2, np.bool_),
                           _ids(0, 1, 2), _ids(1, 3), _ids(2)) == K.OK
    assert K.tool_event(B, 0, 0, False, _ids(), _ids(1), np.zeros(1, np.bool_),
                           _ids(0, 0), _ids(), _ids(3)) == K.OK
    lens = K.rank_files(B, 2, 5, out)
    assert list(lens) == [2, 2, 2, 0]
    assert out[0].tolist() == [1, 0, -1, -1, -1] and out[1].tolist() == [1, 0, -1, -1, -1]
    assert K.end_task(B) == K.OK
    assert K.capacities(B) == cap
    with pytest.raises(ValueError):
        K.rank_tools(B, 1, 6, out)


def test_grow_keeps_every_ranking():
    rng = np.random.default_rng(0)
    stream = [(" ".join(rng.choice(WORDS, 4)), "s0",
               [("tool", str(rng.choice(SESSIONS)), str(rng.choice(TOOLS)),
                 [str(p) for p in rng.choice(PATHS, rng.integers(0, 3))],
                 " ".join(rng.choice(WORDS, 2)), 0) for _ in range(10)], 0, 0)
              for _ in range(4)]
    cb = drive(stream, 10, 3, 0, True)
    before = cb.rank_files(9, 0), cb.rank_tools(6, 0)
    cb.state = K.grow(cb.state, files=100, tools=50, sessions=20, terms=300,
                      file_entries=5000, tool_entries=5000, pairs=5000, transitions=500,
                      seen=1000)
    assert (cb.rank_files(9, 0), cb.rank_tools(6, 0)) == before


@jit(cache=False)  # a cached caller would keep stale kernel code: numba's cache of a
def _jitted_driver(B, session, n_universe, tools, files, out):  # function ignores edits
    """Kernels called from jitted code: one tool event per file, then a ranking. (Runtime
    values, not literals, as arguments: the kernels' cached overloads are reused.)"""
    total = 0
    none = np.zeros(0, np.int64)
    new = np.zeros(1, np.bool_)
    ptr = np.zeros(2, np.int64)
    for i in range(files.shape[0]):
        total += K.tool_event(B, session, tools[i], new[0], none, files[i:i + 1], new, ptr,
                                 none, none)
        lens = K.rank_files(B, n_universe, out.shape[1], out)
        total += lens[0]
    return total


def test_kernels_are_callable_from_jitted_code():
    B = K.new_state()
    assert K.begin_task(B, _ids(), 3, 2) == K.OK
    out = np.empty((4, 3), np.int64)
    total = _jitted_driver(B, 0, 3, _ids(0, 1, 0, 1), _ids(2, 0, 1, 0), out)
    assert total == 1 + 2 + 3 + 3
    assert out[0].tolist() == [0, 1, 2] and out[1].tolist() == [0, 2, 1]
    assert list(K.rank_tools(B, 2, 3, out)) == [2, 2, 0, 0]
    assert out[1].tolist() == [0, 1, -1]
