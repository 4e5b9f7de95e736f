"""Replay of one repository series without foresight (DESIGN §5, paper §4.3).

:func:`replay_series` is the unit of work: a pure function of (tasks, settings) returning
plain data, so it runs the same in-process, on a process pool or on a Dask worker.

Per series: a fresh :class:`brainbox.state.State` (the in-memory fold *is* the production
code path; SQLite only persists it), one :class:`brainbox.recall.Index`, a
:class:`Baselines` set and one simulated clock. Per task, in PR order:

1. Freeze ``U_t`` (registry sizes, see :mod:`.probes`).
2. P1: ``recall(description, project=root, session=None)`` (through the engine's
   ``rank_ids``, recall without building ``Result`` objects) and every baseline rank before
   anything of the task is folded. Nothing of the task is in memory yet, so every file
   recall can return is in ``U_t`` and ``limit=10`` is exact.
3. Fold a prompt event carrying the description into the task's session (the engine then
   attaches its terms to the files the session touches).
4. For each event: P3 (``predict_tools``) if it is a tool call, P2 (``recall`` with the
   description as query and the task's session) if it names files; then fold the event.
   Rankings are filtered to ``U_t`` and cut to 10 files / 3 tools. To be exact after
   filtering, the engine is asked for ``10 + m`` files (``3 + m`` tools), where ``m``
   counts resources first seen in this task: at most ``m`` results can be filtered out.
5. The task's new resources join the universe for later tasks, and the text its tool
   results showed joins the history-only code index (:mod:`.seen`), which ranks the
   description for recall's snippet channel from the next task on (P1 and P2 pass it as
   ``snippets``; ``--ablate snippet`` builds none).

**Clock.** Recorded timestamps are ignored (some sources have none, and gaps of days
between tasks would let decay-sensitive channels see what the paper's protocol hides).
A series starts at ``T0``; the prompt event of a task and each of its events take the
next second; one extra second separates tasks. ``now=`` of every prediction is the time
the predicted event will be recorded at.

**Timings.** Seconds spent in normalisation, engine recall (P1 + P2), engine tool
prediction (P3), engine fold, baseline ranking and baseline updates are accumulated; the
rest of the loop is "bookkeeping".
"""

from __future__ import annotations

import json
import posixpath
import time

import numpy as np

from brainbox import learning
from brainbox.eval.baselines import METHODS as BASELINE_METHODS
from brainbox.eval.baselines import Baselines
from brainbox.eval.calibration import merge, outcomes
from brainbox.eval.metrics import K_FILES, K_TOOLS
from brainbox.eval.probes import Registry, count_probe, new_task_record
from brainbox.eval.seen import SeenIndex
from brainbox.events import EventError, normalize
from brainbox.kernels.scoring import reciprocal_rank
from brainbox.recall import (
    DEFAULT_FUSION,
    Index,
    Params,
    predict_tools,
    rank,
    rank_ids,
    recall,
    session_context,
)
from brainbox.state import State

METHODS = ("brainbox",) + BASELINE_METHODS
T0 = 1_700_000_000.0
PARTS = ("normalize", "recall", "predict_tools", "fold", "baselines_rank", "baselines_update",
         "snippets")


def prompt_event(session: str, root: str, text: str) -> dict:
    """The prompt event carrying a task's description (``at`` is set by the caller)."""
    ev = normalize({"session": session, "cwd": root, "project": root, "kind": "prompt",
                    "prompt": text or "", "at": T0})
    ev["prompt"] = ev["prompt"] or ""
    return ev


def task_frame(task) -> tuple[list[dict], str, str]:
    """(normalised events, project root, session) of a task, for `fold_task`'s callers."""
    events, _ = normalized(task)
    root = events[0]["project"] if events else task.project or "/testbed"
    return events, root, events[0]["session"] if events else task.id


def fold_task(state, events: list[dict], session: str, root: str, description: str,
              clock: float) -> float:
    """Fold one task into `state` as the Python replay does (`brainbox.learning.fold`):
    its description's prompt at `clock`, then its events a second apart; returns the
    clock after it (two seconds past the last event). For measurements outside the replay
    loop (`eval.localization`, `benchmarks/measure_policy.py`)."""
    from brainbox import learning

    pev = prompt_event(session, root, description or "")
    pev["at"] = clock
    learning.fold(state, [pev])
    for ev in events:
        clock += 1.0
        ev["at"] = clock
        learning.fold(state, [ev])
    return clock + 2.0


def normalize_one(raw: dict, shown: bool = True) -> dict | None:
    """One raw event normalised (None: skipped as malformed); without `shown`, its
    ``shown`` text is left out first (see `normalized`)."""
    if not shown and "shown" in raw:
        raw = {k: v for k, v in raw.items() if k != "shown"}
    try:
        return normalize(raw)
    except EventError:
        return None


def normalized(task, shown: bool = True) -> tuple[list[dict], int]:
    """A task's events normalised, and how many were skipped as malformed. Without
    `shown`, the text tool results showed (`shown`, which only the history-only snippet
    channel reads: eval.seen) is left out before normalising: redacting it took about
    1.5 s of the dev set's 2.5 s of normalisation, on every replay of a series.

    A task from the input cache (:mod:`brainbox.eval.cache`) carries its events
    normalised without `shown` (``normalized_json``: one JSON list, null where skipped),
    and a task the repo view made from it the positions of the events it changed
    (``normalized_patch``, normalised here again): the rest is decoded afresh (the
    replay sets each event's ``at``), equal to normalising it again."""
    pre = None if shown else getattr(task, "normalized_json", None)
    if pre is not None:
        evs = json.loads(pre)
        for i in getattr(task, "normalized_patch", ()):
            evs[i] = normalize_one(task.events[i], False)
    else:
        evs = [normalize_one(raw, shown) for raw in task.events]
    out = [e for e in evs if e is not None]
    return out, len(evs) - len(out)


def normalized_tasks(tasks, shown: bool = True):
    """Each task with its events normalised, in order: ``(index, task, events, skipped,
    seconds)``, ``seconds`` being what the normalisation took (the replay's timer);
    `shown` as `normalized`."""
    perf = time.perf_counter
    for ti, task in enumerate(tasks):
        t = perf()
        events, skipped = normalized(task, shown)
        yield ti, task, events, skipped, perf() - t


_WARM = False


def warmup() -> float:
    """Load the engine's jitted kernels once per process (seconds taken), so that series
    timings measure replay, not compilation or cache loading."""
    global _WARM
    if _WARM:
        return 0.0
    t = time.perf_counter()
    st = State()
    evs = [normalize({"session": "w", "cwd": "/w", "project": "/w", "tool": tool,
                      "files": [f"/w/src/{name}.py"], "at": T0 + i})
           for i, (tool, name) in enumerate([("Read", "a"), ("Edit", "b")] * 3)]
    for ev in evs:
        learning.fold(st, [ev])
        recall(Index(st), "a b", project="/w", session="w", now=T0 + 10)
        predict_tools(st, "w")
    _WARM = True
    return time.perf_counter() - t


def _rr(ranking: list, gold: set) -> float:
    """Reciprocal rank of the first gold item (rankings are already cut to k); 0 if none."""
    return reciprocal_rank(next((i for i, item in enumerate(ranking) if item in gold), -1))


def _score(record: dict, rankings: list, gold: set) -> None:
    """One scored probe: each method's reciprocal rank of ``gold`` added to its sum."""
    record["scored"] += 1
    rr = record["rr"]
    for j, ranking in enumerate(rankings):
        rr[j] += _rr(ranking, gold)


def _engine_files(index, state, query: str, fget, **kw) -> list:
    """``[(registry id, confidence)]`` (any id, unfiltered) of the engine's ranking, best
    first: through ``rank`` (resource ids, no ``Result`` objects), or through ``recall``
    when the module's ``rank_ids`` is None (tests/test_replay.py checks that both give the
    same rankings)."""
    if rank_ids is not None:
        proj, key = state.res_project, state.res_key
        r = rank(index, query, **kw)
        if r is None:
            return []
        top = r.order[: kw["limit"]]
        pairs = ((fget((proj[c], key[c])), p)
                 for c, p in zip(r.cand[top].tolist(), r.conf[top].tolist()))
    else:
        project = kw.get("project")
        pairs = ((fget((project, r.path)), r.ratio) for r in recall(index, query, **kw))
    return [(i, p) for i, p in pairs if i is not None]


def task_start(task, events: list[dict], files: Registry, tools: Registry, n_methods: int):
    """Freeze ``U_t`` and set up a task: ``(nf, nt, root, session, description, record,
    P1 gold)``; P1's coverage is counted, its eligible gold is what ``U_t`` holds."""
    nf, nt = len(files), len(tools)  # U_t: ids below these
    root = events[0]["project"] if events else posixpath.normpath(task.project or "/")
    session = events[0]["session"] if events else task.id
    rec = new_task_record(task, n_methods, len(events), (nf, nt))
    gold = {}
    for p, paths in (("P1-edit", task.gold_edit), ("P1-read", task.gold_read)):
        ids = (files.ids.get((root, g)) for g in paths)
        gold[p] = {i for i in ids if i is not None and i < nf}
        count_probe(rec["probes"][p], len(paths), len(gold[p]))
    return nf, nt, root, session, task.description or "", rec, gold


def replay_series(tasks, *, series: str = "", seed: int = 42, ablate=(), t0: float = T0,
                  fusion: str = DEFAULT_FUSION, min_probability: float | None = None,
                  prior: str | None = None, trace=None, on_task=None,
                  seen: bool = False) -> dict:
    """Replay ``tasks`` (loader :class:`Task` objects, in order) on a fresh memory.

    ``trace(kind, **info)``, when given, sees every frozen universe and every scored
    ranking (tests use it); ``on_task(n_events)`` is called after each task (progress).
    Returns ``{"series", "tasks": [per-task records], "events", "skipped_events",
    "timings": {part: seconds, "total": wall seconds, "cpu": process CPU seconds}}``.
    """
    params = Params(ablate=frozenset(ablate), fusion=fusion, prior=prior)
    if min_probability is not None:  # the relevance floor (None: recall's)
        params.min_probability = min_probability
    state = State()
    state.learn_params = params  # the openings rank as the replay's recall does
    index = Index(state)
    openings = []
    files, tools = Registry(), Registry()
    fget, tget = files.ids.get, tools.ids.get
    base = Baselines(seed, series, K_FILES, K_TOOLS)
    perf = time.perf_counter
    t_start, c_start = perf(), time.process_time()
    t_norm = t_recall = t_pred = t_fold = t_brank = t_bupd = 0.0
    clock = t0
    records, n_events, n_skipped = [], 0, 0
    n_methods = len(METHODS)
    cal = []  # per task: the engine's predictions' (context, confidence, hit)
    # the history-only snippet channel, when asked for (`--seen-snippets`, eval.seen)
    seen = SeenIndex() if seen and "snippet" not in params.ablate else None
    t_snip = 0.0

    for ti, task, events, skipped, seconds in normalized_tasks(tasks, seen is not None):
        t_norm += seconds
        n_skipped += skipped
        nf, nt, root, session, desc, rec, gold = task_start(task, events, files, tools,
                                                            n_methods)
        t = perf()
        snips = seen.snippets(root, desc, state) if seen is not None else None  # earlier tasks' text
        t_snip += perf() - t
        probes = rec["probes"]
        p2, p3 = probes["P2"], probes["P3"]
        cal_rows, ev_fids = [], [[] for _ in events]  # calibration: predictions, touches
        if trace:
            trace("universe", task=ti, files=set(files.keys[:nf]), tools=set(tools.keys[:nt]))
        t = perf()
        base.begin_task(task.id, desc, len(events), nf, nt)
        t_bupd += perf() - t
        if gold["P1-edit"] or gold["P1-read"]:
            t = perf()
            mine = [(i, p) for i, p in _engine_files(
                index, state, desc, fget, project=root, session=None, limit=K_FILES,
                now=clock, params=params, snippets=snips) if i < nf][:K_FILES]
            t1 = perf()
            bl = base.rank_files(nf, 0)
            t_brank += perf() - t1
            t_recall += t1 - t
            cal_rows += [(-1, i, p, 0) for i, p in mine]
            rankings = [[i for i, _ in mine]] + bl
            for p in ("P1-edit", "P1-read"):
                if gold[p]:
                    _score(probes[p], rankings, gold[p])
                    if trace:
                        trace("rank", task=ti, step=-1, probe=p, rankings=rankings, gold=gold[p])

        pev = prompt_event(session, root, desc)
        pev["at"] = clock
        t = perf()
        opens = state.sess_index.get(session, -1) not in state.opened
        learning.fold(state, [pev])
        t1 = perf()
        op = state.openings.get(state.sess_index[session]) if opens else None
        op_rows = dict(op[1]) if op is not None else {}  # emptied once it has credited all
        base.prompt(session, pev["prompt"])
        t_fold += t1 - t
        t_bupd += perf() - t1
        clock += 1.0

        for step, ev in enumerate(events):
            ev["at"] = clock
            is_tool = ev["kind"] == "tool" and bool(ev["tool"])
            if is_tool:
                sess, efiles = ev["session"], ev["files"]
                tid = tget(ev["tool"])
                p3["probes"] += 1
                p3["gold"] += 1
                if tid is not None and tid < nt:
                    p3["eligible"] += 1
                    t = perf()
                    pred = predict_tools(state, sess, k=K_TOOLS + len(tools) - nt)
                    t1 = perf()
                    bl = base.rank_tools(nt, step + 1)
                    t_brank += perf() - t1
                    t_pred += t1 - t
                    mine = [i for i in (tget(name) for name, _ in pred) if i is not None and i < nt]
                    rankings = [mine[:K_TOOLS]] + bl
                    _score(p3, rankings, {tid})
                    if trace:
                        trace("rank", task=ti, step=step, probe="P3", rankings=rankings,
                              gold={tid})
                if efiles:
                    proj = ev["project"]
                    g = {i for i in (fget((proj, f)) for f in efiles) if i is not None and i < nf}
                    p2["probes"] += 1
                    p2["gold"] += 1
                    if g:
                        p2["eligible"] += 1
                        t = perf()
                        mine = [(i, p) for i, p in _engine_files(
                            index, state, desc, fget, project=proj, session=sess,
                            limit=K_FILES + len(files) - nf, now=clock, params=params,
                            snippets=snips) if i < nf][:K_FILES]
                        t1 = perf()
                        bl = base.rank_files(nf, step + 1)
                        t_brank += perf() - t1
                        t_recall += t1 - t
                        ctx = session_context(index, proj, sess) == "session"
                        cal_rows += [(step, i, p, ctx) for i, p in mine]
                        rankings = [[i for i, _ in mine]] + bl
                        _score(p2, rankings, g)
                        if trace:
                            trace("rank", task=ti, step=step, probe="P2", rankings=rankings,
                                  gold=g)
            t = perf()
            learning.fold(state, [ev])
            t1 = perf()
            t_fold += t1 - t
            if is_tool:
                tid, new_tool = tools.add(ev["tool"], ti)
                proj = ev["project"]
                triples = [(*files.add((proj, f), ti), f) for f in efiles]
                ev_fids[step] = [tr[0] for tr in triples]
                t1 = perf()
                base.tool_event(sess, tid, ev["tool"], new_tool, triples, ev["args"])
                t_bupd += perf() - t1
            elif ev["kind"] == "prompt":
                base.prompt(ev["session"], ev["prompt"])
                t_bupd += perf() - t1
            clock += 1.0
        cal.append(outcomes(np.asarray(cal_rows, np.float64), ev_fids))
        if op is not None:  # this task's opening (brainbox.learning), as registry ids
            def reg(fid):
                return fget((state.res_project[fid], state.res_key[fid]))
            openings.append({"task": ti, "rows": sorted([float(reg(f)), *row]
                                                        for f, row in op_rows.items()),
                             "credited": sorted(reg(f) for f in op[2])})
        t = perf()
        base.end_task()
        t_bupd += perf() - t
        clock += 1.0  # the gap between tasks
        n_events += len(events)
        records.append(rec)
        if seen is not None:  # this task's views, for the tasks after it only
            t = perf()
            seen.add(events)
            t_snip += perf() - t
        if on_task:
            on_task(len(events))
    if seen is not None:
        seen.close()

    timers = {"normalize": t_norm, "recall": t_recall, "predict_tools": t_pred, "fold": t_fold,
              "baselines_rank": t_brank, "baselines_update": t_bupd, "snippets": t_snip,
              "total": perf() - t_start, "cpu": time.process_time() - c_start}
    return {"series": series, "tasks": records, "events": n_events,
            "skipped_events": n_skipped, "timings": timers, "calibration": merge(cal),
            "openings": openings}
