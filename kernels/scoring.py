"""Scoring constants and rules written once for the compiled kernels and the plain Python
code (standard library only: ``brainbox.recall``, ``brainbox.eval`` and the references
import them without importing numba).

- BM25's ``k1`` and ``b`` (``BM25_K1``, ``BM25_B``): the engine's lexical channel
  (``kernels.channels.bm25_scores``), the compiled BM25 baseline
  (``kernels.replay.baseline_bm25``) and their Python references.
- The reciprocal rank of a ranking for a gold set: ``1 / (p + 1)`` for the 0-based
  position ``p`` of its first gold item within the first ``k``, 0 if none
  (``reciprocal_rank``): the replay's probes and ``eval.metrics``. The compiled loop
  (``kernels.replay.loop``) compiles this same function.
"""

BM25_K1, BM25_B = 1.2, 0.75


def reciprocal_rank(position):
    """``1 / (position + 1)`` for the 0-based ``position`` of the first gold item in a
    ranking; 0.0 when there is none (``position`` < 0)."""
    return 1.0 / (position + 1) if position >= 0 else 0.0
