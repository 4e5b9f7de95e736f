"""Procedures on the development replay (issue 18 Deliver 5, second bullet;
`brainbox.eval.procedures_eval` has the method).

For every source in ../shared/data/trajectories, each repository's tasks in PR order feed
a fresh procedure miner; a later task that hits an error whose fingerprint has a live
procedure is counted, and the procedure's files are scored against the files the agent
then edits (precision, recall), beside the frequency baseline (the repository's most
edited files so far, as many). Paired bootstrap over the hit tasks (1,000 resamples, seed
42). Prints per source and pooled; `brainbox replay SOURCE --procedures` is the same.

    python benchmarks/measure_procedures.py [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "trajectories"


def main(argv=None) -> int:
    from brainbox.eval.procedures_eval import evaluate, text

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--rows", action="store_true", help="with --json: every task's row too")
    a = ap.parse_args(argv)
    if not DATA.exists():
        print("measure_procedures: ../shared/data is absent", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    out = evaluate([DATA])
    out["seconds"] = round(time.perf_counter() - t0, 1)
    if not a.rows:
        out.pop("rows")
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    print(text(out))
    print(f"({out['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
