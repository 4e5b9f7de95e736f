"""brainbox.kernels: numba kernels, pure functions over numpy arrays (numpy + numba only).

Each kernel's docstring states its array contract. Validation and array growth belong to the
callers in ``brainbox``; ``tests/reference.py`` and ``tests/reference_rank.py`` hold a slow
reference for every kernel in ``__all__``. Data structures (``table``: the count table of
postings and n-grams) are imported from their modules. The evaluator's compiled code (the
replay loop, its task lists and the baselines, whose reference is ``eval/baselines.py``)
lives in the sub-package ``kernels.replay`` and is not exported here.

The names below are imported lazily, on first access (``K.rank_files`` imports ``rank``):
a recall imports, decorates and compiles the modules it uses and no others (the replay's
sub-package is half of the kernels' source), and ``brainbox.jitmode`` can read
``_cache`` (standard library only) before any kernel module, and so numba, is imported.
"""

import importlib

_HOME = {
    "adjacency": ("link_edges", "rebuild_adjacency"),
    "channels": ("base_level", "base_level_ids", "base_level_top", "bm25_scores"),
    "fusion": ("ranks_from_scores", "rrf_fuse"),
    "hebbian": ("HIST", "N_KEY", "RESERVE", "ROW_TOP", "WINDOW", "compact_edges", "decay_state",
                "find_edge", "fold_touches", "rebuild_hash"),
    "ngram": ("encode_ctx", "ngram_pairs"),
    "predict": ("ctx_id", "ngram_count", "predict_kernel", "tool_ids"),
    "rank": ("rank_files", "rank_lexed"),
    # spreading's scratch helpers and the engine's count tables are used as K.* too
    "spreading": ("SpreadWork", "spread", "spread_clear", "spread_csr", "spread_work"),
    "table": ("Table", "new_table", "table_add", "table_add_many", "table_find",
              "table_from_entries", "table_rows"),
    "topk": ("order_desc", "top_k"),
}
_MODULE_OF = {name: mod for mod, names in _HOME.items() for name in names}
# No module may be named like a name above: importing a submodule sets the package's
# attribute of that name to the module, so ``K.spread`` was the module ``spread.py``
# whenever ``rank`` (which imports it) was loaded first (hence ``spreading.py``).


def __getattr__(name):
    mod = _MODULE_OF.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(_MODULE_OF))


__all__ = [
    "HIST",
    "N_KEY",
    "RESERVE",
    "ROW_TOP",
    "WINDOW",
    "base_level",
    "base_level_ids",
    "base_level_top",
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
