"""Whole-repository file localization on claude-code-swebench-lite (issue 16, Deliver 5,
a first measurement ahead of `brainbox replay --repos`).

For each repository with a snapshot in ``../shared/data/repos`` (every task of this source
is at or after its snapshot: the README's no-foresight rule), the snapshot is extracted and
indexed (keyword index, `brainbox.codeindex.build`) into a fresh SQLite file. Tasks replay
in PR order on a fresh memory (`brainbox.learning.fold`, as the Python replay does). Before
each task's events are folded, with its description as the query, three rankings of the
snapshot's files:

- ``brainbox``: recall with the code index (`brainbox.recall.code_ranking`, floor off, so
  a file memory never saw can rank);
- ``memory``: recall without it (the files memory has seen);
- ``index``: the snippet channel alone (each file by its best chunk, BM25 over chunks);
- ``bm25-files``: the history-free baseline of the issue, BM25 over whole files (path and
  content terms, `brainbox.text`; `brainbox.eval.baselines.Bm25`) for every distinct
  term of the description.

Gold (``--gold``): the files of the task's gold patch (the ``patch`` of the SWE-bench
rows), or the files the agent edited (not created); either only where they exist
in the snapshot. Prints Acc@1, Acc@5, MRR@10 and Recall@10 per method with paired bootstrap
intervals of brainbox minus each other method.

    python benchmarks/measure_localization.py [--depth 50] [--snippet-weight W] [--loro]
        [--gold patch|edit] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
SOURCE = SHARED / "trajectories" / "claude-code-swebench-lite"
REPOS = SHARED / "repos"
METHODS = ("brainbox", "memory", "index", "bm25-files")
METRICS = ("Acc@1", "Acc@5", "MRR@10", "Recall@10")
GRID = (4.0, 8.0, 16.0, 32.0, 64.0, 128.0)  # snippet weights --loro chooses from


def gold_patches() -> dict:
    out = {}
    for line in (SOURCE / "swe-bench-lite.dev-repos.jsonl").read_text().splitlines():
        row = json.loads(line)
        out[row["instance_id"]] = set(re.findall(r"^diff --git a/(\S+) b/", row["patch"],
                                                  re.MULTILINE))
    return out


def metrics(ranking: list, gold: set) -> list[float]:
    top = ranking[:10]
    first = next((i for i, p in enumerate(top) if p in gold), -1)
    return [float(bool(top[:1]) and top[0] in gold), float(any(p in gold for p in top[:5])),
            0.0 if first < 0 else 1.0 / (first + 1), len(gold & set(top)) / len(gold)]


def main(argv=None) -> int:
    from brainbox import codeindex, codesearch, learning
    from brainbox.eval.baselines import Bm25
    from brainbox.eval.replay import normalized, prompt_event
    from brainbox.eval.sources import load_source
    from brainbox.recall import Index, Params, code_ranking, rank
    from brainbox.state import State
    from brainbox.store import connect
    from brainbox.text import path_tokens, tokens

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--depth", type=int, default=50, help="chunks the snippet channel reads")
    ap.add_argument("--snippet-weight", type=float, default=None,
                    help="the snippet channel's fusion weight (default: recall's)")
    ap.add_argument("--loro", action="store_true",
                    help="also brainbox with the snippet weight chosen leave-one-repository-"
                         "out from GRID (by MRR@10 on the other repositories' tasks)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--gold", choices=("patch", "edit"), default="patch",
                    help="patch: the gold patch's files; edit: the files the agent edited")
    a = ap.parse_args(argv)
    if not SOURCE.exists() or not REPOS.exists():
        print("measure_localization: ../shared/data is absent", file=sys.stderr)
        return 2
    from brainbox import recall

    if a.snippet_weight is not None:  # a sensitivity run: this process's fusion weights
        recall.FUSION["chosen"]["snippet"] = a.snippet_weight
    default_w = recall.FUSION["chosen"]["snippet"]
    grid = GRID if a.loro else ()
    repos, per_w = [], []
    golds = gold_patches()
    snaps = {p.name.replace("__", "/"): next(p.glob("*.tar.gz")) for p in REPOS.iterdir()
             if p.is_dir()}
    tasks, _ = load_source(SOURCE)
    params = Params(min_probability=0.0)
    rows, eligible, total = [], 0, 0
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for repo in sorted({t.repo for t in tasks}):
            series = sorted((t for t in tasks if t.repo == repo), key=lambda t: t.order)
            snap = Path(tmp) / repo.replace("/", "__")
            with tarfile.open(snaps[repo]) as tf:
                tf.extractall(snap, filter="data")
            conn = connect(Path(tmp) / (snap.name + ".db"))
            codeindex.build(conn, str(snap))
            files = {str(p.relative_to(snap)) for p in snap.rglob("*") if p.is_file()}
            names = sorted(files)
            bm25 = Bm25()
            for d, name in enumerate(names):
                text = (snap / name).read_text("utf-8", "replace")
                bm25.add(d, path_tokens(name) + tokens(text, limit=len(text)))
            state = State()
            index = Index(state)
            clock = 1_700_000_000.0
            for task in series:
                events, _ = normalized(task)
                root = events[0]["project"] if events else "/testbed"
                session = events[0]["session"] if events else task.id
                gold = (golds.get(task.id, set()) if a.gold == "patch" else
                        set(task.gold_edit) - set(task.created)) & files
                total += 1
                if gold:
                    eligible += 1
                    q = task.description or ""
                    best: dict = {}
                    for sn in codesearch.search(conn, str(snap), q, a.depth, embedder=None):
                        best.setdefault(sn.path, float(sn.score))
                    r = rank(index, q, project=root, limit=10, now=clock, params=params)
                    mem = [] if r is None else [state.res_key[c] for c in r.cand[r.order[:10]]]
                    by_w = []
                    for w in grid:
                        recall.FUSION["chosen"]["snippet"] = w
                        by_w.append(metrics([row[2] for row in code_ranking(
                            index, q, best, project=root, limit=10, now=clock,
                            params=params)[0]], gold))
                    recall.FUSION["chosen"]["snippet"] = default_w
                    both = [row[2] for row in code_ranking(
                        index, q, best, project=root, limit=10, now=clock, params=params)[0]]
                    repos.append(repo)
                    per_w.append(by_w)
                    bm25.set_query(list(dict.fromkeys(tokens(q))), len(names))
                    flat = [names[d] for d in bm25.top(10, len(names))]
                    rows.append([metrics(x, gold) for x in (both, mem, list(best), flat)])
                pev = prompt_event(session, root, task.description or "")
                pev["at"] = clock
                learning.fold(state, [pev])
                for ev in events:
                    clock += 1.0
                    ev["at"] = clock
                    learning.fold(state, [ev])
                clock += 2.0
            conn.close()
    arr = np.asarray(rows)  # tasks x methods x metrics
    methods = METHODS
    chosen = {}
    if grid:  # brainbox-loro: each repository's tasks at the weight best on the others
        pw, rp = np.asarray(per_w), np.asarray(repos)  # tasks x weights x metrics
        loro = np.empty_like(arr[:, 0, :])
        for repo in sorted(set(repos)):
            mine = rp == repo
            j = int(np.argmax(pw[~mine, :, 2].mean(axis=0)))
            chosen[repo] = GRID[j]
            loro[mine] = pw[mine, j, :]
        arr = np.concatenate([loro[:, None, :], arr], axis=1)
        methods = ("brainbox-loro",) + METHODS
    rng = np.random.default_rng(a.seed)
    idx = rng.integers(0, len(arr), size=(1000, len(arr)))
    out = {"tasks": total, "scored": len(arr), "seconds": round(time.perf_counter() - t0, 1),
           "depth": a.depth, "snippet_weight": default_w, "loro_weights": chosen,
           "mean": {}, "diff": {}}
    for mi, m in enumerate(methods):
        out["mean"][m] = {k: round(float(arr[:, mi, j].mean()), 3) for j, k in enumerate(METRICS)}
    for mi, m in enumerate(methods[1:], start=1):
        d = arr[:, 0, :] - arr[:, mi, :]
        boot = d[idx].mean(axis=1)
        out["diff"][m] = {k: [round(float(d[:, j].mean()), 3),
                              [round(float(x), 3) for x in np.percentile(boot[:, j], [2.5, 97.5])]]
                          for j, k in enumerate(METRICS)}
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    what = "a gold-patch file" if a.gold == "patch" else "a file the agent edited"
    print(f"{out['scored']} of {total} tasks have {what} in the snapshot "
          f"({out['seconds']} s, snippet depth {a.depth})")
    print("method    " + "  ".join(f"{k:>9}" for k in METRICS))
    for m in methods:
        print(f"{m:<9} " + "  ".join(f"{out['mean'][m][k]:>9.3f}" for k in METRICS))
    if chosen:
        print("LORO snippet weights: " + ", ".join(f"{r} {w:g}" for r, w in chosen.items()))
    for m, d in out["diff"].items():
        print(f"{methods[0]} - {m}: " + "; ".join(
            f"{k} {v:+.3f} [{lo:+.3f}, {hi:+.3f}]" for k, (v, (lo, hi)) in d.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
