"""The session-end reward of what a prompt hook suggested (DESIGN §4.8).

At Stop / SessionEnd the hook (or the daemon, for a handed-over one) takes the session's
pending suggestions (one batch per prompt that injected a list: `after_id`, the last event
id recorded before it, `at`, `project`, `session`, the injected `chars`, and the `items`
with their `path`, `rank`, `via` (the file whose edge produced it), `confidence` and
`channels` (each channel's rank: why it was shown)), scores them against the tool events
that followed, and appends ONE `feedback` event per project holding `score`'s items and
reward. The items keep why they were shown and when (`at`, the first showing; `shown`,
how many prompts showed it), which `brainbox log` reads (`brainbox.corrections`).

The reward is the design's `R = sum over used items of v/r - 2 * T/1000` per batch, with
`v` 1 for a suggestion later read and 1.5 for one edited, `r` its rank and `T` the
injected characters / 4; silence earns 0. Standard library only: the hook process may
score in-process.
"""

from __future__ import annotations

READ_VALUE = 1.0
EDIT_VALUE = 1.5
TOKEN_COST = 2.0  # per 1000 injected tokens (characters / 4)


def _touched(b: dict, events: list[dict]) -> dict[str, bool]:
    """{path: edited?} of the files the project's tool events touched after batch `b`."""
    after, since = int(b.get("after_id") or 0), float(b.get("at") or 0.0)
    touched: dict[str, bool] = {}
    for e in events:
        if e.get("kind") != "tool" or e.get("project") != b.get("project"):
            continue
        if (e["id"] <= after) if after else (float(e.get("at") or 0) < since):
            continue
        files = e.get("files") or []
        acts = (e.get("meta") or {}).get("file_actions")
        if not (isinstance(acts, list) and len(acts) == len(files)):
            acts = [e.get("action")] * len(files)
        for f, a in zip(files, acts):
            touched[f] = touched.get(f, False) or a == "edit"
    return touched


def decisions(batches: list[dict], events: list[dict]) -> list[dict]:
    """The injection policy's scored decisions (`brainbox.injection`): for each batch
    that carries one (`ctx`, `arm`, recall's whole list `offered` and the block's
    characters `chars_by_k`), every arm's reward from what the session then touched;
    with the offered items' confidences (`offered_confidence`), those and which of the
    offered items the session used (`Policy.corrected` learns from them)."""
    from brainbox.injection import rewards

    out = []
    for b in batches:
        offered, chars = b.get("offered"), b.get("chars_by_k")
        if not isinstance(offered, list) or not isinstance(chars, list) or not b.get("ctx"):
            continue
        if len(chars) != len(offered) + 1:
            continue
        touched = _touched(b, events)
        used = [(p in touched, touched.get(p, False)) for p in offered]
        conf = b.get("offered_confidence")
        d = {"ctx": str(b["ctx"]), "arm": b.get("arm"), "model": b.get("model"),
             "rewards": rewards(used, [int(c) for c in chars], len(offered))}
        if isinstance(conf, list) and len(conf) == len(offered):
            d.update(confidences=[float(c or 0.0) for c in conf], used=[u for u, _ in used])
        out.append(d)
    return out


def score(batches: list[dict], events: list[dict]) -> tuple[list[dict], float]:
    """Which suggestions the session used after they were made, and the reward
    R = sum over used items of v/r - 2 * T/1000 per batch (v 1 read, 1.5 edited; r the
    rank; T the injected characters / 4). Items are merged by path over batches: used
    or edited in any, the best rank; the first showing's via, confidence, channels and
    time (`at`), and how many batches showed it (`shown`)."""
    merged: dict[str, dict] = {}
    reward = 0.0
    for b in batches:
        touched = _touched(b, events)
        for it in b.get("items") or ():
            path, rank = it.get("path"), max(1, int(it.get("rank") or 1))
            used, edited = path in touched, touched.get(path, False)
            if used:
                reward += (EDIT_VALUE if edited else READ_VALUE) / rank
            m = merged.get(path)
            if m is None:
                m = merged[path] = {"path": path, "used": False, "via": it.get("via"),
                                    "rank": rank, "edited": False,
                                    "confidence": it.get("confidence"),
                                    "channels": dict(it.get("channels") or {}),
                                    "at": float(b.get("at") or 0.0), "shown": 0}
            m["used"] = m["used"] or used
            m["edited"] = m["edited"] or edited
            m["rank"] = min(m["rank"], rank)
            m["via"] = m["via"] or it.get("via")
            m["shown"] += 1
        reward -= TOKEN_COST * (float(b.get("chars") or 0) / 4.0) / 1000.0
    return list(merged.values()), round(reward, 6)
