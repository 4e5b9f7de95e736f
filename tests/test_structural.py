"""Structural priors in recall (issue 16, Deliver 2; `brainbox.structure`): the effective
weight is the learned W where an edge was learned, else the code graph's P; spreading
reads it, and explain says when an edge is structural."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from brainbox import codeindex, structure
from brainbox.memory import Memory
from brainbox.recall import Params


class _State:
    """What `structure.effective` reads of a state: n_res and W."""

    def __init__(self, W):
        self.n_res = W.shape[0]
        self._W = W

    def matrices(self):
        return {"W": self._W}


def _dense(eff, n):
    out = np.zeros((n, n), np.float32)
    for u in range(len(eff.adj_off)):
        for q in range(eff.adj_off[u], eff.adj_off[u] + eff.adj_len[u]):
            out[u, eff.pool_dst[q]] = eff.ew[eff.pool_e[q]]
    return out


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 7).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1),
                       st.floats(0.0, 1.0, width=32)), max_size=2 * n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1),
                       st.sampled_from([0.2, 0.25, 0.3, 0.35])), max_size=2 * n))))
def test_the_effective_weight_is_w_where_learned_else_p(case):
    n, w_edges, p_edges = case
    Wd, has = np.zeros((n, n), np.float32), np.zeros((n, n), bool)
    for i, j, w in w_edges:
        Wd[i, j], has[i, j] = w, True
    Pd = np.zeros((n, n), np.float32)
    for i, j, w in p_edges:
        Pd[i, j] = max(Pd[i, j], w)
    rows, cols = np.nonzero(has)  # a learned edge of weight 0 is still learned
    W = sparse.csr_array((Wd[rows, cols], (rows, cols)), shape=(n, n), dtype=np.float32)
    eff = structure.effective(_State(W), sparse.csr_array(Pd))
    want = np.where(has, Wd, Pd)
    assert np.array_equal(_dense(eff, n), want)
    for i in range(n):
        for j in range(n):
            w, structural = structure.edge(eff, i, j)
            assert w == want[i, j] and structural == (not has[i, j] and Pd[i, j] > 0)
    # each row's targets once, and what explain lists comes only from P
    for u in range(n):
        row = eff.pool_dst[eff.adj_off[u]:eff.adj_off[u] + eff.adj_len[u]]
        assert len(set(row.tolist())) == len(row)
    for j in range(n):
        assert structure.incoming(sparse.csr_array(Pd), W, j) == [
            (i, float(Pd[i, j])) for i in range(n) if Pd[i, j] > 0 and not has[i, j]]


def _project(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "app").mkdir()
    (root / "app" / "__init__.py").write_text("")
    (root / "app" / "checkout.py").write_text(
        "from app.pricing import price_of\n\ndef checkout(cart):\n"
        "    return sum(price_of(i) for i in cart)\n")
    (root / "app" / "pricing.py").write_text("def price_of(item):\n    return item.cost\n")
    (root / "app" / "mailer.py").write_text("def send(to):\n    return to\n")
    mem = Memory.open(tmp_path / "m.db")
    t = 1_000_000.0
    # every file known, each alone in its session: no learned edge between them
    for s, f in enumerate(("app/checkout.py", "app/pricing.py", "app/mailer.py")):
        for k in range(3):
            t += 10
            mem.record({"session": f"s{s}-{k}", "cwd": str(root), "project": str(root),
                        "tool": "Read", "files": [f], "at": t})
    return root, mem


def test_spreading_follows_the_import_where_nothing_was_learned(tmp_path):
    root, mem = _project(tmp_path)
    fixed = Params(fusion="fixed", min_probability=0.0)  # the associative channel in use
    query = "checkout"
    before = {r.path: r for r in mem.recall(query, project=str(root), params=fixed)}
    old = before.get("app/pricing.py")
    assert old is None or "associative" not in old.channels  # no learned edge to follow
    codeindex.build(mem.conn, str(root))
    after = {r.path: r for r in mem.recall(query, project=str(root), params=fixed)}
    hit = after["app/pricing.py"]
    assert "associative" in hit.channels
    assert hit.via == "app/checkout.py -> app/pricing.py (structural, w=0.25)"
    assert "associative" not in after["app/mailer.py"].channels  # nothing links it
    # the default fusion does not spread: the effective graph is not even built
    assert mem._structure(str(root)) is None
    assert mem._structure(str(root), fixed) is not None


def test_explain_names_structural_edges_and_a_learned_edge_replaces_them(tmp_path):
    root, mem = _project(tmp_path)
    codeindex.build(mem.conn, str(root))
    got = mem.explain("app/pricing.py", "checkout", project=str(root))
    structural = [e for e in got["incoming"] if e["structural"]]
    assert structural == [{"source": "app/checkout.py", "kind": "file", "w": 0.25,
                           "structural": True}]
    for k in range(3):  # now checkout.py and pricing.py are used together
        mem.record({"session": f"both{k}", "cwd": str(root), "project": str(root),
                    "tool": "Read", "files": ["app/checkout.py"], "at": 2_000_000.0 + 10 * k})
        mem.record({"session": f"both{k}", "cwd": str(root), "project": str(root),
                    "tool": "Edit", "files": ["app/pricing.py"], "at": 2_000_001.0 + 10 * k})
    got = mem.explain("app/pricing.py", "checkout", project=str(root))
    mine = [e for e in got["incoming"] if e["source"] == "app/checkout.py"]
    assert len(mine) == 1 and mine[0]["structural"] is False and mine[0]["kind"] == "file"
