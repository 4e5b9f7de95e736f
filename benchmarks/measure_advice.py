"""The PreToolUse co-edit advice, measured in the replay (issue 17, item 3): when the agent
edits X, is the next file it edits among the advice for X?

Protocol (DESIGN §5, no foresight). Every source of ``../shared/data/trajectories`` is
its own cohort and each of its repositories a series (``brainbox.eval.sources.select``:
first attempt per task id, tasks in PR order), replayed on a fresh ``State`` through
``brainbox.learning.fold`` as ``brainbox.eval.localization`` does (a task's prompt event,
then its events, one simulated second each). A **probe** is an edit event of a file X
(action ``edit``, no error) that a later edit event of the same task follows with another
file Y (the first such Y is the gold). At the probe, before the edit is folded, each
method ranks the files of the project other than X; the probe is **eligible** when Y is
a file memory has seen (a resource of the project): the others count toward coverage
only, as the replay's probes do.

Methods, all over the same history (everything folded before the probe, the current
task's earlier events included):

- ``advice``: what the hook shows, ``brainbox.advice.next_edits`` (the session's trail
  plus the association weight from X; at most ``cli.service.ADVICE_FILES`` = 3, silent
  unless a file clears ``MIN_WEIGHT``); ``next``: the same ranking unfloored, cut to ten;
  ``next[d,g]``: its grid of (trail decay, graph gain), and ``next-loro`` each
  repository's figure from the grid point best on the other repositories (every source
  pooled: leave-one-repository-out);
- ``graph``: the association weights alone (``co_edits``, no floor), cut to ten;
- ``graph-edited`` / ``graph-all``: ablations, the graph over edited files only / over
  every file alike (no floor);
- ``trail``: the files the task touched so far, the last first (a history-free baseline:
  the agent's own trail);
- ``co-session``: files that appeared in the most sessions in which X appeared (EdgeBank
  -like), ties by the latest such session, then path;
- ``co-edit-count``: files edited in the most sessions in which X was edited (counting),
  ties the same way; ``@shown``: a baseline cut to the advice's length (the fair
  comparison for ``advice``); ``trail@spoken``: the trail's first 3 where the advice
  speaks, else nothing.

Metrics: MRR@10 (reciprocal rank of Y within the first ten, else 0) and Hit@5, averaged
over eligible probes; the paired bootstrap of ``advice`` (and ``graph-edited``) minus each
baseline resamples whole trajectories (tasks; 1,000 resamples, seed 42), the statistic
being the mean over the resampled tasks' probes.

    python benchmarks/measure_advice.py [--json] [--sources DIR ...]

Figures (all four sources, 1,364 eligible of 2,862 probes in 333 tasks; 13 s), MRR@10:
next-loro 0.4956 (every repository chose decay 0.9, gain 1.0, the constants shipped),
trail 0.4583, graph 0.2485, co-session 0.2409, co-edit-count 0.1953; next-loro - trail
+0.037 [+0.022, +0.054], - co-session +0.255 [+0.224, +0.285], - co-edit-count +0.300
[+0.268, +0.334]. As shown: advice 0.2681, co-session@shown 0.2121 (+0.056 [+0.028,
+0.087]), co-edit-count@shown 0.1727 (+0.095 [+0.067, +0.125]), trail@shown 0.4143
(-0.146 [-0.179, -0.114]: the advice is silent where no earlier session supports a
file), trail@spoken 0.2290 (+0.039 [+0.022, +0.058]). Per source the ranking beats the
trail in claude-code (+0.029 [+0.008, +0.053]) and mini-swe-agent (+0.030 [+0.013,
+0.047]); openhands and sweagent-java have 15 and 25 probes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TRAJ = ROOT.parent / "shared" / "data" / "trajectories"
GRID = tuple((d, g) for d in (0.8, 0.9) for g in (0.1, 0.3, 1.0, 3.0))  # (decay, gain)
GRID_NAMES = tuple(f"next[{d},{g}]" for d, g in GRID)
METHODS = ("advice", "next", "next-loro", "graph", "graph-edited", "graph-all", "trail",
           "co-session", "co-edit-count", "trail@shown", "co-session@shown",
           "co-edit-count@shown", "trail@spoken") + GRID_NAMES
BASELINES = ("trail", "co-session", "co-edit-count")
PAIRS = (("advice", "trail@shown"), ("advice", "trail@spoken"), ("advice", "co-session@shown"),
         ("advice", "co-edit-count@shown"), ("next-loro", "trail"),
         ("next-loro", "co-session"), ("next-loro", "co-edit-count"),
         ("graph", "co-session"), ("graph", "co-edit-count"))
K = 10


class Counting:
    """The two counting baselines' history: which files each session touched and edited."""

    def __init__(self):
        self.touched = defaultdict(dict)  # session index -> {path: None}, per series
        self.edited = defaultdict(dict)
        self.sess_of = defaultdict(dict)  # path -> {session index: None} (touched)
        self.esess_of = defaultdict(dict)  # path -> {session index: None} (edited)

    def add(self, s: int, ev: dict) -> None:
        if ev["kind"] != "tool":
            return
        files = ev.get("files") or ()
        edit = ev.get("action") == "edit" and not ev.get("error_fp")
        for f in files:
            self.touched[s][f] = None
            self.sess_of[f][s] = None
            if edit:
                self.edited[s][f] = None
                self.esess_of[f][s] = None

    def rank(self, x: str, edited: bool) -> list[str]:
        by_sess, of = (self.edited, self.esess_of) if edited else (self.touched, self.sess_of)
        count, latest = defaultdict(int), {}
        for s in of.get(x, ()):
            for f in by_sess[s]:
                if f != x:
                    count[f] += 1
                    latest[f] = max(latest.get(f, -1), s)
        return sorted(count, key=lambda f: (-count[f], -latest[f], f))[:K]


def probes(events: list[dict]) -> list[tuple[int, str, str]]:
    """(event index, X, Y) of the task: each clean edit of X followed by an edit of Y != X."""
    edits = [(i, ev["files"]) for i, ev in enumerate(events)
             if ev["kind"] == "tool" and ev.get("action") == "edit" and not ev.get("error_fp")
             and ev.get("files")]
    out = []
    for j, (i, files) in enumerate(edits):
        x = files[0]
        gold = next((f for _, later in edits[j + 1:] for f in later if f != x), None)
        if gold is not None:
            out.append((i, x, gold))
    return out


def rr(ranking: list[str], gold: str) -> tuple[float, float]:
    top = ranking[:K]
    if gold not in top:
        return 0.0, 0.0
    r = top.index(gold) + 1
    return 1.0 / r, float(r <= 5)


def series(tasks) -> list[dict]:
    """One series' per-task rows: {"id", "probes", "eligible", "rr": {method: [..]},
    "hit": {method: [..]}}."""
    from brainbox import advice, learning
    from brainbox.eval.replay import normalized, prompt_event
    from brainbox.kernels.codes import FILE
    from brainbox.state import State

    state, count = State(), Counting()
    clock = 1_700_000_000.0
    rows = []
    for s, task in enumerate(tasks):
        events, _ = normalized(task)
        root = events[0]["project"] if events else task.project or "/testbed"
        session = events[0]["session"] if events else task.id
        pev = prompt_event(session, root, task.description or "")
        clock += 1.0
        pev["at"] = clock
        learning.fold(state, [pev])
        row = {"id": task.id, "repo": task.repo, "probes": 0, "eligible": 0,
               "rr": {m: [] for m in METHODS}, "hit": {m: [] for m in METHODS}}
        at = {i: (x, y) for i, x, y in probes(events)}
        batch = []
        for i, ev in enumerate(events):
            clock += 1.0
            ev["at"] = clock
            if i in at:
                learning.fold(state, batch)
                batch = []
                x, y = at[i]
                row["probes"] += 1
                if (FILE, root, y) in state.res_index:
                    row["eligible"] += 1
                    ranked = {
                        "graph": [p for p, _ in advice.co_edits(state, root, x, k=K,
                                                               floor=0.0)],
                        "graph-edited": [p for p, _ in advice.co_edits(state, root, x, k=K,
                                                                      floor=0.0, boost=0.0)],
                        "graph-all": [p for p, _ in advice.co_edits(state, root, x, k=K,
                                                                   floor=0.0, boost=1.0)],
                        "co-session": count.rank(x, edited=False),
                        "co-edit-count": count.rank(x, edited=True),
                        "trail": [f for f in state.advice.session_trail(session, root)
                                  if f != x][:K],
                        "advice": [p for p, _, _ in advice.next_edits(state, root, x, session,
                                                                     k=advice_k())],
                        "next": [p for p, _, _ in advice.next_edits(state, root, x, session,
                                                                   k=K, floor=0.0)],
                    }
                    for name, (d, g) in zip(GRID_NAMES, GRID):
                        ranked[name] = [p for p, _, _ in advice.next_edits(
                            state, root, x, session, k=K, floor=0.0, decay=d, gain=g)]
                    for m in BASELINES:
                        ranked[f"{m}@shown"] = ranked[m][:advice_k()]
                    ranked["trail@spoken"] = ranked["trail@shown"] if ranked["advice"] else []
                    for m, ranking in ranked.items():
                        a, b = rr(ranking, y)
                        row["rr"][m].append(a)
                        row["hit"][m].append(b)
            batch.append(ev)
            count.add(s, ev)
        learning.fold(state, batch)
        rows.append(row)
    return rows


def loro(rows: list[dict]) -> dict:
    """Fill each row's ``next-loro`` with the grid point (``GRID``) of the best MRR@10
    over the other repositories' probes (every source pooled): no repository's figure
    comes from a setting chosen on it. Returns {repo: chosen (decay, gain)}."""
    by_repo = defaultdict(lambda: np.zeros(len(GRID)))
    n_repo = defaultdict(float)
    for r in rows:
        by_repo[r["repo"]] += [sum(r["rr"][m]) for m in GRID_NAMES]
        n_repo[r["repo"]] += r["eligible"]
    total, n_total = sum(by_repo.values()), sum(n_repo.values())
    chosen = {}
    for repo in by_repo:
        other = (total - by_repo[repo]) / max(n_total - n_repo[repo], 1.0)
        chosen[repo] = GRID[int(np.argmax(other))]  # ties: the first in GRID
    for r in rows:
        name = GRID_NAMES[GRID.index(chosen[r["repo"]])]
        r["rr"]["next-loro"], r["hit"]["next-loro"] = list(r["rr"][name]), list(r["hit"][name])
    return chosen


def advice_k() -> int:
    from brainbox.cli.service import ADVICE_FILES

    return ADVICE_FILES


def summarize(rows: list[dict], *, seed: int = 42, resamples: int = 1000) -> dict:
    rows = [r for r in rows if r["eligible"]]
    out = {"tasks": len(rows), "eligible": sum(r["eligible"] for r in rows), "mean": {},
           "diff": {}}
    if not rows:
        return out
    n = np.asarray([r["eligible"] for r in rows], np.float64)
    sums = {key: {m: np.asarray([sum(r[key][m]) for r in rows]) for m in METHODS}
            for key in ("rr", "hit")}
    name = {"rr": "MRR@10", "hit": "Hit@5"}
    for m in METHODS:
        out["mean"][m] = {name[k]: round(float(sums[k][m].sum() / n.sum()), 4) for k in sums}
    idx = np.random.default_rng(seed).integers(0, len(rows), size=(resamples, len(rows)))
    for ours, base in PAIRS:
        cell = {}
        for k in sums:
            d = sums[k][ours] - sums[k][base]
            boot = d[idx].sum(axis=1) / n[idx].sum(axis=1)
            cell[name[k]] = {"mean": round(float(d.sum() / n.sum()), 4),
                             "ci": [round(float(x), 4) for x in np.percentile(boot, [2.5, 97.5])]}
        out["diff"][f"{ours} - {base}"] = cell
    return out


def main(argv=None) -> int:
    from brainbox.eval.sources import expand_sources, load_source, select

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", nargs="*", default=[str(TRAJ)])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args(argv)
    if not all(Path(p).exists() for p in a.sources):
        print("measure_advice: the trajectories are absent", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    per_source, every = {}, []
    for label, path in expand_sources(a.sources):
        tasks, _ = load_source(path)
        rows = []
        for _repo, series_tasks in select(tasks):
            rows += series(series_tasks)
        for r in rows:
            r["source"] = label
        per_source[label] = summarize(rows, seed=a.seed)
        per_source[label]["probes"] = sum(r["probes"] for r in rows)
        every += rows
        print(f"measure_advice: {label}: {per_source[label]['eligible']} eligible probes",
              file=sys.stderr)
    chosen = loro(every)
    per_source = {label: summarize([r for r in every if r["source"] == label], seed=a.seed)
                  | {"probes": per_source[label]["probes"]} for label in per_source}
    out = {"all": summarize(every, seed=a.seed), "sources": per_source,
           "loro_choice": {repo: list(v) for repo, v in sorted(chosen.items())},
           "probes": sum(r["probes"] for r in every),
           "seconds": round(time.perf_counter() - t0, 1)}
    out["all"]["probes"] = out["probes"]
    if a.json:
        print(json.dumps(out, indent=2))
        return 0
    for label, res in [("all", out["all"]), *per_source.items()]:
        print(f"== {label}: {res.get('eligible', 0)} eligible of {res.get('probes', 0)} probes"
              f" in {res.get('tasks', 0)} tasks")
        for m, v in res.get("mean", {}).items():
            if m in GRID_NAMES and label != "all":
                continue
            print(f"  {m:19s} MRR@10 {v['MRR@10']:.4f}  Hit@5 {v['Hit@5']:.4f}")
        for pair, cell in res.get("diff", {}).items():
            c = cell["MRR@10"]
            print(f"  {pair:32s} MRR@10 {c['mean']:+.4f} [{c['ci'][0]:+.4f}, {c['ci'][1]:+.4f}]")
    print("leave-one-repository-out choice (decay, gain): "
          + str(dict(Counter(tuple(v) for v in out["loro_choice"].values()))))
    print(f"({out['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
