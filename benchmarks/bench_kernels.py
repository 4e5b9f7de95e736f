"""asv benchmarks of every compiled kernel and replay part in the reference registry
(:mod:`brainbox.eval.reference`), on the registry's own case of a fixed size and seed: the
benchmarks and the parity tests (tests/test_parity.py) run the same callables on the same
inputs, so a kernel added to the registry is benchmarked and tested alike.

Each timed call copies the case's arrays first (kernels write their outputs in place), so
a small kernel's figure includes the copies (a few µs at these sizes). ``python -m asv run --quick --bench bench_kernels`` from the repository root; or
``python benchmarks/bench_kernels.py [name ...]`` for a one-off table.
"""

from __future__ import annotations

from typing import ClassVar

from brainbox.eval.reference import BY_NAME, REGISTRY, load, run

SIZE = {"replay": 2_000, "baselines": 2_000}  # events; the kernels' cases: elements
DEFAULT_SIZE = 5_000
SEED = 1


def _case(name: str):
    entry = BY_NAME[name]
    compiled, make = load(entry.compiled), load(entry.cases)
    args = make(SIZE.get(name, DEFAULT_SIZE), SEED)
    run(compiled, args)  # load or compile outside the timings
    return compiled, args


class Kernels:
    """One timing per registry entry: its compiled callable on the fixed case."""

    params: ClassVar[list] = [e.name for e in REGISTRY]
    param_names: ClassVar[list] = ["entry"]
    timeout = 900

    def setup(self, name):
        self.compiled, self.args = _case(name)

    def time_compiled(self, name):
        run(self.compiled, self.args)


def main(argv=None) -> None:
    import sys
    import time

    names = (argv if argv is not None else sys.argv[1:]) or [e.name for e in REGISTRY]
    for name in names:
        compiled, args = _case(name)
        reps, t = 0, time.perf_counter()
        while reps < 3 or time.perf_counter() - t < 0.5:
            run(compiled, args)
            reps += 1
        print(f"{name:20s} {(time.perf_counter() - t) / reps * 1e6:12.1f} µs")


if __name__ == "__main__":
    main()
