"""Calibrated confidence (DESIGN §4.3 as changed by issue 15): how the replay turns the
engine's ranked files into outcomes, fits the map from a ranking score to a probability, and
measures how well calibrated it is.

**Outcome.** Every file the engine ranks in its top 10 at a probe is one prediction: at P1
(the task description, before anything of the task) and at each P2 step (before the step's
event is recorded). Its outcome is whether the task then touches the file, at that step or
any later one (the *horizon*: the rest of the task, :data:`HORIZON`). Both replay loops give
the predictions as ``(event, file id, confidence)``, event -1 for P1 (:func:`outcomes`).

**Contexts.** A ranking made with no file of the project in the session (P1: a prompt that
opens a task) and one made inside a session that has touched files (P2) weigh the channels
differently (recency weighs 30 when the query refers to the session), so their scores mean
different things: each context has its own map (:data:`CONTEXTS`).

**Fit.** Isotonic regression (scikit-learn's ``IsotonicRegression``, increasing, clipped to
[0, 1]) of the outcome on the confidence, per context: a non-decreasing step function kept as
its breakpoints ``(x, y)``, which recall applies by linear interpolation (:func:`apply`,
numpy only, so recall never imports scikit-learn). :func:`leave_one_out` fits, for each
repository, a map on every other repository's predictions and applies it to that one's, so
no repository's figure comes from a map that saw it.

**Measure.** Expected calibration error over 10 equal-width probability bins
(:func:`reliability`): ``sum_b n_b / n |mean p_b - mean outcome_b|``.
"""

from __future__ import annotations

import numpy as np

HORIZON = "the rest of the task"
CONTEXTS = ("prompt", "session")  # P1-like (no session files), P2-like
N_BINS = 10


def outcomes(rows: np.ndarray, event_files: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(context, confidence, hit)`` of a task's predictions. ``rows``: float[M, 4] of
    ``(event, file id, confidence, context)``, event -1 for P1, else the P2 step's event,
    context 1 when the session held a project file; ``event_files[j]``: the file ids event
    ``j`` of the task touches. A prediction made before event ``i`` hits when event ``i`` or
    a later one touches it."""
    ptr = np.cumsum([0] + [len(f) for f in event_files])
    flat = np.asarray([int(f) for fids in event_files for f in fids], np.int64)
    return outcomes_csr(rows, ptr, flat)


def outcomes_csr(rows: np.ndarray, ptr: np.ndarray, flat: np.ndarray):
    """:func:`outcomes` with the events' files as CSR: event ``j`` touches
    ``flat[ptr[j]:ptr[j + 1]]``. Vectorised: each file's last event, then one comparison."""
    rows = np.asarray(rows, np.float64).reshape(-1, 4)
    ev = rows[:, 0].astype(np.int64)
    fid = rows[:, 1].astype(np.int64)
    flat = np.asarray(flat, np.int64)
    js = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))  # each touch's event
    last = np.full(int(max(flat.max(initial=-1), fid.max(initial=-1))) + 1, -2, np.int64)
    np.maximum.at(last, flat[flat >= 0], js[flat >= 0])
    known = fid >= 0
    hit = np.zeros(fid.shape[0], np.bool_)
    hit[known] = last[fid[known]] >= np.maximum(ev[known], 0)
    return rows[:, 3].astype(np.int8), rows[:, 2].copy(), hit


def merge(parts: list) -> dict:
    """Tasks' :func:`outcomes` as one series' ``{"context", "confidence", "hit"}`` lists (the
    replay's result, picklable and JSON-able)."""
    if not parts:
        return {"context": [], "confidence": [], "hit": []}
    return {"context": np.concatenate([p[0] for p in parts]).tolist(),
            "confidence": np.concatenate([p[1] for p in parts]).tolist(),
            "hit": np.concatenate([p[2] for p in parts]).tolist()}


def arrays(cal: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A :func:`merge` result as arrays ``(context, confidence, hit)``."""
    return (np.asarray(cal["context"], np.int8), np.asarray(cal["confidence"], np.float64),
            np.asarray(cal["hit"], np.bool_))


def fit(conf: np.ndarray, hit: np.ndarray) -> tuple[list[float], list[float]]:
    """The isotonic map's breakpoints ``(x, y)`` (x ascending) fitted to ``hit`` on
    ``conf``; ``([0, 1], [p, p])`` with ``p`` the hit rate for fewer than two distinct
    confidences, and ``([0, 1], [0, 0])`` without predictions."""
    from sklearn.isotonic import IsotonicRegression

    conf = np.asarray(conf, np.float64)
    hit = np.asarray(hit, np.float64)
    if conf.size == 0:
        return [0.0, 1.0], [0.0, 0.0]
    if np.unique(conf).size < 2:
        p = float(hit.mean())
        return [0.0, 1.0], [p, p]
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
    iso.fit(conf, hit)
    return iso.X_thresholds_.tolist(), iso.y_thresholds_.tolist()


def apply(curve, conf) -> np.ndarray:
    """Probabilities of ``conf`` under a fitted map ``(x, y)`` (clipped at its ends)."""
    x, y = curve
    return np.interp(np.asarray(conf, np.float64), np.asarray(x), np.asarray(y))


def reliability(p: np.ndarray, hit: np.ndarray, bins: int = N_BINS) -> dict:
    """``{"ece", "n", "bins": [{"lo", "hi", "n", "mean_p", "rate"}]}`` over equal-width
    probability bins (a probability of exactly 1 falls in the last bin)."""
    p = np.asarray(p, np.float64)
    hit = np.asarray(hit, np.float64)
    n = int(p.size)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.minimum((p * bins).astype(np.int64), bins - 1) if n else np.zeros(0, np.int64)
    out, ece = [], 0.0
    for b in range(bins):
        m = which == b
        k = int(m.sum())
        mean_p = float(p[m].mean()) if k else None
        rate = float(hit[m].mean()) if k else None
        if k:
            ece += k / n * abs(mean_p - rate)
        out.append({"lo": float(edges[b]), "hi": float(edges[b + 1]), "n": k,
                    "mean_p": mean_p, "rate": rate})
    return {"ece": float(ece) if n else None, "n": n, "bins": out}


MAX_FOLDS = 20  # beyond it, repositories are held out in folds (a catalogue's thousands)


def leave_one_out(groups: dict, max_folds: int = MAX_FOLDS) -> dict:
    """Leave-one-repository-out calibration. ``groups``: repository -> ``(context,
    confidence, hit)`` arrays. Each repository's probabilities come from maps fitted on the
    other repositories' predictions of the same context. Returns ``{"contexts": {name:
    reliability}, "all": reliability}`` over the pooled held-out probabilities.

    With more than ``max_folds`` repositories, they are held out ``max_folds`` folds at a
    time (repository i of the sorted names in fold i mod max_folds): a fit per fold, not
    per repository, which the leave-one-out of a 2,000-repository catalogue (a fit of every
    other repository's predictions for each) made quadratic: 284 s of a 400k-event
    replay's 327 s. Up to ``max_folds`` repositories, each fold is one: leave-one-out."""
    names = sorted(groups)
    k = max(1, min(len(names), max_folds))
    folds = [names[i::k] for i in range(k)]
    pooled_p = {c: [] for c in range(len(CONTEXTS))}
    pooled_h = {c: [] for c in range(len(CONTEXTS))}
    for c in range(len(CONTEXTS)):
        per = {}  # repository -> its (confidence, hit) of context c
        for name in names:
            ctx, conf, hit = groups[name]
            mine = ctx == c
            per[name] = (conf[mine], hit[mine])
        for i, fold in enumerate(folds):
            held = [per[n] for n in fold if per[n][0].size]
            if not held:
                continue
            rest = [per[n] for j, f in enumerate(folds) if j != i for n in f]
            x = np.concatenate([r[0] for r in rest]) if rest else np.zeros(0)
            y = np.concatenate([r[1] for r in rest]) if rest else np.zeros(0, np.bool_)
            curve = fit(x, y)
            for conf, hit in held:
                pooled_p[c].append(apply(curve, conf))
                pooled_h[c].append(hit)
    out = {"contexts": {}}
    all_p, all_h = [], []
    for c, cname in enumerate(CONTEXTS):
        p = np.concatenate(pooled_p[c]) if pooled_p[c] else np.zeros(0)
        h = np.concatenate(pooled_h[c]) if pooled_h[c] else np.zeros(0, np.bool_)
        out["contexts"][cname] = reliability(p, h)
        all_p.append(p)
        all_h.append(h)
    out["all"] = reliability(np.concatenate(all_p), np.concatenate(all_h))
    return out


FIT_VIEW = "all"  # the product ranks every file, the agent's own included


def fit_document(result: dict, view: str = FIT_VIEW) -> dict:
    """The calibration file (``brainbox.confidence``'s schema) fitted on every prediction of
    a replay ``result`` made with ``calibration_rows`` (``brainbox fit``): one isotonic map
    per context over all repositories, with what it was fitted on and its held-out error
    (leave-one-repository-out, the same fit). Deterministic: no time stamp."""
    from brainbox import confidence

    cal = result["calibration"][view]
    groups = {repo: arrays(rows) for repo, rows in cal["rows"].items()}
    ctx = np.concatenate([g[0] for g in groups.values()])
    conf = np.concatenate([g[1] for g in groups.values()])
    hit = np.concatenate([g[2] for g in groups.values()])
    contexts = {}
    for c, name in enumerate(CONTEXTS):
        m = ctx == c
        x, y = fit(conf[m], hit[m])
        contexts[name] = {"x": x, "y": y, "n": int(m.sum()),
                          "rate": float(hit[m].mean()) if m.any() else None,
                          "ece_leave_one_repository_out": cal["contexts"][name]["ece"]}
    st = result["settings"]
    return {
        "schema": confidence.SCHEMA,
        "horizon": HORIZON,
        "fitted_on": {"view": view, "fusion": st.get("fusion"),
                      "min_probability": st.get("min_probability"),
                      "source_commit": result.get("source_commit"),
                      "inputs": [{"source": i["source"], "files": len(i["files"]),
                                  "sha256": _digest(i)} for i in result.get("inputs", [])],
                      "repositories": len(groups), "predictions": int(conf.size)},
        "contexts": contexts,
    }


def _digest(manifest: dict) -> str:
    """One SHA-256 over a source manifest's (path, sha256) pairs."""
    import hashlib

    h = hashlib.sha256()
    for f in manifest["files"]:
        h.update(f"{f['path']}\0{f['sha256']}\n".encode())
    return h.hexdigest()
