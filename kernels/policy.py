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
  of its plan weight in a session) and ``s_max``, the fused score of a file ranked first by
  every channel in use (score ratio = score / ``s_max``).

Channels are indexed by ``kernels.channels``' constants (the rows of ``rank_files``'
``ranks``); :data:`CHANNELS` names them in that order.
"""

from collections import namedtuple

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

__all__ = ["ASSOCIATIVE", "BASE_LEVEL", "CHANNELS", "FREQUENCY", "LEXICAL", "N_CHANNELS",
           "RECENCY", "RECURRENCE", "SNIPPET", "Plan", "in_session", "weights"]

# the channels' names, in the order of their indices (kernels.channels)
CHANNELS = ("lexical", "associative", "snippet", "frequency", "recency", "base_level",
            "recurrence")

Plan = namedtuple("Plan", (
    "lam use rrf_k recency_session min_conf min_conf_session seeds hops topk w_floor a_floor "
    "recurrence_from top_n max_terms path_w"))
Plan.__doc__ = """One recall's policy (``brainbox.recall.plan`` builds and checks it).

- ``lam`` float64[N_CHANNELS]: channel weights, in channel order;
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
- ``path_w``: the lexical channel's bonus per IDF of a query term in a file's path.
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
def weights(plan, refers):
    """``(lam, s_max)`` of one ranking: the plan's weights, recency at
    ``plan.recency_session`` when the ranking ``refers`` to the session (:func:`in_session`);
    ``s_max`` the sum of
    the weights in use, in channel order, over ``rrf_k + 1``. ``lam`` is a new array."""
    lam = plan.lam.copy()
    if refers:
        lam[RECENCY] = plan.recency_session
    s_max = 0.0
    for ch in range(lam.shape[0]):
        if plan.use[ch]:
            s_max += lam[ch]
    return lam, s_max / (plan.rrf_k + 1)
