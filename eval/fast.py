"""The compiled replay: ``replay_series`` with the per-event loop in one kernel per task.

:func:`replay_series_fast` gives the same records as :func:`brainbox.eval.replay.
replay_series` (the Python reference loop; tests/test_replay_fast.py compares them), at a
fraction of the cost: per task, Python normalises the events, folds the description (no
ranking input changes), then *encodes* the task (``State.encode``: resource, session and
term ids, context-term additions, touches) and hands it to
:func:`brainbox.kernels.replay.loop.replay_task`, which ranks P1 (the engine's recall and the
baselines', as before the description), gives the baselines the description, then
probes, scores and folds event by event. The engine state is the production ``State``; the baselines are the
compiled ones (:mod:`brainbox.kernels.replay.baselines`, via :class:`CompiledBaselines`).

A task whose tool events name files of another project than the task's (none in the
development data) runs through the reference loop instead, on the same state.
"""

from __future__ import annotations

import time

import numpy as np
from brainbox.eval.baselines import prompt_terms
from brainbox.eval.baselines_fast import CompiledBaselines
from brainbox.eval.metrics import K_FILES, K_TOOLS
from brainbox.eval.probes import Registry
from brainbox.eval.replay import (
    METHODS,
    T0,
    normalized,
    prompt_event,
    task_start,
)
from brainbox.kernels.replay import baselines as KB
from brainbox.kernels.replay import loop as KR

from brainbox.recall import Params, plan
from brainbox.state import FILE, TOOL, State
from brainbox.text import is_deictic, path_tokens, tokens

PARTS = ("normalize", "p1_and_prompt", "encode", "kernel")
P1_PROBES = ("P1-edit", "P1-read")  # rows of the kernel's P1 output
_WARM = False


class MultiProject(Exception):
    """A task's tool events name files of several projects (the reference loop runs it)."""


def warmup() -> float:
    """Load (or compile, the first time: about a minute) the replay kernel; seconds taken."""
    global _WARM
    if _WARM:
        return 0.0
    from brainbox.eval.loaders.base import Task

    t = time.perf_counter()
    evs = [{"session": "w", "cwd": "/w", "project": "/w", "tool": tool,
            "files": [f"/w/src/{name}.py"], "at": T0 + i}
           for i, (tool, name) in enumerate([("Read", "a"), ("Edit", "b")] * 3)]
    tasks = [Task(id=f"w{j}", repo="/w", order=j, description="fix a", events=evs,
                  gold_read={"src/a.py"}, gold_edit={"src/b.py"}, source="warmup", path="",
                  project="/w") for j in range(2)]
    replay_series_fast(tasks, series="warmup")
    _WARM = True
    return time.perf_counter() - t


class _Growing:
    """An int64 array that grows by doubling; ``view()`` is the used part."""

    def __init__(self, fill: int = 0):
        self.a = np.full(256, fill, np.int64)
        self.n = 0
        self.fill = fill

    def ensure(self, n: int) -> None:
        if n > self.a.shape[0]:
            b = np.full(max(n, 2 * self.a.shape[0]), self.fill, np.int64)
            b[: self.a.shape[0]] = self.a
            self.a = b

    def extend(self, values) -> None:
        self.ensure(self.n + len(values))
        self.a[self.n: self.n + len(values)] = values
        self.n += len(values)


class _ProjectFiles:
    """Each project's files (``State.proj_files``) as an id array and a mask over every
    resource, extended by what each task added instead of rebuilt from the lists."""

    def __init__(self):
        self.files: dict[str, _Growing] = {}
        self.mask: dict[str, np.ndarray] = {}

    def arrays(self, root: str, state: State) -> tuple[np.ndarray, np.ndarray]:
        """(the project's files ascending, bool[n_res] mask of them); views, read only."""
        pf = state.proj_files.get(root, [])
        g = self.files.get(root)
        if g is None or len(pf) < g.n or (g.n and pf[g.n - 1] != g.a[g.n - 1]):
            g = self.files[root] = _Growing()  # (new, or renumbered: start again)
            self.mask.pop(root, None)
        new = pf[g.n:]
        g.extend(new)
        m = self.mask.get(root, np.zeros(0, np.bool_))
        if m.shape[0] < state.n_res:
            grown = np.zeros(max(state.n_res, 2 * m.shape[0]), np.bool_)
            grown[: m.shape[0]] = m
            m = self.mask[root] = grown
        m[new] = True
        return g.a[: g.n], m[: state.n_res]


def _csr(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(rows) + 1, np.int64)
    ptr[1:] = np.cumsum([len(r) for r in rows])
    flat = np.fromiter((x for r in rows for x in r), np.int64, int(ptr[-1]))
    return ptr, flat


def _engine(s: State, linked: np.ndarray) -> KR.Engine:
    n = s.n_res
    return KR.Engine(s.kind, s.n, s.m, s.act, s.last, s.hist, s.hist_len, s.deg, s.win,
                     s.win_len, s.hkeys, s.hslot, s.esrc, s.edst, s.ew, s.ecount, s.etime,
                     s.n_edges, s.adj_off, s.adj_len, s.adj_cap, s.pool_dst, s.pool_e,
                     s.pool_used, linked, s.last3, s.last3_len, s.doclen, s.kind[:n] == TOOL,
                     s.bl_cache, s.rtop, s.rtop_n)


def replay_series_fast(tasks, *, series: str = "", seed: int = 42, ablate=(), t0: float = T0,
                       on_task=None, trace=None) -> dict:
    """As :func:`brainbox.eval.replay.replay_series` (same arguments and result)."""
    if trace is not None:
        from brainbox.eval.replay import replay_series

        return replay_series(tasks, series=series, seed=seed, ablate=ablate, t0=t0,
                             trace=trace, on_task=on_task)
    pl = plan(Params(ablate=frozenset(ablate)))  # recall's policy, no snippet index
    state = State()
    files, tools = Registry(), Registry()
    cb = CompiledBaselines(seed, series, K_FILES, K_TOOLS)
    eng2file, eng2tool = _Growing(-1), _Growing(-1)
    proj = _ProjectFiles()
    perf = time.perf_counter
    t_start, c_start = perf(), time.process_time()
    t_norm = t_p1 = t_enc = t_kernel = t_other = 0.0
    clock = t0
    records, n_events, n_skipped = [], 0, 0
    n_methods = len(METHODS)

    for ti, task in enumerate(tasks):
        t = perf()
        events, skipped = normalized(task)
        t_norm += perf() - t
        n_skipped += skipped
        t = perf()
        nf, nt, root, session, desc, rec, gold = task_start(task, events, files, tools,
                                                            n_methods)
        probes = rec["probes"]
        cb.begin_task(task.id, desc, len(events), nf, nt)
        p1_at = clock  # P1 is ranked in the kernel (replay_task's first call), as now
        pev = prompt_event(session, root, desc)
        pev["at"] = clock
        state.fold([pev])  # changes no ranking input (no touches, resources or terms)
        clock += 1.0
        t_p1 += perf() - t

        # encode the task: engine ids (State.encode), registries, baseline inputs
        t = perf()
        for ev in events:
            ev["at"] = clock
            clock += 1.0
        n_res0, n_terms0, in_order = state.n_res, len(state.terms), state.in_order
        desc_sess, desc_terms = cb.prompt_args(session, pev["prompt"])
        p1_gold = np.full((2, max(len(gold[x]) for x in P1_PROBES)), -1, np.int64)
        for row, name in enumerate(P1_PROBES):
            p1_gold[row, : len(gold[name])] = sorted(gold[name])
        p1_out = np.zeros((2, 1 + n_methods), np.float64)
        enc = state.encode(events)
        E = len(events)
        file_rows, new_rows, fpath_rows, tool_reg, tool_new = [], [], [], [], []
        name_rows, arg_rows, prompt_rows, bl_sess, nf_before, nt_before = [], [], [], [], [], []
        n_touch = n_tool_events = tool_adds = file_adds = 0
        for i, ev in enumerate(events):
            nf_before.append(len(files))
            nt_before.append(len(tools))
            bl_sess.append(cb._sid(ev["session"]))
            fr, nr, pr, names, argt, pt = [], [], [], [], [], []
            tid, new_tool = -1, False
            if enc.ev_kind[i] == 2:  # a tool event
                n_tool_events += 1
                tid, new_tool = tools.add(ev["tool"], ti)
                if new_tool:
                    names = cb._ids(tokens(ev["tool"])).tolist()
                    eng2tool.ensure(state.n_res)
                    eng2tool.a[state.res_index[(TOOL, "", ev["tool"])]] = tid
                argt = cb._ids(tokens(ev["args"])).tolist() if ev.get("args") else []
                for f in ev["files"]:
                    fid, new = files.add((ev["project"], f), ti)
                    fr.append(fid)
                    nr.append(new)
                    if new:
                        toks = cb._ids(path_tokens(f)).tolist()
                        pr.append(toks)
                        rid = state.res_index[(FILE, ev["project"], f)]
                        eng2file.ensure(rid + 1)
                        eng2file.a[rid] = fid
                    else:
                        pr.append([])
                n_touch += len(fr)
                file_adds += sum(len(x) for x in pr) + len(fr) * (len(argt) + 64)
                tool_adds += len(names) + len(argt) + 64
            elif enc.ev_kind[i] == 1:
                pt = cb._ids(prompt_terms(ev.get("prompt"))).tolist()
            file_rows.append(fr), new_rows.append(nr), fpath_rows.extend(pr)
            tool_reg.append(tid), tool_new.append(new_tool)
            name_rows.append(names), arg_rows.append(argt), prompt_rows.append(pt)
        path_ptr, path_terms = state.path_terms()  # for the session-reference rule
        eng2file.ensure(state.n_res)
        eng2tool.ensure(state.n_res)
        projects = {ev["project"] for ev in events if ev["kind"] == "tool" and ev["files"]}
        files_arr, in_proj = proj.arrays(root, state)
        q_toks = tokens(desc)
        qd = list(dict.fromkeys(q_toks))
        q_ids = np.asarray([state.term_index.get(x, -1) for x in qd], np.int64)
        fptr, fflat = _csr(file_rows)
        P = KR.Probes(
            fptr, fflat, np.asarray([x for r in new_rows for x in r], np.bool_),
            *_csr(fpath_rows), np.asarray(tool_reg, np.int64), np.asarray(tool_new, np.bool_),
            *_csr(name_rows), *_csr(arg_rows), *_csr(prompt_rows),
            np.asarray(bl_sess, np.int64), np.asarray(nf_before, np.int64),
            np.asarray(nt_before, np.int64), eng2file.a, eng2tool.a,
            path_ptr, path_terms, q_ids, files_arr,
            in_proj, cb.random_top_all(False, nf), cb.random_top_all(True, nt), p1_gold,
            np.full(1, 2, np.int64), p1_out, desc_terms)
        S = KR.Settings(nf, nt, K_FILES, K_TOOLS, len(set(q_toks)), is_deictic(desc), pl,
                        in_order, 4, n_res0, n_terms0, p1_at, desc_sess)
        cb.state = KB.reserve(cb.state, files=len(files) + 1, tools=len(tools) + 1,
                              sessions=len(cb.sessions) + 1, terms=len(cb.vocab) + 1,
                              tool_events=n_tool_events, file_touches=n_touch,
                              file_term_adds=file_adds, tool_term_adds=tool_adds)
        t_enc += perf() - t

        if projects - {root}:
            raise MultiProject(task.id)

        t = perf()
        out = np.zeros((2, 4 + n_methods), np.float64)
        linked = np.asarray([state.adj_linked], np.int64)
        start = 0
        while True:
            status, start, post, ctxmap, grams = KR.replay_task(
                _engine(state, linked), state.post, state.ctxmap, state.grams, enc, P,
                cb.state, S, start, out)
            state.post, state.ctxmap, state.grams = post, ctxmap, grams
            state.adj_linked = int(linked[0])
            if status == KR.DONE:
                break
            if status == KR.NEED_EDGES:
                state.grow_edges()
                state.link_adjacency()
                linked[0] = state.adj_linked
            elif status == KR.NEED_POOL:
                state.rebuild_adjacency()
                linked[0] = state.adj_linked
            else:
                raise RuntimeError(f"replay kernel status {status}")
        state.edges_changed()
        t_kernel += perf() - t

        t = perf()
        for row, name in enumerate(P1_PROBES):
            r = probes[name]
            r["scored"] += int(p1_out[row, 0])
            for j in range(n_methods):
                r["rr"][j] += float(p1_out[row, 1 + j])
        for name, row in (("P2", 0), ("P3", 1)):
            r = probes[name]
            r["probes"] += int(out[row, 0])
            r["gold"] += int(out[row, 1])
            r["eligible"] += int(out[row, 2])
            r["scored"] += int(out[row, 3])
            for j in range(n_methods):
                r["rr"][j] += float(out[row, 4 + j])
        cb.end_task()
        clock += 1.0  # the gap between tasks
        n_events += E
        records.append(rec)
        t_other += perf() - t
        if on_task:
            on_task(E)

    timers = {"normalize": t_norm, "p1_and_prompt": t_p1, "encode": t_enc,
              "kernel": t_kernel, "bookkeeping": t_other,
              "total": perf() - t_start, "cpu": time.process_time() - c_start}
    return {"series": series, "tasks": records, "events": n_events,
            "skipped_events": n_skipped, "timings": timers}
