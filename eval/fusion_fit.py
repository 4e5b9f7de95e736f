"""The fusion prior (``brainbox.learning``): fitted on the development replay's opening
rankings, once on every repository and once leaving each out.

An opening ranking (a task's P1 ranking, ``brainbox.learning``) gives, for every file some
channel ranked within the credit depth, its credit row (per channel ``(k + 1) / (k + r)``,
0 when unranked) and whether the session then credited it (one of its first touched
project files). The prior is:

- ``lam``: the prompt weights, the non-negative coefficients of a logistic regression
  (scikit-learn) of "credited" on the credit rows, rescaled to sum to the chosen fusion's
  prompt weights (the scale changes no ranking);
- ``pi``: each channel's mean credit per credited file, the files no channel ranked
  included (what ``kernels.policy.gains`` compares a project's credit with).
"""

from __future__ import annotations

import numpy as np

from brainbox.kernels.policy import CHANNELS, N_CHANNELS
from brainbox.prior import SCHEMA


def arrays(openings: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(X, y, credit_sum, n_credited)`` of a list of openings (the replay's
    ``openings``)."""
    xs, ys, csum, n = [], [], np.zeros(N_CHANNELS), 0
    for op in openings:
        hit = set(op["credited"])
        n += len(hit)
        for row in op["rows"]:
            x = np.asarray(row[1:], np.float64)
            touched = int(row[0]) in hit
            xs.append(x)
            ys.append(touched)
            if touched:
                csum += x
    X = np.asarray(xs, np.float64).reshape(-1, N_CHANNELS)
    return X, np.asarray(ys, np.bool_), csum, n


def fit_one(openings: list[dict], scale: float, C: float = 1.0) -> dict:
    """One prior from ``openings``: ``{"lam", "pi", "n_openings", "n_rows",
    "n_credited"}`` (``lam`` summing to ``scale``)."""
    from sklearn.linear_model import LogisticRegression

    X, y, csum, n = arrays(openings)
    lam = np.zeros(N_CHANNELS)
    used = np.flatnonzero(X.any(axis=0)) if X.size else np.zeros(0, np.int64)
    if used.size and 0 < y.sum() < y.size:
        model = LogisticRegression(C=C, max_iter=2000)
        model.fit(X[:, used], y)
        lam[used] = np.maximum(model.coef_[0], 0.0)
    if lam.sum() > 0:
        lam *= scale / lam.sum()
    pi = csum / n if n else np.zeros(N_CHANNELS)
    return {"lam": {c: round(float(v), 6) for c, v in zip(CHANNELS, lam)},
            "pi": {c: round(float(v), 6) for c, v in zip(CHANNELS, pi)},
            "n_openings": len(openings), "n_rows": int(y.size), "n_credited": int(n)}


def fit_document(by_repo: dict, scale: float, sources=()) -> dict:
    """The prior file: ``all`` fitted on every repository of ``by_repo`` (repository ->
    openings), ``loro`` one per repository fitted without it."""
    every = [op for repo in sorted(by_repo) for op in by_repo[repo]]
    loro = {repo: fit_one([op for r in sorted(by_repo) if r != repo for op in by_repo[r]],
                          scale)
            for repo in sorted(by_repo)}
    return {"schema": SCHEMA, "channels": list(CHANNELS), "sources": list(sources),
            "all": fit_one(every, scale), "loro": loro}
