"""What `--as-of T` costs: folding a fresh state over the events up to T (`brainbox.asof`)
against a plain recall on the saved state, on the synthetic workload at several sizes.

    python benchmarks/measure_asof.py [--events 2000 10000 50000] [--rounds 3]

Prints, per size: the fold of the whole log (median of the rounds, as `--as-of` at the
last event pays it), a recall on the saved state, and an as-of recall at the middle time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, nargs="+", default=[2000, 10000, 50000])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from brainbox.asof import AsOf
    from brainbox.memory import Memory
    from brainbox.warm import warmup
    from brainbox.workload import normalized

    warmup()
    for n in args.events:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "b.db")
            events = normalized(n, files=200, projects=2)
            with Memory.open(path) as mem:
                mem.record_normalized(events)
                mem.sync()
                project = events[0]["project"]
                plain, fold, mid = [], [], []
                for _ in range(args.rounds):
                    t0 = time.perf_counter()
                    mem.recall("auth login", project=project)
                    plain.append(time.perf_counter() - t0)
            last, half = events[-1]["at"], events[len(events) // 2]["at"]
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                with AsOf.open(path, last) as a:
                    a.recall("auth login", project=project)
                fold.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                with AsOf.open(path, half) as a:
                    a.recall("auth login", project=project)
                mid.append(time.perf_counter() - t0)
            med = statistics.median
            print(f"{len(events):>7} events: recall {med(plain) * 1000:8.1f} ms; as-of at the "
                  f"last event {med(fold) * 1000:8.1f} ms; at the middle "
                  f"{med(mid) * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
