"""Fusion learned per project, derived from the log (issue 15; the rule is in
``brainbox.kernels.policy``'s docstring, the prior in ``brainbox.prior``).

A session's opening prompt (its first prompt) is ranked once, when :func:`fold` reaches
it, over the state as it stood before it: :func:`open_session`. What each channel ranked
there, within :data:`~brainbox.kernels.policy.CREDIT_DEPTH`, is kept with the session as
per-file credit rows; the first :data:`~brainbox.kernels.policy.CREDIT_FILES` distinct files
of the project the session then touches add their rows to the project's credit
(``State.encode``), and recall at a prompt weighs each channel by the project's gain
(``kernels.policy.weights``). The user's ``brainbox feedback --useful | --wrong`` on an
injected file is a label too (``brainbox.labels``, from the correction event). Nothing here is
written to the log: folding the same events gives the same credit, so ``rebuild()``
reproduces it exactly. Every fold of the product
(``Memory.sync``, ``rebuild``) and of the Python replay goes through :func:`fold`; the
compiled replay's kernel does the same (``kernels.replay.loop``).
"""

from __future__ import annotations

import numpy as np

from brainbox.kernels import policy as KP
from brainbox.kernels.policy import CHANNELS, N_CHANNELS
from brainbox.recall import RRF_K, Index, rank

OPEN_LIMIT = 0  # the opening ranks every candidate: a limited ranking ranks only the
# contenders it needs, and which those are depends on the path (the replay's task lists)
MAX_OPEN = 32  # the openings kept (newest), so the state stays small


def fold(state, events) -> int:
    """``state.fold(events)``, ranking each session's opening prompt over the state before
    it (:func:`open_session`). Returns the number of events folded."""
    batch, count = [], 0
    for ev in events:
        if ev["kind"] == "prompt" and state.learn and \
                state.sess_index.get(ev["session"], -1) not in state.opened:
            count += state.fold(batch)
            batch = []
            if state.aliases:  # a merged old key (State.aliased), after the batch's merges
                ev = state.aliased(ev)
            open_session(state, ev)
        batch.append(ev)
    return count + state.fold(batch)


def credit_rows(ranks: np.ndarray, names, rrf_k: float) -> np.ndarray:
    """Per candidate, what crediting it adds to each channel (float64[C, N_CHANNELS]):
    ``kernels.policy.credit_file``'s rule over every candidate at once (``ranks``: rows of
    channels ``names``), the same doubles as the kernel's (the replay tests compare)."""
    full = np.zeros((ranks.shape[1], N_CHANNELS), np.int64)
    for row, name in zip(ranks, names):
        full[:, CHANNELS.index(name)] = row
    hit = (full > 0) & (full <= KP.CREDIT_DEPTH)
    return np.where(hit, (rrf_k + 1.0) / (rrf_k + full), 0.0)


def open_session(state, ev: dict) -> None:
    """Rank the session's opening prompt ``ev`` over ``state`` as it is (before ``ev`` is
    folded) and keep its credit rows with the session (``state.openings``)."""
    index = state.learn_index
    if index is None:
        index = state.learn_index = Index(state)
    sid = state.session(ev["session"])
    state.opened.add(sid)
    project = ev.get("project")
    r = rank(index, ev.get("prompt") or "", project=project, session=ev["session"],
             now=float(ev["at"]), params=state.learn_params, limit=OPEN_LIMIT)
    if r is None:
        return
    rows = credit_rows(r.ranks, r.names, RRF_K)
    keep = np.flatnonzero(rows.any(axis=1))
    state.openings[sid] = [project, {int(r.cand[j]): rows[j].tolist() for j in keep.tolist()},
                           []]
    while len(state.openings) > MAX_OPEN:
        del state.openings[next(iter(state.openings))]


def gains_of(state, project: str, params=None) -> dict[str, float]:
    """Each channel's learned gain in ``project`` (``kernels.policy.gains`` of its credit,
    under recall's plan of ``params``): 1 everywhere before anything was credited."""
    from brainbox.recall import plan

    credit = state.credit.get(project, np.zeros(N_CHANNELS + 1, np.float64))
    g = KP.gains(plan(params), np.asarray(credit, np.float64))
    return {c: float(x) for c, x in zip(CHANNELS, g.tolist())}
