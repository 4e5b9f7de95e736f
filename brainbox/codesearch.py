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

Keyword only, for now: when an embedding model is available (a later step), the keyword
and the vector rankings will be fused by reciprocal rank fusion with k = 60 (DESIGN §4.7),
and each snippet's `channels` will name the rankings that found it. Standard library only
(the SQL is in `storage.codeindex`); nothing here imports tree-sitter.
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


def search(conn, root: str, query: str, limit: int = 10) -> list[Snippet]:
    """The `limit` best chunks of the project at `root` for `query`, best first (module
    docstring). Nothing matched, or nothing indexed: an empty list (`indexed` tells)."""
    terms = query_terms(query)
    if not terms or limit <= 0:
        return []
    match = match_expression(query, select_terms(conn, terms))
    if match is None:
        return []
    rows = _sql.search(conn, os.path.abspath(root), match, limit)
    return [Snippet(path, s, e, kind, symbol, round(-score, 6))
            for path, s, e, kind, symbol, score in rows]


def indexed(conn, root: str) -> bool:
    """Whether the project at `root` has a code index (`brainbox index` ran on it)."""
    return _sql.totals(conn, os.path.abspath(root))["files"] > 0
