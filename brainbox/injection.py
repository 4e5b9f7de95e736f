"""The injection policy (issue 18, DESIGN §4.8): how much of recall's list to show before
a prompt, SILENT, TOP1, TOP3 or TOP5: a model of the expected reward from recall's
calibrated confidences, corrected per project from the session-end reward.

- **Context** (`context`): the confidence band of the top result (`low` < 0.2 <= `mid` <
  0.5 <= `high`), the kind of query (`session`: the session already touched a file of the
  project or the prompt points at current work; `long`: pasted text over `LONG` characters;
  `question`; else `task`), how familiar the project is (`new` under `FAMILIAR` scored
  decisions, else `known`) and how far the session has gone (`first` until the session
  has touched a file of the project, then `later`).
- **The model** (`expected`, `model_arm`): each arm's expected reward from recall's
  calibrated confidences (the probability that the session touches each item):
  sum over the shown items of confidence * READ_VALUE / rank, minus the token cost;
  the model's arm is the largest of them among TOP1, TOP3 and TOP5 (never SILENT: the
  floor decided there is something, and a young memory's confidences are the least
  calibrated). The values and the cost are the design's.
- **Recalibrated per project** (`Policy.corrected`): recall's calibration is fitted on
  every agent's sessions, and agents differ in how much of what is offered they open.
  Each confidence is scaled by (used + k) / (predicted + k) over the project's scored
  decisions (the offered items' summed confidence, and how many were then read or
  edited), with k = `PRIOR_HITS` = 8 pseudo-hits, chosen leave-one-repository-out over
  {0.5, 1, 2, 4, 8, 16, none} (all 14 repositories chose 8; a per-rank variant lost).
- **Choice** (`Policy.choose`): the model's arm, unless another arm beat it with
  confidence in the context's cell (or, while that holds fewer than `WARMUP`
  observations per arm, the project's pooled cell): every arm's reward is observed at
  every decision, so each arm keeps its paired difference from the model's arm's
  reward, and the arm whose mean difference minus `Z` standard errors is largest and
  above 0, after at least `MIN_PAIRS` decisions, replaces it. This is also how the
  policy falls silent where nothing shown is ever used. The design's `argmax R̄_a +
  0.15 √(2 ln N / N_a)` degenerates here: with every arm revealed N_a = N, the bonus
  is the same for every arm, and the rule is follow-the-leader per context, which lost
  on the development replay (`benchmarks/measure_policy.py`, pooled mean reward 0.676
  against TOP3 0.679 and TOP5 0.684): within a project and context the arms differ by
  less than their noise. Z = 2.33 and MIN_PAIRS = 20 were chosen
  leave-one-repository-out (13 of 14 repositories chose them) for follow-the-leader's
  safe variant before the model existed; with the model the learned switch changes
  one decision in 483 (MIN_PAIRS = 10**9 gives the same means), and a looser switch
  (Z = 1.64, MIN_PAIRS = 10) lowers the pooled mean to 0.683.
- **Measured** (`benchmarks/measure_policy.py`; pooled, 483 prompts; paired bootstrap
  over tasks): policy 0.694, TOP5 0.684 (+0.010 [+0.002, +0.017]), TOP3 0.679 (+0.015
  [+0.005, +0.025]), TOP1 0.549; SILENT 5.2% of prompts, all of them prompts recall had
  nothing for. Per source the policy is above every arm but the best in hindsight and
  within 10% of it in claude-code (0.317; best TOP3 0.325, TOP5 0.314), mini-swe-agent
  (1.136, above all) and sweagent-java (0.243, above all; TOP3 0.242); not in openhands
  (22 prompts of one repository: 0.058 against TOP3 0.068 and TOP1 0.062; without the
  recalibration 0.034).
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
DEFAULT = 3  # TOP5: injection before the policy, and the arm without a model
Z = 2.33  # standard errors a paired gain over the model's arm must clear (one-sided 99%)
MIN_PAIRS = 20  # paired observations an arm needs before it may replace the model's arm
WARMUP = 5  # observations before a cell decides by itself
PRIOR_HITS = 8.0  # pseudo-hits that shrink a project's recalibration to 1 (`Policy.corrected`)
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


def expected(confidences: list[float], chars: list[int]) -> list[float]:
    """Each arm's expected reward (`ARMS`) from recall's calibrated confidences (the
    probability that the session touches each item, best first) and the block's
    characters for each number of items: sum over the shown items of
    confidence * READ_VALUE / rank, minus the token cost, as `rewards` counts it."""
    n, out = len(confidences), []
    if not chars:
        return out
    for k in ARMS:
        kk = min(k, n, len(chars) - 1)
        gain = sum(float(c) * READ_VALUE / (i + 1) for i, c in enumerate(confidences[:kk]))
        out.append(gain - TOKEN_COST * (chars[kk] / 4.0) / 1000.0 if kk else 0.0)
    return out


def arm_index(name) -> int | None:
    """The index of an arm named `name` (`NAMES`), else None."""
    return NAMES.index(name) if name in NAMES else None


def model_arm(exp: list[float] | None, available: int) -> int:
    """The arm of the largest expected reward (ties: the smaller arm), never SILENT: the
    relevance floor has decided that recall has something, and a young memory's
    confidences are the least calibrated (silence is learned, `Policy.choose`).
    `DEFAULT` (mapped to the smallest arm showing the same list) without expectations."""
    if not exp:
        return _smallest_same(DEFAULT, available)
    best = 1
    for a in range(2, len(ARMS)):
        if _smallest_same(a, available) == a and exp[a] > exp[best] + 1e-12:
            best = a
    return best


class Policy:
    """Per project and context: for each arm, observations, summed reward, and the sum and
    sum of squares of its paired difference from the reward of the arm the model chose
    (`model_arm`) at the same decision."""

    def __init__(self, prior_hits: float = PRIOR_HITS, z: float = Z, min_pairs: int = MIN_PAIRS):
        self.cells: dict[str, dict[str, list[list[float]]]] = {}  # project -> ctx -> arms
        self.decisions: dict[str, int] = {}  # project -> scored decisions
        # project -> [summed confidence of the offered items, how many of them were used]
        self.calib: dict[str, list[float]] = {}
        self.prior_hits = float(prior_hits)
        self.z, self.min_pairs = float(z), int(min_pairs)

    def corrected(self, project: str, confidences: list[float]) -> list[float]:
        """`confidences` (recall's, best first) recalibrated to how much of what recall
        offered this project's scored decisions saw used: each times
        (used + k) / (predicted + k), where `predicted` sums the offered items'
        confidences, `used` counts those the session then read or edited, and k is
        `prior_hits` pseudo-hits. A project without history keeps recall's calibration;
        one whose agent keeps leaving the offered files alone moves toward what it saw."""
        pred, used = self.calib.get(project, (0.0, 0.0))
        k = self.prior_hits
        return [float(c) * (used + k) / (pred + k) for c in confidences]

    def observe(self, project: str, confidences, used) -> None:
        """One scored decision's offered items: their confidences and whether the session
        then read or edited each (`corrected`)."""
        if not isinstance(confidences, list) or not isinstance(used, list) or \
                len(confidences) != len(used):
            return
        row = self.calib.setdefault(project, [0.0, 0.0])
        row[0] += sum(max(0.0, min(1.0, float(c or 0.0))) for c in confidences)
        row[1] += float(sum(1 for u in used if u))

    def record(self, project: str, decision: dict) -> None:
        """One scored decision as the `feedback` event carries it (`brainbox.feedback.
        decisions`): its context, every arm's reward, the model's arm, and the offered
        items' confidences and uses."""
        r = decision.get("rewards") if isinstance(decision, dict) else None
        if not (isinstance(r, list) and len(r) == len(ARMS) and decision.get("ctx")):
            return
        self.update(project, str(decision["ctx"]), [None if x is None else float(x) for x in r],
                    decision.get("model"))
        self.observe(project, decision.get("confidences"), decision.get("used"))

    def _cell(self, project: str, ctx: str) -> list[list[float]]:
        return self.cells.setdefault(project, {}).setdefault(
            ctx, [[0, 0.0, 0, 0.0, 0.0] for _ in ARMS])

    def choose(self, project: str, ctx: str, available: int,
               exp: list[float] | None = None) -> int:
        """The arm index for a prompt whose recall offers `available` items (> 0), `exp`
        each arm's expected reward (`expected`; None: the model's arm is `DEFAULT`)."""
        model = model_arm(exp, available)
        cells = self.cells.get(project, {})
        cell = cells.get(ctx)
        if cell is None or sum(a[0] for a in cell) < WARMUP * len(ARMS):
            cell = cells.get(POOLED)
        if cell is None:
            return model
        best, best_lcb = model, 0.0
        for a, (_n, _s, m, sd, sd2) in enumerate(cell):
            if a == model or m < self.min_pairs or _smallest_same(a, available) != a:
                continue
            mean = sd / m
            lcb = mean - self.z * math.sqrt(max(sd2 / m - mean * mean, 0.0) / m)
            if lcb > best_lcb:
                best, best_lcb = a, lcb
        return best

    def update(self, project: str, ctx: str, revealed: list, model=None) -> None:
        """One scored decision: `revealed[a]` the reward of arm a, None if not revealed;
        `model` the model's arm at the decision, its index or its name (None, or a
        decision scored before the model existed: `DEFAULT`)."""
        if not isinstance(model, int):
            model = arm_index(model)
        model = DEFAULT if model is None else model
        base = revealed[model] if 0 <= model < len(revealed) else None
        for key in (ctx, POOLED):
            cell = self._cell(project, key)
            for a, r in enumerate(revealed):
                if r is not None:
                    cell[a][0] += 1
                    cell[a][1] += float(r)
                    if base is not None:
                        d = float(r) - float(base)
                        cell[a][2] += 1
                        cell[a][3] += d
                        cell[a][4] += d * d
        self.decisions[project] = self.decisions.get(project, 0) + 1

    def to_json(self) -> dict:
        return {"cells": {p: dict(sorted(c.items())) for p, c in sorted(self.cells.items())},
                "decisions": dict(sorted(self.decisions.items())),
                "calib": dict(sorted(self.calib.items()))}

    @classmethod
    def from_json(cls, data) -> Policy:
        out = cls()
        data = data or {}
        out.cells = {p: {k: [_arm_row(a) for a in arms] for k, arms in c.items()}
                     for p, c in (data.get("cells") or {}).items()}
        out.decisions = {p: int(n) for p, n in (data.get("decisions") or {}).items()}
        out.calib = {p: [float(row[0]), float(row[1])]
                     for p, row in (data.get("calib") or {}).items()}
        return out


def _arm_row(a) -> list:
    """A stored arm's statistics; a state saved before the paired sums has [n, s]: its
    pairs start empty (a rebuild from the log fills them)."""
    a = list(a) + [0, 0.0, 0.0][: max(0, 5 - len(a))]
    return [int(a[0]), float(a[1]), int(a[2]), float(a[3]), float(a[4])]


def _smallest_same(a: int, available: int) -> int:
    """The smallest arm that shows the same list as arm `a` when recall offers
    `available` items."""
    shown = min(ARMS[a], available)
    return next(i for i, k in enumerate(ARMS) if min(k, available) == shown)
