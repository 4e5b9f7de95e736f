"""Recall: seven channels ranked separately and fused by weighted reciprocal rank
(DESIGN §4.3), plus next-tool prediction (§4.5).

Choices written down here (the design leaves them open):
- Candidates are files of the query's project. The frequency, recency and base-level
  channels rank the `TOP_K` best files each; the lexical, associative and recurrence
  channels rank everything they reach.
- The floor: recall returns nothing unless the query matches a file lexically, or a
  snippet of the code index (`Memory.recall`, issue 16), or the session has already
  touched a file of the project ("session evidence"). Among fused
  results, those whose probability (`brainbox.confidence`: the calibrated chance that the
  session then touches the file) is below `min_probability` (0.02) are dropped.
- Lexical: BM25 over every known query term, times the share of the query's IDF mass
  the file matches (`kernels.channels`, with the measurements). The earlier cut to the 12
  rarest terms with gamma = matched count / 12 ranked below plain BM25 on P1-read once
  running stopped counting as reading (0.331 vs 0.370, lexical channel alone);
  `max_query_terms` still cuts when set.
- Spreading activation: seeds are the 10 best lexical matches with activation
  score / best score; weight floor 0.2, activation floor 0.05. Chosen on the dev replay
  (`brainbox replay`, Claude Code and mini-swe-agent): with 0.05 / 0.01 weak edges spread
  noise and P2 fell below the no-associative ablation (Claude Code 0.699 vs 0.726);
  0.2 / 0.05 gave P2 0.711 and 0.727; 0.3 / 0.1 gave 0.726 and 0.731 but silences edges
  learned from five read-then-edit sessions (w ~ 0.27 at window position 2/3), which
  recall must follow.
- "The query refers to current-session work" when the session has touched files of the
  project (`kernels.policy.in_session`): recency then weighs 30 instead of 1. Until issue
  15 it also needed a deictic word ("this", "again", ...) or half of the query's terms in
  the paths of the session's files; on the pooled dev replay that left 385 of 2,828
  repository-view P2 steps at recency weight 1, where brainbox scored 0.569 against
  recency's 0.825, and dropping the term condition raised P2 from 0.780 to 0.792 (recency
  0.780; all files 0.738 -> 0.750, recency 0.722). P1 (no session files) is unchanged. Not measured: a
  later prompt of a session that turns to other work (the dev tasks are one request each;
  the two such prompts in data/transcripts are too few to say); there recency's lead may
  crowd out what the new request names.
- Recurrence: files reached in one hop from the session's 5 newest resources, scored by
  the strongest such edge.
- Next tool: the longest suffix (3, 2, 1 tools) whose context was seen >= 4 times
  (`MIN_SUPPORT`) ranks by count; else direct tool -> tool associations of the last tool.
  That ranking is fused with tool frequency by RRF (weights 1 and 0.5, k = 60, the usual
  RRF constant; on the dev replay k = 5 / 20 / 60 gave P3 0.453 / 0.446 / 0.445 (Claude
  Code) and 0.483 / 0.482 / 0.481 (mini-swe-agent): within noise, so the usual constant
  stays).
"""

from __future__ import annotations

import math
import os
from collections import namedtuple
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from brainbox import confidence
from brainbox import kernels as K
from brainbox import prior as fusion_prior
from brainbox.confidence import MIN_PROBABILITY
from brainbox.kernels import policy as KP
from brainbox.kernels.policy import CHANNELS, Plan
from brainbox.state import FILE, TOOL, State
from brainbox.text import tokens

LAMBDA = {  # the paper's weights (DESIGN §4.3): `--fusion fixed`
    "lexical": 4.0, "associative": 4.0, "snippet": 4.0, "frequency": 2.0, "recency": 1.0,
    "base_level": 0.5, "recurrence": 0.2,
}
# The default fusion: the paper's weights with the associative channel at 0 (so it is not
# computed). Ablating it raised every file probe of the pooled dev replay, in every source
# (P1-edit 0.578 -> 0.703, P1-read 0.582 -> 0.683, P2 0.723 -> 0.736 before running
# stopped counting as reading; claude-code P1-edit 0.347 -> 0.413, mini-swe-agent 0.656 ->
# 0.816, sweagent-java 0.631 -> 0.651, openhands unchanged), and weight 1 instead of 4
# still lost to 0 on P1 (0.694 vs 0.703). It earns no weight on this data. Weights learned
# online per project from each channel's hits (weight proportional to the channel's running
# MRR, prior 5 probes) were tried as well: P1-edit 0.698, P2 0.642 (recency's lead lost).
#
# Recency weighs 0 at a prompt with no file of the project in the session (a session's
# opening prompt; RECENCY_SESSION applies once the session touched one). With the paper's 1
# there, removing recency raised pooled dev P1-read in both views (repo 0.524 -> 0.532, all
# files 0.405 -> 0.435 [+0.013, +0.048]) and P1-edit over repository files (0.433 ->
# 0.440); it lowered all-files P1-edit (0.708 -> 0.695), a gain that came from the agent's
# own scripts of the task before. Within a session nothing changes.
FUSION = {"chosen": {**LAMBDA, "associative": 0.0, "recency": 0.0}, "fixed": LAMBDA}
# "learned" (the default): the chosen weights, at a prompt times the project's learned gains
# (kernels.policy.gains; their prior mean credits fitted leave-one-repository-out by
# `brainbox fit`, brainbox.learning). "fitted": the same, but the prompt weights are the
# prior's logistic regression (scikit-learn) instead of the chosen ones. On the pooled dev
# replay (each repository with the prior that left it out), "learned" against "chosen":
# repository files P1-edit 0.440 -> 0.454, P1-read 0.532 -> 0.550, P2 0.792 -> 0.793; all
# files P1-edit 0.695 -> 0.693, P1-read 0.435 -> 0.436, P2 0.749 both; most of it in
# claude-code (repository files P1-edit 0.455 -> 0.494). "fitted": repository files 0.440 /
# 0.543, all files 0.695 / 0.422 (P1-edit / P1-read): its weights put recency at 0.61 at a
# prompt, where removing it had helped (above). The gains' strength (files the prior is
# worth) 0 / 10 / 30 / 100: repository files P1-edit 0.440 / 0.457 / 0.454 / 0.452, P1-read
# 0.532 / 0.548 / 0.550 / 0.549; all files P1-edit 0.695 / 0.696 / 0.693 / 0.691: 10 to 100
# within noise, 30 kept (fixed before that measurement; brainbox.prior).
FUSION["learned"] = FUSION["fitted"] = FUSION["chosen"]
DEFAULT_FUSION = "learned"
# The snippet channel's weight at a prompt (every fusion but "fixed"; in a session it keeps
# 4). Chosen leave-one-repository-out on whole-repository localization
# (benchmarks/measure_localization.py --loro: claude-code-swebench-lite, 143 tasks, gold
# patch files, weights 4/8/16/32/64/128 by MRR@10 on the other repositories): 64 in nine
# folds, 32 in sympy's (the plateau starts at 16). MRR@10 at 4 / 8 / 16 / 32: 0.251 /
# 0.371 / 0.418 / 0.422 (the index alone 0.406, BM25 over whole files 0.397). At 4,
# memory's channels (files earlier tasks touched) outweighed the code that matches the
# description. With the symbol ranking in the channel (brainbox.codesearch.files) the
# LORO choice is the same (64 in nine folds, 32 in sympy's): MRR@10 0.514 at 32, 0.510
# at the LORO weights; +0.117 [+0.052, +0.192] over BM25 over files. Unmeasured in a
# session: the dev replay has no code index.
# On the development replay's history-only index (what earlier tasks showed,
# brainbox.eval.seen; `brainbox replay --seen-snippets`), repo view: P1-edit MRR +0.059
# [+0.003, +0.121] with the channel, P2 -0.029 [-0.045, -0.015] (in a session, weight 4);
# all files P1-edit 0.693 -> 0.278: not re-tuned, so the replay leaves it off by default.
SNIPPET_PROMPT = 32.0
RECENCY_SESSION = 30.0
PATH_WEIGHT = 2.0  # the lexical path bonus (kernels.channels, with the measurements)
RRF_K = KP.RRF_K  # the reciprocal-rank constant (kept in kernels.policy for the fold's labels)
TOP_K = 100
MIN_SUPPORT = 4  # a tool context ranks by its n-gram counts once seen this often
_NO_IDS = np.zeros(0, np.int64)
_NO_CREDIT = np.zeros(len(CHANNELS) + 1)  # a project nothing credited yet (read only)
_NO_SCORES = np.zeros(0, np.float64)
_SNIP = CHANNELS.index("snippet")


@dataclass
class Params:
    min_probability: float = MIN_PROBABILITY
    seeds: int = 10
    hops: int = 3
    topk: int = 10
    w_floor: float = 0.2
    a_floor: float = 0.05
    recurrence_from: int = 5
    max_query_terms: int = 0
    ablate: frozenset = frozenset()
    fusion: str = DEFAULT_FUSION
    prior: str | None = None  # "learned": the prior fitted without this repository


_COUNTS = ("seeds", "hops", "topk", "recurrence_from", "max_query_terms")  # ints >= 0
_FLOORS = ("min_probability", "w_floor", "a_floor")  # numbers in [0, 1]


_PLANS: dict = {}  # plan's results by (params' fields, snippets, $BRAINBOX_FUSION_PRIOR)
_FIELDS = tuple(Params.__dataclass_fields__)


def plan(params: Params | None = None, *, snippets: bool = False) -> Plan:
    """`_plan`, kept for each parameter set (the files it reads are cached already, by
    path): about 20 us of each recall's Python went to building it. Callers must not
    change the returned arrays."""
    try:
        key = (None if params is None else tuple(getattr(params, f) for f in _FIELDS),
               bool(snippets), os.environ.get("BRAINBOX_FUSION_PRIOR"))
        hit = _PLANS.get(key)
    except TypeError:  # an unhashable field (an ablate set, say): not kept
        return _plan(params, snippets=snippets)
    if hit is None:
        if len(_PLANS) > 64:
            _PLANS.clear()
        hit = _PLANS[key] = _plan(params, snippets=snippets)
    return hit


def _plan(params: Params | None = None, *, snippets: bool = False) -> Plan:
    """The policy of a recall with `params` as the kernels take it (`kernels.policy.Plan`);
    `snippets`: a snippet index is given (else that channel is not used). The one builder
    of the plan, for recall and the compiled replay alike. Raises ValueError (one line)
    for a value recall cannot use: an unknown channel to ablate, a negative or non-integer
    count, a floor outside [0, 1]."""
    p = params or Params()
    unknown = sorted(set(p.ablate) - set(CHANNELS))
    if unknown:
        raise ValueError(f"unknown channel to ablate: {', '.join(map(str, unknown))} "
                         f"(channels: {', '.join(CHANNELS)})")
    for name in _COUNTS:
        v = getattr(p, name)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"recall parameter {name} must be an integer >= 0, not {v!r}")
    for name in _FLOORS:
        v = getattr(p, name)
        if isinstance(v, bool) or not isinstance(v, (int, float, np.number)) or \
                not (math.isfinite(v) and 0 <= v <= 1):
            raise ValueError(f"recall parameter {name} must be a number in [0, 1], not {v!r}")
    lam = FUSION.get(p.fusion)
    if lam is None:
        raise ValueError(f"unknown fusion {p.fusion!r} (expected one of {', '.join(FUSION)})")
    lam_prompt, pi, strength = lam, dict.fromkeys(CHANNELS, 0.0), 0.0
    if p.fusion in ("learned", "fitted"):
        fitted, pi = fusion_prior.prior(p.prior)
        # "learned" keeps the chosen weights; "fitted" takes the prior's, but a channel the
        # prior never saw credited (the snippet channel: no code index in the development
        # replay) keeps its chosen weight; neither learns it
        lam_prompt = lam if p.fusion == "learned" else \
            {c: fitted[c] if pi[c] > 0 else lam[c] for c in CHANNELS}
        strength = fusion_prior.GAIN_STRENGTH
    if p.fusion != "fixed":  # the snippet channel's prompt weight (SNIPPET_PROMPT)
        lam_prompt = {**lam_prompt, "snippet": SNIPPET_PROMPT}
    # a channel of weight 0 (in every context) is not computed: its ranks change nothing
    use = np.asarray([c not in p.ablate and (c != "snippet" or snippets)
                      and (lam[c] > 0 or lam_prompt[c] > 0
                           or (c == "recency" and RECENCY_SESSION > 0))
                      for c in CHANNELS])
    return Plan(np.asarray([lam[c] for c in CHANNELS]),
                np.asarray([lam_prompt[c] for c in CHANNELS]), use, RRF_K, RECENCY_SESSION,
                confidence.floor("prompt", float(p.min_probability)),
                confidence.floor("session", float(p.min_probability)), int(p.seeds),
                int(p.hops), int(p.topk),
                float(p.w_floor), float(p.a_floor), int(p.recurrence_from), TOP_K,
                int(p.max_query_terms), PATH_WEIGHT, np.asarray([pi[c] for c in CHANNELS]),
                strength, fusion_prior.GAIN_LO, fusion_prior.GAIN_HI)


@dataclass
class Result:
    """One recalled file. ``confidence``: the probability that the session then touches it
    (``brainbox.confidence``); ``score``: its fused score; ``ratio``: score / the score of a
    file ranked first by every channel (what the probability is calibrated on)."""

    path: str
    confidence: float
    score: float
    channels: dict = field(default_factory=dict)
    via: str | None = None
    via_edge: tuple | None = None
    ratio: float = 0.0
    snippet: str | None = None  # its best code snippet, "path:start-end kind symbol"

    def as_dict(self) -> dict:
        d = {"path": self.path, "confidence": round(self.confidence, 4),
             "channels": self.channels, "via": self.via}
        if self.snippet:
            d["snippet"] = self.snippet
        return d


class Index:
    """Per-state caches for recall, refreshed cheaply when the state grew."""

    def __init__(self, state: State):
        self.state = state
        self.n_res = -1
        self._proj: dict[str, tuple[int, np.ndarray]] = {}
        self._mask: dict = {}
        self._queries: dict[str, list[str]] = {}
        self._query_ids: dict[str, tuple[int, np.ndarray]] = {}
        self._scratch = np.zeros(0)
        self._lists: dict = {}

    def refresh(self):
        s = self.state
        if s.n_res != self.n_res:
            kinds = s.kind[: s.n_res]
            self.is_file = kinds == FILE
            self.blocked = kinds == TOOL
            self.n_res = s.n_res

    def scratch(self) -> np.ndarray:
        """A zeroed float64 work array over resources (callers leave it zeroed)."""
        if self._scratch.shape[0] < self.n_res:
            self._scratch = np.zeros(max(self.n_res, 2 * self._scratch.shape[0]))
        return self._scratch

    def project_mask(self, project: str | None) -> np.ndarray:
        """Boolean mask over resources: files of `project` (all files when None)."""
        files = self.project_files(project)
        hit = self._mask.get(project)
        if hit is None or hit[0] != (files.size, self.n_res):
            mask = np.zeros(self.n_res, np.bool_)
            mask[files] = True
            hit = ((files.size, self.n_res), mask)
            self._mask[project] = hit
        return hit[1]

    def query_terms(self, query: str) -> list[str]:
        hit = self._queries.get(query)
        if hit is None:
            if len(self._queries) > 256:
                self._queries.clear()
            hit = self._queries[query] = tokens(query)
        return hit

    def query_ids(self, query: str, q_terms: list[str]) -> np.ndarray:
        """Ascending distinct ids of the query's known terms (cached until terms grow)."""
        n_terms = len(self.state.terms)
        hit = self._query_ids.get(query)
        if hit is None or hit[0] != n_terms:
            if len(self._query_ids) > 256:
                self._query_ids.clear()
            ti = self.state.term_index
            ids = sorted({ti[t] for t in q_terms if t in ti})
            hit = self._query_ids[query] = (n_terms, np.asarray(ids, np.int64))
        return hit[1]

    def lists(self, args: RankArgs) -> tuple:
        """`kernels.rank.channel_lists` of `args` (the frequency, recency and base-level
        lists, which do not depend on the query), kept until the state is folded into
        (`State.edits`, with the clock, resources and edges as a second guard) or `now`
        changes: 0.06 of a 1M-event recall's 0.3 ms kernel time went to them."""
        from brainbox.kernels.rank import channel_lists

        s = self.state
        key = (args.files.shape[0], args.files[-1], getattr(s, "edits", 0), s.clock,
               s.n_res, int(s.n_edges[0]), args.now, args.top_n, args.prune_base_level,
               args.bl_cache.shape[0] > 0)
        hit = self._lists.get(key)
        if hit is None:
            if len(self._lists) > 32:
                self._lists.clear()
            hit = self._lists[key] = channel_lists(
                args.files, args.n, args.last, args.hist, args.hist_len, args.now,
                args.prune_base_level, args.top_n, args.bl_cache)
        return hit

    def project_files(self, project: str | None) -> np.ndarray:
        if project is None:
            return np.flatnonzero(self.is_file)
        ids = self.state.proj_files.get(project)
        if not ids:
            return np.zeros(0, np.int64)
        hit = self._proj.get(project)
        if hit is None or hit[0] != len(ids):
            hit = (len(ids), np.asarray(ids, np.int64))
            self._proj[project] = hit
        return hit[1]


def session_resources(state: State, session: str | None) -> np.ndarray:
    """The session's window, newest last (empty without a session)."""
    if not session or session not in state.sess_index:
        return np.zeros(0, np.int64)
    sid = state.sess_index[session]
    return state.win[sid, : state.win_len[sid]].copy()


def session_context(index: Index, project: str | None, session: str | None) -> str:
    """`brainbox.confidence`'s context of a ranking: "session" when the session's window
    holds a file of the project, else "prompt"."""
    index.refresh()
    window = session_resources(index.state, session)
    return "session" if KP.in_session(window, index.project_mask(project)) else "prompt"


class Ranking(NamedTuple):
    """Fused ranking over candidates, before results are built."""

    cand: np.ndarray  # resource ids
    scores: np.ndarray
    conf: np.ndarray
    order: np.ndarray  # positions into cand, best first, floor applied
    names: list
    ranks: np.ndarray  # channels x candidates, 0 = absent
    parent: np.ndarray | None
    context: str = "prompt"  # brainbox.confidence's: "session" if it held a project file
    structure: object = None  # brainbox.structure.Effective spread over, if any


RankArgs = namedtuple("RankArgs", (
    "tids n_query max_terms files in_proj doclen post path_ptr path_terms path_w "
    "adj_off adj_len pool_dst pool_e ew "
    "n_edges m is_blocked n_seeds hops spread_k w_floor a_floor n last hist hist_len now "
    "prune_base_level top_n window recurrence_from snip_ids snip_scores use lam rrf_k s_max "
    "min_conf edst rtop rtop_n bl_cache limit"))
RankArgs.__doc__ = """The arguments of `brainbox.kernels.rank_files`, by name and in its order."""


def rank_args(index: Index, query: str, *, project: str | None = None,
              session: str | None = None, now: float | None = None,
              params: Params | None = None, snippets: dict | None = None,
              limit: int = 0, structure=None) -> RankArgs | None:
    """One recall as the arguments of `brainbox.kernels.rank_files`: the plan (`plan`), its
    weights for this query (`kernels.policy.weights`, recency by the session-reference rule
    `kernels.policy.in_session`), the query's terms and the state arrays; None
    without project files. `limit` > 0: only the best `limit` are wanted (the kernel then
    ranks less). `structure`: the effective graph W-else-P (`brainbox.structure`), which
    spreading and recurrence then read instead of W alone."""
    pl = plan(params, snippets=bool(snippets))
    index.refresh()
    s = index.state
    now = s.clock if now is None else now
    files = index.project_files(project)
    if files.size == 0:
        return None
    in_proj = index.project_mask(project)
    q_terms = index.query_terms(query)
    tids = index.query_ids(query, q_terms)
    n_query = len(set(q_terms))
    window = session_resources(s, session)
    # every file's path terms, for the lexical path bonus (cached in the state, new rows
    # added per call)
    path_ptr, path_terms = s.path_terms()
    in_sess = bool(KP.in_session(window, in_proj))  # the recency switch and the context
    credit = s.credit.get(project) if project is not None else None
    lam, s_max = KP.weights(pl, in_sess, _NO_CREDIT if credit is None else credit)
    snip_ids, snip_scores = snippet_arrays(s, project, snippets)
    if structure is not None:
        g = structure
        adj_off, adj_len, pool_dst, pool_e, ew, n_edges = (
            g.adj_off, g.adj_len, g.pool_dst, g.pool_e, g.ew, g.n_edges)
        edst, rtop, rtop_n = g.pool_dst, s.rtop[:0], s.rtop_n[:0]  # rows scanned
    else:
        adj = s.adjacency()
        adj_off, adj_len, pool_dst, pool_e, ew, n_edges = (
            adj.off, adj.len, adj.dst, adj.edge, s.ew, int(s.n_edges[0]))
        edst, rtop, rtop_n = s.edst, s.rtop, s.rtop_n
    return RankArgs(tids, n_query, pl.max_terms, files, in_proj, s.doclen, s.post, path_ptr,
                    path_terms, pl.path_w,
                    adj_off, adj_len, pool_dst, pool_e, ew, n_edges,
                    s.m[: s.n_res], index.blocked, pl.seeds, pl.hops, pl.topk, pl.w_floor,
                    pl.a_floor, s.n, s.last, s.hist, s.hist_len, float(now), s.in_order,
                    pl.top_n, window, pl.recurrence_from, snip_ids, snip_scores, pl.use, lam,
                    pl.rrf_k, s_max, pl.min_conf_session if in_sess else pl.min_conf, edst,
                    rtop, rtop_n, s.bl_cache,
                    int(limit))


def uses_associative(params: Params | None = None) -> bool:
    """Whether recall with `params` computes the associative channel (spreading): only
    then is the effective graph of `brainbox.structure` worth building."""
    pl = plan(params)
    i = CHANNELS.index("associative")
    return bool(pl.use[i]) and (float(pl.lam[i]) > 0 or float(pl.lam_prompt[i]) > 0)


def channel_weights(index: Index, query: str, **kw) -> dict:
    """The weight of each channel in use in the ranking of ``query`` (keywords as
    `rank_args`): the chosen ones in a session, at a prompt times the project's learned
    gains (``brainbox.learning``); empty without project files. What `explain` shows."""
    args = rank_args(index, query, **kw)
    if args is None:
        return {}
    return {c: round(float(w), 4) for c, w, on in zip(CHANNELS, args.lam.tolist(),
                                                      args.use.tolist()) if on}


def rank(index: Index, query: str, **kw) -> Ranking | None:
    """Rank the project's files for `query`; None when recall has no grounds (the floor).

    Keywords as `rank_args`. The policy is decided there; the numbers are one compiled call,
    `brainbox.kernels.rank_files`."""
    args = rank_args(index, query, **kw)
    return None if args is None else _ranked(args, kw.get("structure"), index.lists(args))


def _ranked(args: RankArgs, structure=None, lists=None) -> Ranking | None:
    """The kernel's ranking of `args` (`rank`); `structure` as `rank_args` got it; `lists`
    `Index.lists` of `args` (None: computed in the kernel)."""
    status, cand, scores, order, ranks, present, parent = K.rank_files(*args, lists)
    if not status or not present.any():
        return None
    names = [c for c, on in zip(CHANNELS, present.tolist()) if on]
    ctx = "session" if KP.in_session(args.window, args.in_proj) else "prompt"
    return Ranking(cand, scores, scores / args.s_max, order, names, ranks[present], parent,
                   ctx, structure)


def snippet_arrays(s: State, project, snippets) -> tuple[np.ndarray, np.ndarray]:
    """The snippet channel's kernel input: the resource ids of those of `snippets` ({path:
    score}) that are files of `project` memory knows, and their scores (the compiled
    replay builds its per-task arrays with it too)."""
    if not snippets:
        return _NO_IDS, _NO_SCORES
    ids = [s.res_index[(FILE, project, path)] for path in snippets
           if (FILE, project, path) in s.res_index]
    sc = [snippets[s.res_key[i]] for i in ids]
    return np.asarray(ids, np.int64), np.asarray(sc, np.float64)


def rank_ids(index: Index, query: str, *, limit: int = 10, **kw) -> np.ndarray:
    """Resource ids of the best files, best first (replay's fast path; no Result objects)."""
    r = rank(index, query, limit=limit, **kw)
    if r is None:
        return np.zeros(0, np.int64)
    return r.cand[r.order[:limit]]


def recall(index: Index, query: str, *, project: str | None = None, session: str | None = None,
           limit: int = 10, now: float | None = None, params: Params | None = None,
           snippets: dict | None = None, structure=None) -> list[Result]:
    """Ranked files for `query` with their evidence; empty when nothing is relevant.

    `snippets`: the code index's files for `query`, {path: score} best first (the snippet
    channel). Its rank of a file is the file's place among all of them, and a file of the
    index memory has never seen is a candidate too, ranked by that channel alone (its
    fused score lam_snippet / (k + rank)): the index reaches files no agent opened yet
    (`code_ranking`). `structure`: the effective graph (`brainbox.structure`) spreading
    reads instead of the learned W alone."""
    if snippets:
        return _with_code(index, query, project=project, session=session, limit=limit,
                          now=now, params=params, snippets=snippets, structure=structure)
    r = rank(index, query, project=project, session=session, now=now, params=params,
             limit=limit, structure=structure)
    if r is None:
        return []
    top = r.order[:limit]
    probs = confidence.probability(np.minimum(r.conf[top], 1.0), r.context).tolist()
    return _results(index.state, r, top, probs)


def _results(s: State, r: Ranking, top: np.ndarray, probs: list) -> list[Result]:
    """``[_result(s, r, i, p) for i, p in zip(top, probs)]``, reading the arrays once as
    lists (numpy scalar reads per field were a fifth of a recall's Python)."""
    ids = r.cand[top]
    rows = r.ranks[:, top].tolist()
    parents = r.parent[ids].tolist() if r.parent is not None else [-1] * top.shape[0]
    out = []
    for k, (rid, score, conf, prob, src) in enumerate(zip(
            ids.tolist(), r.scores[top].tolist(), r.conf[top].tolist(), probs, parents)):
        chans = {c: row[k] for c, row in zip(r.names, rows) if row[k] > 0}
        via, via_edge = _via(s, r, src, rid) if src >= 0 else (None, None)
        out.append(Result(s.res_key[rid], float(prob), score, chans, via, via_edge, conf))
    return out


def _result(s: State, r: Ranking, i: int, prob: float, score: float | None = None,
            conf: float | None = None) -> Result:
    """The Result of candidate position `i` of ranking `r`."""
    rid = int(r.cand[i])
    chans = {c: int(r.ranks[ci, i]) for ci, c in enumerate(r.names) if r.ranks[ci, i] > 0}
    via = via_edge = None
    if r.parent is not None and r.parent[rid] >= 0:
        via, via_edge = _via(s, r, int(r.parent[rid]), rid)
    return Result(s.res_key[rid], float(prob), float(r.scores[i] if score is None else score),
                  chans, via, via_edge, float(r.conf[i] if conf is None else conf))


def _via(s: State, r: Ranking, src: int, rid: int) -> tuple[str, tuple]:
    """(via, via_edge) of resource `rid` reached from `src` by spreading in ranking `r`."""
    e = int(K.find_edge(s.hkeys, s.hslot, src, rid))
    structural = False
    if e >= 0:
        weight = float(s.ew[e])
    else:  # reached along the code graph (brainbox.structure): no learned edge
        from brainbox.structure import edge

        weight, structural = edge(r.structure, src, rid)
    via_edge = (s.res_key[src], s.res_key[rid], weight)
    via = (f"{s.res_key[src]} -> {s.res_key[rid]} "
           + ("(structural, " if structural else "(") + f"w={weight:.2f})")
    return via, via_edge


def code_ranking(index: Index, query: str, snippets: dict, *, project: str | None = None,
                 limit: int = 10, **kw) -> tuple[list, str, Ranking | None]:
    """Recall's ranking over memory's files and the code index's files together:
    ``([(score, confidence, path, position in the memory ranking or -1, snippet rank)],
    context, memory ranking)``, best first, the floor applied, at most `limit` (0: all).

    The kernel ranks the snippet channel among the files memory knows; here each such
    file's snippet term lam / (k + r_known) is replaced by lam / (k + r), r its place
    among all of `snippets`, and each file memory does not know enters with lam / (k + r)
    alone. The kernel is asked for `limit` + (known files with a snippet) results, which
    is exact: the correction only lowers those files' scores."""
    places = {p: j + 1 for j, p in enumerate(snippets)}
    s = index.state
    known = {p for p in snippets if (FILE, project, p) in s.res_index}
    want = 0 if limit <= 0 else limit + len(known)
    args = rank_args(index, query, project=project, snippets=snippets, limit=want, **kw)
    r = None if args is None else _ranked(args, kw.get("structure"), index.lists(args))
    if args is None:  # memory knows no file of the project: the index alone
        pl = plan(kw.get("params"), snippets=True)
        lam, s_max = KP.weights(pl, False, _NO_CREDIT)
        lam_s = float(lam[_SNIP]) if pl.use[_SNIP] else 0.0
        k, floor, ctx = float(pl.rrf_k), float(pl.min_conf), "prompt"
    else:  # an ablated snippet channel adds no file
        lam_s = float(args.lam[_SNIP]) if args.use[_SNIP] else 0.0
        k, floor, s_max = float(args.rrf_k), float(args.min_conf), args.s_max
        ctx = "session" if KP.in_session(args.window, args.in_proj) else "prompt"
    s_max = float(s_max) or 1.0
    rows, seen = [], set()
    if r is not None:
        si = r.names.index("snippet") if "snippet" in r.names else -1
        for i in r.order.tolist():
            path = s.res_key[int(r.cand[i])]
            seen.add(path)
            sc = float(r.scores[i])
            if si >= 0 and r.ranks[si, i] > 0:
                sc += lam_s * (1.0 / (k + places[path]) - 1.0 / (k + r.ranks[si, i]))
            rows.append((sc, sc / s_max, path, i, places.get(path, 0)))
    if lam_s > 0:
        for path, j in places.items():
            if path not in seen and path not in known:
                sc = lam_s / (k + j)
                rows.append((sc, sc / s_max, path, -1, j))
    rows = [row for row in rows if row[1] >= floor]
    rows.sort(key=lambda row: (-row[0], row[2]))
    return (rows[:limit] if limit > 0 else rows), ctx, r


def _with_code(index: Index, query: str, *, project, limit: int, snippets: dict,
               **kw) -> list[Result]:
    rows, ctx, r = code_ranking(index, query, snippets, project=project, limit=limit, **kw)
    if not rows:
        return []
    s = index.state
    probs = confidence.probability(np.minimum([row[1] for row in rows], 1.0), ctx).tolist()
    out = []
    for (sc, conf, path, i, place), prob in zip(rows, probs):
        if i >= 0:
            res = _result(s, r, i, prob, sc, conf)
            if "snippet" in res.channels:  # its place among all the index's files
                res.channels["snippet"] = place
            out.append(res)
        else:
            out.append(Result(path, float(prob), float(sc), {"snippet": place}, None, None,
                              float(conf)))
    return out


def predict_tools(state: State, session: str | None, k: int = 3,
                  min_support: int = MIN_SUPPORT):
    """Top-k next tools for the session: [(tool, score)] (`brainbox.kernels.predict_kernel`)."""
    s = state
    sid = s.sess_index.get(session, -1) if session else -1
    adj = s.adjacency()
    ids, scores = K.predict_kernel(s.kind, s.n, s.n_res, s.last3, s.last3_len, sid, s.ctxmap,
                                   s.grams, adj.off, adj.len, adj.dst, adj.edge, s.ew,
                                   min_support, k)
    return [(s.res_key[t], float(v)) for t, v in zip(ids.tolist(), scores.tolist())]
