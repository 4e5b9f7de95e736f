"""Kernels against their references (tests/reference.py), hand-computed cases, the paper's
reference figures, batch invariance, and the array contract (no mutation of inputs,
read-only inputs accepted). Run once more with ``NUMBA_DISABLE_JIT=1``.
"""

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from brainbox import kernels as K
from brainbox.eval.reference import kernels as R
from brainbox.kernels.hebbian import GATE_MEMO

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
G0 = 1.0 / (1.0 + math.exp(-4.0))  # gate of a new edge, g(0) = 0.98201379


def ro(a):
    """A read-only copy, as np.frombuffer gives for a SQLite blob."""
    a = np.ascontiguousarray(a)
    return np.frombuffer(a.tobytes(), dtype=a.dtype).reshape(a.shape)


def copy_args(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def assert_same(got, want):
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        if isinstance(g, np.ndarray):
            np.testing.assert_array_equal(g, w, err_msg=f"argument {i}")


# --- Hebbian state -------------------------------------------------------------------------


class State:
    """Engine-shaped state for fold_touches: nodes, windows, hash, edges."""

    FIELDS = ("kind", "n", "m", "act", "last", "hist", "hist_len", "deg", "win", "win_len",
              "hkeys", "hslot", "esrc", "edst", "ew", "ecount", "etime", "n_edges")

    def __init__(self, n_nodes, n_sess, edges=64, slots=128, kind=None):
        self.kind = np.zeros(n_nodes, np.int8) if kind is None else np.asarray(kind, np.int8)
        self.n = np.zeros(n_nodes, np.int64)
        self.m = np.zeros(n_nodes)
        self.act = np.zeros(n_nodes)
        self.last = np.zeros(n_nodes)
        self.hist = np.zeros((n_nodes, K.HIST))
        self.hist_len = np.zeros(n_nodes, np.int64)
        self.deg = np.zeros(n_nodes, np.int64)
        self.win = np.zeros((n_sess, K.WINDOW), np.int64)
        self.win_len = np.zeros(n_sess, np.int64)
        self.hkeys = np.full(slots, -1, np.int64)
        self.hslot = np.zeros(slots, np.int64)
        self.esrc = np.zeros(edges, np.int64)
        self.edst = np.zeros(edges, np.int64)
        self.ew = np.zeros(edges, np.float32)
        self.ecount = np.zeros(edges, np.int64)
        self.etime = np.zeros(edges)
        self.n_edges = np.zeros(1, np.int64)

    def arrays(self):
        return [getattr(self, f) for f in self.FIELDS]

    def copy(self):
        other = object.__new__(State)
        for f in self.FIELDS:
            setattr(other, f, getattr(self, f).copy())
        return other

    def fold(self, sess, res, time, start=0, fn=None, memo=None):
        fn = fn or K.fold_touches
        memo_arg = () if memo is None else (None, None, memo)  # after rtop, rtop_n
        return fn(np.asarray(sess, np.int64), np.asarray(res, np.int64),
                  np.asarray(time, np.float64), start, *self.arrays(), *memo_arg)

    def grow(self):
        """What the engine does when fold_touches stops early: double, rebuild the hash."""
        for f in ("esrc", "edst", "ew", "ecount", "etime"):
            a = getattr(self, f)
            setattr(self, f, np.concatenate([a, np.zeros(max(len(a), K.RESERVE), a.dtype)]))
        slots = 2 * len(self.hkeys)
        while slots // 2 < len(self.esrc):
            slots *= 2
        self.hkeys = np.full(slots, -1, np.int64)
        self.hslot = np.zeros(slots, np.int64)
        K.rebuild_hash(self.esrc, self.edst, int(self.n_edges[0]), self.hkeys, self.hslot)

    def fold_all(self, sess, res, time, cuts=(), memo=None):
        """Fold in batches split at ``cuts``, growing whenever the kernel stops early;
        ``memo``: one gate memo kept across the calls (as the replay keeps one)."""
        bounds = [0, *sorted(cuts), len(res)]
        for lo, hi in itertools.pairwise(bounds):
            i = 0
            while i < hi - lo:
                i = self.fold(sess[lo:hi], res[lo:hi], time[lo:hi], i, memo=memo)
                if i < hi - lo:
                    self.grow()

    def weight(self, src, dst):
        e = K.find_edge(self.hkeys, self.hslot, src, dst)
        return None if e < 0 else float(self.ew[e])

    def edges(self):
        n = int(self.n_edges[0])
        return {(int(s), int(d)): (float(w), int(c), float(t)) for s, d, w, c, t in zip(
            self.esrc[:n], self.edst[:n], self.ew[:n], self.ecount[:n], self.etime[:n])}


def assert_hash_consistent(state):
    n = int(state.n_edges[0])
    assert (state.hkeys != -1).sum() == n
    for e in range(n):
        assert K.find_edge(state.hkeys, state.hslot, state.esrc[e], state.edst[e]) == e


def co_access(sessions):
    """Touches of ``sessions`` distinct sessions, each touching A (0) then B (1)."""
    sess = np.repeat(np.arange(sessions), 2)
    res = np.tile([0, 1], sessions)
    return sess, res, np.arange(2 * sessions, dtype=np.float64)


@pytest.mark.parametrize("sessions, weight", [(1, 0.098), (5, 0.379), (20, 0.663)])
def test_one_co_access_per_session_gives_the_papers_reference_weights(sessions, weight):
    state = State(2, sessions)
    assert state.fold(*co_access(sessions)) == 2 * sessions
    assert round(state.weight(0, 1), 3) == weight
    assert state.edges()[(0, 1)][1] == sessions


def step(w, delta):
    """One gated step from weight w with delta = eta p h d, written out from DESIGN §4.1."""
    return min(1.0, w + delta / (1.0 + math.exp(8.0 * (w - 0.5))) * (1.0 - w))


def test_three_touches_then_a_return_in_one_session_by_hand():
    state = State(3, 1)
    state.fold([0, 0, 0], [0, 1, 2], [10.0, 11.0, 12.0])
    edges = state.edges()
    # creation order: A->B, B->A (touch B); A->C, C->A, B->C, C->B (touch C, window [A, B])
    assert list(edges) == [(0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1)]
    weights = [0.0982014, 0.0491007, 0.0491007, 0.0245503, 0.0982014, 0.0491007]
    assert [w for w, _, _ in edges.values()] == pytest.approx(weights, abs=1e-7)
    assert [(c, t) for _, c, t in edges.values()] == [(1, 11.0)] * 2 + [(1, 12.0)] * 4

    # A again: window [B, C] without A; B has p = 1/2, C has p = 1
    state.fold([0], [0], [13.0])
    edges = state.edges()
    assert edges[(1, 0)][0] == pytest.approx(step(0.0491007, 0.05), abs=1e-7)
    assert edges[(0, 1)][0] == pytest.approx(step(0.0982014, 0.025), abs=1e-7)
    assert edges[(2, 0)][0] == pytest.approx(step(0.0245503, 0.1), abs=1e-7)
    assert edges[(0, 2)][0] == pytest.approx(step(0.0491007, 0.05), abs=1e-7)
    assert edges[(1, 2)] == pytest.approx((0.0982014, 1, 12.0))
    assert edges[(2, 0)][1:] == (2, 13.0)
    assert state.deg.tolist() == [2, 2, 2]
    assert state.n.tolist() == [2, 1, 1]
    assert state.m.tolist() == [0.02, 0.0, 0.0]  # 0.02 (1 - 0) max(1/sqrt(1), 0.1)
    assert state.act.tolist() == [1.0, 1.0, 1.0]
    assert state.hist_len.tolist() == [2, 1, 1]
    assert state.hist[0, :2].tolist() == [10.0, 13.0]
    assert state.last.tolist() == [13.0, 11.0, 12.0]
    assert state.win[0, :3].tolist() == [1, 2, 0] and state.win_len[0] == 3


def test_a_hub_halves_the_step_and_an_error_doubles_it():
    hub = State(2, 1)
    hub.deg[0] = 21
    hub.fold([0, 0], [0, 1], [0.0, 1.0])
    assert hub.weight(0, 1) == pytest.approx(0.05 * G0, rel=1e-6)
    error = State(2, 1, kind=[0, 2])
    error.fold([0, 0], [0, 1], [0.0, 1.0])
    assert error.weight(0, 1) == pytest.approx(0.2 * G0, rel=1e-6)
    assert error.weight(1, 0) == pytest.approx(0.1 * G0, rel=1e-6)


def test_the_window_keeps_25_distinct_resources():
    state = State(40, 1, edges=4096, slots=8192)
    state.fold(np.zeros(30, np.int64), np.arange(30), np.arange(30.0))
    assert state.win_len[0] == 25
    assert state.win[0].tolist() == list(range(5, 30))
    # touch 29 learns from the 25 before it, 4..28, the oldest with p = 1/25
    assert state.weight(3, 29) is None
    assert state.weight(4, 29) == pytest.approx(0.1 / 25 * G0 * 0.5, rel=1e-6)  # h: deg 4 > 20


def test_repeated_touches_of_one_resource_create_no_self_loop():
    state = State(1, 1)
    state.fold([0, 0, 0], [0, 0, 0], [0.0, 1.0, 2.0])
    assert state.n_edges[0] == 0 and state.n[0] == 3 and state.win_len[0] == 1


def test_fold_stops_before_a_touch_that_could_overflow_the_edges():
    assert State(2, 1, edges=49).fold(*co_access(1)) == 0
    assert State(2, 1, edges=64, slots=64).fold(*co_access(1)) == 0  # load would pass 1/2
    state = State(2, 1, edges=50, slots=128)
    assert state.fold(*co_access(1)) == 2  # 0 + 50 <= 50 before each touch: both go
    # now 2 + 50 > 50: stop before touch 1 even though it would only revisit edges
    assert state.fold([0, 0], [1, 0], [5.0, 6.0], start=1) == 1
    assert state.n[1] == 1 and state.n_edges[0] == 2


@st.composite
def fold_workloads(draw):
    n_nodes = draw(st.integers(1, 40))
    n_sess = draw(st.integers(1, 5))
    n_touch = draw(st.integers(0, 160))
    # small pools repeat resources, the full set makes hubs
    pool = draw(st.just(n_nodes) | st.integers(1, n_nodes))
    res = draw(st.lists(st.integers(0, pool - 1), min_size=n_touch, max_size=n_touch))
    sess = draw(st.lists(st.integers(0, n_sess - 1), min_size=n_touch, max_size=n_touch))
    time = np.cumsum(draw(st.lists(st.floats(0, 1e6), min_size=n_touch, max_size=n_touch)))
    kind = draw(st.lists(st.integers(0, 2), min_size=n_nodes, max_size=n_nodes))
    return n_nodes, n_sess, np.array(sess, np.int64), np.array(res, np.int64), time, kind


extreme_weights = st.sampled_from([0.0, 1e-30, 0.05, 0.4999, 0.5, 0.999999, 1.0]) | st.floats(
    0, 1, width=32)


@SETTINGS
@given(work=fold_workloads(), data=st.data())
def test_fold_touches_matches_reference(work, data):
    n_nodes, n_sess, sess, res, time, kind = work
    edges = data.draw(st.sampled_from([0, 10, 60, 200, 4096, 4096]))
    slots = 1 << (2 * max(edges, 1) - 1).bit_length()  # a power of two >= 2 * edges
    state = State(n_nodes, n_sess, edges=edges, slots=slots, kind=kind)
    # a prior state: old edges of extreme weight, old counts, and a prefix already folded
    old = data.draw(st.lists(st.tuples(st.integers(0, n_nodes - 1), st.integers(
        0, n_nodes - 1), extreme_weights), max_size=min(edges, 8), unique_by=lambda e: e[:2]))
    for e, (s, d, w) in enumerate(old):
        state.esrc[e], state.edst[e], state.ew[e] = s, d, w
        state.deg[s] += 1
    state.n_edges[0] = len(old)
    state.n[:] = data.draw(st.sampled_from([0, 1, 2**40]))
    state.m[:] = data.draw(st.sampled_from([0.0, 0.5, 0.95]))
    state.hist_len[:] = data.draw(st.sampled_from([0, 49, 1000]))
    K.rebuild_hash(state.esrc, state.edst, len(old), state.hkeys, state.hslot)
    start = data.draw(st.integers(0, len(res)))
    start = state.fold(sess[:start], res[:start], time[:start])

    ref = state.copy()
    got = state.fold(sess, res, time, start)
    want = ref.fold(sess, res, time, start, fn=R.fold_touches)
    assert got == want
    event("stopped early" if got < len(res) else "ran to the end")
    event("hub (deg > 20)" if state.deg.max(initial=0) > 20 else "no hub")
    skip = {"hkeys", "hslot"}  # the reference keeps no hash table
    assert_same([getattr(state, f) for f in State.FIELDS if f not in skip],
                [getattr(ref, f) for f in State.FIELDS if f not in skip])
    assert_hash_consistent(state)


@pytest.mark.parametrize("n_nodes, n_sess, n_touch", [(60, 3, 1500), (400, 300, 3000)])
def test_fold_touches_matches_reference_with_hubs_and_many_sessions(n_nodes, n_sess, n_touch):
    rng = np.random.default_rng(n_sess)
    kind = rng.choice(3, n_nodes, p=[0.8, 0.15, 0.05])
    sess = np.sort(rng.integers(0, n_sess, n_touch))  # sessions mostly one after another
    sess[rng.random(n_touch) < 0.1] = rng.integers(0, n_sess)  # some interleaving
    res = (sess * 7 + rng.geometric(0.05, n_touch)) % n_nodes  # clustered per session
    time = np.arange(n_touch, dtype=np.float64)
    state = State(n_nodes, n_sess, edges=1 << 16, slots=1 << 17, kind=kind)
    ref = state.copy()
    assert state.fold(sess, res, time) == ref.fold(sess, res, time, fn=R.fold_touches)
    assert state.deg.max() > 20
    assert_same(state.arrays()[:10] + state.arrays()[12:], ref.arrays()[:10] + ref.arrays()[12:])


def test_the_engine_hash_layout_and_the_gate_memo_change_no_bit():
    """The engine passes hkeys/hslot as the two columns of one int64[H, 2] (strided views),
    and fold_touches remembers gate values of weights it has seen; a long fold in which
    weights saturate (so the memo answers most gates), in batches and in the engine layout,
    equals the contiguous one-call fold, table included, and the reference."""
    from brainbox.state import State as Engine

    rng = np.random.default_rng(7)
    n_touch = 30_000  # 4 resources, one session: every edge gets ~7,500 steps
    sess = np.zeros(n_touch, np.int64)
    res = rng.integers(0, 4, n_touch)
    time = np.arange(n_touch, dtype=np.float64)
    plain = State(4, 1, edges=64, slots=128, kind=[0, 1, 2, 0])
    ref = plain.copy()
    engine = plain.copy()
    engine.hkeys, engine.hslot = Engine.hash_table(128)
    assert not engine.hkeys.flags.c_contiguous and engine.hkeys.base is engine.hslot.base
    assert plain.fold(sess, res, time) == ref.fold(sess, res, time, fn=R.fold_touches)
    engine.fold_all(sess, res, time, cuts=[1000, 17_000])
    assert_same(plain.arrays()[:10] + plain.arrays()[12:], ref.arrays()[:10] + ref.arrays()[12:])
    assert_same(engine.arrays()[:11] + engine.arrays()[12:],
                plain.arrays()[:11] + plain.arrays()[12:])  # the same table, key for key
    used = plain.hkeys != -1
    np.testing.assert_array_equal(engine.hslot[used], plain.hslot[used])
    assert_hash_consistent(engine)
    # the weights have stopped moving (a step rounds back to the same float32), so by now
    # nearly every gate came from the memo
    more = plain.copy()
    more.fold(sess[:200], res[:200], time[:200] + n_touch)
    n = int(plain.n_edges[0])
    assert n == 12 and (more.ecount[:n] > plain.ecount[:n]).all()
    np.testing.assert_array_equal(more.ew, plain.ew)


@SETTINGS
@given(work=fold_workloads(), data=st.data())
def test_fold_in_batches_with_growth_equals_one_call(work, data):
    n_nodes, n_sess, sess, res, time, kind = work
    whole = State(n_nodes, n_sess, edges=8192, slots=16384, kind=kind)
    assert whole.fold(sess, res, time) == len(res)
    cuts = data.draw(st.lists(st.integers(0, len(res)), max_size=6))
    pieces = State(n_nodes, n_sess, edges=data.draw(st.integers(0, 60)), slots=2, kind=kind)
    memo = np.full((GATE_MEMO, 2), np.nan) if data.draw(st.booleans()) else None
    pieces.fold_all(sess, res, time, cuts, memo)
    n = int(whole.n_edges[0])
    assert pieces.n_edges[0] == n
    for f in State.FIELDS:
        if f not in ("hkeys", "hslot", "esrc", "edst", "ew", "ecount", "etime", "n_edges"):
            np.testing.assert_array_equal(getattr(pieces, f), getattr(whole, f), err_msg=f)
    for f in ("esrc", "edst", "ew", "ecount", "etime"):
        np.testing.assert_array_equal(getattr(pieces, f)[:n], getattr(whole, f)[:n], err_msg=f)
    assert_hash_consistent(pieces)


def test_rebuild_hash_reproduces_the_incremental_table_and_find_edge_misses_cleanly():
    state = State(30, 3, edges=4096, slots=8192)
    rng = np.random.default_rng(0)
    state.fold(rng.integers(0, 3, 500), rng.integers(0, 30, 500), np.arange(500.0))
    hkeys, hslot = state.hkeys.copy(), state.hslot.copy()
    K.rebuild_hash(state.esrc, state.edst, int(state.n_edges[0]), state.hkeys, state.hslot)
    np.testing.assert_array_equal(state.hkeys, hkeys)
    np.testing.assert_array_equal(state.hslot[hkeys != -1], hslot[hkeys != -1])
    assert K.find_edge(state.hkeys, state.hslot, 0, 0) == -1
    assert K.find_edge(state.hkeys, state.hslot, 2**31 - 1, 12345) == -1
    full = np.arange(4, dtype=np.int64)  # a full table without the key must not hang
    assert K.find_edge(full, full, 7, 7) == -1


@SETTINGS
@given(pairs=st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1)),
                      max_size=40, unique=True), extra=st.integers(0, 3))
def test_rebuild_hash_and_find_edge_match_reference(pairs, extra):
    esrc = np.array([p[0] for p in pairs], np.int64)
    edst = np.array([p[1] for p in pairs], np.int64)
    slots = 1 << (max(len(pairs), 1) * 2 - 1).bit_length() + extra
    got = [esrc, edst, len(pairs), np.zeros(slots, np.int64), np.zeros(slots, np.int64)]
    want = copy_args(got)
    K.rebuild_hash(*got)
    R.rebuild_hash(*want)
    assert R.hash_mapping(got[3], got[4]) == R.hash_mapping(want[3], want[4])
    for s, d in [*pairs, (0, 1), (5, 5)]:
        assert K.find_edge(got[3], got[4], s, d) == R.find_edge(want[3], want[4], s, d)


# --- maintenance -----------------------------------------------------------------------------


def test_one_day_of_decay_by_hand():
    act, m = np.array([1.0, 0.5]), np.array([0.2, 0.0])
    ew = np.array([1.0, 0.05, 0.0510, 0.7], np.float32)
    keep = np.ones(4, np.bool_)
    K.decay_state(act, m, ew, 3, 1.0, keep)
    assert act.tolist() == [0.85, 0.425]
    assert m.tolist() == [0.2 * 0.995, 0.0]
    assert ew.tolist() == pytest.approx([0.98, 0.049, 0.04998, 0.7], abs=1e-7)
    assert keep.tolist() == [True, False, False, True]  # entry 3 is past n_edges: untouched


@SETTINGS
@given(data=st.data())
def test_decay_and_compaction_match_reference(data):
    n_nodes = data.draw(st.integers(0, 20))
    n_edges = data.draw(st.integers(0, 30))
    cap = n_edges + data.draw(st.integers(0, 5))
    act = np.array(data.draw(st.lists(st.floats(0, 1), min_size=n_nodes, max_size=n_nodes)))
    m = np.array(data.draw(st.lists(st.floats(0, 0.95), min_size=n_nodes, max_size=n_nodes)))
    ew = np.array(data.draw(st.lists(extreme_weights, min_size=cap, max_size=cap)), np.float32)
    days = data.draw(st.sampled_from([0.0, 1.0, 0.5, 30.0, 1e-9]) | st.floats(0, 400))
    got = [act, m, ew, n_edges, days, np.ones(cap, np.bool_)]
    want = copy_args(got)
    assert K.decay_state(*got) is None and R.decay_state(*want) is None
    assert_same(got, want)

    keep = got[-1]
    esrc = np.array(data.draw(st.lists(st.integers(0, max(n_nodes - 1, 0)), min_size=cap,
                                       max_size=cap)), np.int64) if n_nodes else np.zeros(
        cap, np.int64)
    deg = np.bincount(esrc[:n_edges], minlength=max(n_nodes, 1)).astype(np.int64)
    got = [keep, esrc, esrc[::-1].copy(), ew, np.arange(cap, dtype=np.int64),
           np.arange(cap) * 1.5, deg, n_edges]
    want = copy_args(got)
    assert K.compact_edges(*got) == R.compact_edges(*want) == keep[:n_edges].sum()
    assert_same(got, want)


def test_pruning_then_folding_continues_consistently():
    state = State(10, 1, edges=4096, slots=8192)
    rng = np.random.default_rng(1)
    state.fold(np.zeros(200, np.int64), rng.integers(0, 10, 200), np.arange(200.0))
    keep = np.zeros(len(state.ew), np.bool_)
    K.decay_state(state.act, state.m, state.ew, int(state.n_edges[0]), 60.0, keep)
    n = K.compact_edges(keep, state.esrc, state.edst, state.ew, state.ecount, state.etime,
                        state.deg, int(state.n_edges[0]))
    state.n_edges[0] = n
    assert 0 < n and (state.ew[:n] >= 0.05).all()
    np.testing.assert_array_equal(state.deg, np.bincount(state.esrc[:n], minlength=10))
    K.rebuild_hash(state.esrc, state.edst, n, state.hkeys, state.hslot)
    ref = state.copy()
    touches = np.zeros(50, np.int64), rng.integers(0, 10, 50), np.arange(200.0, 250.0)
    assert state.fold(*touches) == ref.fold(*touches, fn=R.fold_touches) == 50
    assert state.edges() == ref.edges()
    assert_hash_consistent(state)


# --- spreading activation ----------------------------------------------------------------


def csr(n_nodes, rows, index_dtype=np.int64, ptr_dtype=np.int64):
    """CSR arrays from {row: {col: weight}}."""
    indptr, indices, data = [0], [], []
    for u in range(n_nodes):
        for v, w in sorted(rows.get(u, {}).items()):
            indices.append(v)
            data.append(w)
        indptr.append(len(indices))
    return (np.array(indptr, ptr_dtype), np.array(indices, index_dtype),
            np.array(data, np.float32))


def run_spread(fn, graph, n_nodes, seeds, seed_act, m=None, blocked=(), hops=3, topk=10,
               w_floor=0.0, a_floor=0.0):
    m = np.zeros(n_nodes) if m is None else np.asarray(m, np.float64)
    is_blocked = np.zeros(n_nodes, np.bool_)
    is_blocked[list(blocked)] = True
    act, parent = np.full(n_nodes, 7.0), np.full(n_nodes, 7, np.int64)
    visits = fn(*graph, np.asarray(seeds, np.int64), np.asarray(seed_act, np.float64), m,
                is_blocked, hops, topk, w_floor, a_floor, act, parent)
    return act, parent, visits


def test_spread_on_a_tiny_graph_by_hand():
    # 0 -> 1 (0.5), 0 -> 2 (0.8), 0 -> 3 tool (1.0); 2 -> 4 (0.5); 4 -> 0 (1.0)
    rows = {0: {1: 0.5, 2: 0.8, 3: 1.0}, 2: {4: 0.5}, 4: {0: 1.0}}
    graph = csr(5, rows)
    act, parent, visits = run_spread(K.spread_csr, graph, 5, [0], [1.0], m=[0, 0, 0.8, 0, 0],
                                     blocked=[3])
    s3 = 1 / math.sqrt(3)  # row 0 stores three entries, the blocked one included
    assert act.tolist() == pytest.approx([1.0, 0.5 * s3, 0.8 * s3 * 1.5, 0.0,
                                          0.8 * s3 * 1.5 * 0.5])
    assert parent.tolist() == [-1, 0, 0, -1, 2]
    assert visits == 2 + 1 + 1  # 4 -> 0 is followed but 0.69 does not beat 1.0


def test_spread_keeps_the_best_path_not_the_sum_and_honours_floors_and_topk():
    rows = {0: {2: 0.9}, 1: {2: 0.2, 3: 0.2, 4: 0.2}}
    graph = csr(5, rows)
    act, parent, _ = run_spread(K.spread_csr, graph, 5, [0, 1, 1], [0.5, 0.1, 1.0])
    assert act[2] == pytest.approx(max(0.5 * 0.9, 1.0 * 0.2 / math.sqrt(3)))
    assert parent[2] == 0 and act[1] == 1.0  # a repeated seed keeps its largest activation
    act, _, visits = run_spread(K.spread_csr, graph, 5, [1], [1.0], topk=2)
    assert act[2] > 0 and act[3] > 0 and act[4] == 0 and visits == 2  # ties: lower column
    act, _, visits = run_spread(K.spread_csr, graph, 5, [0, 1], [1.0, 1.0], w_floor=0.5)
    assert visits == 1 and act[3] == 0
    act, _, _ = run_spread(K.spread_csr, graph, 5, [0, 1], [1.0, 1.0], a_floor=0.2)
    assert act[3] == 0 and act[2] == pytest.approx(0.9)


def test_spread_never_expands_a_node_twice_and_ignores_self_loops():
    rows = {0: {0: 1.0, 1: 1.0}, 1: {0: 1.0}}
    act, parent, visits = run_spread(K.spread_csr, csr(2, rows), 2, [0], [1.0], m=[0.5, 0.5])
    # row 0 has 2 entries: 0 -> 1 gives 1.5 / sqrt(2); row 1 has 1: 1 -> 0 gives
    # 1.5 / sqrt(2) * 1.5 > 1, so 0 improves (and gets 1 as parent) but is not re-expanded
    assert act.tolist() == pytest.approx([2.25 / math.sqrt(2), 1.5 / math.sqrt(2)])
    assert parent.tolist() == [1, 0] and visits == 2


def test_spread_with_no_seeds_or_no_hops_returns_only_the_seeds():
    graph = csr(3, {0: {1: 1.0}})
    act, parent, visits = run_spread(K.spread_csr, graph, 3, [], [])
    assert act.tolist() == [0, 0, 0] and parent.tolist() == [-1, -1, -1] and visits == 0
    act, parent, visits = run_spread(K.spread_csr, graph, 3, [0, 2], [0.3, 0.4], hops=0,
                                     blocked=[2])
    assert act.tolist() == [0.3, 0, 0] and visits == 0  # a blocked seed is dropped


@st.composite
def graphs(draw):
    n_nodes = draw(st.integers(0, 14))
    rows = {}
    for u in range(n_nodes):
        cols = draw(st.sets(st.integers(0, n_nodes - 1), max_size=n_nodes))  # self-loops too
        rows[u] = {v: draw(extreme_weights | st.sampled_from([3.0, 1e30])) for v in cols}
    dtype = draw(st.sampled_from([np.int32, np.int64]))  # scipy's two index types
    return n_nodes, csr(n_nodes, rows, dtype, dtype)


def draw_spread_args(data, seeds, n_nodes):
    """``run_spread``'s keyword arguments for ``seeds`` on a graph of ``n_nodes``."""
    node = st.integers(0, max(n_nodes - 1, 0))
    return {
        "seed_act": data.draw(st.lists(st.floats(0, 2), min_size=len(seeds),
                                       max_size=len(seeds))),
        "m": data.draw(st.lists(st.floats(0, 0.95), min_size=n_nodes, max_size=n_nodes)),
        "blocked": data.draw(st.sets(node, max_size=n_nodes)),
        "hops": data.draw(st.integers(0, 4)),
        "topk": data.draw(st.integers(0, 5)),
        "w_floor": data.draw(st.sampled_from([0.0, 1e-6, 0.3])),
        "a_floor": data.draw(st.sampled_from([0.0, 1e-3, 0.1])),
    }


@SETTINGS
@given(g=graphs(), data=st.data())
def test_spread_matches_reference(g, data):
    n_nodes, graph = g
    node = st.integers(0, max(n_nodes - 1, 0))
    seeds = data.draw(st.lists(node, max_size=6 if n_nodes else 0))
    kw = draw_spread_args(data, seeds, n_nodes)
    act, parent, visits = run_spread(K.spread_csr, graph, n_nodes, seeds, **kw)
    r_act, r_parent, r_visits = run_spread(R.spread_csr, graph, n_nodes, seeds, **kw)
    assert visits == r_visits <= len(set(seeds)) * sum(kw["topk"] ** h for h in range(1, 5))
    np.testing.assert_array_equal(act, r_act)
    np.testing.assert_array_equal(parent, r_parent)
    assert not act[list(kw["blocked"])].any()


def shuffled_adjacency(graph, n_nodes, rng, gap=3):
    """The CSR ``graph`` as a pooled adjacency: rows shuffled, blocks in random node order
    with gaps of garbage between them, and the weights at permuted edge indices."""
    indptr, indices, data = graph
    nnz = len(indices)
    perm = rng.permutation(nnz)  # entry q of the CSR becomes edge perm[q]
    ew = np.full(nnz + 2, 9.0, np.float32)  # edges past the used ones are never read
    ew[perm] = data
    size = nnz + gap * (n_nodes + 1)
    pool_dst = rng.integers(0, max(n_nodes, 1), size).astype(indices.dtype)
    pool_e = np.full(size, nnz + 1, np.int64)
    adj_off = np.zeros(n_nodes, indptr.dtype)
    adj_len = np.zeros(n_nodes, indptr.dtype)
    base = int(rng.integers(0, gap + 1))
    for u in rng.permutation(n_nodes):
        row = rng.permutation(np.arange(indptr[u], indptr[u + 1]))
        adj_off[u], adj_len[u] = base, row.size
        pool_dst[base: base + row.size] = indices[row]
        pool_e[base: base + row.size] = perm[row]
        base += row.size + int(rng.integers(0, gap + 1))
    return adj_off, adj_len, pool_dst, pool_e, ew


@st.composite
def tie_graphs(draw):
    """Graphs whose weights take few values, so the top-k meets many ties."""
    n_nodes = draw(st.integers(1, 14))
    weights = st.sampled_from([0.3, 0.5, 1.0])
    rows = {u: {v: draw(weights) for v in draw(st.sets(st.integers(0, n_nodes - 1)))}
            for u in range(n_nodes)}
    dtype = draw(st.sampled_from([np.int32, np.int64]))
    return n_nodes, csr(n_nodes, rows, dtype, dtype)


def test_spread_breaks_ties_by_lower_column_in_any_row_order():
    # row 1 lists equal weights in descending column order: still 2 and 3 are followed
    adj = (np.array([0, 0, 3], np.int64), np.array([0, 3, 0], np.int64),
           np.array([4, 3, 2], np.int64), np.array([0, 1, 2], np.int64))
    ew = np.full(3, 0.2, np.float32)
    args = (np.array([1]), np.array([1.0]), np.zeros(5), np.zeros(5, np.bool_), 1, 2, 0.0, 0.0)
    act, parent = np.zeros(5), np.zeros(5, np.int64)
    assert K.spread(*adj, ew, *args, act, parent) == 2
    assert (act > 0).tolist() == [False, True, True, True, False]
    assert parent.tolist() == [-1, -1, 1, 1, -1]


@SETTINGS
@given(g=graphs() | tie_graphs(), data=st.data())
def test_spread_over_a_shuffled_adjacency_matches_the_csr_reference(g, data):
    n_nodes, graph = g
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    adj = shuffled_adjacency(graph, n_nodes, rng)
    node = st.integers(0, max(n_nodes - 1, 0))
    seeds = data.draw(st.lists(node, max_size=6 if n_nodes else 0))
    kw = draw_spread_args(data, seeds, n_nodes)
    act, parent, visits = run_spread(K.spread, adj, n_nodes, seeds, **kw)
    r_act, r_parent, r_visits = run_spread(R.spread_csr, graph, n_nodes, seeds, **kw)
    assert visits == r_visits
    np.testing.assert_array_equal(act, r_act)
    np.testing.assert_array_equal(parent, r_parent)
    a_act, a_parent, a_visits = run_spread(R.spread, adj, n_nodes, seeds, **kw)
    assert a_visits == visits
    np.testing.assert_array_equal(a_act, act)
    np.testing.assert_array_equal(a_parent, parent)


# --- out-adjacency -------------------------------------------------------------------------


class Adjacency:
    """Engine-shaped adjacency: node arrays, pool, and the edges linked so far."""

    FIELDS = ("adj_off", "adj_len", "adj_cap", "pool_dst", "pool_e", "pool_used")

    def __init__(self, n_nodes, pool):
        self.adj_off = np.zeros(n_nodes, np.int64)
        self.adj_len = np.zeros(n_nodes, np.int64)
        self.adj_cap = np.zeros(n_nodes, np.int64)
        self.pool_dst = np.zeros(pool, np.int64)
        self.pool_e = np.zeros(pool, np.int64)
        self.pool_used = np.zeros(1, np.int64)
        self.linked = 0

    def arrays(self):
        return [getattr(self, f) for f in self.FIELDS]

    def link(self, esrc, edst, end, grow_by_rebuild=False, fn=None):
        """Link edges up to ``end``; when the pool is full, grow it (copying) or rebuild."""
        fn = fn or K.link_edges
        while self.linked < end:
            self.linked = fn(esrc, edst, self.linked, end, *self.arrays())
            if self.linked < end:
                if grow_by_rebuild:
                    self.rebuild(esrc, edst, self.linked, fn=R.rebuild_adjacency if fn is
                                 R.link_edges else K.rebuild_adjacency)
                else:
                    extra = max(len(self.pool_dst), 4)
                    self.pool_dst = np.concatenate([self.pool_dst, np.zeros(extra, np.int64)])
                    self.pool_e = np.concatenate([self.pool_e, np.zeros(extra, np.int64)])

    def rebuild(self, esrc, edst, n_edges, fn=None):
        fn = fn or K.rebuild_adjacency
        need = fn(esrc, edst, n_edges, *self.arrays())
        if need > len(self.pool_dst):
            assert self.pool_used[0] == 0 and not self.adj_len.any()  # left empty
        if need + max(need // 2, 4) > len(self.pool_dst):  # room for a new node's block
            self.pool_dst = np.zeros(max(2 * need, 8), np.int64)
            self.pool_e = np.zeros(max(2 * need, 8), np.int64)
            assert fn(esrc, edst, n_edges, *self.arrays()) == need
        self.linked = n_edges

    def rows(self, ew, n_nodes):
        return R.adjacency_rows(self.adj_off, self.adj_len, self.pool_dst, self.pool_e, ew,
                                n_nodes)

    def check_blocks(self, n_nodes):
        """Blocks lie inside the used pool and do not overlap."""
        used = int(self.pool_used[0])
        assert used <= len(self.pool_dst)
        spans = sorted((int(self.adj_off[u]), int(self.adj_cap[u])) for u in range(n_nodes)
                       if self.adj_cap[u] > 0)
        assert (self.adj_len <= self.adj_cap).all()
        for (a, ca), (b, _) in itertools.pairwise(spans):
            assert a + ca <= b
        assert not spans or spans[-1][0] + spans[-1][1] <= used


@st.composite
def edge_streams(draw):
    """Distinct edges in creation order over up to 12 nodes, with weights."""
    n_nodes = draw(st.integers(1, 12))
    pairs = draw(st.lists(st.tuples(st.integers(0, n_nodes - 1), st.integers(0, n_nodes - 1)),
                          unique=True, max_size=80))
    esrc = np.array([p[0] for p in pairs], np.int64)
    edst = np.array([p[1] for p in pairs], np.int64)
    ew = np.array(draw(st.lists(extreme_weights, min_size=len(pairs), max_size=len(pairs))),
                  np.float32)
    return n_nodes, esrc, edst, ew


def test_link_edges_moves_a_full_block_to_the_end_with_double_capacity():
    esrc = np.array([0, 1, 0, 0, 0, 0], np.int64)
    edst = np.array([1, 0, 2, 3, 4, 5], np.int64)
    adj = Adjacency(2, 16)
    assert K.link_edges(esrc, edst, 0, 5, *adj.arrays()) == 5
    assert adj.adj_off.tolist() == [0, 4] and adj.adj_cap.tolist() == [4, 4]
    assert adj.adj_len.tolist() == [4, 1] and adj.pool_used[0] == 8
    assert K.link_edges(esrc, edst, 5, 6, *adj.arrays()) == 6  # node 0 is full: 8 at 8
    assert adj.adj_off.tolist() == [8, 4] and adj.adj_cap.tolist() == [8, 4]
    assert adj.pool_dst[8:13].tolist() == [1, 2, 3, 4, 5]
    assert adj.pool_e[8:13].tolist() == [0, 2, 3, 4, 5] and adj.pool_used[0] == 16
    more = np.array([1] * 4, np.int64)
    assert K.link_edges(np.concatenate([esrc, more]), np.concatenate([edst, more]), 6, 10,
                        *adj.arrays()) == 9  # node 1's 4 slots fill, then no room to move
    assert adj.adj_len.tolist() == [5, 4] and adj.pool_used[0] == 16


@SETTINGS
@given(stream=edge_streams(), data=st.data())
def test_linked_rows_equal_the_csr_rows_in_any_batch_split(stream, data):
    n_nodes, esrc, edst, ew = stream
    n = len(esrc)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=6)))
    by_rebuild = data.draw(st.booleans())
    adj = Adjacency(n_nodes, data.draw(st.integers(0, 40)))
    ref = Adjacency(n_nodes, len(adj.pool_dst))
    for end in [*cuts, n]:
        adj.link(esrc, edst, end, by_rebuild)
        ref.link(esrc, edst, end, by_rebuild, fn=R.link_edges)
        assert_same(adj.arrays(), ref.arrays())  # the same layout, slot for slot
        assert adj.rows(ew, n_nodes) == R.csr_rows(esrc, edst, ew, end, n_nodes)
        adj.check_blocks(n_nodes)
    event("pool grew" if len(adj.pool_dst) > len(ref.pool_dst) or by_rebuild else "fixed pool")

    # prune some edges (order kept), rebuild, then link the rest of a longer stream
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), np.bool_)
    deg = np.bincount(esrc, minlength=n_nodes).astype(np.int64)
    etime = np.zeros(n)
    ecount = np.zeros(n, np.int64)
    k = K.compact_edges(keep, esrc, edst, ew, ecount, etime, deg, n)
    adj.rebuild(esrc, edst, k)
    assert adj.rows(ew, n_nodes) == R.csr_rows(esrc, edst, ew, k, n_nodes)
    assert adj.adj_len.tolist() == deg.tolist()
    adj.check_blocks(n_nodes)
    want = copy_args(adj.arrays())
    R.rebuild_adjacency(esrc, edst, k, *want)
    assert_same(adj.arrays(), want)
    seen = {(int(a), int(b)) for a, b in zip(esrc[:k], edst[:k])}
    fresh = [(a, b) for a in range(n_nodes) for b in range(n_nodes) if (a, b) not in seen]
    fresh = data.draw(st.lists(st.sampled_from(fresh), unique=True, max_size=20)) if fresh \
        else []
    esrc = np.concatenate([esrc[:k], np.array([a for a, _ in fresh], np.int64)])
    edst = np.concatenate([edst[:k], np.array([b for _, b in fresh], np.int64)])
    ew = np.concatenate([ew[:k], np.linspace(0, 1, len(fresh), dtype=np.float32)])
    adj.link(esrc, edst, len(esrc), by_rebuild)
    assert adj.rows(ew, n_nodes) == R.csr_rows(esrc, edst, ew, len(esrc), n_nodes)
    adj.check_blocks(n_nodes)


def test_rebuild_adjacency_leaves_an_empty_adjacency_when_the_pool_is_short():
    esrc = np.array([0, 0, 2], np.int64)
    edst = np.array([1, 2, 0], np.int64)
    adj = Adjacency(4, 5)
    adj.adj_len[:] = 3
    need = K.rebuild_adjacency(esrc, edst, 3, *adj.arrays())
    assert need == R.block_size(2) + R.block_size(1) == 11
    assert not adj.adj_len.any() and not adj.adj_cap.any() and adj.pool_used[0] == 0
    adj = Adjacency(4, 11)
    assert K.rebuild_adjacency(esrc, edst, 3, *adj.arrays()) == 11
    assert adj.adj_off.tolist() == [0, 6, 6, 11] and adj.adj_len.tolist() == [2, 0, 1, 0]
    assert adj.adj_cap.tolist() == [6, 0, 5, 0] and adj.pool_used[0] == 11
    assert adj.pool_dst[[0, 1, 6]].tolist() == [1, 2, 0] and adj.pool_e[[0, 1, 6]].tolist() == [
        0, 1, 2]


# --- fusion and base level -----------------------------------------------------------------


def test_rrf_fuse_by_hand():
    ranks = np.array([[1, 0, 3], [2, 1, 0]], np.int64)
    out = np.full(3, np.nan)
    K.rrf_fuse(ranks, np.array([4.0, 2.0]), np.array([[0.5, 1, 1], [1, 1, 1]]), 20.0, out)
    assert out.tolist() == pytest.approx([4 * 0.5 / 21 + 2 / 22, 2 / 21, 4 / 23])


@SETTINGS
@given(data=st.data())
def test_rrf_fuse_matches_reference(data):
    n_chan, n_cand = data.draw(st.integers(0, 7)), data.draw(st.integers(0, 30))
    dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    ranks = np.array(data.draw(st.lists(st.integers(0, n_cand), min_size=n_chan * n_cand,
                                        max_size=n_chan * n_cand)), dtype).reshape(
        n_chan, n_cand)
    lam = np.array(data.draw(st.lists(st.floats(0, 30), min_size=n_chan, max_size=n_chan)))
    gamma = np.array(data.draw(st.lists(st.floats(0, 1), min_size=n_chan * n_cand,
                                        max_size=n_chan * n_cand))).reshape(n_chan, n_cand)
    k = data.draw(st.sampled_from([0.5, 20.0, 60.0]))
    got, want = np.full(n_cand, np.nan), np.full(n_cand, np.nan)
    K.rrf_fuse(ranks, lam, gamma, k, got)
    R.rrf_fuse(ranks, lam, gamma, k, want)
    np.testing.assert_array_equal(got, want)


def test_ranks_from_scores_by_hand():
    scores = np.array([0.5, 2.0, 0.5, 9.0, np.nan, -np.inf])
    valid = np.array([True, True, True, False, True, True])
    assert K.ranks_from_scores(scores, valid).tolist() == [2, 1, 3, 0, 5, 4]
    assert K.ranks_from_scores(np.zeros(0), np.zeros(0, np.bool_)).tolist() == []


@SETTINGS
@given(data=st.data())
def test_ranks_from_scores_matches_reference(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    values = st.sampled_from([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan]) | st.floats(
        width=32, allow_nan=False)
    scores = np.array(data.draw(st.lists(values, max_size=40)), dtype)
    valid = np.array(data.draw(st.lists(st.booleans(), min_size=len(scores),
                                        max_size=len(scores))), np.bool_)
    got = K.ranks_from_scores(scores, valid)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, R.ranks_from_scores(scores, valid))


def test_base_level_by_hand():
    hist = np.zeros((3, K.HIST))
    hist[0, 0] = 0.0
    hist[1, :2] = [0.0, 3 * 3600.0]
    hist[2, :] = 4 * 3600.0 - 10  # 60 recorded, 50 kept, each 10 s old: counts as 1 minute
    out = np.full(4, np.nan)
    K.base_level(hist, np.array([1, 2, 60]), np.array([0, 1, 2, 0]), 4 * 3600.0, out)
    # node 0: one access 4 h ago, 4**-0.5; node 1: 4 h and 1 h ago
    assert out.tolist() == pytest.approx(
        [math.log(0.5), math.log(0.5 + 1.0), math.log(50 * math.sqrt(60)), math.log(0.5)])
    K.base_level(hist, np.zeros(3, np.int64), np.array([1]), 0.0, out)
    assert out[0] == -np.inf


@SETTINGS
@given(data=st.data())
def test_base_level_matches_reference(data):
    n_nodes = data.draw(st.integers(0, 8))
    hist = np.array(data.draw(st.lists(st.floats(0, 1e7), min_size=n_nodes * K.HIST,
                                       max_size=n_nodes * K.HIST))).reshape(n_nodes, K.HIST)
    hist_len = np.array(data.draw(st.lists(st.integers(0, 120), min_size=n_nodes,
                                           max_size=n_nodes)), np.int64)
    idx = np.array(data.draw(st.lists(st.integers(0, n_nodes - 1), max_size=12)
                             if n_nodes else st.just([])), np.int64)
    now = data.draw(st.floats(0, 2e7))
    got, want = np.full(len(idx), np.nan), np.full(len(idx), np.nan)
    K.base_level(hist, hist_len, idx, now, got)
    R.base_level(hist, hist_len, idx, now, want)
    np.testing.assert_array_equal(got, want)


# --- tool n-grams --------------------------------------------------------------------------


def test_encode_ctx_by_hand():
    assert K.encode_ctx(-1, -1, 4) == 5 * 2**40  # the newest tool takes the last slot
    assert K.encode_ctx(-1, 2, 4) == 3 * 2**20 + 5 * 2**40
    assert K.encode_ctx(0, 2, 4) == 1 + 3 * 2**20 + 5 * 2**40
    assert K.encode_ctx(-1, -1, -1) == 0


def test_ngram_pairs_by_hand():
    last3, last3_len = np.zeros((2, 3), np.int64), np.zeros(2, np.int64)
    ctx, nxt = np.zeros(15, np.int64), np.zeros(15, np.int64)
    count = K.ngram_pairs(np.array([0, 0, 1, 0, 0]), np.array([7, 8, 9, 7, 6]), last3,
                          last3_len, ctx, nxt)
    e = K.encode_ctx
    assert count == 6
    assert ctx[:6].tolist() == [e(-1, -1, 7),
                                e(-1, -1, 8), e(-1, 7, 8),
                                e(-1, -1, 7), e(-1, 8, 7), e(7, 8, 7)]
    assert nxt[:6].tolist() == [8, 7, 7, 6, 6, 6]
    assert last3.tolist() == [[8, 7, 6], [9, 0, 0]] and last3_len.tolist() == [3, 1]


@SETTINGS
@given(data=st.data())
def test_ngram_pairs_matches_reference_and_batches(data):
    n_sess = data.draw(st.integers(1, 4))
    n_calls = data.draw(st.integers(0, 60))
    sess = np.array(data.draw(st.lists(st.integers(0, n_sess - 1), min_size=n_calls,
                                       max_size=n_calls)), np.int64)
    tool = np.array(data.draw(st.lists(st.integers(0, 2**20 - 2), min_size=n_calls,
                                       max_size=n_calls)), np.int64)
    args = [sess, tool, np.zeros((n_sess, 3), np.int64), np.zeros(n_sess, np.int64),
            np.zeros(3 * n_calls, np.int64), np.zeros(3 * n_calls, np.int64)]
    want = copy_args(args)
    got = copy_args(args)
    assert K.ngram_pairs(*got) == R.ngram_pairs(*want)
    assert_same(got, want)

    cut = data.draw(st.integers(0, n_calls))
    state = copy_args(args)
    first = K.ngram_pairs(sess[:cut], tool[:cut], *state[2:])
    ctx, nxt = state[4][:first].copy(), state[5][:first].copy()
    second = K.ngram_pairs(sess[cut:], tool[cut:], *state[2:])
    np.testing.assert_array_equal(np.concatenate([ctx, state[4][:second]]), got[4][:first +
                                                                                   second])
    np.testing.assert_array_equal(np.concatenate([nxt, state[5][:second]]), got[5][:first +
                                                                                   second])
    np.testing.assert_array_equal(state[2], got[2])


# --- the array contract --------------------------------------------------------------------


def read_only_cases():
    """(kernel, args, positions of read-only inputs) for every kernel."""
    state = State(4, 2)
    touches = [np.array([0, 0, 1, 1]), np.array([0, 1, 2, 3]), np.arange(4.0)]
    fold = (K.fold_touches, [*touches, 0, *state.arrays()], [0, 1, 2, 4])
    done = State(4, 2)
    done.fold(*touches)
    n = int(done.n_edges[0])
    graph = csr(4, {0: {1: 0.5, 2: 0.9}, 1: {3: 1.0}}, np.int32, np.int32)
    # 0 -> 2 (edge 0), 1 -> 3 (edge 2), 0 -> 1 (edge 1): rows out of column order
    adj = (np.array([0, 3, 5, 5], np.int64), np.array([2, 1, 0, 0], np.int64),
           np.array([2, 1, 7, 3, 7], np.int64), np.array([0, 1, 7, 2, 7], np.int64))
    hist = np.arange(200.0).reshape(4, K.HIST)
    return [
        fold,
        (K.rebuild_hash, [done.esrc, done.edst, n, done.hkeys, done.hslot], [0, 1]),
        (K.find_edge, [done.hkeys, done.hslot, 0, 1], [0, 1]),
        (K.decay_state, [done.act, done.m, done.ew, n, 2.5, np.zeros(len(done.ew), bool)],
         []),
        (K.compact_edges, [done.ew > 0.06, done.esrc, done.edst, done.ew, done.ecount,
                           done.etime, done.deg, n], [0]),
        (K.spread_csr, [*graph, np.array([0, 1]), np.array([1.0, 0.5]), np.full(4, 0.2),
                        np.array([False, False, False, True]), 3, 10, 0.0, 0.0, np.zeros(4),
                        np.zeros(4, np.int64)], [0, 1, 2, 3, 4, 5, 6]),
        (K.spread, [*adj, np.array([0.9, 0.5, 1.0]), np.array([0, 1]), np.array([1.0, 0.5]),
                    np.full(4, 0.2), np.array([False, False, False, True]), 3, 10, 0.0, 0.0,
                    np.zeros(4), np.zeros(4, np.int64)], [0, 1, 2, 3, 4, 5, 6, 7, 8]),
        (K.link_edges, [done.esrc, done.edst, 0, n, *Adjacency(4, 40).arrays()], [0, 1]),
        (K.link_edges, [done.esrc, done.edst, 0, n, *Adjacency(4, 8).arrays()], [0, 1]),
        (K.rebuild_adjacency, [done.esrc, done.edst, n, *Adjacency(4, 64).arrays()], [0, 1]),
        (K.rebuild_adjacency, [done.esrc, done.edst, n, *Adjacency(4, 2).arrays()], [0, 1]),
        (K.rrf_fuse, [np.array([[1, 2], [0, 1]]), np.array([4.0, 1.0]), np.ones((2, 2)),
                      20.0, np.zeros(2)], [0, 1, 2]),
        (K.ranks_from_scores, [np.array([0.1, 0.3, 0.2]), np.array([True, False, True])],
         [0, 1]),
        (K.base_level, [hist, np.array([0, 1, 50, 99]), np.array([3, 1, 0]), 1e4,
                        np.zeros(3)], [0, 1, 2]),
        (K.ngram_pairs, [np.array([0, 0, 1, 0]), np.array([3, 4, 5, 6]),
                         np.zeros((2, 3), np.int64), np.zeros(2, np.int64),
                         np.zeros(12, np.int64), np.zeros(12, np.int64)], [0, 1]),
    ]


@pytest.mark.parametrize("kernel, args, inputs", read_only_cases(),
                         ids=lambda x: getattr(x, "__name__", ""))
def test_kernels_accept_read_only_inputs_and_leave_them_unchanged(kernel, args, inputs):
    plain = copy_args(args)
    frozen = [ro(a) if i in inputs else a for i, a in enumerate(copy_args(args))]
    before = [a.copy() for a in frozen if isinstance(a, np.ndarray)]
    assert all(not frozen[i].flags.writeable for i in inputs)
    got_plain = kernel(*plain)
    got_frozen = kernel(*frozen)
    if isinstance(got_plain, np.ndarray):
        np.testing.assert_array_equal(got_plain, got_frozen)
    else:
        assert got_plain == got_frozen
    assert_same(frozen, plain)  # same outputs either way
    for i in inputs:
        np.testing.assert_array_equal(frozen[i], before[sum(
            isinstance(a, np.ndarray) for a in frozen[:i])])
    want = copy_args(args)
    result = R.REFERENCES[kernel](*want)
    if kernel not in (K.rebuild_hash,):
        assert (np.array_equal(result, got_plain) if isinstance(result, np.ndarray)
                else result == got_plain)


def test_every_public_kernel_has_a_reference():
    """Public kernels have a plain reference here or in tests/reference_rank.py (recall's
    ranking and next-tool prediction; their property tests are in tests/test_rank.py). The
    count table (kernels/table.py) is a data structure, tested against a dict there."""
    from brainbox.eval.reference import rank as RR
    kernels = {getattr(K, name) for name in K.__all__ if callable(getattr(K, name))}
    # the compiled baselines (kernels.replay.baselines, not exported here) have
    # eval/baselines.py as their reference, compared call for call in
    # tests/test_baselines_fast.py
    assert kernels == set(R.REFERENCES) | set(RR.REFERENCES)


@SETTINGS
@given(g=graphs() | tie_graphs(), data=st.data())
def test_spread_with_reused_scratch_equals_a_fresh_spread(g, data):
    """``spread(..., work)`` (the replay's: arrays kept clean between calls, not cleared per
    call) gives a fresh call's activations and parents, lists exactly the nodes it wrote,
    and ``spread_clear`` leaves every array as it found it; over several calls in a row."""
    n_nodes, graph = g
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    adj = shuffled_adjacency(graph, n_nodes, rng)
    work = K.spread_work(n_nodes + 3)
    act, parent = np.zeros(n_nodes + 3), np.full(n_nodes + 3, -1, np.int64)
    node = st.integers(0, max(n_nodes - 1, 0))
    for _ in range(3):
        seeds = data.draw(st.lists(node, max_size=6 if n_nodes else 0))
        kw = draw_spread_args(data, seeds, n_nodes)
        r_act, r_parent, r_visits = run_spread(R.spread_csr, graph, n_nodes, seeds, **kw)
        m = np.zeros(n_nodes + 3)
        m[:n_nodes] = kw["m"]
        blocked = np.zeros(n_nodes + 3, np.bool_)
        blocked[list(kw["blocked"])] = True
        visits = K.spread(*adj, np.asarray(seeds, np.int64), np.asarray(kw["seed_act"]), m,
                          blocked, kw["hops"], kw["topk"], kw["w_floor"], kw["a_floor"], act,
                          parent, None, None, None, work)
        assert visits == r_visits
        np.testing.assert_array_equal(act[:n_nodes], r_act)
        np.testing.assert_array_equal(parent[:n_nodes], r_parent)
        reached = work.reached[: work.n_reached[0]]
        assert len(set(reached.tolist())) == reached.size
        written = set(np.flatnonzero((act != 0) | (parent != -1)).tolist())
        assert written <= set(reached.tolist()) <= written | set(seeds)
        K.spread_clear(work, act, parent)
        assert not act.any() and (parent == -1).all() and work.n_reached[0] == 0
        assert not (work.expanded.any() or work.queued.any() or work.mark.any())


def test_the_cache_hash_covers_the_replay_sub_package(tmp_path):
    """numba's cache is keyed by the kernels' source (``_cache.source_hash``): an edit in a
    module of a sub-package (``kernels/replay/``, whose loop compiles engine kernels into
    itself) changes the hash, as one in a top-level module does; the ``__init__`` modules,
    which compile nothing, do not."""
    import shutil

    from brainbox.kernels import _cache

    root = tmp_path / "kernels"
    shutil.copytree(_cache.HERE, root, ignore=shutil.ignore_patterns("__pycache__"))
    assert _cache.tree_hash(_cache.HERE) == _cache.source_hash() == _cache.tree_hash(root)
    before = _cache.tree_hash(root)
    (root / "replay" / "__init__.py").write_text('"""docstring only."""\n')
    assert _cache.tree_hash(root) == before
    loop = root / "replay" / "loop.py"
    loop.write_text(loop.read_text() + "\n# edited\n")
    after = _cache.tree_hash(root)
    assert after != before
    (root / "replay" / "loop.py").rename(root / "replay" / "moved.py")
    assert _cache.tree_hash(root) != after  # a module's path is part of the hash
    hebbian = root / "hebbian.py"
    hebbian.write_text(hebbian.read_text() + "\n# edited\n")
    assert _cache.tree_hash(root) not in (before, after)


def test_reciprocal_rank_is_one_rule_for_python_and_the_compiled_loop():
    """``kernels.scoring.reciprocal_rank``: 1 / (p + 1) at 0-based position p, 0 for none;
    the replay loop compiles the same function (``kernels.replay.loop.reciprocal_rank``)."""
    from brainbox.kernels import scoring
    from brainbox.kernels.replay import loop

    for p, want in ((0, 1.0), (1, 0.5), (3, 0.25), (9, 0.1), (-1, 0.0)):
        assert scoring.reciprocal_rank(p) == want
        assert loop.reciprocal_rank(p) == want


def test_no_kernels_module_is_named_like_an_exported_name():
    """A submodule import sets the package attribute of its name, which would shadow a
    lazily exported kernel of the same name (``K.spread`` was once the module)."""
    import pkgutil

    modules = {m.name for m in pkgutil.iter_modules(K.__path__)}
    assert not modules & set(K.__all__)
    import brainbox.kernels.rank  # noqa: F401  (loads spreading first)
    assert callable(K.spread)
