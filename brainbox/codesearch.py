"""Keyword search over the code index (issue 16, Deliver 3 and 4; DESIGN §4.7).

`search(conn, root, query, limit)` ranks the chunks of the project at `root` (as
`brainbox index` stored them, `brainbox.codeindex`) by FTS5's BM25 over three columns of
pre-split terms: the chunk's path, its symbol and its own lines (`codeindex.chunk_terms`).
The query is split by the same `brainbox.text.tokens` as the index, so `computeTotal`,
`compute_total` and `compute total` all reach a function `compute_total`. Each term is
quoted and the terms are joined by OR: FTS5's syntax (`"`, `(`, `-`, `NEAR`, `AND`, `*`,
`col:`) never reaches SQLite from a user, and a query with no term matches nothing.
Terms in most chunks are left out of the expression (`COMMON`, measured below).

The score is `-bm25()`: higher is better, comparable within one query only.

With vectors (`brainbox.codevectors`: `brainbox index` embeds the chunks when a model is
installed, `brainbox.embed`), the query is embedded by the same model and the keyword
ranking and the vector kNN ranking (the `DEPTH` best of each) are fused by reciprocal rank
fusion with k = 60 (DESIGN §4.7): `score = sum over the rankings that found the chunk of
1 / (60 + rank)`, rank 1-based; each snippet's `channels` names those rankings
(`keyword`, `vector`). Without vectors for the project, without a model (missing file,
onnxruntime not importable, hash refused: `brainbox.embed`), or with vectors of another
model, the search is keyword-only, `score` stays `-bm25()`, and the result says so: it is
a `Result` (a list) whose `keyword_only` is True and whose `note` says why in one line.
The model is loaded once per process (about 0.5 s), and the project's vectors are kept as
one matrix (`codevectors.nearest(cached=True)`), so only a warm process is fast.
Standard library only at import (the SQL is in `storage`); nothing here imports
tree-sitter, and onnxruntime only when a query is embedded.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from brainbox.storage import codeindex as _sql
from brainbox.text import tokens

MAX_TERMS = 64  # a pasted traceback is cut to its first 64 distinct terms
# Common terms are left out of long queries: a term found in more than COMMON of the
# database's chunks (and in more than COMMON_MIN, so a small project keeps every term) is
# dropped, unless every term is that common (then the RAREST rarest are kept). Each OR'ed
# term makes FTS5 visit every row that holds it, and a common term adds little to BM25
# (idf about ln 19 at 5% against 8-10 for a rare term). Measured on the sympy snapshot
# (24,434 chunks; the problem statements of the first 20 sympy tasks of
# claude-code-swebench-lite as queries, warm, p50 of 3 rounds, one ad-hoc run of each
# variant on the loaded 2-core machine): all 64 terms 46.5 ms; dropping terms in > 10% of
# chunks 20.8 ms, > 5% 12.4 ms, > 2% 8.4 ms; a file of the gold patch among the top 10
# snippets' files in 10, 10, 10 and 9 of the 20 tasks. Keeping only the 16 rarest terms
# instead: 9.4 ms but 8 of 20. With 5%, benchmarks/measure_codesearch.py: p50 12.3 ms.
COMMON = 0.05
RRF_K = 60
# Each ranking's depth before fusion: a chunk found at rank 50 by one ranking adds 1/110,
# about half of what rank 1 adds, so deeper ranks would barely move the top 10.
DEPTH = 50
COMMON_MIN = 1000
RAREST = 8


@dataclass(frozen=True)
class Snippet:
    path: str
    start_line: int
    end_line: int
    kind: str
    symbol: str | None
    score: float
    channels: tuple[str, ...] = ("keyword",)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["channels"] = list(self.channels)
        return d


def query_terms(query: str) -> list[str]:
    """The distinct terms of `query` (`brainbox.text.tokens`), first `MAX_TERMS`."""
    return list(dict.fromkeys(tokens(query, limit=len(query or ""))))[:MAX_TERMS]


def match_expression(query: str, terms: list[str] | None = None) -> str | None:
    """The FTS5 expression for `query` (or for `terms`): each term a quoted string, joined
    by OR; None when there is no term (only stop words, digits or punctuation)."""
    terms = query_terms(query) if terms is None else terms
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def select_terms(conn, terms: list[str]) -> list[str]:
    """`terms` without those absent from the index and the common ones (`COMMON`)."""
    rows = _sql.term_rows(conn, terms)
    present = [t for t in terms if t in rows]
    limit = max(COMMON * _sql.chunk_count(conn), COMMON_MIN)
    kept = [t for t in present if rows[t] <= limit]
    return kept or sorted(present, key=lambda t: rows[t])[:RAREST]


class Result(list):
    """Snippets, best first; `keyword_only` and `note` (why keyword-only, else "")."""

    def __init__(self, items=(), keyword_only: bool = True, note: str = ""):
        super().__init__(items)
        self.keyword_only = keyword_only
        self.note = note


def keyword_rows(conn, root: str, query: str, limit: int) -> list[tuple]:
    """The BM25 ranking: `storage.codeindex.search` rows, the `limit` best."""
    terms = query_terms(query)
    if not terms or limit <= 0:
        return []
    match = match_expression(query, select_terms(conn, terms))
    if match is None:
        return []
    return _sql.search(conn, root, match, limit)


def _model_for(conn, root: str, embedder):
    """(embedder, "") when the vectors of `root` can be searched, else (None, why)."""
    from brainbox import codevectors

    if embedder is None:
        return None, "embeddings not asked for"
    if not codevectors.has_vectors(conn, root):
        return None, (f"no vectors in the index of {root} (`brainbox index` embeds the "
                      f"chunks when an embedding model is installed)")
    if embedder == "auto":
        from brainbox import embed

        embedder, why = embed.try_load()
        if embedder is None:
            return None, why
    if codevectors.stored_model(conn)[0] != embedder.id:
        return None, (f"the vectors of {root} were made by another model; run "
                      f"`brainbox index {root}` to embed with {embedder.path}")
    return embedder, ""


def fuse(rankings: dict[str, list[int]], k: int = RRF_K) -> list[tuple[int, float, tuple]]:
    """Reciprocal rank fusion: `[(chunk id, score, channels)]`, best first (ties by id)."""
    score: dict[int, float] = {}
    found: dict[int, list[str]] = {}
    for name, ids in rankings.items():
        for rank, cid in enumerate(ids, start=1):
            score[cid] = score.get(cid, 0.0) + 1.0 / (k + rank)
            found.setdefault(cid, []).append(name)
    return sorted(((c, s, tuple(found[c])) for c, s in score.items()),
                  key=lambda r: (-r[1], r[0]))


def search(conn, root: str, query: str, limit: int = 10, *, embedder="auto",
           use_vec: bool | None = None) -> Result:
    """The `limit` best chunks of the project at `root` for `query`, best first (module
    docstring). `embedder`: "auto" (the configured model, when the index has vectors), an
    `embed.Embedder`, or None (keyword only). Nothing matched, or nothing indexed: an
    empty list (`indexed` tells)."""
    root = os.path.abspath(root)
    if limit <= 0:
        return Result()
    embedder, note = _model_for(conn, root, embedder)
    if embedder is None:
        rows = keyword_rows(conn, root, query, limit)
        return Result([Snippet(p, s, e, kind, sym, round(-score, 6))
                       for p, s, e, kind, sym, score, _id in rows], True, note)
    from brainbox import codevectors

    depth = max(limit, DEPTH)
    # Sequential: the query embedded in a thread while SQLite ranks the keywords was slower
    # on the loaded 2-core machine (sympy index, 20 queries x 3, interleaved: p50 93.1 ms
    # threaded, 83.9 ms sequential; the parts: embedding 47, kNN 31, BM25 22 ms).
    keyword = [r[-1] for r in keyword_rows(conn, root, query, depth)]
    qvec = embedder.embed([query or ""])[0]
    vector = [cid for cid, _d in codevectors.nearest(conn, root, qvec, depth, use_vec=use_vec,
                                                     cached=use_vec is None)]
    fused = fuse({"keyword": keyword, "vector": vector})[:limit]
    meta = _sql.chunk_rows(conn, root, [c for c, _s, _ch in fused])
    return Result([Snippet(*meta[c], round(s, 6), ch) for c, s, ch in fused if c in meta],
                  False, "")


def indexed(conn, root: str) -> bool:
    """Whether the project at `root` has a code index (`brainbox index` ran on it)."""
    return _sql.has_files(conn, os.path.abspath(root))
