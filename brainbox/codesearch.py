"""Keyword search over the code index (issue 16, Deliver 3 and 4; DESIGN §4.7).

`search(conn, root, query, limit)` ranks the chunks of the project at `root` (as
`brainbox index` stored them, `brainbox.codeindex`) by FTS5's BM25 over three columns of
pre-split terms: the chunk's path, its symbol and its own lines (`codeindex.chunk_terms`).
The query is split by the same `brainbox.text.tokens` as the index, so `computeTotal`,
`compute_total` and `compute total` all reach a function `compute_total`. Each term is
quoted and the terms are joined by OR: FTS5's syntax (`"`, `(`, `-`, `NEAR`, `AND`, `*`,
`col:`) never reaches SQLite from a user, and a query with no term matches nothing.

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


def match_expression(query: str) -> str | None:
    """The FTS5 expression for `query`: its distinct terms, each a quoted string, joined by
    OR; None when it has no term (only stop words, digits or punctuation)."""
    terms = list(dict.fromkeys(tokens(query, limit=len(query or ""))))[:MAX_TERMS]
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def search(conn, root: str, query: str, limit: int = 10) -> list[Snippet]:
    """The `limit` best chunks of the project at `root` for `query`, best first (module
    docstring). Nothing matched, or nothing indexed: an empty list (`indexed` tells)."""
    match = match_expression(query)
    if match is None or limit <= 0:
        return []
    rows = _sql.search(conn, os.path.abspath(root), match, limit)
    return [Snippet(path, s, e, kind, symbol, round(-score, 6))
            for path, s, e, kind, symbol, score in rows]


def indexed(conn, root: str) -> bool:
    """Whether the project at `root` has a code index (`brainbox index` ran on it)."""
    return _sql.totals(conn, os.path.abspath(root))["files"] > 0
