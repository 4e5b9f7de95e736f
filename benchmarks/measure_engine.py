"""Engine figures for the notes: fold kernel events/s and in-process recall p50.

Usage: python benchmarks/measure_engine.py [EVENTS ...] [--baseline FILE]
(default 20000 1000000). Medians of repeated runs; the machine is noisy, so read them as such.

``--baseline FILE`` times an older fold kernel in the same run, alternating with the current
one, and prints both medians and their ratio. FILE is a copy of an older
``kernels/hebbian.py`` (``git show REV:kernels/hebbian.py > /tmp/hebbian_old.py``); it gets
the hash as separate contiguous ``hkeys``/``hslot`` arrays (the layout before they were
interleaved), the current kernel gets the engine's layout (``State.hash_table``).
"""

import importlib.util
import os
import statistics
import sys
import time

import numpy as np

RUNS = 3


def load_baseline(path):
    """An older hebbian.py as a module of brainbox.kernels, so its relative imports work."""
    name = "brainbox.kernels._baseline_hebbian"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # numba's cache pickles the module by name
    spec.loader.exec_module(mod)
    return mod


def fold_seconds(fold, touches, kind, S, E, engine_layout, lists=False):
    """(wall, CPU) seconds for one fold of all touches into fresh arrays sized like the full
    state, and the resulting arrays (without the hash). CPU time leaves out the time other
    processes had the core, not their effect on the caches. ``lists``: with spreading's row
    lists kept for every node from the start (the most upkeep the engine can have)."""
    from brainbox.state import State

    t_sess, t_res, t_time = touches
    N = kind.shape[0]
    if engine_layout:
        hkeys, hslot = State.hash_table(2 * E)
    else:
        hkeys, hslot = np.full(2 * E, -1, np.int64), np.zeros(2 * E, np.int64)
    a = {
        "n": np.zeros(N, np.int64), "m": np.zeros(N), "act": np.zeros(N),
        "last": np.zeros(N), "hist": np.zeros((N, 50)), "hist_len": np.zeros(N, np.int64),
        "deg": np.zeros(N, np.int64), "win": np.full((S, 25), -1, np.int64),
        "win_len": np.zeros(S, np.int64), "esrc": np.zeros(E, np.int64),
        "edst": np.zeros(E, np.int64), "ew": np.zeros(E, np.float32),
        "ecount": np.zeros(E, np.int64), "etime": np.zeros(E), "ne": np.zeros(1, np.int64)}
    extra = ()
    if lists:
        from brainbox.kernels import ROW_TOP

        extra = (np.zeros((N, ROW_TOP, 3)), np.zeros(N, np.int64))
    t0, c0 = time.perf_counter(), time.thread_time()
    done = fold(t_sess, t_res, t_time, 0, kind, a["n"], a["m"], a["act"], a["last"],
                a["hist"], a["hist_len"], a["deg"], a["win"], a["win_len"], hkeys, hslot,
                a["esrc"], a["edst"], a["ew"], a["ecount"], a["etime"], a["ne"], *extra)
    took = (time.perf_counter() - t0, time.thread_time() - c0)
    assert done == t_res.size
    return took, a


def main(sizes, baseline=None):
    from brainbox import kernels as K
    from brainbox.recall import Index, predict_tools, recall
    from brainbox.state import State
    from brainbox.workload import WORDS, normalized

    old = load_baseline(baseline) if baseline else None

    for n in sizes:
        t0 = time.perf_counter()
        ev = normalized(events=n, files=max(60, n // 200), sessions=max(10, n // 150), seed=11)
        gen = time.perf_counter() - t0
        st = State()
        st.capture = []
        t0 = time.perf_counter()
        st.fold(ev)
        fold_all = time.perf_counter() - t0
        t_sess = np.concatenate([c[0] for c in st.capture])
        t_res = np.concatenate([c[1] for c in st.capture])
        t_time = np.concatenate([c[2] for c in st.capture])
        touches = (t_sess, t_res, t_time)
        N, S, E = st.n_res, len(st.sess_index), st.esrc.shape[0]
        kind = st.kind[:N]
        kernel, kernel_old, kernel_lists = [], [], []
        few = tuple(x[:100] for x in touches)
        fold_seconds(K.fold_touches, few, kind, S, E, True)  # load or compile outside the timing
        fold_seconds(K.fold_touches, few, kind, S, E, True, lists=True)
        if old is not None:
            fold_seconds(old.fold_touches, few, kind, S, E, False)
        for _ in range(RUNS):  # alternate with the baseline, if any
            took, a = fold_seconds(K.fold_touches, touches, kind, S, E, True)
            kernel.append(took)
            kernel_lists.append(fold_seconds(K.fold_touches, touches, kind, S, E, True, True)[0])
            if old is not None:
                took, b = fold_seconds(old.fold_touches, touches, kind, S, E, False)
                kernel_old.append(took)
                ne = int(a["ne"][0])
                edge = ("esrc", "edst", "ew", "ecount", "etime")
                assert all(np.array_equal(a[f][:ne] if f in edge else a[f],
                                          b[f][:ne] if f in edge else b[f]) for f in a), \
                    "baseline and current kernel disagree"
        idx = Index(st)
        root = ev[0]["project"]
        sessions = list(st.sess_index)[-50:]
        queries = [f"fix the {w} bug in {v}" for w, v in zip(WORDS, reversed(WORDS))]
        for q in queries[:5]:
            recall(idx, q, project=root)
        lat, lat_s, pred = [], [], []
        for i in range(300):
            q = queries[i % len(queries)]
            t0 = time.perf_counter()
            recall(idx, q, project=root)
            lat.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            recall(idx, q, project=root, session=sessions[i % len(sessions)])
            lat_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            predict_tools(st, sessions[i % len(sessions)])
            pred.append(time.perf_counter() - t0)
        k = statistics.median(t[0] for t in kernel)
        kc = statistics.median(t[1] for t in kernel)
        print(f"events={n} resources={st.n_res} edges={int(st.n_edges[0])} "
              f"touches={t_res.size} (generate {gen:.1f} s)")
        print(f"  fold kernel: median {k:.3f} s of {RUNS} = {n / k:,.0f} events/s "
              f"({t_res.size / k:,.0f} touches/s); State.fold end to end {n / fold_all:,.0f} ev/s")
        print(f"    CPU time: median {kc:.3f} s = {n / kc:,.0f} events/s")
        kl = statistics.median(t[0] for t in kernel_lists)
        klc = statistics.median(t[1] for t in kernel_lists)
        print(f"  fold kernel keeping every row list: median {n / kl:,.0f} events/s "
              f"(CPU {n / klc:,.0f}); without / with = {kl / k:.2f}x the time")
        if kernel_old:
            ko = statistics.median(t[0] for t in kernel_old)
            koc = statistics.median(t[1] for t in kernel_old)
            print(f"  baseline fold kernel ({baseline}): median {ko:.3f} s = {n / ko:,.0f} "
                  f"events/s, CPU {koc:.3f} s = {n / koc:,.0f} events/s; current/baseline "
                  f"speed {ko / k:.2f}x wall, {koc / kc:.2f}x CPU (runs alternated, same "
                  f"results); load average {os.getloadavg()[0]:.2f}")
        print(f"  recall p50 {statistics.median(lat) * 1e3:.3f} ms, with session "
              f"{statistics.median(lat_s) * 1e3:.3f} ms; predict_tools p50 "
              f"{statistics.median(pred) * 1e3:.3f} ms")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("events", nargs="*", type=int, help="workload sizes (default 20000 1000000)")
    ap.add_argument("--baseline", metavar="FILE", help="an older kernels/hebbian.py to time beside")
    a = ap.parse_args()
    main(a.events or [20_000, 1_000_000], a.baseline)
