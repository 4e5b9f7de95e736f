"""Procedures in the offline replay (issue 18 Deliver 5, second bullet; DESIGN §4.9,
``brainbox.procedures``): does a mined error-fix procedure name the files the agent then
edits?

For each repository of a source, its tasks in PR order (``Task.order``, then id) are
folded one after the other into a fresh miner: ``brainbox.advice.Advice`` finds the fixes
and ``brainbox.procedures.Procedures`` keeps them, event by event exactly as the state's
fold does (``State.encode``), keyed by the repository (the tasks of one repository share a
memory, whatever root their checkout had). The quotations the PostToolUse(Failure) hook
would log are folded too (``Procedures.after_failure`` asked before each failed call,
``Procedures.quoted`` after it), so the outcome counts, and hence retirement, are the
product's.

A task **hits** when one of its tool events fails with a fingerprint whose procedure was
live when the task began (mined from the tasks before it: none learnt within the task
counts) and is still quoted at that moment. Only a task's first hit is scored: the
procedure's files ``P`` (as quoted then) against ``A``, the files the agent edits after
that event in the task (successful edits, ``action`` "edit" without an error):
precision ``|P ∩ A| / |P|``, recall ``|P ∩ A| / |A|`` (a task that edits nothing after the
hit has precision 0 and no recall). The **frequency baseline** names, at the same moment,
the ``|P|`` files the repository's earlier tasks edited most often (count of edit events,
ties by the file first edited), scored the same way.

The figures: tasks and hits (the hit rate over the tasks that had any earlier task; the
fingerprints hit most), the mean precision and recall of the procedures and of the baseline, and the paired bootstrap
(``resamples`` resamples over the hit tasks, ``seed``) of procedure minus baseline, per
source and pooled. Standard library and numpy; the trajectories are loaded by
``brainbox.eval.sources``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from brainbox.advice import Advice
from brainbox.procedures import Procedures


def _edited(ev: dict) -> list[str]:
    if ev.get("kind") != "tool" or ev.get("action") != "edit" or ev.get("error_fp"):
        return []
    return [f for f in ev.get("files") or () if f]


def _pr(predicted: list[str], actual: set[str]) -> tuple[float, float | None]:
    hit = len(set(predicted) & actual)
    precision = hit / len(predicted) if predicted else 0.0
    return precision, (hit / len(actual) if actual else None)


def series_rows(tasks, repo: str) -> list[dict]:
    """One row per task of one repository (``tasks`` in PR order, events normalised:
    ``(task id, events)``): whether it hit, and if so the procedure's and the baseline's
    files against what the agent then edited (module docstring)."""
    advice, procs = Advice(), Procedures()
    edits: Counter = Counter()
    first: dict[str, int] = {}
    rows = []
    for n, (tid, events) in enumerate(tasks):
        live = {fp for fp, p in procs.fixes.get(repo, {}).items() if not p[6]}
        row: dict = {"id": tid, "earlier": n, "hit": False}
        for i, ev in enumerate(events):
            if ev.get("kind") != "tool" or not ev.get("tool"):
                continue
            session, fp = ev["session"], ev.get("error_fp")
            shown = procs.after_failure(repo, fp, session, ev["tool"]) if fp else None
            if shown is not None and fp in live and not row["hit"]:
                after = {f for e in events[i + 1:] for f in _edited(e)}
                files = list(shown["files"])
                ranked = sorted(edits, key=lambda f: (-edits[f], first[f]))
                base = ranked[:len(files)]
                p, r = _pr(files, after)
                bp, br = _pr(base, after)
                row.update(hit=True, fingerprint=fp, files=files, baseline=base,
                           edited_after=sorted(after), precision=p, recall=r,
                           base_precision=bp, base_recall=br)
            files = ev.get("files") or ()
            fix = advice.observe(session, repo, ev["tool"], ev.get("action"), files, fp,
                                 ev.get("exit_code"))
            procs.observe(session, repo, ev["tool"], ev.get("action"), files, fp,
                          ev.get("exit_code"), fix)
            if shown is not None:
                procs.quoted(session, repo, fp)
        for ev in events:
            for f in _edited(ev):
                edits[f] += 1
                first.setdefault(f, len(first))
        rows.append(row)
    return rows


def _boot(d: np.ndarray, idx: np.ndarray) -> list[float]:
    if not d.size:
        return [float("nan"), float("nan")]
    return [float(x) for x in np.percentile(d[idx].mean(axis=1), [2.5, 97.5])]


def summary(rows: list[dict], seed: int = 42, resamples: int = 1000) -> dict:
    """The figures of some tasks' rows (module docstring); means are None without hits."""
    hits = [r for r in rows if r["hit"]]
    eligible = sum(1 for r in rows if r["earlier"] > 0)
    out: dict = {"tasks": len(rows), "tasks_with_history": eligible, "hits": len(hits),
                 "hit_rate": len(hits) / eligible if eligible else None,
                 "hits_with_edits_after": sum(1 for r in hits if r["recall"] is not None),
                 "fingerprints": dict(Counter(r["fingerprint"] for r in hits).most_common(5))}
    rng = np.random.default_rng(seed)
    for metric in ("precision", "recall"):
        pairs = [(r[metric], r["base_" + metric]) for r in hits if r[metric] is not None]
        ours = np.asarray([a for a, _ in pairs], np.float64)
        base = np.asarray([b for _, b in pairs], np.float64)
        idx = rng.integers(0, len(pairs), size=(resamples, len(pairs))) if pairs else None
        d = ours - base
        out[metric] = {
            "procedure": float(ours.mean()) if pairs else None,
            "baseline": float(base.mean()) if pairs else None,
            "n": len(pairs),
            "diff": float(d.mean()) if pairs else None,
            "ci": _boot(d, idx) if pairs else None,
            "procedure_ci": _boot(ours, idx) if pairs else None,
            "baseline_ci": _boot(base, idx) if pairs else None}
    return out


def evaluate(sources, fmt: str = "auto", *, seed: int = 42, resamples: int = 1000) -> dict:
    """The procedures' replay over trajectory ``sources`` (paths, expanded as
    ``brainbox replay`` does): {"sources": {label: summary}, "pooled": summary, "rows":
    {label: rows}}."""
    from brainbox.eval.replay import normalized
    from brainbox.eval.sources import expand_sources, load_source

    by_source: dict[str, list[dict]] = {}
    for label, path in expand_sources(sources, fmt):
        tasks, _ = load_source(path, fmt)
        rows: list[dict] = []
        for repo in sorted({t.repo for t in tasks}):
            seen: set[str] = set()
            series = []
            for t in sorted((t for t in tasks if t.repo == repo), key=lambda t: (t.order, t.id)):
                if t.id in seen:  # the first attempt at a task id (eval.sources.select)
                    continue
                seen.add(t.id)
                series.append((t.id, normalized(t, shown=False)[0]))
            rows += [dict(r, repo=repo) for r in series_rows(series, repo)]
        by_source[label] = rows
    pooled = [r for rows in by_source.values() for r in rows]
    return {"pooled": summary(pooled, seed, resamples),
            "sources": {k: summary(v, seed, resamples) for k, v in by_source.items()},
            "rows": by_source}


def _fmt(x, spec: str = ".3f") -> str:
    return "n/a" if x is None else format(x, spec)


def text(result: dict) -> str:
    """The report, plainly: one block per source and pooled."""
    lines = []
    for name, s in [("pooled", result["pooled"]), *result["sources"].items()]:
        lines.append(f"{name}: {s['tasks']} tasks, {s['tasks_with_history']} with an earlier "
                     f"task; {s['hits']} hit an error with a live procedure (hit rate "
                     f"{_fmt(s['hit_rate'])}), {s['hits_with_edits_after']} edited files "
                     "after it")
        if s["fingerprints"]:
            lines.append("   most hit: " + ", ".join(f"{fp} {n}"
                                                     for fp, n in s["fingerprints"].items()))
        for metric in ("precision", "recall"):
            m = s[metric]
            if not m["n"]:
                lines.append(f"   {metric}: no hits to score")
                continue
            lo, hi = m["ci"]
            lines.append(f"   {metric} (n={m['n']}): procedure {_fmt(m['procedure'])}, "
                         f"frequency baseline {_fmt(m['baseline'])}; procedure minus "
                         f"baseline {m['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}]")
    return "\n".join(lines)
