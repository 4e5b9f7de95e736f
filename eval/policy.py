"""The injection policy evaluated offline (issue 18, Deliver 5; ``brainbox replay --policy``).

The trajectories are fixed, so the reward of every arm at every prompt can be computed
from what the agent then read and edited. Each repository's tasks replay in PR order on a
fresh memory (``eval.replay.fold_task``, as ``eval.localization`` does). Before each task,
its description is the prompt: recall's list as the prompt hook makes it (recall with its
floor, the first 5 files), the block's characters for each number of items (the
caller's ``block``: the CLI passes the prompt hook's formatter,
``cli.service.format_suggestions``, which eval may not import), and what the task then did with each file (its gold reads and edits). Every arm's reward is
computed; the policy decides, project by project, from the decisions scored before, as
the hooks would (``Policy.update`` after each task, every arm revealed).

Reported, per source and pooled (:func:`evaluate`):

- the policy's mean reward per prompt and every fixed arm's, the best fixed arm in
  hindsight, the policy's share of it, and the paired bootstrap of the policy minus each
  arm (1,000 resamples over tasks, seed 42);
- the share of prompts left SILENT (and of those recall had nothing for), the arms chosen;
- regret over time: the cumulative reward of the best fixed arm in hindsight minus the
  policy's, after each prompt (pooled: prompts in each series' order, series one after
  the other), drawn by :func:`figure`.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from brainbox import injection as inj


def series_prompts(tasks, block) -> list[dict]:
    """One repository's prompts, in order, as recall offers them (the policy does not
    change what recall offers, so every policy setting can be scored on them):
    {"id", "root", "query", "available", "confidences", "chars" (the block's length for
    0..n items), "used" ((read or edited, edited) per item), "arms" (every arm's
    reward)}. `block(items)`: the prompt block's text for `items`."""
    from brainbox.eval.replay import fold_task, task_frame
    from brainbox.memory import evidence
    from brainbox.recall import Index, recall
    from brainbox.state import State

    state = State()
    index = Index(state)
    clock = 1_700_000_000.0
    out = []
    for task in tasks:
        events, root, session = task_frame(task)
        q = task.description or ""
        hits = recall(index, q, project=root, limit=5, now=clock) if state.n_res else []
        items = [{"path": r.path, "why": evidence(r), "confidence": r.confidence}
                 for r in hits[:5]]
        touched = set(task.gold_read) | set(task.gold_edit)
        used = [(it["path"] in touched, it["path"] in task.gold_edit) for it in items]
        chars = [0] + [len(block(items[:k])) for k in range(1, len(items) + 1)]
        out.append({"id": task.id, "root": root, "query": q, "available": len(items),
                    "confidences": [it["confidence"] for it in items], "chars": chars,
                    "used": used, "arms": (inj.rewards(used, chars, len(items)) if items
                                           else [0.0] * len(inj.ARMS))})
        clock = fold_task(state, events, session, root, task.description or "", clock)
    return out


def decide(prompts: list[dict], policy: inj.Policy | None = None) -> list[dict]:
    """The policy's decisions over one repository's `prompts` (`series_prompts`), each
    scored before the next, as the hooks would (`Policy.update` after each task, every
    arm revealed): {"id", "available", "arms", "policy" (the chosen arm's reward),
    "arm", "ctx"}."""
    policy = inj.Policy() if policy is None else policy
    rows = []
    for p in prompts:
        row = {"id": p["id"], "available": p["available"], "arms": p["arms"]}
        if p["available"]:
            root, confs, chars, full = p["root"], p["confidences"], p["chars"], p["arms"]
            ctx = inj.context(confs[0], p["query"], in_session=False,
                              decisions=policy.decisions.get(root, 0), prompt_index=0)
            exp = inj.expected(policy.corrected(root, confs), chars)
            model = inj.model_arm(exp, p["available"])
            a = policy.choose(root, ctx, p["available"], exp)
            policy.update(root, ctx, full, model)  # every arm observed (brainbox.injection)
            policy.observe(root, confs, [u for u, _ in p["used"]])
            row.update(policy=full[a], arm=inj.NAMES[a], ctx=ctx)
        else:
            row.update(policy=0.0, arm="none", ctx=None)
        rows.append(row)
    return rows


def series_rows(tasks, block) -> list[dict]:
    """One repository's prompts, in order, with the policy's decisions (`decide`)."""
    return decide(series_prompts(tasks, block))


def summary(rows: list[dict], seed: int = 42, resamples: int = 1000) -> dict:
    """Means, the paired bootstrap of the policy minus each arm, shares and regret."""
    if not rows:
        return {"prompts": 0}
    pol = np.asarray([r["policy"] for r in rows], np.float64)
    arms = np.asarray([r["arms"] for r in rows], np.float64)
    idx = np.random.default_rng(seed).integers(0, len(rows), size=(resamples, len(rows)))
    means = {n: float(arms[:, a].mean()) for a, n in enumerate(inj.NAMES)}
    best = max(means, key=means.get)
    regret = np.cumsum(arms[:, inj.NAMES.index(best)] - pol)
    out = {"prompts": len(rows), "policy": float(pol.mean()), "arms": means, "best_arm": best,
           "policy_share_of_best": float(pol.mean() / means[best]) if means[best] else None,
           "diff": {}, "chosen": dict(Counter(r["arm"] for r in rows)),
           "silent_share": float(np.mean([r["arm"] in ("SILENT", "none") for r in rows])),
           "nothing_to_show_share": float(np.mean([r["available"] == 0 for r in rows])),
           "regret": [round(float(x), 6) for x in regret]}
    for a, n in enumerate(inj.NAMES):
        d = pol - arms[:, a]
        boot = d[idx].mean(axis=1)
        out["diff"][n] = [float(d.mean()), [float(x) for x in np.percentile(boot, [2.5, 97.5])]]
    return out


def evaluate(sources, block, *, fmt: str = "auto", seed: int = 42, log=None) -> dict:
    """{"pooled": summary, "sources": {label: summary}} over the trajectory `sources`;
    `block(items)` the prompt block's text (`series_rows`)."""
    from brainbox.eval.sources import expand_sources, load_source

    by_source = {}
    for label, path in expand_sources(list(sources)):
        tasks, _ = load_source(path, fmt)
        rows = []
        for repo in sorted({t.repo for t in tasks}):
            rows += series_rows(sorted((t for t in tasks if t.repo == repo),
                                       key=lambda t: (t.order, t.id)), block)
        by_source[label] = rows
        if log is not None:
            log(f"policy: {label}: {len(rows)} prompts")
    pooled = [r for rows in by_source.values() for r in rows]
    return {"pooled": summary(pooled, seed), "sources": {k: summary(v, seed)
                                                         for k, v in by_source.items()}}


def markdown(result: dict) -> str:
    lines = ["## Injection policy (offline, every arm's reward from the fixed trajectories)",
             "", "| Cohort | Prompts | Policy | " + " | ".join(inj.NAMES)
             + " | Best | Policy / best | Silent | Nothing to show |",
             "|---" * (7 + len(inj.NAMES)) + "|"]
    cohorts = [("pooled", result["pooled"]), *result["sources"].items()]
    for name, s in cohorts:
        if not s.get("prompts"):
            continue
        share = s["policy_share_of_best"]
        lines.append(f"| {name} | {s['prompts']} | {s['policy']:.3f} | "
                     + " | ".join(f"{s['arms'][n]:.3f}" for n in inj.NAMES)
                     + f" | {s['best_arm']} | "
                     + ("–" if share is None else f"{100 * share:.1f}%")
                     + f" | {100 * s['silent_share']:.1f}% | "
                     + f"{100 * s['nothing_to_show_share']:.1f}% |")
    lines += ["", "Policy minus each fixed arm (paired bootstrap over tasks, 95%):", "",
              "| Cohort | " + " | ".join(inj.NAMES) + " |", "|---" * (1 + len(inj.NAMES)) + "|"]
    for name, s in cohorts:
        if s.get("prompts"):
            lines.append(f"| {name} | " + " | ".join(
                f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]" for d, (lo, hi) in
                (s["diff"][n] for n in inj.NAMES)) + " |")
    return "\n".join(lines) + "\n"


def figure(result: dict, path: str):
    """Regret over time (the best fixed arm in hindsight minus the policy, cumulative),
    one line per cohort; the paths written, or False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, s in [("pooled", result["pooled"]), *result["sources"].items()]:
        if s.get("prompts"):
            ax.plot(range(1, s["prompts"] + 1), s["regret"],
                    label=f"{name} (best: {s['best_arm']})")
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xlabel("prompts")
    ax.set_ylabel("cumulative regret (reward)")
    ax.set_title("Injection policy: regret against the best fixed arm in hindsight")
    ax.legend(fontsize=7)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=150)
    finally:
        plt.close(fig)
    return [path]
