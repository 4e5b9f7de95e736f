"""The replay's per-event loop for one task, compiled (DESIGN §5; ``eval/replay.py``).

For each event of a task, in order: the P3 probe (next tool) if it is a tool call, the P2
probe (next file) if it names files, each ranked by the engine and the four compiled
baselines (the random baseline's rankings come precomputed), scored; then the event is
folded into the engine (touches, adjacency, n-grams, context terms) and the baselines.
It is ``eval.replay.replay_series``' inner loop with every step a kernel call, so the
Python reference loop and this one must give identical records (tests/test_replay_fast.py).

All inputs are namedtuples of arrays built by ``brainbox.eval.compiled``:

- ``E`` (:class:`Engine`): the engine state arrays (``brainbox.state.State``), updated in
  place; the postings and n-gram tables are returned (they may grow);
- ``enc`` (``brainbox.state.Encoded``): the task's events as what folding them changes;
- ``P`` (:class:`Probes`): per event, what the probes need (registry ids, universe
  growth, baseline inputs) and, per task, the query;
- ``B``: the baselines state (``kernels.replay.baselines``);
- ``S`` (:class:`Settings`): the task's constants, with recall's policy ``S.plan``
  (``kernels.policy.Plan``, built by ``brainbox.recall.plan``): the engine's rankings take
  their weights from ``kernels.policy`` (the session rule and ``s_max``), as recall does,
  so the loop has no copy of the policy.

Returns ``(status, next_event, post, ctxmap, grams)``; status :data:`DONE`, or
:data:`NEED_EDGES` (grow the edge arrays, then call again from ``next_event``; nothing of
that event happened yet) or :data:`NEED_POOL` (rebuild the adjacency with a larger pool,
then call again from ``next_event``; the previous event is complete but for its links,
which the rebuild makes), or a baselines status + 100 (input error).
"""

from collections import namedtuple

import numpy as np

from .. import scoring
from .._jit import jit
from ..adjacency import link_edges
from ..channels import N_CHANNELS, RECURRENCE, bm25_scores
from ..codes import PROMPT, TOOL_EVENT
from ..fusion import first_depth
from ..hebbian import GATE_MEMO, RESERVE, find_edge, fold_touches
from ..ngram import ngram_pairs
from ..policy import CREDIT_DEPTH, CREDIT_FILES, credit_file, in_session, weights
from ..predict import ngram_count, predict_kernel, tool_ids
from ..rank import rank_lexed
from ..spreading import spread_work
from ..table import table_add
from ..topk import top_k
from . import baselines
from .tasklex import task_bm25, task_term_add, task_terms, use_columns
from .tasklists import TaskLists, task_lex, task_lists, task_touch

DONE, NEED_EDGES, NEED_POOL = 0, 1, 2
N_METHODS = 6  # brainbox, recency, frequency, bm25, cosession, random
# out rows: per probe [probes, gold, eligible, scored, rr x N_METHODS]
P2_ROW, P3_ROW = 0, 1

Engine = namedtuple("Engine", (
    "kind n m act last hist hist_len deg win win_len hkeys hslot esrc edst ew ecount etime "
    "n_edges adj_off adj_len adj_cap pool_dst pool_e pool_used adj_linked last3 last3_len "
    "doclen is_blocked bl_cache rtop rtop_n"))

Probes = namedtuple("Probes", (
    # per event
    "file_ptr file_reg file_new file_path_ptr file_path_terms tool_reg tool_new "
    "tool_name_ptr tool_name_terms arg_ptr arg_terms prompt_ptr prompt_terms bl_sess "
    "nf_before nt_before "
    # per resource (engine id -> registry id, -1 if not a file / tool)
    "eng2file eng2tool res_path_ptr res_path_terms "
    # per task; snip_ids / snip_scores: recall's snippet channel for the task's description
    # (known files and their scores over what earlier tasks showed, brainbox.eval.seen;
    # empty without)
    "q_ids files in_proj rand_files rand_tools snip_ids snip_scores "
    # P1 and the description's prompt for the baselines (replay_task's first call)
    "p1_gold p1_state p1_out desc_terms "
    # the engine's ranked files with their confidence, for calibration: rows (event, file
    # registry id, score ratio, context: 1 if the session held a project file), event -1
    # for P1; cal_n[0] rows used
    "cal_out cal_n "
    # fusion learned per project (kernels.policy): the project's credit (float64[N_CHANNELS
    # + 1], updated in place, kept by the caller across the series' tasks); the opening
    # ranking's credit rows (from the full ranking: brainbox.learning.open_session) as
    # (file registry id, row...) in open_out[:open_n[0]] (also for
    # the fit), open_row the row of each resource (-1: none), open_mark the files credited
    # so far and open_cred[0] their count (-1: no opening to credit)
    "credit open_out open_n open_row open_mark open_cred "
    # the recurrence cache (recurrence_row) kept by the caller across the series' tasks:
    # every weight changes in this loop, which keeps the cached rows exact (rows of
    # in_proj's width; another width: a cache for this call only)
    "rc_ids rc_age rc_dense"))

Settings = namedtuple("Settings", (
    "nf nt k_files k_tools n_query plan in_order min_support n_res0 n_terms0 p1_at "
    "desc_sess open_sess open_plan"))


reciprocal_rank = jit(scoring.reciprocal_rank)  # the one definition, compiled here


@jit
def _rr_files(ranking, n, gold_mark):
    """Reciprocal rank of the first gold file (``gold_mark``) among ``ranking[:n]``."""
    for j in range(n):
        if gold_mark[ranking[j]]:
            return reciprocal_rank(j)
    return reciprocal_rank(-1)


@jit
def _rr_tool(ranking, n, tid):
    """Reciprocal rank of tool ``tid`` among ``ranking[:n]``."""
    for j in range(n):
        if ranking[j] == tid:
            return reciprocal_rank(j)
    return reciprocal_rank(-1)


REC_SLOTS = 16  # rows the recurrence cache keeps per task (the window's last 5 and more)


@jit
def recurrence_row(rc_ids, rc_age, rc_dense, u, clock, adj_off, adj_len, pool_dst, pool_e,
                   ew, in_proj):
    """The cache slot holding source ``u``'s row as dense weights over the task's
    resources (project files only, else 0); a missing row replaces the least recently
    used one, read from the adjacency (``Engine``'s arrays of those names). The helpers
    called per event take the arrays they read, not a namedtuple of them: a call counts a
    reference up and down for every array it is passed, a whole tuple's included.
    The rows of unused slots (``rc_ids`` -1) must be all 0, as ``np.zeros`` makes them."""
    for s in range(rc_ids.shape[0]):
        if rc_ids[s] == u:
            rc_age[s] = clock
            return s
    s = np.argmin(rc_age)
    d = rc_dense[s]
    if rc_ids[s] >= 0:  # an unused slot's row is still all 0 (np.zeros): writing it would
        d[:] = 0.0  # fault in every page of it, and most tasks fill only a few slots
    lo = adj_off[u]
    for q in range(lo, lo + adj_len[u]):
        v = pool_dst[q]
        if in_proj[v]:
            d[v] = ew[pool_e[q]]
    rc_ids[s] = u
    rc_age[s] = clock
    return s


@jit
def recurrence_fold(rc_ids, rc_dense, touched, before, hkeys, hslot, ew, in_proj):
    """Keep the cached rows exact after an event's touches: ``fold_touches`` changes (or
    makes) only edges between a touched resource and what its session window held, i.e.
    ``u -> v`` for touched v (any cached u) and ``v -> x`` for x in the window ``before``
    the event or touched in it."""
    for s in range(rc_ids.shape[0]):
        u = rc_ids[s]
        if u < 0:
            continue
        d = rc_dense[s]
        was_touched = False
        for v in touched:
            if v == u:
                was_touched = True
            elif in_proj[v]:
                e = find_edge(hkeys, hslot, u, v)
                if e >= 0:
                    d[v] = ew[e]
        if was_touched:
            for x in before:
                if x != u and in_proj[x]:
                    e = find_edge(hkeys, hslot, u, x)
                    if e >= 0:
                        d[x] = ew[e]


@jit
def recurrence_max(rc_dense, src, best, ids, sc, guess, sel_i, sel_s):
    """The recurrence channel from cached rows: ``best[v]`` the largest of rows ``src`` at
    ``v`` (0 if none), and its positive entries in ``ids``/``sc`` (ascending); returns
    ``(c, a)``: how many, and how many of them score above ``guess`` (>= 0), listed in
    ``sel_i``/``sel_s`` (ascending), so the channel's top needs no second pass when the
    guess is close (``recurrence_top``). Row by row with ``np.maximum`` (faster here than a
    loop over sources per entry), then one branch-free pass to list both."""
    if src.shape[0] == 0:
        best[:] = 0.0
    else:
        best[:] = rc_dense[src[0]]
        for j in range(1, src.shape[0]):
            np.maximum(best, rc_dense[src[j]], best)
    c = 0
    a = 0
    for v in range(best.shape[0]):
        x = best[v]
        ids[c] = v
        sc[c] = x
        c += x > 0.0
        sel_i[a] = v
        sel_s[a] = x
        a += x > guess
    return c, a


@jit
def recurrence_top(ids, sc, sel_i, sel_s, a, k):
    """``rank.top_k(ids, sc, k)`` (ids ascending, scores positive), given the ``a`` entries
    above a guess (``recurrence_max``). Weights saturate (a pair seen often has weight 1), so
    the best score is often held by k or more entries: then they are the first k of them in
    id order. Otherwise ``rank.top_k_above``'s rule: when at least k are above the guess and
    not all, the k best are among them."""
    if k <= 0:
        return top_k(ids, sc, k)
    m = sc.max()
    n_m = 0
    for j in range(sc.shape[0]):
        n_m += sc[j] == m
    if n_m >= k:
        out_i = np.empty(k, np.int64)
        c = 0
        for j in range(sc.shape[0]):
            if sc[j] == m:
                out_i[c] = ids[j]
                c += 1
                if c == k:
                    break
        return out_i, np.full(k, m)
    if a < k or a == ids.shape[0]:
        return top_k(ids, sc, k)
    return top_k(sel_i[:a], sel_s[:a], k)


@jit
def _known(q_sorted, n_terms):
    """The query's term ids known among the first ``n_terms`` (ascending)."""
    c = 0
    for j in range(q_sorted.shape[0]):
        if 0 <= q_sorted[j] < n_terms:
            c += 1
    tids = np.empty(c, np.int64)
    c = 0
    for j in range(q_sorted.shape[0]):
        if 0 <= q_sorted[j] < n_terms:
            tids[c] = q_sorted[j]
            c += 1
    return tids


@jit
def _cal_add(cal_out, cal_n, event, fid, conf, ctx):
    """One ranked file of the engine and its confidence, for calibration (``P.cal_out``,
    ``P.cal_n``)."""
    n = cal_n[0]
    if n < cal_out.shape[0]:
        cal_out[n, 0] = event
        cal_out[n, 1] = fid
        cal_out[n, 2] = conf
        cal_out[n, 3] = ctx
        cal_n[0] = n + 1


@jit
def _open(P, cand, ranks, present, rrf_k):
    """The opening ranking's credit rows (``brainbox.learning.open_session``'s): every
    candidate some channel ranked within the credit depth, in candidate order."""
    full = np.zeros(N_CHANNELS, np.int64)
    row = np.zeros(N_CHANNELS + 1, np.float64)
    n = 0
    for j in range(cand.shape[0]):
        deep = False  # ranked within the credit depth by some channel: a nonzero row
        for ch in range(N_CHANNELS):
            full[ch] = ranks[ch, j] if present[ch] else 0
            deep |= 0 < full[ch] <= CREDIT_DEPTH
        if not deep:  # most of a full ranking's candidates (thousands of files)
            continue
        row[:] = 0.0
        credit_file(row, full, rrf_k)
        if row[:N_CHANNELS].any() and n < P.open_out.shape[0]:
            P.open_out[n, 0] = P.eng2file[cand[j]]
            P.open_out[n, 1:] = row[:N_CHANNELS]
            P.open_row[cand[j]] = n
            n += 1
    P.open_n[0] = n
    P.open_cred[0] = 0


@jit
def _credit(P, touched):
    """Credit the project with the files of one event (``brainbox.learning.credit_touch``):
    the first ``CREDIT_FILES`` distinct project files after the opening."""
    for q in range(touched.shape[0]):
        r = touched[q]
        if r >= P.in_proj.shape[0] or not P.in_proj[r] or P.open_mark[r]:
            continue
        if P.open_cred[0] >= CREDIT_FILES:
            return
        P.open_mark[r] = True
        P.open_cred[0] += 1
        j = P.open_row[r]
        if j >= 0:
            for ch in range(N_CHANNELS):
                P.credit[ch] += P.open_out[j, 1 + ch]
        P.credit[N_CHANNELS] += 1.0


@jit
def _p1_score(P, B, S, ranking, c, out):
    """Score P1: the engine's ranking (``ranking[:c]``), the baselines' file rankings and
    the random one (step 0) against ``P.p1_gold`` (per row, P1-edit and P1-read: registry
    ids, -1 padded; an all -1 row is not scored). Adds to ``out[row]``: scored, then the
    reciprocal rank of each method."""
    nf, k_files = S.nf, S.k_files
    bl_out = np.empty((4, k_files), np.int64)
    lens = baselines.rank_files(B, nf, k_files, bl_out)
    rrow = P.rand_files[0]
    n_rand = 0
    while n_rand < rrow.shape[0] and rrow[n_rand] >= 0:
        n_rand += 1
    mark = np.zeros(max(nf, 1), np.bool_)
    gold = P.p1_gold
    for row in range(gold.shape[0]):
        if gold.shape[1] == 0 or gold[row, 0] < 0:
            continue
        for g in gold[row]:
            if g >= 0:
                mark[g] = True
        out[row, 0] += 1
        out[row, 1] += _rr_files(ranking, c, mark)
        for mth in range(4):
            out[row, 2 + mth] += _rr_files(bl_out[mth], lens[mth], mark)
        out[row, 6] += _rr_files(rrow, n_rand, mark)
        for g in gold[row]:
            if g >= 0:
                mark[g] = False


@jit
def replay_task(E, post, ctxmap, grams, enc, P, B, S, start, out):
    n_events = enc.ev_kind.shape[0]
    n_res = S.n_res0 if start == 0 else enc.n_res_after[start - 1]
    n_terms = S.n_terms0 if start == 0 else enc.n_terms_after[start - 1]
    nf, nt = S.nf, S.nt
    k_files, k_tools = S.k_files, S.k_tools
    pl = S.plan  # recall's policy (kernels.policy.Plan)
    # the arrays the per-event code reads most, out of their tuples once: each read of a
    # tuple's field counts a reference up and down, in loops too
    adj_off, adj_len, pool_dst, pool_e, ew = E.adj_off, E.adj_len, E.pool_dst, E.pool_e, E.ew
    in_proj, eng2file, file_reg, file_new = P.in_proj, P.eng2file, P.file_reg, P.file_new
    cal_out, cal_n, tch_res = P.cal_out, P.cal_n, enc.tch_res
    # scratch of the fold, sized for the task's largest event
    max_t = 0
    for i in range(start, n_events):
        max_t = max(max_t, enc.tch_ptr[i + 1] - enc.tch_ptr[i])
    t_sess_buf = np.empty(max_t, np.int64)
    gate_memo = np.full((GATE_MEMO, 2), np.nan)  # fold_touches' memo, kept across events
    t_time_buf = np.empty(max_t, np.float64)
    before = np.empty(E.win.shape[1] + max_t, np.int64)
    bl_out_f = np.empty((4, k_files), np.int64)
    bl_out_t = np.empty((4, k_tools), np.int64)
    gold_mark = np.zeros(max(nf, 1), np.bool_)
    ranking = np.empty(k_files, np.int64)
    q_sorted = np.sort(P.q_ids)
    # the query's terms as dense columns over the project's files, when they are common
    # (kernels.replay.tasklex): scored from them, bit for bit as from the postings
    cols = use_columns(q_sorted, P.files.shape[0], post)
    q_pos, q_tf, q_cnt = task_terms(q_sorted if cols else q_sorted[:0],  # (empty without)
                                    P.files if cols else P.files[:0],
                                    P.in_proj.shape[0] if cols else 0, post)
    one_sess = np.zeros(1, np.int64)
    one_tool = np.zeros(1, np.int64)
    ctx3 = np.empty(3, np.int64)
    nxt3 = np.empty(3, np.int64)
    no_w = np.zeros(0, np.float64)
    no_i = np.zeros(0, np.int64)
    no_f = np.zeros(0, np.float64)
    cap = min(E.esrc.shape[0], E.hkeys.shape[0] // 2)
    # the lexical channel's scores of the task's query, until a context term is added
    lex_key = -1
    lex_ids, lex_sc, lex_share = no_i, no_f, no_f
    # what every ranking of this task shares, kept exact event by event (rank.TaskLists)
    n_cur = np.searchsorted(P.files, n_res)
    t0 = enc.ev_time[start] if start < n_events else 0.0
    t1 = enc.ev_time[n_events - 1] if n_events else 0.0
    if P.p1_state[0] == 2:  # P1 ranks at S.p1_at, before the first event
        t0 = S.p1_at if start >= n_events else min(t0, S.p1_at)
        t1 = max(t1, S.p1_at)
    lists, list_n, bl_files, slot, lex_rank, share_d = task_lists(
        P.files[:n_cur], E.n, E.last, E.hist, E.hist_len, t0, t1, pl.top_n, S.in_order,
        E.bl_cache, P.in_proj.shape[0], P.files.shape[0] - n_cur + 1)
    lex_sorted, lex_sorted_sc = no_i, no_f
    # the recurrence channel from cached rows of the window's resources (recurrence_row)
    use_rec = pl.use[RECURRENCE] and pl.recurrence_from > 0
    n_all = P.in_proj.shape[0]
    if use_rec and P.rc_dense.shape[0] == REC_SLOTS and P.rc_dense.shape[1] == n_all:
        # the series' cache: its rows were loaded by earlier tasks (a tool's row holds
        # thousands of entries, each read through the edge ids); ages restart below 0
        rc_ids, rc_age, rc_dense = P.rc_ids, P.rc_age, P.rc_dense
        top = rc_age.max()
        for s in range(REC_SLOTS):
            rc_age[s] = rc_age[s] - top - 1 if rc_ids[s] >= 0 else -(1 << 62)
    else:
        rc_ids = np.full(REC_SLOTS if use_rec else 0, -1, np.int64)
        rc_age = np.full(rc_ids.shape[0], -1, np.int64)
        rc_dense = np.zeros((rc_ids.shape[0], n_all if use_rec else 0), np.float64)
    rec_best = np.zeros(n_all if use_rec else 0, np.float64)
    rec_ids = np.empty(rec_best.shape[0], np.int64)  # its positive entries (rank.TaskLists)
    rec_sc = np.empty(rec_best.shape[0], np.float64)
    rec_sel_i = np.empty(rec_best.shape[0], np.int64)  # those above the guess (recurrence_max)
    rec_sel_s = np.empty(rec_best.shape[0], np.float64)
    rec_src = np.empty(max(pl.recurrence_from, 0), np.int64)
    rec_kth = np.zeros(1, np.float64)
    rec_top = no_i
    tools = tool_ids(E.kind, 0, n_res)  # the tool resources, for P3 (grown as tools appear)
    work = spread_work(n_all)  # spreading's scratch (TaskLists)
    act_s = np.zeros(n_all, np.float64)
    parent_s = np.full(n_all, -1, np.int64)
    if P.p1_state[0] == 2:
        # P1 (replay_series' P1): the description ranked with no session, as before it is
        # folded (the engine's fold of it changed no ranking input); then the baselines'
        # and random rankings. Its lexical scores serve the first event too.
        c = 0
        n_files = np.searchsorted(P.files, n_res)
        if n_files > 0:
            tids = _known(q_sorted, n_terms)
            lex_ids, lex_sc, lex_share = bm25_scores(
                tids, S.n_query, pl.max_terms, P.files[:n_files], P.in_proj, E.doclen, post,
                P.res_path_ptr, P.res_path_terms, pl.path_w, n_all)
            lex_sorted, lex_sorted_sc = task_lex(lex_ids, lex_sc, lex_share, lex_sorted,
                                                 lex_rank, share_d)
            lex_key = tids.shape[0] * (P.files.shape[0] + 1) + n_files
            lam1, s_max1 = weights(pl, False, P.credit)  # no session to refer to
            status, cand, scores, order, _, present, _ = rank_lexed(
                lex_ids, lex_sc, lex_share, P.files[:n_files], P.in_proj, E.adj_off,
                E.adj_len, E.pool_dst, E.pool_e, E.ew, E.n_edges[0], E.m[:n_res],
                E.is_blocked, pl.seeds, pl.hops, pl.topk, pl.w_floor, pl.a_floor, E.n, E.last,
                E.hist, E.hist_len, S.p1_at, S.in_order, pl.top_n, no_i, pl.recurrence_from,
                P.snip_ids, P.snip_scores, pl.use, lam1, pl.rrf_k, s_max1, pl.min_conf,
                E.edst, E.rtop, E.rtop_n, E.bl_cache, k_files,
                TaskLists(lex_sorted, lex_sorted_sc, lex_rank, share_d, lists, list_n,
                          bl_files, slot, rec_best, rec_ids[:0], rec_sc[:0], no_i, work,
                          act_s, parent_s))
            if status and present.any():
                for j in range(min(k_files, order.shape[0])):
                    r = P.eng2file[cand[order[j]]]
                    if 0 <= r < nf and c < k_files:
                        ranking[c] = r
                        c += 1
                        if P.p1_gold.shape[1] > 0:
                            _cal_add(P.cal_out, P.cal_n, -1, r, scores[order[j]] / s_max1,
                                     0)
            if S.open_sess >= 0:  # the session's opening: its credit rows, from every
                # candidate's ranks (the limited ranking ranks only its contenders), as
                # brainbox.learning.open_session ranks it: recall without snippets
                op = S.open_plan
                lam0, s_max0 = weights(op, False, P.credit)
                st_a, cand_a, _, _, ranks_a, present_a, _ = rank_lexed(
                    lex_ids, lex_sc, lex_share, P.files[:n_files], P.in_proj, E.adj_off,
                    E.adj_len, E.pool_dst, E.pool_e, E.ew, E.n_edges[0], E.m[:n_res],
                    E.is_blocked, op.seeds, op.hops, op.topk, op.w_floor, op.a_floor,
                    E.n, E.last, E.hist, E.hist_len, S.p1_at, S.in_order, op.top_n, no_i,
                    op.recurrence_from, no_i, no_f, op.use, lam0, op.rrf_k, s_max0,
                    op.min_conf, E.edst, E.rtop, E.rtop_n, E.bl_cache, 0)
                if st_a and present_a.any():
                    _open(P, cand_a, ranks_a, present_a, op.rrf_k)
        if P.p1_gold.shape[1] > 0:
            _p1_score(P, B, S, ranking, c, P.p1_out)
        P.p1_state[0] = 1
    if P.p1_state[0] == 1:  # the description, as the baselines' prompt
        st = baselines.prompt(B, S.desc_sess, P.desc_terms)
        if st:
            return 100 + st, start, post, ctxmap, grams
        P.p1_state[0] = 0
    for i in range(start, n_events):
        lo, hi = enc.tch_ptr[i], enc.tch_ptr[i + 1]
        if E.n_edges[0] + RESERVE * (hi - lo) > cap:
            return NEED_EDGES, i, post, ctxmap, grams
        kind = enc.ev_kind[i]
        sid = enc.ev_sess[i]
        now = enc.ev_time[i]
        if kind == TOOL_EVENT:
            # --- P3: the next tool
            tid = P.tool_reg[i]
            out[P3_ROW, 0] += 1
            out[P3_ROW, 1] += 1
            if 0 <= tid < nt:
                out[P3_ROW, 2] += 1
                out[P3_ROW, 3] += 1
                kk = k_tools + P.nt_before[i] - nt
                ids, _ = predict_kernel(E.kind, E.n, n_res, E.last3, E.last3_len, sid, ctxmap,
                                        grams, adj_off, adj_len, pool_dst, pool_e, ew,
                                        S.min_support, kk, tools)
                c = 0
                for j in range(ids.shape[0]):
                    r = P.eng2tool[ids[j]]
                    if 0 <= r < nt and c < k_tools:
                        ranking[c] = r
                        c += 1
                out[P3_ROW, 4] += _rr_tool(ranking, c, tid)
                lens = baselines.rank_tools(B, nt, k_tools, bl_out_t)
                for mth in range(4):
                    out[P3_ROW, 5 + mth] += _rr_tool(bl_out_t[mth], lens[mth], tid)
                rrow = P.rand_tools[i + 1]
                c = 0
                while c < rrow.shape[0] and rrow[c] >= 0:
                    c += 1
                out[P3_ROW, 9] += _rr_tool(rrow, c, tid)
            # --- P2: the next file
            f_lo, f_hi = P.file_ptr[i], P.file_ptr[i + 1]
            if f_hi > f_lo:
                out[P2_ROW, 0] += 1
                out[P2_ROW, 1] += 1
                any_gold = False
                for q in range(f_lo, f_hi):
                    g = file_reg[q]
                    if 0 <= g < nf and not file_new[q]:
                        gold_mark[g] = True
                        any_gold = True
                if any_gold:
                    out[P2_ROW, 2] += 1
                    out[P2_ROW, 3] += 1
                    # the engine: recall(description, session) over the project's files
                    n_known = 0
                    for j in range(q_sorted.shape[0]):
                        if 0 <= q_sorted[j] < n_terms:
                            n_known += 1
                    n_files = np.searchsorted(P.files, n_res)
                    if lex_key != n_known * (P.files.shape[0] + 1) + n_files:
                        if cols:
                            lex_ids, lex_sc, lex_share = task_bm25(
                                q_sorted, n_terms, pl.max_terms, post.len, P.files, n_files,
                                E.doclen, q_tf, q_cnt, P.res_path_ptr, P.res_path_terms,
                                pl.path_w)
                        else:
                            lex_ids, lex_sc, lex_share = bm25_scores(
                                _known(q_sorted, n_terms), S.n_query, pl.max_terms,
                                P.files[:n_files], in_proj, E.doclen, post, P.res_path_ptr,
                                P.res_path_terms, pl.path_w, in_proj.shape[0])
                        lex_sorted, lex_sorted_sc = task_lex(lex_ids, lex_sc, lex_share,
                                                             lex_sorted, lex_rank, share_d)
                        lex_key = n_known * (P.files.shape[0] + 1) + n_files
                    window = E.win[sid, : E.win_len[sid]]
                    # the context: the session holds a file of the project (kernels.policy)
                    in_sess = 1 if in_session(window, in_proj) else 0
                    floor = pl.min_conf_session if in_sess else pl.min_conf
                    lam, s_max = weights(pl, in_sess == 1, P.credit)
                    limit = k_files + P.nf_before[i] - nf
                    n_pos = 0
                    rec_top = no_i
                    if use_rec and window.shape[0]:
                        n_src = 0
                        for j in range(max(0, window.shape[0] - pl.recurrence_from),
                                       window.shape[0]):
                            rec_src[n_src] = recurrence_row(
                                rc_ids, rc_age, rc_dense, window[j], i, adj_off, adj_len,
                                pool_dst, pool_e, ew, in_proj)
                            n_src += 1
                        n_pos, n_above = recurrence_max(rc_dense, rec_src[:n_src], rec_best,
                                                        rec_ids, rec_sc, 0.9 * rec_kth[0],
                                                        rec_sel_i, rec_sel_s)
                        if n_pos:  # its top, and the guess for the next call (scores move little)
                            rec_top, top_s = recurrence_top(rec_ids[:n_pos], rec_sc[:n_pos],
                                                            rec_sel_i, rec_sel_s, n_above,
                                                            min(first_depth(limit), n_pos))
                            rec_kth[0] = top_s[-1]
                    status, cand, scores, order, _, _, _ = rank_lexed(
                        lex_ids, lex_sc, lex_share, P.files[:n_files], in_proj,
                        adj_off, adj_len, pool_dst, pool_e, ew, E.n_edges[0],
                        E.m[:n_res], E.is_blocked, pl.seeds, pl.hops, pl.topk, pl.w_floor,
                        pl.a_floor, E.n, E.last, E.hist, E.hist_len, now, S.in_order, pl.top_n,
                        window, pl.recurrence_from, P.snip_ids, P.snip_scores, pl.use, lam,
                        pl.rrf_k, s_max,
                        floor, E.edst, E.rtop, E.rtop_n, E.bl_cache, limit,
                        TaskLists(lex_sorted, lex_sorted_sc, lex_rank, share_d, lists, list_n,
                                  bl_files, slot, rec_best, rec_ids[:n_pos], rec_sc[:n_pos],
                                  rec_top, work, act_s, parent_s))
                    c = 0
                    if status:
                        for j in range(min(limit, order.shape[0])):
                            r = eng2file[cand[order[j]]]
                            if 0 <= r < nf and c < k_files:
                                ranking[c] = r
                                c += 1
                                _cal_add(cal_out, cal_n, i, r, scores[order[j]] / s_max,
                                         in_sess)
                    out[P2_ROW, 4] += _rr_files(ranking, c, gold_mark)
                    lens = baselines.rank_files(B, nf, k_files, bl_out_f)
                    for mth in range(4):
                        out[P2_ROW, 5 + mth] += _rr_files(bl_out_f[mth], lens[mth], gold_mark)
                    rrow = P.rand_files[i + 1]
                    c = 0
                    while c < rrow.shape[0] and rrow[c] >= 0:
                        c += 1
                    out[P2_ROW, 9] += _rr_files(rrow, c, gold_mark)
                for q in range(f_lo, f_hi):
                    g = file_reg[q]
                    if 0 <= g < nf:
                        gold_mark[g] = False

        # --- fold the event into the engine
        if hi > lo:
            nt_ev = hi - lo
            n_before = E.win_len[sid]
            before[:n_before] = E.win[sid, :n_before]  # the window before the event
            before[n_before:n_before + nt_ev] = tch_res[lo:hi]  # and what it touches
            t_sess = t_sess_buf[:nt_ev]
            t_sess[:] = sid
            t_time = t_time_buf[:nt_ev]
            t_time[:] = now
            fold_touches(t_sess, tch_res[lo:hi], t_time, 0, E.kind, E.n, E.m, E.act,
                         E.last, E.hist, E.hist_len, E.deg, E.win, E.win_len, E.hkeys, E.hslot,
                         E.esrc, E.edst, ew, E.ecount, E.etime, E.n_edges, E.rtop, E.rtop_n,
                         gate_memo)
            if use_rec:
                recurrence_fold(rc_ids, rc_dense, tch_res[lo:hi], before[:n_before + nt_ev],
                                E.hkeys, E.hslot, ew, in_proj)
            if kind == TOOL_EVENT and sid == S.open_sess and P.open_cred[0] >= 0:
                _credit(P, tch_res[lo:hi])
        tool = enc.ev_tool[i]
        if tool >= 0:
            one_sess[0] = sid
            one_tool[0] = tool
            cnt = ngram_pairs(one_sess, one_tool, E.last3, E.last3_len, ctx3, nxt3)
            if cnt:
                ctxmap, grams = ngram_count(ctxmap, grams, ctx3, nxt3, cnt, no_w)
        for q in range(enc.add_ptr[i], enc.add_ptr[i + 1]):
            post = table_add(post, enc.add_tid[q], enc.add_rid[q], 1.0)
            E.doclen[enc.add_rid[q]] += 1.0
            if cols:
                task_term_add(q_sorted, q_pos, q_tf, q_cnt, enc.add_tid[q], enc.add_rid[q])
            lex_key = -1
        if enc.n_res_after[i] > n_res:
            new_tools = tool_ids(E.kind, n_res, enc.n_res_after[i])
            if new_tools.shape[0]:
                tools = np.concatenate((tools, new_tools))
        n_res = enc.n_res_after[i]
        n_terms = enc.n_terms_after[i]
        n_now = np.searchsorted(P.files, n_res)
        moved = np.empty(hi - lo + n_now - n_cur, np.int64)
        c = 0
        for q in range(lo, hi):
            r = tch_res[q]
            if r < in_proj.shape[0] and in_proj[r]:
                moved[c] = r
                c += 1
        for j in range(n_cur, n_now):  # candidates that joined (touched, so already in)
            moved[c] = P.files[j]
            c += 1
        if c:
            task_touch(lists, list_n, bl_files, E.n, E.last, moved[:c], pl.top_n)
        n_cur = n_now

        # --- and into the baselines
        bs = P.bl_sess[i]
        if kind == TOOL_EVENT:
            f_lo, f_hi = P.file_ptr[i], P.file_ptr[i + 1]
            st = baselines.tool_event(B, bs, P.tool_reg[i], P.tool_new[i],
                               P.tool_name_terms[P.tool_name_ptr[i]:P.tool_name_ptr[i + 1]],
                               file_reg[f_lo:f_hi], file_new[f_lo:f_hi],
                               P.file_path_ptr[f_lo:f_hi + 1] - P.file_path_ptr[f_lo],
                               P.file_path_terms[P.file_path_ptr[f_lo]:P.file_path_ptr[f_hi]],
                               P.arg_terms[P.arg_ptr[i]:P.arg_ptr[i + 1]])
            if st:
                return 100 + st, i, post, ctxmap, grams
        elif kind == PROMPT:
            st = baselines.prompt(B, bs, P.prompt_terms[P.prompt_ptr[i]:P.prompt_ptr[i + 1]])
            if st:
                return 100 + st, i, post, ctxmap, grams

        # --- link the new edges last: a full pool stops after a complete event
        if E.adj_linked[0] < E.n_edges[0]:
            done = link_edges(E.esrc, E.edst, E.adj_linked[0], E.n_edges[0], adj_off,
                              adj_len, E.adj_cap, pool_dst, pool_e, E.pool_used)
            E.adj_linked[0] = done
            if done < E.n_edges[0]:
                return NEED_POOL, i + 1, post, ctxmap, grams
    return DONE, n_events, post, ctxmap, grams
