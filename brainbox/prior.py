"""The fusion prior and the learned gains' constants (``brainbox.learning`` has the rule).

``fusion_prior.json`` beside this module, written by ``brainbox fit``
(``brainbox.eval.fusion_fit``), holds the prompt weights (``lam``, a logistic regression on
the development replay's opening rankings, scikit-learn; used by ``--fusion fitted``) and
each channel's mean credit per credited file (``pi``, what the gains compare a project
with), fitted once on every development repository (``all``) and once leaving each out
(``loro``), so that a replay of a development repository uses a prior that never saw it.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np

from brainbox.confidence import read_document
from brainbox.kernels.policy import CHANNELS, N_CHANNELS

PRIOR_FILE = Path(__file__).with_name("fusion_prior.json")
SCHEMA = "brainbox.fusion_prior/1"
# how many credited files the prior is worth, and the gains' bounds (chosen on the dev
# replay: brainbox.recall's FUSION comment has the measurements)
GAIN_STRENGTH = 30.0
GAIN_LO, GAIN_HI = 0.25, 4.0


def load(path: str | None = None) -> dict:
    """The prior document: ``path``, else ``$BRAINBOX_FUSION_PRIOR`` (``brainbox fit``
    replays with the prior it is fitting), else the shipped one. Raises ValueError (one
    line) for a file that is not one."""
    return _load(path or os.environ.get("BRAINBOX_FUSION_PRIOR") or None)


@lru_cache(maxsize=8)
def _load(path: str | None) -> dict:
    p = Path(path) if path else PRIOR_FILE
    doc = read_document(p, "fusion prior", SCHEMA)
    for part in [doc.get("all")] + list((doc.get("loro") or {}).values()):
        if not isinstance(part, dict) or not {"lam", "pi"} <= set(part) or \
                any(not isinstance(part[k], dict) or set(part[k]) - set(CHANNELS)
                    for k in ("lam", "pi")):
            raise ValueError(f"{p}: every prior needs 'lam' and 'pi' by channel name")
    return doc


def prior(key: str | None = None, path: str | None = None) -> tuple[dict, dict]:
    """``(lam, pi)`` by channel name: the prior fitted without repository ``key`` when the
    file has one (leave-one-repository-out), else the one fitted on every repository."""
    doc = load(path)
    part = (doc.get("loro") or {}).get(key) if key else None
    part = part or doc["all"]
    return ({c: float(part["lam"].get(c, 0.0)) for c in CHANNELS},
            {c: float(part["pi"].get(c, 0.0)) for c in CHANNELS})


def new_credit() -> np.ndarray:
    return np.zeros(N_CHANNELS + 1, np.float64)
