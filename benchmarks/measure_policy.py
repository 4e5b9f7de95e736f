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
    python benchmarks/measure_policy.py --loro

``--loro`` chooses the project recalibration's pseudo-hits (`injection.PRIOR_HITS`)
leave-one-repository-out: recall's lists are made once per repository
(`eval.policy.series_prompts`), every candidate's decisions are scored on them
(`eval.policy.decide`), and each repository is scored with the candidate that gave the
other repositories the most reward; it prints each repository's choice and the pooled
and per-source means so obtained.

The evaluation is ``brainbox.eval.policy`` (also ``brainbox replay SOURCES --policy``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "trajectories"


def block(items):
    from brainbox.cli.service import format_suggestions

    return format_suggestions(items, [], 10**6)[0]


CANDIDATES = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 1e9)  # 1e9: no recalibration


def loro(block) -> int:
    from brainbox import injection as inj
    from brainbox.eval.policy import decide, series_prompts
    from brainbox.eval.sources import expand_sources, load_source

    prompts = {}
    for label, path in expand_sources([str(DATA)]):
        tasks, _ = load_source(path, "auto")
        for repo in sorted({t.repo for t in tasks}):
            prompts[(label, repo)] = series_prompts(sorted(
                (t for t in tasks if t.repo == repo), key=lambda t: (t.order, t.id)), block)
    total = {(key, k): sum(r["policy"] for r in decide(ps, inj.Policy(k)))
             for key, ps in prompts.items() for k in CANDIDATES}
    got, choice = {}, {}
    for key in prompts:
        others = {k: sum(total[(o, k)] for o in prompts if o[1] != key[1]) for k in CANDIDATES}
        choice[key] = max(CANDIDATES, key=lambda k: (others[k], -k))
        got[key] = total[(key, choice[key])]
    for key, k in choice.items():
        print(f"{key[0]} {key[1]}: k = {k:g}")
    for k in CANDIDATES:
        n = sum(len(v) for v in prompts.values())
        print(f"k = {k:g} everywhere: pooled {sum(total[(key, k)] for key in prompts) / n:.4f}")
    for name in ["pooled", *sorted({key[0] for key in prompts})]:
        keys = [key for key in prompts if name in ("pooled", key[0])]
        print(f"leave-one-repository-out, {name}: "
              f"{sum(got[key] for key in keys) / sum(len(prompts[key]) for key in keys):.4f}")
    return 0


def main(argv=None) -> int:

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--loro", action="store_true",
                    help="choose the recalibration's pseudo-hits leave-one-repository-out")
    a = ap.parse_args(argv)
    if not DATA.exists():
        print("measure_policy: ../shared/data is absent", file=sys.stderr)
        return 2
    if a.loro:
        return loro(block)
    from brainbox.eval.policy import evaluate

    t0 = time.perf_counter()
    out = evaluate([DATA], block)
    out["seconds"] = round(time.perf_counter() - t0, 1)
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
