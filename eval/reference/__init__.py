"""The registry of plain references: one entry per compiled kernel and per compiled part of
the replay, driving the parity tests (tests/test_parity.py) and the benchmarks
(benchmarks/bench_kernels.py).

An :class:`Entry` names the compiled callable and its plain reference by import path
(``"module:attribute"``), so reading the registry imports no numba-compiled module; a test
or a benchmark loads what it runs (:func:`load`). ``cases(size, seed)`` makes the inputs of
one call: fresh arrays every call, a pure function of ``(size, seed)``, sized so that
``size`` is about the number of elements the kernel walks (touches, edges, candidates, or
replay events). ``check(got, want)`` compares two :class:`Outcome` values (what the call
returned and its arguments afterwards, so in-place outputs are compared too); the default
is exact equality of the result and of every array argument (bit for bit: the kernels do
their floating point in the order their contract and the reference state it).

The references are the plainest correct definitions, each with its rules (ties included)
in its docstring: :mod:`.kernels` (the engine kernels: Hebbian fold, hash, maintenance,
spreading, adjacency, fusion, base level, n-grams), :mod:`.rank` (recall's ranking, top-k,
BM25 and next-tool prediction), :mod:`brainbox.eval.baselines` (the five replay baselines)
and :mod:`brainbox.eval.replay` (the reference replay loop).

What the references were before (issue 14): brute-force definitions in tests/reference.py
and tests/reference_rank.py (now :mod:`.kernels` and :mod:`.rank`, unchanged but for their
imports), the brute-force baselines in tests/test_baselines.py beside the incremental
Python baselines of eval/baselines.py, and the Python replay loop. Each kernel or baseline
now has one reference here; the brute-force baseline checks of tests/test_baselines.py stay
as tests of the reference itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple


class Outcome(NamedTuple):
    """What one call gave: its return value and its (mutated) arguments."""

    result: Any
    args: list


@dataclass(frozen=True)
class Entry:
    """One compiled callable and its plain reference (see the module docstring)."""

    name: str
    compiled: str  # "module:attribute"
    reference: str  # "module:attribute"
    cases: str  # "module:attribute" of a function (size, seed) -> list of arguments
    check: str = "brainbox.eval.reference.cases:same"  # (got, want) -> None, raises

    def load(self) -> tuple[Callable, Callable, Callable, Callable]:
        """(compiled, reference, cases, check), imported now."""
        return load(self.compiled), load(self.reference), load(self.cases), load(self.check)


def load(path: str):
    """The object an import path ``"package.module:attr"`` names."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def run(fn: Callable, args: list) -> Outcome:
    """Call ``fn`` on a copy of ``args`` (arrays copied) and return what it gave."""
    args = [a.copy() if hasattr(a, "copy") and hasattr(a, "dtype") else a for a in args]
    return Outcome(fn(*args), args)


_K = "brainbox.kernels:"
_R = "brainbox.eval.reference.kernels:"
_RR = "brainbox.eval.reference.rank:"
_C = "brainbox.eval.reference.cases:"


def _kernel(name: str, ref: str, cases: str = "", check: str = "same") -> Entry:
    return Entry(name, _K + name, ref + name, _C + (cases or name), _C + check)


REGISTRY: tuple[Entry, ...] = (
    _kernel("fold_touches", _R, check="same_but_hash"),
    _kernel("find_edge", _R),
    _kernel("rebuild_hash", _R, check="same_hash"),
    _kernel("decay_state", _R),
    _kernel("compact_edges", _R),
    _kernel("spread", _R),
    _kernel("spread_csr", _R),
    _kernel("link_edges", _R),
    _kernel("rebuild_adjacency", _R),
    _kernel("rrf_fuse", _R),
    _kernel("ranks_from_scores", _R),
    _kernel("base_level", _R),
    _kernel("encode_ctx", _R),
    _kernel("ngram_pairs", _R),
    _kernel("rank_files", _RR, check="same_ranking"),
    _kernel("rank_lexed", _RR, check="same_ranking"),
    _kernel("top_k", _RR),
    _kernel("order_desc", _RR),
    _kernel("bm25_scores", _RR),
    # the replay's lexical columns (kernels/replay/tasklex.py): bm25_scores from them
    Entry("task_bm25", "brainbox.kernels.replay.tasklex:task_bm25", _RR + "task_bm25",
          _C + "task_bm25"),
    _kernel("base_level_top", _RR),
    _kernel("base_level_ids", _RR),
    _kernel("predict_kernel", _RR),
    # The compiled baselines (all five, file and tool, one state) against the Python ones,
    # driven through the calls the replay makes (``replay_calls``): every ranking equal.
    Entry("baselines", _C + "compiled_baselines", _C + "reference_baselines",
          _C + "baseline_calls", _C + "same"),
    # The compiled replay loop against the reference loop: identical task records.
    Entry("replay", _C + "compiled_replay", _C + "reference_replay", _C + "replay_tasks",
          _C + "same_records"),
)

BY_NAME = {e.name: e for e in REGISTRY}
assert len(BY_NAME) == len(REGISTRY), "one entry per name"


def references(module: str | None = None) -> dict:
    """{compiled kernel: plain reference} for the kernel entries (those whose reference
    lives in ``module`` when given); imports the kernels."""
    out = {}
    for e in REGISTRY:
        if e.compiled.startswith(_K) and (module is None or e.reference.startswith(module + ":")):
            out[load(e.compiled)] = load(e.reference)
    return out
