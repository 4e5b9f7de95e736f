"""The replay's heuristic baselines, compiled (DESIGN §5; the reference is
``brainbox.eval.baselines``, whose module docstring defines every ranking and tie).

Recency, frequency, BM25 and co-session for files; recency, frequency, BM25 and tool
transitions (EdgeBank over ``prev -> next`` tool calls) for tools. The seeded random
baseline stays in Python (``brainbox.eval.baselines.RandomRanks``). Every ranking equals
the Python ``Baselines`` one exactly, including float ties (BM25 sums are taken in the
reference's order) and the reference's behaviour when ``k`` or ``n_universe`` vary within
a task (the co-session incremental top-k and the BM25 static prefix are replicated).

The state (:class:`BaselineState`, its layout, construction and growth) is in
``baseline_state``; the recency/frequency lists, co-session pairs and transitions in
``baseline_lists``; BM25 in ``baseline_bm25``. This module holds the kernels and
re-exports what callers use of the others.

Kernels
-------
:func:`begin_task`, :func:`prompt`, :func:`tool_event`, :func:`end_task`
return a status; :func:`rank_files` and :func:`rank_tools` fill ``out[0:4, :k]``
(recency, frequency, BM25, co-session / transitions; -1 padding) and return the four
lengths as a tuple (no allocation). ``k >= 1``: with the reference, ``k = 0`` is not
meaningful.

Costs: an update is O(1) per touched resource plus O(terms added) (hash probes); recency
and frequency rank in O(k + ids >= n_universe met on the way, i.e. the task's new ones);
BM25 scores the query terms' postings once per task (:func:`begin_task`: O(postings),
then a heap), and a ranking costs O(k + documents touched in the task), rescoring a touched
document in O(its query terms); co-session adds a file's row (its past co-files) when the
task first reaches the file, and ranks from the previous top k and the ids changed since,
except when the reference rescans (rows added since the last ranking longer than
``n_universe / 8``), then over the ids with a positive score (not all files);
transitions rank in O(out-degree of the last tool); :func:`end_task` is O(task files^2).

Calling from jitted code: numba increments and decrements (atomically) the reference count
of every array passed to a call, ~8 ns per array on this machine class, so passing the
state costs ~0.2 µs per kernel call; the kernels' helpers are inlined for that reason (the
performance rule in ``baseline_state``). A *cached* jitted caller keeps the kernel code it
was compiled with: numba checks only the caller's own file, which is why the cache
directory is named by a hash of every kernels module, these included
(``kernels._cache.source_hash``): an edit here sends every caller to a fresh cache.
"""

import numpy as np

from .._jit import jit
from .baseline_bm25 import bm_add, bm_begin, bm_top
from .baseline_lists import co_top, co_touch, give_prompt, touch_id, walk, x_top, x_touch
from .baseline_state import (
    BAD_INPUT,
    C_NZ,
    C_PREV,
    C_RHEAD,
    C_RLEN,
    C_SCORE,
    C_TASK,
    EMPTY,
    F_NEXT,
    I_CO_EPOCH,
    I_CO_FBREADY,
    I_CO_NNZ,
    I_CO_NPAIRS,
    I_CO_NPREV,
    I_CO_NT,
    I_CO_PENDN,
    I_CO_PENDTOT,
    I_CO_TOPLEN,
    I_FFIRST,
    I_NE,
    I_NSEEN,
    I_PINST,
    I_QN,
    I_RHEAD,
    I_TASK,
    I_X_LAST,
    I_X_N,
    I_X_NTASK,
    MAX_PROMPT_TERMS,
    N_KEY,
    NEED_FILE_ENTRIES,
    NEED_FILES,
    NEED_PAIRS,
    NEED_SEEN,
    NEED_SESSIONS,
    NEED_TERMS,
    NEED_TOOL_ENTRIES,
    NEED_TOOLS,
    NEED_TRANSITIONS,
    OK,
    P_CNT,
    P_G,
    P_NEXT,
    Q_ROW,
    Q_TERM,
    R_NEXT,
    S_PINST,
    S_PLEN,
    SIDE_F,
    SIDE_T,
    START,
    STATUS_NAMES,
    X_CNT,
    X_LIST,
    BaselineState,
    capacities,
    grow,
    grow_for_status,
    hash_home,
    hash_slot,
    new_state,
    reserve,
    usage,
)

# ---------------------------------------------------------------- public kernels

@jit(inline="always")
def _terms_status(terms, lo, hi, n_terms):
    for x in range(lo, hi):
        t = terms[x]
        if t < 0:
            return BAD_INPUT
        if t >= n_terms:
            return NEED_TERMS
    return OK


@jit
def begin_task(B, q_terms, n_files, n_tools):
    """Start a task (``Baselines.begin_task`` without the random baseline).

    ``q_terms`` int64[:]: the task description's distinct term ids in first-occurrence
    order (a repeated id is ignored after its first occurrence); ``n_files`` /
    ``n_tools`` (>= 0): the frozen universe sizes, the BM25 collection sizes N. Freezes
    the BM25 statistics and scores (O(postings of the query terms)), resets the task's
    co-session and transition state. Returns :data:`OK`, ``NEED_TERMS`` (a term id beyond
    the capacity) or ``BAD_INPUT``; on a status nothing changed.
    """
    nw = B.files_w.shape[1]
    st = _terms_status(q_terms, 0, q_terms.shape[0], nw)
    if st != OK:
        return st
    if n_files < 0 or n_tools < 0:
        return BAD_INPUT
    iv = B.iv
    iv[I_TASK] += 1
    Q = B.query_i
    for r in range(iv[I_QN]):
        Q[Q_ROW, Q[Q_TERM, r]] = EMPTY
    nq = 0
    for x in range(q_terms.shape[0]):
        t = q_terms[x]
        if Q[Q_ROW, t] == EMPTY:
            Q[Q_TERM, nq] = t
            Q[Q_ROW, t] = nq
            nq += 1
    iv[I_QN] = nq
    bm_begin(B.files_i, B.files_f, B.files_e, B.files_w, Q, B.query_f, iv, B.fv, SIDE_F, 0,
              n_files)
    bm_begin(B.tools_i, B.tools_f, B.tools_e, B.tools_w, Q, B.query_f, iv, B.fv, SIDE_T, 1,
              n_tools)
    FI = B.files_i
    for j in range(iv[I_CO_NNZ]):
        FI[C_SCORE, FI[C_NZ, j]] = 0
    iv[I_CO_NNZ] = 0
    iv[I_CO_NT] = 0
    iv[I_CO_FBREADY] = 0
    iv[I_CO_PENDN] = 0
    iv[I_CO_PENDTOT] = 0
    iv[I_CO_TOPLEN] = 0
    iv[I_CO_EPOCH] += 1
    iv[I_X_LAST] = START
    iv[I_X_NTASK] = 0
    return OK


@jit
def prompt(B, session, prompt_terms):
    """A prompt in ``session`` (``Baselines.prompt``): ``prompt_terms`` int64[:] are the
    prompt's first 64 distinct term ids (``eval.baselines.prompt_terms``; entries beyond 64
    are ignored). Later tool events of the session add them once to each file and tool
    document they touch. Returns :data:`OK`, ``NEED_SESSIONS``, ``NEED_TERMS`` or
    ``BAD_INPUT``; on a status nothing changed."""
    if session < 0:
        return BAD_INPUT
    if session >= B.sess_i.shape[1]:
        return NEED_SESSIONS
    n = min(prompt_terms.shape[0], MAX_PROMPT_TERMS)
    st = _terms_status(prompt_terms, 0, n, B.files_w.shape[1])
    if st != OK:
        return st
    for x in range(n):
        B.sess_terms[session, x] = prompt_terms[x]
    B.sess_i[S_PLEN, session] = n
    B.iv[I_PINST] += 1
    B.sess_i[S_PINST, session] = B.iv[I_PINST]
    return OK


@jit
def tool_event(B, session, tool, tool_new, tool_name_terms, files, files_new, path_ptr,
                  path_terms, arg_terms):
    """Record one tool call (``Baselines.tool_event``), in the reference's order: the
    tool's recency, frequency, transition, its BM25 document (name terms if ``tool_new``,
    ``arg_terms``, the session's prompt once per prompt); then per file in order its
    recency, frequency, co-session, document (path terms if new, ``arg_terms``, prompt).

    ``session``, ``tool``: dense ids; ``tool_name_terms`` int64[:] (read only when
    ``tool_new``); ``files`` int64[:] file ids in the event's order (repeats count twice);
    ``files_new`` bool[:] per file, first seen now; ``path_ptr`` int64[len(files) + 1]:
    file j's path terms are ``path_terms[path_ptr[j]:path_ptr[j + 1]]`` (read only when
    new); ``arg_terms`` int64[:]: the argument's term ids with repeats (may be empty).
    Returns :data:`OK` or a status (``NEED_*``, ``BAD_INPUT``), checked before anything
    changes.
    """
    iv = B.iv
    # -- checks (nothing changes before they pass)
    if session < 0 or tool < 0:
        return BAD_INPUT
    nf = files.shape[0]
    if files_new.shape[0] != nf or path_ptr.shape[0] < nf + 1:
        return BAD_INPUT
    nw = B.files_w.shape[1]
    need_files = False
    fadd = 0
    for j in range(nf):
        f = files[j]
        if f < 0:
            return BAD_INPUT
        if f >= B.files_i.shape[1]:
            need_files = True
        if files_new[j]:
            lo = path_ptr[j]
            hi = path_ptr[j + 1]
            if lo < 0 or hi < lo or hi > path_terms.shape[0]:
                return BAD_INPUT
            st = _terms_status(path_terms, lo, hi, nw)
            if st != OK:
                return st
            fadd += hi - lo
    na = arg_terms.shape[0]
    st = _terms_status(arg_terms, 0, na, nw)
    if st != OK:
        return st
    nn = 0
    if tool_new:
        nn = tool_name_terms.shape[0]
        st = _terms_status(tool_name_terms, 0, nn, nw)
        if st != OK:
            return st
    if need_files:
        return NEED_FILES
    if tool >= B.tools_i.shape[1]:
        return NEED_TOOLS
    if session >= B.sess_i.shape[1]:
        return NEED_SESSIONS
    plen = B.sess_i[S_PLEN, session]
    pl = max(plen, 0)
    if iv[SIDE_F + I_NE] + fadd + nf * (na + pl) > B.files_e.shape[1]:
        return NEED_FILE_ENTRIES
    if iv[SIDE_T + I_NE] + nn + na + pl > B.tools_e.shape[1]:
        return NEED_TOOL_ENTRIES
    if iv[I_X_N] + 1 > B.trans_e.shape[1]:
        return NEED_TRANSITIONS
    if 2 * (iv[I_NSEEN] + nf + 1) > B.seen_h.shape[1]:
        return NEED_SEEN
    # -- the tool
    Q = B.query_i
    SH = B.seen_h
    prompt = B.sess_terms[session]
    pin = B.sess_i[S_PINST, session]
    TI = B.tools_i
    touch_id(TI, iv, SIDE_T, tool)
    x_touch(TI, B.trans_e, B.trans_h, iv, tool)
    p3 = 0
    if plen > 0:
        g = give_prompt(SH, pin, (2 * session + 1) * N_KEY + tool)
        if g:
            p3 = plen
            if g == 2:
                iv[I_NSEEN] += 1
    bm_add(TI, B.tools_e, B.tools_h, B.tools_w, Q, iv, SIDE_T, tool, tool_name_terms, 0, nn,
            arg_terms, 0, na, prompt, 0, p3)
    # -- its files
    FI, FE, FH, FW, PE = B.files_i, B.files_e, B.files_h, B.files_w, B.pair_e
    for j in range(nf):
        f = files[j]
        touch_id(FI, iv, SIDE_F, f)
        co_touch(FI, PE, iv, f)
        p0 = p1 = path_ptr[j]
        if files_new[j]:
            p1 = path_ptr[j + 1]
        p3 = 0
        if plen > 0:
            g = give_prompt(SH, pin, (2 * session) * N_KEY + f)
            if g:
                p3 = plen
                if g == 2:
                    iv[I_NSEEN] += 1
        bm_add(FI, FE, FH, FW, Q, iv, SIDE_F, f, path_terms, p0, p1, arg_terms, 0, na,
                prompt, 0, p3)
    return OK


@jit
def end_task(B):
    """End the task (``Baselines.end_task``): every pair of its distinct files gains a
    shared session, every distinct transition of it a past task; the files become the
    co-session fallback seeds (if any). Returns :data:`OK` or ``NEED_PAIRS`` (nothing
    changed then). O(task files^2 + task transitions)."""
    iv = B.iv
    FI = B.files_i
    PE = B.pair_e
    PH = B.pair_h
    nt = iv[I_CO_NT]
    n_pairs = iv[I_CO_NPAIRS]
    if n_pairs + nt * nt > PE.shape[1]:  # count the new pairs exactly before refusing
        miss = 0
        for a in range(nt):
            f = FI[C_TASK, a]
            for b in range(nt):
                if PH[0, hash_slot(PH, f * N_KEY + FI[C_TASK, b])] == EMPTY:
                    miss += 1
        if n_pairs + miss > PE.shape[1]:
            return NEED_PAIRS
    mask = PH.shape[1] - 1
    for a in range(nt):
        f = FI[C_TASK, a]
        for b in range(nt):
            g = FI[C_TASK, b]
            key = f * N_KEY + g
            j = hash_home(key, mask)
            while PH[0, j] != key and PH[0, j] != EMPTY:
                j = (j + 1) & mask
            if PH[0, j] == EMPTY:
                e = iv[I_CO_NPAIRS]
                iv[I_CO_NPAIRS] = e + 1
                PH[0, j] = key
                PH[1, j] = e
                PE[P_G, e] = g
                PE[P_CNT, e] = 0
                PE[P_NEXT, e] = FI[C_RHEAD, f]
                FI[C_RHEAD, f] = e
                FI[C_RLEN, f] += 1
            else:
                e = PH[1, j]
            PE[P_CNT, e] += 1
    if nt > 0:
        for a in range(nt):
            FI[C_PREV, a] = FI[C_TASK, a]
        iv[I_CO_NPREV] = nt
    XE = B.trans_e
    for j in range(iv[I_X_NTASK]):
        XE[X_CNT, XE[X_LIST, j]] += 1
    return OK


@jit(inline="always")
def _check_out(out, k):
    if out.shape[0] < 4 or out.shape[1] < k:
        raise ValueError("out must be int64[4, >= k]")


@jit(inline="always")
def _padded(out, k, n0, n1, n2, n3):
    """Fill rows 0-3 of ``out`` with -1 after their lengths ``n0..n3``; return the lengths."""
    for j in range(n0, k):
        out[0, j] = EMPTY
    for j in range(n1, k):
        out[1, j] = EMPTY
    for j in range(n2, k):
        out[2, j] = EMPTY
    for j in range(n3, k):
        out[3, j] = EMPTY
    return n0, n1, n2, n3


@jit
def rank_files(B, n_universe, k, out):
    """File rankings over the universe ``id < n_universe``: ``out`` int64[>= 4, >= k] gets
    recency, frequency, BM25 and co-session in rows 0-3, ids best first in ``out[r, :k]``
    and -1 after the last. Returns the four lengths as a tuple of int64 (no allocation;
    index it like an array). ``k`` >= 1 (k <= 0: empty rankings, ``out`` untouched);
    ``ValueError`` if ``out`` is too small. Cost: O(k + the task's new files met) for
    recency and frequency, O(k + documents touched in the task) for BM25, O(k + ids whose
    score changed since the last call) for co-session (see :func:`co_top`). Changes only
    caches (the BM25 sorted prefix, the co-session top)."""
    if k <= 0:
        return 0, 0, 0, 0
    _check_out(out, k)
    I = B.files_i
    Fl = B.files_f
    iv = B.iv
    n0 = walk(I, R_NEXT, iv[SIDE_F + I_RHEAD], n_universe, k, out, 0)
    n1 = walk(I, F_NEXT, iv[SIDE_F + I_FFIRST], n_universe, k, out, 1)
    n2 = bm_top(I, Fl, B.files_e, B.query_i, B.query_f, iv, B.fv, SIDE_F, 0, n_universe,
                 k, out, 2)
    n3 = co_top(I, Fl, B.pair_e, iv, n_universe, k, out, 3)
    return _padded(out, k, n0, n1, n2, n3)


@jit
def rank_tools(B, n_universe, k, out):
    """Tool rankings over ``id < n_universe``, as :func:`rank_files`: rows recency,
    frequency, BM25 and transitions (tools that followed the task's last tool, or its
    start, in past tasks; O(out-degree of the last tool))."""
    if k <= 0:
        return 0, 0, 0, 0
    _check_out(out, k)
    I = B.tools_i
    Fl = B.tools_f
    iv = B.iv
    n0 = walk(I, R_NEXT, iv[SIDE_T + I_RHEAD], n_universe, k, out, 0)
    n1 = walk(I, F_NEXT, iv[SIDE_T + I_FFIRST], n_universe, k, out, 1)
    n2 = bm_top(I, Fl, B.tools_e, B.query_i, B.query_f, iv, B.fv, SIDE_T, 1, n_universe,
                 k, out, 2)
    n3 = x_top(I, Fl, B.trans_e, iv, n_universe, k, out, 3)
    return _padded(out, k, n0, n1, n2, n3)


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S11, _S27, _S30, _S31 = np.uint64(11), np.uint64(27), np.uint64(30), np.uint64(31)


@jit
def random_top_all(key, cols, n_universe, out):
    """The random baseline's ranking of every step at once (``eval.baselines.RandomRanks``,
    compiled): row ``i`` draws ``cols`` uniforms (splitmix64 of ``key`` and
    ``i * cols + j``, 53 bits) scaled to ``[0, n_universe)``, and ``out[i]`` gets its first
    ``min(k, n_universe)`` distinct draws in draw order (``k = out.shape[1]``), -1 after.
    ``key`` uint64. Returns the rows with too few distinct draws (left all -1: the caller
    ranks them by its exact fallback)."""
    steps, k = out.shape
    kk = min(k, n_universe)
    out[:] = -1
    bad = np.empty(steps, np.int64)
    n_bad = 0
    row = np.empty(cols, np.int64)
    for i in range(steps):
        for j in range(cols):
            x = np.uint64(i * cols + j) * _GOLDEN + key
            x = (x ^ (x >> _S30)) * _MIX1
            x = (x ^ (x >> _S27)) * _MIX2
            x ^= x >> _S31
            row[j] = np.int64(np.float64(x >> _S11) * (1.0 / 9007199254740992.0) * n_universe)
        c = 0
        for j in range(cols):
            if c == kk:
                break
            v = row[j]
            seen = False
            for q in range(j):
                if row[q] == v:
                    seen = True
                    break
            if not seen:
                out[i, c] = v
                c += 1
        if c < kk:
            out[i, :] = -1
            bad[n_bad] = i
            n_bad += 1
    return bad[:n_bad]


__all__ = [
    "BAD_INPUT",
    "NEED_FILES",
    "NEED_TERMS",
    "OK",
    "STATUS_NAMES",
    "BaselineState",
    "begin_task",
    "capacities",
    "end_task",
    "grow",
    "grow_for_status",
    "new_state",
    "prompt",
    "random_top_all",
    "rank_files",
    "rank_tools",
    "reserve",
    "tool_event",
    "usage",
]
