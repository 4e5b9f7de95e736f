"""Replay throughput on the synthetic workload, as whole `brainbox replay` processes.

    python benchmarks/measure_replay.py 100000 1000000 [--runs 3] [--projects P] [--workers W]
    python benchmarks/measure_replay.py 100000 1000000 3000000 --events-per-project 100000
    python benchmarks/measure_replay.py 1000000 --without-recall

For each size: `runs` runs of `brainbox replay --synthetic N --bootstrap 0 --json-out F`, then
the median of the report's figures: events per second per core (series CPU time, the
issue's measure), events per second of wall time, and the replay's parts (seconds). A
first run on a machine compiles the replay loop (reported as warm-up, excluded from the
per-core figure). The machine is shared: read medians, and compare against a baseline run
in the same go.

The synthetic repository gains a file per 200 of its events, so with one project a larger
size is also a larger repository (5,000 files at 1M events) and recall, which ranks every
file, costs more per event. ``--events-per-project E`` holds the repository size fixed
instead (``size // E`` projects, each a series of its own): the figure for cost against
events alone.

``--without-recall`` alternates each run with one that ablates every recall channel
(`--ablate` each of ``brainbox.recall.CHANNELS``): learning, the baselines, P1/P3 and
the probes' bookkeeping still run, and so does keeping the lexical scores current; the
engine's ranking of files (its channels and their fusion) does not. The second figure bounds what any faster
recall can give: the throughput with a ranking that costs nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def run_once(events: int, projects: int, workers: int, out: Path, ablate=()) -> dict:
    cmd = [sys.executable, "-m", "brainbox.cli.entry", "replay", "--synthetic", str(events),
           "--projects", str(projects), "--synthetic-shape", "uniform", "--workers", str(workers),
           "--no-progress", "--bootstrap", "0", "--json-out", str(out)]
    for c in ablate:
        cmd += ["--ablate", c]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    t = json.loads(out.read_text())["timings"]
    return {"per_core": t["events_per_s_per_core"], "wall": t["events_per_s"],
            "events": t["events"], "warmup_s": t["warmup_s"], "parts": t["parts_s"]}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sizes", nargs="+", type=int, help="synthetic events per run")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--projects", type=int, default=1)
    ap.add_argument("--events-per-project", type=int, default=0,
                    help="projects = size // this (overrides --projects): fixed repository size")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--without-recall", action="store_true",
                    help="alternate each run with one without recall (every channel ablated)")
    ap.add_argument("--json", type=Path, help="write every run's figures here")
    a = ap.parse_args(argv)
    from brainbox.recall import CHANNELS  # every recall channel, for --without-recall

    variants = [("", ())] + ([("without recall", CHANNELS)] if a.without_recall else [])
    report = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in a.sizes:
            projects = max(1, n // a.events_per_project) if a.events_per_project else a.projects
            runs = {label: [] for label, _ in variants}
            for r in range(a.runs):
                for v, (label, ablate) in enumerate(variants):
                    x = run_once(n, projects, a.workers, Path(tmp) / f"r{n}_{r}_{v}.json", ablate)
                    runs[label].append(x)
                    print(f"{n:>9,} events {label:>14} run {r + 1}: {x['per_core']:,.0f} events/s "
                          f"per core, {x['wall']:,.0f} wall, warm-up {x['warmup_s']:.1f} s",
                          flush=True)
            for label, rs in runs.items():
                med = {k: statistics.median(x[k] for x in rs) for k in ("per_core", "wall")}
                parts = {k: statistics.median(x["parts"][k] for x in rs) for k in rs[0]["parts"]}
                print(f"{n:>9,} events ({projects} project(s)) {label} median of {a.runs}: "
                      f"{med['per_core']:,.0f} events/s per core, {med['wall']:,.0f} wall; "
                      "parts (s) " + ", ".join(f"{k} {v:.1f}" for k, v in parts.items()),
                      flush=True)
                report.append({"events": n, "projects": projects, "workers": a.workers,
                               "without_recall": bool(label), "runs": rs, "median": med,
                               "median_parts": parts})
    if a.json:
        a.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
