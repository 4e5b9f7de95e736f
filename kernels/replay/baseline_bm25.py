"""The compiled baselines' BM25 (``kernels.replay.baselines``): documents as chains of
(document, term) entries, postings per term, the task's query and its rankings.
"""

import math

from .._jit import jit
from ..scoring import BM25_B, BM25_K1
from .baseline_lists import better, select_top
from .baseline_state import (
    D_DIRTY,
    D_DYN,
    D_HEAD,
    D_LEN,
    D_LIST,
    D_NTERMS,
    D_RHEAD,
    D_RTAIL,
    D_SCORE,
    D_TAIL,
    E_DOC,
    E_NDOC,
    E_NROW,
    E_NTERM,
    E_TERM,
    E_TF,
    EMPTY,
    I_DYNN,
    I_HN,
    I_NE,
    I_QN,
    I_SN,
    I_TASK,
    I_TOTAL,
    N_KEY,
    Q_ROW,
    Q_TERM,
    S_ACC,
    S_HID,
    S_HSC,
    S_SEEN,
    S_SID,
    S_SSC,
    SCR,
    SCRI,
    V_AVGDL,
    W_DF,
    W_HEAD,
    hash_home,
)

# ---------------------------------------------------------------- BM25

@jit(inline="always")
def _sift_down(I, Fl, j, m, d, s):
    """Put (score ``s``, id ``d``) at slot ``j`` of the static ranking's heap
    (``I[S_HID, :m]``, scores ``Fl[S_HSC, :m]``, best on top by :func:`better`) and sift it
    down. Inlined (the module rule: helpers taking arrays are not called per heap node)."""
    while True:
        c = 2 * j + 1
        if c >= m:
            break
        if c + 1 < m and better(Fl[S_HSC, c + 1], I[S_HID, c + 1], Fl[S_HSC, c],
                                 I[S_HID, c]):
            c += 1
        if not better(Fl[S_HSC, c], I[S_HID, c], s, d):
            break
        I[S_HID, j] = I[S_HID, c]
        Fl[S_HSC, j] = Fl[S_HSC, c]
        j = c
    I[S_HID, j] = d
    Fl[S_HSC, j] = s


@jit(inline="always")
def bm_add(I, E, H, W, Q, iv, base, doc, a1, lo1, hi1, a2, lo2, hi2, a3, lo3, hi3):
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
                j = hash_home(key, mask)
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
            j = hash_home(key, mask)
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
def bm_begin(I, Fl, E, W, Q, QF, iv, fv, base, side, n_docs):
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
            norm = BM25_K1 * (1.0 - BM25_B + BM25_B * float(I[D_LEN, d]) / avgdl)
            w = idf * tf * (BM25_K1 + 1.0) / (tf + norm)
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
        _sift_down(I, Fl, j0, m, I[S_HID, j0], Fl[S_HSC, j0])
    iv[base + I_HN] = m
    iv[base + I_SN] = 0


@jit(inline="always")
def bm_top(I, Fl, E, Q, QF, iv, fv, base, side, n_universe, k, out, r):
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
            norm = BM25_K1 * (1.0 - BM25_B + BM25_B * float(I[D_LEN, d]) / avgdl)
            s = 0.0
            e = I[D_RHEAD, d]
            while e != EMPTY:
                tf = float(E[E_TF, e])
                s += QF[side, Q[Q_ROW, E[E_TERM, e]]] * tf * (BM25_K1 + 1.0) / (tf + norm)
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
            _sift_down(I, Fl, 0, hn, I[S_HID, hn], Fl[S_HSC, hn])
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
    return select_top(I, Fl, nc, k, out, r)
