"""Plain Python/numpy definition of ``brainbox.kernels.rank_files`` (recall's ranking).

Written from DESIGN §4.3 and the kernel's docstring, deliberately naive: dicts of postings,
full sorts with explicit (score desc, id asc) keys, base level computed for every file.
"""

import math

import numpy as np

from brainbox.eval.reference import kernels as R
from brainbox.kernels.channels import (
    ASSOCIATIVE,
    BASE_LEVEL,
    FREQUENCY,
    LEXICAL,
    RECENCY,
    RECURRENCE,
    SNIPPET,
)
from brainbox.kernels.channels import N_CHANNELS as CHANNELS
from brainbox.kernels.scoring import BM25_B as B
from brainbox.kernels.scoring import BM25_K1 as K1


def _desc(pairs):
    """[(id, score)] -> ids by score desc, id asc."""
    return [i for i, _ in sorted(pairs, key=lambda p: (-p[1], p[0]))]


def bm25(tids, n_query, max_terms, files, in_proj, doclen, post, path_ptr, path_terms, path_w):
    """BM25 from the postings table's entries (term, resource, tf), read naively, times the
    file's share of the query's IDF mass, plus ``path_w`` times the IDFs of the query terms
    in its path."""
    n = int(post.n[0])
    posts = {}
    for t, r, tf in zip(post.ea[:n].tolist(), post.eb[:n].tolist(), post.ev[:n].tolist()):
        posts.setdefault(t, {})[r] = tf
    in_files = {t: {r: tf for r, tf in d.items() if in_proj[r]} for t, d in posts.items()}
    return _bm25([int(t) for t in tids], max_terms, files, doclen, in_files,
                 lambda t: len(posts.get(t, ())), path_ptr, path_terms, path_w)


def _bm25(tids, max_terms, files, doclen, posts, df, path_ptr, path_terms, path_w):
    """``bm25`` given each term's postings among the files (``posts``: term -> {file: tf})
    and its document count overall (``df(term)``, which picks the ``max_terms`` rarest)."""
    if max_terms and len(tids) > max_terms:
        tids = sorted(sorted(tids, key=lambda t: (df(t), t))[:max_terms])
    n_docs = len(files)
    avgdl = (sum(float(doclen[f]) for f in files) / n_docs if n_docs else 0.0) or 1.0
    score, matched, mass, idfs = {}, {}, 0.0, {}
    for t in tids:
        post_t = posts.get(t, {})
        if not post_t:
            continue
        idf = math.log(1.0 + (n_docs - len(post_t) + 0.5) / (len(post_t) + 0.5))
        mass += idf
        idfs[t] = idf
        for r, tf in post_t.items():
            dl = float(doclen[r])
            score[r] = score.get(r, 0.0) + idf * tf * (K1 + 1) / (
                tf + K1 * (1 - B + B * dl / avgdl))
            matched[r] = matched.get(r, 0.0) + idf
    # the fusion's gamma is then 1
    out = {}
    for r, s in score.items():
        bonus, seen = 0.0, set()
        for t in path_terms[path_ptr[r]:path_ptr[r + 1]].tolist():  # in path order, distinct
            if t >= 0 and t not in seen:
                seen.add(t)
                bonus += idfs.get(t, 0.0)
        out[r] = s * (matched[r] / mass) + path_w * bonus
    return out, {r: 1.0 for r in matched}


def task_bm25(q_sorted, n_terms, max_terms, post_len, files, n_docs, doclen, tf, cnt,
              path_ptr, path_terms, path_w):
    """The replay's lexical columns (``kernels.replay.tasklex``) scored as ``bm25``: the
    query terms known (``0 <= id < n_terms``), each one's files those of ``files[:n_docs]``
    whose column holds it (``tf`` row, ``cnt`` unread: the columns define it), the
    ``max_terms`` rarest by ``post_len``."""
    col = {int(t): k for k, t in enumerate(q_sorted.tolist()) if 0 <= t < n_terms}
    posts = {t: {int(files[j]): float(tf[k, j]) for j in range(n_docs) if tf[k, j] > 0}
             for t, k in col.items()}
    score, share = _bm25(sorted(col), max_terms, files[:n_docs], doclen, posts,
                         lambda t: int(post_len[t]) if t < len(post_len) else 0, path_ptr,
                         path_terms, path_w)
    ids = sorted(score)
    return (np.asarray(ids, np.int64), np.asarray([score[i] for i in ids]),
            np.asarray([share[i] for i in ids]))


def rows_of(adj_off, adj_len, pool_dst, pool_e, ew, u):
    lo = int(adj_off[u])
    return [(int(pool_dst[q]), float(ew[pool_e[q]])) for q in range(lo, lo + int(adj_len[u]))]


def rank_files(tids, n_query, max_terms, files, in_proj, doclen, post, path_ptr, path_terms,
               path_w, adj_off, adj_len, pool_dst, pool_e, ew, n_edges, m,
               is_blocked, n_seeds, hops, spread_k, w_floor, a_floor, n, last, hist, hist_len,
               now, prune_base_level, top_n, window, recurrence_from, snip_ids, snip_scores,
               use, lam, rrf_k, s_max, min_conf, edst=None, rtop=None, rtop_n=None,
               bl_cache=None, limit=0):
    """Same arguments and results as the kernel with ``limit`` 0 (``prune_base_level``,
    ``bl_cache`` and ``limit`` are ignored: the reference scores and ranks every file)."""
    score, share = bm25(tids, n_query, max_terms, files, in_proj, doclen, post, path_ptr,
                        path_terms, path_w)
    return _rank(score, share, files, in_proj, adj_off, adj_len, pool_dst, pool_e, ew, n_edges, m,
                 is_blocked, n_seeds, hops, spread_k, w_floor, a_floor, n, last, hist, hist_len,
                 now, top_n, window, recurrence_from, snip_ids, snip_scores, use, lam, rrf_k,
                 s_max, min_conf)


def rank_lexed(lex_ids, lex_sc, share, files, in_proj, adj_off, adj_len, pool_dst, pool_e, ew,
               n_edges, m, is_blocked, n_seeds, hops, spread_k, w_floor, a_floor, n, last, hist,
               hist_len, now, prune_base_level, top_n, window, recurrence_from, snip_ids,
               snip_scores, use, lam, rrf_k, s_max, min_conf, edst=None, rtop=None,
               rtop_n=None, bl_cache=None, limit=0):
    """``rank_files`` from given lexical scores (as ``bm25_scores`` returns them)."""
    ids = [int(i) for i in lex_ids]
    return _rank(dict(zip(ids, map(float, lex_sc))), dict(zip(ids, map(float, share))), files,
                 in_proj, adj_off, adj_len, pool_dst, pool_e, ew, n_edges, m, is_blocked, n_seeds,
                 hops, spread_k, w_floor, a_floor, n, last, hist, hist_len, now, top_n, window,
                 recurrence_from, snip_ids, snip_scores, use, lam, rrf_k, s_max, min_conf)


def _rank(score, share, files, in_proj, adj_off, adj_len, pool_dst, pool_e, ew, n_edges, m,
          is_blocked, n_seeds, hops, spread_k, w_floor, a_floor, n, last, hist, hist_len,
          now, top_n, window, recurrence_from, snip_ids, snip_scores, use, lam, rrf_k,
          s_max, min_conf):
    n_res = in_proj.shape[0]
    files = [int(f) for f in files]
    parent = np.full(n_res, -1, np.int64)
    ranked = [None] * CHANNELS
    lex = _desc(score.items())
    snip = bool(use[SNIPPET]) and len(snip_ids) > 0  # a code match is grounds too
    if not lex and not snip and not any(in_proj[w] for w in window):
        return 0, None, None, None, None, np.zeros(CHANNELS, bool), parent
    if use[LEXICAL] and lex:
        ranked[LEXICAL] = lex
    if use[ASSOCIATIVE] and lex and n_edges > 0:
        seeds = lex[:n_seeds]
        seed_act = np.asarray([score[s] / score[lex[0]] for s in seeds])
        act = np.zeros(n_res)
        R.spread(adj_off, adj_len, pool_dst, pool_e, ew, np.asarray(seeds, np.int64), seed_act,
                 m, is_blocked, hops, spread_k, w_floor, a_floor, act, parent)
        reach = [(i, act[i]) for i in range(n_res)
                 if act[i] > 0 and in_proj[i] and i not in seeds]
        if reach:
            ranked[ASSOCIATIVE] = _desc(reach)
    if use[SNIPPET] and len(snip_ids):
        ranked[SNIPPET] = _desc(zip(snip_ids.tolist(), snip_scores.tolist()))
    if use[FREQUENCY]:
        ranked[FREQUENCY] = _desc((f, float(n[f])) for f in files)[:top_n]
    if use[RECENCY]:
        ranked[RECENCY] = _desc((f, float(last[f])) for f in files)[:top_n]
    if use[BASE_LEVEL]:
        bl = np.empty(len(files))
        R.base_level(hist, hist_len, np.asarray(files, np.int64), now, bl)
        ranked[BASE_LEVEL] = _desc(zip(files, bl.tolist()))[:top_n]
    if use[RECURRENCE] and len(window):
        best = {}
        for u in window[max(0, len(window) - recurrence_from):]:
            for v, w in rows_of(adj_off, adj_len, pool_dst, pool_e, ew, u):
                if in_proj[v] and w > best.get(v, 0.0):
                    best[v] = w
        if best:
            ranked[RECURRENCE] = _desc(best.items())
    present = np.asarray([r is not None for r in ranked])
    cand = sorted({i for r in ranked if r is not None for i in r})
    pos = {c: j for j, c in enumerate(cand)}
    ranks = np.zeros((CHANNELS, len(cand)), np.int64)
    gam = np.ones((CHANNELS, len(cand)))
    for c, r in enumerate(ranked):
        for j, i in enumerate(r or ()):
            ranks[c, pos[i]] = j + 1
    if ranked[LEXICAL] is not None:
        for i, g in share.items():
            gam[LEXICAL, pos[i]] = g
    scores = np.zeros(len(cand))
    R.rrf_fuse(ranks, lam, gam, rrf_k, scores)
    keep = [j for j in range(len(cand)) if scores[j] / s_max >= min_conf]
    order = sorted(keep, key=lambda j: (-scores[j], cand[j]))
    return (1, np.asarray(cand, np.int64), scores, np.asarray(order, np.int64), ranks, present,
            parent)


def predict_tools(state, session, k=3, min_support=4):
    """Next-tool prediction (DESIGN §4.5) from the state's n-gram dict and CSR, naively."""
    s = state
    tools = [r for r in range(s.n_res) if s.kind[r] == 1]
    if not tools:
        return []
    ngrams = s.ngrams()
    seq = []
    if session and session in s.sess_index:
        sid = s.sess_index[session]
        hist = s.last3[sid, : s.last3_len[sid]].tolist()
        for order in range(min(3, len(hist)), 0, -1):
            suffix = [-1] * (3 - order) + hist[-order:]
            code = (suffix[0] + 1) + (suffix[1] + 1) * 2**20 + (suffix[2] + 1) * 2**40
            counts = ngrams.get(code)
            if counts and sum(counts.values()) >= min_support:
                seq = sorted(counts, key=lambda t: (-counts[t], t))
                break
        if not seq and hist:
            w = s.matrices()["W"]
            row = w[[hist[-1]]].tocoo()
            pairs = [(int(c), float(v)) for c, v in zip(row.col, row.data) if s.kind[c] == 1]
            seq = _desc(pairs)
    score = {}
    for r, t in enumerate(seq, start=1):
        score[t] = score.get(t, 0.0) + 1.0 / (60 + r)
    for r, t in enumerate(_desc((t, float(s.n[t])) for t in tools), start=1):
        score[t] = score.get(t, 0.0) + 0.5 / (60 + r)
    best = sorted(score, key=lambda t: (-score[t], t))[:k]
    return [(s.res_key[t], score[t]) for t in best]


def top_k(ids, scores, k):
    order = _desc(zip(ids.tolist(), scores.tolist()))[:k]
    pos = {i: j for j, i in enumerate(ids.tolist())}
    return np.asarray(order, np.int64), np.asarray([scores[pos[i]] for i in order], np.float64)


def bm25_scores(tids, n_query, max_terms, files, in_proj, doclen, post, path_ptr, path_terms,
                path_w, n_res):
    score, share = bm25(tids, n_query, max_terms, files, in_proj, doclen, post, path_ptr,
                        path_terms, path_w)
    ids = sorted(score)
    return (np.asarray(ids, np.int64), np.asarray([score[i] for i in ids]),
            np.asarray([share[i] for i in ids]))


def base_level_ids(files, hist, hist_len, last, now, k, prune, cache=None):
    return base_level_top(files, hist, hist_len, last, now, k, prune)[0]


def base_level_top(files, hist, hist_len, last, now, k, prune, cache=None):
    bl = np.empty(len(files))
    R.base_level(hist, hist_len, np.asarray(files, np.int64), now, bl)
    return top_k(np.asarray(files, np.int64), bl, k)


def predict_kernel(kind, n, n_res, last3, last3_len, sid, ctxmap, grams, adj_off, adj_len,
                   pool_dst, pool_e, ew, min_support, k):
    """The kernel's contract over plain dicts (the state-level reference is predict_tools)."""
    codes = {e: (int(a) << 30) | int(b) for e, (a, b) in
             enumerate(zip(ctxmap.ea[: ctxmap.n[0]], ctxmap.eb[: ctxmap.n[0]]))}
    ngrams = {}
    for c, t, v in zip(grams.ea[: grams.n[0]].tolist(), grams.eb[: grams.n[0]].tolist(),
                       grams.ev[: grams.n[0]].tolist()):
        ngrams.setdefault(codes[c], {})[t] = v
    tools = [r for r in range(n_res) if kind[r] == 1]
    if not tools:
        return np.zeros(0, np.int64), np.zeros(0)
    seq = []
    if sid >= 0:
        hist = last3[sid, : last3_len[sid]].tolist()
        for order in range(min(3, len(hist)), 0, -1):
            suffix = [-1] * (3 - order) + hist[-order:]
            counts = ngrams.get((suffix[0] + 1) + (suffix[1] + 1) * 2**20 + (suffix[2] + 1) * 2**40)
            if counts and sum(counts.values()) >= min_support:
                seq = _desc(counts.items())
                break
        if not seq and hist:
            seq = _desc((v, w) for v, w in rows_of(adj_off, adj_len, pool_dst, pool_e, ew, hist[-1])
                        if kind[v] == 1)
    score = {}
    for r, t in enumerate(seq, start=1):
        score[t] = score.get(t, 0.0) + 1.0 / (60 + r)
    for r, t in enumerate(_desc((t, float(n[t])) for t in tools), start=1):
        score[t] = score.get(t, 0.0) + 0.5 / (60 + r)
    best = sorted(score, key=lambda t: (-score[t], t))[:k]
    return np.asarray(best, np.int64), np.asarray([score[t] for t in best])


def order_desc(scores):
    return np.lexsort((np.arange(len(scores)), -np.asarray(scores)))


def __getattr__(name):
    if name == "REFERENCES":  # {kernel: reference} for this module's entries, from the registry
        from brainbox.eval.reference import references

        return references(__name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
