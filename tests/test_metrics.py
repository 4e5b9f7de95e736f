"""Metrics of the replay: reciprocal rank, coverage, MRR and the paired bootstrap."""

import copy

import numpy as np
import pytest

from brainbox.eval.metrics import (
    PROBES,
    ablation,
    coverage,
    evaluate,
    new_probe_record,
    reciprocal_rank,
)

METHODS = ("brainbox", "a", "b")


def task(rr_by_probe: dict, scored: dict | None = None, gold=3, eligible=1):
    probes = {}
    for p in PROBES:
        rec = new_probe_record(len(METHODS))
        rr = rr_by_probe.get(p)
        if rr is not None:
            rec["rr"] = list(rr)
            rec["scored"] = (scored or {}).get(p, 1)
            rec["probes"] = rec["scored"]
            rec["gold"], rec["eligible"] = gold, eligible
        probes[p] = rec
    return {"probes": probes}


def test_reciprocal_rank_uses_the_first_relevant_item_within_k():
    assert reciprocal_rank([5, 7, 9], {9, 7}, 10) == 0.5
    assert reciprocal_rank([5, 7, 9], {9}, 2) == 0.0
    assert reciprocal_rank([], {1}, 10) == 0.0
    assert reciprocal_rank([1], {1}, 10) == 1.0


def test_coverage_sums_every_counter_over_tasks():
    ts = [task({"P2": [1, 0, 0]}, gold=4, eligible=2), task({"P2": [0, 0, 0]}, gold=1, eligible=1)]
    c = coverage(ts)
    assert c["P2"] == {"gold": 5, "eligible": 3, "probes": 2, "scored": 2}
    assert c["P1-edit"] == {"gold": 0, "eligible": 0, "probes": 0, "scored": 0}


def test_mrr_is_a_micro_average_over_scored_predictions():
    # task 1: 3 predictions with RR sum 2.0; task 2: 1 prediction with RR 0.
    ts = [task({"P3": [2.0, 1.0, 0.0]}, scored={"P3": 3}), task({"P3": [0.0, 1.0, 0.0]})]
    r = evaluate(ts, METHODS, resamples=0)["P3"]
    assert r["mrr"]["brainbox"] == pytest.approx(0.5)
    assert r["mrr"]["a"] == pytest.approx(0.5)
    assert r["n"] == 2 and r["predictions"] == 4
    assert r["diff"]["b"]["ci"] is None


def test_tasks_without_scored_predictions_are_not_resampled():
    ts = [task({"P2": [1.0, 0.0, 0.0]}), task({})]
    r = evaluate(ts, METHODS, resamples=50)["P2"]
    assert r["n"] == 1
    assert r["ci"]["brainbox"] == [1.0, 1.0]
    assert evaluate(ts, METHODS, resamples=50)["P1-edit"]["mrr"]["brainbox"] is None


def test_identical_methods_have_a_zero_width_paired_interval():
    rng = np.random.default_rng(0)
    ts = []
    for _ in range(30):
        x = float(rng.random())
        ts.append(task({"P3": [x, x, x / 2]}))
    r = evaluate(ts, METHODS, resamples=200)["P3"]
    assert r["diff"]["a"]["ci"] == [0.0, 0.0]
    lo, hi = r["diff"]["b"]["ci"]
    assert 0 < lo <= r["diff"]["b"]["diff"] <= hi


def test_bootstrap_is_deterministic_for_a_seed_and_changes_with_it():
    rng = np.random.default_rng(1)
    ts = [task({"P2": [float(rng.random()), float(rng.random()), 0.0]}) for _ in range(20)]
    a = evaluate(ts, METHODS, seed=42)["P2"]["diff"]
    b = evaluate(ts, METHODS, seed=42)["P2"]["diff"]
    c = evaluate(ts, METHODS, seed=7)["P2"]["diff"]
    assert a == b
    assert a != c


def test_strongest_baseline_is_the_best_mrr_ties_by_method_order():
    ts = [task({"P3": [0.1, 0.5, 0.5]})]
    assert evaluate(ts, METHODS, resamples=0)["P3"]["strongest"] == "a"
    ts = [task({"P3": [0.1, 0.2, 0.5]})]
    assert evaluate(ts, METHODS, resamples=0)["P3"]["strongest"] == "b"


def _pair(rng, n=25):
    """(full, ablated) per-task records of the same tasks: brainbox's RR differs."""
    full, ablated = [], []
    for i in range(n):
        x, y = float(rng.random()), float(rng.random())
        f, a = task({"P2": [x, 0.3, 0.0]}), task({"P2": [y, 0.3, 0.0]})
        f["id"] = a["id"] = f"t{i}"
        full.append(f)
        ablated.append(a)
    return full, ablated


def test_an_ablation_is_judged_on_the_method_differences_resamples():
    full, ablated = _pair(np.random.default_rng(3))
    got = ablation(full, ablated, seed=42, resamples=300)["P2"]
    # the same comparison as a method difference: brainbox = full, "a" = ablated
    both = [task({"P2": [f["probes"]["P2"]["rr"][0], a["probes"]["P2"]["rr"][0], 0.0]})
            for f, a in zip(full, ablated)]
    ref = evaluate(both, METHODS, seed=42, resamples=300)["P2"]
    assert got["full"] == pytest.approx(ref["mrr"]["brainbox"])
    assert got["mrr"] == pytest.approx(ref["mrr"]["a"])
    assert got["diff"] == pytest.approx(-ref["diff"]["a"]["diff"])  # ablated minus full
    lo, hi = ref["diff"]["a"]["ci"]
    assert got["ci"] == pytest.approx([-hi, -lo])
    assert got["n"] == ref["n"] == 25
    assert ablation(full, ablated, seed=42, resamples=300)["P1-edit"]["mrr"] is None


def test_an_ablation_that_changes_nothing_has_a_zero_interval_and_records_must_line_up():
    full, _ = _pair(np.random.default_rng(4))
    same = ablation(full, full, resamples=100)["P2"]
    assert same["diff"] == 0.0 and same["ci"] == [0.0, 0.0]
    with pytest.raises(ValueError, match="different tasks"):
        ablation(full, full[1:] + full[:1])
    with pytest.raises(ValueError, match="ablated records"):
        ablation(full, full[1:])
    other = copy.deepcopy(full)
    other[0]["probes"]["P2"]["scored"] = 2
    with pytest.raises(ValueError, match="scored"):
        ablation(full, other)
