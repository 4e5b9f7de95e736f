"""The compiled baselines' linked structures (``kernels.replay.baselines``): the recency
and frequency lists, the co-session pairs, the tool transitions and the per-session
prompt marks, with the selection helpers every ranking uses.
"""

from .._jit import jit
from .baseline_state import (
    C_FB,
    C_FBNZ,
    C_NZ,
    C_PEND,
    C_PREV,
    C_PSTAMP,
    C_RHEAD,
    C_RLEN,
    C_SCORE,
    C_TASK,
    C_TOP,
    C_TSTAMP,
    EMPTY,
    F_BFREE,
    F_BHEAD,
    F_BLK,
    F_CNT,
    F_NEXT,
    F_PREV,
    I_BFREE,
    I_BUSED,
    I_CO_EPOCH,
    I_CO_FBN,
    I_CO_FBREADY,
    I_CO_NNZ,
    I_CO_NPREV,
    I_CO_NT,
    I_CO_PENDN,
    I_CO_PENDTOT,
    I_CO_TOPLEN,
    I_FFIRST,
    I_FLAST,
    I_RHEAD,
    I_TASK,
    I_X_LAST,
    I_X_N,
    I_X_NTASK,
    I_X_SHEAD,
    N_KEY,
    P_CNT,
    P_G,
    P_NEXT,
    R_NEXT,
    R_PREV,
    SCR,
    SCRB,
    SCRI,
    START,
    X_CNT,
    X_HEAD,
    X_LINK,
    X_LIST,
    X_STAMP,
    X_TO,
    hash_home,
    hash_slot,
)

# ---------------------------------------------------------------- ranking helpers

@jit
def better(s1, d1, s2, d2):
    """(score s1, id d1) ranks before (s2, d2): higher score, then lower id."""
    return s1 > s2 or (s1 == s2 and d1 < d2)


@jit(inline="always")
def select_top(I, Fl, nc, k, out, r):
    """The best ``k`` (k >= 1) of the ``nc`` distinct candidates ``I[SCRI, :nc]`` with
    scores ``Fl[SCR, :nc]`` into ``out[r, :n]``, best first (ties: lower id); returns n.
    An insertion into a sorted buffer (scores in ``Fl[SCRB]``) with early rejection."""
    n = 0
    for c in range(nc):
        d = I[SCRI, c]
        s = Fl[SCR, c]
        if n == k:
            if not better(s, d, Fl[SCRB, n - 1], out[r, n - 1]):
                continue
            j = n - 1
        else:
            j = n
            n += 1
        while j > 0 and better(s, d, Fl[SCRB, j - 1], out[r, j - 1]):
            out[r, j] = out[r, j - 1]
            Fl[SCRB, j] = Fl[SCRB, j - 1]
            j -= 1
        out[r, j] = d
        Fl[SCRB, j] = s
    return n


@jit(inline="always")
def walk(I, nxt, first, n_universe, k, out, r):
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
def touch_id(I, iv, base, i):
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


# ---------------------------------------------------------------- co-session, transitions

@jit(inline="always")
def co_touch(I, PE, iv, f):
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
def co_top(I, Fl, PE, iv, n_universe, k, out, r):
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
        return select_top(I, Fl, nc, k, out, r)
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
    n = select_top(I, Fl, nc, k, out, r)
    for j in range(n):
        I[C_TOP, j] = out[r, j]
    iv[I_CO_TOPLEN] = n
    iv[I_CO_EPOCH] += 1
    iv[I_CO_PENDN] = 0
    iv[I_CO_PENDTOT] = 0
    return n


@jit(inline="always")
def x_touch(TI, XE, XH, iv, tool):
    """Record the transition (last tool -> ``tool``) once per task."""
    last = iv[I_X_LAST]
    key = (last + 1) * N_KEY + tool
    j = hash_slot(XH, key)
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
def x_top(TI, Fl, XE, iv, n_universe, k, out, r):
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
    return select_top(TI, Fl, nc, k, out, r)


@jit(inline="always")
def give_prompt(SH, pin, key):
    """True when the resource of ``key`` = (2 * session + side, id) has not yet been given
    the session's current prompt (instance ``pin``); marks it given. Returns 2 for a new
    mark (one more key in the table), 1 for an updated one, 0 when already given."""
    mask = SH.shape[1] - 1
    j = hash_home(key, mask)
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
