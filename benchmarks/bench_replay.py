"""asv suites for `brainbox replay`: throughput on the synthetic workload, and the quality
numbers (brainbox's P2 and P3 MRR) on a small fixed slice of the development data.

Throughput here is one repository series replayed in-process (learning, four probes, five
baselines) after the kernels are warm; the million-event runs are made with
``brainbox replay --synthetic N --json`` (see the replay report), not in asv.
The quality slice is the OpenHands source (22 astropy tasks, 334 events): small enough
for every commit, and any change to recall shows up in it. It reports NaN when
``../shared/data`` is absent.
"""

import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "trajectories"
SLICE = DATA / "openhands-codeact-verified50"
SIZES = [2_000, 20_000]


def _tasks(n):
    from brainbox.eval.sources import synthetic_spec, synthetic_tasks

    return list(synthetic_tasks(synthetic_spec(n, seed=7)))


def _copy(tasks):
    """Replay writes the simulated clock into events; give each run fresh dicts."""
    from brainbox.eval.loaders import Task

    return [Task(**{**t.__dict__, "events": [dict(e) for e in t.events]}) for t in tasks]


class ReplaySynthetic:
    """Replay of the synthetic workload: one series, warm kernels; the compiled loop and its
    Python reference (``--engine``)."""

    params = (SIZES, ["compiled", "python"])
    param_names = ["events", "engine"]  # noqa: RUF012 - asv reads a list
    timeout = 1800
    number = 1
    repeat = (1, 3, 900)

    def setup_cache(self):
        return {n: _tasks(n) for n in SIZES}

    def setup(self, cache, n, engine):
        from brainbox.eval import compiled
        from brainbox.eval.replay import replay_series, warmup

        warmup()
        compiled.warmup()
        self.replay = compiled.replay_series_fast if engine == "compiled" else replay_series
        self.tasks = _copy(cache[n])

    def time_replay(self, cache, n, engine):
        self.replay(self.tasks, series="bench")

    def track_events_per_second(self, cache, n, engine):
        t = time.perf_counter()
        out = self.replay(self.tasks, series="bench")
        return out["events"] / (time.perf_counter() - t)

    track_events_per_second.unit = "events/s"


class ReplayWithoutRecall:
    """The compiled replay with every recall channel ablated: learning, the baselines, P1/P3
    and the probes without the engine's file ranking. Beside ``ReplaySynthetic`` it splits
    a change in throughput into recall and everything else (``benchmarks/measure_replay.py
    --without-recall`` does the same for whole processes at any size)."""

    params = SIZES
    param_names = ["events"]  # noqa: RUF012 - asv reads a list
    timeout = 1800
    number = 1
    repeat = (1, 3, 900)

    def setup_cache(self):
        return {n: _tasks(n) for n in SIZES}

    def setup(self, cache, n):
        from brainbox.eval import compiled
        from brainbox.recall import CHANNELS

        compiled.warmup()
        self.replay = compiled.replay_series_fast
        self.ablate = CHANNELS  # every recall channel
        self.tasks = _copy(cache[n])

    def time_replay(self, cache, n):
        self.replay(self.tasks, series="bench", ablate=self.ablate)


class ReplayQuality:
    """brainbox's MRR on the fixed development slice (NaN without data)."""

    timeout = 600
    number = 1
    repeat = 1

    def setup_cache(self):
        if not SLICE.is_dir():
            return None
        from brainbox.eval.runner import run

        res = run([str(SLICE)], bootstrap=0, progress=False)
        (cohort,) = res["cohorts"].values()
        return {p: cohort["results"][p]["mrr"]["brainbox"] for p in ("P2", "P3")}

    def _get(self, cache, probe):
        if cache is None or cache.get(probe) is None:
            return float("nan")
        return cache[probe]

    def track_p3_next_tool_mrr3(self, cache):
        return self._get(cache, "P3")

    def track_p2_next_file_mrr10(self, cache):
        return self._get(cache, "P2")

    track_p3_next_tool_mrr3.unit = "MRR@3"
    track_p2_next_file_mrr10.unit = "MRR@10"


class InputCache:
    """Loading one source for a replay (``eval.sources.load_input``): parsed and
    normalised afresh (a cold input cache, or ``--no-cache``) against read from a warm
    input cache (``eval.cache``); the OpenHands slice. Skipped without data."""

    timeout = 300
    number = 1
    repeat = (3, 5, 120)

    def setup(self):
        if not SLICE.is_dir():
            raise NotImplementedError("no development data")
        import os
        import tempfile

        from brainbox.eval import sources

        self.tmp = tempfile.TemporaryDirectory()
        self.env = os.environ.get("BRAINBOX_CACHE_DIR")
        os.environ["BRAINBOX_CACHE_DIR"] = self.tmp.name
        self.load = sources.load_input
        self.load("slice", SLICE, "auto", True)  # fills the cache

    def teardown(self):
        import os

        if self.env is None:
            os.environ.pop("BRAINBOX_CACHE_DIR", None)
        else:
            os.environ["BRAINBOX_CACHE_DIR"] = self.env
        self.tmp.cleanup()

    def time_load_parsed(self):
        self.load("slice", SLICE, "auto", False)

    def time_load_cached(self):
        self.load("slice", SLICE, "auto", True)
