"""asv suites for the engine: fold kernel, spreading, fusion, recall, cold start.

Workloads come from `brainbox.workload` (seeded) at 10k, 100k and 1M events; costly
builds happen once in `setup_cache`.
"""

import os
import subprocess
import sys
import tempfile

import numpy as np

SIZES = [10_000, 100_000, 1_000_000]


def _events(n):
    from brainbox.workload import normalized

    files = max(60, n // 200)
    return normalized(events=n, files=files, sessions=max(10, n // 150), projects=1, seed=11)


def _folded(n):
    from brainbox.state import State

    st = State()
    st.capture = []
    st.fold(_events(n))
    return st


class Fold:
    """The windowed Hebbian fold kernel alone, over the touches of n events."""

    params = SIZES
    param_names = ["events"]  # noqa: RUF012 - asv reads its parameters as class attributes
    timeout = 600

    def setup_cache(self):
        out = {}
        for n in SIZES:
            st = _folded(n)
            t_sess = np.concatenate([c[0] for c in st.capture])
            t_res = np.concatenate([c[1] for c in st.capture])
            t_time = np.concatenate([c[2] for c in st.capture])
            out[n] = (t_sess, t_res, t_time, st.kind[: st.n_res].copy(), len(st.sess_index),
                      int(st.n_edges[0]))
        return out

    def setup(self, cache, n):
        from brainbox import kernels as K

        self.K = K
        t_sess, t_res, t_time, kind, n_sess, n_edges = cache[n]
        self.args = (t_sess, t_res, t_time, kind, n_sess, n_edges)
        self.fresh()
        K.fold_touches(*self.call_args(slice(0, 100)))  # compile outside the timing
        self.fresh()

    def fresh(self):
        from brainbox.state import State

        _t_sess, _t_res, _t_time, kind, n_sess, n_edges = self.args
        N = kind.shape[0]
        cap = 1
        while cap < n_edges + 1024:
            cap *= 2
        hkeys, hslot = State.hash_table(2 * cap)  # the engine's layout
        self.state = {
            "n": np.zeros(N, np.int64), "m": np.zeros(N), "act": np.zeros(N),
            "last": np.zeros(N), "hist": np.zeros((N, 50)), "hist_len": np.zeros(N, np.int64),
            "deg": np.zeros(N, np.int64),
            "win": np.full((n_sess, 25), -1, np.int64), "win_len": np.zeros(n_sess, np.int64),
            "hkeys": hkeys, "hslot": hslot,
            "esrc": np.zeros(cap, np.int64), "edst": np.zeros(cap, np.int64),
            "ew": np.zeros(cap, np.float32), "ecount": np.zeros(cap, np.int64),
            "etime": np.zeros(cap), "n_edges": np.zeros(1, np.int64),
        }

    def call_args(self, sl=slice(None)):
        t_sess, t_res, t_time, kind = self.args[:4]
        s = self.state
        return (t_sess[sl], t_res[sl], t_time[sl], 0, kind, s["n"], s["m"], s["act"],
                s["last"], s["hist"], s["hist_len"], s["deg"], s["win"], s["win_len"],
                s["hkeys"], s["hslot"], s["esrc"], s["edst"], s["ew"], s["ecount"],
                s["etime"], s["n_edges"])

    def time_fold_touches(self, cache, n):
        self.fresh()
        self.K.fold_touches(*self.call_args())

    def track_events_per_second(self, cache, n):
        import time

        self.fresh()
        t0 = time.perf_counter()
        self.K.fold_touches(*self.call_args())
        return n / (time.perf_counter() - t0)

    track_events_per_second.unit = "events/s"


class FoldEngine:
    """State.fold end to end (Python event encoding + kernels)."""

    params = [10_000, 100_000]  # noqa: RUF012 - asv reads its parameters as class attributes
    param_names = ["events"]  # noqa: RUF012 - asv reads its parameters as class attributes
    timeout = 600

    def setup_cache(self):
        return {n: _events(n) for n in self.params}

    def setup(self, cache, n):
        from brainbox.state import State

        State().fold(cache[10_000][:500])  # load or compile the kernels outside the timing

    def time_state_fold(self, cache, n):
        from brainbox.state import State

        State().fold(cache[n])


class Recall:
    params = SIZES
    param_names = ["events"]  # noqa: RUF012 - asv reads its parameters as class attributes
    timeout = 900

    def setup_cache(self):
        return {n: _folded(n) for n in SIZES}

    def setup(self, cache, n):
        from brainbox.recall import Index, recall

        self.st = cache[n]
        self.st.capture = None
        self.index = Index(self.st)
        self.recall = recall
        self.root = "/work/project0"
        self.session = next(iter(self.st.sess_index))
        self.recall(self.index, "fix the auth login bug", project=self.root)
        w = self.st.graph()
        self.w = w
        self.seeds = np.arange(min(10, self.st.n_res), dtype=np.int64)

    def time_recall(self, cache, n):
        self.recall(self.index, "fix the auth login bug", project=self.root,
                    session=self.session)

    def time_spread(self, cache, n):
        from brainbox import kernels as K

        st = self.st
        act = np.zeros(st.n_res)
        parent = np.full(st.n_res, -1, np.int64)
        adj = st.adjacency()  # the live out-adjacency recall spreads over
        K.spread(adj.off, adj.len, adj.dst, adj.edge, adj.ew, self.seeds,
                 np.ones(self.seeds.size), st.m[: st.n_res], st.kind[: st.n_res] == 1,
                 3, 10, 0.05, 0.01, act, parent)

    def time_fusion(self, cache, n):
        from brainbox import kernels as K

        rng = np.random.default_rng(0)
        ranks = rng.integers(0, 100, size=(7, 5000))
        out = np.zeros(5000)
        K.rrf_fuse(ranks, np.ones(7), np.ones((7, 5000)), 20.0, out)

    def time_predict_tools(self, cache, n):
        from brainbox.recall import predict_tools

        predict_tools(self.st, self.session)


QUICK_EVENTS = 20_000  # the fixed size of the suites below: built in setup, in seconds


class RecallQuick:
    """In-process recall (the default fusion), at a prompt and in a session, on a fixed
    20k-event workload built in `setup` (so `asv run --quick` stays quick); the issue-20
    figures at 1M events come from benchmarks/measure_engine.py."""

    timeout = 300

    def setup(self):
        from brainbox.recall import Index, recall
        from brainbox.workload import WORDS

        self.st = _folded(QUICK_EVENTS)
        self.st.capture = None
        self.index = Index(self.st)
        self.recall = recall
        self.root = "/work/project0"
        self.sessions = list(self.st.sess_index)[-8:]
        self.queries = [f"fix the {w} bug in {v}" for w, v in zip(WORDS[:8], WORDS[-8:])]
        for q in self.queries:  # load or compile, and fill the caches, outside the timing
            self.recall(self.index, q, project=self.root)
            self.recall(self.index, q, project=self.root, session=self.sessions[0])

    def time_recall(self):
        for q in self.queries:
            self.recall(self.index, q, project=self.root)

    def time_recall_in_session(self):
        for q, s in zip(self.queries, self.sessions):
            self.recall(self.index, q, project=self.root, session=s)


class FoldQuick(Fold):
    """`Fold` (the fold kernel alone) on the fixed 20k-event workload, built in `setup`."""

    params = [QUICK_EVENTS]  # noqa: RUF012 - asv reads its parameters as class attributes
    timeout = 300

    def setup_cache(self):
        return None

    def setup(self, cache, n):
        st = _folded(n)
        cat = [np.concatenate([c[j] for c in st.capture]) for j in range(3)]
        super().setup({n: (*cat, st.kind[: st.n_res].copy(), len(st.sess_index),
                           int(st.n_edges[0]))}, n)


def timeraw_import_brainbox():
    return "import brainbox"


def timeraw_python_startup():
    return "pass"


class RecordProcess:
    """A whole `brainbox record` process against a warm database."""

    timeout = 120
    repeat = (5, 20, 60)
    number = 1

    def setup(self):
        self.tmp = tempfile.mkdtemp()
        self.env = dict(os.environ, BRAINBOX_HOME=self.tmp)
        self.cmd = [sys.executable, "-m", "brainbox.cli.entry", "record", "--session", "b",
                    "--cwd", self.tmp, "--tool", "Read", "--file", "src/a.py"]
        subprocess.run(self.cmd, env=self.env, check=True, capture_output=True)

    def time_record_process(self):
        subprocess.run(self.cmd, env=self.env, check=True, capture_output=True)

    def time_python_pass_process(self):
        subprocess.run([sys.executable, "-c", "pass"], env=self.env, check=True)
