"""The materialised state: resources, node arrays, the association graph, session windows,
tool n-grams and context terms, folded forward from the event log.

Event sourcing (DESIGN §3): the log is the truth; `State.fold(events)` advances the state
and the watermark; folding in any number of batches gives bit-identical arrays to one
fold of the whole log, because every update is sequential in event order and the kernels
keep their own per-session windows in the state.

The association graph's arrays, the out-adjacency over them and the CSR matrices
derived from them live in brainbox/graph.py (`EdgeStore`, which `State` extends), the
decay by the rules below in brainbox/decay.py (`Decay`, which it extends too).

Choices written down here:
- An event touches its resources in the order tool, files, error (DESIGN §4.1 leaves the
  in-event order open).
- A tool or error resource is shared across projects (project ""); a file belongs to one.
- Context terms of a file: its path tokens (once, when first seen), the terms of the
  session's current prompt (once per file per prompt) and the tool-argument terms of each
  event that touches it (e.g. a grep pattern).
- `decay` and feedback arrive as events (`maintenance`, `feedback`), so they replay.
- Decay (`decay_plan`) measures each association from its last update or the previous
  decay, whichever is later, and never from before the memory began: the decay event
  carries that time (`meta.floor`, when the database was made), so rebuild replays it.
  Measured on the shared spotter transcripts (10 months old, 6,380 associations): measured
  from the first event, as before, one `decay` pruned all 6,380 and `rebuild` replayed the
  loss; from the floor it prunes none. A decay logged without a floor (before this rule)
  replays as measured from each association's last update.
- A decay never prunes an association updated (or, if older, the memory begun) within
  `PROTECT_DAYS` = 7 of it: 56% of the spotter associations enter below the 0.05 pruning
  floor (median weight 0.043: a co-access far back in the 25-resource window is weak), so
  without it a decay right after a session pruned more than half of what it learnt. An
  association untouched for a week goes at the first decay after that.
"""

from __future__ import annotations

import json
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from brainbox import kernels as K
from brainbox.advice import Advice
from brainbox.corrections import Board as Corrections
from brainbox.corrections import wrong_key
from brainbox.decay import Decay, DecayPlan
from brainbox.graph import ADJ_POOL, Adjacency, EdgeStore, Graph, grow
from brainbox.injection import Policy
from brainbox.kernels.codes import ERROR, FILE, KIND_NAMES, PROMPT, SKIP, TOOL, TOOL_EVENT
from brainbox.kernels.policy import CREDIT_FILES, N_CHANNELS
from brainbox.labels import label
from brainbox.openerrors import OpenErrors
from brainbox.pins import Board
from brainbox.procedures import Procedures
from brainbox.text import path_tokens, tokens
from brainbox.windows import window

__all__ = ["ADJ_POOL", "ERROR", "FILE", "KIND_NAMES", "PROMPT", "SKIP", "TOOL", "TOOL_EVENT",
           "Adjacency", "DecayPlan", "Encoded", "Graph", "State"]
WINDOW = 25
HIST = 50
MAX_PROMPT_TERMS = 64

_NO_WEIGHTS = np.zeros(0, np.float64)


class Encoded(NamedTuple):
    """A batch of events as what folding them changes (`State.encode`)."""

    ev_kind: np.ndarray  # int8[E]: SKIP, PROMPT or TOOL_EVENT
    ev_sess: np.ndarray  # int64[E] session row (-1 for SKIP)
    ev_time: np.ndarray  # float64[E]
    ev_tool: np.ndarray  # int64[E] tool resource of a tool event, else -1
    tch_ptr: np.ndarray  # int64[E+1]: touches of event i are tch_res[tch_ptr[i]:tch_ptr[i+1]]
    tch_res: np.ndarray  # int64[T] resources touched: tool, files, error
    add_ptr: np.ndarray  # int64[E+1]: context terms added by event i
    add_rid: np.ndarray  # int64[A] resource
    add_tid: np.ndarray  # int64[A] term
    n_res_after: np.ndarray  # int64[E] resources known after event i
    n_terms_after: np.ndarray  # int64[E] terms known after event i


class State(EdgeStore, Decay):
    def __init__(self):
        super().__init__()
        # resources
        self.res_index: dict[tuple[int, str, str], int] = {}
        self.res_kind: list[int] = []
        self.res_project: list[str] = []
        self.res_key: list[str] = []
        self.n_res = 0
        self.kind = np.zeros(0, np.int8)
        self.n = np.zeros(0, np.int64)
        self.m = np.zeros(0, np.float64)
        self.act = np.zeros(0, np.float64)
        self.last = np.zeros(0, np.float64)
        self.hist = np.zeros((0, HIST), np.float64)
        self.hist_len = np.zeros(0, np.int64)
        self.deg = np.zeros(0, np.int64)
        self.streak = np.zeros(0, np.int64)
        # recall's base-level cache (sum, time, access count; zeros: none), derived and
        # not persisted: kernels.rank.base_level_top
        self.bl_cache = np.zeros((0, 3), np.float64)
        # spreading's row lists (kernels.hebbian.fold_touches keeps them; -1: none yet),
        # derived and not persisted
        self.rtop = np.zeros((0, K.ROW_TOP, 3), np.float64)
        self.rtop_n = np.zeros(0, np.int64)
        # sessions
        self.sess_index: dict[str, int] = {}
        self.win = np.zeros((0, WINDOW), np.int64)
        self.win_len = np.zeros(0, np.int64)
        self.last3 = np.zeros((0, 3), np.int64)
        self.last3_len = np.zeros(0, np.int64)
        self.sess_prompt: dict[int, list[int]] = {}
        self.sess_seen: dict[int, set[int]] = {}
        # tool n-grams: context code -> dense id, (context id, next tool) -> count
        self.ctxmap = K.new_table()
        self.grams = K.new_table()
        # context terms
        self.term_index: dict[str, int] = {}
        self.terms: list[str] = []
        self.post = K.new_table()  # postings: term -> resource -> tf
        self.doclen = np.zeros(0, np.float64)  # context-term count per resource
        self.proj_files: dict[str, list[int]] = {}
        # clocks
        self.watermark = 0
        self.clock = 0.0
        self.last_decay = None
        self.in_order = True  # every event folded so far came at or after the previous one
        self._enc_adds: tuple[list, list] | None = None  # set while encoding
        self.capture: list | None = None  # benchmarks: collects the touch arrays folded
        # fusion learned per project (brainbox.learning): sessions whose opening prompt was
        # ranked, the openings still crediting (sid -> [project, {file id: credit row},
        # credited file ids]), each project's credit (float64[N_CHANNELS + 1])
        self.opened: set[int] = set()
        self.openings: dict[int, list] = {}
        self.credit: dict[str, np.ndarray] = {}
        self.learn_params = None  # recall's Params for the opening rankings (None: default)
        self.learn_index = None  # the recall Index those rankings use (made on first use)
        # what the SessionStart block lists besides files (issue 17): each project's pins
        # (brainbox.pins) and its errors not yet followed by a passing rerun
        # (brainbox.openerrors), both folded from the log
        self.pins = Board()
        self.open_errors = OpenErrors()
        # what the PreToolUse advice reads besides the graph (brainbox.advice): edited
        # files, errors after edits, commands' failures and fixes, folded from the log
        self.advice = Advice()
        # the user's corrections of what was injected (brainbox.corrections): each
        # project's excluded files, and the injections marked wrong
        self.corrections = Corrections()
        # the injection policy's statistics (brainbox.injection), from feedback events
        self.policy = Policy()
        # error-fix procedures and workflows (DESIGN §4.9, brainbox.procedures), mined
        # from the fixes `advice` sees, with their outcomes, folded from the log
        self.procedures = Procedures()
        # project identity (issue 17, brainbox.identity): the worktree that last touched
        # each file, when it is not the project's own root (file id -> worktree root), and
        # the old per-worktree keys merged into their repository (brainbox.projectmerge:
        # old key -> key), which later events of an old key fold as
        self.file_worktree: dict[int, str] = {}
        self.aliases: dict[str, str] = {}
        self.needs_rebuild = False  # a merge met a key this state already folded
        # each resource's path term ids (path_terms): derived, extended on demand
        self._path_ptr = np.zeros(256, np.int64)
        self._path_terms = np.zeros(1024, np.int64)
        self._path_rows = 0

    def resource(self, kind: int, project: str, key: str) -> int:
        k = (kind, project, key)
        rid = self.res_index.get(k)
        if rid is not None:
            return rid
        rid = self.n_res
        self.res_index[k] = rid
        self.res_kind.append(kind)
        self.res_project.append(project)
        self.res_key.append(key)
        self.n_res += 1
        if rid >= self.n.shape[0]:
            cap = max(2 * self.n.shape[0], 256)
            for name in ("n", "m", "act", "last", "hist_len", "deg", "streak", "hist", "doclen",
                         "adj_off", "adj_len", "adj_cap", "bl_cache", "rtop"):
                setattr(self, name, grow(getattr(self, name), cap))
            self.rtop_n = grow(self.rtop_n, cap, fill=-1)
            self.kind = grow(self.kind, cap)
        self.kind[rid] = kind
        if kind == FILE:
            self.proj_files.setdefault(project, []).append(rid)
            for t in path_tokens(key):
                self._ctx_add(rid, t)
        return rid

    def session(self, key: str) -> int:
        sid = self.sess_index.get(key)
        if sid is None:
            sid = len(self.sess_index)
            self.sess_index[key] = sid
            if sid >= self.win.shape[0]:
                cap = max(2 * self.win.shape[0], 64)
                self.win = grow(self.win, cap, -1)
                self.win_len = grow(self.win_len, cap)
                self.last3 = grow(self.last3, cap, -1)
                self.last3_len = grow(self.last3_len, cap)
        return sid

    def _term(self, t: str) -> int:
        tid = self.term_index.get(t)
        if tid is None:
            tid = len(self.terms)
            self.term_index[t] = tid
            self.terms.append(t)
        return tid

    def _ctx_add(self, rid: int, term: str) -> None:
        if self._enc_adds is not None:  # encoding: applied later, event by event
            tid = self._term(term)
            self._enc_adds[0].append(rid)
            self._enc_adds[1].append(tid)
            return
        # outside folding (a resource made by a special event): straight into the table
        self.post = K.table_add(self.post, self._term(term), rid, 1.0)
        self.doclen[rid] += 1.0

    def path_terms(self, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Each resource's path term ids as CSR rows `(ptr int64[n_res + 1], terms)`: row r
        is `terms[ptr[r]:ptr[r + 1]]`, a file's path tokens in order (`text.path_tokens`),
        empty for a tool or an error (the session-reference rule, `kernels.policy`); -1 for
        a token that is not a term (none: a file's path tokens are its first context terms).

        Without `rows`, every resource's row (the replay's loop reads any of them): rows of
        new resources are added on each call; views, valid until the next call. With `rows`
        (a recall's session window: the only rows the rule reads), just those rows are
        filled and the others are empty, so a recall tokenises a few paths, not every
        file's (13.7 us a path here: 70 ms for 5,000 files, on each prompt of a hook
        process without the daemon)."""
        n = self.n_res
        if rows is not None:
            wanted = sorted(set(rows.tolist()))
            ids = [self._path_ids(r) for r in wanted]
            lens = np.zeros(n + 1, np.int64)
            for r, x in zip(wanted, ids, strict=True):
                lens[r + 1] = len(x)
            ptr = np.cumsum(lens)
            flat = [x for row in ids for x in row]
            return ptr, np.asarray(flat or [-1], np.int64)
        if self._path_rows < n:
            self._path_ptr = grow(self._path_ptr, n + 1)
            at = int(self._path_ptr[self._path_rows])
            for rid in range(self._path_rows, n):
                ids = self._path_ids(rid)
                self._path_terms = grow(self._path_terms, at + len(ids))
                self._path_terms[at: at + len(ids)] = ids
                at += len(ids)
                self._path_ptr[rid + 1] = at
            self._path_rows = n
        return self._path_ptr[: n + 1], self._path_terms[: max(int(self._path_ptr[n]), 1)]

    def _path_ids(self, rid: int) -> list[int]:
        """Row `rid` of `path_terms`."""
        if self.res_kind[rid] != FILE:
            return []
        ti = self.term_index
        return [ti.get(t, -1) for t in path_tokens(self.res_key[rid])]

    def doc_freq(self, tid: int) -> int:
        """Resources whose context holds the term."""
        return int(self.post.len[tid]) if tid < self.post.off.shape[0] else 0

    def postings(self, tid: int) -> tuple[np.ndarray, np.ndarray]:
        """A context term's postings: (resource ids, tf), in the order they were added."""
        return K.table_rows(self.post, tid)

    learn = True  # credit the openings (brainbox.learning); off in the compiled replay's
    mine = True  # fold open errors, advice and procedures; off in the compiled replay's

    def fold(self, events) -> int:
        """Fold events (dicts from the log, in id order) into the state; returns count."""
        batch, count = [], 0
        for ev in events:
            count += 1
            if self.aliases:
                ev = self.aliased(ev)
            if ev["kind"] in ("maintenance", "feedback"):
                self.apply(self.encode(batch))
                batch = []
                self._clock(ev)
                self._special(ev)
            else:
                batch.append(ev)
        self.apply(self.encode(batch))
        return count

    def aliased(self, ev: dict) -> dict:
        """`ev` with a merged old key replaced by its repository's (the old key kept as
        its worktree, as `projectmerge` rewrites the events before the merge)."""
        new = self.aliases.get(ev.get("project"))
        if new is None:
            return ev
        return dict(ev, project=new, worktree=ev.get("worktree") or ev["project"])

    def _merge(self, meta: dict) -> None:
        """A `merge_project` maintenance event: later events of `from` fold as `into`.
        The log's events before it were rewritten in the same transaction; a state that
        folded any of them under the old key must be rebuilt (`Memory.sync` does)."""
        src, dst = meta.get("from"), meta.get("into")
        if not (isinstance(src, str) and isinstance(dst, str)) or not src or src == dst:
            return
        dst = self.aliases.get(dst, dst)
        for old, new in self.aliases.items():
            if new == src:
                self.aliases[old] = dst
        self.aliases[src] = dst
        if src in self.res_project or self.pins.of(src) or src in self.credit:
            self.needs_rebuild = True

    def _credit_touch(self, sid: int, project: str, fid: int) -> None:
        """A file ``fid`` of ``project`` touched in session ``sid``: credit the project when
        it is one of the first files the session touched after its opening
        (``brainbox.learning``; ``kernels.replay.loop._credit`` is the compiled twin)."""
        op = self.openings.get(sid)
        if op is None or op[0] != project or fid in op[2] or len(op[2]) >= CREDIT_FILES:
            return
        op[2].append(fid)
        credit = self.credit.get(project)
        if credit is None:
            credit = self.credit[project] = np.zeros(N_CHANNELS + 1, np.float64)
        row = op[1].get(fid)
        if row is not None:
            credit[: N_CHANNELS] += row
        credit[N_CHANNELS] += 1.0
        if len(op[2]) >= CREDIT_FILES:
            op[1] = {}  # done crediting: its rows are not needed (nor saved) any more

    def _clock(self, ev: dict) -> float:
        at = float(ev["at"])
        if at < self.clock:
            self.in_order = False
        self.clock = max(self.clock, at)
        if "id" in ev:
            self.watermark = max(self.watermark, int(ev["id"]))
        return at

    def encode(self, events) -> Encoded:
        """Turn events into what folding them changes, without changing the learned arrays.

        Resources, sessions and terms get their ids here (in first-seen order, exactly as
        folding one event after another would give them), the per-session prompt context is
        tracked, and the clock advances; node, edge, window, n-gram and postings arrays are
        untouched until `apply` (or the compiled replay, event by event). Special events
        (maintenance, feedback) are not encoded: `fold` applies them between batches."""
        ev_kind, ev_sess, ev_time, ev_tool = [], [], [], []
        tch_ptr, tch_res = [0], []
        add_ptr, add_rid, add_tid = [0], [], []
        n_res_after, n_terms_after = [], []
        self._enc_adds = (add_rid, add_tid)
        term = self._term
        prompt_ids: dict[int, list[int]] = {}  # a session's prompt terms' ids, once made
        try:
            for ev in events:
                at = self._clock(ev)
                kind = ev["kind"]
                sid = self.session(ev["session"])
                tool = -1
                code = SKIP
                if kind == "prompt":
                    code = PROMPT
                    seen, terms = set(), []
                    for t in tokens(ev.get("prompt")):
                        if t not in seen:
                            seen.add(t)
                            terms.append(t)
                            if len(terms) >= MAX_PROMPT_TERMS:
                                break
                    self.sess_prompt[sid] = terms
                    self.sess_seen[sid] = set()
                    prompt_ids.pop(sid, None)
                elif kind == "tool" and ev.get("tool"):
                    code = TOOL_EVENT
                    project = ev["project"]
                    tool = self.resource(TOOL, "", ev["tool"])
                    tch_res.append(tool)
                    files = ev.get("files") or ()
                    if files:
                        worktree = ev.get("worktree")
                        track = worktree or self.file_worktree
                        args = tokens(ev.get("args")) if ev.get("args") else ()
                        prompt = self.sess_prompt.get(sid)
                        seen = self.sess_seen.setdefault(sid, set()) if prompt else None
                        opening = self.learn and sid in self.openings
                        arg_ids = []
                        for f in files:
                            fid = self.resource(FILE, project, f)
                            tch_res.append(fid)
                            if track:
                                if worktree:
                                    self.file_worktree[fid] = worktree
                                else:
                                    self.file_worktree.pop(fid, None)
                            if opening:
                                self._credit_touch(sid, project, fid)
                            if args:  # term ids made where they first meet a file
                                arg_ids = arg_ids or [term(t) for t in args]
                                add_rid.extend([fid] * len(arg_ids)), add_tid.extend(arg_ids)
                            if prompt and fid not in seen:
                                seen.add(fid)
                                p_ids = prompt_ids.get(sid) or prompt_ids.setdefault(
                                    sid, [term(t) for t in prompt])
                                add_rid.extend([fid] * len(p_ids)), add_tid.extend(p_ids)
                    if ev.get("error_fp"):
                        tch_res.append(self.resource(ERROR, "", ev["error_fp"]))
                    if self.mine:
                        self.open_errors.observe(project, ev["tool"], ev.get("error_fp"),
                                                 ev.get("exit_code"))
                        fix = self.advice.observe(ev["session"], project, ev["tool"],
                                                  ev.get("action"), files, ev.get("error_fp"),
                                                  ev.get("exit_code"))
                        self.procedures.observe(ev["session"], project, ev["tool"],
                                                ev.get("action"), files, ev.get("error_fp"),
                                                ev.get("exit_code"), fix)
                ev_kind.append(code), ev_sess.append(window(self, ev, sid)), ev_time.append(at)
                ev_tool.append(tool), tch_ptr.append(len(tch_res)), add_ptr.append(len(add_rid))
                n_res_after.append(self.n_res), n_terms_after.append(len(self.terms))
        finally:
            self._enc_adds = None
        ints = [np.asarray(x, np.int64) for x in (tch_ptr, tch_res, add_ptr, add_rid, add_tid,
                                                  n_res_after, n_terms_after)]
        return Encoded(np.asarray(ev_kind, np.int8), np.asarray(ev_sess, np.int64),
                       np.asarray(ev_time, np.float64), np.asarray(ev_tool, np.int64), *ints)

    def apply(self, enc: Encoded) -> None:
        """Apply an encoded batch: touches (Hebbian fold), n-grams, context terms."""
        tch = enc.tch_res
        if tch.size:
            counts = np.diff(enc.tch_ptr)
            t_sess = np.repeat(enc.ev_sess, counts)
            t_time = np.repeat(enc.ev_time, counts)
            if self.capture is not None:
                self.capture.append((t_sess, tch, t_time))
            i = 0
            while i < tch.size:
                i = K.fold_touches(
                    t_sess, tch, t_time, i, self.kind, self.n, self.m, self.act, self.last,
                    self.hist, self.hist_len, self.deg, self.win, self.win_len,
                    self.hkeys, self.hslot, self.esrc, self.edst, self.ew, self.ecount,
                    self.etime, self.n_edges, self.rtop, self.rtop_n,
                )
                if i < tch.size:
                    self.grow_edges()
            self.link_adjacency()
            self.edges_changed()
        is_tool = enc.ev_tool >= 0
        if is_tool.any():
            q_sess = enc.ev_sess[is_tool]
            q_tool = enc.ev_tool[is_tool]
            ctx = np.empty(3 * q_tool.size, np.int64)
            nxt = np.empty(3 * q_tool.size, np.int64)
            c = K.ngram_pairs(q_sess, q_tool, self.last3, self.last3_len, ctx, nxt)
            if c:
                self.ctxmap, self.grams = K.ngram_count(self.ctxmap, self.grams, ctx, nxt, c,
                                                        _NO_WEIGHTS)
        if enc.add_rid.size:
            self.post = K.table_add_many(self.post, enc.add_tid, enc.add_rid,
                                         np.ones(enc.add_rid.size))
            np.add.at(self.doclen, enc.add_rid, 1.0)

    def _special(self, ev: dict) -> None:
        meta = ev.get("meta") or {}
        op = meta.get("op")
        at = float(ev["at"])
        if ev["kind"] == "maintenance" and op in (None, "decay"):
            self.decay_to(at, meta.get("floor"))
        elif ev["kind"] == "maintenance" and op in ("pin", "unpin"):
            self.pins.apply(ev, self.watermark)
        elif ev["kind"] == "maintenance" and op == "merge_project":
            self._merge(meta)
        elif op == "resolve":
            self.open_errors.resolve(ev["project"], meta.get("error_fp") or "")
            err = self.res_index.get((ERROR, "", meta.get("error_fp") or ""))
            if err is None:
                err = self.resource(ERROR, "", meta.get("error_fp") or "GENERIC_ERROR|unknown")
            for f in meta.get("files") or ():
                fid = self.resource(FILE, ev["project"], f)
                k = self.edge_index(err, fid, create=True)
                w = float(self.ew[k])
                self.ew[k] = np.float32(min(1.0, w + 0.85 * (1.0 - w)))
                self.rtop_n[err] = -1  # its row list is made again when next needed
                self.ecount[k] += 1
                self.etime[k] = at
            self.edges_changed()
        elif op == "feedback":
            # Suggestions of one recall: used ones reset their streak; an ignored one
            # weakens only the association that produced it (DESIGN §4.8).
            # A suggestion the user marked wrong while it was pending was penalised then.
            project, wronged = ev["project"], self.corrections.wronged
            for d in meta.get("decisions") or ():  # the injection policy's rewards
                self.policy.record(project, d)
            for item in meta.get("items") or ():
                fid = self.res_index.get((FILE, project, item.get("path", "")))
                if fid is None or (not item.get("used") and wrong_key(
                        project, item.get("path", ""), ev.get("session")) in wronged):
                    continue
                self._outcome(project, fid, bool(item.get("used")), item.get("via"))
            self.edges_changed()
        elif op == "quoted":  # a hook quoted a procedure (brainbox.procedures)
            self.procedures.quoted(ev["session"], ev["project"], meta.get("fingerprint"))
        elif op == "correction":  # `brainbox feedback`: brainbox.corrections, brainbox.labels
            self.corrections.apply(ev, self.watermark)
            verdict, files = meta.get("verdict"), ev.get("files") or []
            fid = self.res_index.get((FILE, ev["project"], files[0])) if files else None
            if fid is not None and verdict in ("useful", "wrong"):
                label(self, ev["project"], meta.get("channels"), verdict == "useful")
                if meta.get("penalised", True):
                    self._outcome(ev["project"], fid, verdict == "useful", meta.get("via"))
                    self.edges_changed()

    def _outcome(self, project: str, fid: int, used: bool, src: str | None) -> None:
        """A suggestion of file `fid` used (its ignore streak reset) or ignored (the
        streak grows, and the association from `src` that produced it is weakened:
        `w <- max(0.1, w * 0.9^streak)`; nothing else is touched)."""
        if used:
            self.streak[fid] = 0
            return
        self.streak[fid] += 1
        sid = self.res_index.get((FILE, project, src)) if src else None
        if sid is not None:
            k = self.edge_index(sid, fid)
            if k >= 0:
                factor = 0.9 ** int(self.streak[fid])
                self.ew[k] = np.float32(max(0.1, float(self.ew[k]) * factor))
                self.rtop_n[sid] = -1  # a lighter edge: the row's list is made again

    def _compact(self, keep: np.ndarray) -> None:
        """Drop the edges not in `keep` and renumber what depends on edge indices."""
        ne = int(self.n_edges[0])
        new = K.compact_edges(
            keep, self.esrc, self.edst, self.ew, self.ecount, self.etime, self.deg, ne
        )
        self.n_edges[0] = new
        self.hkeys[:] = -1
        K.rebuild_hash(self.esrc, self.edst, int(new), self.hkeys, self.hslot)
        self.rtop_n[:] = -1  # edges renumbered and weights scaled: lists are made again
        self.rebuild_adjacency()
        self.edges_renumbered()

    def edge_index(self, src: int, dst: int, create: bool = False) -> int:
        k = int(K.find_edge(self.hkeys, self.hslot, src, dst))
        if k >= 0 or not create:
            return k
        if int(self.n_edges[0]) + 50 > self.esrc.shape[0]:
            self.grow_edges()
        k = int(self.n_edges[0])
        self.esrc[k], self.edst[k], self.ew[k] = src, dst, 0.0
        self.ecount[k], self.etime[k] = 0, self.clock
        self.n_edges[0] = k + 1
        self.deg[src] += 1
        self.hkeys[:] = -1
        K.rebuild_hash(self.esrc, self.edst, k + 1, self.hkeys, self.hslot)
        self.link_adjacency()
        return k

    def ngrams(self) -> dict[int, dict[int, int]]:
        """Tool n-gram counts as ``{context code: {next tool: count}}`` (tests, persistence)."""
        cm, g = self.ctxmap, self.grams
        codes = (cm.ea[: cm.n[0]] << 30) | cm.eb[: cm.n[0]]
        out: dict[int, dict[int, int]] = {}
        n = int(g.n[0])
        for cid, nx, cnt in zip(g.ea[:n].tolist(), g.eb[:n].tolist(), g.ev[:n].tolist()):
            out.setdefault(int(codes[cid]), {})[nx] = int(cnt)
        return out

    def docs(self) -> sp.csr_array:
        """Context-term counts, resources x terms (float32 CSR)."""
        t, n = self.post, int(self.post.n[0])
        return sp.coo_array((t.ev[:n].astype(np.float32), (t.eb[:n], t.ea[:n])),
                            shape=(self.n_res, len(self.terms))).tocsr()

    # --- persistence -----------------------------------------------------------------

    def to_arrays(self) -> dict[str, np.ndarray]:
        n, ne, ns = self.n_res, int(self.n_edges[0]), len(self.sess_index)
        docs = self.docs().tocoo()
        ng_ctx, ng_next, ng_cnt = [], [], []
        ngrams = self.ngrams()
        for cx in sorted(ngrams):
            for nx in sorted(ngrams[cx]):
                ng_ctx.append(cx), ng_next.append(nx), ng_cnt.append(ngrams[cx][nx])
        sessions = sorted(self.sess_index, key=self.sess_index.get)
        extra = {
            "sessions": sessions,
            "terms": self.terms,
            "prompt": {str(k): v for k, v in self.sess_prompt.items()},
            "seen": {str(k): sorted(v) for k, v in self.sess_seen.items()},
            "watermark": self.watermark,
            "clock": self.clock,
            "in_order": self.in_order,
            "last_decay": self.last_decay,
            "opened": sorted(self.opened),
            "openings": [[sid, op[0], sorted(op[1].items()), op[2]]
                         for sid, op in self.openings.items()],
            "credit": {p: c.tolist() for p, c in sorted(self.credit.items())},
            "pins": self.pins.to_json(),
            "open_errors": self.open_errors.to_json(),
            "advice": self.advice.to_json(),
            "corrections": self.corrections.to_json(),
            "policy": self.policy.to_json(),
            "procedures": self.procedures.to_json(),
            "file_worktree": sorted(self.file_worktree.items()),
            "aliases": sorted(self.aliases.items()),
        }
        return {
            "node.kind": self.kind[:n], "node.n": self.n[:n], "node.m": self.m[:n],
            "node.act": self.act[:n], "node.last": self.last[:n], "node.hist": self.hist[:n],
            "node.hist_len": self.hist_len[:n], "node.deg": self.deg[:n],
            "node.streak": self.streak[:n],
            "edge.src": self.esrc[:ne], "edge.dst": self.edst[:ne], "edge.w": self.ew[:ne],
            "edge.count": self.ecount[:ne], "edge.time": self.etime[:ne],
            "sess.win": self.win[:ns], "sess.win_len": self.win_len[:ns],
            "sess.last3": self.last3[:ns], "sess.last3_len": self.last3_len[:ns],
            "ngram.ctx": np.asarray(ng_ctx, np.int64), "ngram.next": np.asarray(ng_next, np.int64),
            "ngram.count": np.asarray(ng_cnt, np.int64),
            "ctx.row": docs.row.astype(np.int64), "ctx.col": docs.col.astype(np.int64),
            "ctx.val": docs.data.astype(np.float32),
            "json": np.frombuffer(json.dumps(extra).encode(), np.uint8),
        }

    def resource_rows(self, start: int = 0) -> list[tuple[int, int, str, str]]:
        return [
            (i, self.res_kind[i], self.res_project[i], self.res_key[i])
            for i in range(start, self.n_res)
        ]

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray], resources) -> State:
        s = cls()
        for rid, kind, project, key in resources:
            s.res_index[(kind, project, key)] = rid
            s.res_kind.append(kind), s.res_project.append(project), s.res_key.append(key)
        s.n_res = len(resources)
        for name in ("kind", "n", "m", "act", "last", "hist", "hist_len", "deg", "streak"):
            arr = a[f"node.{name}"]
            setattr(s, name, grow(arr.copy(), max(arr.shape[0], 256)))
        s.doclen = np.zeros(s.n.shape[0])
        s.bl_cache = np.zeros((s.n.shape[0], 3))
        s.rtop = np.zeros((s.n.shape[0], K.ROW_TOP, 3), np.float64)
        s.rtop_n = np.full(s.n.shape[0], -1, np.int64)
        s.kind = s.kind.astype(np.int8)
        extra = json.loads(bytes(a["json"]).decode())
        for key in extra["sessions"]:
            s.session(key)
        ns = len(extra["sessions"])
        s.win[:ns], s.win_len[:ns] = a["sess.win"], a["sess.win_len"]
        s.last3[:ns], s.last3_len[:ns] = a["sess.last3"], a["sess.last3_len"]
        ne = a["edge.src"].shape[0]
        cap = 1024
        while cap < ne + 64:
            cap *= 2
        s.alloc_edges(cap)
        s.esrc[:ne], s.edst[:ne], s.ew[:ne] = a["edge.src"], a["edge.dst"], a["edge.w"]
        s.ecount[:ne], s.etime[:ne] = a["edge.count"], a["edge.time"]
        s.n_edges[0] = ne
        K.rebuild_hash(s.esrc, s.edst, ne, s.hkeys, s.hslot)
        for name in ("adj_off", "adj_len", "adj_cap"):
            setattr(s, name, np.zeros(s.n.shape[0], np.int64))
        s.rebuild_adjacency()
        # contexts get dense ids in sorted order here, not in first-seen order: counts and
        # predictions do not depend on the ids
        n_ng = a["ngram.ctx"].shape[0]
        s.ctxmap, s.grams = K.ngram_count(
            s.ctxmap, s.grams, a["ngram.ctx"].astype(np.int64), a["ngram.next"].astype(np.int64),
            n_ng, a["ngram.count"].astype(np.float64))
        s.terms = list(extra["terms"])
        s.term_index = {t: i for i, t in enumerate(s.terms)}
        # postings by term, then resource: the same table whatever order they were added in
        order = np.lexsort((a["ctx.row"], a["ctx.col"]))
        s.post = K.table_from_entries(a["ctx.col"][order], a["ctx.row"][order],
                                      a["ctx.val"][order].astype(np.float64), len(s.terms))
        np.add.at(s.doclen, a["ctx.row"].astype(np.int64), a["ctx.val"].astype(np.float64))
        for rid in range(s.n_res):
            if s.res_kind[rid] == FILE:
                s.proj_files.setdefault(s.res_project[rid], []).append(rid)
        s.sess_prompt = {int(k): v for k, v in extra["prompt"].items()}
        s.sess_seen = {int(k): set(v) for k, v in extra["seen"].items()}
        s.watermark = extra["watermark"]
        s.clock = extra["clock"]
        s.in_order = bool(extra.get("in_order", False))
        s.last_decay = extra["last_decay"]
        s.opened = set(extra.get("opened", ()))
        s.openings = {sid: [proj, {int(f): row for f, row in rows}, list(done)]
                      for sid, proj, rows, done in extra.get("openings", ())}
        s.credit = {p: np.asarray(c, np.float64) for p, c in extra.get("credit", {}).items()}
        s.pins = Board.from_json(extra.get("pins"))
        s.open_errors = OpenErrors.from_json(extra.get("open_errors"))
        s.advice = Advice.from_json(extra.get("advice"))
        s.corrections = Corrections.from_json(extra.get("corrections"))
        s.policy = Policy.from_json(extra.get("policy"))
        s.procedures = Procedures.from_json(extra.get("procedures"))
        s.file_worktree = {int(f): str(w) for f, w in extra.get("file_worktree", ())}
        s.aliases = {str(a): str(b) for a, b in extra.get("aliases", ())}
        return s
