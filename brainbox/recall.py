"""Recall: seven channels ranked separately and fused by weighted reciprocal rank
(DESIGN §4.3), plus next-tool prediction (§4.5).

Choices written down here (the design leaves them open):
- Candidates are files of the query's project. The frequency, recency and base-level
  channels rank the `TOP_K` best files each; the lexical, associative and recurrence
  channels rank everything they reach.
- The floor: recall returns nothing unless the query matches a file lexically, or the
  session has already touched a file of the project ("session evidence"). Among fused
  results, those below `min_confidence` (0.05) are dropped.
- Lexical: BM25 over at most the 12 most informative known query terms (fewest
  documents); an issue text is mostly incidental words, and the matched share gamma is
  measured against those 12. On the dev replay this raised P1-read from 0.682 to 0.744
  (mini-swe-agent) and from 0.242 to 0.256 (Claude Code).
- Spreading activation: seeds are the 10 best lexical matches with activation
  score / best score; weight floor 0.2, activation floor 0.05. Chosen on the dev replay
  (`brainbox replay`, Claude Code and mini-swe-agent): with 0.05 / 0.01 weak edges spread
  noise and P2 fell below the no-associative ablation (Claude Code 0.699 vs 0.726);
  0.2 / 0.05 gave P2 0.711 and 0.727; 0.3 / 0.1 gave 0.726 and 0.731 but silences edges
  learned from five read-then-edit sessions (w ~ 0.27 at window position 2/3), which
  recall must follow.
- "The query refers to current-session work" only when the session has touched files of
  the project, and then when the query uses a deictic word ("this", "again", "continue",
  ...) or at least half of its distinct terms occur in paths of files this session
  touched; then recency weighs 30 instead of 1. (Without the session condition, 422 of
  483 dev issue texts tripped the deictic rule at P1; requiring it moved pooled dev P1-read
  0.556 -> 0.579, Claude Code P1-read 0.252 -> 0.409, mini-swe-agent 0.741 -> 0.669.)
- Recurrence: files reached in one hop from the session's 5 newest resources, scored by
  the strongest such edge.
- Next tool: the longest suffix (3, 2, 1 tools) whose context was seen >= 4 times ranks
  by count; else direct tool -> tool associations of the last tool. That ranking is fused
  with tool frequency by RRF (weights 1 and 0.5, k = 60, the usual RRF constant; on the
  dev replay k = 5 / 20 / 60 gave P3 0.453 / 0.446 / 0.445 (Claude Code) and
  0.483 / 0.482 / 0.481 (mini-swe-agent): within noise, so the usual constant stays).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from brainbox import kernels as K
from brainbox.state import FILE, TOOL, State
from brainbox.text import is_deictic, path_tokens, tokens

CHANNELS = ("lexical", "associative", "snippet", "frequency", "recency", "base_level", "recurrence")
LAMBDA = {
    "lexical": 4.0, "associative": 4.0, "snippet": 4.0, "frequency": 2.0, "recency": 1.0,
    "base_level": 0.5, "recurrence": 0.2,
}
RECENCY_SESSION = 30.0
RRF_K = 20.0
TOP_K = 100
BM25_K1, BM25_B = 1.2, 0.75


@dataclass
class Params:
    min_confidence: float = 0.05
    seeds: int = 10
    hops: int = 3
    topk: int = 10
    w_floor: float = 0.2
    a_floor: float = 0.05
    recurrence_from: int = 5
    max_query_terms: int = 12
    ablate: frozenset = frozenset()


@dataclass
class Result:
    path: str
    confidence: float
    score: float
    channels: dict = field(default_factory=dict)
    via: str | None = None
    via_edge: tuple | None = None

    def as_dict(self) -> dict:
        return {
            "path": self.path, "confidence": round(self.confidence, 4),
            "channels": self.channels, "via": self.via,
        }


class Index:
    """Per-state caches for recall, refreshed cheaply when the state grew."""

    def __init__(self, state: State):
        self.state = state
        self.n_res = -1
        self._proj: dict[str, tuple[int, np.ndarray]] = {}
        self._mask: dict = {}
        self._queries: dict[str, list[str]] = {}
        self._paths: dict[int, frozenset] = {}
        self._scratch = np.zeros(0)

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

    def path_terms(self, rid: int) -> frozenset:
        hit = self._paths.get(rid)
        if hit is None:
            s = self.state
            hit = frozenset(path_tokens(s.res_key[rid])) if s.kind[rid] == FILE else frozenset()
            self._paths[rid] = hit
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


def _top(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best (ids, ranks 1..k) by descending score; ties by lower id."""
    if ids.size == 0:
        return ids, ids
    if ids.size > k:
        part = np.argpartition(-scores, k - 1)[:k]
        ids, scores = ids[part], scores[part]
    order = np.lexsort((ids, -scores))
    return ids[order], np.arange(1, order.size + 1)


def bm25(index: Index, q_terms: list[str], files: np.ndarray, in_proj: np.ndarray,
         max_terms: int = 0):
    """BM25 scores of `files` for the query; returns (ids, scores, matched-term share)."""
    s = index.state
    tids = sorted({s.term_index[t] for t in q_terms if t in s.term_index})
    n_q = len(set(q_terms))
    empty = np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    if not tids or files.size == 0:
        return empty
    if max_terms and len(tids) > max_terms:
        # A long prompt (an issue text) is mostly incidental words: keep its most
        # informative known terms (fewest documents), and measure the matched share
        # against those.
        df = np.asarray([s.doc_freq(t) for t in tids])
        keep = np.lexsort((np.asarray(tids), df))[:max_terms]
        tids = sorted(np.asarray(tids)[keep].tolist())
        n_q = max_terms
    n_docs = files.size
    doclen = s.doclen
    avgdl = float(doclen[files].mean()) or 1.0
    score = np.zeros(s.n_res)
    matched = np.zeros(s.n_res)
    scratch = index.scratch()
    for tid in tids:
        rows, tf, p_rows, p_tf = s.postings(tid)
        keep = in_proj[rows]
        rows, tf = rows[keep].astype(np.int64), tf[keep].astype(np.float64)
        if p_rows.size:
            keep = in_proj[p_rows]
            p_rows, p_tf = p_rows[keep], p_tf[keep]
            scratch[rows] = tf
            fresh = p_rows[scratch[p_rows] == 0]
            scratch[p_rows] += p_tf
            rows = np.concatenate([rows, fresh])
            tf = scratch[rows]
            scratch[rows] = 0.0
        if rows.size == 0:
            continue
        idf = math.log(1.0 + (n_docs - rows.size + 0.5) / (rows.size + 0.5))
        dl = doclen[rows]
        score[rows] += idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * dl / avgdl))
        matched[rows] += 1.0
    ids = np.flatnonzero(matched)
    if ids.size == 0:
        return empty
    return ids, score[ids], matched[ids] / max(n_q, 1)


def session_resources(state: State, session: str | None) -> np.ndarray:
    """The session's window, newest last (empty without a session)."""
    if not session or session not in state.sess_index:
        return np.zeros(0, np.int64)
    sid = state.sess_index[session]
    return state.win[sid, : state.win_len[sid]].copy()


def refers_to_session(index: "Index", query: str, q_terms: list[str], window: np.ndarray) -> bool:
    if window.size == 0:  # no session work to refer to (P1: a fresh task's description)
        return False
    if is_deictic(query):
        return True
    qs = set(q_terms)
    if not qs:
        return False
    seen = set()
    for rid in window.tolist():
        seen |= index.path_terms(rid)
    return len(qs & seen) * 2 >= len(qs)


class Ranking(NamedTuple):
    """Fused ranking over candidates, before results are built."""

    cand: np.ndarray  # resource ids
    scores: np.ndarray
    conf: np.ndarray
    order: np.ndarray  # positions into cand, best first, floor applied
    names: list
    ranks: np.ndarray  # channels x candidates, 0 = absent
    parent: np.ndarray | None


def rank(index: Index, query: str, *, project: str | None = None, session: str | None = None,
         now: float | None = None, params: Params | None = None,
         snippets: dict | None = None) -> Ranking | None:
    """Rank the project's files for `query`; None when recall has no grounds (the floor)."""
    p = params or Params()
    index.refresh()
    s = index.state
    now = s.clock if now is None else now
    files = index.project_files(project)
    if files.size == 0:
        return None
    in_proj = index.project_mask(project)
    q_terms = index.query_terms(query)
    window = session_resources(s, session)
    win_files = window[in_proj[window]] if window.size else window

    ranked: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    parent = None

    lex_ids, lex_scores, share = bm25(index, q_terms, files, in_proj, p.max_query_terms)
    lex_order = np.lexsort((lex_ids, -lex_scores)) if lex_ids.size else lex_ids
    if "lexical" not in p.ablate and lex_ids.size:
        ranked["lexical"] = (lex_ids[lex_order], np.arange(1, lex_ids.size + 1))
    if lex_ids.size == 0 and win_files.size == 0:
        return None

    if "associative" not in p.ablate and lex_ids.size and s.n_edges[0] > 0:
        w = s.graph()
        top = lex_order[: p.seeds]
        seeds = lex_ids[top]
        seed_act = lex_scores[top] / lex_scores[top[0]]
        act = np.zeros(s.n_res, np.float64)
        parent = np.full(s.n_res, -1, np.int64)
        K.spread(w.indptr, w.indices, w.data, seeds, seed_act, s.m[: s.n_res], index.blocked,
                 p.hops, p.topk, p.w_floor, p.a_floor, act, parent)
        act[seeds] = 0.0
        act[~in_proj] = 0.0
        reach = np.flatnonzero(act)
        if reach.size:
            ranked["associative"] = _top(reach, act[reach], reach.size)

    if snippets and "snippet" not in p.ablate:
        ids = np.asarray([s.res_index[(FILE, project, path)] for path in snippets
                          if (FILE, project, path) in s.res_index], np.int64)
        if ids.size:
            sc = np.asarray([snippets[s.res_key[i]] for i in ids.tolist()], np.float64)
            ranked["snippet"] = _top(ids, sc, ids.size)

    if "frequency" not in p.ablate:
        ranked["frequency"] = _top(files, s.n[files].astype(np.float64), TOP_K)
    if "recency" not in p.ablate:
        ranked["recency"] = _top(files, s.last[files], TOP_K)
    if "base_level" not in p.ablate:
        bl = np.empty(files.size, np.float64)
        K.base_level(s.hist, s.hist_len, files, float(now), bl)
        ranked["base_level"] = _top(files, bl, TOP_K)
    if "recurrence" not in p.ablate and window.size:
        w = s.graph()
        recent = window[-p.recurrence_from:]
        cols = np.concatenate([w.indices[w.indptr[r]: w.indptr[r + 1]] for r in recent.tolist()])
        if cols.size:
            vals = np.concatenate([w.data[w.indptr[r]: w.indptr[r + 1]]
                                   for r in recent.tolist()])
            cols = cols.astype(np.int64)
            keep = in_proj[cols]
            cols, vals = cols[keep], vals[keep].astype(np.float64)
            if cols.size:
                best = np.zeros(s.n_res)
                np.maximum.at(best, cols, vals)
                reach = np.flatnonzero(best)
                ranked["recurrence"] = _top(reach, best[reach], reach.size)

    lam = dict(LAMBDA)
    if refers_to_session(index, query, q_terms, win_files):
        lam["recency"] = RECENCY_SESSION
    in_use = [c for c in CHANNELS if c not in p.ablate and (c != "snippet" or snippets)]
    s_max = sum(lam[c] for c in in_use) / (RRF_K + 1)

    names = [c for c in CHANNELS if c in ranked]
    if not names:
        return None
    mark = np.zeros(s.n_res, np.bool_)
    for c in names:
        mark[ranked[c][0]] = True
    cand = np.flatnonzero(mark)
    pos = np.empty(s.n_res, np.int64)
    pos[cand] = np.arange(cand.size)
    ranks = np.zeros((len(names), cand.size), np.int64)
    gam = np.ones((len(names), cand.size), np.float64)
    for ci, c in enumerate(names):
        ids, rk = ranked[c]
        ranks[ci, pos[ids]] = rk
        if c == "lexical":
            gam[ci, pos[lex_ids]] = share
    scores = np.zeros(cand.size, np.float64)
    K.rrf_fuse(ranks, np.asarray([lam[c] for c in names]), gam, RRF_K, scores)
    conf = scores / s_max
    keep = np.flatnonzero(conf >= p.min_confidence)
    order = keep[np.lexsort((cand[keep], -scores[keep]))]
    return Ranking(cand, scores, conf, order, names, ranks, parent)


def rank_ids(index: Index, query: str, *, limit: int = 10, **kw) -> np.ndarray:
    """Resource ids of the best files, best first (replay's fast path; no Result objects)."""
    r = rank(index, query, **kw)
    if r is None:
        return np.zeros(0, np.int64)
    return r.cand[r.order[:limit]]


def recall(index: Index, query: str, *, project: str | None = None, session: str | None = None,
           limit: int = 10, now: float | None = None, params: Params | None = None,
           snippets: dict | None = None) -> list[Result]:
    """Ranked files for `query` with their evidence; empty when nothing is relevant."""
    r = rank(index, query, project=project, session=session, now=now, params=params,
             snippets=snippets)
    if r is None:
        return []
    s = index.state
    out = []
    for i in r.order[:limit].tolist():
        rid = int(r.cand[i])
        chans = {c: int(r.ranks[ci, i]) for ci, c in enumerate(r.names) if r.ranks[ci, i] > 0}
        via = via_edge = None
        if r.parent is not None and r.parent[rid] >= 0:
            src = int(r.parent[rid])
            weight = float(s.ew[K.find_edge(s.hkeys, s.hslot, src, rid)])
            via_edge = (s.res_key[src], s.res_key[rid], weight)
            via = f"{s.res_key[src]} -> {s.res_key[rid]} (w={weight:.2f})"
        out.append(Result(s.res_key[rid], float(min(1.0, r.conf[i])), float(r.scores[i]),
                          chans, via, via_edge))
    return out


def predict_tools(state: State, session: str | None, k: int = 3, min_support: int = 4):
    """Top-k next tools for the session: [(tool, score)]."""
    s = state
    tools = np.flatnonzero(s.kind[: s.n_res] == TOOL)
    if tools.size == 0:
        return []
    seq_rank: list[int] = []
    if session and session in s.sess_index:
        sid = s.sess_index[session]
        hist = s.last3[sid, : s.last3_len[sid]].tolist()
        for order in range(min(3, len(hist)), 0, -1):
            suffix = [-1] * (3 - order) + hist[-order:]
            counts = s.ngrams.get(int(K.encode_ctx(*suffix)))
            if counts and sum(counts.values()) >= min_support:
                seq_rank = sorted(counts, key=lambda t: (-counts[t], t))
                break
        if not seq_rank and hist:
            w = s.graph()
            last = hist[-1]
            row = slice(w.indptr[last], w.indptr[last + 1])
            cols, vals = w.indices[row], w.data[row]
            sel = s.kind[cols] == TOOL
            cols, vals = cols[sel], vals[sel]
            order_ = np.lexsort((cols, -vals))
            seq_rank = cols[order_].tolist()
    freq_ids, freq_rk = _top(tools, s.n[tools].astype(np.float64), tools.size)
    score: dict[int, float] = {}
    for r, t in enumerate(seq_rank, start=1):
        score[t] = score.get(t, 0.0) + 1.0 / (60 + r)
    for t, r in zip(freq_ids.tolist(), freq_rk.tolist()):
        score[t] = score.get(t, 0.0) + 0.5 / (60 + r)
    best = sorted(score, key=lambda t: (-score[t], t))[:k]
    return [(s.res_key[t], score[t]) for t in best]
