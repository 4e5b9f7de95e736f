"""Compile (or load from the numba cache) every kernel with the signatures production uses,
by running a tiny workload through the real code path; and start that in the background.

- :func:`warmup` runs the engine's steps (record and fold into a database file, reopen it,
  recall, predict, explain, decay) and any ``extra`` steps the caller adds (the CLI adds
  the replay loop's, from ``brainbox.eval``, which this layer may not import). After the
  engine steps it writes the warm marker (``brainbox.kernels._cache.marker_path``) that
  ``brainbox.jitmode`` reads to let a first command skip compiling; after the extra steps,
  the "replay" marker. The state is saved and reopened because loading a saved state
  rebuilds its hash, adjacency and count tables: a memory that only ever lived in memory
  left six of the 39 kernels a first ``recall`` needs uncompiled.
- The background warm-up (:func:`brainbox.jitmode.spawn_background`) starts this
  module's :func:`warmup` in a detached ``brainbox warmup`` process.
"""

from __future__ import annotations

import os
import sys
import time


def _engine_steps(tmp: str):
    """The engine's warm-up steps over a database file in ``tmp`` (names and callables)."""
    from brainbox.memory import Memory
    from brainbox.workload import generate

    db = os.path.join(tmp, "warm.db")
    events = list(generate(events=300, files=20, sessions=5, seed=1))
    root, session, last = events[0]["project"], events[-1]["session"], events[-1]["at"]

    def fold():
        with Memory.open(db) as mem:
            mem.record(events[:200])
            mem.sync()
            mem.record(events[200:])  # an incremental fold on top of a saved state
            mem.sync()

    def recall():
        with Memory.open(db) as mem:  # a fresh process's path: the saved state is loaded
            mem.recall("fix the auth login", project=root, session=session)
            mem.recall("fix the auth login", project=root)

    def predict():
        with Memory.open(db) as mem:
            mem.predict_tools(session)
            mem.predict_tools(None)

    def explain():
        with Memory.open(db) as mem:
            hits = mem.recall("fix the auth login", project=root)
            if hits:
                mem.explain(hits[0].path, "fix the auth login", project=root)

    def decay():
        with Memory.open(db) as mem:
            mem.decay(last + 86400 * 3)
            mem.rebuild()

    return [("fold", fold), ("recall", recall), ("predict", predict), ("explain", explain),
            ("decay", decay)]


def kernel_names() -> list[str]:
    """Names of the kernels this process has compiled or loaded (numba dispatchers with a
    signature), over every kernel module imported so far."""
    names = set()
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith("brainbox.kernels.") or mod is None:
            continue
        for name, obj in vars(mod).items():
            if getattr(obj, "signatures", None) and hasattr(obj, "py_func"):
                names.add(name)
    return sorted(names)


def warmup(extra=(), *, report=None) -> dict:
    """Run the engine's steps, then ``extra`` ([(name, callable)]); ``report``: a
    ``brainbox.jitmode.CompileReport`` whose ``step`` shows where it is. Returns the kernels
    ready, how many compiled, the seconds per step and the cache directory."""
    import json
    import tempfile

    from brainbox import jitmode
    from brainbox.kernels import _cache
    from brainbox.storage import files

    t0 = time.perf_counter()
    seconds = {}
    with tempfile.TemporaryDirectory(prefix="brainbox-warmup-") as tmp:
        engine = _engine_steps(tmp)
        steps = engine + list(extra)
        for i, (name, fn) in enumerate(steps, 1):
            if report is not None:
                report.set_step(f"warm-up {i}/{len(steps)} {name}")
            t = time.perf_counter()
            fn()
            seconds[name] = round(time.perf_counter() - t, 3)
            if i == len(engine) or i == len(steps):
                part = "engine" if i == len(engine) else "replay"
                if jitmode.mode() == "numba":
                    marker = _cache.marker_path(part)
                    os.makedirs(os.path.dirname(marker), mode=0o700, exist_ok=True)
                    files.write_private(marker, json.dumps({
                        "kernels": kernel_names(),
                        "seconds": round(time.perf_counter() - t0, 3)}).encode())
    return {"kernels": kernel_names(), "compiled": report.compiled if report else None,
            "seconds": round(time.perf_counter() - t0, 3), "steps": seconds,
            "cache_dir": jitmode.cache_dir(), "mode": jitmode.mode()}
