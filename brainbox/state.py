"""The materialised state: resources, node arrays, the association graph, session windows,
tool n-grams and context terms, folded forward from the event log.

Event sourcing (DESIGN §3): the log is the truth; `State.fold(events)` advances the state
and the watermark; folding in any number of batches gives bit-identical arrays to one
fold of the whole log, because every update is sequential in event order and the kernels
keep their own per-session windows in the state.

Edges live in growable arrays (src, dst, float32 weight, count, last update) with an
open-addressing hash on (src, dst); the CSR matrices `W`, `C` (counts) and `T` (times)
are derived from them on demand in canonical (row, column) order.

Choices written down here:
- An event touches its resources in the order tool, files, error (DESIGN §4.1 leaves the
  in-event order open).
- A tool or error resource is shared across projects (project ""); a file belongs to one.
- Context terms of a file: its path tokens (once, when first seen), the terms of the
  session's current prompt (once per file per prompt) and the tool-argument terms of each
  event that touches it (e.g. a grep pattern).
- `decay` and feedback arrive as events (`maintenance`, `feedback`), so they replay.
"""

from __future__ import annotations

import json
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from brainbox import kernels as K
from brainbox.text import path_tokens, tokens

FILE, TOOL, ERROR = 0, 1, 2
KIND_NAMES = {FILE: "file", TOOL: "tool", ERROR: "error"}
WINDOW = 25
HIST = 50
MAX_PROMPT_TERMS = 64
PENDING = 1024  # context-term additions buffered before consolidating into the CSC matrix
DAY = 86400.0


_EMPTY_I = np.zeros(0, np.int64)
_EMPTY_F = np.zeros(0, np.float64)


def _grow(arr: np.ndarray, n: int, fill=0) -> np.ndarray:
    if arr.shape[0] >= n:
        return arr
    cap = max(n, 2 * arr.shape[0], 16)
    out = np.full((cap,) + arr.shape[1:], fill, dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return out


class Graph(NamedTuple):
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    order: np.ndarray
    n_edges: int
    n_res: int


class State:
    def __init__(self):
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
        # sessions
        self.sess_index: dict[str, int] = {}
        self.win = np.zeros((0, WINDOW), np.int64)
        self.win_len = np.zeros(0, np.int64)
        self.last3 = np.zeros((0, 3), np.int64)
        self.last3_len = np.zeros(0, np.int64)
        self.sess_prompt: dict[int, list[int]] = {}
        self.sess_seen: dict[int, set[int]] = {}
        # edges
        self.n_edges = np.zeros(1, np.int64)
        self._alloc_edges(1024)
        # tool n-grams: context code -> {tool id: count}
        self.ngrams: dict[int, dict[int, int]] = {}
        # context terms
        self.term_index: dict[str, int] = {}
        self.terms: list[str] = []
        self._ctx = sp.csc_array((0, 0), dtype=np.float32)  # consolidated, resources x terms
        self._pend_r = np.zeros(PENDING, np.int64)  # context terms not yet consolidated
        self._pend_c = np.zeros(PENDING, np.int64)
        self._pend_n = 0
        self._pend_by_term: dict[int, dict[int, int]] = {}
        self.doclen = np.zeros(0, np.float64)  # context-term count per resource
        self.proj_files: dict[str, list[int]] = {}
        # clocks
        self.watermark = 0
        self.clock = 0.0
        self.last_decay = None
        self._graph = None
        self._csr_key = np.zeros(0, np.int64)  # sorted src * N_KEY + dst of linked edges
        self._csr_order = np.zeros(0, np.int64)  # edge index at each CSR position
        self._csr_linked = 0  # edges 0.._csr_linked-1 are in the CSR structure
        self.capture: list | None = None  # benchmarks: collects the touch arrays folded

    # --- allocation ------------------------------------------------------------------

    def _alloc_edges(self, cap: int) -> None:
        self.esrc = np.zeros(cap, np.int64)
        self.edst = np.zeros(cap, np.int64)
        self.ew = np.zeros(cap, np.float32)
        self.ecount = np.zeros(cap, np.int64)
        self.etime = np.zeros(cap, np.float64)
        self.hkeys = np.full(2 * cap, -1, np.int64)
        self.hslot = np.zeros(2 * cap, np.int64)

    def _grow_edges(self) -> None:
        cap = 2 * self.esrc.shape[0]
        for name in ("esrc", "edst", "ew", "ecount", "etime"):
            setattr(self, name, _grow(getattr(self, name), cap))
        self.hkeys = np.full(2 * cap, -1, np.int64)
        self.hslot = np.zeros(2 * cap, np.int64)
        K.rebuild_hash(self.esrc, self.edst, int(self.n_edges[0]), self.hkeys, self.hslot)

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
            for name in ("n", "m", "act", "last", "hist_len", "deg", "streak", "hist", "doclen"):
                setattr(self, name, _grow(getattr(self, name), cap))
            self.kind = _grow(self.kind, cap)
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
                self.win = _grow(self.win, cap, -1)
                self.win_len = _grow(self.win_len, cap)
                self.last3 = _grow(self.last3, cap, -1)
                self.last3_len = _grow(self.last3_len, cap)
        return sid

    def _term(self, t: str) -> int:
        tid = self.term_index.get(t)
        if tid is None:
            tid = len(self.terms)
            self.term_index[t] = tid
            self.terms.append(t)
        return tid

    def _ctx_add(self, rid: int, term: str) -> None:
        if self._pend_n == PENDING:
            self._consolidate()
        tid = self._term(term)
        self._pend_r[self._pend_n] = rid
        self._pend_c[self._pend_n] = tid
        self._pend_n += 1
        d = self._pend_by_term.get(tid)
        if d is None:
            self._pend_by_term[tid] = {rid: 1}
        else:
            d[rid] = d.get(rid, 0) + 1
        self.doclen[rid] += 1.0

    def _consolidate(self) -> None:
        n = self._pend_n
        shape = (self.n_res, len(self.terms))
        base = self._ctx
        base.resize(shape)
        if n:
            add = sp.coo_array(
                (np.ones(n, np.float32), (self._pend_r[:n].copy(), self._pend_c[:n].copy())),
                shape=shape,
            ).tocsc()
            base = (base + add).tocsc()
            base.sum_duplicates()
            base.sort_indices()
        self._ctx = base
        self._pend_n = 0
        self._pend_by_term.clear()

    def doc_freq(self, tid: int) -> int:
        """Resources whose context holds the term (an upper bound while additions pend)."""
        csc = self._ctx
        n = int(csc.indptr[tid + 1] - csc.indptr[tid]) if tid < csc.shape[1] else 0
        return n + len(self._pend_by_term.get(tid, ()))

    def postings(self, tid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """A context term's postings: (consolidated rows, tf) and (pending rows, tf); the
        two row sets may overlap, and the caller sums them."""
        csc = self._ctx
        if tid < csc.shape[1]:
            lo, hi = csc.indptr[tid], csc.indptr[tid + 1]
            rows, tf = csc.indices[lo:hi], csc.data[lo:hi]
        else:
            rows, tf = _EMPTY_I, _EMPTY_F
        extra = self._pend_by_term.get(tid)
        if not extra:
            return rows, tf, _EMPTY_I, _EMPTY_F
        return (rows, tf, np.fromiter(extra.keys(), np.int64, len(extra)),
                np.fromiter(extra.values(), np.float64, len(extra)))

    def fold(self, events) -> int:
        """Fold events (dicts from the log, in id order) into the state; returns count."""
        ts, tr, tt = [], [], []  # touches: session, resource, time
        qs, qt = [], []  # tool stream: session, tool
        count = 0
        for ev in events:
            count += 1
            kind = ev["kind"]
            at = float(ev["at"])
            if self.last_decay is None:
                self.last_decay = at
            self.clock = max(self.clock, at)
            if "id" in ev:
                self.watermark = max(self.watermark, int(ev["id"]))
            if kind in ("maintenance", "feedback"):
                self._flush(ts, tr, tt, qs, qt)
                self._special(ev)
                continue
            sid = self.session(ev["session"])
            if kind == "prompt":
                seen, terms = set(), []
                for t in tokens(ev.get("prompt")):
                    if t not in seen:
                        seen.add(t)
                        terms.append(t)
                        if len(terms) >= MAX_PROMPT_TERMS:
                            break
                self.sess_prompt[sid] = terms
                self.sess_seen[sid] = set()
                continue
            if kind != "tool" or not ev.get("tool"):
                continue
            project = ev["project"]
            tool = self.resource(TOOL, "", ev["tool"])
            ts.append(sid), tr.append(tool), tt.append(at)
            qs.append(sid), qt.append(tool)
            files = ev.get("files") or ()
            if files:
                args = tokens(ev.get("args")) if ev.get("args") else ()
                prompt = self.sess_prompt.get(sid)
                seen = self.sess_seen.setdefault(sid, set()) if prompt else None
                for f in files:
                    fid = self.resource(FILE, project, f)
                    ts.append(sid), tr.append(fid), tt.append(at)
                    for t in args:
                        self._ctx_add(fid, t)
                    if prompt and fid not in seen:
                        seen.add(fid)
                        for t in prompt:
                            self._ctx_add(fid, t)
            if ev.get("error_fp"):
                eid = self.resource(ERROR, "", ev["error_fp"])
                ts.append(sid), tr.append(eid), tt.append(at)
        self._flush(ts, tr, tt, qs, qt)
        return count

    def _flush(self, ts, tr, tt, qs, qt) -> None:
        if ts:
            t_sess = np.asarray(ts, np.int64)
            t_res = np.asarray(tr, np.int64)
            t_time = np.asarray(tt, np.float64)
            if self.capture is not None:
                self.capture.append((t_sess, t_res, t_time))
            i = 0
            while i < len(t_res):
                i = K.fold_touches(
                    t_sess, t_res, t_time, i, self.kind, self.n, self.m, self.act, self.last,
                    self.hist, self.hist_len, self.deg, self.win, self.win_len,
                    self.hkeys, self.hslot, self.esrc, self.edst, self.ew, self.ecount,
                    self.etime, self.n_edges,
                )
                if i < len(t_res):
                    self._grow_edges()
            ts.clear(), tr.clear(), tt.clear()
            self._graph = None
        if qs:
            q_sess = np.asarray(qs, np.int64)
            q_tool = np.asarray(qt, np.int64)
            ctx = np.empty(3 * len(q_tool), np.int64)
            nxt = np.empty(3 * len(q_tool), np.int64)
            c = K.ngram_pairs(q_sess, q_tool, self.last3, self.last3_len, ctx, nxt)
            if 0 < c <= 256:
                for cx, nx in zip(ctx[:c].tolist(), nxt[:c].tolist()):
                    d = self.ngrams.setdefault(cx, {})
                    d[nx] = d.get(nx, 0) + 1
            elif c:
                pairs = np.stack([ctx[:c], nxt[:c]], axis=1)
                uniq, counts = np.unique(pairs, axis=0, return_counts=True)
                for (cx, nx), cnt in zip(uniq.tolist(), counts.tolist()):
                    d = self.ngrams.setdefault(cx, {})
                    d[nx] = d.get(nx, 0) + cnt
            qs.clear(), qt.clear()

    def _special(self, ev: dict) -> None:
        meta = ev.get("meta") or {}
        op = meta.get("op")
        at = float(ev["at"])
        if ev["kind"] == "maintenance" and op in (None, "decay"):
            days = (at - (self.last_decay if self.last_decay is not None else at)) / DAY
            self.last_decay = at
            if days > 0:
                self.decay(days)
        elif op == "resolve":
            err = self.res_index.get((ERROR, "", meta.get("error_fp") or ""))
            if err is None:
                err = self.resource(ERROR, "", meta.get("error_fp") or "GENERIC_ERROR|unknown")
            for f in meta.get("files") or ():
                fid = self.resource(FILE, ev["project"], f)
                k = self.edge_index(err, fid, create=True)
                w = float(self.ew[k])
                self.ew[k] = np.float32(min(1.0, w + 0.85 * (1.0 - w)))
                self.ecount[k] += 1
                self.etime[k] = at
            self._graph = None
        elif op == "feedback":
            # Suggestions of one recall: used ones reset their streak; an ignored one
            # weakens only the association that produced it (DESIGN §4.8).
            project = ev["project"]
            for item in meta.get("items") or ():
                fid = self.res_index.get((FILE, project, item.get("path", "")))
                if fid is None:
                    continue
                if item.get("used"):
                    self.streak[fid] = 0
                    continue
                self.streak[fid] += 1
                src = item.get("via")
                sid = self.res_index.get((FILE, project, src)) if src else None
                if sid is not None:
                    k = self.edge_index(sid, fid)
                    if k >= 0:
                        factor = 0.9 ** int(self.streak[fid])
                        self.ew[k] = np.float32(max(0.1, float(self.ew[k]) * factor))
            self._graph = None

    def decay(self, days: float) -> None:
        ne = int(self.n_edges[0])
        keep = np.zeros(self.ew.shape[0], np.bool_)
        K.decay_state(self.act[: self.n_res], self.m[: self.n_res], self.ew, ne, days, keep)
        new = K.compact_edges(
            keep, self.esrc, self.edst, self.ew, self.ecount, self.etime, self.deg, ne
        )
        self.n_edges[0] = new
        self.hkeys[:] = -1
        K.rebuild_hash(self.esrc, self.edst, int(new), self.hkeys, self.hslot)
        self._graph = None
        self._csr_linked = -1

    def edge_index(self, src: int, dst: int, create: bool = False) -> int:
        k = int(K.find_edge(self.hkeys, self.hslot, src, dst))
        if k >= 0 or not create:
            return k
        if int(self.n_edges[0]) + 50 > self.esrc.shape[0]:
            self._grow_edges()
        k = int(self.n_edges[0])
        self.esrc[k], self.edst[k], self.ew[k] = src, dst, 0.0
        self.ecount[k], self.etime[k] = 0, self.clock
        self.n_edges[0] = k + 1
        self.deg[src] += 1
        self.hkeys[:] = -1
        K.rebuild_hash(self.esrc, self.edst, k + 1, self.hkeys, self.hslot)
        return k

    # --- derived matrices ------------------------------------------------------------

    def graph(self) -> "Graph":
        """W as CSR arrays (indptr, int32 indices, float32 data) in canonical order, with
        `order` (the edge index of each entry).

        Incremental: edges created since the last call are merged into the sorted key array
        (O(E) memmove, no sort of the whole graph); weights are re-gathered when they changed.
        Pruning reorders edges, so `decay` forces a full rebuild.
        """
        ne = int(self.n_edges[0])
        if self._graph is not None and self._graph.n_edges == ne and self._graph.n_res == self.n_res:
            return self._graph
        if self._csr_linked < 0 or self._csr_linked > ne:
            self._csr_linked = 0
            self._csr_key = np.zeros(0, np.int64)
            self._csr_order = np.zeros(0, np.int64)
        if ne > self._csr_linked:
            new = np.arange(self._csr_linked, ne, dtype=np.int64)
            keys = self.esrc[new] * K.N_KEY + self.edst[new]
            srt = np.argsort(keys, kind="stable")
            keys, new = keys[srt], new[srt]
            pos = np.searchsorted(self._csr_key, keys)
            self._csr_key = np.insert(self._csr_key, pos, keys)
            self._csr_order = np.insert(self._csr_order, pos, new)
            self._csr_linked = ne
        order = self._csr_order
        indptr = np.searchsorted(self._csr_key, np.arange(self.n_res + 1, dtype=np.int64) * K.N_KEY)
        self._graph = Graph(indptr, self.edst[order].astype(np.int32), self.ew[order], order,
                            ne, self.n_res)
        return self._graph

    def matrices(self) -> dict[str, sp.csr_array]:
        """W (weights), C (co-access counts) and T (last update) as scipy CSR arrays."""
        g = self.graph()
        shape = (self.n_res, self.n_res)
        same = (g.indices, g.indptr)
        return {
            "W": sp.csr_array((g.data, *same), shape=shape),
            "C": sp.csr_array((self.ecount[g.order], *same), shape=shape),
            "T": sp.csr_array((self.etime[g.order], *same), shape=shape),
        }

    def docs(self) -> sp.csr_array:
        """Context-term counts, resources x terms (float32 CSR), all additions included."""
        self._consolidate()
        return self._ctx.tocsr()

    # --- persistence -----------------------------------------------------------------

    def to_arrays(self) -> dict[str, np.ndarray]:
        n, ne, ns = self.n_res, int(self.n_edges[0]), len(self.sess_index)
        docs = self.docs().tocoo()
        ng_ctx, ng_next, ng_cnt = [], [], []
        for cx in sorted(self.ngrams):
            for nx in sorted(self.ngrams[cx]):
                ng_ctx.append(cx), ng_next.append(nx), ng_cnt.append(self.ngrams[cx][nx])
        sessions = sorted(self.sess_index, key=self.sess_index.get)
        extra = {
            "sessions": sessions,
            "terms": self.terms,
            "prompt": {str(k): v for k, v in self.sess_prompt.items()},
            "seen": {str(k): sorted(v) for k, v in self.sess_seen.items()},
            "watermark": self.watermark,
            "clock": self.clock,
            "last_decay": self.last_decay,
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
    def from_arrays(cls, a: dict[str, np.ndarray], resources) -> "State":
        s = cls()
        for rid, kind, project, key in resources:
            s.res_index[(kind, project, key)] = rid
            s.res_kind.append(kind), s.res_project.append(project), s.res_key.append(key)
        s.n_res = len(resources)
        for name in ("kind", "n", "m", "act", "last", "hist", "hist_len", "deg", "streak"):
            arr = a[f"node.{name}"]
            setattr(s, name, _grow(arr.copy(), max(arr.shape[0], 256)))
        s.doclen = np.zeros(s.n.shape[0])
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
        s._alloc_edges(cap)
        s.esrc[:ne], s.edst[:ne], s.ew[:ne] = a["edge.src"], a["edge.dst"], a["edge.w"]
        s.ecount[:ne], s.etime[:ne] = a["edge.count"], a["edge.time"]
        s.n_edges[0] = ne
        K.rebuild_hash(s.esrc, s.edst, ne, s.hkeys, s.hslot)
        for cx, nx, cnt in zip(a["ngram.ctx"].tolist(), a["ngram.next"].tolist(),
                               a["ngram.count"].tolist()):
            s.ngrams.setdefault(cx, {})[nx] = cnt
        s.terms = list(extra["terms"])
        s.term_index = {t: i for i, t in enumerate(s.terms)}
        s._ctx = sp.coo_array(
            (a["ctx.val"], (a["ctx.row"], a["ctx.col"])), shape=(s.n_res, len(s.terms))
        ).tocsc()
        s._ctx.sort_indices()
        s.doclen[: s.n_res] = np.asarray(s._ctx.sum(axis=1)).ravel()
        for rid in range(s.n_res):
            if s.res_kind[rid] == FILE:
                s.proj_files.setdefault(s.res_project[rid], []).append(rid)
        s.sess_prompt = {int(k): v for k, v in extra["prompt"].items()}
        s.sess_seen = {int(k): set(v) for k, v in extra["seen"].items()}
        s.watermark = extra["watermark"]
        s.clock = extra["clock"]
        s.last_decay = extra["last_decay"]
        return s
