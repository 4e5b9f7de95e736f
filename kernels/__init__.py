"""brainbox.kernels: numba kernels, pure functions over numpy arrays (numpy + numba only).

Each kernel's docstring states its array contract. Validation and array growth belong to the
callers in ``brainbox``; ``tests/reference.py`` holds a slow reference for every kernel.
"""

from .fusion import base_level, ranks_from_scores, rrf_fuse
from .hebbian import (
    HIST,
    N_KEY,
    RESERVE,
    WINDOW,
    compact_edges,
    decay_state,
    find_edge,
    fold_touches,
    rebuild_hash,
)
from .ngram import encode_ctx, ngram_pairs
from .spread import spread

__all__ = [
    "HIST",
    "N_KEY",
    "RESERVE",
    "WINDOW",
    "base_level",
    "compact_edges",
    "decay_state",
    "encode_ctx",
    "find_edge",
    "fold_touches",
    "ngram_pairs",
    "ranks_from_scores",
    "rebuild_hash",
    "rrf_fuse",
    "spread",
]
