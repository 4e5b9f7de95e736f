"""Spreading's row lists: the heaviest out-edges per node, kept exact by the fold
(``kernels.hebbian.fold_touches`` / ``row_top_offer``), made from a row by
``row_top_build``, and read by ``kernels.spread`` instead of scanning the row.

The reference is a brute force over the edge arrays: every out-edge of the node to a
non-tool target other than itself, sorted by (weight desc, target asc), the first ROW_TOP;
each list entry is (edge, target, weight).
Run once more with ``NUMBA_DISABLE_JIT=1`` (Makefile)."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brainbox import kernels as K
from brainbox.eval.reference import kernels as R
from brainbox.kernels.hebbian import KIND_TOOL, row_top_build
from brainbox.recall import Index, Params, rank_args
from brainbox.state import State as Engine
from brainbox.workload import normalized

try:
    from tests.test_kernels import State, fold_workloads
except ImportError:  # pragma: no cover - tests/ on sys.path
    from test_kernels import State, fold_workloads

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def brute_row(esrc, edst, ew, n_edges, kind, u):
    """Edge indices of u's heaviest eligible out-edges, the reference order."""
    es = [e for e in range(n_edges) if esrc[e] == u and edst[e] != u and kind[edst[e]] != KIND_TOOL]
    es.sort(key=lambda e: (-float(ew[e]), int(edst[e])))
    return es[: K.ROW_TOP]


def assert_lists_exact(esrc, edst, ew, n_edges, kind, rtop, rtop_n):
    checked = 0
    for u in range(rtop_n.shape[0]):
        if rtop_n[u] < 0:
            continue
        got = rtop[u, : rtop_n[u]]
        es = got[:, 0].astype(np.int64)
        assert es.tolist() == brute_row(esrc, edst, ew, n_edges, kind, u), u
        assert got[:, 1].tolist() == edst[es].tolist()  # targets and weights kept alongside
        assert got[:, 2].tolist() == ew[es].astype(np.float64).tolist()
        checked += 1
    return checked


def csr_rows(esrc, n_edges, n_nodes):
    """The out-adjacency as row offsets into edge order (rows in any order work)."""
    order = np.argsort(esrc[:n_edges], kind="stable")
    counts = np.bincount(esrc[:n_edges], minlength=n_nodes)
    off = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return off, counts.astype(np.int64), order.astype(np.int64)


@SETTINGS
@given(work=fold_workloads(), data=st.data())
def test_the_fold_keeps_every_list_exact(work, data):
    """Lists made at random points (some rows never), then more folding: each list equals
    the brute force, ties of saturated weights included."""
    n_nodes, n_sess, sess, res, time, kind = work
    state = State(n_nodes, n_sess, edges=4096, slots=8192, kind=kind)
    rtop = np.zeros((n_nodes, K.ROW_TOP, 3))
    rtop_n = np.full(n_nodes, -1, np.int64)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(res)), max_size=4)))
    blocked = state.kind == KIND_TOOL
    lo = 0
    for hi in [*cuts, len(res)]:
        K.fold_touches(sess[lo:hi], res[lo:hi], time[lo:hi], 0, *state.arrays(), rtop, rtop_n)
        lo = hi
        ne = int(state.n_edges[0])
        off, ln, order = csr_rows(state.esrc, ne, n_nodes)
        for u in data.draw(st.lists(st.integers(0, max(n_nodes - 1, 0)), max_size=5)):
            row_top_build(off, ln, order, state.ew, state.edst, blocked, u, rtop, rtop_n)
    assert_lists_exact(state.esrc, state.edst, state.ew, int(state.n_edges[0]), state.kind,
                       rtop, rtop_n)


def test_equal_weights_order_by_target_and_a_heavier_edge_moves_up():
    """Node 0 has edges of weight 0.5 to 1..12 (3 is a tool): the list is the 10 lowest
    eligible targets. Touching 0 then 12 strengthens 0 -> 12, which moves to the front and
    pushes 11 out."""
    kind = [0] * 13
    kind[3] = KIND_TOOL
    state = State(13, 1, edges=4096, slots=8192, kind=kind)
    for e, v in enumerate(range(1, 13)):
        state.esrc[e], state.edst[e], state.ew[e] = 0, v, 0.5
        state.deg[0] += 1
    state.n_edges[0] = 12
    K.rebuild_hash(state.esrc, state.edst, 12, state.hkeys, state.hslot)
    rtop = np.zeros((13, K.ROW_TOP, 3))
    rtop_n = np.full(13, -1, np.int64)
    off, ln, order = csr_rows(state.esrc, 12, 13)
    row_top_build(off, ln, order, state.ew, state.edst, state.kind == KIND_TOOL, 0, rtop, rtop_n)
    assert rtop[0, : rtop_n[0], 1].astype(int).tolist() == [1, 2, 4, 5, 6, 7, 8, 9, 10, 11]
    K.fold_touches(np.zeros(2, np.int64), np.asarray([0, 12], np.int64), np.asarray([1.0, 2.0]),
                   0, *state.arrays(), rtop, rtop_n)
    assert state.ew[11] > 0.5
    assert rtop[0, : rtop_n[0], 1].astype(int).tolist() == [12, 1, 2, 4, 5, 6, 7, 8, 9, 10]


@SETTINGS
@given(work=fold_workloads(), data=st.data())
def test_spread_over_the_lists_equals_spread_over_the_rows(work, data):
    n_nodes, n_sess, sess, res, time, kind = work
    state = State(n_nodes, n_sess, edges=4096, slots=8192, kind=kind)
    state.fold(sess, res, time)
    if n_nodes == 0:
        return
    ne = int(state.n_edges[0])
    off, ln, order = csr_rows(state.esrc, ne, n_nodes)
    pool_dst = state.edst[order]
    blocked = state.kind == KIND_TOOL
    rtop = np.zeros((n_nodes, K.ROW_TOP, 3))
    rtop_n = np.full(n_nodes, -1, np.int64)
    node = st.integers(0, n_nodes - 1)
    for _ in range(2):  # first call makes the lists, the second reads them
        seeds = np.asarray(data.draw(st.lists(node, max_size=5)), np.int64)
        seed_act = np.ones(seeds.size)
        args = (seeds, seed_act, state.m, blocked, data.draw(st.integers(0, 4)),
                data.draw(st.integers(0, K.ROW_TOP)), data.draw(st.sampled_from([0.0, 0.2])),
                data.draw(st.sampled_from([0.0, 0.05])))
        a1, p1 = np.zeros(n_nodes), np.full(n_nodes, -1, np.int64)
        a2, p2 = np.zeros(n_nodes), np.full(n_nodes, -1, np.int64)
        v1 = K.spread(off, ln, pool_dst, order, state.ew, *args, a1, p1)
        v2 = K.spread(off, ln, pool_dst, order, state.ew, *args, a2, p2, state.edst, rtop,
                      rtop_n)
        assert v1 == v2
        np.testing.assert_array_equal(a1, a2)
        np.testing.assert_array_equal(p1, p2)
        a3, p3 = np.zeros(n_nodes), np.full(n_nodes, -1, np.int64)
        assert R.spread(off, ln, pool_dst, order, state.ew, *args, a3, p3) == v1
        np.testing.assert_array_equal(a1, a3)
    assert_lists_exact(state.esrc, state.edst, state.ew, ne, state.kind, rtop, rtop_n)


def test_the_engine_keeps_lists_through_folds_decay_and_reload():
    """brainbox.state.State: lists made by recall stay exact while events fold; decay
    (compaction renumbers edges) and loading drop them; recall ranks as without lists."""
    evs = normalized(events=3000, files=80, sessions=40, seed=3)
    s = Engine()
    s.fold(evs[:1500])
    project = evs[0]["project"]
    session = evs[1499]["session"]
    for q in ["fix the auth login bug", "cache report"]:
        args = list(rank_args(Index(s), q, project=project, session=session,
                              params=Params(fusion="fixed")))  # spreading reads the lists
        with_lists = K.rank_files(*args)
        no = list(args)
        at = next(i for i, x in enumerate(no) if x is s.rtop)
        no[at], no[at + 1] = np.zeros((0, K.ROW_TOP, 3)), np.zeros(0, np.int64)
        plain = K.rank_files(*no)
        for a, b in zip(with_lists, plain):
            np.testing.assert_array_equal(a, b)
    made = int((s.rtop_n[: s.n_res] >= 0).sum())
    assert made > 0
    s.fold(evs[1500:])
    ne = int(s.n_edges[0])
    assert assert_lists_exact(s.esrc, s.edst, s.ew, ne, s.kind, s.rtop, s.rtop_n) == made
    s.decay(3.0)
    assert (s.rtop_n[: s.n_res] == -1).all()
    b = Engine.from_arrays(s.to_arrays(), s.resource_rows())
    assert (b.rtop_n == -1).all()
