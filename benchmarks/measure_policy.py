"""The injection policy on the development replay (issue 18, item 1; `brainbox.injection`).

For every source in ../shared/data/trajectories, each repository's tasks replay in PR order
on a fresh memory (`brainbox.learning.fold`, as eval.localization). Before each task, its
description is the prompt: recall's list as the prompt hook makes it (recall with its
floor, the first 5 files), the block's characters for each number of items
(`cli.service.format_suggestions`), and what the task then did with each file (read or
edited: the task's gold reads and edits). Every arm's reward is computed (the agent's
actions are fixed); the policy decides, project by project, from the decisions scored
before, as the hooks would (`Policy.update` after each task).

Prints, pooled and per source: the mean reward per prompt of the policy and of each fixed
arm, the paired bootstrap (1,000 resamples over tasks, seed 42) of the policy minus each
arm (the policy decides from recall's calibrated confidences, `injection.expected`, and
the decisions scored before), the share of prompts the policy left silent (and of those recall had nothing for),
and the arms it chose.

    python benchmarks/measure_policy.py [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "trajectories"


def series_rows(tasks) -> list[dict]:
    from brainbox import injection as inj
    from brainbox.cli.service import format_suggestions
    from brainbox.eval.replay import fold_task, task_frame
    from brainbox.memory import _evidence
    from brainbox.recall import Index, recall
    from brainbox.state import State

    state, policy = State(), inj.Policy()
    index = Index(state)
    clock = 1_700_000_000.0
    rows = []
    for task in tasks:
        events, root, session = task_frame(task)
        q = task.description or ""
        hits = recall(index, q, project=root, limit=5, now=clock) if state.n_res else []
        items = [{"path": r.path, "why": _evidence(r), "confidence": r.confidence}
                 for r in hits[:5]]
        touched = set(task.gold_read) | set(task.gold_edit)
        used = [(it["path"] in touched, it["path"] in task.gold_edit) for it in items]
        chars = [0] + [len(format_suggestions(items[:k], [], 10**6)[0])
                       for k in range(1, len(items) + 1)]
        row = {"id": task.id, "available": len(items)}
        if items:
            full = inj.rewards(used, chars, len(items))
            ctx = inj.context(items[0]["confidence"], q, in_session=False,
                              decisions=policy.decisions.get(root, 0), prompt_index=0)
            exp = inj.expected([it["confidence"] for it in items], chars)
            model = inj.model_arm(exp, len(items))
            a = policy.choose(root, ctx, len(items), exp)
            policy.update(root, ctx, full, model)  # every arm observed (brainbox.injection)
            row.update(arms=full, policy=full[a], arm=inj.NAMES[a], ctx=ctx,
                       model=full[model])
        else:
            row.update(arms=[0.0] * len(inj.ARMS), policy=0.0, arm="none", ctx=None,
                       model=0.0)
        rows.append(row)
        clock = fold_task(state, events, session, root, task.description or "", clock)
    return rows


def summary(rows: list[dict], seed: int = 42, resamples: int = 1000) -> dict:
    from brainbox import injection as inj

    pol = np.asarray([r["policy"] for r in rows])
    arms = np.asarray([r["arms"] for r in rows])
    idx = np.random.default_rng(seed).integers(0, len(rows), size=(resamples, len(rows)))
    means = {n: float(arms[:, a].mean()) for a, n in enumerate(inj.NAMES)}
    best = max(means, key=means.get)
    out = {"prompts": len(rows), "policy": float(pol.mean()), "arms": means,
           "best_arm": best,
           "policy_share_of_best": float(pol.mean() / means[best]) if means[best] else None,
           "diff": {}, "chosen": dict(Counter(r["arm"] for r in rows)),
           "silent_share": float(np.mean([r["arm"] in ("SILENT", "none") for r in rows])),
           "nothing_to_show_share": float(np.mean([r["available"] == 0 for r in rows]))}
    for a, n in enumerate(inj.NAMES):
        d = pol - arms[:, a]
        boot = d[idx].mean(axis=1)
        out["diff"][n] = [float(d.mean()), [float(x) for x in np.percentile(boot, [2.5, 97.5])]]
    return out


def main(argv=None) -> int:
    from brainbox.eval.sources import expand_sources, load_source

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if not DATA.exists():
        print("measure_policy: ../shared/data is absent", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    by_source = {}
    for label, path in expand_sources([DATA]):
        tasks, _ = load_source(path)
        rows = []
        for repo in sorted({t.repo for t in tasks}):
            rows += series_rows(sorted((t for t in tasks if t.repo == repo),
                                       key=lambda t: (t.order, t.id)))
        by_source[label] = rows
    pooled = [r for rows in by_source.values() for r in rows]
    out = {"seconds": round(time.perf_counter() - t0, 1), "pooled": summary(pooled),
           "sources": {k: summary(v) for k, v in by_source.items()}}
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    for name, s in [("pooled", out["pooled"]), *out["sources"].items()]:
        arms = ", ".join(f"{n} {v:.3f}" for n, v in s["arms"].items())
        print(f"{name}: {s['prompts']} prompts; policy {s['policy']:.3f}; arms: {arms}; "
              f"best {s['best_arm']}, policy at {100 * (s['policy_share_of_best'] or 0):.1f}% "
              f"of it; silent {100 * s['silent_share']:.1f}% (nothing to show "
              f"{100 * s['nothing_to_show_share']:.1f}%); chosen {s['chosen']}")
        print("   policy minus: " + "; ".join(
            f"{n} {d:+.3f} [{lo:+.3f}, {hi:+.3f}]" for n, (d, (lo, hi)) in s["diff"].items()))
    print(f"({out['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
