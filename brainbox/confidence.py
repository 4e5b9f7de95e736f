"""Recall's confidence as a probability (DESIGN §4.3, as issue 15 changed it).

A ranking's fused score over its maximum (``score / s_max``, in [0, 1]) orders files but
is not a probability. ``calibration.json`` beside this module holds, per context, a
non-decreasing map from that ratio to the probability that the session then touches the
file (the *horizon*: the rest of the task, in the replay's terms), fitted by isotonic
regression on the development replay (``brainbox fit``, ``brainbox.eval.calibration``).
Recall applies it by linear interpolation between the breakpoints (numpy only).

Contexts: ``prompt`` (no file of the project in the session yet: a task's opening prompt)
and ``session`` (the session has touched files of the project); their scores weigh the
channels differently.

The relevance floor is a probability (:data:`MIN_PROBABILITY`): :func:`floor` turns it into
the smallest score ratio whose probability reaches it, which the ranking kernel drops below;
a context whose map never reaches it returns nothing.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np

FILE = Path(__file__).with_name("calibration.json")
SCHEMA = "brainbox.calibration/1"
CONTEXTS = ("prompt", "session")
MIN_PROBABILITY = 0.02


def read_document(p: Path, what: str, schema: str) -> dict:
    """The JSON document at ``p`` whose ``schema`` is ``schema`` (a fitted file shipped in
    the package: this calibration, ``brainbox.prior``'s fusion prior). Raises ValueError
    (one line, naming ``what``) for a file that cannot be read or is not one."""
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read the {what} {p}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != schema:
        raise ValueError(f"{p} is not a {what} (schema {schema})")
    return doc


@lru_cache(maxsize=4)
def curves(path: str | None = None) -> dict:
    """``{context: (x, y)}`` float arrays from the calibration file (the shipped one
    by default). Raises ValueError (one line) for a file that is not a calibration."""
    p = Path(path) if path else FILE
    doc = read_document(p, "calibration file", SCHEMA)
    out = {}
    for ctx in CONTEXTS:
        c = doc["contexts"][ctx]
        x, y = np.asarray(c["x"], np.float64), np.asarray(c["y"], np.float64)
        if x.size < 1 or x.size != y.size or np.any(np.diff(x) < 0) or np.any(np.diff(y) < 0):
            raise ValueError(f"{p}: the {ctx} map is not non-decreasing breakpoints")
        out[ctx] = (x, y)
    return out


def probability(conf, context: str, path: str | None = None) -> np.ndarray:
    """The probabilities of score ratios ``conf`` in ``context``."""
    x, y = curves(path)[context]
    return np.interp(np.asarray(conf, np.float64), x, y)


@lru_cache(maxsize=16)  # recall's plan asks for both contexts' floors on every recall
def floor(context: str, p_min: float = MIN_PROBABILITY, path: str | None = None) -> float:
    """The smallest score ratio whose probability is at least ``p_min`` in ``context``
    (0 for ``p_min`` <= 0; infinity when the map never reaches it)."""
    if p_min <= 0:
        return 0.0
    x, y = curves(path)[context]
    hit = np.flatnonzero(y >= p_min)
    if hit.size == 0:
        return math.inf
    j = int(hit[0])
    if j == 0:
        return 0.0 if y[0] >= p_min else float(x[0])
    # linear between breakpoints j-1 and j (y[j-1] < p_min <= y[j])
    x0, x1, y0, y1 = x[j - 1], x[j], y[j - 1], y[j]
    return float(x0 + (x1 - x0) * (p_min - y0) / (y1 - y0)) if y1 > y0 else float(x1)
