"""Recall's policy as one plan, and the rules that depend on the query (DESIGN §4.3).

A recall and the compiled replay rank files by the same policy: which channels count and
how much (the weights ``lam``, the reciprocal-rank constant ``rrf_k``), the floors, the
spreading and recurrence settings. :class:`Plan` holds it, built and validated once by
``brainbox.recall.plan`` from ``Params``; the two rules that depend on the query and the
session are jitted functions here, called by ``brainbox.recall`` (one recall) and by the
replay's per-event loop (``kernels.replay``), so neither keeps its own copy:

- :func:`in_session`: has the session touched a file of the project (the recency switch and
  the ranking's context; the rule and its measurement are in ``brainbox.recall``'s
  docstring)?
- :func:`weights`: the channel weights of one ranking (recency ``recency_session`` instead
  of its plan weight in a session; at a prompt, the plan's weights times the project's
  learned gains, :func:`gains`) and ``s_max``, the fused score of a file ranked first by
  every channel in use (score ratio = score / ``s_max``).

Fusion learned per project (issue 15): a session's opening prompt is ranked once (the
product when it folds the prompt, ``brainbox.learning``; the replay at P1), and the first
:data:`CREDIT_FILES` distinct project files the session then touches credit each channel
with :func:`credit_file` (``(rrf_k + 1) / (rrf_k + r)`` for a file it ranked at ``r`` <=
:data:`CREDIT_DEPTH`, else 0). The project's ``credit`` (float64[N_CHANNELS + 1]: the sums,
then the number of credited files ``N``) gives each channel the gain
``h_c / pi_c`` with ``h_c = (A pi_c + S_c) / (A + N)``, bounded to ``[gain_lo, gain_hi]``:
``pi_c`` is the prior's mean credit (fitted leave-one-repository-out on the development set,
``brainbox fit``), ``A`` (``gain_strength``) how many credited files the prior is worth.
A channel the project's sessions follow more than the prior's projects did gains weight.

Channels are indexed by ``kernels.channels``' constants (the rows of ``rank_files``'
``ranks``); :data:`CHANNELS` names them in that order.
"""

from collections import namedtuple

import numpy as np

from ._jit import jit
from .channels import (
    ASSOCIATIVE,
    BASE_LEVEL,
    FREQUENCY,
    LEXICAL,
    N_CHANNELS,
    RECENCY,
    RECURRENCE,
    SNIPPET,
)

__all__ = [
    "ASSOCIATIVE",
    "BASE_LEVEL",
    "CHANNELS",
    "CREDIT_DEPTH",
    "CREDIT_FILES",
    "FREQUENCY",
    "LEXICAL",
    "N_CHANNELS",
    "RECENCY",
    "RECURRENCE",
    "RRF_K",
    "SNIPPET",
    "Plan",
    "credit_file",
    "gains",
    "in_session",
    "weights",
]

RRF_K = 20.0  # recall's reciprocal-rank constant (brainbox.recall.RRF_K), that of the credit
CREDIT_DEPTH = 20  # a channel earns credit for a file it ranked this high or higher
CREDIT_FILES = 10  # the distinct project files an opening ranking is credited with

# the channels' names, in the order of their indices (kernels.channels)
CHANNELS = ("lexical", "associative", "snippet", "frequency", "recency", "base_level",
            "recurrence")

Plan = namedtuple("Plan", (
    "lam lam_prompt use rrf_k recency_session min_conf min_conf_session seeds hops topk w_floor a_floor "
    "recurrence_from top_n max_terms path_w gain_pi gain_strength gain_lo gain_hi"))
Plan.__doc__ = """One recall's policy (``brainbox.recall.plan`` builds and checks it).

- ``lam`` float64[N_CHANNELS]: channel weights in a session, in channel order;
  ``lam_prompt`` those at a prompt (no project file in the session), before the gains;
- ``use`` bool[N_CHANNELS]: the channels that rank (not ablated; snippet only with an index);
- ``rrf_k``: the reciprocal-rank constant; ``recency_session``: the recency weight when the
  query refers to the session (:func:`weights`);
- ``min_conf``, ``min_conf_session``: results whose score ratio (score / ``s_max``) is
  below this are dropped, without and with a project file in the session: the relevance
  floor, a probability, through each context's calibration (``brainbox.confidence``);
- ``seeds``, ``hops``, ``topk``, ``w_floor``, ``a_floor``: spreading activation (seeds, hops,
  per-node fan-out, weight and activation floors, ``kernels.spread``);
- ``recurrence_from``: the recurrence channel reads the session's newest this many resources;
- ``top_n``: the frequency, recency and base-level channels rank this many files;
- ``max_terms``: the lexical channel scores at most this many query terms (0: all);
- ``path_w``: the lexical channel's bonus per IDF of a query term in a file's path;
- ``gain_pi`` float64[N_CHANNELS], ``gain_strength``, ``gain_lo``, ``gain_hi``: the learned
  gains' prior mean credits, prior strength and bounds (:func:`gains`); a ``gain_pi`` of 0
  gives that channel gain 1 (not learned), as does ``gain_strength`` <= 0.
"""


@jit
def in_session(window, in_proj):
    """Does the session's ``window`` (resource ids) hold a file of the project
    (``in_proj``)? The context of a ranking: recency weighs ``recency_session`` then
    (:func:`weights`), the floor is ``min_conf_session``; the rule and its measurement are
    in ``brainbox.recall``'s docstring."""
    for j in range(window.shape[0]):
        if in_proj[window[j]]:
            return True
    return False


@jit
def gains(plan, credit):
    """Each channel's learned gain from a project's ``credit`` (float64[N_CHANNELS + 1], the
    module docstring's rule): 1 where the plan learns nothing."""
    g = np.ones(N_CHANNELS, np.float64)
    a = plan.gain_strength
    if a <= 0 or credit.shape[0] < N_CHANNELS + 1 or credit[N_CHANNELS] <= 0:
        return g  # nothing credited yet: exactly the plan's weights
    n = credit[N_CHANNELS]
    for ch in range(N_CHANNELS):
        pi = plan.gain_pi[ch]
        if pi > 0:
            h = (a * pi + credit[ch]) / (a + n)
            g[ch] = min(max(h / pi, plan.gain_lo), plan.gain_hi)
    return g


@jit
def credit_file(credit, ranks, rrf_k):
    """Credit one touched file: ``ranks`` int64[N_CHANNELS] its rank by each channel in the
    opening ranking (0: not ranked, or not in it at all); adds ``(rrf_k + 1) / (rrf_k + r)``
    for ``r`` <= :data:`CREDIT_DEPTH` to ``credit[c]``, and 1 to ``credit[N_CHANNELS]``."""
    for ch in range(N_CHANNELS):
        r = ranks[ch]
        if 0 < r <= CREDIT_DEPTH:
            credit[ch] += (rrf_k + 1.0) / (rrf_k + r)
    credit[N_CHANNELS] += 1.0


@jit
def weights(plan, refers, credit):
    """``(lam, s_max)`` of one ranking: in a session (``refers``, :func:`in_session`) the
    plan's ``lam`` with recency at ``plan.recency_session``; at a prompt ``lam_prompt``
    times the project's learned gains (:func:`gains` of ``credit``). ``s_max``: the sum of
    the weights in use, in channel order, over ``rrf_k + 1``. ``lam`` is a new array."""
    if refers:
        lam = plan.lam.copy()
        lam[RECENCY] = plan.recency_session
    else:
        lam = plan.lam_prompt * gains(plan, credit)
    s_max = 0.0
    for ch in range(lam.shape[0]):
        if plan.use[ch]:
            s_max += lam[ch]
    return lam, s_max / (plan.rrf_k + 1)
