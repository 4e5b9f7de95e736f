"""Case generators and comparisons of the reference registry (:mod:`brainbox.eval.reference`).

A generator ``name(size, seed)`` returns the positional arguments of one call of the kernel
``name``: a pure function of ``(size, seed)`` (numpy's seeded generator), fresh arrays each
call. Scores and weights are drawn from small value sets on half the seeds, so ties (and
the tie-breaks the references specify) are exercised, and capacities are short on some
seeds, so the "stopped early, grow and call again" statuses are compared too. The states
recall ranks over are folded from the workload generator (:mod:`brainbox.workload`) and
ranked through :func:`brainbox.recall.rank_args`, as recall calls the kernel.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from brainbox.eval.reference import Outcome
from brainbox.eval.reference import kernels as R

HIST, WINDOW = R.HIST, R.WINDOW


def _rng(size: int, seed: int, salt: int) -> np.random.Generator:
    return np.random.default_rng([seed, size, salt])


def _weights(rng, n: int, ties: bool) -> np.ndarray:
    if ties:
        return rng.choice(np.asarray([0.05, 0.2, 0.5, 1.0]), n)
    return rng.random(n)


def _edges(rng, n_nodes: int, n_edges: int) -> tuple[np.ndarray, np.ndarray]:
    """``n_edges`` distinct (src, dst) pairs, src != dst, in random order."""
    n_edges = min(n_edges, n_nodes * (n_nodes - 1))
    pairs = set()
    while len(pairs) < n_edges:
        s, d = rng.integers(0, n_nodes, 2).tolist()
        if s != d:
            pairs.add((s, d))
    pairs = sorted(pairs)
    order = rng.permutation(len(pairs))
    esrc = np.asarray([pairs[i][0] for i in order], np.int64)
    edst = np.asarray([pairs[i][1] for i in order], np.int64)
    return esrc, edst


def _hist(rng, n: int, now: float):
    """Sorted access histories, their lengths (some past HIST) and the last access."""
    hist = np.sort(rng.uniform(0, now + 1, (n, HIST)), axis=1)
    hist_len = rng.integers(0, 2 * HIST, n)
    hist_len[hist_len > HIST] = HIST  # sorted histories: ``last`` is the latest access
    last = np.asarray([hist[i, hist_len[i] - 1] if hist_len[i] else 0.0 for i in range(n)])
    return hist, hist_len, last


# --- the engine kernels --------------------------------------------------------------------


def fold_touches(size: int, seed: int) -> list:
    rng = _rng(size, seed, 1)
    n_nodes, n_sess = max(4, size // 20), max(1, size // 100)
    edges = [16, 4 * size, 60 * size][seed % 3]  # short on some seeds: the kernel stops
    slots = 1 << (2 * max(edges, 1) - 1).bit_length()
    return [rng.integers(0, n_sess, size), rng.integers(0, n_nodes, size),
            np.arange(float(size)), 0, rng.integers(0, 3, n_nodes).astype(np.int8),
            np.zeros(n_nodes, np.int64), np.zeros(n_nodes), np.zeros(n_nodes),
            np.zeros(n_nodes), np.zeros((n_nodes, HIST)), np.zeros(n_nodes, np.int64),
            np.zeros(n_nodes, np.int64), np.zeros((n_sess, WINDOW), np.int64),
            np.zeros(n_sess, np.int64), np.full(slots, -1, np.int64),
            np.zeros(slots, np.int64), np.zeros(edges, np.int64), np.zeros(edges, np.int64),
            np.zeros(edges, np.float32), np.zeros(edges, np.int64), np.zeros(edges),
            np.zeros(1, np.int64)]


def _hashed(size: int, seed: int):
    rng = _rng(size, seed, 2)
    esrc, edst = _edges(rng, max(3, size // 4), size)
    slots = 1 << (2 * max(len(esrc), 1) - 1).bit_length()
    return rng, esrc, edst, np.full(slots, -1, np.int64), np.zeros(slots, np.int64)


def rebuild_hash(size: int, seed: int) -> list:
    _, esrc, edst, hkeys, hslot = _hashed(size, seed)
    return [esrc, edst, len(esrc), hkeys, hslot]


def find_edge(size: int, seed: int) -> list:
    from brainbox import kernels as K

    rng, esrc, edst, hkeys, hslot = _hashed(size, seed)
    K.rebuild_hash(esrc, edst, len(esrc), hkeys, hslot)
    if seed % 2 and len(esrc):
        e = int(rng.integers(0, len(esrc)))
        return [hkeys, hslot, int(esrc[e]), int(edst[e])]
    return [hkeys, hslot, int(rng.integers(0, size)), int(rng.integers(0, size))]


def decay_state(size: int, seed: int) -> list:
    rng = _rng(size, seed, 3)
    n = max(1, size // 4)
    ew = _weights(rng, size, seed % 2 == 0).astype(np.float32)
    return [rng.random(n), rng.random(n), ew, int(rng.integers(0, size + 1)),
            float(rng.choice([0.0, 0.5, 3.0, 40.0])), np.zeros(size, np.bool_)]


def compact_edges(size: int, seed: int) -> list:
    rng = _rng(size, seed, 4)
    n_nodes = max(3, size // 4)
    esrc, edst = _edges(rng, n_nodes, size)
    n = len(esrc)
    deg = np.bincount(esrc, minlength=n_nodes).astype(np.int64)
    return [rng.random(n) < 0.6, esrc, edst, rng.random(n).astype(np.float32),
            rng.integers(1, 9, n), rng.random(n) * 1e4, deg, n]


def _graph(size: int, seed: int, salt: int):
    rng = _rng(size, seed, salt)
    n_nodes = max(5, size // 8)
    esrc, edst = _edges(rng, n_nodes, size)
    ew = _weights(rng, len(esrc), seed % 2 == 0).astype(np.float32)
    return rng, n_nodes, esrc, edst, ew


def _spread_tail(rng, n_nodes: int, seed: int) -> list:
    seeds = rng.integers(0, n_nodes, int(rng.integers(1, 6)))
    return [seeds, rng.choice(np.asarray([1.0, 0.5, 0.25]), len(seeds)),
            rng.random(n_nodes) * 0.9, rng.random(n_nodes) < 0.05, int(1 + seed % 3),
            int([2, 10, 50][seed % 3]), float([0.0, 0.1][seed % 2]),
            float([0.0, 0.01][(seed // 2) % 2]), np.zeros(n_nodes),
            np.full(n_nodes, -1, np.int64)]


def spread(size: int, seed: int) -> list:
    rng, n_nodes, esrc, edst, ew = _graph(size, seed, 5)
    adj = _adjacency(n_nodes, R.block_size(len(esrc)) + 4 * n_nodes + len(esrc))
    R.rebuild_adjacency(esrc, edst, len(esrc), *adj)
    off, ln, _, dst, e, _ = adj
    return [off, ln, dst, e, ew, *_spread_tail(rng, n_nodes, seed)]


def spread_csr(size: int, seed: int) -> list:
    import scipy.sparse as sp

    rng, n_nodes, esrc, edst, ew = _graph(size, seed, 6)
    mat = sp.csr_array((ew.astype(np.float64), (esrc, edst)), shape=(n_nodes, n_nodes))
    return [mat.indptr, mat.indices, mat.data, *_spread_tail(rng, n_nodes, seed)]


def _adjacency(n_nodes: int, pool: int) -> list:
    return [np.zeros(n_nodes, np.int64), np.zeros(n_nodes, np.int64),
            np.zeros(n_nodes, np.int64), np.zeros(pool, np.int64), np.zeros(pool, np.int64),
            np.zeros(1, np.int64)]


def link_edges(size: int, seed: int) -> list:
    rng = _rng(size, seed, 7)
    n_nodes = max(3, size // 6)
    esrc, edst = _edges(rng, n_nodes, size)
    pool = [8, 3 * len(esrc) + 8 * n_nodes][seed % 2]  # short on some seeds: it stops
    return [esrc, edst, 0, len(esrc), *_adjacency(n_nodes, pool)]


def rebuild_adjacency(size: int, seed: int) -> list:
    rng = _rng(size, seed, 8)
    n_nodes = max(3, size // 6)
    esrc, edst = _edges(rng, n_nodes, size)
    pool = [2, 2 * len(esrc) + 4 * n_nodes][seed % 2]
    return [esrc, edst, len(esrc), *_adjacency(n_nodes, pool)]


def rrf_fuse(size: int, seed: int) -> list:
    rng = _rng(size, seed, 9)
    n_chan, n_cand = 7, max(1, size)
    ranks = rng.integers(0, n_cand + 1, (n_chan, n_cand))
    ranks[rng.random((n_chan, n_cand)) < 0.3] = 0
    return [ranks, rng.random(n_chan) * 2, rng.random((n_chan, n_cand)), 60.0,
            np.zeros(n_cand)]


def ranks_from_scores(size: int, seed: int) -> list:
    rng = _rng(size, seed, 10)
    special = np.asarray([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan])
    scores = np.where(rng.random(size) < 0.3, rng.choice(special, size), rng.normal(size=size))
    dtype = [np.float64, np.float32][seed % 2]
    return [scores.astype(dtype), rng.random(size) < 0.8]


def base_level(size: int, seed: int) -> list:
    rng = _rng(size, seed, 11)
    n = max(1, size // 4)
    now = 1e6
    hist, hist_len, _ = _hist(rng, n, now)
    idx = rng.integers(0, n, size)
    return [hist, hist_len, idx, now, np.zeros(size)]


def encode_ctx(size: int, seed: int) -> list:
    rng = _rng(size, seed, 12)
    return [int(x) for x in rng.integers(-1, 2**20 - 1, 3)]


def ngram_pairs(size: int, seed: int) -> list:
    rng = _rng(size, seed, 13)
    n_sess = max(1, size // 30)
    last3 = rng.integers(0, 40, (n_sess, 3))
    last3_len = rng.integers(0, 4, n_sess)
    return [rng.integers(0, n_sess, size), rng.integers(0, 40, size), last3, last3_len,
            np.zeros(3 * size, np.int64), np.zeros(3 * size, np.int64)]


# --- recall's ranking and prediction (states folded from the workload) --------------------


@functools.lru_cache(maxsize=8)
def _folded(size: int, seed: int):
    """A state folded from ``size`` workload events (at least 100: a project with files),
    in one to three batches."""
    from brainbox.state import State
    from brainbox.workload import normalized

    size = max(size, 100)
    evs = normalized(events=size, files=max(30, size // 40), sessions=max(5, size // 60),
                     projects=2, seed=seed % 6)
    s = State()
    cuts = np.linspace(0, len(evs), 1 + seed % 3 + 1).astype(int)
    for a, b in itertools.pairwise(cuts):
        s.fold(evs[a:b])
    return s, evs


def _rank_args(size: int, seed: int) -> list:
    from brainbox.recall import CHANNELS, Index, Params, rank_args
    from brainbox.workload import WORDS

    s, evs = _folded(size, seed)
    rng = _rng(size, seed, 14)
    n_words = int(rng.integers(seed % 5 == 4, 8))  # an empty query on some seeds
    words = [str(w) for w in rng.choice(WORDS + ["zzz", "this"], n_words)]
    sessions = list(s.sess_index)
    session = sessions[int(rng.integers(0, len(sessions)))] if seed % 4 else None
    ablate = frozenset(c for c in CHANNELS if rng.random() < 0.15)
    p = Params(ablate=ablate, max_query_terms=[0, 2, 12][seed % 3],
               fusion=["chosen", "fixed"][seed % 2])
    return list(rank_args(Index(s), " ".join(words), project=evs[-1]["project"],
                          session=session, now=s.clock + float(rng.uniform(0, 5e5)), params=p))


def rank_files(size: int, seed: int) -> list:
    return _rank_args(size, seed)


def rank_lexed(size: int, seed: int) -> list:
    from brainbox.eval.reference import rank as RR

    args = _rank_args(size, seed)
    lexed = RR.bm25_scores(*args[:10], args[4].shape[0])
    return [*lexed, *args[3:5], *args[10:]]


def bm25_scores(size: int, seed: int) -> list:
    args = _rank_args(size, seed)
    return [*args[:10], args[4].shape[0]]


def task_bm25(size: int, seed: int) -> list:
    """``bm25_scores``' case as the replay's lexical columns (``kernels.replay.tasklex``):
    the query's known terms with an unknown one (-1) and one not known yet on some seeds,
    each term's frequency per project file read from the postings' entries."""
    tids, _, max_terms, files, in_proj, doclen, post, path_ptr, path_terms, path_w = \
        _rank_args(size, seed)[:10]
    n_terms = int(post.off.shape[0])
    extra = [-1] if seed % 2 else []
    if seed % 3 == 0 and tids.shape[0]:
        n_terms = int(tids.max())  # the query's last term is not known yet
    q_sorted = np.sort(np.asarray([*extra, *tids.tolist()], np.int64))
    col = {int(t): k for k, t in enumerate(q_sorted.tolist()) if t >= 0}
    pos = {int(f): j for j, f in enumerate(files.tolist())}
    tf = np.zeros((q_sorted.shape[0], files.shape[0]))
    n = int(post.n[0])
    for t, r, v in zip(post.ea[:n].tolist(), post.eb[:n].tolist(), post.ev[:n].tolist()):
        if t in col and in_proj[r]:
            tf[col[t], pos[r]] = v
    cnt = (tf > 0).sum(axis=1).astype(np.int64)
    return [q_sorted, n_terms, max_terms, post.len.copy(), files, int(files.shape[0]), doclen,
            tf, cnt, path_ptr, path_terms, path_w]


def top_k(size: int, seed: int) -> list:
    rng = _rng(size, seed, 15)
    scores = rng.integers(0, 6, size).astype(float) if seed % 2 else rng.random(size)
    return [np.arange(3, 3 + size, dtype=np.int64), scores, int(rng.integers(1, size + 10))]


def order_desc(size: int, seed: int) -> list:
    rng = _rng(size, seed, 16)
    kind = seed % 3
    if kind == 0:
        return [rng.integers(0, 4, size).astype(float)]
    if kind == 1:
        return [rng.random(size) * 1e3]
    return [np.where(rng.random(size) < 0.1, -np.inf, -rng.random(size))]


def _base_level_args(size: int, seed: int, salt: int) -> list:
    rng = _rng(size, seed, salt)
    n = size + 3
    now = float(rng.uniform(0, 1e6))
    hist, hist_len, last = _hist(rng, n, now)
    files = np.arange(3, n, dtype=np.int64)
    return [files, hist, hist_len, last, now, int(rng.integers(1, size + 10)), bool(seed % 2),
            np.zeros((0, 3))]


def base_level_top(size: int, seed: int) -> list:
    return _base_level_args(size, seed, 17)


def base_level_ids(size: int, seed: int) -> list:
    return _base_level_args(size, seed, 18)


def predict_kernel(size: int, seed: int) -> list:
    s, _ = _folded(size, seed)
    rng = _rng(size, seed, 19)
    sid = int(rng.integers(-1, len(s.sess_index)))
    adj = s.adjacency()
    return [s.kind, s.n, s.n_res, s.last3, s.last3_len, sid, s.ctxmap, s.grams, adj.off,
            adj.len, adj.dst, adj.edge, s.ew, int([1, 4, 50][seed % 3]),
            int([1, 3, 10][(seed // 3) % 3])]


# --- the replay's baselines and loop ----------------------------------------------------


def replay_tasks(size: int, seed: int) -> list:
    """The synthetic workload's tasks of one project, about ``size`` events in all."""
    from brainbox.eval import sources as S

    return [list(S.synthetic_tasks(S.synthetic_spec(size, 1, seed), 0))]


def baseline_calls(size: int, seed: int) -> list:
    return replay_tasks(size, seed)


def compiled_baselines(tasks) -> list:
    from brainbox.eval.compiled import CompiledBaselines, replay_calls, run_calls

    return run_calls(CompiledBaselines(7, "series"), replay_calls(tasks))


def reference_baselines(tasks) -> list:
    from brainbox.eval.baselines import Baselines
    from brainbox.eval.compiled import replay_calls, run_calls

    return run_calls(Baselines(7, "series"), replay_calls(tasks))


def compiled_replay(tasks) -> dict:
    from brainbox.eval.compiled import replay_series_fast

    return replay_series_fast(tasks, series="syn", seed=7)


def reference_replay(tasks) -> dict:
    from brainbox.eval.replay import replay_series

    return replay_series(tasks, series="syn", seed=7)


# --- comparisons ----------------------------------------------------------------------


def equal(got, want, where: str = "result") -> None:
    """Exact equality of nested results: arrays bit for bit (NaN equal to NaN) and of one
    dtype, tuples/lists item by item, anything else by ``==``."""
    if isinstance(want, np.ndarray) or isinstance(got, np.ndarray):
        got, want = np.asarray(got), np.asarray(want)
        np.testing.assert_array_equal(got, want, err_msg=where)
        return
    if isinstance(want, (tuple, list)) and isinstance(got, (tuple, list)):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            equal(g, w, f"{where}[{i}]")
        return
    assert got == want, where


def same(got: Outcome, want: Outcome, skip=()) -> None:
    """The same result and the same arguments after the call (in-place outputs)."""
    equal(got.result, want.result)
    for i, (g, w) in enumerate(zip(got.args, want.args)):
        if i not in skip and isinstance(w, np.ndarray):
            equal(g, w, f"argument {i}")


def same_but_hash(got: Outcome, want: Outcome) -> None:
    """fold_touches: the reference keeps no hash table (arguments 14, 15 ``hkeys``,
    ``hslot``); the compiled table must still map every edge (``find_edge`` finds each)."""
    same(got, want, skip=(14, 15))
    hkeys, hslot, esrc, edst, n_edges = *got.args[14:16], *got.args[16:18], got.args[21]
    mapping = R.hash_mapping(hkeys, hslot)
    assert len(mapping) == int(n_edges[0])
    for e in range(int(n_edges[0])):
        assert mapping[int(esrc[e]) * R.N_KEY + int(edst[e])] == e


def same_hash(got: Outcome, want: Outcome) -> None:
    """rebuild_hash: the same key -> edge mapping, whatever slots the keys landed in."""
    same(got, want, skip=(3, 4))
    assert R.hash_mapping(*got.args[3:5]) == R.hash_mapping(*want.args[3:5])


def same_ranking(got: Outcome, want: Outcome) -> None:
    """rank_files / rank_lexed (limit 0): nothing to rank on both sides, or the same
    candidates, scores (the same sums in the same order: exact), order, ranks, channels
    present and spreading parents."""
    assert got.result[0] == want.result[0]
    if got.result[0]:
        equal(got.result, want.result)


def same_records(got: Outcome, want: Outcome) -> None:
    """Replay results: everything but the timings."""
    g, w = dict(got.result), dict(want.result)
    g.pop("timings")
    w.pop("timings")
    equal(g, w)
