"""Per-kernel compile time on an empty numba cache, and load time from the warm cache.

Each run is two fresh processes over a new, empty ``NUMBA_CACHE_DIR``: the first runs
``brainbox warmup``'s workload (the engine's steps, then the replay loop's; the signatures
production uses) and compiles everything; the second runs it again and loads everything
from the cache. Both time every ``Dispatcher.compile`` call (numba's entry point for a
compile or a cache load, per kernel and signature): *self* is the time in that kernel
alone (its callees' own compiles subtracted), *incl.* with them. The step column is the
first warm-up step that needed the kernel ("fold", "recall", ... are the engine's, what a
first command can need; "replay" only ``brainbox replay``). A kernel loaded from the cache
brings its callees with it (they show no load time of their own), and the first load in a
process also pays numba's own start-up (about 1-2 s here). Medians over ``--runs``.

    python benchmarks/measure_compile.py [--runs 3] [--no-replay] [--json OUT]

Prints the table as Markdown (slowest first) and the wall time of each warm-up process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict


def _child(out: str, replay: bool) -> None:
    """Run the warm-up workload, timing every Dispatcher.compile; write records to out."""
    from numba.core import dispatcher

    from brainbox import jitmode

    jitmode.force("numba")
    from brainbox import warm

    records, stack, step = [], [], ["?"]
    original = dispatcher.Dispatcher.compile

    def timed(self, sig):
        name = f"{self.py_func.__module__.rsplit('.', 1)[-1]}.{self.py_func.__name__}"
        hits, misses = sum(self._cache_hits.values()), sum(self._cache_misses.values())
        stack.append(0.0)
        t = time.perf_counter()
        try:
            return original(self, sig)
        finally:
            incl = time.perf_counter() - t
            children = stack.pop()
            if stack:
                stack[-1] += incl
            if sum(self._cache_misses.values()) > misses:
                kind = "compile"
            elif sum(self._cache_hits.values()) > hits:
                kind = "load"
            else:
                kind = None  # already in memory: not a compile or a load
            if kind:
                records.append({"kernel": name, "sig": str(sig), "kind": kind, "step": step[0],
                                "incl": incl, "self": incl - children})

    dispatcher.Dispatcher.compile = timed
    extra = []
    if replay:
        from brainbox.eval.runner import warm_steps

        extra = warm_steps()

    class Steps:  # warm.warmup's report interface: only the step is used here
        compiled = None

        def set_step(self, text):
            step[0] = text.split()[-1]

    t = time.perf_counter()
    warm.warmup(extra, report=Steps())
    with open(out, "w") as fh:
        json.dump({"records": records, "wall": time.perf_counter() - t}, fh)


def _run(cache: str, replay: bool) -> dict:
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, BRAINBOX_HOME=os.path.join(cache, "home"))
    env.pop("NUMBA_DISABLE_JIT", None)
    env.pop("BRAINBOX_JIT", None)
    argv = [sys.executable, __file__, "--child", out] + ([] if replay else ["--no-replay"])
    t = time.perf_counter()
    subprocess.run(argv, env=env, check=True)
    wall = time.perf_counter() - t
    with open(out) as fh:
        data = json.load(fh)
    os.unlink(out)
    data["process_wall"] = wall
    return data


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1, help="cold+warm pairs (medians reported)")
    ap.add_argument("--no-replay", dest="replay", action="store_false",
                    help="the engine's kernels only")
    ap.add_argument("--json", help="also write the raw records here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    if args.child:
        _child(args.child, args.replay)
        return 0

    runs = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="measure-compile-") as cache:
            cold = _run(cache, args.replay)
            warm = _run(cache, args.replay)
        runs.append((cold, warm))
        print(f"run {i + 1}/{args.runs}: cold warm-up {cold['process_wall']:.1f} s, "
              f"warm {warm['process_wall']:.1f} s (whole processes)", file=sys.stderr)

    def per_kernel(records, kind, field):
        acc = defaultdict(float)
        for r in records:
            if r["kind"] == kind:
                acc[r["kernel"]] += r[field]
        return acc

    self_c = defaultdict(list)
    incl_c = defaultdict(list)
    load = defaultdict(list)
    sigs, steps = {}, {}
    for cold, warm in runs:
        for k, v in per_kernel(cold["records"], "compile", "self").items():
            self_c[k].append(v)
        for k, v in per_kernel(cold["records"], "compile", "incl").items():
            incl_c[k].append(v)
        for k, v in per_kernel(warm["records"], "load", "incl").items():
            load[k].append(v)
        for r in cold["records"]:
            if r["kind"] == "compile":
                sigs.setdefault(r["kernel"], set()).add(r["sig"])
                steps.setdefault(r["kernel"], r["step"])
    med = statistics.median
    names = sorted(self_c, key=lambda k: -med(self_c[k]))
    total_self = sum(med(self_c[k]) for k in names)
    print(f"\n{len(names)} kernels compiled (numba {_numba_version()}, medians of "
          f"{args.runs} run{'s' if args.runs > 1 else ''}; self = without its callees' "
          f"compiles)\n")
    print("| kernel | signatures | first needed by | compile self (s) | compile incl. (s) "
          "| load from cache (s) |")
    print("|---|---|---|---|---|---|")
    for k in names:
        ld = f"{med(load[k]):.3f}" if load.get(k) else "(inside its caller)"
        print(f"| {k} | {len(sigs[k])} | {steps[k]} | {med(self_c[k]):.2f} | "
              f"{med(incl_c[k]):.2f} | {ld} |")
    by_step = defaultdict(float)
    for k in names:
        by_step[steps[k]] += med(self_c[k])
    print(f"| **total** | {sum(len(s) for s in sigs.values())} | | **{total_self:.1f}** | | "
          f"**{sum(med(v) for v in load.values()):.2f}** |")
    print("\nCompile time by the first step that needs it: " + ", ".join(
        f"{s} {v:.1f} s" for s, v in by_step.items()))
    print(f"Warm-up process wall time: cold {med([c['process_wall'] for c, _ in runs]):.1f} s, "
          f"warm {med([w['process_wall'] for _, w in runs]):.1f} s")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([{"cold": c, "warm": w} for c, w in runs], fh)
    return 0


def _numba_version() -> str:
    from brainbox.kernels import _cache

    return _cache.numba_version()


if __name__ == "__main__":
    sys.exit(main())
