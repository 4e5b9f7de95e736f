"""The five heuristic baselines of the replay (paper §4.4, Appendix A), incremental.

Every baseline sees the same history as the engine (the events folded so far, the current
task's included) and ranks only members of the frozen universe ``U_t``. Resources carry
the replay's dense ids, assigned in first-seen order within a repository series, so
``U_t`` is ``id < n_universe`` and every filter is one comparison.

Cost (measured on the 2-core machine class, where a small numpy call costs 2-8 µs and a
Python loop step about 1 µs, so per-prediction numpy pipelines are avoided): an update is
O(1) per touched resource (plus the tokenisation the engine does too); recency and
frequency rank in O(k + resources first seen in the task); BM25 ranks once per task
(vectorised over the query terms' postings) and then merges the few documents the task
touched; co-session re-ranks only when the task reaches a new file (from that file's
row, or one dense pass when the row is large); random draws one matrix per task.

Files (P1, P2):
- **recency**: most recently touched first. Files of one event count in event order (the
  last listed is the most recent).
- **frequency**: most touches first; a touch is one event naming the file. Ties: the file
  that reached the count first ranks higher.
- **bm25**: BM25 (k1 1.2, b 0.75) of the task description over each file's document, built
  exactly as the engine builds context terms (:mod:`brainbox.state`): path tokens once,
  the session prompt's first 64 distinct terms once per file per prompt, and the
  tool-argument terms of every event touching the file. Query terms count once (as in the
  engine). Collection statistics (N, df, avgdl) are those of the universe, frozen with it
  at the start of each task; a document's own counts and length are live. So only files
  touched during the task change score, and the ranking is a sorted list made at task
  start merged with those few. Only files matching a query term are ranked; ties by id.
- **cosession** (EdgeBank-like): files that shared past sessions (earlier tasks) with the
  current task's files so far: score(g) = sum over the task's files f of the number of
  past sessions holding both f and g (f = g included: a file shares its own sessions).
  While the task has touched no file (P1, and P2 before its first file) the seeds are the
  files of the previous task; the first task of a series has no past, so no ranking.
  Ties by id.
- **random**: a uniformly random ordering of ``U_t``. Draws are a pure function of
  (seed, series, task, step): per task, a counter-based generator (splitmix64 of a key
  made from seed, series and task) fills a matrix of uniforms with one row per step,
  vectorised; a step's ranking is the first k distinct values of its row (an exact
  uniform draw), with a per-step Fisher-Yates fallback when the row holds too few
  distinct values. Independent of workers and order, and no generator object per task.

Rules that decide results beyond the definitions above (the compiled baselines,
:mod:`brainbox.kernels.replay.baselines`, follow them too):

- BM25 float sums. A document untouched since the task started sums its query terms in
  query order (first occurrence in the description). A document touched during the task
  sums them in its row order: at its first touch in the task, its query terms in the order
  they entered the document if it then held fewer distinct terms than the query has, else
  in query order; query terms new to it follow in the order they arrive. Scores equal in
  exact arithmetic can differ in the last bit; this order is what decides them.
- Outside the replay's protocol (one universe and one ``k`` per task, the universe holding
  every document seen): BM25 takes the untouched documents from the first ``k`` +
  (documents touched in the task) entries of the task-start ranking, and co-session's top
  ``k`` after new files is searched among the previous ranking of the task and the new
  files' rows (a full rescan when those rows are large). So a ranking asked with a smaller
  universe, or another ``k`` or universe than the task's previous one, can differ from the
  definitions above (tests/test_baselines_fast.py drives such universes; under the
  protocol both are exact).

Tools (P3):
- **recency**, **frequency**: as for files, over tool calls.
- **bm25**: the same BM25, a tool's document made like a file's: the tokens of its name,
  the prompt terms of each session using it (once per prompt) and its argument terms.
- **cosession**: EdgeBank over tool transitions: the tools that followed the task's last
  tool (a start symbol before its first call) in past sessions, scored by the number of
  past sessions with that transition. Session co-occurrence of tools is nearly uniform
  (every session uses the common tools), so transitions are the informative edges.
- **random**: as for files, over the tool universe.
"""

from __future__ import annotations

import heapq
import math
import zlib
from itertools import chain, islice

import numpy as np

from brainbox.kernels.scoring import BM25_B as B
from brainbox.kernels.scoring import BM25_K1 as K1
from brainbox.state import MAX_PROMPT_TERMS  # a prompt's first 64 distinct terms
from brainbox.text import path_tokens, tokens

METHODS = ("recency", "frequency", "bm25", "cosession", "random")
START = -1  # the tool "before" a session's first call
_EMPTY = np.zeros(0, np.int64)


def prompt_terms(text: str | None, toks: list[str] | None = None) -> list[str]:
    """The distinct terms of a prompt the engine keeps as context (first 64)."""
    seen, out = set(), []
    for t in (tokens(text) if toks is None else toks):
        if t not in seen:
            seen.add(t)
            out.append(t)
            if len(out) >= MAX_PROMPT_TERMS:
                break
    return out


def _top_ids(ids: np.ndarray, scores: np.ndarray, k: int) -> list[int]:
    """The k best ids by descending score, ties by ascending id."""
    if ids.size > k:
        kth = np.partition(scores, ids.size - k)[ids.size - k]
        sel = scores >= kth
        ids, scores = ids[sel], scores[sel]
    return ids[np.lexsort((ids, -scores))[:k]].tolist()


def top_dense(score: np.ndarray, k: int) -> list[int]:
    """The k best ids with a positive score in a dense array of non-negative integer
    scores, ties by id. A histogram of the scores finds the cut (argpartition over a few
    thousand int64 costs ~27 µs here, a bincount ~5 µs)."""
    if score.shape[0] == 0:
        return []
    hist = np.bincount(score)
    above = np.cumsum(hist[::-1])[::-1]  # above[v] = ids scoring >= v
    cut = int(np.flatnonzero(above >= k)[-1]) if above[0] >= k else 0
    cut = max(cut, 1)
    ids = np.flatnonzero(score > cut)
    ids = ids[np.lexsort((ids, -score[ids]))].tolist()
    if len(ids) < k:
        ids += np.flatnonzero(score == cut)[: k - len(ids)].tolist()
    return ids


class Recency:
    """Ids by last touch, most recent first (a dict in touch order: re-inserting a key
    moves it to the end)."""

    def __init__(self):
        self.order: dict[int, None] = {}

    def touch(self, i: int) -> None:
        self.order.pop(i, None)
        self.order[i] = None

    def top(self, k: int, n_universe: int) -> list[int]:
        return list(islice((i for i in reversed(self.order) if i < n_universe), k))


class Frequency:
    """Ids by touch count, descending; ties: the id that reached its count first (the
    earlier touch that brought it there)."""

    def __init__(self):
        self.count: dict[int, int] = {}
        self.reached: dict[int, int] = {}  # id -> the touch (a counter) that set its count
        self.touches = 0

    def touch(self, i: int) -> None:
        self.count[i] = self.count.get(i, 0) + 1
        self.reached[i] = self.touches
        self.touches += 1

    def top(self, k: int, n_universe: int) -> list[int]:
        count, reached = self.count, self.reached
        return heapq.nsmallest(k, (i for i in count if i < n_universe),
                               key=lambda i: (-count[i], reached[i]))


class _Postings:
    """One term's postings: doc ids and term frequencies as Python lists (an increment is
    a list store, ~50 ns, where a numpy scalar store costs ~250 ns here), with doc -> slot;
    a query converts them to arrays once per task."""

    __slots__ = ("doc", "slot", "tf")

    def __init__(self):
        self.slot: dict[int, int] = {}
        self.doc: list[int] = []
        self.tf: list[int] = []


class Bm25:
    """BM25 over growing documents for one query (task) at a time; see the module doc."""

    def __init__(self):
        self.post: dict[str, _Postings] = {}
        self.fwd: list[dict[str, int]] = []  # doc -> term -> tf
        self.dl = np.zeros(64)
        self.total = 0.0
        self.set_query([], 0)

    def doc_terms(self, doc: int) -> dict[str, int]:
        """Term counts of one document."""
        return dict(self.fwd[doc]) if doc < len(self.fwd) else {}

    def set_query(self, terms: list[str], n_docs: int) -> None:
        """Start a task: freeze the statistics of docs ``< n_docs`` and rank them."""
        self.qrow = {t: r for r, t in enumerate(terms)}
        self.avgdl = (self.total / n_docs if n_docs else 1.0) or 1.0
        posts = [self.post.get(t) for t in terms]
        dfs = [len(p.doc) if p is not None else 0 for p in posts]
        self.idf = [math.log1p((n_docs - df + 0.5) / (df + 0.5)) for df in dfs]
        self.dyn: dict[int, dict[int, int]] = {}  # docs touched in this task -> row -> tf
        self.dyn_score: dict[int, float] = {}
        self._cache = None
        self.static = self.static_score = np.zeros(0)
        parts = [(r, p) for r, p in enumerate(posts) if p is not None and p.doc]
        if not parts:
            return
        doc = np.fromiter(chain.from_iterable(p.doc for _, p in parts), np.int64)
        tf = np.fromiter(chain.from_iterable(p.tf for _, p in parts), np.float64)
        idf = np.repeat(np.asarray([self.idf[r] for r, _ in parts]), [len(p.doc) for _, p in parts])
        norm = K1 * (1.0 - B + B * self.dl[doc] / self.avgdl)
        score = np.bincount(doc, idf * tf * (K1 + 1.0) / (tf + norm))
        cand = np.flatnonzero(score)
        order = cand[np.lexsort((cand, -score[cand]))]
        self.static, self.static_score = order, score[order]

    def add(self, doc: int, terms) -> None:
        """Append ``terms`` (with repeats) to document ``doc``."""
        fwd = self.fwd
        while len(fwd) <= doc:
            fwd.append({})
        if doc >= self.dl.shape[0]:
            self.dl = np.concatenate([self.dl, np.zeros(max(doc + 1, self.dl.shape[0]))])
        if not terms:
            return
        post, qrow, mine = self.post, self.qrow, fwd[doc]
        row = self.dyn.get(doc)
        if row is None:  # first touch in this task: its counts so far, for query terms
            row = self.dyn[doc] = {}
            if len(mine) < len(qrow):
                for t, tf in mine.items():
                    r = qrow.get(t)
                    if r is not None:
                        row[r] = tf
            else:
                for t, r in qrow.items():
                    tf = mine.get(t)
                    if tf:
                        row[r] = tf
        for t in terms:
            tf = mine.get(t, 0) + 1
            mine[t] = tf
            p = post.get(t)
            if p is None:
                p = post[t] = _Postings()
            if tf == 1:
                p.slot[doc] = len(p.doc)
                p.doc.append(doc)
                p.tf.append(1)
            else:
                p.tf[p.slot[doc]] = tf
            r = qrow.get(t)
            if r is not None:
                row[r] = tf
        self.dl[doc] += len(terms)
        self.total += len(terms)
        self.dyn_score.pop(doc, None)
        self._cache = None

    def _score(self, doc: int) -> float:
        s = self.dyn_score.get(doc)
        if s is None:
            norm = K1 * (1.0 - B + B * float(self.dl[doc]) / self.avgdl)
            s = sum(self.idf[r] * tf * (K1 + 1.0) / (tf + norm)
                    for r, tf in self.dyn[doc].items())
            self.dyn_score[doc] = s
        return s

    def top(self, k: int, n_universe: int) -> list[int]:
        key = (k, n_universe)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        dyn = self.dyn
        pairs = [(-s, d) for d in dyn if d < n_universe and (s := self._score(d)) > 0]
        # At most len(dyn) static entries are skipped, so this prefix is enough.
        m = k + len(dyn)
        taken = 0
        for d, s in zip(self.static[:m].tolist(), self.static_score[:m].tolist()):
            if d not in dyn and d < n_universe:
                pairs.append((-s, d))
                taken += 1
                if taken == k:
                    break
        pairs.sort()
        out = [d for _, d in pairs[:k]]
        self._cache = (key, out)
        return out


class CoSession:
    """EdgeBank-like co-session scores for files: per file a sorted numpy row of
    (co-file ids, number of past sessions shared). Scores only grow within a task, so
    after adding a file's row the new top k lies among the old top k and that row."""

    def __init__(self):
        self.rows: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.score = np.zeros(256, np.int64)
        self.prev: list[int] = []
        self.task_files: dict[int, None] = {}
        self.begin_task()

    def begin_task(self) -> None:
        self.task_files = {}
        self.score[:] = 0
        self._fallback = None
        self._pending: list[np.ndarray] = []
        self._top = _EMPTY
        self._cache = None

    def _add_row(self, score: np.ndarray, f: int) -> np.ndarray:
        row = self.rows.get(f)
        if row is None:
            return _EMPTY
        score[row[0]] += row[1]
        return row[0]

    def touch(self, f: int) -> None:
        if f in self.task_files:
            return
        if f >= self.score.shape[0]:
            grown = np.zeros(max(2 * self.score.shape[0], f + 1), np.int64)
            grown[: self.score.shape[0]] = self.score
            self.score = grown
        self.task_files[f] = None
        self._pending.append(self._add_row(self.score, f))
        self._cache = None

    def end_task(self) -> None:
        new = np.asarray(sorted(self.task_files), np.int64)
        for f in self.task_files:
            ids, cnt = self.rows.get(f, (_EMPTY, _EMPTY))
            pos = np.searchsorted(ids, new)
            hit = pos < ids.size
            hit[hit] = ids[pos[hit]] == new[hit]
            cnt = cnt.copy()
            cnt[pos[hit]] += 1
            miss = ~hit
            self.rows[f] = (np.insert(ids, pos[miss], new[miss]),
                            np.insert(cnt, pos[miss], 1))
        if self.task_files:
            self.prev = list(self.task_files)

    def top(self, k: int, n_universe: int) -> list[int]:
        key = (k, n_universe)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        if not self.task_files:
            if self._fallback is None:
                self._fallback = np.zeros(self.score.shape[0], np.int64)
                for f in self.prev:
                    self._add_row(self._fallback, f)
            top = top_dense(self._fallback[:n_universe], k)
        elif sum(p.size for p in self._pending) * 8 > n_universe:  # big rows: rescan
            top = top_dense(self.score[:n_universe], k)
        else:  # the new top k lies among the old one and the rows just added
            cand = np.unique(np.concatenate([self._top, *self._pending]))
            cand = cand[cand < n_universe]
            cand = cand[self.score[cand] > 0]
            top = _top_ids(cand, self.score[cand], k) if cand.size else []
        if self.task_files:
            self._top = np.asarray(top, np.int64)
            self._pending = []
        self._cache = (key, top)
        return top


class ToolTransitions:
    """EdgeBank over tool transitions (see the module docstring)."""

    def __init__(self):
        self.counts: dict[int, dict[int, int]] = {}  # prev -> next -> past sessions
        self._sorted: dict[int, list[int]] = {}
        self.begin_task()

    def begin_task(self) -> None:
        self.last = START
        self.seen: set[tuple[int, int]] = set()

    def touch(self, tool: int) -> None:
        self.seen.add((self.last, tool))
        self.last = tool

    def end_task(self) -> None:
        for prev, nxt in self.seen:
            d = self.counts.setdefault(prev, {})
            d[nxt] = d.get(nxt, 0) + 1
        self._sorted.clear()

    def top(self, k: int, n_universe: int) -> list[int]:
        ranked = self._sorted.get(self.last)
        if ranked is None:
            d = self.counts.get(self.last, {})
            ranked = self._sorted[self.last] = sorted(d, key=lambda t: (-d[t], t))
        out = []
        for t in ranked:
            if t < n_universe:
                out.append(t)
                if len(out) == k:
                    break
        return out


_M64 = (1 << 64) - 1


def _mix(x: int) -> int:
    """splitmix64 finaliser on a Python int."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _uniforms(key: int, rows: int, cols: int) -> np.ndarray:
    """rows x cols uniforms in [0, 1): splitmix64 of (key, row * cols + col), vectorised;
    entry (i, j) depends only on (key, i, j)."""
    with np.errstate(over="ignore"):
        x = np.arange(rows * cols, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        x += np.uint64(key)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return ((x >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))).reshape(rows, cols)


class RandomRanks:
    """Seeded uniform rankings, a pure function of (seed, series, task, step)."""

    EXTRA = 6  # spare draws per row; a row rarely holds fewer than k distinct values

    def __init__(self, seed: int, series: str, salt: int):
        self.base = _mix(_mix(_mix(seed & _M64) ^ zlib.crc32(series.encode())) ^ salt)
        self.idx = None

    def begin_task(self, task_id: str, steps: int, k: int, n_universe: int) -> None:
        self.key = _mix(self.base ^ zlib.crc32(task_id.encode()))
        self.k, self.steps, self.n = k, steps, n_universe
        self.idx = None  # drawn on first use, for the task's (fixed) universe size

    def top(self, step: int, n_universe: int) -> list[int]:
        """The ranking at ``step`` (0 = before the task's first event)."""
        k = min(self.k, n_universe)
        if k <= 0:
            return []
        if self.idx is None or n_universe != self.n:
            self.n = n_universe
            u = _uniforms(self.key, self.steps + 1, self.k + self.EXTRA)
            self.idx = (u * n_universe).astype(np.int64)
            head = np.sort(self.idx[:, :k], axis=1)
            self.distinct = (np.diff(head, axis=1) != 0).all(axis=1)
        row = self.idx[step].tolist()
        if self.distinct[step]:  # the common case: the first k draws are distinct
            return row[:k]
        out = list(dict.fromkeys(row))
        if len(out) >= k:
            return out[:k]
        # Too few distinct values (tiny universes): an exact Fisher-Yates for this step.
        rng = np.random.default_rng([self.key, step])
        return rng.permutation(n_universe)[:k].tolist()

    def top_all(self, n_universe: int) -> np.ndarray:
        """Every step's ranking (``top``) as int64[steps + 1, k], -1 padded: the reference of
        the compiled replay's ``kernels.baselines.random_top_all``."""
        out = np.full((self.steps + 1, self.k), -1, np.int64)
        for step in range(self.steps + 1):
            r = self.top(step, n_universe)
            out[step, : len(r)] = r
        return out


class Baselines:
    """All file and tool baselines of one repository series, fed event by event.

    Per task: :meth:`begin_task`; P1 rankings; :meth:`prompt`; per tool event its rankings,
    then :meth:`tool_event`; finally :meth:`end_task`. Steps: 0 for P1, ``i + 1`` for the
    task's event ``i``.
    """

    def __init__(self, seed: int, series: str, k_files: int = 10, k_tools: int = 3):
        self.k_files, self.k_tools = k_files, k_tools
        self.f_rec, self.f_freq, self.f_bm25, self.f_co = Recency(), Frequency(), Bm25(), CoSession()
        self.t_rec, self.t_freq, self.t_bm25 = Recency(), Frequency(), Bm25()
        self.t_co = ToolTransitions()
        self.f_rand = RandomRanks(seed, series, 0)
        self.t_rand = RandomRanks(seed, series, 1)
        self.sess_prompt: dict[str, list[str]] = {}
        self.sess_seen: dict[str, tuple[set, set]] = {}  # files, tools given the prompt

    def begin_task(self, task_id: str, query: str, steps: int, n_files: int,
                   n_tools: int) -> None:
        self._query = query
        self._qtoks = tokens(query)
        q = list(dict.fromkeys(self._qtoks))
        self.f_bm25.set_query(q, n_files)
        self.t_bm25.set_query(q, n_tools)
        self.f_co.begin_task()
        self.t_co.begin_task()
        self.f_rand.begin_task(task_id, steps, self.k_files, n_files)
        self.t_rand.begin_task(task_id, steps, self.k_tools, n_tools)

    def prompt(self, session: str, text: str | None) -> None:
        toks = self._qtoks if text == getattr(self, "_query", None) else None
        self.sess_prompt[session] = prompt_terms(text, toks)
        self.sess_seen[session] = (set(), set())

    def tool_event(self, session: str, tool: int, tool_name: str, new_tool: bool,
                   files: list[tuple[int, bool, str]], args: str | None) -> None:
        """Record one tool call: ``files`` are (id, first seen now, path) triples."""
        prompt = self.sess_prompt.get(session)
        seen_f, seen_t = self.sess_seen.setdefault(session, (set(), set()))
        arg_terms = tokens(args) if args else ()
        tools = (self.t_rec, self.t_freq, self.t_co, self.t_bm25)
        _touch(tools, tool, tokens(tool_name) if new_tool else None, arg_terms, prompt, seen_t)
        files_ = (self.f_rec, self.f_freq, self.f_co, self.f_bm25)
        for fid, new, path in files:
            _touch(files_, fid, path_tokens(path) if new else None, arg_terms, prompt, seen_f)

    def end_task(self) -> None:
        self.f_co.end_task()
        self.t_co.end_task()

    def rank_files(self, n_universe: int, step: int) -> list[list[int]]:
        """Rankings in :data:`METHODS` order."""
        return _rankings((self.f_rec, self.f_freq, self.f_bm25, self.f_co), self.f_rand,
                         self.k_files, n_universe, step)

    def rank_tools(self, n_universe: int, step: int) -> list[list[int]]:
        """Rankings in :data:`METHODS` order."""
        return _rankings((self.t_rec, self.t_freq, self.t_bm25, self.t_co), self.t_rand,
                         self.k_tools, n_universe, step)


def _touch(baselines, i: int, own_terms, arg_terms, prompt, seen: set) -> None:
    """One touch of resource ``i`` in (recency, frequency, co-occurrence, bm25): its BM25
    document gets ``own_terms`` (its name's or path's tokens, when first seen: not None),
    the call's argument terms, and the session prompt's terms once per prompt."""
    rec, freq, co, bm25 = baselines
    rec.touch(i)
    freq.touch(i)
    co.touch(i)
    if own_terms is not None:
        bm25.add(i, own_terms)
    if arg_terms:
        bm25.add(i, arg_terms)
    if prompt and i not in seen:
        seen.add(i)
        bm25.add(i, prompt)


def _rankings(ranked, rand: RandomRanks, k: int, n_universe: int, step: int) -> list[list[int]]:
    """The ``top`` of each baseline in :data:`METHODS` order (random's by step)."""
    return [b.top(k, n_universe) for b in ranked] + [rand.top(step, n_universe)]
