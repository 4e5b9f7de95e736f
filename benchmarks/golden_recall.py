"""Recall, recall in a session, explain and next-tool output on two seeded workloads, as
JSON on stdout: a refactor must leave it byte-identical.

    python benchmarks/golden_recall.py > before.json   # on the old commit
    python benchmarks/golden_recall.py > after.json && cmp before.json after.json

Each session of the workload (seed 7 with 12 sessions, the demo's; seed 3 with 30) is asked
its opening prompt before it is recorded (from the third on), without and with its session,
the best file is explained, and the next tools are predicted halfway through the session.
"""

import itertools
import json
import os
import sys
import tempfile

from brainbox.memory import Memory
from brainbox.workload import generate


def run(seed: int, sessions: int) -> list[dict]:
    events = list(generate(events=sessions * 40, files=40, sessions=sessions, seed=seed))
    by = [list(g) for _, g in itertools.groupby(events, key=lambda e: e["session"])]
    root = events[0]["project"]
    rows = []
    with tempfile.TemporaryDirectory() as d, Memory.open(os.path.join(d, "b.db")) as mem:
        for i, s in enumerate(by):
            prompt = s[0].get("prompt") or ""
            if i >= 2:
                res = mem.recall(prompt, project=root, limit=10)
                rows.append({"q": prompt, "r": [r.as_dict() for r in res]})
                res = mem.recall(prompt, project=root, session=s[0]["session"], limit=10)
                rows.append({"q": prompt, "sess": True, "r": [r.as_dict() for r in res]})
                if res:
                    rows.append({"explain": str(mem.explain(res[0].path, prompt,
                                                            project=root))})
            half = max(2, len(s) // 2)
            mem.record(s[:half])
            rows.append({"predict": mem.predict_tools(s[0]["session"], k=5)})
            mem.record(s[half:])
        stats = mem.stats()
        stats.pop("db_path", None)
        rows.append({"stats": stats})
    return rows


if __name__ == "__main__":
    out = {f"{seed}-{n}": run(seed, n) for seed, n in ((7, 12), (3, 30))}
    json.dump(out, sys.stdout, indent=1, sort_keys=True, default=str)
