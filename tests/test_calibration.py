"""Calibrated confidence: the replay's outcomes, the isotonic fit, the error measure, the
leave-one-repository-out protocol (brainbox.eval.calibration), and recall's use of the
shipped map (brainbox.confidence)."""

import json
import math

import numpy as np
import pytest

from brainbox import confidence
from brainbox.eval import calibration as C


def test_a_prediction_hits_when_its_event_or_a_later_one_touches_the_file():
    # P1 (event -1) predicts files 3 and 4; at event 1 (a P2 step) files 3 and 5
    rows = np.asarray([[-1, 3, 0.9, 0], [-1, 4, 0.5, 0], [1, 3, 0.8, 1], [1, 5, 0.4, 1]])
    touched = [[4], [5], [], [9]]  # file 4 only at event 0: before event 1
    ctx, conf, hit = C.outcomes(rows, touched)
    assert ctx.tolist() == [0, 0, 1, 1]
    assert conf.tolist() == [0.9, 0.5, 0.8, 0.4]
    assert hit.tolist() == [False, True, False, True]
    rows = np.asarray([[2, 4, 0.7, 1]])
    assert C.outcomes(rows, touched)[2].tolist() == [False]  # 4 was touched at 0 < 2


def _outcomes_reference(rows, event_files):
    """The plain rule, one prediction at a time: each file's last touching event."""
    last = {}
    for j, fids in enumerate(event_files):
        for f in fids:
            last[int(f)] = j
    return [last.get(int(f), -2) >= max(int(e), 0) for e, f, _c, _x in rows.tolist()]


@pytest.mark.parametrize("seed", range(20))
def test_vectorised_outcomes_match_the_plain_rule(seed):
    rng = np.random.default_rng(seed)
    n_ev, n_files = int(rng.integers(0, 30)), int(rng.integers(1, 40))
    touched = [rng.integers(0, n_files, rng.integers(0, 4)).tolist() for _ in range(n_ev)]
    m = int(rng.integers(0, 50))
    rows = np.column_stack([rng.integers(-1, max(n_ev, 1), m), rng.integers(0, n_files + 5, m),
                            rng.random(m), rng.integers(0, 2, m)]).astype(np.float64)
    ctx, conf, hit = C.outcomes(rows, touched)
    assert hit.tolist() == _outcomes_reference(rows, touched)
    assert conf.tolist() == rows[:, 2].tolist() and ctx.tolist() == rows[:, 3].tolist()
    ptr = np.cumsum([0] + [len(t) for t in touched])
    flat = np.asarray([f for t in touched for f in t], np.int64)
    assert C.outcomes_csr(rows, ptr, flat)[2].tolist() == hit.tolist()


def test_the_isotonic_map_is_non_decreasing_and_fits_a_step():
    rng = np.random.default_rng(0)
    conf = rng.random(4000)
    hit = rng.random(4000) < np.where(conf > 0.5, 0.8, 0.1)
    x, y = C.fit(conf, hit)
    assert np.all(np.diff(x) >= 0) and np.all(np.diff(y) >= 0)
    p = C.apply((x, y), [0.2, 0.9])
    assert abs(p[0] - 0.1) < 0.05 and abs(p[1] - 0.8) < 0.05
    assert C.fit([], []) == ([0.0, 1.0], [0.0, 0.0])
    assert C.fit([0.3, 0.3], [True, False]) == ([0.0, 1.0], [0.5, 0.5])


def test_expected_calibration_error_by_hand():
    # bin [0.1, 0.2): p 0.1 x2, both miss -> |0.1 - 0| ; bin [0.9, 1]: p 0.95, 1.0, hit 1, 0
    p = np.asarray([0.1, 0.1, 0.95, 1.0])
    hit = np.asarray([False, False, True, False])
    r = C.reliability(p, hit)
    assert r["ece"] == pytest.approx(0.5 * 0.1 + 0.5 * abs(0.975 - 0.5))
    assert [b["n"] for b in r["bins"]] == [0, 2, 0, 0, 0, 0, 0, 0, 0, 2]
    assert C.reliability(np.zeros(0), np.zeros(0, bool))["ece"] is None


def test_leave_one_out_never_uses_a_repositorys_own_predictions():
    """Repository a always hits, b never does: a map fitted on the others predicts a's hits
    at b's rate and the reverse, so the held-out error is total; in-sample it would be 0."""
    conf = np.linspace(0.05, 0.95, 50)
    groups = {"a": (np.zeros(50, np.int8), conf, np.ones(50, bool)),
              "b": (np.zeros(50, np.int8), conf, np.zeros(50, bool))}
    out = C.leave_one_out(groups)
    assert out["contexts"]["prompt"]["ece"] == pytest.approx(1.0)
    assert out["contexts"]["session"]["n"] == 0
    assert out["all"]["n"] == 100


def test_many_repositories_are_held_out_in_folds_never_with_their_own():
    """Beyond max_folds repositories, repository i is held out with fold i mod max_folds:
    a fold of always-hit repositories (a0, a1) and one of never-hit (b0, b1) predict each
    other, so the held-out error is total; with a fold per repository it would not be."""
    conf = np.linspace(0.05, 0.95, 30)
    hits = {"a0": True, "a1": False, "b0": True, "b1": False}  # folds: (a0 b0), (a1 b1)
    groups = {n: (np.zeros(30, np.int8), conf, np.full(30, h)) for n, h in hits.items()}
    out = C.leave_one_out(groups, max_folds=2)
    assert out["contexts"]["prompt"]["ece"] == pytest.approx(1.0)
    assert out["all"]["n"] == 120
    assert C.leave_one_out(groups, max_folds=4)["contexts"]["prompt"]["ece"] < 0.9
    assert C.leave_one_out(groups) == C.leave_one_out(groups, max_folds=4)  # <= 20: one each


def _write(tmp_path, prompt, session):
    doc = {"schema": confidence.SCHEMA,
           "contexts": {"prompt": {"x": prompt[0], "y": prompt[1]},
                        "session": {"x": session[0], "y": session[1]}}}
    p = tmp_path / "cal.json"
    p.write_text(json.dumps(doc))
    return str(p)


def test_probability_interpolates_and_the_floor_inverts_it(tmp_path):
    path = _write(tmp_path, ([0.0, 0.5, 1.0], [0.0, 0.1, 0.9]), ([0.0, 1.0], [0.0, 0.01]))
    assert confidence.probability([0.25, 0.75, 2.0], "prompt", path).tolist() == \
        pytest.approx([0.05, 0.5, 0.9])
    assert confidence.floor("prompt", 0.05, path) == pytest.approx(0.25)
    assert confidence.floor("prompt", 0.5, path) == pytest.approx(0.75)
    assert confidence.floor("prompt", 0.0, path) == 0.0
    assert confidence.floor("session", 0.05, path) == math.inf  # never reached: no results


def test_a_file_that_is_not_a_calibration_is_refused_in_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "other"}')
    with pytest.raises(ValueError) as e:
        confidence.curves(str(bad))
    assert "not a calibration file" in str(e.value) and "\n" not in str(e.value)
    dec = _write(tmp_path, ([0.0, 1.0], [0.5, 0.2]), ([0.0, 1.0], [0.0, 1.0]))
    with pytest.raises(ValueError, match="non-decreasing"):
        confidence.curves(dec)


def test_the_shipped_calibration_loads_and_is_a_probability_map():
    cur = confidence.curves()
    for ctx in confidence.CONTEXTS:
        x, y = cur[ctx]
        assert 0.0 <= y.min() and y.max() <= 1.0 and x.size == y.size
    doc = json.loads(confidence.FILE.read_text())
    assert doc["schema"] == confidence.SCHEMA


def test_recall_reports_the_calibrated_probability(tmp_path):
    """A result's confidence is the shipped map applied to its score ratio, in the
    ranking's context."""
    from brainbox.memory import Memory

    mem = Memory.open(tmp_path / "b.db")
    for i, f in enumerate(["src/auth/login.py", "src/auth/session.py", "README.md"]):
        mem.record({"session": "s1", "cwd": "/repo", "project": "/repo", "tool": "Read",
                    "files": [f"/repo/{f}"], "at": 1_700_000_000 + i})
    res = mem.recall("auth login", project="/repo")
    assert res
    for r in res:
        want = float(confidence.probability([min(r.ratio, 1.0)], "prompt")[0])
        assert r.confidence == pytest.approx(want)


def test_fit_writes_a_calibration_recall_can_read_and_dry_run_writes_nothing(tmp_path,
                                                                               data_dir):
    """`brainbox fit` on one real source: a valid file (monotone maps, what it was fitted
    on), the same maps when fitted again, and nothing written with --dry-run."""
    from click.testing import CliRunner

    from brainbox.cli.app import cli

    src = data_dir / "trajectories" / "openhands-codeact-verified50"
    if not src.exists():
        pytest.skip("the openhands trajectories are absent")
    from brainbox import prior as fusion_prior

    shipped = fusion_prior.PRIOR_FILE.read_bytes()
    out, prior = tmp_path / "cal.json", tmp_path / "prior.json"
    r = CliRunner().invoke(cli, ["fit", str(src), "--out", str(out), "--prior-out", str(prior),
                                 "--no-progress"])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    # the fusion prior beside it: every repository of the source held out once
    pdoc = fusion_prior.load(str(prior))
    assert pdoc["all"]["n_openings"] > 0 and pdoc["loro"]
    assert all(p["n_openings"] < pdoc["all"]["n_openings"] for p in pdoc["loro"].values())
    assert fusion_prior.PRIOR_FILE.read_bytes() == shipped  # written where it was told
    cur = confidence.curves(str(out))
    assert set(cur) == set(confidence.CONTEXTS) and doc["fitted_on"]["view"] == "all"
    assert doc["fitted_on"]["min_probability"] == 0.0  # fitted without the floor it replaces
    assert sum(c["n"] for c in doc["contexts"].values()) == doc["fitted_on"]["predictions"] > 0
    again = tmp_path / "again.json"
    prior2 = tmp_path / "prior2.json"
    assert CliRunner().invoke(cli, ["fit", str(src), "--out", str(again), "--prior-out",
                                    str(prior2), "--no-progress"]).exit_code == 0
    assert json.loads(again.read_text())["contexts"] == doc["contexts"]
    assert json.loads(prior2.read_text()) == json.loads(prior.read_text())
    dry, dry_prior = tmp_path / "dry.json", tmp_path / "dry-prior.json"
    r = CliRunner().invoke(cli, ["fit", str(src), "--out", str(dry), "--prior-out",
                                 str(dry_prior), "--dry-run", "--no-progress"])
    assert r.exit_code == 0 and "nothing written" in r.output and not dry.exists()
    assert not dry_prior.exists()
