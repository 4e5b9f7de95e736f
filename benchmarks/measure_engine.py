"""Engine figures for the notes: fold kernel events/s and in-process recall p50.

Usage: python benchmarks/measure_engine.py [EVENTS ...]   (default 20000 1000000)
Medians of repeated runs; the machine is noisy, so read them as such.
"""

import statistics
import sys
import time

import numpy as np


def main(sizes):
    from brainbox import kernels as K
    from brainbox.recall import Index, recall, predict_tools
    from brainbox.state import State
    from brainbox.workload import WORDS, normalized

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
        kernel = []
        for _ in range(3):
            s2 = State()
            s2.fold(ev[:1])  # allocate, then size arrays like the full state
            N, S, E = st.n_res, len(st.sess_index), st.esrc.shape[0]
            arrs = dict(
                n=np.zeros(N, np.int64), m=np.zeros(N), act=np.zeros(N), last=np.zeros(N),
                hist=np.zeros((N, 50)), hist_len=np.zeros(N, np.int64),
                deg=np.zeros(N, np.int64), win=np.full((S, 25), -1, np.int64),
                win_len=np.zeros(S, np.int64), hkeys=np.full(2 * E, -1, np.int64),
                hslot=np.zeros(2 * E, np.int64), esrc=np.zeros(E, np.int64),
                edst=np.zeros(E, np.int64), ew=np.zeros(E, np.float32),
                ecount=np.zeros(E, np.int64), etime=np.zeros(E), ne=np.zeros(1, np.int64))
            a = arrs
            t0 = time.perf_counter()
            K.fold_touches(t_sess, t_res, t_time, 0, st.kind[:N], a["n"], a["m"], a["act"],
                           a["last"], a["hist"], a["hist_len"], a["deg"], a["win"],
                           a["win_len"], a["hkeys"], a["hslot"], a["esrc"], a["edst"], a["ew"],
                           a["ecount"], a["etime"], a["ne"])
            kernel.append(time.perf_counter() - t0)
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
        k = statistics.median(kernel)
        print(f"events={n} resources={st.n_res} edges={int(st.n_edges[0])} "
              f"touches={t_res.size} (generate {gen:.1f} s)")
        print(f"  fold kernel: median {k:.3f} s of 3 = {n / k:,.0f} events/s "
              f"({t_res.size / k:,.0f} touches/s); State.fold end to end {n / fold_all:,.0f} ev/s")
        print(f"  recall p50 {statistics.median(lat) * 1e3:.3f} ms, with session "
              f"{statistics.median(lat_s) * 1e3:.3f} ms; predict_tools p50 "
              f"{statistics.median(pred) * 1e3:.3f} ms")


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1:]] or [20_000, 1_000_000])
