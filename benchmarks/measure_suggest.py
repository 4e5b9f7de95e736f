"""The daemon's `suggest` op in-process (the prompt path's engine cost), this version
against another, side by side: each version in its own child process builds the same
seeded 20,000-event memory (`bench_hooks.Suggest`), then times `suggest` (median of RUNS
calls after a warm call). The children alternate ROUNDS times; prints each median.

Usage: python benchmarks/measure_suggest.py OTHER_PYTHONPATH [RUNS] [ROUNDS]
OTHER_PYTHONPATH: the other version as an importable `brainbox` package (its `brainbox/`
with `storage`, `cli`, `kernels`, `eval` copied inside), as for measure_chain.py.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from bench_hooks import Suggest
s = Suggest(); s.setup()
times = []
for _ in range(int(sys.argv[2])):
    t0 = time.perf_counter(); s.time_suggest(); times.append(time.perf_counter() - t0)
s.teardown()
print(json.dumps(statistics.median(times) * 1000))
"""


def main(other, runs=200, rounds=3):
    bench = os.path.dirname(os.path.abspath(__file__))
    out = {"this": [], "other": []}
    for _ in range(rounds):
        for name, pp in (("this", None), ("other", other)):
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            env["NUMBA_CACHE_DIR"] = tempfile.gettempdir() + f"/bb-suggest-numba-{name}"
            if pp:
                env["PYTHONPATH"] = pp
            r = subprocess.run([sys.executable, "-c", CHILD, bench, str(runs)], env=env,
                               capture_output=True, text=True, check=True, cwd="/tmp")
            out[name].append(json.loads(r.stdout.strip().splitlines()[-1]))
    a, b = statistics.median(out["this"]), statistics.median(out["other"])
    print(f"suggest p50: this {a:.3f} ms, other {b:.3f} ms (medians of {rounds} rounds of "
          f"{runs}; rounds {out}); difference {a - b:+.3f} ms")


if __name__ == "__main__":
    main(sys.argv[1], *(int(x) for x in sys.argv[2:]))
