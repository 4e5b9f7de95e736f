"""The injection policy (issue 18, DESIGN §4.8): how much of recall's list to show before
a prompt, SILENT, TOP1, TOP3 or TOP5, learned per project from the session-end reward.

- **Context** (`context`): the confidence band of the top result (`low` < 0.2 <= `mid` <
  0.5 <= `high`), the kind of query (`session`: the session already touched a file of the
  project or the prompt points at current work; `long`: pasted text over `LONG` characters;
  `question`; else `task`), how familiar the project is (`new` under `FAMILIAR` scored
  decisions, else `known`) and how far the session has gone (`first` until the session
  has touched a file of the project, then `later`).
- **Choice** (`Policy.choose`): the context's cell, or, while it holds fewer than `WARMUP`
  observations, the project's pooled cell (every context), or while that too is young,
  TOP5 (warm-up: the largest arm reveals every arm's reward, below). Then
  `argmax R̄_a + 0.15 √(2 ln N / N_a)` (ties: the smaller arm), N the cell's observations.
- **Reward** (`rewards`): the design's `R = Σ_{i used} v_i / r_i − 2 T/1000` of the shown
  list, `v` 1 read and 1.5 edited, `T` the injected characters / 4; silence earns 0.
  Every arm's reward is observed, whatever was shown: the decision keeps recall's whole
  list (up to 5) and the session's later reads and edits say which of them it used, so
  each scored decision updates every arm (`Policy.update`). Without that, a policy that
  chose SILENT learned nothing more about the other arms and stayed silent (measured:
  with only the shown prefix revealed, the policy left 72 of claude-code-swebench-lite's
  163 prompts silent and reached 22.5% of the best arm's reward there). Online this is
  an approximation (a shown file may be used because it was shown); in the replay, where
  the agent's actions are fixed, it is exact.
- **Events.** Decisions are a function of the policy's state; the state is a function of
  the scored decisions, which the session-end `feedback` event carries (`batches`: each
  with its context, its arm and the rewards it revealed), so `rebuild()` reproduces it.

Standard library only: the prompt hook may decide in-process.
"""

from __future__ import annotations

import math
import re

ARMS = (0, 1, 3, 5)  # items shown: SILENT, TOP1, TOP3, TOP5
NAMES = ("SILENT", "TOP1", "TOP3", "TOP5")
EXPLORE = 0.15
WARMUP = 5  # observations before a cell decides by itself
FAMILIAR = 10  # scored decisions of the project before it is "known"
LONG = 1500  # characters of a prompt that is pasted text
READ_VALUE, EDIT_VALUE, TOKEN_COST = 1.0, 1.5, 2.0  # as brainbox.feedback
POOLED = "*"
_DEICTIC = re.compile(r"\b(this|that|these|again|here|above|it)\b", re.IGNORECASE)
_QUESTION = re.compile(r"^\s*(what|why|how|where|when|which|who|is|are|does|do|can)\b",
                       re.IGNORECASE)


def band(confidence: float) -> str:
    return "low" if confidence < 0.2 else "mid" if confidence < 0.5 else "high"


def query_kind(query: str, in_session: bool) -> str:
    q = query or ""
    if in_session or (len(q) < 200 and _DEICTIC.search(q)):
        return "session"
    if len(q) > LONG:
        return "long"
    if q.rstrip().endswith("?") or _QUESTION.match(q):
        return "question"
    return "task"


def context(top_confidence: float, query: str, *, in_session: bool, decisions: int,
            prompt_index: int) -> str:
    """The context key of one decision (module docstring)."""
    return "|".join((band(top_confidence), query_kind(query, in_session),
                     "new" if decisions < FAMILIAR else "known",
                     "first" if prompt_index == 0 else "later"))


def rewards(used: list[tuple[bool, bool]], chars: list[int], available: int) -> list:
    """The reward of each arm (`ARMS`) that the shown items reveal. `used[i]`: (read or
    edited, edited) of the shown item at rank i + 1; `chars[k]` the block's characters
    when it shows k items (k = 0..len(used)); `available`: the items recall offered. An
    arm shows min(k, available) items and is revealed when that is at most len(used);
    the others are None."""
    out = []
    for k in ARMS:
        kk = min(k, available)
        if kk > len(used):
            out.append(None)
            continue
        gain = sum((EDIT_VALUE if e else READ_VALUE) / (i + 1)
                   for i, (u, e) in enumerate(used[:kk]) if u)
        out.append(round(gain - TOKEN_COST * (chars[kk] / 4.0) / 1000.0, 6) if kk else 0.0)
    return out


class Policy:
    """Per project and context: for each arm, observations and summed reward."""

    def __init__(self):
        self.cells: dict[str, dict[str, list[list[float]]]] = {}  # project -> ctx -> arms
        self.decisions: dict[str, int] = {}  # project -> scored decisions

    def _cell(self, project: str, ctx: str) -> list[list[float]]:
        return self.cells.setdefault(project, {}).setdefault(
            ctx, [[0, 0.0] for _ in ARMS])

    def choose(self, project: str, ctx: str, available: int) -> int:
        """The arm index for a prompt whose recall offers `available` items (> 0)."""
        cells = self.cells.get(project, {})
        cell = cells.get(ctx)
        if cell is None or sum(n for n, _ in cell) < WARMUP * len(ARMS):
            cell = cells.get(POOLED)
        if cell is None or cell[-1][0] < WARMUP:
            return len(ARMS) - 1  # warm-up: TOP5 reveals every arm
        total = sum(n for n, _ in cell)
        best, best_u = 0, -math.inf
        for a, (n, s) in enumerate(cell):
            if ARMS[a] > available and a > 0 and ARMS[a - 1] >= available:
                continue  # the same list as a smaller arm
            u = math.inf if n == 0 else s / n + EXPLORE * math.sqrt(2 * math.log(total) / n)
            if u > best_u:
                best, best_u = a, u
        return best

    def update(self, project: str, ctx: str, revealed: list) -> None:
        """One scored decision: `revealed[a]` the reward of arm a, None if not revealed."""
        for key in (ctx, POOLED):
            cell = self._cell(project, key)
            for a, r in enumerate(revealed):
                if r is not None:
                    cell[a][0] += 1
                    cell[a][1] += float(r)
        self.decisions[project] = self.decisions.get(project, 0) + 1

    def to_json(self) -> dict:
        return {"cells": {p: dict(sorted(c.items())) for p, c in sorted(self.cells.items())},
                "decisions": dict(sorted(self.decisions.items()))}

    @classmethod
    def from_json(cls, data) -> Policy:
        out = cls()
        data = data or {}
        out.cells = {p: {k: [[int(n), float(s)] for n, s in arms] for k, arms in c.items()}
                     for p, c in (data.get("cells") or {}).items()}
        out.decisions = {p: int(n) for p, n in (data.get("decisions") or {}).items()}
        return out
