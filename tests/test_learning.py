"""Fusion learned per project (brainbox.learning, kernels.policy): the credit and gain
rules against their plain definitions, the product's openings and credit as a session
makes them, recall weighing by them, and the prior's fit."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brainbox import prior
from brainbox.eval import fusion_fit
from brainbox.kernels import policy as KP
from brainbox.kernels.policy import CHANNELS, CREDIT_DEPTH, CREDIT_FILES, N_CHANNELS
from brainbox.memory import Memory
from brainbox.recall import FUSION, RECENCY_SESSION, RRF_K, Index, Params, plan, rank_args
from brainbox.state import FILE

LEX, FREQ = CHANNELS.index("lexical"), CHANNELS.index("frequency")


def gains_reference(pi, credit, a, lo, hi):
    out = []
    for c in range(N_CHANNELS):
        if a <= 0 or pi[c] <= 0 or credit[N_CHANNELS] <= 0:
            out.append(1.0)
            continue
        h = (a * pi[c] + credit[c]) / (a + credit[N_CHANNELS])
        out.append(min(max(h / pi[c], lo), hi))
    return out


@settings(max_examples=200, deadline=None)
@given(pi=st.lists(st.sampled_from([0.0, 0.05, 0.2, 0.9]), min_size=N_CHANNELS,
                   max_size=N_CHANNELS),
       sums=st.lists(st.floats(0, 50), min_size=N_CHANNELS, max_size=N_CHANNELS),
       n=st.integers(0, 60), a=st.sampled_from([0.0, 1.0, 30.0]))
def test_gains_equal_their_plain_definition(pi, sums, n, a):
    p = plan(Params(fusion="learned"))._replace(gain_pi=np.asarray(pi), gain_strength=a)
    credit = np.asarray(sums + [float(n)])
    got = KP.gains(p, credit).tolist()
    want = gains_reference(pi, credit, a, p.gain_lo, p.gain_hi)
    assert got == pytest.approx(want, rel=1e-12)


@settings(max_examples=200, deadline=None)
@given(ranks=st.lists(st.integers(0, 3 * CREDIT_DEPTH), min_size=N_CHANNELS,
                      max_size=N_CHANNELS))
def test_credit_file_equals_its_plain_definition(ranks):
    credit = np.zeros(N_CHANNELS + 1)
    KP.credit_file(credit, np.asarray(ranks, np.int64), RRF_K)
    want = [(RRF_K + 1) / (RRF_K + r) if 0 < r <= CREDIT_DEPTH else 0.0 for r in ranks]
    assert credit.tolist() == want + [1.0]


@pytest.mark.parametrize("fusion", ["learned", "fitted", "chosen"])
def test_weights_at_a_prompt_are_the_prompt_weights_times_the_gains(fusion):
    p = plan(Params(fusion=fusion))
    credit = np.zeros(N_CHANNELS + 1)
    credit[LEX], credit[N_CHANNELS] = 40.0, 40.0  # lexical ranked every file first
    lam, s_max = KP.weights(p, False, credit)
    g = gains_reference(p.gain_pi, credit, p.gain_strength, p.gain_lo, p.gain_hi)
    assert lam.tolist() == pytest.approx([w * x for w, x in zip(p.lam_prompt, g)])
    assert s_max == pytest.approx(sum(w for w, on in zip(lam, p.use) if on) / (RRF_K + 1))
    if fusion == "chosen":
        assert g == [1.0] * N_CHANNELS  # nothing learned
    else:
        assert g[LEX] > 1 and g[FREQ] < 1
    # in a session: the chosen weights, recency at its session weight, no gain
    lam_s, _ = KP.weights(p, True, credit)
    want = [RECENCY_SESSION if c == "recency" else FUSION[fusion][c] for c in CHANNELS]
    assert lam_s.tolist() == want


def prompt(sid, text, at, root="/repo"):
    return {"session": sid, "cwd": root, "project": root, "kind": "prompt", "prompt": text,
            "at": at}


def touch(sid, f, at, root="/repo", tool="Read"):
    return {"session": sid, "cwd": root, "project": root, "tool": tool, "files": [f],
            "at": at}


def test_a_session_is_ranked_once_at_its_opening_and_credits_its_first_ten_files(tmp_path):
    mem = Memory.open(tmp_path / "m.db")
    t = 1_000_000.0
    # history: the parser files, each read with a request naming it
    for s in range(6):
        mem.record(prompt(f"h{s}", f"fix the parser tokenizer bug number {s}", t))
        for f in ("src/parser.py", "src/tokenizer.py", "docs/notes.md"):
            t += 1
            mem.record(touch(f"h{s}", f, t))
        t += 100
    mem.sync()
    st_ = mem.state
    assert len(st_.opened) == 6
    before = st_.credit["/repo"].copy()
    # a new session: its opening ranks the parser first; it then touches 12 files, and one
    # of another project; a second prompt of the session is no opening
    mem.record(prompt("new", "the parser tokenizer fails", t + 1))
    mem.sync()
    sid = mem.state.sess_index["new"]
    parser = mem.state.res_index[(FILE, "/repo", "src/parser.py")]
    assert mem.state.openings[sid][1][parser][LEX] == pytest.approx(1.0)  # lexical: first
    for i, f in enumerate(["src/parser.py", "src/parser.py"] + [f"src/m{i}.py" for i in range(11)]):
        mem.record(touch("new", f, t + 2 + i))
    mem.record(touch("new", "x.py", t + 20, root="/other"))
    mem.record(prompt("new", "and the parser docs", t + 30))
    mem.sync()
    st_ = mem.state
    assert len(st_.opened) == 7 and sid in st_.openings
    project, rows, credited = st_.openings[sid]
    assert project == "/repo" and len(credited) == CREDIT_FILES and credited[0] == parser
    assert len(set(credited)) == CREDIT_FILES  # the repeated read counts once
    assert rows == {}  # done crediting: its rows are dropped
    gained = st_.credit["/repo"] - before
    assert gained[N_CHANNELS] == CREDIT_FILES  # ten files credited, the other project's not
    assert gained[LEX] >= 1.0
    assert "/other" not in st_.credit
    # the state goes through SQLite and comes back the same
    mem.close()
    again = Memory.open(tmp_path / "m.db")
    assert again.state.openings == st_.openings and again.state.opened == st_.opened
    assert again.state.credit["/repo"].tolist() == st_.credit["/repo"].tolist()


def test_recall_at_a_prompt_weighs_channels_by_the_projects_credit(tmp_path):
    mem = Memory.open(tmp_path / "m.db")
    t = 1_000_000.0
    for s in range(40):  # every session opens on a request naming the file it then reads
        name = f"mod{s % 8}"
        mem.record(prompt(f"s{s}", f"fix the {name} handler", t))
        mem.record(touch(f"s{s}", f"src/{name}.py", t + 1))
        t += 10
    mem.sync()
    credit = mem.state.credit["/repo"]
    p = plan(Params())
    g = KP.gains(p, credit)
    assert g[LEX] > 1.0  # the lexical channel earned weight in this project
    args = rank_args(Index(mem.state), "fix the mod3 handler", project="/repo")
    assert args.lam[LEX] == pytest.approx(FUSION["learned"]["lexical"] * g[LEX])
    chosen = rank_args(Index(mem.state), "fix the mod3 handler", project="/repo",
                       params=Params(fusion="chosen"))
    assert chosen.lam[LEX] == FUSION["chosen"]["lexical"]
    # explain shows the weights of that ranking
    ex = mem.explain("src/mod3.py", "fix the mod3 handler", project="/repo")
    assert ex["weights"]["lexical"] == pytest.approx(args.lam[LEX], abs=1e-4)
    assert set(ex["weights"]) == {c for c, on in zip(CHANNELS, args.use.tolist()) if on}
    # another project has no credit: its weights are the chosen ones
    args = rank_args(Index(mem.state), "fix the mod3 handler", project="/nowhere")
    assert args is None or args.lam[LEX] == FUSION["chosen"]["lexical"]


def openings_of(rng, n, informative):
    """Synthetic openings: 20 ranked files each; the credited ones are those channel
    ``informative`` ranks high, the others' ranks are noise."""
    out = []
    for _ in range(n):
        rows, credited = [], []
        for f in range(20):
            ranks = rng.integers(0, CREDIT_DEPTH + 1, N_CHANNELS)
            hit = f < 3
            ranks[informative] = 1 + f if hit else rng.integers(4, CREDIT_DEPTH + 1)
            row = [(RRF_K + 1) / (RRF_K + r) if r > 0 else 0.0 for r in ranks]
            rows.append([float(f)] + row)
            if hit:
                credited.append(f)
        out.append({"task": 0, "rows": rows, "credited": credited + [99]})  # 99: unranked
    return out


def test_the_prior_is_fitted_on_the_informative_channel_and_left_out_per_repository():
    rng = np.random.default_rng(0)
    by_repo = {"a/a": openings_of(rng, 30, LEX), "b/b": openings_of(rng, 30, LEX),
               "c/c": openings_of(rng, 30, FREQ)}
    doc = fusion_fit.fit_document(by_repo, 10.0)
    assert doc["schema"] == prior.SCHEMA and set(doc["loro"]) == set(by_repo)
    lam = doc["all"]["lam"]
    assert math.isclose(sum(lam.values()), 10.0, rel_tol=1e-4)
    assert lam["lexical"] > lam["frequency"] > max(lam[c] for c in CHANNELS
                                                   if c not in ("lexical", "frequency"))
    # leaving out c/c (the only repository where frequency tells) leaves lexical alone
    assert doc["loro"]["c/c"]["lam"]["frequency"] < 0.5 * lam["frequency"]
    assert doc["loro"]["a/a"]["n_openings"] == 60
    # pi: the mean credit per credited file, the unranked one included
    _, _, csum, n = fusion_fit.arrays(by_repo["a/a"])
    assert n == 30 * 4 and doc["loro"]["b/b"]["pi"]["lexical"] == pytest.approx(
        float((csum[LEX] + fusion_fit.arrays(by_repo["c/c"])[2][LEX]) /
              (n + 30 * 4)), abs=1e-6)


def test_the_prior_file_is_read_and_a_broken_one_is_refused(tmp_path):
    lam, pi = prior.prior()
    assert set(lam) == set(CHANNELS) and pi["lexical"] > 0
    doc = prior.load()
    some = min(doc["loro"])
    assert prior.prior(some) != prior.prior(None)  # the held-out fit is its own
    assert prior.prior("no/such-repo") == prior.prior(None)
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"schema": prior.SCHEMA, "all": {"lam": {}}}))
    with pytest.raises(ValueError, match="needs 'lam' and 'pi'"):
        prior.load(str(bad))
    bad.write_text(json.dumps({"schema": prior.SCHEMA, "all": {"weights": {}}}))
    with pytest.raises(ValueError, match="needs 'lam' and 'pi'"):
        prior.load(str(bad))
    bad.write_text("{")
    with pytest.raises(ValueError, match="cannot read the fusion prior"):
        prior.load(str(bad))
