"""Keyword search over the code index (issue 16, Deliver 3 and 4; DESIGN §4.7).

`search(conn, root, query, limit)` ranks the chunks of the project at `root` (as
`brainbox index` stored them, `brainbox.codeindex`) by FTS5's BM25 over three columns of
pre-split terms: the chunk's path, its symbol and its own lines (`codeindex.chunk_terms`).
The query is split by the same `brainbox.text.tokens` as the index, so `computeTotal`,
`compute_total` and `compute total` all reach a function `compute_total`. Each term is
quoted and the terms are joined by OR: FTS5's syntax (`"`, `(`, `-`, `NEAR`, `AND`, `*`,
`col:`) never reaches SQLite from a user, and a query with no term matches nothing.
Terms in most chunks are left out of the expression (`COMMON`, measured below).

The score is `-bm25()`: higher is better, comparable within one query only. When the
query mentions a name as code that a chunk defines (the `symbol` ranking, below: each
file's defining chunk, in that ranking's file order), the keyword and symbol rankings are
fused by RRF as the vector ranking is, and the score is the fused one.

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

**Files** (`files`, recall's snippet channel): the files of the project ranked by RRF
(k = 60) over file rankings: `keyword` (each file by its best chunk in the BM25 ranking,
`DEPTH` chunks deep), `symbol` (below) and, with vectors, `vector` (each file by its best
chunk in the kNN ranking). Each file carries its best snippet: its best keyword chunk, else
its best defining chunk, else its best vector chunk.

The `symbol` ranking: the files that define a name the query mentions as code, or that
the query names as a module or a path. A task description names the code it is about
(`lambdify`, `Point2D`, `sympy.physics.units.util`, `src/_pytest/main.py`), and BM25 over
chunks ranks the prose that repeats its words (issue templates, docs, tests) above the
definition. Mentioned as code (`code_names`): an identifier in backticks, in a fenced or
indented block or a `>>>` line, followed by `(`, or spelled like code (`_`, `.`, a
digit, or a lower-case letter then an upper-case one); at least 3 characters. A file's
score is the sum, over the names it defines (a chunk's `name`, case-sensitive), of
ln(N / df), N the project's indexed files and df those defining the name; a module
(`a.b.c` -> `a/b/c.py`, `a/b/c/__init__.py`, also under `src/`) or path mentioned adds
ln N, as a name only it defines. Measured on claude-code-swebench-lite (143 tasks, gold
patch files, `benchmarks/measure_localization.py`, the index's ranking alone): MRR@10
0.406 keyword only, 0.400 symbol only, 0.507 fused with equal weights (Acc@5 0.573 ->
0.678). Every identifier instead of those spelled as code gave 0.514 fused: the same
within noise, and ordinary words in a prompt ("fix", "value") would find the functions
so named; the stricter rule is kept.
"""

from __future__ import annotations

import math
import os
import re
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
MAX_NAMES = 64  # names of a query the symbol ranking looks up
MIN_NAME = 3
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_CODE_SPELLING = re.compile(r"[_.0-9]|[a-z][A-Z]")
_TICKS = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"```.*?```", re.DOTALL)
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\s*\(")
_PATH = re.compile(r"[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)+\.[A-Za-z0-9]+")


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
    return _fuse_keys(rankings, k)


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
    depth = max(limit, DEPTH)
    symbol = [c[5] for _p, _s, c in symbol_files(conn, root, query)][:depth]
    if embedder is None and not symbol:
        rows = keyword_rows(conn, root, query, limit)
        return Result([Snippet(p, s, e, kind, sym, round(-score, 6))
                       for p, s, e, kind, sym, score, _id in rows], True, note)
    # Sequential: the query embedded in a thread while SQLite ranks the keywords was slower
    # on the loaded 2-core machine (sympy index, 20 queries x 3, interleaved: p50 93.1 ms
    # threaded, 83.9 ms sequential; the parts: embedding 47, kNN 31, BM25 22 ms).
    rankings = {"keyword": [r[-1] for r in keyword_rows(conn, root, query, depth)]}
    if symbol:
        rankings["symbol"] = symbol
    if embedder is not None:
        from brainbox import codevectors

        qvec = embedder.embed([query or ""])[0]
        rankings["vector"] = [cid for cid, _d in codevectors.nearest(
            conn, root, qvec, depth, use_vec=use_vec, cached=use_vec is None)]
    fused = fuse(rankings)[:limit]
    meta = _sql.chunk_rows(conn, root, [c for c, _s, _ch in fused])
    return Result([Snippet(*meta[c], round(s, 6), ch) for c, s, ch in fused if c in meta],
                  embedder is None, note if embedder is None else "")


def code_names(query: str) -> tuple[list[str], list[str]]:
    """(names, dotted) the query mentions as code (module docstring): the names to look up
    as definitions (each dotted identifier's last part too), and the dotted identifiers,
    possible module names; in order of first mention, at most `MAX_NAMES` names."""
    q = query or ""
    code = set(_CALL.findall(q))
    for part in _TICKS.findall(q) + _FENCE.findall(q):
        code.update(_IDENT.findall(part))
    for line in q.splitlines():
        if line.startswith((">>>", "    ", "\t")):
            code.update(_IDENT.findall(line))
    names, dotted = {}, {}
    for ident in _IDENT.findall(q):
        if ident not in code and not _CODE_SPELLING.search(ident):
            continue
        parts = ident.split(".")
        if len(parts) > 1:
            dotted.setdefault(ident, None)
        for name in (ident, parts[-1]) if len(parts) > 1 else (ident,):
            if len(name) >= MIN_NAME and "." not in name:
                names.setdefault(name, None)
    return list(names)[:MAX_NAMES], list(dotted)


def _module_paths(dotted: str) -> list[str]:
    """Files a dotted name may be, longest prefix first (`a.b.c` -> `a/b/c.py`, ...)."""
    parts = dotted.split(".")
    out = []
    for j in range(len(parts), 1, -1):
        base = "/".join(parts[:j])
        for p in (f"{base}.py", f"{base}/__init__.py"):
            out += [p, f"src/{p}"]
    return out


def symbol_files(conn, root: str, query: str) -> list[tuple[str, float, tuple]]:
    """The `symbol` ranking (module docstring): `[(path, score, chunk)]`, best first (ties
    by path), `chunk` the file's best defining chunk (or its first, for a module or path
    mentioned) as `(path, start_line, end_line, kind, symbol, chunk id)`."""
    root = os.path.abspath(root)
    names, dotted = code_names(query)
    paths = [p for d in dotted for p in _module_paths(d)] + _PATH.findall(query or "")
    if not names and not paths:
        return []
    n_files = _sql.file_count(conn, root)
    if not n_files:
        return []
    rows = _sql.defining(conn, root, names)
    df: dict[str, set] = {}
    for r in rows:
        df.setdefault(r[5], set()).add(r[0])
    score: dict[str, float] = {}
    best: dict[str, tuple] = {}
    for where in df.values():
        w = math.log(n_files / len(where))
        for path in where:
            score[path] = score.get(path, 0.0) + w
    for r in rows:  # a file's defining chunk of its rarest name, first by line on ties
        w = math.log(n_files / len(df[r[5]]))
        if r[0] not in best or w > best[r[0]][0]:
            best[r[0]] = (w, (*r[:5], r[6]))
    first = _sql.first_chunks(conn, root, paths)
    for d in dotted:  # the longest module prefix that is a file, once per name
        hit = next((p for p in _module_paths(d) if p in first), None)
        if hit is not None:
            score[hit] = score.get(hit, 0.0) + math.log(n_files)
            best.setdefault(hit, (0.0, first[hit]))
    for p in dict.fromkeys(_PATH.findall(query or "")):
        if p in first:
            score[p] = score.get(p, 0.0) + math.log(n_files)
            best.setdefault(p, (0.0, first[p]))
    ranked = sorted(score, key=lambda p: (-score[p], p))
    return [(p, round(score[p], 6), best[p][1]) for p in ranked if score[p] > 0]


@dataclass(frozen=True)
class FileHit:
    path: str
    score: float  # RRF over the file rankings that found it
    snippet: Snippet  # its best snippet
    channels: tuple[str, ...]


def files(conn, root: str, query: str, depth: int = DEPTH, *, embedder=None) -> list[FileHit]:
    """The project's files for `query`, best first (module docstring, **Files**): RRF of
    the keyword, symbol and (with `embedder` and vectors) vector file rankings, each
    `depth` deep. Keyword and symbol only by default: recall serves the prompt hook,
    which loads no embedding model."""
    root = os.path.abspath(root)
    if depth <= 0:
        return []
    rankings: dict[str, list[str]] = {}
    chunk: dict[str, tuple] = {}

    def by_file(name, rows):
        order = []
        for r in rows:
            if r[0] not in chunk:
                chunk[r[0]] = r
            if r[0] not in order:
                order.append(r[0])
        if order:
            rankings[name] = order[:depth]

    by_file("keyword", [(*r[:5], r[6]) for r in keyword_rows(conn, root, query, depth)])
    by_file("symbol", [c for _p, _s, c in symbol_files(conn, root, query)])
    embedder, _note = _model_for(conn, root, embedder)
    if embedder is not None:
        from brainbox import codevectors

        qvec = embedder.embed([query or ""])[0]
        ids = [cid for cid, _d in codevectors.nearest(conn, root, qvec, depth, cached=True)]
        meta = _sql.chunk_rows(conn, root, ids)
        by_file("vector", [(*meta[c], c) for c in ids if c in meta])
    out = []
    for path, score, channels in _fuse_keys(rankings):
        p, s, e, kind, sym, _cid = chunk[path]
        out.append(FileHit(path, round(score, 6), Snippet(p, s, e, kind, sym, round(score, 6),
                                                          channels), channels))
    return out


def _fuse_keys(rankings: dict[str, list], k: int = RRF_K) -> list[tuple]:
    """`fuse` over any keys: `[(key, score, channels)]`, best first (ties by key)."""
    score: dict = {}
    found: dict = {}
    for name, keys in rankings.items():
        for rank, key in enumerate(keys, start=1):
            score[key] = score.get(key, 0.0) + 1.0 / (k + rank)
            found.setdefault(key, []).append(name)
    return sorted(((c, s, tuple(found[c])) for c, s in score.items()),
                  key=lambda r: (-r[1], r[0]))


def snippet_files(conn, root: str, query: str, depth: int = DEPTH) -> dict:
    """{path: (score, "path:start-end kind symbol")}, best first: what recall's snippet
    channel ranks files by (`Memory._snippets`; the localization replay uses it too)."""
    out = {}
    for hit in files(conn, root, query, depth):
        sn = hit.snippet
        what = f" {sn.kind} {sn.symbol}" if sn.symbol else f" {sn.kind}"
        out[hit.path] = (float(hit.score), f"{sn.path}:{sn.start_line}-{sn.end_line}" + what)
    return out


def indexed(conn, root: str) -> bool:
    """Whether the project at `root` has a code index (`brainbox index` ran on it)."""
    return _sql.has_files(conn, os.path.abspath(root))
