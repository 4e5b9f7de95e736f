"""Micro-benchmark of the replay's baselines: Python ``Baselines`` vs ``CompiledBaselines``
(kernels called from Python) vs the kernels called from a jitted loop.

    python benchmarks/bench_baselines.py [--events 100000] [--files N] [--reps 5]

The workload is one synthetic series (``synthetic_tasks(synthetic_spec(events, 1, 7), 0)``;
``--files`` overrides the spec's file count, e.g. 5000 for a universe of ~5,000 files),
driven with the replay's calls (:func:`brainbox.eval.compiled.replay_calls`: a tool
and a file ranking before every tool event). Python-level figures are per call (median and
mean of individually timed calls, median over repetitions). The jitted figures come from
a loop over pre-encoded calls run with rankings on or off: updates = the loop without
rankings per tool event (begin/prompt/end included), a ranking = (loop with it - loop
without) / its calls. This machine is shared: the medians are what to read.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from brainbox.eval.baselines import Baselines
from brainbox.eval.compiled import CompiledBaselines, replay_calls
from brainbox.kernels._jit import jit
from brainbox.kernels.replay import baselines as K

OP_BEGIN, OP_PROMPT, OP_TOOL, OP_END, OP_RANK_FILES, OP_RANK_TOOLS = range(6)
TIMED = ("begin_task", "prompt", "tool_event", "end_task", "rank_files", "rank_tools")


def series(events: int, files: int | None):
    from brainbox.eval.sources import synthetic_spec, synthetic_tasks

    spec = synthetic_spec(events, 1, 7)
    if files:
        spec["files"] = files
    return list(synthetic_tasks(spec, 0))


def per_call_times(make, calls) -> dict:
    """Per-call times (seconds) by method, one pass over ``calls``."""
    base = make()
    per = {m: [] for m in TIMED}
    perf = time.perf_counter
    for name, args in calls:
        f = getattr(base, name)
        t = perf()
        f(*args)
        per[name].append(perf() - t)
    return per


def encode(calls):
    """The calls as arrays for :func:`drive`; and the capacities the series needs."""
    cb = CompiledBaselines(0, "bench")  # its id maps, and a run that sizes the state
    ops, pool, fpool, npool, ppool = [], [], [], [], []

    def put(arr):
        a = len(pool)
        pool.extend(arr.tolist())
        return a, len(pool)

    for name, args in calls:
        row = [0] * 16
        if name == "begin_task":
            _, query, _, nf, nt = args
            row[0] = OP_BEGIN
            row[1], row[2] = put(cb.begin_args(query))
            row[3], row[4] = nf, nt
        elif name == "prompt":
            session, text = args
            sid, terms = cb.prompt_args(session, text)
            row[0], row[3] = OP_PROMPT, sid
            row[1], row[2] = put(terms)
        elif name == "tool_event":
            sid, tool, new_tool, tname, fids, fnew, ptr, pterms, arg = cb.tool_args(*args)
            row[0], row[3], row[4], row[5] = OP_TOOL, sid, tool, int(new_tool)
            row[1], row[2] = put(tname)
            row[6], row[7] = put(arg)
            row[8] = len(fpool)
            row[10] = len(ppool)
            fpool.extend(fids.tolist())
            npool.extend(fnew.tolist())
            ppool.extend(ptr.tolist())
            row[9] = len(fpool)
            row[11], row[12] = put(pterms)
        elif name == "end_task":
            row[0] = OP_END
        elif name == "rank_files":
            row[0], row[3] = OP_RANK_FILES, args[0]
        else:
            row[0], row[3] = OP_RANK_TOOLS, args[0]
        ops.append(row)
    for name, args in calls:  # size the state
        getattr(cb, name)(*args)
    return (np.array(ops, np.int64), np.array(pool, np.int64), np.array(fpool, np.int64),
            np.array(npool, np.bool_), np.array(ppool, np.int64), K.capacities(cb.state))


K_EMPTY = np.zeros(0, np.int64)


@jit(cache=False)  # numba's cache of a caller ignores edits to the callees' files
def drive(B, ops, pool, fpool, npool, ppool, k_files, k_tools, out_f, out_t, mask):
    """Run pre-encoded calls; rankings only where ``mask`` says (1 files, 2 tools).
    Returns (sum of ranking lengths, number of non-OK statuses)."""
    acc = 0
    bad = 0
    for i in range(ops.shape[0]):
        op = ops[i, 0]
        if op == OP_TOOL:
            f0, f1, p0 = ops[i, 8], ops[i, 9], ops[i, 10]
            st = K.tool_event(B, ops[i, 3], ops[i, 4], ops[i, 5] != 0,
                                 pool[ops[i, 1]:ops[i, 2]], fpool[f0:f1], npool[f0:f1],
                                 ppool[p0:p0 + f1 - f0 + 1], pool[ops[i, 11]:ops[i, 12]],
                                 pool[ops[i, 6]:ops[i, 7]])
            bad += st != 0
        elif op == OP_RANK_FILES:
            if mask & 1:
                lens = K.rank_files(B, ops[i, 3], k_files, out_f)
                acc += lens[0] + lens[1] + lens[2] + lens[3]
        elif op == OP_RANK_TOOLS:
            if mask & 2:
                lens = K.rank_tools(B, ops[i, 3], k_tools, out_t)
                acc += lens[0] + lens[1] + lens[2] + lens[3]
        elif op == OP_BEGIN:
            bad += K.begin_task(B, pool[ops[i, 1]:ops[i, 2]], ops[i, 3], ops[i, 4]) != 0
        elif op == OP_PROMPT:
            bad += K.prompt(B, ops[i, 3], pool[ops[i, 1]:ops[i, 2]]) != 0
        else:
            bad += K.end_task(B) != 0
    return acc, bad


def jitted_times(enc, reps: int) -> dict:
    ops, pool, fpool, npool, ppool, cap = enc
    out_f = np.empty((4, 10), np.int64)
    out_t = np.empty((4, 3), np.int64)
    res = {}
    times = {m: [] for m in range(4)}
    drive(K.new_state(**cap), ops[:50], pool, fpool, npool, ppool, 10, 3, out_f, out_t, 3)
    for _ in range(reps):
        for mask in range(4):
            B = K.new_state(**cap)
            t = time.perf_counter()
            _, bad = drive(B, ops, pool, fpool, npool, ppool, 10, 3, out_f, out_t, mask)
            times[mask].append(time.perf_counter() - t)
            assert bad == 0, bad
    n_tool = int((ops[:, 0] == OP_TOOL).sum())
    n_rf = int((ops[:, 0] == OP_RANK_FILES).sum())
    n_rt = int((ops[:, 0] == OP_RANK_TOOLS).sum())
    med = {m: statistics.median(v) for m, v in times.items()}
    res["updates_us_per_tool_event"] = med[0] / n_tool * 1e6
    res["rank_files_us"] = (med[1] - med[0]) / n_rf * 1e6
    res["rank_tools_us"] = (med[2] - med[0]) / n_rt * 1e6
    res["loop_us_per_tool_event"] = med[3] / n_tool * 1e6
    res["events_per_s"] = n_tool / med[3]
    res["calls"] = {"tool_event": n_tool, "rank_files": n_rf, "rank_tools": n_rt}
    return res


def summary(per: list[dict]) -> dict:
    """Median over repetitions of each method's per-call median and mean (µs)."""
    out = {}
    for m in TIMED:
        meds = [statistics.median(p[m]) * 1e6 for p in per if p[m]]
        means = [statistics.fmean(p[m]) * 1e6 for p in per if p[m]]
        if meds:
            out[m] = (statistics.median(meds), statistics.median(means), len(per[0][m]))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--files", type=int, default=None)
    ap.add_argument("--reps", type=int, default=5, help="repetitions of the jitted loop")
    ap.add_argument("--py-reps", type=int, default=1, help="repetitions of the Python passes")
    a = ap.parse_args(argv)
    t = time.perf_counter()
    tasks = series(a.events, a.files)
    calls = list(replay_calls(tasks))
    n_files = 1 + max((f for name, args in calls if name == "tool_event"
                       for f, _, _ in args[4]), default=-1)
    print(f"series: {len(tasks)} tasks, {sum(n == 'tool_event' for n, _ in calls)} tool events, "
          f"~{n_files} files ({time.perf_counter() - t:.1f}s to build)")
    CompiledBaselines(0, "warm")  # import/compile outside the timings
    warm = CompiledBaselines(0, "warm")
    for name, args in calls[:200]:
        getattr(warm, name)(*args)
    py = [per_call_times(lambda: Baselines(0, "bench"), calls) for _ in range(a.py_reps)]
    cp = [per_call_times(lambda: CompiledBaselines(0, "bench"), calls) for _ in range(a.py_reps)]
    sp, sc = summary(py), summary(cp)
    print(f"{'µs per call (median / mean)':<28}{'Baselines':>22}{'CompiledBaselines':>22}")
    for m in TIMED:
        if m in sp:
            print(f"{m + f' (n={sp[m][2]})':<28}{sp[m][0]:>12.2f} /{sp[m][1]:>8.2f}"
                  f"{sc[m][0]:>12.2f} /{sc[m][1]:>8.2f}")
    enc = encode(calls)
    j = jitted_times(enc, a.reps)
    print("jitted loop (median of", a.reps, "runs):")
    print(f"  updates {j['updates_us_per_tool_event']:.3f} µs per tool event (begin/prompt/end "
          f"included); rank_files {j['rank_files_us']:.3f} µs; rank_tools "
          f"{j['rank_tools_us']:.3f} µs; whole loop {j['loop_us_per_tool_event']:.3f} µs "
          f"per tool event ({j['events_per_s']:,.0f} events/s)")


if __name__ == "__main__":
    main()
