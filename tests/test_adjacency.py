"""The engine's live out-adjacency (`State.adjacency`, kernels/adjacency.py) holds the same
rows as the CSR `State.graph()` builds: across folds in batches, edges made by `resolve`,
decay with pruning, and a persistence round trip; and spreading over it gives what spreading
over the CSR gives."""

import numpy as np

from brainbox import kernels as K
from brainbox.memory import Memory
from brainbox.state import ADJ_POOL, State
from brainbox.workload import normalized

ROOT = "/work/project0"


def graph_rows(s: State) -> dict:
    g = s.graph()
    rows = {}
    for u in range(s.n_res):
        lo, hi = g.indptr[u], g.indptr[u + 1]
        if hi > lo:
            rows[u] = sorted(zip(g.indices[lo:hi].tolist(), g.data[lo:hi].tolist()))
    return rows


def adjacency_rows(s: State) -> dict:
    a = s.adjacency()
    assert a.off.shape[0] == a.len.shape[0] == s.n_res
    rows = {}
    for u in range(s.n_res):
        lo, n = int(a.off[u]), int(a.len[u])
        if n:
            q = slice(lo, lo + n)
            rows[u] = sorted(zip(a.dst[q].tolist(), a.ew[a.edge[q]].tolist()))
            dst, w = s.out_edges(u)
            assert sorted(zip(dst.tolist(), w.tolist())) == rows[u]
    return rows


def assert_adjacency_matches_graph(s: State) -> None:
    rows = adjacency_rows(s)
    assert rows == graph_rows(s)
    np.testing.assert_array_equal(s.adj_len[: s.n_res], s.deg[: s.n_res])
    assert s.adj_linked == int(s.n_edges[0])


def resolve(at: float, fp: str, files: list[str]) -> dict:
    return {"at": at, "session": "brainbox:resolve", "project": ROOT, "kind": "feedback",
            "files": files, "meta": {"op": "resolve", "error_fp": fp, "files": files}}


def test_adjacency_rows_equal_graph_rows_across_folds_decay_and_a_round_trip():
    events = normalized(events=3000, files=40, sessions=30, seed=3)
    s = State()
    s.pool_dst, s.pool_e = np.zeros(16, np.int64), np.zeros(16, np.int64)  # fills at once
    for start in range(0, 2000, 250):
        s.fold(events[start:start + 250])
        assert_adjacency_matches_graph(s)
    assert s.pool_dst.shape[0] >= ADJ_POOL  # the pool filled and was laid out again

    at = events[1999]["at"]
    s.fold([resolve(at, "NEW_ERROR|fresh", ["src/brand_new.py", "src/auth/login.py"])])
    assert_adjacency_matches_graph(s)  # edges made one at a time by edge_index

    before = int(s.n_edges[0])
    s.decay(60.0)  # 0.98**60 = 0.30: weights below ~0.17 are pruned
    assert 0 < int(s.n_edges[0]) < before
    assert_adjacency_matches_graph(s)
    s.fold(events[2000:2500])
    assert_adjacency_matches_graph(s)

    t = State.from_arrays(s.to_arrays(), s.resource_rows())
    assert_adjacency_matches_graph(t)
    assert adjacency_rows(t) == adjacency_rows(s)
    for st in (s, t):
        st.fold(events[2500:])
        assert_adjacency_matches_graph(st)
    assert adjacency_rows(t) == adjacency_rows(s)


def test_spread_over_the_state_adjacency_equals_spread_over_its_csr():
    s = State()
    s.fold(normalized(events=3000, files=40, sessions=30, seed=5))
    s.decay(20.0)
    s.fold(normalized(events=500, files=40, sessions=30, seed=6))
    g = s.graph()
    n = s.n_res
    blocked = s.kind[:n] == 1
    rng = np.random.default_rng(0)
    for topk, w_floor in ((10, 0.2), (3, 0.0), (1, 0.05)):
        seeds = rng.choice(n, 8, replace=False).astype(np.int64)
        seed_act = rng.random(8)
        out = []
        for fn, graph in ((K.spread, s.adjacency()), (K.spread_csr, g[:3])):
            act, parent = np.zeros(n), np.zeros(n, np.int64)
            visits = fn(*graph, seeds, seed_act, s.m[:n], blocked, 3, topk, w_floor, 0.01,
                        act, parent)
            out.append((visits, act, parent))
        assert out[0][0] == out[1][0] > 0
        np.testing.assert_array_equal(out[0][1], out[1][1])
        np.testing.assert_array_equal(out[0][2], out[1][2])


def test_adjacency_survives_sqlite_and_is_derived_not_stored(tmp_path):
    events = normalized(events=3000, files=40, sessions=30, seed=3)
    mem = Memory.open(tmp_path / "b.db")
    mem.record_normalized(events[:1500])
    mem.sync()
    assert not any(k.startswith(("adj", "pool")) for k in mem.state.to_arrays())
    mem.decay(now=events[1499]["at"] + 40 * 86400)
    mem.close()
    mem = Memory.open(tmp_path / "b.db")
    mem.sync()
    assert_adjacency_matches_graph(mem.state)
    mem.record_normalized(events[1500:])
    mem.sync()
    assert_adjacency_matches_graph(mem.state)
    mem.close()
