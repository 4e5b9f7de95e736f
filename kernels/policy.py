"""Recall's policy as one plan, and the rules that depend on the query (DESIGN §4.3).

A recall and the compiled replay rank files by the same policy: which channels count and
how much (the weights ``lam``, the reciprocal-rank constant ``rrf_k``), the floors, the
spreading and recurrence settings. :class:`Plan` holds it, built and validated once by
``brainbox.recall.plan`` from ``Params``; the two rules that depend on the query and the
session are jitted functions here, called by ``brainbox.recall`` (one recall) and by the
replay's per-event loop (``kernels.replay``), so neither keeps its own copy:

- :func:`refers_to_session`: does the query refer to current-session work (the recency
  switch; the rule and its measurement are in ``brainbox.recall``'s docstring)?
- :func:`weights`: the channel weights of one ranking (recency ``recency_session`` instead
  of its plan weight when the query refers to the session) and ``s_max``, the fused score of
  a file ranked first by every channel in use (confidence = score / ``s_max``).

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
           "RECENCY", "RECURRENCE", "SNIPPET", "Plan", "refers_to_session", "weights"]

# the channels' names, in the order of their indices (kernels.channels)
CHANNELS = ("lexical", "associative", "snippet", "frequency", "recency", "base_level",
            "recurrence")

Plan = namedtuple("Plan", (
    "lam use rrf_k recency_session min_conf seeds hops topk w_floor a_floor recurrence_from "
    "top_n max_terms"))
Plan.__doc__ = """One recall's policy (``brainbox.recall.plan`` builds and checks it).

- ``lam`` float64[N_CHANNELS]: channel weights, in channel order;
- ``use`` bool[N_CHANNELS]: the channels that rank (not ablated; snippet only with an index);
- ``rrf_k``: the reciprocal-rank constant; ``recency_session``: the recency weight when the
  query refers to the session (:func:`weights`);
- ``min_conf``: results below this confidence are dropped;
- ``seeds``, ``hops``, ``topk``, ``w_floor``, ``a_floor``: spreading activation (seeds, hops,
  per-node fan-out, weight and activation floors, ``kernels.spread``);
- ``recurrence_from``: the recurrence channel reads the session's newest this many resources;
- ``top_n``: the frequency, recency and base-level channels rank this many files;
- ``max_terms``: the lexical channel scores at most this many query terms (0: all).
"""


@jit
def refers_to_session(deictic, n_query, q_ids, window, in_proj, path_ptr, path_terms):
    """Does the query refer to current-session work? Only when the session ``window``
    (resource ids) holds a file of the project (``in_proj``); then when the query is
    deictic, or at least half of its ``n_query`` distinct terms occur in the paths of those
    files. ``q_ids``: the query's distinct term ids (-1: unknown, matches nothing); the
    path terms of resource ``r`` are ``path_terms[path_ptr[r]:path_ptr[r + 1]]``."""
    n_win = 0
    for j in range(window.shape[0]):
        if in_proj[window[j]]:
            n_win += 1
    if n_win == 0:  # no session work to refer to (P1: a fresh task's description)
        return False
    if deictic:
        return True
    if n_query == 0:
        return False
    hit = 0
    for qi in range(q_ids.shape[0]):
        t = q_ids[qi]
        if t < 0:
            continue
        found = False
        for j in range(window.shape[0]):
            r = window[j]
            if not in_proj[r]:
                continue
            for q in range(path_ptr[r], path_ptr[r + 1]):
                if path_terms[q] == t:
                    found = True
                    break
            if found:
                break
        if found:
            hit += 1
    return hit * 2 >= n_query


@jit
def weights(plan, refers):
    """``(lam, s_max)`` of one ranking: the plan's weights, recency at
    ``plan.recency_session`` when the query ``refers`` to the session; ``s_max`` the sum of
    the weights in use, in channel order, over ``rrf_k + 1``. ``lam`` is a new array."""
    lam = plan.lam.copy()
    if refers:
        lam[RECENCY] = plan.recency_session
    s_max = 0.0
    for ch in range(lam.shape[0]):
        if plan.use[ch]:
            s_max += lam[ch]
    return lam, s_max / (plan.rrf_k + 1)
