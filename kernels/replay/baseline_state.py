"""The compiled baselines' state (``kernels.replay.baselines``): its layout, construction,
growth and hash tables.

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
"""

import collections

import numpy as np

from .._jit import jit
from ..hebbian import key_home

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
            rehash(getattr(state, h), s[h])
    if new["seen"] > cap["seen"]:
        s["seen_h"] = _hash(new["seen"])
        s["iv"][I_NSEEN] = rehash_seen(state.seen_h, s["seen_h"], s["sess_i"])
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
# Performance rule for the baselines' modules: numba increments and decrements (atomically) the
# reference count of every array passed to a call, about 8 ns per array here. So helpers
# taking arrays are called once per kernel call or once per touched resource, never per
# term, per candidate or per heap node: those loops are written out inline (hash probes,
# row appends, sift-downs, scoring), and the candidates of a ranking are collected into
# scratch rows and selected by one call. Helpers called per item take scalars only. The
# per-call helpers are inlined into the kernels at numba IR level (``inline="always"``),
# which made a file ranking ~40% cheaper (measured on the synthetic series).

@jit
def hash_home(key, mask):
    """First probe slot of ``key`` (``a * 2**31 + b``, a < 2**32, b < 2**31): the engine's
    hash of such keys (``kernels.hebbian.key_home``), masked."""
    return key_home(key) & mask


@jit
def hash_slot(h, key):
    """Slot of ``key`` in hash ``h`` (int64[2, H], row 0 keys, -1 empty, row 1 values):
    where the key is, or the empty slot where it belongs. H is a power of two and the
    table is at most half full, so the probe ends. (Cold paths only; hot paths inline the
    probe.)"""
    mask = h.shape[1] - 1
    j = hash_home(key, mask)
    while h[0, j] != key and h[0, j] != EMPTY:
        j = (j + 1) & mask
    return j


@jit
def rehash(old, new):
    """Insert every (key, value) of hash ``old`` into the empty hash ``new``."""
    for i in range(old.shape[1]):
        key = old[0, i]
        if key != EMPTY:
            j = hash_slot(new, key)
            new[0, j] = key
            new[1, j] = old[1, i]


@jit
def rehash_seen(old, new, sess_i):
    """As :func:`rehash` for ``seen_h``, keeping only the marks of each session's current
    prompt; returns how many were kept."""
    n = 0
    for i in range(old.shape[1]):
        key = old[0, i]
        if key != EMPTY and old[1, i] == sess_i[S_PINST, (key >> 31) >> 1]:
            j = hash_slot(new, key)
            new[0, j] = key
            new[1, j] = old[1, i]
            n += 1
    return n
