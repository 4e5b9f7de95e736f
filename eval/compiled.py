"""The compiled replay: ``replay_series`` with the per-event loop in one kernel per task, and
the compiled baselines behind the reference's API.

:func:`replay_series_fast` gives the same records as :func:`brainbox.eval.replay.
replay_series` (the Python reference loop; tests/test_replay_fast.py compares them), at a
fraction of the cost: per task, Python normalises the events, folds the description (no
ranking input changes), then *encodes* the task (``State.encode``: resource, session and
term ids, context-term additions, touches) and hands it to
:func:`brainbox.kernels.replay.loop.replay_task`, which ranks P1 (the engine's recall and the
baselines', as before the description), gives the baselines the description, then
probes, scores and folds event by event. The engine state is the production ``State``; the
baselines are the compiled ones (:mod:`brainbox.kernels.replay.baselines`, via
:class:`CompiledBaselines`).

Tasks that span projects: the compiled loop ranks a task's files among its own project's
(one candidate mask per task). A task whose tool events name files of another project than
the task's (none in the development data) is not run by it: :func:`replay_series_fast`
raises :class:`MultiProject` once it has encoded that task, before its loop runs (the
state, part-way through the series, is dropped), and the replay's runner
(``brainbox.eval.runner``) then replays the whole series, from its first task, with the
reference loop. The records are the reference loop's, only slower; the timings say so
(they carry the reference loop's parts, not :data:`PARTS`).

:class:`CompiledBaselines` has exactly the API and the rankings of
:class:`brainbox.eval.baselines.Baselines` (the reference): it maps strings to dense ids
(terms with :func:`brainbox.text.tokens` / :func:`~brainbox.text.path_tokens` exactly as the
reference does, sessions in first-seen order), grows the kernel state when a kernel reports
a capacity short, and calls the kernels; the random baseline is the reference's
:class:`~brainbox.eval.baselines.RandomRanks`. It is the parity harness of the kernels and a
drop-in replacement for ``Baselines`` in :func:`brainbox.eval.replay.replay_series`.
:func:`replay_calls` yields the calls ``replay_series`` makes on its baselines for a list of
tasks (with rankings before every tool event, a superset of the replay's), so any baselines
object can be driven the same way (tests, benchmarks).
"""

from __future__ import annotations

import contextlib
import gc
import time

import numpy as np

from brainbox import prior as fusion_prior
from brainbox.eval.baselines import RandomRanks, prompt_terms
from brainbox.eval.calibration import merge, outcomes_csr
from brainbox.eval.metrics import K_FILES, K_TOOLS
from brainbox.eval.probes import Registry
from brainbox.eval.replay import (
    METHODS,
    T0,
    normalized,
    prompt_event,
    task_start,
)
from brainbox.eval.seen import SeenIndex
from brainbox.kernels.policy import CREDIT_DEPTH, N_CHANNELS
from brainbox.kernels.replay import baselines as KB
from brainbox.kernels.replay import loop as KR
from brainbox.recall import DEFAULT_FUSION, MIN_SUPPORT, Params, plan, snippet_arrays
from brainbox.state import FILE, PROMPT, TOOL, TOOL_EVENT, State
from brainbox.text import path_tokens, tokens

PARTS = ("normalize", "p1_and_prompt", "encode", "kernel")
P1_PROBES = ("P1-edit", "P1-read")  # rows of the kernel's P1 output
_WARM = False


OPEN_ROWS = N_CHANNELS * CREDIT_DEPTH  # an opening's credit rows, at most


class MultiProject(Exception):
    """A task's tool events name files of several projects: the compiled loop does not run
    it (module docstring; the runner replays the series with the reference loop)."""


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
        self.generation = 0  # counts the starts afresh (what was derived from them is stale)

    def arrays(self, root: str, state: State) -> tuple[np.ndarray, np.ndarray]:
        """(the project's files ascending, bool[n_res] mask of them); views, read only."""
        pf = state.proj_files.get(root, [])
        g = self.files.get(root)
        if g is None or len(pf) < g.n or (g.n and pf[g.n - 1] != g.a[g.n - 1]):
            g = self.files[root] = _Growing()  # (new, or renumbered: start again)
            self.mask.pop(root, None)
            self.generation += 1
        new = pf[g.n:]
        g.extend(new)
        m = self.mask.get(root, np.zeros(0, np.bool_))
        if m.shape[0] < state.n_res:
            grown = np.zeros(max(state.n_res, 2 * m.shape[0]), np.bool_)
            grown[: m.shape[0]] = m
            m = self.mask[root] = grown
        m[new] = True
        return g.a[: g.n], m[: state.n_res]


class _RecurrenceCache:
    """The replay kernel's recurrence cache (``KR.recurrence_row``), kept across a
    series' tasks: rows of ``KR.REC_SLOTS`` sources over the project's resources, widened
    (zeros: those resources are new) as the project's mask grows, and started afresh for
    another project or mask (``key``)."""

    def __init__(self):
        self.key = None
        self.ids = np.full(KR.REC_SLOTS, -1, np.int64)
        self.age = np.full(KR.REC_SLOTS, -1, np.int64)
        self.dense = np.zeros((KR.REC_SLOTS, 0), np.float64)

    def arrays(self, key, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if key != self.key or width < self.dense.shape[1]:
            self.__init__()
            self.key = key
        if self.dense.shape[1] < width:
            grown = np.zeros((KR.REC_SLOTS, width), np.float64)
            grown[:, : self.dense.shape[1]] = self.dense
            self.dense = grown
        return self.ids, self.age, self.dense


def _register(reg: Registry, key, task: int, eng2reg: _Growing, rid: int) -> int:
    """The registry id of ``key``, new in task ``task``, mapped from its engine id ``rid``."""
    i, _ = reg.add(key, task)
    eng2reg.ensure(rid + 1)
    eng2reg.a[rid] = i
    return i


def _csr(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(rows) + 1, np.int64)
    ptr[1:] = np.cumsum([len(r) for r in rows])
    flat = np.fromiter((x for r in rows for x in r), np.int64, int(ptr[-1]))
    return ptr, flat


def engine_arrays(s: State, linked: np.ndarray) -> KR.Engine:
    """The loop's view of the engine state ``s`` (its arrays, not copies); ``linked``
    int64[1] holds ``s.adj_linked``, which the loop advances."""
    n = s.n_res
    return KR.Engine(s.kind, s.n, s.m, s.act, s.last, s.hist, s.hist_len, s.deg, s.win,
                     s.win_len, s.hkeys, s.hslot, s.esrc, s.edst, s.ew, s.ecount, s.etime,
                     s.n_edges, s.adj_off, s.adj_len, s.adj_cap, s.pool_dst, s.pool_e,
                     s.pool_used, linked, s.last3, s.last3_len, s.doclen, s.kind[:n] == TOOL,
                     s.bl_cache, s.rtop, s.rtop_n)


@contextlib.contextmanager
def gc_paused():
    """Python's automatic garbage collection off for the block, as it was after. A series
    holds its tasks' events (a million dicts at 1M events), which every full collection
    walks: 4-5% of a series' time here (perf), to free a few cycles (7 objects after a
    30k-event series). Objects without cycles are freed by reference counting regardless."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def replay_series_fast(tasks, **kw) -> dict:
    """As :func:`brainbox.eval.replay.replay_series` (same arguments and result), with the
    garbage collector paused (:func:`gc_paused`)."""
    with gc_paused():
        return _replay_series_fast(tasks, **kw)


def _replay_series_fast(tasks, *, series: str = "", seed: int = 42, ablate=(), t0: float = T0,
                        fusion: str = DEFAULT_FUSION, min_probability: float | None = None,
                        prior: str | None = None, on_task=None, trace=None,
                        seen: bool = False) -> dict:
    if trace is not None:
        from brainbox.eval.replay import replay_series

        return replay_series(tasks, series=series, seed=seed, ablate=ablate, t0=t0,
                             fusion=fusion, min_probability=min_probability, prior=prior,
                             trace=trace, on_task=on_task, seen=seen)
    params = Params(ablate=frozenset(ablate), fusion=fusion, prior=prior)
    if min_probability is not None:  # the relevance floor (None: recall's)
        params.min_probability = min_probability
    pl = plan(params)  # recall's policy, no snippet index (also the openings')
    pl_snip = plan(params, snippets=True)  # with the history-only snippet channel
    seen = SeenIndex() if seen and "snippet" not in params.ablate else None
    state = State()
    state.learn = False  # the kernel ranks the openings and credits (brainbox.learning)
    state.mine = False  # no open errors, advice or procedures: the replay reads none
    credits, openings = {}, []
    files, tools = Registry(), Registry()
    cb = CompiledBaselines(seed, series, K_FILES, K_TOOLS)
    eng2file, eng2tool = _Growing(-1), _Growing(-1)
    proj = _ProjectFiles()
    rec_cache = _RecurrenceCache()
    perf = time.perf_counter
    t_start, c_start = perf(), time.process_time()
    t_norm = t_p1 = t_enc = t_kernel = t_other = 0.0
    clock = t0
    records, n_events, n_skipped = [], 0, 0
    n_methods = len(METHODS)
    cal = []  # per task: the engine's predictions' (context, confidence, hit)

    for ti, task in enumerate(tasks):
        t = perf()
        events, skipped = normalized(task, seen is not None)
        t_norm += perf() - t
        n_skipped += skipped
        t = perf()
        nf, nt, root, session, desc, rec, gold = task_start(task, events, files, tools,
                                                            n_methods)
        probes = rec["probes"]
        snips = seen.snippets(root, desc, state) if seen is not None else None  # earlier tasks' text
        snip_ids, snip_scores = snippet_arrays(state, root, snips)
        cb.begin_task(task.id, desc, len(events), nf, nt)
        p1_at = clock  # P1 is ranked in the kernel (replay_task's first call), as now
        pev = prompt_event(session, root, desc)
        pev["at"] = clock
        first = state.sess_index.get(session, -1) not in state.opened  # its opening
        state.fold([pev])  # changes no ranking input (no touches, resources or terms)
        open_sess = state.sess_index[session] if first else -1
        state.opened.add(state.sess_index[session])
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
        cal_out = np.zeros(((len(events) + 1) * K_FILES, 4), np.float64)
        cal_n = np.zeros(1, np.int64)
        credit = credits.setdefault(root, fusion_prior.new_credit())
        enc = state.encode(events)
        E = len(events)
        # the probes' and baselines' inputs, built flat (CSR) with the registries' and the
        # baselines' maps read as locals: this loop ran at about 3 us an event
        f_ids, f_keys, t_ids, t_keys = files.ids, files.keys, tools.ids, tools.keys
        sess_get = cb.sessions.get
        term_list = cb.term_list
        fptr, fflat, fnew, fpath_rows = [0], [], [], []
        tool_reg, tool_new, bl_sess, nf_before, nt_before = [], [], [], [], []
        name_ptr, name_flat, arg_ptr, arg_flat, prompt_ptr, prompt_flat = [0], [], [0], [], [0], []
        n_touch = n_tool_events = tool_adds = file_adds = 0
        for code, ev in zip(enc.ev_kind.tolist(), events):
            nf_before.append(len(f_keys))
            nt_before.append(len(t_keys))
            sess = ev["session"]
            b = sess_get(sess)
            bl_sess.append(b if b is not None else cb.session_id(sess))
            tid, new_tool = -1, False
            if code == TOOL_EVENT:
                n_tool_events += 1
                name = ev["tool"]
                tid = t_ids.get(name)
                if tid is None:
                    tid = _register(tools, name, ti, eng2tool, state.res_index[(TOOL, "", name)])
                    new_tool = True
                    names = term_list(tokens(name))
                    name_flat.extend(names)
                    tool_adds += len(names)
                args = ev.get("args")
                n_args = 0
                if args:
                    argt = term_list(tokens(args))
                    arg_flat.extend(argt)
                    n_args = len(argt)
                project = ev["project"]
                n_f = 0
                for f in ev["files"]:
                    key = (project, f)
                    fid = f_ids.get(key)
                    if fid is None:
                        fid = _register(files, key, ti, eng2file,
                                        state.res_index[(FILE, project, f)])
                        toks = term_list(path_tokens(f))
                        fpath_rows.append(toks)
                        file_adds += len(toks)
                        fnew.append(True)
                    else:
                        fpath_rows.append(())
                        fnew.append(False)
                    fflat.append(fid)
                    n_f += 1
                n_touch += n_f
                file_adds += n_f * (n_args + 64)
                tool_adds += n_args + 64
            elif code == PROMPT:
                prompt_flat.extend(term_list(prompt_terms(ev.get("prompt"))))
            fptr.append(len(fflat))
            name_ptr.append(len(name_flat))
            arg_ptr.append(len(arg_flat))
            prompt_ptr.append(len(prompt_flat))
            tool_reg.append(tid), tool_new.append(new_tool)
        path_ptr, path_terms = state.path_terms()  # the lexical path bonus
        eng2file.ensure(state.n_res)
        eng2tool.ensure(state.n_res)
        projects = {ev["project"] for ev in events if ev["kind"] == "tool" and ev["files"]}
        files_arr, in_proj = proj.arrays(root, state)
        q_toks = tokens(desc)
        qd = list(dict.fromkeys(q_toks))
        q_ids = np.asarray([state.term_index.get(x, -1) for x in qd], np.int64)
        i64 = np.int64
        fptr, fflat = np.asarray(fptr, i64), np.asarray(fflat, i64)
        P = KR.Probes(
            fptr, fflat, np.asarray(fnew, np.bool_),
            *_csr(fpath_rows), np.asarray(tool_reg, np.int64), np.asarray(tool_new, np.bool_),
            np.asarray(name_ptr, i64), np.asarray(name_flat, i64),
            np.asarray(arg_ptr, i64), np.asarray(arg_flat, i64),
            np.asarray(prompt_ptr, i64), np.asarray(prompt_flat, i64),
            np.asarray(bl_sess, np.int64), np.asarray(nf_before, np.int64),
            np.asarray(nt_before, np.int64), eng2file.a, eng2tool.a,
            path_ptr, path_terms, q_ids, files_arr,
            in_proj, cb.random_top_all(False, nf), cb.random_top_all(True, nt), snip_ids,
            snip_scores, p1_gold,
            np.full(1, 2, np.int64), p1_out, desc_terms, cal_out, cal_n, credit,
            np.zeros((OPEN_ROWS, 1 + N_CHANNELS), np.float64), np.zeros(1, np.int64),
            np.full(in_proj.shape[0], -1, np.int64), np.zeros(in_proj.shape[0], np.bool_),
            np.full(1, -1, np.int64),
            *rec_cache.arrays((root, proj.generation), in_proj.shape[0]))
        S = KR.Settings(nf, nt, K_FILES, K_TOOLS, len(set(q_toks)), pl_snip if snips else pl,
                        in_order, MIN_SUPPORT, n_res0, n_terms0, p1_at, desc_sess, open_sess,
                        pl)
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
                engine_arrays(state, linked), state.post, state.ctxmap, state.grams, enc, P,
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
        cal.append(outcomes_csr(cal_out[: cal_n[0]], fptr, fflat))
        if P.open_cred[0] >= 0:
            n_open = int(P.open_n[0])
            openings.append({"task": ti, "rows": sorted(P.open_out[:n_open].tolist()),
                             "credited": sorted([
                int(eng2file.a[r]) for r in np.flatnonzero(P.open_mark).tolist()])})
        cb.end_task()
        clock += 1.0  # the gap between tasks
        n_events += E
        records.append(rec)
        if seen is not None:  # this task's views, for the tasks after it only
            seen.add(events)
        t_other += perf() - t
        if on_task:
            on_task(E)

    if seen is not None:
        seen.close()
    timers = {"normalize": t_norm, "p1_and_prompt": t_p1, "encode": t_enc,
              "kernel": t_kernel, "bookkeeping": t_other,
              "total": perf() - t_start, "cpu": time.process_time() - c_start}
    return {"series": series, "tasks": records, "events": n_events,
            "skipped_events": n_skipped, "timings": timers, "calibration": merge(cal),
            "openings": openings}


# --- the compiled baselines

_EMPTY = np.zeros(0, np.int64)
_NOFILES = np.zeros(0, np.bool_)
_PTR0 = np.zeros(1, np.int64)


class CompiledBaselines:
    """All file and tool baselines of one repository series, on the compiled kernels.

    Same constructor and methods as :class:`brainbox.eval.baselines.Baselines`.
    ``self.state`` is the kernel state; ``self.vocab`` / ``self.sessions`` the id maps.
    """

    def __init__(self, seed: int, series: str, k_files: int = 10, k_tools: int = 3):
        self.k_files, self.k_tools = k_files, k_tools
        self.state = KB.new_state()
        self.vocab: dict[str, int] = {}
        self.sessions: dict[str, int] = {}
        self.f_rand = RandomRanks(seed, series, 0)
        self.t_rand = RandomRanks(seed, series, 1)
        self._fout = np.empty((4, max(k_files, 1)), np.int64)
        self._tout = np.empty((4, max(k_tools, 1)), np.int64)
        self._query = None
        self._qtoks: list[str] = []

    # -- ids
    def term_ids(self, toks) -> np.ndarray:
        """:meth:`term_list` as int64."""
        return np.array(self.term_list(toks), np.int64) if toks else _EMPTY

    def term_list(self, toks) -> list[int]:
        """Dense ids of the terms ``toks`` (a new term gets the next id)."""
        v = self.vocab
        get = v.get
        out = []
        for t in toks:
            i = get(t)
            if i is None:
                i = v[t] = len(v)
            out.append(i)
        return out

    def session_id(self, session: str) -> int:
        """Dense id of ``session`` (first-seen order)."""
        i = self.sessions.get(session)
        if i is None:
            i = self.sessions[session] = len(self.sessions)
        return i

    def _run(self, fn, *args) -> None:
        """Call kernel ``fn(state, *args)``, growing the state while it reports a need."""
        st = fn(self.state, *args)
        while st:
            self.state = KB.grow_for_status(self.state, st)
            st = fn(self.state, *args)

    def random_top_all(self, tools: bool, n_universe: int) -> np.ndarray:
        """``RandomRanks.top_all`` of the file (or tool) random baseline for the current
        task, drawn by the kernel (``random_top_all``); rows with too few distinct draws
        take the reference's exact fallback."""
        rr = self.t_rand if tools else self.f_rand
        out = np.empty((rr.steps + 1, rr.k), np.int64)
        bad = KB.random_top_all(np.uint64(rr.key), rr.k + rr.EXTRA, n_universe, out)
        for step in bad.tolist():
            r = rr.top(step, n_universe)
            out[step, : len(r)] = r
        return out

    # -- the Baselines API
    def begin_task(self, task_id: str, query: str, steps: int, n_files: int,
                   n_tools: int) -> None:
        self._run(KB.begin_task, self.begin_args(query), n_files, n_tools)
        self.f_rand.begin_task(task_id, steps, self.k_files, n_files)
        self.t_rand.begin_task(task_id, steps, self.k_tools, n_tools)

    def begin_args(self, query: str) -> np.ndarray:
        """``begin_task``'s query term ids (registers them; remembers the query, whose
        prompt reuses its tokens: ``prompt_args``)."""
        self._query = query
        self._qtoks = tokens(query)
        return self.term_ids(list(dict.fromkeys(self._qtoks)))

    def prompt(self, session: str, text: str | None) -> None:
        self._run(KB.prompt, *self.prompt_args(session, text))

    def prompt_args(self, session: str, text: str | None) -> tuple[int, np.ndarray]:
        """``prompt``'s (session row, term ids) for a prompt (registers both)."""
        toks = self._qtoks if text == self._query else None
        return self.session_id(session), self.term_ids(prompt_terms(text, toks))

    def tool_event(self, session: str, tool: int, tool_name: str, new_tool: bool,
                   files: list[tuple[int, bool, str]], args: str | None) -> None:
        """Record one tool call: ``files`` are (id, first seen now, path) triples."""
        self._run(KB.tool_event, *self.tool_args(session, tool, tool_name, new_tool, files,
                                                 args))

    def tool_args(self, session: str, tool: int, tool_name: str, new_tool: bool,
                  files: list[tuple[int, bool, str]], args: str | None) -> tuple:
        """``tool_event``'s kernel arguments after the state (registers the ids: argument
        terms, name terms, path terms, then the session, as the kernel call always did)."""
        arg = self.term_ids(tokens(args)) if args else _EMPTY
        name = self.term_ids(tokens(tool_name)) if new_tool else _EMPTY
        if files:
            fids = np.array([f for f, _, _ in files], np.int64)
            fnew = np.array([bool(n) for _, n, _ in files], np.bool_)
            ptr = [0]
            pts: list[str] = []
            for _, new, path in files:
                if new:
                    pts.extend(path_tokens(path))
                ptr.append(len(pts))
            ptr = np.array(ptr, np.int64)
            pterms = self.term_ids(pts)
        else:
            fids, fnew, ptr, pterms = _EMPTY, _NOFILES, _PTR0, _EMPTY
        return (self.session_id(session), int(tool), bool(new_tool), name, fids, fnew, ptr,
                pterms, arg)

    def end_task(self) -> None:
        self._run(KB.end_task)

    def rank_files(self, n_universe: int, step: int) -> list[list[int]]:
        """Rankings in the order of ``brainbox.eval.baselines.METHODS``."""
        out = self._fout
        lens = KB.rank_files(self.state, n_universe, self.k_files, out)
        res = [out[r, : lens[r]].tolist() for r in range(4)]
        res.append(self.f_rand.top(step, n_universe))
        return res

    def rank_tools(self, n_universe: int, step: int) -> list[list[int]]:
        out = self._tout
        lens = KB.rank_tools(self.state, n_universe, self.k_tools, out)
        res = [out[r, : lens[r]].tolist() for r in range(4)]
        res.append(self.t_rand.top(step, n_universe))
        return res


def replay_calls(tasks):
    """The baselines calls of :func:`brainbox.eval.replay.replay_series` on ``tasks`` (in
    order), as ``(method name, args)`` pairs: ``begin_task``, a P1 ``rank_files``, the
    description's ``prompt``, then per event ``rank_tools`` and (when it names files)
    ``rank_files`` before every tool event, and the event (``tool_event`` or ``prompt``);
    finally ``end_task``. Ids come from registries as in the replay; every ranking uses
    the task's frozen universe. The replay ranks only when a probe is eligible; this
    ranks at every tool event."""
    files, tools = Registry(), Registry()
    for ti, task in enumerate(tasks):
        events, _ = normalized(task)
        nf, nt, root, session, desc, _, _ = task_start(task, events, files, tools,
                                                       len(METHODS))
        yield "begin_task", (task.id, desc, len(events), nf, nt)
        yield "rank_files", (nf, 0)
        yield "prompt", (session, prompt_event(session, root, desc)["prompt"])
        for step, ev in enumerate(events):
            if ev["kind"] == "tool" and ev["tool"]:
                yield "rank_tools", (nt, step + 1)
                if ev["files"]:
                    yield "rank_files", (nf, step + 1)
                tid, new_tool = tools.add(ev["tool"], ti)
                proj = ev["project"]
                triples = [(*files.add((proj, f), ti), f) for f in ev["files"]]
                yield "tool_event", (ev["session"], tid, ev["tool"], new_tool, triples,
                                     ev["args"])
            elif ev["kind"] == "prompt":
                yield "prompt", (ev["session"], ev["prompt"])
        yield "end_task", ()


def run_calls(base, calls) -> list:
    """Apply ``calls`` (from :func:`replay_calls`) to ``base``; the rankings, in order."""
    out = []
    for name, args in calls:
        r = getattr(base, name)(*args)
        if r is not None:
            out.append(r)
    return out
