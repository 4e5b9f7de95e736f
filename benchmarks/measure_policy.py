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


def main(argv=None) -> int:

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if not DATA.exists():
        print("measure_policy: ../shared/data is absent", file=sys.stderr)
        return 2
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
