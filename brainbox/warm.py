"""Compile (or load from the numba cache) every kernel with the signatures production uses,
by running a tiny workload through the real code path."""

from __future__ import annotations


def warmup() -> list[str]:
    from brainbox.memory import Memory
    from brainbox.workload import generate

    mem = Memory.in_memory()
    events = list(generate(events=300, files=20, sessions=5, seed=1))
    mem.record(events)
    root = events[0]["project"]
    mem.recall("fix the auth login", project=root, session=events[-1]["session"])
    mem.predict_tools(events[-1]["session"])
    mem.decay(events[-1]["at"] + 86400 * 3)
    mem.close()
    from brainbox import kernels

    return sorted(n for n in kernels.__all__ if callable(getattr(kernels, n)))
