"""Memory: event sourcing, recall behaviour, forget, decay, predict."""

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brainbox import BrainboxError
from brainbox.memory import Memory
from brainbox.recall import Params
from brainbox.workload import generate

ROOT = "/work/project0"
DAY = 86400.0


def auth_sessions(mem, n=5, root="/repo"):
    t = 1_000_000.0
    for s in range(n):
        for tool, f in (("Read", "src/auth/login.py"), ("Edit", "src/auth/session.py")):
            t += 1
            mem.record({"session": f"s{s}", "cwd": root, "project": root, "tool": tool,
                        "files": [f], "at": t})


def matrices_equal(a, b):
    ma, mb = a.state.matrices(), b.state.matrices()
    for k in ma:
        x, y = ma[k], mb[k]
        assert x.shape == y.shape
        assert np.array_equal(x.indptr, y.indptr) and np.array_equal(x.indices, y.indices)
        assert np.array_equal(x.data, y.data), k


def test_incremental_folding_with_recalls_between_equals_rebuild(tmp_path):
    events = list(generate(events=3000, files=40, sessions=30, seed=3))
    inc = Memory.open(tmp_path / "inc.db")
    seen = []
    for start in range(0, len(events), 700):
        inc.record(events[start:start + 700])
        seen.append([r.as_dict() for r in inc.recall("fix the auth bug", project=ROOT)])
        inc.close()
        inc = Memory.open(tmp_path / "inc.db")  # the state goes through SQLite each time
    one = Memory.open(tmp_path / "one.db")
    one.record(events)
    one.rebuild()
    inc.sync()
    matrices_equal(inc, one)
    for name in ("n", "m", "act", "last", "hist", "deg", "win", "last3"):
        assert np.array_equal(getattr(inc.state, name), getattr(one.state, name)[: getattr(inc.state, name).shape[0]]) or \
            np.array_equal(getattr(inc.state, name)[: inc.state.n_res], getattr(one.state, name)[: one.state.n_res])
    q = {"project": ROOT, "session": events[-1]["session"], "now": events[-1]["at"] + 10}
    for query in ("fix the auth bug", "billing invoice", "this again"):
        a = [r.as_dict() for r in inc.recall(query, **q)]
        b = [r.as_dict() for r in one.recall(query, **q)]
        assert a == b
    assert inc.predict_tools(events[-1]["session"]) == one.predict_tools(events[-1]["session"])
    # the learned fusion (brainbox.learning): the same openings and credit, and some
    assert inc.state.opened == one.state.opened and len(inc.state.opened) >= 25
    assert inc.state.openings == one.state.openings
    assert inc.state.credit.keys() == one.state.credit.keys()
    for p in inc.state.credit:
        assert inc.state.credit[p].tolist() == one.state.credit[p].tolist()
    assert inc.state.credit[ROOT][-1] > 50 and inc.state.credit[ROOT][0] > 0
    # and a rebuild of the incremental database reproduces itself
    before = inc.state.matrices()["W"].copy()
    inc.rebuild()
    assert (inc.state.matrices()["W"] != before).nnz == 0


def test_login_then_session_edits_are_recalled_with_the_edge(tmp_path):
    """With the paper's weights (`fusion="fixed"`) session.py comes through the learned edge
    login.py -> session.py. By default (the associative channel at weight 0, and recency at
    0 at a session's opening prompt: brainbox.recall) login.py leads, no result carries an
    edge, and session.py, found by frequency alone, is below the relevance floor."""
    mem = Memory.open(tmp_path / "b.db")
    auth_sessions(mem)
    res = mem.recall("login", project="/repo", params=Params(fusion="fixed"))
    paths = [r.path for r in res]
    assert "src/auth/session.py" in paths[:3]
    hit = next(r for r in res if r.path == "src/auth/session.py")
    assert hit.via.startswith("src/auth/login.py -> src/auth/session.py (w=")
    assert "associative" in hit.channels
    res = mem.recall("login", project="/repo")
    assert res[0].path == "src/auth/login.py"
    assert all(r.via is None and "associative" not in r.channels for r in res)
    every = mem.recall("login", project="/repo", params=Params(min_probability=0.0))
    hit = next(r for r in every if r.path == "src/auth/session.py")
    assert hit.confidence < 0.02 <= res[0].confidence


def test_nonsense_query_returns_nothing(tmp_path):
    mem = Memory.open(tmp_path / "b.db")
    auth_sessions(mem)
    assert mem.recall("quantum teapot entanglement", project="/repo") == []


def test_session_evidence_grounds_recall_without_lexical_match(tmp_path):
    mem = Memory.open(tmp_path / "b.db")
    auth_sessions(mem)
    res = mem.recall("continue", project="/repo", session="s4")
    assert res and res[0].channels.get("recency") == 1


def test_forget_removes_path_from_every_recall(tmp_path):
    mem = Memory.open(tmp_path / "b.db")
    auth_sessions(mem)
    out = mem.forget("src/auth/session.py", project="/repo")
    assert out["deleted_events"] == 5
    for q in ("login", "session", "auth"):
        assert all(r.path != "src/auth/session.py" for r in mem.recall(q, project="/repo"))
    mem.close()
    again = Memory.open(tmp_path / "b.db")
    assert ("src/auth/session.py" not in again.state.res_key)


def live_sessions(mem, n=5, root="/repo", start=None, gap=1.0):
    """`auth_sessions` recorded as a live memory would: after the database was made."""
    t = (time.time() + 5.0) if start is None else start
    for s in range(n):
        for tool, f in (("Read", "src/auth/login.py"), ("Edit", "src/auth/session.py")):
            t += gap
            mem.record({"session": f"s{s}", "cwd": root, "project": root, "tool": tool,
                        "files": [f], "at": t})
    return t


def test_decay_prunes_weak_associations_and_is_replayed_by_rebuild(tmp_path):
    mem = Memory.open(tmp_path / "b.db")
    t = live_sessions(mem, n=1)
    assert mem.stats()["associations"] > 0
    with pytest.raises(BrainboxError, match="would prune"):
        mem.decay(now=t + DAY * 200)  # every association: refused without force
    assert mem.stats()["associations"] > 0 and mem.stats()["events"] == 2
    out = mem.decay(now=t + DAY * 200, force=True)
    assert out["associations"] == 0 and out["pruned"] > 0
    mem.rebuild()
    assert mem.stats()["associations"] == 0


def test_one_decay_day_multiplies_weights_by_0_98(tmp_path):
    mem = Memory.open(tmp_path / "b.db")
    t = live_sessions(mem, n=20, gap=0.001)
    mem.sync()
    w0 = mem.state.matrices()["W"].copy()
    mem.decay(now=t + DAY)  # one day after the last update of every association
    w1 = mem.state.matrices()["W"]
    kept = w1.toarray()
    assert np.allclose(kept[kept > 0], (w0.toarray() * 0.98)[kept > 0], rtol=1e-4)


def test_decay_after_importing_old_events_keeps_every_association_and_rebuild_agrees(tmp_path):
    """Events 300 days older than the memory (an import of old transcripts): decay
    measures from when the memory began, so nothing is lost, and rebuild replays that."""
    mem = Memory.open(tmp_path / "b.db")
    events = list(generate(events=2000, files=40, sessions=20, seed=4,
                           start=time.time() - 300 * DAY))
    mem.record(events)
    mem.sync()
    w0 = mem.state.matrices()["W"].copy()
    out = mem.decay()
    assert out["pruned"] == 0 and out["associations"] == w0.nnz > 0
    w1 = mem.state.matrices()["W"].copy()  # seconds of decay since the memory began
    assert np.allclose(w1.toarray(), w0.toarray(), rtol=1e-5)
    mem.rebuild()
    assert (mem.state.matrices()["W"] != w1).nnz == 0


def test_decay_measures_from_each_associations_last_update_and_never_twice(tmp_path):
    mem = Memory.open(tmp_path / "b.db")
    t0 = time.time() + 5.0
    rec = lambda at, s, f: mem.record({"session": s, "cwd": "/r", "project": "/r",
                                       "tool": "Read", "files": [f], "at": at})
    for i in range(6):  # a strong old pair a -> b
        rec(t0 + i, f"o{i}", "a.py"), rec(t0 + i + 0.5, f"o{i}", "b.py")
    for i in range(6):  # the same strength, 20 days later: c -> d
        rec(t0 + 20 * DAY + i, f"n{i}", "c.py"), rec(t0 + 20 * DAY + i + 0.5, f"n{i}", "d.py")
    mem.sync()
    st = mem.state
    rid = lambda f: st.res_index[(0, "/r", f)]

    def w(u, v):
        return float(st.ew[st.edge_index(rid(u), rid(v))])

    old, new = w("a.py", "b.py"), w("c.py", "d.py")
    mem.decay(now=t0 + 30 * DAY + 5.5, force=True)
    st = mem.state
    assert w("a.py", "b.py") == pytest.approx(old * 0.98 ** 30, rel=1e-4)
    assert w("c.py", "d.py") == pytest.approx(new * 0.98 ** 10, rel=1e-4)
    mem.decay(now=t0 + 40 * DAY + 5.5, force=True)  # ten more days, not forty
    assert w("a.py", "b.py") == pytest.approx(old * 0.98 ** 40, rel=1e-4)
    assert w("c.py", "d.py") == pytest.approx(new * 0.98 ** 20, rel=1e-4)
    inc = {k: v.copy() for k, v in mem.state.matrices().items()}
    mem.rebuild()
    for k, v in mem.state.matrices().items():
        assert (v != inc[k]).nnz == 0, k


def test_decay_never_prunes_what_was_touched_within_the_window(tmp_path):
    mem = Memory.open(tmp_path / "b.db")
    t0 = time.time() + 5.0
    files = [f"f{i}.py" for i in range(30)]
    for i, f in enumerate(files):  # one long session: the far-apart pairs are weak
        mem.record({"session": "s", "cwd": "/r", "project": "/r", "tool": "Read",
                    "files": [f], "at": t0 + i})
    mem.sync()
    ne = int(mem.state.n_edges[0])
    assert (mem.state.ew[:ne] < 0.05).any()  # weak, and touched a day ago
    out = mem.decay(now=t0 + DAY)
    assert out["pruned"] == 0 and out["associations"] == ne
    out = mem.decay(now=t0 + 30 * DAY, dry_run=True)  # untouched for a month: they go
    assert out["dry_run"] and 0 < out["pruned"] <= ne
    assert mem.stats()["associations"] == ne  # a dry run changes nothing


def test_decay_dry_run_counts_and_writes_nothing(tmp_path):
    mem = Memory.open(tmp_path / "b.db")
    t = live_sessions(mem, n=3)
    events = mem.stats()["events"]
    ne = mem.stats()["associations"]
    out = mem.decay(now=t + 400 * DAY, dry_run=True)
    assert out == {"dry_run": True, "pruned": ne, "associations": ne, "remain": 0,
                   "now": t + 400 * DAY}
    assert mem.stats()["events"] == events and mem.stats()["associations"] == ne


def test_resolve_links_error_to_fix_strongly(tmp_path):
    mem = Memory.open(tmp_path / "b.db")
    mem.resolve("ModuleNotFoundError: No module named 'yaml'", ["setup.py"], project="/repo",
                cwd="/repo")
    mem.sync()
    st = mem.state
    w = st.matrices()["W"]
    fid = st.res_index[(0, "/repo", "setup.py")]
    assert w[:, [fid]].toarray().max() == pytest.approx(0.85)


def test_predict_tools_learns_the_grammar(tmp_path):
    mem = Memory.open(tmp_path / "b.db")
    t = 0.0
    for s in range(6):
        for tool in ("Grep", "Read", "Edit", "Bash:pytest"):
            t += 1
            mem.record({"session": f"s{s}", "cwd": "/r", "project": "/r", "tool": tool, "at": t})
    mem.record({"session": "new", "cwd": "/r", "project": "/r", "tool": "Grep", "at": t + 1})
    mem.record({"session": "new", "cwd": "/r", "project": "/r", "tool": "Read", "at": t + 2})
    tools = [name for name, _ in mem.predict_tools("new")]
    assert tools[0] == "Edit" and len(tools) == 3


def test_bad_event_is_a_domain_error_and_stores_nothing(tmp_path):
    mem = Memory.open(tmp_path / "b.db")
    with pytest.raises(BrainboxError):
        mem.record([{"session": "s", "tool": "Read", "files": ["a"]}, {"tool": "Read"}])
    assert mem.stats()["events"] == 0


def test_secrets_are_redacted_before_storage(tmp_path):
    mem = Memory.open(tmp_path / "b.db")
    secret = "ghp_" + "a1B2" * 9
    mem.record({"session": "s", "cwd": "/r", "project": "/r", "tool": "Bash",
                "command": f"GITHUB_TOKEN={secret} git push"})
    mem.close()
    assert secret.encode() not in (tmp_path / "b.db").read_bytes()
    wal = tmp_path / "b.db-wal"
    assert not wal.exists() or secret.encode() not in wal.read_bytes()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=()), max_size=40)
       | st.text(alphabet="ab/\x00 .", max_size=40), st.integers(1, 50))
def test_event_text_cleaning_matches_its_definition(value, limit):
    """``events._text`` (with its ASCII fast path) equals the plain definition: lone
    surrogates replaced through UTF-8, NULs dropped, cut to ``limit``, empty as None."""
    from brainbox.events import _text

    plain = value.encode("utf-8", "replace").decode("utf-8").replace("\x00", "")
    assert _text(value, limit) == (plain[:limit] if plain else None)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([
    "pytest tests/test_a.py", "curl -H 'Authorization: Bearer abcdefghijklmnop0123' x",
    "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY", "ls",
    "x" * 3000 + " --password=hunter2hunter2", "KeyError: 'user_id'",
]), min_size=1, max_size=12))
def test_remembered_normalisation_equals_a_fresh_one(texts):
    """Normalising (redaction, error fingerprints, relative paths) remembers short text;
    every event comes out as the functions themselves give it, whatever came before, and
    text longer than the bound is never kept."""
    from brainbox import events as E
    from brainbox.fingerprint import fingerprint, normalize_error
    from brainbox.redact import redact

    for text in texts:
        raw = {"session": "s", "cwd": "/p", "project": "/p", "tool": "Bash:x",
               "command": text, "error": text, "files": ["a.py", "/p/b/../c.py", "/q/d.py"]}
        ev = E.normalize(raw)
        assert ev["command"] == redact(text[:E.MAX_COMMAND])
        assert ev["error_fp"] == fingerprint(redact(text))
        assert ev["error"] == normalize_error(redact(text))[:E.MAX_ERROR]
        assert ev["files"] == ["a.py", "c.py"]
        assert "hunter2" not in (ev["command"] or "") + (ev["error"] or "")
    kept = E._redact.cache_info().currsize
    E._redact("y" * (E.MEMO_CHARS + 1))
    assert E._redact.cache_info().currsize == kept


def _git_project(tmp_path, sources: dict):
    """A git project with `sources` under src/, and a fresh memory."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    for name, text in sources.items():
        (root / "src" / name).write_text(text)
    return root, Memory.open(tmp_path / "m.db")


def test_recall_ranks_by_the_code_index_and_names_each_files_best_snippet(tmp_path):
    """The snippet channel (issue 16): with a code index, a file whose code matches the
    query is ranked by its best snippet and names it; without one, recall is as before."""
    from brainbox import codeindex

    root, mem = _git_project(tmp_path, {
        "billing.py": "def compute_invoice_total(lines):\n    return sum(l.amount for l in lines)\n",
        "util.py": "def helper():\n    return 1\n"})
    t = 1_000_000.0
    for s in range(4):  # both files are known to memory; neither name matches the query
        for f in ("src/util.py", "src/billing.py"):
            t += 1
            mem.record({"session": f"s{s}", "cwd": str(root), "project": str(root),
                        "tool": "Read", "files": [f], "at": t})
    query = "the invoice total is wrong"
    before = mem.recall(query, project=str(root))
    assert all(r.snippet is None and "snippet" not in r.channels for r in before)
    codeindex.build(mem.conn, str(root))
    after = mem.recall(query, project=str(root))
    hit = next(r for r in after if r.path == "src/billing.py")
    assert hit.channels.get("snippet") == 1
    assert hit.snippet == "src/billing.py:1-2 function compute_invoice_total"
    assert hit.as_dict()["snippet"] == hit.snippet
    assert after[0].path == "src/billing.py"
    assert [r.as_dict() for r in mem.recall(query, project=str(root), code=False)] == \
        [r.as_dict() for r in before]
    items = mem.suggest(query, project=str(root))
    assert items[0]["snippet"] == hit.snippet and "compute_invoice_total" in items[0]["why"]
    found = mem.search("invoice total", project=str(root))
    assert found[0]["path"] == "src/billing.py" and found[0]["symbol"] == \
        "compute_invoice_total"
    with pytest.raises(BrainboxError, match="no code index"):
        mem.search("x", project=str(tmp_path / "elsewhere"))


def test_recall_offers_a_file_of_the_code_index_memory_never_saw(tmp_path):
    """Issue 16: the index reaches files no agent opened yet. A file memory never saw is a
    candidate, ranked by the snippet channel alone (lam / (k + rank)); a known file's
    snippet rank is its place among all the index's files, not among the known ones."""
    from brainbox import codeindex
    from brainbox.recall import RRF_K, SNIPPET_PROMPT

    root, mem = _git_project(tmp_path, {
        "ledger.py": "def invoice_total_ledger(invoice, total):\n    return invoice + total\n",
        "billing.py": "def invoice(x):\n    return x\n", "util.py": "def helper():\n    return 1\n"})
    for s, f in enumerate(("src/util.py", "src/billing.py")):
        mem.record({"session": f"s{s}", "cwd": str(root), "project": str(root),
                    "tool": "Read", "files": [f], "at": 1_000_000.0 + s})
    query = "invoice total"
    assert all(r.path != "src/ledger.py" for r in mem.recall(query, project=str(root)))
    codeindex.build(mem.conn, str(root))
    out = mem.recall(query, project=str(root))
    got = {r.path: r for r in out}
    new = got["src/ledger.py"]
    assert new.channels == {"snippet": 1} and new.via is None
    assert new.snippet == "src/ledger.py:1-2 function invoice_total_ledger"
    assert new.score == pytest.approx(SNIPPET_PROMPT / (RRF_K + 1))
    # the relevance floor holds for it: at the paper's weight 4 ("fixed"), one channel's
    # first place alone (ratio 0.37) is below the calibrated floor at a prompt
    assert "src/ledger.py" not in {r.path for r in mem.recall(
        query, project=str(root), params=Params(fusion="fixed"))}
    assert got["src/billing.py"].channels["snippet"] == 2  # second among all, first known
    assert "src/ledger.py" not in {r.path for r in mem.recall(
        query, project=str(root), code=False, params=Params(min_probability=0.0))}


def test_an_ablated_snippet_channel_adds_no_file_of_the_index(tmp_path):
    """Ablating the snippet channel removes it whole: no unseen file of the index enters."""
    from brainbox import codeindex

    root, mem = _git_project(tmp_path, {
        "ledger.py": "def invoice_total_ledger(invoice, total):\n    return invoice\n",
        "util.py": "def helper():\n    return 1\n"})
    mem.record({"session": "s0", "cwd": str(root), "project": str(root), "tool": "Read",
                "files": ["src/util.py"], "at": 1_000_000.0})
    codeindex.build(mem.conn, str(root))
    on = mem.recall("invoice total", project=str(root))
    assert "src/ledger.py" in {r.path for r in on}
    off = mem.recall("invoice total", project=str(root),
                     params=Params(ablate=frozenset({"snippet"})))
    assert "src/ledger.py" not in {r.path for r in off}
