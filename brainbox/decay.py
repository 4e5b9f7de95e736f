"""Maintenance decay of the state (DESIGN §4.2): `Decay`, which `brainbox.state.State`
extends, and what a decay does (`DecayPlan`). The rules are written down in
`brainbox.state`'s docstring (the floor at the memory's birth, `PROTECT_DAYS`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from brainbox import kernels as K
from brainbox.kernels.hebbian import DECAY_ACT, DECAY_M, DECAY_W, PRUNE_BELOW

DAY = 86400.0
PROTECT_DAYS = 7.0  # a decay never prunes an association updated this recently


class DecayPlan(NamedTuple):
    """What a decay does (`State.decay_plan`): new weights and which edges stay, per edge;
    the factors for activation and reinforcement, per resource."""

    w: np.ndarray  # float32[E] decayed weights
    keep: np.ndarray  # bool[E]
    act: np.ndarray  # float64[N] activation factor
    m: np.ndarray  # float64[N] reinforcement factor


class Decay:
    """Decay over the state's node and edge arrays (`State` provides them, and
    `_compact`, which drops the edges a decay does not keep)."""

    def decay_plan(self, at: float, floor: float | None = None) -> DecayPlan:
        """What a decay to time `at` does, without doing it (DESIGN §4.2, the rule above).

        Each association decays for the days since its last update or the previous decay,
        whichever is later, and never from before `floor` (when the memory began); one
        whose last update (or `floor`) lies within `PROTECT_DAYS` of `at` is kept whatever
        its weight. Activation and reinforcement decay the same way from each resource's
        last access."""
        lo = -np.inf if floor is None else float(floor)
        since = lo if self.last_decay is None else max(lo, float(self.last_decay))
        ne, n = int(self.n_edges[0]), self.n_res
        etime = self.etime[:ne]
        e_days = np.maximum(at - np.maximum(etime, since), 0.0) / DAY
        w = (self.ew[:ne].astype(np.float64) * DECAY_W**e_days).astype(np.float32)
        touched = np.maximum(etime, lo) >= at - PROTECT_DAYS * DAY
        keep = (w >= PRUNE_BELOW) | touched
        n_days = np.maximum(at - np.maximum(self.last[:n], since), 0.0) / DAY
        return DecayPlan(w, keep, DECAY_ACT**n_days, DECAY_M**n_days)

    def decay_to(self, at: float, floor: float | None = None) -> None:
        """Decay to time `at` (a logged maintenance event's time) by `decay_plan`."""
        plan = self.decay_plan(at, floor)
        self.last_decay = at if self.last_decay is None else max(self.last_decay, at)
        n, ne = self.n_res, plan.w.shape[0]
        self.act[:n] *= plan.act
        self.m[:n] *= plan.m
        self.ew[:ne] = plan.w
        keep = np.zeros(self.ew.shape[0], np.bool_)
        keep[:ne] = plan.keep
        self._compact(keep)

    def decay(self, days: float) -> None:
        """`days` of decay for every resource and association alike (the kernel's rule)."""
        ne = int(self.n_edges[0])
        keep = np.zeros(self.ew.shape[0], np.bool_)
        K.decay_state(self.act[: self.n_res], self.m[: self.n_res], self.ew, ne, days, keep)
        self._compact(keep)
