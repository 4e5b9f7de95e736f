"""The user's verdicts as labels for the learned fusion (issue 18 item 3; the fusion's rule
is in ``brainbox.kernels.policy``'s docstring, its openings in ``brainbox.learning``).

`brainbox feedback PATH --useful | --wrong` on an injected file appends a correction event
(``brainbox.corrections``) that carries ``meta.channels``: each channel's rank of the file
in the injection that showed it (its latest, from the log). Folding it (``State._special``
calls :func:`label`):

- ``--useful`` counts the file as one the session touched after an opening: each channel
  that ranked it at ``r`` <= ``CREDIT_DEPTH`` gains ``(rrf_k + 1) / (rrf_k + r)``
  (``kernels.policy.credit_file``'s rule) and the project one more credited file;
- ``--wrong`` is its negative: the same credit is taken away from the channels that ranked
  it, and the project has one more credited file, so those channels lose gain and the
  others barely move (``h_c = (A pi_c + S_c) / (A + N)``; ``gains`` bounds it at
  ``gain_lo``).

A correction without channels (the file was never injected, or the label was given
already) changes nothing here. It is the event's content, so ``rebuild()`` reproduces it.
Here, not in ``brainbox.learning``, because the state folds it and learning imports recall
(which imports the state).
"""

from __future__ import annotations

import numpy as np

from brainbox.kernels.policy import CHANNELS, CREDIT_DEPTH, N_CHANNELS, RRF_K


def credit_row(channels) -> np.ndarray:
    """What crediting a file ranked as ``channels`` ({channel name: rank}) adds to each
    channel (float64[N_CHANNELS]); unknown names and ranks past the depth add 0."""
    row = np.zeros(N_CHANNELS, np.float64)
    for name, r in (channels or {}).items():
        if name in CHANNELS and isinstance(r, (int, float)) and not isinstance(r, bool) \
                and 0 < int(r) <= CREDIT_DEPTH:
            row[CHANNELS.index(name)] = (RRF_K + 1.0) / (RRF_K + int(r))
    return row


def label(state, project: str, channels, useful: bool) -> None:
    """Fold one verdict on a file the channels ``channels`` ranked into ``project``'s
    credit (module docstring): added when ``useful``, else taken away."""
    if not state.learn or not isinstance(channels, dict):
        return
    row = credit_row(channels)
    if not row.any():
        return
    credit = state.credit.get(project)
    if credit is None:
        credit = state.credit[project] = np.zeros(N_CHANNELS + 1, np.float64)
    credit[:N_CHANNELS] += row if useful else -row
    credit[N_CHANNELS] += 1.0
