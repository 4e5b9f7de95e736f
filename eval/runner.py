"""Running a whole replay: sources -> series -> executor -> merged results (the JSON).

Repository series are independent, so they are the unit of parallel work:

- ``workers=1``: in this process (the default; fine-grained progress).
- ``workers=N``: a ``ProcessPoolExecutor`` with the *spawn* start method (the same on every
  platform, and safe with numba's threads); sources are loaded on the pool too. Series are
  submitted largest first, which shortens the tail of the schedule.
- ``scheduler="tcp://host:port"``: a Dask cluster (``distributed.Client``; the optional
  ``dask`` extra). Sources are read here and the tasks shipped, so workers need no access
  to the data (a synthetic series ships only its generator settings: each worker
  generates its own repository). ``scheduler="local:N"``: a ``LocalCluster`` of N
  single-threaded worker processes started for the run.

:func:`run_series` is the top-level, picklable worker function. Whatever runs it, results
are merged in a canonical order (source, then repository), and the replay of a series
depends only on its tasks and the settings, so the JSON is identical, apart from
``timings``, for any number of workers and either executor.

**Views and ablations.** One job is one series with every replay the settings ask for:
each view of ``--files`` (:mod:`brainbox.eval.views`; a series' repo view that equals its
all view, as the synthetic workload's always does, reuses the all view's records), each
with the full model and, with ``--ablations``, once more per channel removed. A job per
series rather than per replay ships a series' tasks once and warms up once, and the
schedule's tail stays short: the development set (25 series, the largest 19% of the
events) with ``--files both --ablations --workers 2`` ran its 350 replays (14 per series)
in 22.6 s: 34.1 s of series time on 2 workers, 23.1 s wall with loading. The replays line up task by task, so an ablation's effect is paired over
the same trajectories (:func:`brainbox.eval.metrics.ablation`). ``timings.events``
counts every event replayed (views and ablations), so events per second stay the
replay's throughput whatever is asked for.
"""

from __future__ import annotations

import gc
import os
import queue as queue_mod
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, as_completed, wait
from pathlib import Path

import numpy as np

from brainbox import BrainboxError
from brainbox.eval import calibration as C
from brainbox.eval import sources as S
from brainbox.eval import views as V
from brainbox.eval.compiled import PARTS as FAST_PARTS
from brainbox.eval.compiled import MultiProject, replay_series_fast
from brainbox.eval.compiled import warmup as fast_warmup
from brainbox.eval.metrics import K_FILES, K_TOOLS, PROBES, ablation, coverage, evaluate
from brainbox.eval.replay import METHODS, PARTS, T0, replay_series, warmup
from brainbox.eval.seen import has_shown

SCHEMA = "brainbox.replay/2"  # 2: views (--files) and ablations (--ablations)


class Progress:
    """``\\r`` progress on stderr: tasks done, events, events/s. No dependency.

    The rate leaves out the processes' warm-up (kernels loaded or compiled), reported with
    ``update(warm=seconds)``: summed for one process, the longest for parallel workers,
    which warm up side by side."""

    def __init__(self, total_tasks: int | None, enabled: bool = True, stream=None,
                 interval: float = 0.25):
        self.total, self.enabled = total_tasks, enabled
        self.stream = stream or sys.stderr
        self.tasks = self.events = 0
        self.t0 = self.last = time.perf_counter()
        self.interval = interval
        self.parallel = False
        self.warm_sum = self.warm_max = 0.0

    def update(self, tasks: int = 0, events: int = 0, force: bool = False,
               warm: float = 0.0) -> None:
        self.tasks += tasks
        self.events += events
        self.warm_sum += warm
        self.warm_max = max(self.warm_max, warm)
        now = time.perf_counter()
        if self.enabled and (force or now - self.last >= self.interval):
            self.last = now
            warm_s = self.warm_max if self.parallel else self.warm_sum
            dt = max(now - self.t0 - warm_s, 1e-9)
            total = f"/{self.total}" if self.total else ""
            self.stream.write(f"\rreplay: {self.tasks}{total} tasks, {self.events} events, "
                              f"{self.events / dt:,.0f} events/s, {now - self.t0:.1f} s ")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.update(force=True)
            self.stream.write("\n")
            self.stream.flush()


ENGINES = ("compiled", "python")  # the compiled replay loop, or its Python reference
_QUEUE = None  # progress queue of a pool worker (set by _init_worker)


def _init_worker(queue) -> None:
    global _QUEUE
    _QUEUE = queue


def run_series(payload: dict, settings: dict, queue=None) -> dict:
    """Replay one series described by ``payload`` (picklable; runs on any executor).
    Progress goes to ``queue`` (``put((tasks, events))``), or to a pool worker's queue.

    The cyclic garbage collector runs 70x less often meanwhile: the series allocates
    millions of small acyclic objects (events, ids), and the default threshold made
    collection about 6% of a synthetic replay's time (perf, 30k events)."""
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], 50_000), *threshold[1:])
    try:
        return _run_series(payload, settings, queue)
    finally:
        gc.set_threshold(*threshold)


def _run_series(payload: dict, settings: dict, queue=None) -> dict:
    """Every replay of one series the settings ask for: each view of ``settings["files"]``
    (:data:`brainbox.eval.views.FILES`), each with the full model and, for each channel of
    ``settings["ablations"]``, the model without it. A view that equals the all view (no
    agent file: :mod:`brainbox.eval.views`) reuses that view's records instead of replaying
    them again (the replay is a pure function of tasks and settings)."""
    synthetic = payload["kind"] == "synthetic"
    queue = queue if queue is not None else _QUEUE
    on_task = (lambda n: queue.put((1, n))) if queue is not None else None
    compiled = settings.get("engine", "compiled") == "compiled"
    warm = _warm(compiled, live=None if queue is None or isinstance(queue, _Callback) else False)
    if queue is not None and warm:
        queue.put((0, 0, False, warm))
    views = V.FILES[settings.get("files", "all")]
    variants = [None] + list(settings.get("ablations") or ())
    series = f"{payload['source']}:{payload['repo']}"

    def tasks_of(view):
        """What gives the view's tasks afresh (a list, or the synthetic stream), and
        whether the view equals the all view."""
        if synthetic:
            def make():
                tasks = S.synthetic_tasks(payload["spec"], payload["project"])
                return tasks if view == "all" else V.creates_nothing(tasks)
            return make, True
        if view == "all":
            return (lambda: payload["tasks"]), True
        tasks = V.repo_view(payload["tasks"])
        return (lambda: tasks), all(a is b for a, b in zip(tasks, payload["tasks"]))

    runs: dict = {}
    cal: dict = {}  # view -> the full model's predictions (calibration.merge)
    opens: dict = {}  # view -> the full model's opening rankings (brainbox.learning)
    timings: dict = {}
    replayed = {"replays": 0, "reused": 0, "tasks": 0, "events": 0}
    out = None
    for view in sorted(views, key=V.VIEWS.index):  # the all view first: repo may reuse it
        make, same = tasks_of(view)
        runs[view] = {}
        for channel in variants:
            key = channel or "full"
            if channel == "snippet" and not synthetic and "full" in runs[view] and \
                    not has_shown(make()):
                # no task showed a file's text: the channel never ranks, the records are
                # the full model's (eval.seen)
                runs[view][key] = runs[view]["full"]
                replayed["reused"] += 1
                replayed["tasks"] += len(runs[view][key])
                if queue is not None:
                    queue.put((len(runs[view][key]), 0))
                continue
            if view != "all" and same and "all" in runs:
                runs[view][key] = runs["all"][key]
                if channel is None:
                    cal[view] = cal["all"]
                    opens[view] = opens["all"]
                replayed["reused"] += 1
                replayed["tasks"] += len(runs[view][key])
                if queue is not None:
                    queue.put((len(runs[view][key]), 0))
                continue
            ablate = sorted(set(settings["ablate"]) | ({channel} if channel else set()))
            out = _replay(make, compiled, {"series": series, "seed": settings["seed"],
                                           "ablate": ablate, "t0": T0, "on_task": on_task,
                                           "fusion": settings["fusion"],
                                           "min_probability": settings.get("min_probability"),
                                           "prior": payload["repo"],
                                           "seen": bool(settings.get("seen_snippets"))})
            runs[view][key] = out["tasks"]
            if channel is None:
                cal[view] = out["calibration"]
                opens[view] = out["openings"]
            replayed["replays"] += 1
            replayed["tasks"] += len(out["tasks"])
            replayed["events"] += out["events"]
            for part, v in out["timings"].items():
                timings[part] = timings.get(part, 0.0) + v
    timings["warmup"] = warm
    return {"source": payload["source"], "repo": payload["repo"], "series": series,
            "events": out["events"], "skipped_events": out["skipped_events"],
            "runs": runs, "calibration": cal, "openings": opens, "replayed": replayed,
            "timings": timings}


def _replay(make, compiled: bool, kw: dict) -> dict:
    """One replay of the tasks ``make()`` gives: the compiled loop, or the reference."""
    if not compiled:
        return replay_series(make(), **kw)
    try:
        return replay_series_fast(make(), **kw)
    except MultiProject:  # a task spans projects: the reference loop, from the start
        return replay_series(make(), **kw)


def _warm(compiled: bool, live=None) -> float:
    """Load (the first time: compile, saying so on stderr; a live line on a terminal, which a
    pool worker's stderr is not given) the kernels this process replays with; seconds taken,
    which the replay rate leaves out (the first replay of the trial spent 338 s of 349
    compiling, then reported "1 events/s")."""
    from brainbox import jitmode

    report = (jitmode.CompileReport(live=live, label="replay")
              if jitmode.mode() == "numba" else None)
    if report is not None:
        report.install()
    try:
        return warmup() + (fast_warmup() if compiled else 0.0)
    finally:
        if report is not None:
            report.close()


def warm_steps() -> list:
    """The replay loop's warm-up step for ``brainbox.warm.warmup(extra=...)``."""
    return [("replay", lambda: warmup() + fast_warmup())]


def _load(args):
    label, path, fmt, cache = args
    return (label, *S.load_input(label, path, fmt, cache))


class _Local:
    """In-process execution with the executors' interface (futures are results)."""

    name, workers = "local", 1

    def __init__(self, bar):
        self.bar = bar

    def load(self, jobs):
        yield from map(_load, jobs)

    def submit(self, payload, settings):
        return (payload, settings)  # run when results are asked for, in submission order

    def results(self, futures):
        for payload, settings in futures:
            yield run_series(payload, settings, _Callback(self.bar))

    def close(self):
        pass


class _Pool(_Local):
    """A spawn process pool; progress comes back through a multiprocessing queue."""

    name = "process"

    def __init__(self, bar, workers: int):
        import multiprocessing as mp

        super().__init__(bar)
        ctx = mp.get_context("spawn")
        self.queue = ctx.Queue()
        self.workers = workers
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                        initializer=_init_worker, initargs=(self.queue,))

    def load(self, jobs):
        futs = [self.pool.submit(_load, j) for j in jobs]
        for f in as_completed(futs):
            yield f.result()

    def submit(self, payload, settings):
        return self.pool.submit(run_series, payload, settings)

    def _drain(self):
        while True:
            try:
                self.bar.update(*self.queue.get_nowait())
            except queue_mod.Empty:
                return

    def results(self, futures):
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            self._drain()
            for f in done:
                yield f.result()
        self._drain()

    def close(self):
        self.pool.shutdown(cancel_futures=True)
        self.queue.close()


def local_workers(address: str) -> int | None:
    """N of ``--scheduler local:N`` (a LocalCluster of N worker processes), None for an
    address of a running scheduler; a malformed ``local:`` exits with one line."""
    if not address.startswith("local:"):
        return None
    n = address[len("local:"):]
    if not n.isdigit() or not 1 <= int(n) <= 256:
        raise BrainboxError(f"--scheduler {address}: expected local:N with N workers, 1 to 256")
    return int(n)


class _Dask(_Local):
    """A Dask cluster: sources are read here, series run on the workers. ``local:N``
    starts a ``distributed.LocalCluster`` of N single-threaded worker processes on
    loopback for the run (no dashboard), closed with the executor."""

    name, workers = "dask", None

    def __init__(self, bar, address: str):
        n = local_workers(address)
        try:
            from distributed import Client, LocalCluster
        except ImportError as exc:
            raise BrainboxError("--scheduler needs the 'dask' extra: "
                                "pip install 'brainbox[dask]'") from exc
        super().__init__(bar)
        self.cluster = None
        if n is not None:
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                        host="127.0.0.1", dashboard_address=None)
            self.workers = n
            address = self.cluster.scheduler_address
        self.client = Client(address)

    def submit(self, payload, settings):
        return self.client.submit(run_series, payload, settings, pure=False)

    def results(self, futures):
        from distributed import as_completed as dask_completed

        for f in dask_completed(list(futures)):
            res = f.result()
            self.bar.update(res["replayed"]["tasks"], res["replayed"]["events"])
            yield res

    def close(self):
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def source_commit() -> tuple[str, bool | None]:
    """(git HEAD of the package's repository or "unknown", working tree dirty?)."""
    import brainbox

    repo = Path(brainbox.__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=False,
                              capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return "unknown", None
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain",
                                "--untracked-files=no"], check=False, capture_output=True,
                               text=True, timeout=10)
        return head.stdout.strip(), bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return "unknown", None


def run(sources=(), *, fmt: str = "auto", repos: int | None = None,
        max_tasks_per_repo: int | None = None, split: str = "all", seed: int = 42,
        bootstrap: int = 1000, workers: int = 1, scheduler: str | None = None, ablate=(),
        synthetic: int | None = None, synthetic_projects: int = 1, synthetic_seed: int = 7,
        synthetic_shape: str = "uniform", progress: bool = True, engine: str = "compiled", files: str = "both",
        ablations: bool = False, fusion: str | None = None, min_probability: float | None = None,
        calibration_rows: bool = False, snapshots=None, seen_snippets: bool = False,
        cache: bool = True, log=None) -> dict:
    """The whole replay; returns the result document (see :mod:`brainbox.eval.report`).

    ``files``: the views replayed (``all``, ``repo`` or ``both``, :mod:`brainbox.eval.views`);
    the top-level ``cohorts`` and ``tasks`` are the headline view's (``repo`` unless only
    ``all`` is asked for), ``views`` holds every view's cohorts. ``ablations``: also replay
    each channel removed (:func:`ablation_channels`) and report ``ablations``. ``fusion``:
    recall's channel weights (``brainbox.recall.FUSION``; None: its default);
    ``min_probability``: recall's
    relevance floor (None: recall's own; ``brainbox fit`` replays with 0). ``calibration``
    holds, per view, the leave-one-repository-out reliability of the engine's confidence
    (:mod:`brainbox.eval.calibration`), and with ``calibration_rows`` every prediction
    (``rows``: repository -> ``calibration.merge`` lists). ``snapshots``: a folder of
    source snapshots (``--repos DIR``): the result's ``localization`` then holds the
    whole-repository localization of every series with a snapshot
    (:mod:`brainbox.eval.localization`), run after the replay in this process. ``cache``:
    read and write the input cache (:mod:`brainbox.eval.cache`; ``timings.cache`` counts
    its entries read and written); False parses every source."""
    from brainbox.recall import CHANNELS, DEFAULT_FUSION, FUSION

    fusion = fusion or DEFAULT_FUSION
    log = log or (lambda msg: print(msg, file=sys.stderr))
    if snapshots is not None:
        from brainbox.eval import localization

        localization.snapshots(snapshots)  # a bad folder fails before the replay
    bad = sorted(set(ablate) - set(CHANNELS))
    if bad:
        raise BrainboxError(f"unknown channel {bad[0]!r}; expected one of {', '.join(CHANNELS)}")
    if not sources and not synthetic:
        raise BrainboxError("give at least one SOURCE or --synthetic EVENTS")
    if workers < 1:
        raise BrainboxError("--workers must be at least 1")
    if engine not in ENGINES:
        raise BrainboxError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    if files not in V.FILES:
        raise BrainboxError(f"unknown files view {files!r}; expected one of "
                            f"{', '.join(V.FILES)}")
    if fusion not in FUSION:
        raise BrainboxError(f"unknown fusion {fusion!r}; expected one of {', '.join(FUSION)}")
    channels, skipped = (ablation_channels(CHANNELS, ablate, fusion,
                                           shown=bool(sources) and seen_snippets)
                         if ablations else ([], {}))
    settings = {
        "seed": seed, "bootstrap": bootstrap, "split": split, "repos": repos,
        "max_tasks_per_repo": max_tasks_per_repo, "format": fmt, "ablate": sorted(ablate),
        "k": {"files": K_FILES, "tools": K_TOOLS},
        "clock": {"t0": T0, "event_s": 1.0, "task_gap_s": 1.0},
        "methods": list(METHODS), "probes": list(PROBES), "synthetic": None,
        "engine": engine, "fusion": fusion, "min_probability": min_probability,
        "files": files, "views": list(V.FILES[files]),
        "ablations": channels, "ablations_skipped": skipped,
        "snapshots": None if snapshots is None else str(snapshots),
        "seen_snippets": bool(seen_snippets),
    }
    views = V.FILES[files]
    runs_per_series = len(views) * (1 + len(channels))
    t_wall = time.perf_counter()
    bar = Progress(None, enabled=progress)
    expanded = S.expand_sources(sources, S.FORMAT_ALIASES.get(fmt, fmt)) if sources else []
    ex = (_Dask(bar, scheduler) if scheduler else _Pool(bar, workers) if workers > 1
          else _Local(bar))
    bar.parallel = ex.workers != 1
    payloads, futures, loc_jobs = [], [], []
    try:
        # 1. Inputs, and each source's series submitted as soon as it is loaded (small
        #    sources replay while large ones still load). Larger series go first.
        t = time.perf_counter()

        def submit(batch):
            for p in sorted(batch, key=lambda p: -p["size"]):
                payloads.append(p)
                futures.append(ex.submit(p, settings))

        if synthetic:
            spec = S.synthetic_spec(synthetic, synthetic_projects, synthetic_seed,
                                    synthetic_shape)
            settings["synthetic"] = spec
            sizes = spec.get("sizes") or [spec["events"] // spec["projects"]] * spec["projects"]
            submit([{"kind": "synthetic", "source": "synthetic", "repo": f"/work/project{p}",
                     "spec": spec, "project": p, "size": sizes[p]}
                    for p in range(spec["projects"])])
        # Heaviest sources first (bytes on disk), so their loading starts early.
        jobs = sorted(((label, path, fmt, cache) for label, path in expanded),
                      key=lambda j: -_bytes(j[1]))
        n_tasks = 0
        manifests, cache_stats = {}, {"hit": 0, "written": 0, "corrupt": 0}
        for label, tasks, warns, man, stats in ex.load(jobs):
            manifests[label] = man
            for k, v in (stats or {}).items():
                cache_stats[k] += v
            for w in warns[:5]:
                log(f"warning: {w}")
            if len(warns) > 5:
                log(f"warning: ... {len(warns) - 5} more skipped tasks in {label}")
            batch = [{"kind": "tasks", "source": label, "repo": repo, "tasks": ts,
                      "size": sum(len(x.events) for x in ts)}
                     for repo, ts in S.select(tasks, repos=repos,
                                              max_tasks_per_repo=max_tasks_per_repo, split=split)]
            n_tasks += sum(len(p["tasks"]) for p in batch)
            if snapshots is not None:
                loc_jobs += [(label, p["repo"], p["tasks"]) for p in batch]
            submit(batch)
        t_load = time.perf_counter() - t
        bar.total = None if synthetic else n_tasks * runs_per_series

        # 2. The manifest: hashed where each source was loaded (the cache's keys too).
        t1 = time.perf_counter()
        inputs = [manifests[label] for label, _ in expanded]
        t_manifest = time.perf_counter() - t1

        # 3. Replay.
        results: dict[int, dict] = {}
        by_key = {(p["source"], p["repo"]): i for i, p in enumerate(payloads)}
        for res in ex.results(futures):
            results[by_key[(res["source"], res["repo"])]] = res
        bar.close()
        t_replay = time.perf_counter() - t
    finally:
        ex.close()

    # 4. Merge in canonical order and evaluate.
    t = time.perf_counter()
    labels = (["synthetic"] if synthetic else []) + [lab for lab, _ in expanded]
    rank = {label: i for i, label in enumerate(labels)}
    merged = [results[i] for i in sorted(results, key=lambda i: (rank[payloads[i]["source"]],
                                                                 payloads[i]["repo"]))]
    groups = [(label, [r for r in merged if r["source"] == label]) for label in labels]
    if len(labels) > 1:
        groups.append(("all", merged))
    by_view = {v: {"cohorts": _cohorts(groups, v, seed, bootstrap)} for v in views}
    calibration: dict = {}
    for i, v in enumerate(views):  # a view whose records are another's (synthetic) reuses it
        same = next((w for w in views[:i]
                     if all(r["calibration"][v] is r["calibration"][w] for r in merged)), None)
        calibration[v] = (dict(calibration[same]) if same is not None
                          else _calibration(merged, v, calibration_rows))
    if calibration_rows:  # and the opening rankings, for the fusion prior (brainbox fit)
        for v in views:
            calibration[v]["openings"] = {}
            for r in merged:
                calibration[v]["openings"].setdefault(r["repo"], []).extend(
                    r["openings"][v])
    ablation_doc = None
    if ablations:
        rs = groups[-1][1]  # the pooled cohort: "all" when there are several sources
        ablation_doc = {}
        for v in views:
            full = [t for r in rs for t in r["runs"][v]["full"]]
            ablation_doc[v] = {c: ablation(full, [t for r in rs for t in r["runs"][v][c]],
                                           seed=seed, resamples=bootstrap)
                               for c in channels}
    cohort_times = {}
    for label, rs in groups:
        ev = sum(r["replayed"]["events"] for r in rs)
        cpu_c = sum(r["timings"]["cpu"] for r in rs)
        cohort_times[label] = {
            "events": ev, "series_wall_s": sum(r["timings"]["total"] for r in rs),
            "series_cpu_s": cpu_c, "events_per_s_per_core": ev / cpu_c if cpu_c else None}
    t_eval = time.perf_counter() - t
    loc_doc, t_loc = None, 0.0
    if snapshots is not None:
        from brainbox.eval import localization

        t = time.perf_counter()
        loc_doc = localization.run(loc_jobs, snapshots, sources=[p for _, p in expanded],
                                   seed=seed, resamples=bootstrap, log=log)
        t_loc = time.perf_counter() - t
    commit, dirty = source_commit()
    events = sum(r["replayed"]["events"] for r in merged)  # every replay run, views and ablations
    # Each process warms up once, before its first series; processes warm up side by side.
    warms = [r["timings"]["warmup"] for r in merged]
    compile_s = (sum(warms) if ex.workers == 1 else max(warms, default=0.0))
    busy = sum(r["timings"]["total"] for r in merged)
    cpu = sum(r["timings"]["cpu"] for r in merged)
    names = [p for p in PARTS + FAST_PARTS if any(p in r["timings"] for r in merged)]
    parts = {p: sum(r["timings"].get(p, 0.0) for r in merged) for p in names}
    parts["bookkeeping"] = max(0.0, busy - sum(parts.values()))
    return {
        "schema": SCHEMA,
        "settings": settings,
        "source_commit": commit,
        "source_dirty": dirty,
        "inputs": inputs,
        "cohorts": by_view[views[0]]["cohorts"],
        "views": by_view,
        "ablations": ablation_doc,
        "calibration": calibration,
        "localization": loc_doc,
        "series": [{"source": r["source"], "repo": r["repo"],
                    "tasks": len(r["runs"][views[0]]["full"]),
                    "events": r["events"], "skipped_events": r["skipped_events"]}
                   for r in merged],
        "tasks": [t for r in merged for t in r["runs"][views[0]]["full"]],
        "timings": {
            "executor": ex.name, "workers": ex.workers, "scheduler": scheduler,
            "cpu_count": os.cpu_count(),
            "wall_s": time.perf_counter() - t_wall, "load_s": t_load,
            "replay_s": t_replay, "replay_after_load_s": t_replay - t_load,
            "manifest_s": t_manifest, "evaluate_s": t_eval,
            "cache": cache_stats if cache and expanded else None, "localization_s": t_loc,
            "events": events,
            "replays": sum(r["replayed"]["replays"] for r in merged),
            "reused": sum(r["replayed"]["reused"] for r in merged),
            "compile_s": compile_s,
            "events_per_s": events / (t_replay - compile_s) if t_replay > compile_s else None,
            "series_wall_s": busy, "series_cpu_s": cpu,
            "warmup_s": sum(r["timings"]["warmup"] for r in merged),
            "events_per_s_per_core": events / cpu if cpu else None,
            "events_per_s_per_core_wall": events / busy if busy else None,
            "parts_s": parts,
            "cohorts": cohort_times,
            "series": [{"source": r["source"], "repo": r["repo"], "events": r["events"],
                        "wall_s": r["timings"]["total"], "cpu_s": r["timings"]["cpu"]}
                       for r in merged],
        },
    }


def ablation_channels(channels, ablate, fusion: str,
                      shown: bool = True) -> tuple[list[str], dict[str, str]]:
    """The channels ``--ablations`` removes one at a time (in ``channels``' order), and
    those it skips with the reason: ``snippet`` when no source can show file text (only
    the synthetic workload: the channel ranks over what earlier tasks' results showed,
    :mod:`brainbox.eval.seen`; a series of a real source that showed none reuses the full
    model's records), the channels ``--ablate`` already removed from the full model, and
    those the fusion gives weight 0 (not computed: ``brainbox.recall``)."""
    from brainbox.recall import CHANNELS, Params, plan

    used = plan(Params(fusion=fusion), snippets=True).use
    skip = {}
    for c in channels:
        if c == "snippet" and not shown:
            skip[c] = ("no history-only index (--seen-snippets; the synthetic workload "
                       "shows no file text): the channel never ranks")
        elif c in ablate:
            skip[c] = "removed from the full model (--ablate)"
        elif not used[CHANNELS.index(c)]:
            skip[c] = f"weight 0 in the {fusion!r} fusion: not in the full model"
    return [c for c in channels if c not in skip], skip


def _calibration(merged: list, view: str, rows: bool = False) -> dict:
    """The engine's confidence in ``view``, calibrated leave-one-repository-out: every
    series of a repository (several sources may hold one) is left out together."""
    by_repo: dict = {}
    for r in merged:
        by_repo.setdefault(r["repo"], []).append(C.arrays(r["calibration"][view]))
    groups = {repo: tuple(np.concatenate([p[j] for p in parts]) for j in range(3))
              for repo, parts in by_repo.items()}
    out = C.leave_one_out(groups)
    out["horizon"] = C.HORIZON
    if rows:
        out["rows"] = {repo: {"context": g[0].tolist(), "confidence": g[1].tolist(),
                              "hit": g[2].tolist()} for repo, g in sorted(groups.items())}
    return out


def _cohorts(groups, view: str, seed: int, bootstrap: int) -> dict:
    """Each cohort's coverage and results in ``view`` (full-model records)."""
    out = {}
    for label, rs in groups:
        tasks = [t for r in rs for t in r["runs"][view]["full"]]
        out[label] = {
            "series": len(rs), "tasks": len(tasks), "events": sum(r["events"] for r in rs),
            "coverage": coverage(tasks),
            "results": evaluate(tasks, METHODS, seed=seed, resamples=bootstrap),
        }
    return out


def _bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


class _Callback:
    """In-process stand-in for the progress queue (``put((tasks, events))``)."""

    def __init__(self, bar: Progress):
        self.bar = bar

    def put(self, item) -> None:
        self.bar.update(*item)
