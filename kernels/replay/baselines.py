"""The replay's heuristic baselines, compiled (DESIGN §5; the reference is
``brainbox.eval.baselines``, whose module docstring defines every ranking and tie).

Recency, frequency, BM25 and co-session for files; recency, frequency, BM25 and tool
transitions (EdgeBank over ``prev -> next`` tool calls) for tools. The seeded random
baseline stays in Python (``brainbox.eval.baselines.RandomRanks``). Every ranking equals
the Python ``Baselines`` one exactly, including float ties (BM25 sums are taken in the
reference's order) and the reference's behaviour when ``k`` or ``n_universe`` vary within
a task (the co-session incremental top-k and the BM25 static prefix are replicated).

State
-----
:class:`BaselineState` is a namedtuple of 21 numpy arrays (no jitclass; every kernel
compiles with ``cache=True`` and is callable from other jitted code and from Python).
Per-resource fields are rows of a few 2-D matrices, one matrix per capacity. Capacities are
the array shapes (:func:`capacities`); :func:`new_state` makes a state, :func:`grow`
enlarges one (a new state; do not use the old one afterwards), :func:`reserve` grows for a
task of known size. Fields (N* = capacities):

- ``iv`` int64[N_IV], ``fv`` float64[N_FV]: scalars (``I_*``, ``V_*`` indices).
- ``files_i`` int64[N_FI, NF], ``files_f`` float64[N_SF, NF]: per file id (rows ``R_*``,
  ``F_*``, ``D_*``, ``S_*`` shared with tools, ``C_*`` co-session).
- ``tools_i`` int64[N_TI, NT], ``tools_f`` float64[N_SF, NT]: per tool id (``X_HEAD``).
- ``files_e`` / ``tools_e`` int64[N_E, M]: BM25 (document, term) entries (rows ``E_*``;
  field-major: an entry-major layout was measured slower on the synthetic series).
- ``files_h`` / ``tools_h`` int64[2, H]: open-addressing hash (doc, term) -> entry.
- ``files_w`` / ``tools_w`` int64[2, NW]: per term id: postings head, document frequency.
- ``query_i`` int64[2, NW]: the task's query terms (row order) and term -> row (-1: none);
  ``query_f`` float64[2, NW]: idf per query row, files (row 0) and tools (row 1).
- ``sess_terms`` int64[NS, 64], ``sess_i`` int64[2, NS]: per session its prompt terms,
  their count (-1: never prompted) and the prompt's instance number.
- ``seen_h`` int64[2, HS]: hash (session, side, id) -> prompt instance that was given to
  the resource (the reference's per-session "seen" sets, reset by every prompt).
- ``pair_e`` int64[3, MP], ``pair_h``: co-session pairs (f, g) -> past tasks holding both,
  chained per f (rows ``P_*``).
- ``trans_e`` int64[5, MX], ``trans_h``: tool transitions (prev, next) -> past tasks,
  chained per prev; row ``X_LIST`` lists the task's distinct transitions.

Hash tables hold at most half their slots (size a power of two, >= 2x their entry
capacity); keys are ``a * 2**31 + b`` (a < 2**32, b < 2**31) mixed with 32-bit
multiplications that never overflow int64, so the same code runs under
``NUMBA_DISABLE_JIT=1``.

Capacity
--------
Mutating kernels return a status (int64): :data:`OK` (0), or a ``NEED_*`` code naming the
capacity that is short, in which case *nothing* was changed: grow
(:func:`grow_for_status`, or :func:`grow`) and repeat the call. :data:`BAD_INPUT` means a
negative id or inconsistent arrays. A caller that grows between tasks calls
:func:`reserve` with the task's sizes and then never sees a status (see its docstring for
the bounds).

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
state costs ~0.2 µs per kernel call; the kernels' helpers are inlined for that reason (see
below). A *cached* jitted caller keeps the kernel code it was compiled with: numba's cache
is invalidated only by edits to the caller's own file, so clear ``NUMBA_CACHE_DIR`` (or
compile the caller with ``cache=False``) after changing this module.
"""

import collections
import math

import numpy as np

from .._jit import jit
from ..hebbian import mix32

K1 = 1.2
BM25_B = 0.75
MAX_PROMPT_TERMS = 64
N_KEY = 1 << 31
EMPTY = -1
START = -1  # the tool before a task's first call

# Statuses of the mutating kernels.
OK = 0
NEED_FILES = 1
NEED_TOOLS = 2
NEED_SESSIONS = 3
NEED_TERMS = 4
NEED_FILE_ENTRIES = 5
NEED_TOOL_ENTRIES = 6
NEED_PAIRS = 7
NEED_TRANSITIONS = 8
NEED_SEEN = 9
BAD_INPUT = 10
STATUS_NAMES = ("ok", "files", "tools", "sessions", "terms", "file_entries", "tool_entries",
                "pairs", "transitions", "seen", "bad_input")

# Rows of files_i / tools_i (0 .. N_SIDE_I - 1 shared by both sides).
R_PREV, R_NEXT = 0, 1  # recency: doubly linked list, most recent first
F_CNT, F_PREV, F_NEXT, F_BLK = 2, 3, 4, 5  # frequency: touches, list by (count desc, reach)
F_BHEAD, F_BFREE = 6, 7  # frequency block pool: head id of a count's block; free stack
D_LEN, D_HEAD, D_TAIL, D_NTERMS = 8, 9, 10, 11  # BM25 document: length, term chain, size
D_DYN, D_RHEAD, D_RTAIL, D_DIRTY, D_LIST = 12, 13, 14, 15, 16  # touched this task
S_SEEN, S_HID, S_SID = 17, 18, 19  # BM25 static ranking: stamp, heap ids, sorted ids
SCRI = 20  # scratch: a ranking's candidate ids
N_SIDE_I = 21
C_SCORE, C_NZ, C_TASK, C_TSTAMP, C_PREV = 21, 22, 23, 24, 25  # co-session (files only)
C_FB, C_FBNZ, C_PEND, C_PSTAMP, C_TOP = 26, 27, 28, 29, 30
C_RHEAD, C_RLEN = 31, 32
N_FI = 33
X_HEAD = 21  # transitions (tools only): head of the chain of transitions from a tool
N_TI = 22
# Rows of files_f / tools_f.
D_SCORE, S_ACC, S_HSC, S_SSC = 0, 1, 2, 3  # live score of a touched doc; static ranking
SCR, SCRB = 4, 5  # scratch: a ranking's candidate scores; the top-k buffer's scores
N_SF = 6
# Rows of files_e / tools_e (BM25 entries).
E_DOC, E_TERM, E_TF, E_NDOC, E_NTERM, E_NROW = 0, 1, 2, 3, 4, 5
N_E = 6
W_HEAD, W_DF = 0, 1  # files_w / tools_w
Q_TERM, Q_ROW = 0, 1  # query_i
S_PLEN, S_PINST = 0, 1  # sess_i
P_G, P_CNT, P_NEXT = 0, 1, 2  # pair_e
X_TO, X_CNT, X_LINK, X_STAMP, X_LIST = 0, 1, 2, 3, 4  # trans_e

# iv: per side (base SIDE_F or SIDE_T) ...
SIDE_F, SIDE_T = 0, 16
I_RHEAD, I_FFIRST, I_FLAST, I_BUSED, I_BFREE = 0, 1, 2, 3, 4
I_NE, I_TOTAL, I_DYNN, I_HN, I_SN = 5, 6, 7, 8, 9
# ... and global.
I_TASK, I_QN, I_PINST, I_NSEEN = 32, 33, 34, 35
I_CO_NT, I_CO_NNZ, I_CO_NPREV, I_CO_FBREADY, I_CO_FBN = 36, 37, 38, 39, 40
I_CO_PENDN, I_CO_PENDTOT, I_CO_TOPLEN, I_CO_EPOCH, I_CO_NPAIRS = 41, 42, 43, 44, 45
I_X_LAST, I_X_N, I_X_SHEAD, I_X_NTASK = 46, 47, 48, 49
N_IV = 56
V_AVGDL = 0  # fv[V_AVGDL + side]: side 0 files, 1 tools
N_FV = 4

_SIDE_DEFAULTS = [EMPTY, EMPTY, 0, EMPTY, EMPTY, EMPTY, EMPTY, 0, 0, EMPTY, EMPTY, 0,
                  EMPTY, EMPTY, EMPTY, 0, 0, EMPTY, 0, 0, 0]
FI_DEFAULTS = np.array(_SIDE_DEFAULTS + [0, 0, 0, EMPTY, 0, 0, 0, 0, EMPTY, 0, EMPTY, 0],
                       np.int64)
TI_DEFAULTS = np.array(_SIDE_DEFAULTS + [EMPTY], np.int64)
assert FI_DEFAULTS.shape[0] == N_FI and TI_DEFAULTS.shape[0] == N_TI

BaselineState = collections.namedtuple("BaselineState", [
    "iv", "fv",
    "files_i", "files_f", "files_e", "files_h", "files_w",
    "tools_i", "tools_f", "tools_e", "tools_h", "tools_w",
    "query_i", "query_f", "sess_terms", "sess_i", "seen_h",
    "pair_e", "pair_h", "trans_e", "trans_h",
])


# ---------------------------------------------------------------- construction (Python)

def _pow2(n: int) -> int:
    p = 16
    while p < n:
        p *= 2
    return p


def _id_matrix(defaults: np.ndarray, n: int) -> np.ndarray:
    return np.repeat(defaults[:, None], max(int(n), 1), axis=1)


def _hash(n_entries: int) -> np.ndarray:
    h = np.zeros((2, _pow2(2 * max(int(n_entries), 1))), np.int64)
    h[0] = EMPTY
    return h


def _terms_matrix(n: int) -> np.ndarray:
    w = np.zeros((2, max(int(n), 1)), np.int64)
    w[W_HEAD] = EMPTY
    return w


def new_state(files: int = 64, tools: int = 16, sessions: int = 16, terms: int = 256,
              file_entries: int = 1024, tool_entries: int = 256, pairs: int = 1024,
              transitions: int = 64, seen: int = 256) -> BaselineState:
    """An empty state (as a fresh ``Baselines``) with these capacities: ids below
    ``files`` / ``tools`` / ``sessions`` / ``terms``; at most ``file_entries`` /
    ``tool_entries`` distinct (document, term) pairs, ``pairs`` co-session pairs,
    ``transitions`` distinct tool transitions and ``seen`` (session, resource) marks."""
    iv = np.zeros(N_IV, np.int64)
    for base in (SIDE_F, SIDE_T):
        iv[base + I_RHEAD] = iv[base + I_FFIRST] = iv[base + I_FLAST] = EMPTY
    iv[I_X_LAST] = START
    iv[I_X_SHEAD] = EMPTY
    fv = np.zeros(N_FV, np.float64)
    fv[V_AVGDL] = fv[V_AVGDL + 1] = 1.0
    q = np.zeros((2, max(int(terms), 1)), np.int64)
    q[Q_ROW] = EMPTY
    si = np.full((2, max(int(sessions), 1)), EMPTY, np.int64)
    return BaselineState(
        iv=iv, fv=fv,
        files_i=_id_matrix(FI_DEFAULTS, files), files_f=np.zeros((N_SF, max(files, 1))),
        files_e=np.zeros((N_E, max(file_entries, 1)), np.int64), files_h=_hash(file_entries),
        files_w=_terms_matrix(terms),
        tools_i=_id_matrix(TI_DEFAULTS, tools), tools_f=np.zeros((N_SF, max(tools, 1))),
        tools_e=np.zeros((N_E, max(tool_entries, 1)), np.int64), tools_h=_hash(tool_entries),
        tools_w=_terms_matrix(terms),
        query_i=q, query_f=np.zeros((2, max(int(terms), 1))),
        sess_terms=np.zeros((max(int(sessions), 1), MAX_PROMPT_TERMS), np.int64), sess_i=si,
        seen_h=_hash(seen),
        pair_e=np.zeros((3, max(pairs, 1)), np.int64), pair_h=_hash(pairs),
        trans_e=np.zeros((5, max(transitions, 1)), np.int64), trans_h=_hash(transitions),
    )


def capacities(state: BaselineState) -> dict:
    """The capacities of ``state`` (the keyword names of :func:`new_state`)."""
    return {"files": state.files_i.shape[1], "tools": state.tools_i.shape[1],
            "sessions": state.sess_i.shape[1], "terms": state.files_w.shape[1],
            "file_entries": state.files_e.shape[1], "tool_entries": state.tools_e.shape[1],
            "pairs": state.pair_e.shape[1], "transitions": state.trans_e.shape[1],
            "seen": state.seen_h.shape[1] // 2}


def usage(state: BaselineState) -> dict:
    """How much of each entry capacity is used (the id capacities are the caller's)."""
    iv = state.iv
    return {"file_entries": int(iv[SIDE_F + I_NE]), "tool_entries": int(iv[SIDE_T + I_NE]),
            "pairs": int(iv[I_CO_NPAIRS]), "transitions": int(iv[I_X_N]),
            "seen": int(iv[I_NSEEN])}


def _wider(a: np.ndarray, n: int, fill) -> np.ndarray:
    """``a`` with its last axis widened to ``n``; new columns ``fill`` (scalar or a
    per-row column vector)."""
    out = np.empty(a.shape[:-1] + (n,), a.dtype)
    out[..., : a.shape[-1]] = a
    out[..., a.shape[-1]:] = fill
    return out


def grow(state: BaselineState, files: int = 0, tools: int = 0, sessions: int = 0,
         terms: int = 0, file_entries: int = 0, tool_entries: int = 0, pairs: int = 0,
         transitions: int = 0, seen: int = 0) -> BaselineState:
    """A state equal to ``state`` with at least the given capacities (the names of
    :func:`new_state`). A capacity that must grow grows to ``max(asked, 2 * current)``
    (amortised O(1) per item); hash tables are rebuilt, and the (session, resource) marks of
    superseded prompts are dropped then. Plain Python; call between kernel calls, never
    while a jitted caller still holds the old arrays. ``state`` must not be used after."""
    cap = capacities(state)
    want = {"files": files, "tools": tools, "sessions": sessions, "terms": terms,
            "file_entries": file_entries, "tool_entries": tool_entries, "pairs": pairs,
            "transitions": transitions, "seen": seen}
    new = {k: (cap[k] if int(v) <= cap[k] else max(int(v), 2 * cap[k]))
           for k, v in want.items()}
    s = state._asdict()
    s["iv"] = state.iv.copy()
    if new["files"] > cap["files"]:
        s["files_i"] = _wider(state.files_i, new["files"], FI_DEFAULTS[:, None])
        s["files_f"] = _wider(state.files_f, new["files"], 0.0)
    if new["tools"] > cap["tools"]:
        s["tools_i"] = _wider(state.tools_i, new["tools"], TI_DEFAULTS[:, None])
        s["tools_f"] = _wider(state.tools_f, new["tools"], 0.0)
    if new["terms"] > cap["terms"]:
        col = np.array([[EMPTY], [0]], np.int64)
        s["files_w"] = _wider(state.files_w, new["terms"], col)
        s["tools_w"] = _wider(state.tools_w, new["terms"], col)
        s["query_i"] = _wider(state.query_i, new["terms"], np.array([[0], [EMPTY]], np.int64))
        s["query_f"] = _wider(state.query_f, new["terms"], 0.0)
    if new["sessions"] > cap["sessions"]:
        s["sess_i"] = _wider(state.sess_i, new["sessions"], EMPTY)
        st = np.zeros((new["sessions"], MAX_PROMPT_TERMS), np.int64)
        st[: cap["sessions"]] = state.sess_terms
        s["sess_terms"] = st
    for key, e, h in (("file_entries", "files_e", "files_h"),
                      ("tool_entries", "tools_e", "tools_h"),
                      ("pairs", "pair_e", "pair_h"), ("transitions", "trans_e", "trans_h")):
        if new[key] > cap[key]:
            s[e] = _wider(getattr(state, e), new[key], 0)
            s[h] = _hash(new[key])
            _rehash(getattr(state, h), s[h])
    if new["seen"] > cap["seen"]:
        s["seen_h"] = _hash(new["seen"])
        s["iv"][I_NSEEN] = _rehash_seen(state.seen_h, s["seen_h"], s["sess_i"])
    return BaselineState(**s)


_STATUS_KEY = {NEED_FILES: "files", NEED_TOOLS: "tools", NEED_SESSIONS: "sessions",
               NEED_TERMS: "terms", NEED_FILE_ENTRIES: "file_entries",
               NEED_TOOL_ENTRIES: "tool_entries", NEED_PAIRS: "pairs",
               NEED_TRANSITIONS: "transitions", NEED_SEEN: "seen"}


def grow_for_status(state: BaselineState, status: int) -> BaselineState:
    """Double the capacity a kernel's ``NEED_*`` status names (``ValueError`` for
    ``BAD_INPUT`` or an unknown status). Retry the call after; repeat while short."""
    key = _STATUS_KEY.get(int(status))
    if key is None:
        raise ValueError(f"baseline kernel status {int(status)}: "
                         f"{STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else '?'}")
    return grow(state, **{key: 2 * capacities(state)[key]})


def reserve(state: BaselineState, *, files: int = 0, tools: int = 0, sessions: int = 0,
            terms: int = 0, tool_events: int = 0, file_touches: int = 0,
            task_files: int | None = None, file_term_adds: int = 0,
            tool_term_adds: int = 0) -> BaselineState:
    """Grow ``state`` (if needed) so that the next task runs without any ``NEED_*``
    status. ``files``/``tools``/``sessions``/``terms``: one more than the largest id the
    task uses (absolute); the rest are the task's counts:

    - ``tool_events``: its :func:`tool_event` calls; ``file_touches``: the files they
      name, with repeats; ``task_files``: distinct files among them (default
      ``file_touches``);
    - ``file_term_adds`` >= sum over its tool events of ``sum(len(path terms of the new
      files)) + len(files) * (len(arg_terms) + 64)``;
    - ``tool_term_adds`` >= sum over its tool events of ``len(tool_name_terms) [if
      tool_new] + len(arg_terms) + 64``.
    """
    u = usage(state)
    tf = file_touches if task_files is None else task_files
    return grow(state, files=files, tools=tools, sessions=sessions, terms=terms,
                file_entries=u["file_entries"] + file_term_adds,
                tool_entries=u["tool_entries"] + tool_term_adds,
                pairs=u["pairs"] + tf * tf, transitions=u["transitions"] + tool_events,
                seen=u["seen"] + tool_events + file_touches)


# ---------------------------------------------------------------- hashing
#
# Performance rule for this module: numba increments and decrements (atomically) the
# reference count of every array passed to a call, about 8 ns per array here. So helpers
# taking arrays are called once per kernel call or once per touched resource, never per
# term, per candidate or per heap node: those loops are written out inline (hash probes,
# row appends, sift-downs, scoring), and the candidates of a ranking are collected into
# scratch rows and selected by one call. Helpers called per item take scalars only. The
# per-call helpers are inlined into the kernels at numba IR level (``inline="always"``),
# which made a file ranking ~40% cheaper (measured on the synthetic series).

@jit
def _home(key, mask):
    """First probe slot of ``key`` (``a * 2**31 + b``, a < 2**32, b < 2**31)."""
    return mix32(mix32(key >> 31) ^ (key & 0x7FFFFFFF)) & mask


@jit
def _slot(h, key):
    """Slot of ``key`` in hash ``h`` (int64[2, H], row 0 keys, -1 empty, row 1 values):
    where the key is, or the empty slot where it belongs. H is a power of two and the
    table is at most half full, so the probe ends. (Cold paths only; hot paths inline the
    probe.)"""
    mask = h.shape[1] - 1
    j = _home(key, mask)
    while h[0, j] != key and h[0, j] != EMPTY:
        j = (j + 1) & mask
    return j


@jit
def _rehash(old, new):
    """Insert every (key, value) of hash ``old`` into the empty hash ``new``."""
    for i in range(old.shape[1]):
        key = old[0, i]
        if key != EMPTY:
            j = _slot(new, key)
            new[0, j] = key
            new[1, j] = old[1, i]


@jit
def _rehash_seen(old, new, sess_i):
    """As :func:`_rehash` for ``seen_h``, keeping only the marks of each session's current
    prompt; returns how many were kept."""
    n = 0
    for i in range(old.shape[1]):
        key = old[0, i]
        if key != EMPTY and old[1, i] == sess_i[S_PINST, (key >> 31) >> 1]:
            j = _slot(new, key)
            new[0, j] = key
            new[1, j] = old[1, i]
            n += 1
    return n


# ---------------------------------------------------------------- ranking helpers

@jit
def _better(s1, d1, s2, d2):
    """(score s1, id d1) ranks before (s2, d2): higher score, then lower id."""
    return s1 > s2 or (s1 == s2 and d1 < d2)


@jit(inline="always")
def _select(I, Fl, nc, k, out, r):
    """The best ``k`` (k >= 1) of the ``nc`` distinct candidates ``I[SCRI, :nc]`` with
    scores ``Fl[SCR, :nc]`` into ``out[r, :n]``, best first (ties: lower id); returns n.
    An insertion into a sorted buffer (scores in ``Fl[SCRB]``) with early rejection."""
    n = 0
    for c in range(nc):
        d = I[SCRI, c]
        s = Fl[SCR, c]
        if n == k:
            if not _better(s, d, Fl[SCRB, n - 1], out[r, n - 1]):
                continue
            j = n - 1
        else:
            j = n
            n += 1
        while j > 0 and _better(s, d, Fl[SCRB, j - 1], out[r, j - 1]):
            out[r, j] = out[r, j - 1]
            Fl[SCRB, j] = Fl[SCRB, j - 1]
            j -= 1
        out[r, j] = d
        Fl[SCRB, j] = s
    return n


@jit(inline="always")
def _walk(I, nxt, first, n_universe, k, out, r):
    """The first ``k`` ids below ``n_universe`` of the list starting at ``first`` and
    linked by row ``nxt`` of ``I``, into ``out[r]``."""
    n = 0
    i = first
    while i != EMPTY and n < k:
        if i < n_universe:
            out[r, n] = i
            n += 1
        i = I[nxt, i]
    return n


# ---------------------------------------------------------------- recency, frequency

@jit(inline="always")
def _touch(I, iv, base, i):
    """One touch of ``i``: recency and frequency.

    Recency: a doubly linked list, most recent first (``i`` is in it iff its count > 0).
    Frequency: a list by (count desc, time the count was reached asc); blocks of equal
    counts are contiguous, and a touched id moves to the end of the block one count up,
    i.e. just before the head of its own block. Block nodes (their head id) come from a
    pool with a free stack: live blocks <= touched ids <= capacity."""
    c = I[F_CNT, i]
    head = iv[base + I_RHEAD]
    if head != i:
        if c > 0:
            p = I[R_PREV, i]
            n = I[R_NEXT, i]
            I[R_NEXT, p] = n
            if n != EMPTY:
                I[R_PREV, n] = p
        I[R_PREV, i] = EMPTY
        I[R_NEXT, i] = head
        if head != EMPTY:
            I[R_PREV, head] = i
        iv[base + I_RHEAD] = i
    if c == 0:  # a new id: the end of the block of count 1, which ends the list
        tail = iv[base + I_FLAST]
        I[F_PREV, i] = tail
        I[F_NEXT, i] = EMPTY
        if tail == EMPTY:
            iv[base + I_FFIRST] = i
        else:
            I[F_NEXT, tail] = i
        iv[base + I_FLAST] = i
        if tail != EMPTY and I[F_CNT, tail] == 1:
            I[F_BLK, i] = I[F_BLK, tail]
            I[F_CNT, i] = 1
            return
        b = EMPTY
        freed = False
    else:
        b = I[F_BLK, i]
        h = I[F_BHEAD, b]
        freed = False
        if h == i:
            n = I[F_NEXT, i]
            if n != EMPTY and I[F_CNT, n] == c:
                I[F_BHEAD, b] = n
            else:
                freed = True  # i was its block's only member
        else:  # unlink i, re-insert it just before h
            p = I[F_PREV, i]
            n = I[F_NEXT, i]
            I[F_NEXT, p] = n
            if n == EMPTY:
                iv[base + I_FLAST] = p
            else:
                I[F_PREV, n] = p
            hp = I[F_PREV, h]
            I[F_PREV, i] = hp
            I[F_NEXT, i] = h
            I[F_PREV, h] = i
            if hp == EMPTY:
                iv[base + I_FFIRST] = i
            else:
                I[F_NEXT, hp] = i
        p = I[F_PREV, i]
        if p != EMPTY and I[F_CNT, p] == c + 1:  # join the block one count up
            I[F_BLK, i] = I[F_BLK, p]
            I[F_CNT, i] = c + 1
            if freed:
                nfree = iv[base + I_BFREE]
                I[F_BFREE, nfree] = b
                iv[base + I_BFREE] = nfree + 1
            return
    if not freed:  # a block of its own: reuse the freed one, else allocate
        nfree = iv[base + I_BFREE]
        if nfree > 0:
            iv[base + I_BFREE] = nfree - 1
            b = I[F_BFREE, nfree - 1]
        else:
            b = iv[base + I_BUSED]
            iv[base + I_BUSED] = b + 1
    I[F_BHEAD, b] = i
    I[F_BLK, i] = b
    I[F_CNT, i] = c + 1


# ---------------------------------------------------------------- BM25

@jit(inline="always")
def _bm_add(I, E, H, W, Q, iv, base, doc, a1, lo1, hi1, a2, lo2, hi2, a3, lo3, hi3):
    """Append ``a1[lo1:hi1]``, ``a2[lo2:hi2]``, ``a3[lo3:hi3]`` (term ids, with repeats)
    to document ``doc``: ``Bm25.add`` three times in a row (equivalent: the reference
    takes the task's query rows of the document at its first non-empty addition, before
    adding any term). Entries of the document chain in insertion order; a document touched
    in the task keeps its query-term entries chained in the reference's ``dyn[doc]`` dict
    order, the order its score is summed in."""
    total = (hi1 - lo1) + (hi2 - lo2) + (hi3 - lo3)
    if total <= 0:
        return
    mask = H.shape[1] - 1
    if I[D_DYN, doc] != iv[I_TASK]:  # first touch in this task: its query rows so far
        I[D_DYN, doc] = iv[I_TASK]
        nd = iv[base + I_DYNN]
        I[D_LIST, nd] = doc
        iv[base + I_DYNN] = nd + 1
        tail = EMPTY
        nq = iv[I_QN]
        if I[D_NTERMS, doc] < nq:  # the document's terms, in insertion order
            e = I[D_HEAD, doc]
            while e != EMPTY:
                if Q[Q_ROW, E[E_TERM, e]] >= 0:
                    if tail == EMPTY:
                        I[D_RHEAD, doc] = e
                    else:
                        E[E_NROW, tail] = e
                    tail = e
                e = E[E_NDOC, e]
        else:  # the query rows, in order
            for r in range(nq):
                key = doc * N_KEY + Q[Q_TERM, r]
                j = _home(key, mask)
                while H[0, j] != key and H[0, j] != EMPTY:
                    j = (j + 1) & mask
                if H[0, j] == key:
                    e = H[1, j]
                    if tail == EMPTY:
                        I[D_RHEAD, doc] = e
                    else:
                        E[E_NROW, tail] = e
                    tail = e
        if tail == EMPTY:
            I[D_RHEAD, doc] = EMPTY
        else:
            E[E_NROW, tail] = EMPTY
        I[D_RTAIL, doc] = tail
    for part in range(3):
        if part == 0:
            terms, lo, hi = a1, lo1, hi1
        elif part == 1:
            terms, lo, hi = a2, lo2, hi2
        else:
            terms, lo, hi = a3, lo3, hi3
        for x in range(lo, hi):
            t = terms[x]
            key = doc * N_KEY + t
            j = _home(key, mask)
            while H[0, j] != key and H[0, j] != EMPTY:
                j = (j + 1) & mask
            if H[0, j] == key:
                E[E_TF, H[1, j]] += 1
                continue
            e = iv[base + I_NE]
            iv[base + I_NE] = e + 1
            H[0, j] = key
            H[1, j] = e
            E[E_DOC, e] = doc
            E[E_TERM, e] = t
            E[E_TF, e] = 1
            E[E_NDOC, e] = EMPTY
            dt = I[D_TAIL, doc]
            if dt == EMPTY:
                I[D_HEAD, doc] = e
            else:
                E[E_NDOC, dt] = e
            I[D_TAIL, doc] = e
            I[D_NTERMS, doc] += 1
            E[E_NTERM, e] = W[W_HEAD, t]
            W[W_HEAD, t] = e
            W[W_DF, t] += 1
            if Q[Q_ROW, t] >= 0:  # a new query row: appended to the row chain
                E[E_NROW, e] = EMPTY
                rt = I[D_RTAIL, doc]
                if rt == EMPTY:
                    I[D_RHEAD, doc] = e
                else:
                    E[E_NROW, rt] = e
                I[D_RTAIL, doc] = e
    I[D_LEN, doc] += total
    iv[base + I_TOTAL] += total
    I[D_DIRTY, doc] = 1


@jit
def _bm_begin(I, Fl, E, W, Q, QF, iv, fv, base, side, n_docs):
    """``Bm25.set_query``: freeze N, avgdl and the idfs; score every document holding a
    query term (summing rows in query order, as the reference's bincount) and heap the
    nonzero ones (best at the root); forget the touched set."""
    total = iv[base + I_TOTAL]
    avgdl = total / n_docs if n_docs else 1.0
    if avgdl == 0.0:
        avgdl = 1.0
    fv[V_AVGDL + side] = avgdl
    nq = iv[I_QN]
    for r in range(nq):
        df = W[W_DF, Q[Q_TERM, r]]
        QF[side, r] = math.log1p((n_docs - df + 0.5) / (df + 0.5))
    task = iv[I_TASK]
    iv[base + I_DYNN] = 0
    n = 0
    for r in range(nq):
        idf = QF[side, r]
        e = W[W_HEAD, Q[Q_TERM, r]]
        while e != EMPTY:
            d = E[E_DOC, e]
            tf = float(E[E_TF, e])
            norm = K1 * (1.0 - BM25_B + BM25_B * float(I[D_LEN, d]) / avgdl)
            w = idf * tf * (K1 + 1.0) / (tf + norm)
            if I[S_SEEN, d] != task:
                I[S_SEEN, d] = task
                Fl[S_ACC, d] = 0.0
                I[S_HID, n] = d
                n += 1
            Fl[S_ACC, d] += w
            e = E[E_NTERM, e]
    m = 0
    for j in range(n):
        d = I[S_HID, j]
        s = Fl[S_ACC, d]
        if s != 0.0:
            I[S_HID, m] = d
            Fl[S_HSC, m] = s
            m += 1
    for j0 in range(m // 2 - 1, -1, -1):  # heapify: sift each inner node down
        j = j0
        d = I[S_HID, j]
        s = Fl[S_HSC, j]
        while True:
            c = 2 * j + 1
            if c >= m:
                break
            if c + 1 < m and _better(Fl[S_HSC, c + 1], I[S_HID, c + 1], Fl[S_HSC, c],
                                     I[S_HID, c]):
                c += 1
            if not _better(Fl[S_HSC, c], I[S_HID, c], s, d):
                break
            I[S_HID, j] = I[S_HID, c]
            Fl[S_HSC, j] = Fl[S_HSC, c]
            j = c
        I[S_HID, j] = d
        Fl[S_HSC, j] = s
    iv[base + I_HN] = m
    iv[base + I_SN] = 0


@jit(inline="always")
def _bm_top(I, Fl, E, Q, QF, iv, fv, base, side, n_universe, k, out, r):
    """``Bm25.top`` into ``out[r]``: the documents touched in the task with a positive
    live score, merged with the first ``k`` untouched ones below ``n_universe`` in the
    static order's prefix of length ``k + touched`` (the reference's bound). The static
    order is popped from the heap as far as needed."""
    nc = 0
    nd = iv[base + I_DYNN]
    avgdl = fv[V_AVGDL + side]
    for j in range(nd):
        d = I[D_LIST, j]
        if d >= n_universe:
            continue
        if I[D_DIRTY, d]:  # rescore: O(its query terms)
            norm = K1 * (1.0 - BM25_B + BM25_B * float(I[D_LEN, d]) / avgdl)
            s = 0.0
            e = I[D_RHEAD, d]
            while e != EMPTY:
                tf = float(E[E_TF, e])
                s += QF[side, Q[Q_ROW, E[E_TERM, e]]] * tf * (K1 + 1.0) / (tf + norm)
                e = E[E_NROW, e]
            Fl[D_SCORE, d] = s
            I[D_DIRTY, d] = 0
        s = Fl[D_SCORE, d]
        if s > 0:
            I[SCRI, nc] = d
            Fl[SCR, nc] = s
            nc += 1
    m = k + nd
    sn = iv[base + I_SN]
    hn = iv[base + I_HN]
    if sn < m and hn > 0:  # pop the heap into the sorted prefix
        while sn < m and hn > 0:
            I[S_SID, sn] = I[S_HID, 0]
            Fl[S_SSC, sn] = Fl[S_HSC, 0]
            sn += 1
            hn -= 1
            if hn == 0:
                break
            d = I[S_HID, hn]
            s = Fl[S_HSC, hn]
            j = 0
            while True:
                c = 2 * j + 1
                if c >= hn:
                    break
                if c + 1 < hn and _better(Fl[S_HSC, c + 1], I[S_HID, c + 1], Fl[S_HSC, c],
                                          I[S_HID, c]):
                    c += 1
                if not _better(Fl[S_HSC, c], I[S_HID, c], s, d):
                    break
                I[S_HID, j] = I[S_HID, c]
                Fl[S_HSC, j] = Fl[S_HSC, c]
                j = c
            I[S_HID, j] = d
            Fl[S_HSC, j] = s
        iv[base + I_SN] = sn
        iv[base + I_HN] = hn
    task = iv[I_TASK]
    taken = 0
    for j in range(min(m, sn)):
        d = I[S_SID, j]
        if I[D_DYN, d] != task and d < n_universe:
            I[SCRI, nc] = d
            Fl[SCR, nc] = Fl[S_SSC, j]
            nc += 1
            taken += 1
            if taken == k:
                break
    return _select(I, Fl, nc, k, out, r)


# ---------------------------------------------------------------- co-session, transitions

@jit(inline="always")
def _co_touch(I, PE, iv, f):
    """The task reaches file ``f``: add its row (past co-sessions) to the task's scores."""
    if I[C_TSTAMP, f] == iv[I_TASK]:
        return
    I[C_TSTAMP, f] = iv[I_TASK]
    I[C_TASK, iv[I_CO_NT]] = f
    iv[I_CO_NT] += 1
    ep = iv[I_CO_EPOCH]
    nnz = iv[I_CO_NNZ]
    npend = iv[I_CO_PENDN]
    e = I[C_RHEAD, f]
    while e != EMPTY:
        g = PE[P_G, e]
        if I[C_SCORE, g] == 0:
            I[C_NZ, nnz] = g
            nnz += 1
        I[C_SCORE, g] += PE[P_CNT, e]
        if I[C_PSTAMP, g] != ep:
            I[C_PSTAMP, g] = ep
            I[C_PEND, npend] = g
            npend += 1
        e = PE[P_NEXT, e]
    iv[I_CO_NNZ] = nnz
    iv[I_CO_PENDN] = npend
    iv[I_CO_PENDTOT] += I[C_RLEN, f]


@jit(inline="always")
def _co_top(I, Fl, PE, iv, n_universe, k, out, r):
    """``CoSession.top`` into ``out[r]``, its rule included: with no file in the task, the
    previous task's files seed a fallback score (computed once per task); otherwise, when
    the rows added since the last ranking hold more than ``n_universe / 8`` entries, all
    ids with a positive score are ranked, else only the previous top and the ids whose
    score changed since. (With fixed k and universe, as in the replay, each is the exact
    top k; the reference is path dependent otherwise, and so is this.)"""
    nc = 0
    if iv[I_CO_NT] == 0:
        if iv[I_CO_FBREADY] == 0:
            for j in range(iv[I_CO_FBN]):
                I[C_FB, I[C_FBNZ, j]] = 0
            nfb = 0
            for j in range(iv[I_CO_NPREV]):
                e = I[C_RHEAD, I[C_PREV, j]]
                while e != EMPTY:
                    g = PE[P_G, e]
                    if I[C_FB, g] == 0:
                        I[C_FBNZ, nfb] = g
                        nfb += 1
                    I[C_FB, g] += PE[P_CNT, e]
                    e = PE[P_NEXT, e]
            iv[I_CO_FBN] = nfb
            iv[I_CO_FBREADY] = 1
        for j in range(iv[I_CO_FBN]):
            g = I[C_FBNZ, j]
            if g < n_universe:
                I[SCRI, nc] = g
                Fl[SCR, nc] = float(I[C_FB, g])
                nc += 1
        return _select(I, Fl, nc, k, out, r)
    if iv[I_CO_PENDTOT] * 8 > n_universe:
        for j in range(iv[I_CO_NNZ]):
            g = I[C_NZ, j]
            if g < n_universe:
                I[SCRI, nc] = g
                Fl[SCR, nc] = float(I[C_SCORE, g])
                nc += 1
    else:
        ep = iv[I_CO_EPOCH]
        for j in range(iv[I_CO_TOPLEN]):
            g = I[C_TOP, j]
            if I[C_PSTAMP, g] != ep and g < n_universe and I[C_SCORE, g] > 0:
                I[SCRI, nc] = g
                Fl[SCR, nc] = float(I[C_SCORE, g])
                nc += 1
        for j in range(iv[I_CO_PENDN]):
            g = I[C_PEND, j]
            if g < n_universe and I[C_SCORE, g] > 0:
                I[SCRI, nc] = g
                Fl[SCR, nc] = float(I[C_SCORE, g])
                nc += 1
    n = _select(I, Fl, nc, k, out, r)
    for j in range(n):
        I[C_TOP, j] = out[r, j]
    iv[I_CO_TOPLEN] = n
    iv[I_CO_EPOCH] += 1
    iv[I_CO_PENDN] = 0
    iv[I_CO_PENDTOT] = 0
    return n


@jit(inline="always")
def _x_touch(TI, XE, XH, iv, tool):
    """Record the transition (last tool -> ``tool``) once per task."""
    last = iv[I_X_LAST]
    key = (last + 1) * N_KEY + tool
    j = _slot(XH, key)
    if XH[0, j] == EMPTY:
        e = iv[I_X_N]
        iv[I_X_N] = e + 1
        XH[0, j] = key
        XH[1, j] = e
        XE[X_TO, e] = tool
        XE[X_CNT, e] = 0
        XE[X_STAMP, e] = EMPTY
        if last == START:
            XE[X_LINK, e] = iv[I_X_SHEAD]
            iv[I_X_SHEAD] = e
        else:
            XE[X_LINK, e] = TI[X_HEAD, last]
            TI[X_HEAD, last] = e
    else:
        e = XH[1, j]
    if XE[X_STAMP, e] != iv[I_TASK]:
        XE[X_STAMP, e] = iv[I_TASK]
        XE[X_LIST, iv[I_X_NTASK]] = e
        iv[I_X_NTASK] += 1
    iv[I_X_LAST] = tool


@jit(inline="always")
def _x_top(TI, Fl, XE, iv, n_universe, k, out, r):
    """Tools that followed the last tool in past tasks, by task count, ties by id."""
    nc = 0
    last = iv[I_X_LAST]
    e = iv[I_X_SHEAD] if last == START else TI[X_HEAD, last]
    while e != EMPTY:
        c = XE[X_CNT, e]
        t = XE[X_TO, e]
        if c > 0 and t < n_universe:
            TI[SCRI, nc] = t
            Fl[SCR, nc] = float(c)
            nc += 1
        e = XE[X_LINK, e]
    return _select(TI, Fl, nc, k, out, r)


@jit(inline="always")
def _give_prompt(SH, pin, key):
    """True when the resource of ``key`` = (2 * session + side, id) has not yet been given
    the session's current prompt (instance ``pin``); marks it given. Returns 2 for a new
    mark (one more key in the table), 1 for an updated one, 0 when already given."""
    mask = SH.shape[1] - 1
    j = _home(key, mask)
    while SH[0, j] != key and SH[0, j] != EMPTY:
        j = (j + 1) & mask
    if SH[0, j] == key:
        if SH[1, j] == pin:
            return 0
        SH[1, j] = pin
        return 1
    SH[0, j] = key
    SH[1, j] = pin
    return 2


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
    _bm_begin(B.files_i, B.files_f, B.files_e, B.files_w, Q, B.query_f, iv, B.fv, SIDE_F, 0,
              n_files)
    _bm_begin(B.tools_i, B.tools_f, B.tools_e, B.tools_w, Q, B.query_f, iv, B.fv, SIDE_T, 1,
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
    _touch(TI, iv, SIDE_T, tool)
    _x_touch(TI, B.trans_e, B.trans_h, iv, tool)
    p3 = 0
    if plen > 0:
        g = _give_prompt(SH, pin, (2 * session + 1) * N_KEY + tool)
        if g:
            p3 = plen
            if g == 2:
                iv[I_NSEEN] += 1
    _bm_add(TI, B.tools_e, B.tools_h, B.tools_w, Q, iv, SIDE_T, tool, tool_name_terms, 0, nn,
            arg_terms, 0, na, prompt, 0, p3)
    # -- its files
    FI, FE, FH, FW, PE = B.files_i, B.files_e, B.files_h, B.files_w, B.pair_e
    for j in range(nf):
        f = files[j]
        _touch(FI, iv, SIDE_F, f)
        _co_touch(FI, PE, iv, f)
        p0 = p1 = path_ptr[j]
        if files_new[j]:
            p1 = path_ptr[j + 1]
        p3 = 0
        if plen > 0:
            g = _give_prompt(SH, pin, (2 * session) * N_KEY + f)
            if g:
                p3 = plen
                if g == 2:
                    iv[I_NSEEN] += 1
        _bm_add(FI, FE, FH, FW, Q, iv, SIDE_F, f, path_terms, p0, p1, arg_terms, 0, na,
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
                if PH[0, _slot(PH, f * N_KEY + FI[C_TASK, b])] == EMPTY:
                    miss += 1
        if n_pairs + miss > PE.shape[1]:
            return NEED_PAIRS
    mask = PH.shape[1] - 1
    for a in range(nt):
        f = FI[C_TASK, a]
        for b in range(nt):
            g = FI[C_TASK, b]
            key = f * N_KEY + g
            j = _home(key, mask)
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


@jit
def rank_files(B, n_universe, k, out):
    """File rankings over the universe ``id < n_universe``: ``out`` int64[>= 4, >= k] gets
    recency, frequency, BM25 and co-session in rows 0-3, ids best first in ``out[r, :k]``
    and -1 after the last. Returns the four lengths as a tuple of int64 (no allocation;
    index it like an array). ``k`` >= 1 (k <= 0: empty rankings, ``out`` untouched);
    ``ValueError`` if ``out`` is too small. Cost: O(k + the task's new files met) for
    recency and frequency, O(k + documents touched in the task) for BM25, O(k + ids whose
    score changed since the last call) for co-session (see :func:`_co_top`). Changes only
    caches (the BM25 sorted prefix, the co-session top)."""
    if k <= 0:
        return 0, 0, 0, 0
    if out.shape[0] < 4 or out.shape[1] < k:
        raise ValueError("out must be int64[4, >= k]")
    I = B.files_i
    Fl = B.files_f
    iv = B.iv
    n0 = _walk(I, R_NEXT, iv[SIDE_F + I_RHEAD], n_universe, k, out, 0)
    n1 = _walk(I, F_NEXT, iv[SIDE_F + I_FFIRST], n_universe, k, out, 1)
    n2 = _bm_top(I, Fl, B.files_e, B.query_i, B.query_f, iv, B.fv, SIDE_F, 0, n_universe,
                 k, out, 2)
    n3 = _co_top(I, Fl, B.pair_e, iv, n_universe, k, out, 3)
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
def rank_tools(B, n_universe, k, out):
    """Tool rankings over ``id < n_universe``, as :func:`rank_files`: rows recency,
    frequency, BM25 and transitions (tools that followed the task's last tool, or its
    start, in past tasks; O(out-degree of the last tool))."""
    if k <= 0:
        return 0, 0, 0, 0
    if out.shape[0] < 4 or out.shape[1] < k:
        raise ValueError("out must be int64[4, >= k]")
    I = B.tools_i
    Fl = B.tools_f
    iv = B.iv
    n0 = _walk(I, R_NEXT, iv[SIDE_T + I_RHEAD], n_universe, k, out, 0)
    n1 = _walk(I, F_NEXT, iv[SIDE_T + I_FFIRST], n_universe, k, out, 1)
    n2 = _bm_top(I, Fl, B.tools_e, B.query_i, B.query_f, iv, B.fv, SIDE_T, 1, n_universe,
                 k, out, 2)
    n3 = _x_top(I, Fl, B.trans_e, iv, n_universe, k, out, 3)
    for j in range(n0, k):
        out[0, j] = EMPTY
    for j in range(n1, k):
        out[1, j] = EMPTY
    for j in range(n2, k):
        out[2, j] = EMPTY
    for j in range(n3, k):
        out[3, j] = EMPTY
    return n0, n1, n2, n3


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
