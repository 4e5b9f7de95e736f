"""Scale out, measured: a catalogue-shaped synthetic workload replayed by each executor.

    python benchmarks/measure_scale.py 400000 [--projects 200] [--runs 3] [--json out.json]
    python benchmarks/measure_scale.py 4000000 --projects 2000 --runs 1 --executors 2 local:2

Each run is a whole `brainbox replay --synthetic N --projects P --bootstrap 0 --json-out F`
process; an executor is ``1`` (in process), ``2`` (``--workers 2``, a spawn process pool)
or ``local:2`` (``--scheduler local:2``, a Dask LocalCluster of 2 single-threaded
workers). Per executor, the medians over ``runs``: events per second per core (events over
the series' CPU time, the issue's measure), the wall time of the whole command, the
replay's wall time and events per second of it (warm-up excluded). Runs alternate between
the executors (run 1 of each, then run 2 of each), so a change in the machine's load
falls on every executor alike. The script also checks that every executor's report
(timings left out) is the same, and says so. The kernels are compiled once beforehand
(a tiny replay) so no run pays for it. The machine is shared: read medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def command(events: int, projects: int, executor: str, out: Path) -> list[str]:
    cmd = [sys.executable, "-m", "brainbox.cli.entry", "replay", "--synthetic", str(events),
           "--projects", str(projects), "--no-progress", "--bootstrap", "0",
           "--json-out", str(out)]
    return cmd + (["--scheduler", executor] if executor.startswith(("local:", "tcp://"))
                  else ["--workers", executor])


def run_once(events: int, projects: int, executor: str, out: Path) -> tuple[dict, str]:
    t0 = time.perf_counter()
    subprocess.run(command(events, projects, executor, out), check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    doc = json.loads(out.read_text())
    t = doc.pop("timings")
    doc.pop("source_commit", None)
    doc.pop("source_dirty", None)
    return ({"per_core": t["events_per_s_per_core"], "replay_eps": t["events_per_s"],
             "events": t["events"], "wall_s": wall, "replay_s": t["replay_s"],
             "series_cpu_s": t["series_cpu_s"], "warmup_s": t["compile_s"],
             "executor": t["executor"], "workers": t["workers"]},
            json.dumps(doc, sort_keys=True))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("events", type=int)
    ap.add_argument("--projects", type=int, default=0,
                    help="repositories (default: one per 2,000 events)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--executors", nargs="+", default=["1", "2", "local:2"])
    ap.add_argument("--json", type=Path, help="write every run's figures here")
    args = ap.parse_args(argv)
    projects = args.projects or max(2, args.events // 2000)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        subprocess.run(command(2000, 2, "1", out), check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)  # compile or load the kernels once
        runs: dict = {e: [] for e in args.executors}
        docs: dict = {}
        for i in range(args.runs):
            for e in args.executors:
                fig, doc = run_once(args.events, projects, e, out)
                runs[e].append(fig)
                docs.setdefault(e, doc)
                print(f"run {i + 1} {e:>8}: {fig['per_core']:,.0f} events/s/core, "
                      f"{fig['wall_s']:.1f} s wall ({fig['replay_s']:.1f} s replay, "
                      f"{fig['series_cpu_s']:.1f} s series CPU)", file=sys.stderr)
    same = len(set(docs.values())) == 1
    print(f"{args.events:,} events, {projects:,} repositories (catalogue), "
          f"{args.runs} run(s) each; reports identical across executors: {same}")
    print(f"{'executor':>10} {'events/s/core':>14} {'wall s':>8} {'replay s':>9} "
          f"{'replay ev/s':>12}")
    med = {}
    for e, rs in runs.items():
        med[e] = {k: statistics.median(r[k] for r in rs)
                  for k in ("per_core", "wall_s", "replay_s", "replay_eps")}
        m = med[e]
        print(f"{e:>10} {m['per_core']:>14,.0f} {m['wall_s']:>8.1f} {m['replay_s']:>9.1f} "
              f"{m['replay_eps'] or 0:>12,.0f}")
    if args.json:
        args.json.write_text(json.dumps({"events": args.events, "projects": projects,
                                         "identical": same, "medians": med, "runs": runs},
                                        indent=1))
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
