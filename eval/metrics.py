"""Ranking metrics, coverage and the paired bootstrap of the replay (DESIGN §5, paper §4.4).

Everything here works on *per-task records*: for each task and probe, how many gold targets
and eligible targets it had, how many predictions were made and scored, and for every
method the **sum** of reciprocal ranks over its scored predictions. From those:

- MRR of a method over a cohort = sum of RR / number of scored predictions (a micro average:
  for P2/P3 long trajectories weigh more, as in the paper; for P1 each task contributes one
  prediction, so it is the mean over tasks).
- *n* = trajectories with at least one scored prediction for the probe.
- The paired bootstrap resamples those *n* trajectories with replacement (tasks without a
  scored prediction carry no information about the difference, so they are left out of the
  resampling, matching the paper's *n*). One draw of indices per probe is shared by every
  method, so the interval of "brainbox minus baseline" is paired and every baseline is judged
  on the same resamples. Percentile intervals (numpy's default linear interpolation).

Determinism: a fresh ``numpy.random.default_rng([seed, probe number])`` per probe, so the
interval of a probe does not depend on which other probes or methods are present.

Ablations (:func:`ablation`) are judged with the same bootstrap: the full model's and the
ablated model's brainbox records of the same tasks become two "methods" of one record
per task, so "ablated minus full" is paired over whole trajectories and drawn from the
very resamples the method differences of the cohort use (the same *n*, the same seed).
"""

from __future__ import annotations

import numpy as np

from brainbox.kernels import scoring

PROBES = ("P1-edit", "P1-read", "P2", "P3")
PROBE_LABELS = {"P1-edit": "P1-edit", "P1-read": "P1-read", "P2": "P2 next file",
                "P3": "P3 next tool"}
K_FILES, K_TOOLS = 10, 3


def reciprocal_rank(ranking, gold, k: int) -> float:
    """1/rank of the first member of ``gold`` among the first ``k`` of ``ranking``; else 0
    (``brainbox.kernels.scoring.reciprocal_rank`` of that position)."""
    if len(gold) == 1:
        (g,) = gold
        try:
            i = ranking.index(g, 0, k)
        except ValueError:
            i = -1
        return scoring.reciprocal_rank(i)
    i = next((i for i, item in enumerate(ranking[:k]) if item in gold), -1)
    return scoring.reciprocal_rank(i)


def new_probe_record(n_methods: int) -> dict:
    """Counters of one probe in one task (see the module docstring)."""
    return {"gold": 0, "eligible": 0, "probes": 0, "scored": 0, "rr": [0.0] * n_methods}


def coverage(tasks: list[dict], probes=PROBES) -> dict:
    """Table 2 of the paper: per probe, gold targets, eligible, probes, scored."""
    out = {}
    for p in probes:
        row = {"gold": 0, "eligible": 0, "probes": 0, "scored": 0}
        for t in tasks:
            rec = t["probes"][p]
            for key in row:
                row[key] += rec[key]
        out[p] = row
    return out


def _arrays(tasks: list[dict], probe: str, n_methods: int):
    """(rr sums: tasks x methods, scored counts) over tasks with a scored prediction."""
    rows = [t["probes"][probe] for t in tasks if t["probes"][probe]["scored"] > 0]
    rr = np.asarray([r["rr"] for r in rows], np.float64).reshape(len(rows), n_methods)
    cnt = np.asarray([r["scored"] for r in rows], np.float64)
    return rr, cnt


def evaluate(tasks: list[dict], methods: tuple, *, seed: int = 42, resamples: int = 1000,
             probes=PROBES, level: float = 0.95) -> dict:
    """MRR per probe and method, the strongest baseline, and paired bootstrap intervals.

    ``methods[0]`` is the system under test (brainbox); the rest are baselines. Returns
    ``{probe: {"n", "predictions", "mrr": {m: x}, "ci": {m: [lo, hi]},
    "diff": {baseline: {"diff", "ci"}}, "strongest": baseline}}``; MRRs are ``None`` when
    nothing was scored.
    """
    out = {}
    alpha = (1.0 - level) / 2.0
    for pi, probe in enumerate(probes):
        rr, cnt = _arrays(tasks, probe, len(methods))
        n = int(cnt.size)
        res = {"n": n, "predictions": int(cnt.sum()), "mrr": {}, "ci": {}, "diff": {},
               "strongest": None}
        if n == 0:
            res["mrr"] = {m: None for m in methods}
            out[probe] = res
            continue
        total = cnt.sum()
        mrr = rr.sum(axis=0) / total
        res["mrr"] = {m: float(mrr[j]) for j, m in enumerate(methods)}
        if resamples > 0:
            rng = np.random.default_rng([seed, pi])
            idx = rng.integers(0, n, size=(resamples, n))
            den = cnt[idx].sum(axis=1)
            boot = np.stack([rr[:, j][idx].sum(axis=1) / den for j in range(len(methods))])
            qs = [100 * alpha, 100 * (1 - alpha)]
            for j, m in enumerate(methods):
                lo, hi = np.percentile(boot[j], qs)
                res["ci"][m] = [float(lo), float(hi)]
            for j, m in enumerate(methods[1:], start=1):
                lo, hi = np.percentile(boot[0] - boot[j], qs)
                res["diff"][m] = {"diff": float(mrr[0] - mrr[j]), "ci": [float(lo), float(hi)]}
        else:
            for j, m in enumerate(methods[1:], start=1):
                res["diff"][m] = {"diff": float(mrr[0] - mrr[j]), "ci": None}
        best = max(range(1, len(methods)), key=lambda j: (mrr[j], -j))
        res["strongest"] = methods[best]
        out[probe] = res
    return out


def ablation(full: list[dict], ablated: list[dict], *, method: int = 0, seed: int = 42,
             resamples: int = 1000, probes=PROBES, level: float = 0.95) -> dict:
    """The effect of an ablation on method ``method`` (0: brainbox) of the per-task records
    ``full`` and ``ablated`` (two replays of the same tasks, in the same order): ``{probe:
    {"mrr": ablated MRR, "full": full MRR, "diff": ablated minus full, "ci": [lo, hi] or
    None, "n"}}``, through :func:`evaluate`'s paired bootstrap. Raises ``ValueError`` when
    the records are not of the same tasks with the same scored predictions (the probes a
    replay scores do not depend on the model, so they always are for one series)."""
    if len(full) != len(ablated):
        raise ValueError(f"{len(ablated)} ablated records for {len(full)} tasks")
    rows = []
    for f, a in zip(full, ablated):
        if f.get("id") != a.get("id") or f.get("repo") != a.get("repo"):
            raise ValueError(f"records of different tasks: {f.get('id')!r}, {a.get('id')!r}")
        row = {}
        for p in probes:
            fp, ap = f["probes"][p], a["probes"][p]
            if fp["scored"] != ap["scored"]:
                raise ValueError(f"task {f.get('id')!r}: {p} scored {fp['scored']} times in "
                                 f"the full replay, {ap['scored']} ablated")
            row[p] = {"scored": fp["scored"], "rr": [ap["rr"][method], fp["rr"][method]]}
        rows.append({"probes": row})
    res = evaluate(rows, ("ablated", "full"), seed=seed, resamples=resamples, probes=probes,
                   level=level)
    return {p: {"mrr": r["mrr"]["ablated"], "full": r["mrr"]["full"], "n": r["n"],
                "diff": r["diff"]["full"]["diff"] if r["n"] else None,
                "ci": r["diff"]["full"]["ci"] if r["n"] else None}
            for p, r in res.items()}
