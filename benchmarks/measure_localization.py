"""Whole-repository file localization on claude-code-swebench-lite (issue 16, Deliver 5):
`brainbox.eval.localization` (the methods, golds and rules are in its docstring; `brainbox
replay --repos DIR` runs the same), plus what only a measurement needs:

- ``--snippet-weight W``: the snippet channel's prompt weight for this run;
- ``--loro``: also brainbox with the snippet weight chosen per held-out repository from
  ``GRID``, by MRR@10 on the other repositories' tasks (gold ``--gold``).

    python benchmarks/measure_localization.py [--depth 50] [--snippet-weight W] [--loro]
        [--gold patch|edit] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
SOURCE = SHARED / "trajectories" / "claude-code-swebench-lite"
REPOS = SHARED / "repos"
GRID = (4.0, 8.0, 16.0, 32.0, 64.0, 128.0)  # snippet weights --loro chooses from


def main(argv=None) -> int:
    from brainbox import recall
    from brainbox.eval import localization as L
    from brainbox.eval.sources import load_source

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--depth", type=int, default=L.DEPTH, help="chunks the snippet channel reads")
    ap.add_argument("--snippet-weight", type=float, default=None,
                    help="the snippet channel's fusion weight (default: recall's)")
    ap.add_argument("--loro", action="store_true",
                    help="also brainbox with the snippet weight chosen leave-one-repository-"
                         "out from GRID (by MRR@10 on the other repositories' tasks)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--gold", choices=L.GOLDS, default="patch",
                    help="patch: the gold patch's files; edit: the files the agent edited")
    a = ap.parse_args(argv)
    if not SOURCE.exists() or not REPOS.exists():
        print("measure_localization: ../shared/data is absent", file=sys.stderr)
        return 2
    if a.snippet_weight is not None:  # a sensitivity run: this process's prompt weight
        recall.SNIPPET_PROMPT = a.snippet_weight
    t0 = time.perf_counter()
    tasks, _ = load_source(SOURCE)
    snaps = L.snapshots(REPOS)
    golds = L.gold_patches([SOURCE])
    rows, total = [], 0
    for repo in sorted({t.repo for t in tasks}):
        series = sorted((t for t in tasks if t.repo == repo), key=lambda t: (t.order, t.id))
        late = [t for t in series if snaps[repo]["pr"] is not None
                and t.order >= snaps[repo]["pr"]]
        total += len(late)
        rows += L.series(repo, late, snaps[repo]["path"], golds, depth=a.depth,
                         snippet_weights=GRID if a.loro else ())
    methods = L.METHODS
    chosen = {}
    if a.loro:  # brainbox-loro: each repository's tasks at the weight best on the others
        mine = [r for r in rows if a.gold in r["rank"]]
        pw = np.asarray([r["by_weight"][a.gold] for r in mine])  # tasks x weights x metrics
        rp = np.asarray([r["repo"] for r in mine])
        for repo in sorted(set(rp.tolist())):
            j = int(np.argmax(pw[rp != repo, :, 2].mean(axis=0)))
            chosen[repo] = GRID[j]
        for r, row in zip(mine, pw):
            r["rank"][a.gold]["brainbox-loro"] = row[GRID.index(chosen[r["repo"]])].tolist()
        methods = ("brainbox-loro",) + methods
    out = L.summarize(rows, a.gold, methods, seed=a.seed)
    out["conditional"] = L.summarize(rows, "conditional", seed=a.seed)
    out.update({"tasks": total, "seconds": round(time.perf_counter() - t0, 1),
                "depth": a.depth, "snippet_weight": recall.SNIPPET_PROMPT,
                "loro_weights": chosen})
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    what = "a gold-patch file" if a.gold == "patch" else "a file the agent edited"
    print(f"{out['scored']} of {total} tasks have {what} in the snapshot "
          f"({out['seconds']} s, snippet depth {a.depth})")
    print("method        " + "  ".join(f"{k:>9}" for k in L.METRICS))
    for m in methods:
        print(f"{m:<13} " + "  ".join(f"{out['mean'][m][k]:>9.3f}" for k in L.METRICS))
    c = out["conditional"]
    if c["scored"]:
        d = c["diff"]["memory"]
        print(f"conditional P1-edit ({c['scored']} tasks): brainbox MRR@10 "
              f"{c['mean']['brainbox']['MRR@10']:.3f}, memory {c['mean']['memory']['MRR@10']:.3f}"
              f", difference {d['MRR@10']['mean']:+.3f} [{d['MRR@10']['ci'][0]:+.3f}, "
              f"{d['MRR@10']['ci'][1]:+.3f}]; Acc@5 {d['Acc@5']['mean']:+.3f} "
              f"[{d['Acc@5']['ci'][0]:+.3f}, {d['Acc@5']['ci'][1]:+.3f}]")
    if chosen:
        print("LORO snippet weights: " + ", ".join(f"{r} {w:g}" for r, w in chosen.items()))
    for m, d in out["diff"].items():
        print(f"{methods[0]} - {m}: " + "; ".join(
            f"{k} {v['mean']:+.3f} [{v['ci'][0]:+.3f}, {v['ci'][1]:+.3f}]"
            for k, v in d.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
