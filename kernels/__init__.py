"""brainbox.kernels: numba kernels, pure functions over numpy arrays (numpy + numba only).

Each kernel's docstring states its array contract. Validation and array growth belong to the
callers in ``brainbox``; ``tests/reference.py`` and ``tests/reference_rank.py`` hold a slow
reference for every kernel in ``__all__`` (the compiled baselines' reference is
``eval/baselines.py``). Data structures (``table``: the count table of postings and n-grams;
``baselines``: the baselines' state) and the replay loop (``replay``) are imported from their
modules.
"""

from .adjacency import link_edges, rebuild_adjacency
from .baselines import (
    BaselineState,  # noqa: F401 - the compiled baselines' state type
    bl_begin_task,
    bl_end_task,
    bl_prompt,
    bl_rank_files,
    bl_rank_tools,
    bl_tool_event,
)
from .fusion import base_level, ranks_from_scores, rrf_fuse
from .hebbian import (
    HIST,
    N_KEY,
    RESERVE,
    ROW_TOP,
    WINDOW,
    compact_edges,
    decay_state,
    find_edge,
    fold_touches,
    rebuild_hash,
)
from .ngram import encode_ctx, ngram_pairs
from .predict import ctx_id, ngram_count, predict_kernel, tool_ids  # noqa: F401 - tool_ids: K.*
from .rank import (
    base_level_ids,
    base_level_top,
    bm25_scores,
    order_desc,
    rank_files,
    rank_lexed,
    top_k,
)
from .spread import (  # noqa: F401 - spreading's scratch helpers, used as K.*
    SpreadWork,
    spread,
    spread_clear,
    spread_csr,
    spread_work,
)
from .table import (  # noqa: F401 - the engine's count tables, used as K.*
    Table,
    new_table,
    table_add,
    table_add_many,
    table_find,
    table_from_entries,
    table_rows,
)

__all__ = [
    "HIST",
    "N_KEY",
    "RESERVE",
    "ROW_TOP",
    "WINDOW",
    "base_level",
    "base_level_ids",
    "base_level_top",
    "bl_begin_task",
    "bl_end_task",
    "bl_prompt",
    "bl_rank_files",
    "bl_rank_tools",
    "bl_tool_event",
    "bm25_scores",
    "compact_edges",
    "decay_state",
    "encode_ctx",
    "find_edge",
    "fold_touches",
    "link_edges",
    "ngram_pairs",
    "order_desc",
    "predict_kernel",
    "rank_files",
    "rank_lexed",
    "ranks_from_scores",
    "rebuild_adjacency",
    "rebuild_hash",
    "rrf_fuse",
    "spread",
    "spread_csr",
    "top_k",
]
