"""Whole-repository file localization (issue 16, Deliver 5): `brainbox replay --repos DIR`
and `benchmarks/measure_localization.py`.

The probes of the replay (DESIGN §5) rank only the files memory has seen, so a file no
earlier task touched can never be found. Here every file of a source snapshot of the
repository is a candidate.

- **Snapshots.** DIR is laid out like `../shared/data/repos/`: `<owner>__<name>/<commit>.tar.gz`
  (or an extracted `<owner>__<name>/<commit>/` folder) and a `MANIFEST.tsv` with the
  columns `repo` and `pr_number`: the snapshot holds the repository as it was before that
  PR. **No foresight** (that README): only tasks whose PR number (`Task.order`) is at
  least the snapshot's are scored; a repository without a manifest row is not scored
  (its snapshot might hold the fixes of the tasks), and the report says how many tasks
  each rule left out.
- **Memory.** Each series replays in PR order on a fresh memory (`brainbox.learning.fold`,
  as the Python replay does); a task is ranked before its own events are folded, with its
  description as the query. Each repository's snapshot is extracted and keyword-indexed
  (`brainbox.codeindex.build`) into a fresh SQLite file in a temporary folder first.
- **Methods.**
  - `brainbox`: recall with the code index (`brainbox.recall.code_ranking`, floor off so
    a file memory never saw can rank);
  - `memory`: recall without it (the files memory has seen);
  - `index`: the snippet channel alone (`brainbox.codesearch.files`: RRF of BM25 over
    chunks and the definitions of the names the description mentions as code);
  - `bm25-files`: BM25 over whole files (path and content terms, `brainbox.text`;
    `eval.baselines.Bm25`), the first history-free baseline of the issue;
  - `repo-map`: the second, in the manner of aider's repository map: personalized
    PageRank (damping 0.85, networkx's and aider's default) over the import, call and
    inheritance graph of the snapshot (`brainbox.codegraph.prior_matrix`), seeded by the
    `SEEDS` best BM25 file matches with weights proportional to their scores; files it
    does not reach follow in BM25 order.
- **Golds.** `edit`: the files the agent edited (not created); `patch`: the files of the
  task's gold patch, where the source gives one (a `*.jsonl` of SWE-bench rows with
  `instance_id` and `patch` beside the trajectories, as in claude-code-swebench-lite).
  Either only where the file exists in the snapshot; a task with no such file is not
  eligible, and the eligible fraction is reported.
- **The conditional probe.** P1-edit as the replay scores it: the files the agent edited
  that memory has already seen, ranked among the files memory has seen, by brainbox with
  the index and by memory alone (`conditional`): the index must not cost the probe that
  history already wins.
- **Metrics.** Acc@1, Acc@5 (a gold file in the first 1 / 5), MRR@10 (reciprocal rank of
  the first gold file within 10, else 0) and Recall@10 (share of gold files in the first
  10), with the paired bootstrap of brainbox minus each other method over tasks
  (resamples and seed as the replay's).
"""

from __future__ import annotations

import csv
import json
import re
import tarfile
import tempfile
from pathlib import Path

import numpy as np

METHODS = ("brainbox", "memory", "index", "bm25-files", "repo-map")
METRICS = ("Acc@1", "Acc@5", "MRR@10", "Recall@10")
GOLDS = ("edit", "patch")
DEPTH = 50  # chunks the snippet channel reads (brainbox.codesearch)
SEEDS = 10  # BM25 file matches that seed the repository map
DAMPING = 0.85
ITERATIONS = 50
_DIFF = re.compile(r"^diff --git a/(\S+) b/", re.MULTILINE)


def snapshots(folder) -> dict[str, dict]:
    """{repo "owner/name": {"path": archive or folder, "pr": snapshot PR or None}} of a
    snapshot folder (module docstring); raises BrainboxError when it holds none."""
    from brainbox import BrainboxError

    folder = Path(folder)
    if not folder.is_dir():
        raise BrainboxError(f"--repos {folder}: not a folder of source snapshots")
    prs = {}
    manifest = folder / "MANIFEST.tsv"
    if manifest.is_file():
        with manifest.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                try:
                    prs[row["repo"]] = int(row["pr_number"])
                except (KeyError, TypeError, ValueError):
                    continue
    out = {}
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and "__" in p.name):
        found = sorted(sub.glob("*.tar.gz")) or sorted(p for p in sub.iterdir() if p.is_dir())
        if found:
            repo = sub.name.replace("__", "/", 1)
            out[repo] = {"path": found[0], "pr": prs.get(repo)}
    if not out:
        raise BrainboxError(f"--repos {folder}: no <owner>__<name>/<commit>.tar.gz snapshot "
                            "in it (see ../shared/data/repos/README.md for the layout)")
    return out


def gold_patches(folders) -> dict[str, set[str]]:
    """{instance id: files of its gold patch} from the `*.jsonl` files of SWE-bench rows
    (`instance_id`, `patch`) directly in `folders`; other files and rows are ignored."""
    out: dict[str, set[str]] = {}
    for folder in folders:
        folder = Path(folder)
        for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else ():
            with path.open(encoding="utf-8") as fh:
                for line in fh:
                    try:
                        row = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(row, dict) and isinstance(row.get("patch"), str) \
                            and isinstance(row.get("instance_id"), str):
                        out[row["instance_id"]] = set(_DIFF.findall(row["patch"]))
    return out


def metrics(ranking: list, gold: set) -> list[float]:
    """Acc@1, Acc@5, MRR@10, Recall@10 of `ranking` (paths, best first) against `gold`."""
    top = ranking[:10]
    first = next((i for i, p in enumerate(top) if p in gold), -1)
    return [float(bool(top) and top[0] in gold), float(any(p in gold for p in top[:5])),
            0.0 if first < 0 else 1.0 / (first + 1), len(gold & set(top)) / len(gold)]


def pagerank(P, seeds, weights, *, damping: float = DAMPING,
             iterations: int = ITERATIONS) -> np.ndarray:
    """Personalized PageRank over the weighted directed graph `P` (scipy CSR, n x n):
    a walker follows an out-edge with probability `damping` (in proportion to the edges'
    weights) and else jumps to a seed (`seeds` node ids, in proportion to `weights`); a
    node without out-edges jumps to the seeds. Power iteration from the seed vector."""
    n = P.shape[0]
    pers = np.zeros(n)
    np.add.at(pers, np.asarray(seeds, np.int64), np.asarray(weights, np.float64))
    total = pers.sum()
    if n == 0 or total <= 0:
        return np.zeros(n)
    pers /= total
    out = np.asarray(P.sum(axis=1)).ravel().astype(np.float64)
    inv = np.divide(1.0, out, out=np.zeros(n), where=out > 0)
    PT = P.T.tocsr().astype(np.float64)
    dangling = out <= 0
    r = pers.copy()
    for _ in range(iterations):
        r = damping * (PT @ (r * inv) + r[dangling].sum() * pers) + (1.0 - damping) * pers
    return r


def repo_map(P, bm25_order, bm25_scores, limit: int = 10, seeds: int = SEEDS) -> list[int]:
    """The repository map's ranking (module docstring) as file ids, best first."""
    if len(bm25_order) == 0:
        return []
    s = pagerank(P, bm25_order[:seeds], bm25_scores[:seeds])
    reached = np.flatnonzero(s > 0)
    best = reached[np.lexsort((reached, -s[reached]))][:limit].tolist()
    seen = set(best)
    for d in bm25_order.tolist():
        if len(best) >= limit:
            break
        if d not in seen:
            best.append(d)
            seen.add(d)
    return best


def _extract(snapshot: Path, into: Path) -> Path:
    if snapshot.is_dir():
        return snapshot
    with tarfile.open(snapshot) as tf:
        tf.extractall(into, filter="data")
    return into


def series(repo: str, tasks, snapshot: Path, golds: dict, *, depth: int = DEPTH,
           snippet_weights=(), tmp=None) -> list[dict]:
    """One series' rows: per task at or after the snapshot (the caller filters), its
    `gold` files per kind and each method's metrics (`rank[kind][method]`); with
    `snippet_weights`, also brainbox at each of those snippet weights (`by_weight`)."""
    from brainbox import codegraph, codeindex, recall
    from brainbox.codesearch import snippet_files
    from brainbox.eval.baselines import Bm25
    from brainbox.eval.replay import fold_task, task_frame
    from brainbox.recall import Index, Params, code_ranking, rank
    from brainbox.state import State
    from brainbox.store import connect
    from brainbox.text import path_tokens, tokens

    with tempfile.TemporaryDirectory(dir=tmp) as work:
        snap = _extract(Path(snapshot), Path(work) / "src")
        conn = connect(Path(work) / "index.db")
        try:
            codeindex.build(conn, str(snap))
            names = sorted(str(p.relative_to(snap)) for p in snap.rglob("*") if p.is_file())
            files = set(names)
            P = codegraph.prior_matrix(conn, str(snap), names)
            bm25 = Bm25()
            for d, name in enumerate(names):
                text = (snap / name).read_text("utf-8", "replace")
                bm25.add(d, path_tokens(name) + tokens(text, limit=len(text)))
            state = State()
            index = Index(state)
            params = Params(min_probability=0.0)
            default_w = recall.SNIPPET_PROMPT
            clock = 1_700_000_000.0
            rows = []
            for task in tasks:
                events, root, session = task_frame(task)
                gold = {"edit": (set(task.gold_edit) - set(task.created)) & files}
                if task.id in golds:
                    gold["patch"] = golds[task.id] & files
                known = {state.res_key[i] for i in state.proj_files.get(root, ())}
                cond = (set(task.gold_edit) - set(task.created)) & known
                if any(gold.values()) or cond:
                    q = task.description or ""
                    best = {p: sc for p, (sc, _) in
                            snippet_files(conn, str(snap), q, depth).items()}
                    r = rank(index, q, project=root, limit=10, now=clock, params=params)
                    mem = ([] if r is None else
                           [state.res_key[c] for c in r.cand[r.order[:10]]])

                    def with_code(q=q, best=best, root=root, clock=clock, limit=10):
                        return [row[2] for row in code_ranking(
                            index, q, best, project=root, limit=limit, now=clock,
                            params=params)[0]]

                    by_w = []
                    try:
                        for w in snippet_weights:
                            recall.SNIPPET_PROMPT = w  # the prompt weight (recall.plan)
                            by_w.append(with_code())
                    finally:
                        recall.SNIPPET_PROMPT = default_w
                    bm25.set_query(list(dict.fromkeys(tokens(q))), len(names))
                    order, scores = bm25.static, bm25.static_score
                    ranked = {"brainbox": with_code(), "memory": mem, "index": list(best)[:10],
                              "bm25-files": [names[d] for d in order[:10].tolist()],
                              "repo-map": [names[d] for d in repo_map(P, order, scores)]}
                    conditional = {}
                    if cond:  # P1-edit as the replay's probe: files memory has seen
                        seen = [p for p in with_code(limit=0) if p in known][:10]
                        conditional = {"brainbox": metrics(seen, cond),
                                       "memory": metrics(mem, cond)}
                    rows.append({
                        "id": task.id, "repo": repo, "order": task.order,
                        "gold": {k: sorted(v) for k, v in gold.items()},
                        "rank": {k: {m: metrics(x, g) for m, x in ranked.items()}
                                 for k, g in gold.items() if g},
                        "by_weight": {k: [metrics(x, g) for x in by_w]
                                      for k, g in gold.items() if g},
                        "conditional": conditional})
                clock = fold_task(state, events, session, root, task.description or "", clock)
        finally:
            conn.close()
    return rows


def summarize(rows: list[dict], kind: str, methods=METHODS, *, seed: int = 42,
              resamples: int = 1000) -> dict:
    """Means per method and the paired bootstrap of `methods[0]` minus each other, over
    the rows eligible for gold `kind` (`conditional`: the conditional P1-edit, brainbox
    and memory over the files memory has seen)."""
    if kind == "conditional":
        rows = [r for r in rows if r.get("conditional")]
        methods = ("brainbox", "memory")
        table = [[r["conditional"][m] for m in methods] for r in rows]
    else:
        rows = [r for r in rows if kind in r["rank"]]
        table = [[r["rank"][kind][m] for m in methods] for r in rows]
    out = {"scored": len(rows), "mean": {}, "diff": {}}
    if not rows:
        return out
    arr = np.asarray(table)
    for mi, m in enumerate(methods):
        out["mean"][m] = {k: round(float(arr[:, mi, j].mean()), 4)
                          for j, k in enumerate(METRICS)}
    idx = (np.random.default_rng(seed).integers(0, len(arr), size=(resamples, len(arr)))
           if resamples else None)
    for mi, m in enumerate(methods[1:], start=1):
        d = arr[:, 0, :] - arr[:, mi, :]
        boot = d[idx].mean(axis=1) if idx is not None else None
        out["diff"][m] = {k: {"mean": round(float(d[:, j].mean()), 4),
                              "ci": (None if boot is None else
                                     [round(float(x), 4)
                                      for x in np.percentile(boot[:, j], [2.5, 97.5])])}
                          for j, k in enumerate(METRICS)}
    return out


def run(jobs, folder, *, sources=(), seed: int = 42, resamples: int = 1000,
        depth: int = DEPTH, log=None) -> dict:
    """Localization over `jobs` [(source label, repo, tasks in PR order)] against the
    snapshots in `folder`; `sources`: the source folders, where gold patches are looked
    for. The result document's `localization` (module docstring)."""
    log = log or (lambda m: None)
    snaps = snapshots(folder)
    golds = gold_patches(sources)
    rows, skipped = [], {"no_snapshot": 0, "no_manifest_pr": 0, "before_snapshot": 0}
    for label, repo, tasks in jobs:
        snap = snaps.get(repo)
        if snap is None:
            skipped["no_snapshot"] += len(tasks)
            continue
        if snap["pr"] is None:
            skipped["no_manifest_pr"] += len(tasks)
            continue
        late = [t for t in tasks if t.order >= snap["pr"]]
        skipped["before_snapshot"] += len(tasks) - len(late)
        if not late:
            continue
        log(f"localization: {label} {repo}: {len(late)} tasks over {snap['path'].name}")
        for r in series(repo, late, snap["path"], golds, depth=depth):
            r["source"] = label
            rows.append(r)
    considered = sum(len(t) for _, r, t in jobs if r in snaps and snaps[r]["pr"] is not None)
    return {"folder": str(folder), "methods": list(METHODS), "metrics": list(METRICS),
            "tasks": considered - skipped["before_snapshot"], "skipped": skipped,
            "golds": {k: summarize(rows, k, seed=seed, resamples=resamples) for k in GOLDS},
            "conditional": summarize(rows, "conditional", seed=seed, resamples=resamples),
            "rows": rows}
