"""Code search figures for the notes (issue 16): search over the sympy snapshot.

Usage: python benchmarks/measure_codesearch.py [--runs N] [--rounds R]
       python benchmarks/measure_codesearch.py --embeddings [--rounds R] [--db DB --root DIR]
The second form is the embeddings mode (below); the first, keyword only:
Extracts the sympy snapshot (../shared/data/repos) into a temporary folder, then:
- index: N times each, on a fresh database, in-process `codeindex.build` with the
  full-text rows (this version) and without them (`chunk_terms` stubbed out: the index as
  it was before migration 004, but for the empty table); wall time and database growth
  (file after a TRUNCATE checkpoint, minus an empty brainbox database); medians;
- search warm in-process: `codesearch.search(conn, root, q, 10)` for 20 queries, the
  problem statements of the first 20 sympy tasks of claude-code-swebench-lite (cut to
  `codesearch.MAX_TERMS` terms), after one unmeasured pass; p50 and p90 over R rounds;
- search whole-process: `brainbox search Q --json` as a fresh process, once per query;
- for orientation only (not an evaluation): how often a file of the task's gold patch is
  among the files of the top 10 snippets.

Embeddings mode (`--embeddings`): one in-process index with embeddings on a fresh database
(`codeindex.build`, then `codevectors.embed_index` with the configured model: the int8
MiniLM of the wheel by default; sqlite-vec through the sqlean driver): wall time of each
step, chunks, vectors, database growth; or, with `--db DB --root DIR`, a database that
`brainbox index DIR` already built with embeddings (the index takes minutes). Then, on the
same database, warm in-process over the same 20 queries and R rounds: `search()` fused
(keyword + vector, the model loaded once before) and keyword-only (`embedder=None`), p50
and p90; and for each, how often a gold-patch file is among the top 10 files (the first
10 distinct files of the top 100 snippets) and among the files of the top 10 snippets;
and the first count for the vector ranking alone (the 300 nearest chunks).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data")
ARCHIVE = os.path.join(DATA, "repos", "sympy__sympy", "*.tar.gz")
TASKS = os.path.join(DATA, "trajectories", "claude-code-swebench-lite",
                     "swe-bench-lite.dev-repos.jsonl")


def size(db: str) -> int:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return os.path.getsize(db)


def build(db: str, root: str, fts: bool) -> tuple[float, int, dict]:
    from brainbox import codeindex, store

    store.connect(db).close()
    empty = size(db)
    saved = codeindex.chunk_terms
    if not fts:
        codeindex.chunk_terms = lambda *a: None
    try:
        conn = store.connect(db)
        t = time.perf_counter()
        codeindex.build(conn, root)
        seconds = time.perf_counter() - t
        totals = codeindex.totals(conn, root)
        conn.close()
    finally:
        codeindex.chunk_terms = saved
    return seconds, size(db) - empty, totals


def p(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def top_files(found, n: int = 10) -> list[str]:
    """The first `n` distinct files of snippets `found`, in rank order."""
    return list(dict.fromkeys(s.path for s in found))[:n]


def embeddings(args, queries, gold) -> dict:
    """The embeddings mode (module docstring)."""
    from brainbox import codeindex, codesearch, codevectors, embed, store

    out = {"queries": len(queries)}
    with tempfile.TemporaryDirectory() as tmp:
        db, root = args.db, args.root
        if db is None:
            root = os.path.join(tmp, "sympy")
            with tarfile.open(min(glob.glob(ARCHIVE))) as tar:
                tar.extractall(root, filter="data")
            db = os.path.join(tmp, "e.db")
            store.connect(db).close()
            empty = size(db)
            conn = store.connect(db, prefer_vec=True)
            t = time.perf_counter()
            codeindex.build(conn, root)
            keyword_s = time.perf_counter() - t
            keyword_bytes = store.db_bytes(conn)
            t = time.perf_counter()
            model = embed.load()
            made = codevectors.embed_index(conn, root, model)
            out["index"] = {"keyword_seconds": round(keyword_s, 1),
                            "embed_seconds": round(time.perf_counter() - t, 1),
                            **codeindex.totals(conn, root), "vectors": made["vectors"],
                            "store": made["store"]}
            conn.close()
            out["index"]["db_growth_bytes"] = size(db) - empty
            out["index"]["db_growth_keyword_bytes"] = keyword_bytes - empty
        conn = store.connect(db, prefer_vec=True)
        model = embed.load()
        out["vectors"] = codevectors.vector_count(conn, root)
        for name, who in (("fused", model), ("keyword_only", None)):
            top10 = top10s = 0
            for q, g in zip(queries, gold, strict=True):  # also the unmeasured warm-up pass
                found = codesearch.search(conn, root, q, 100, embedder=who)
                assert found.keyword_only == (who is None), found.note
                top10 += bool(set(top_files(found)) & g)
                top10s += bool({s.path for s in found[:10]} & g)
            times = []
            for _ in range(args.rounds):
                for q in queries:
                    t = time.perf_counter()
                    codesearch.search(conn, root, q, 10, embedder=who)
                    times.append((time.perf_counter() - t) * 1000)
            out[name] = {"p50_ms": round(statistics.median(times), 2),
                         "p90_ms": round(p(times, 0.9), 2), "n": len(times),
                         "gold_in_top10_files": f"{top10}/{len(queries)}",
                         "gold_in_files_of_top10_snippets": f"{top10s}/{len(queries)}"}
        top10 = 0  # the vector ranking alone, for orientation (not timed)
        for q, g in zip(queries, gold, strict=True):
            near = codevectors.nearest(conn, root, model.embed([q])[0], 300)
            rows = codesearch._sql.chunk_rows(conn, os.path.abspath(root), [c for c, _ in near])
            files = list(dict.fromkeys(rows[c][0] for c, _ in near if c in rows))[:10]
            top10 += bool(set(files) & g)
        out["vector_only"] = {"gold_in_top10_files": f"{top10}/{len(queries)}"}
        conn.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--embeddings", action="store_true", help="the embeddings mode")
    ap.add_argument("--db", help="embeddings mode: a database indexed with embeddings")
    ap.add_argument("--root", help="embeddings mode: the folder that database indexed")
    args = ap.parse_args()
    from brainbox import codesearch, store

    with open(TASKS, encoding="utf-8") as fh:
        tasks = [json.loads(line) for line in fh]
    tasks = sorted((t for t in tasks if t["repo"] == "sympy/sympy"),
                   key=lambda t: int(t["instance_id"].rsplit("-", 1)[1]))[:20]
    queries = [t["problem_statement"] for t in tasks]
    gold = [set(re.findall(r"^diff --git a/(\S+)", t["patch"], re.MULTILINE)) for t in tasks]
    if args.embeddings:
        print(json.dumps(embeddings(args, queries, gold), indent=1))
        return
    out = {"queries": len(queries)}
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "sympy")
        with tarfile.open(min(glob.glob(ARCHIVE))) as tar:
            tar.extractall(root, filter="data")
        idx = {True: [], False: []}
        for i in range(args.runs):
            for fts in (False, True):
                idx[fts].append(build(os.path.join(tmp, f"r{i}{int(fts)}.db"), root, fts))
        for fts, name in ((False, "index_without_fts"), (True, "index_with_fts")):
            out[name] = {"seconds_median": round(statistics.median(r[0] for r in idx[fts]), 3),
                         "seconds": [round(r[0], 3) for r in idx[fts]],
                         "db_growth_bytes_median": statistics.median(r[1] for r in idx[fts]),
                         **idx[fts][0][2]}
        db = os.path.join(tmp, f"r0{1}.db")
        conn = store.connect(db)
        hits = 0
        for q, g in zip(queries, gold, strict=True):  # also the unmeasured warm-up pass
            files = {s.path for s in codesearch.search(conn, root, q, 10)}
            hits += bool(files & g)
        times = []
        for _ in range(args.rounds):
            for q in queries:
                t = time.perf_counter()
                codesearch.search(conn, root, q, 10)
                times.append((time.perf_counter() - t) * 1000)
        conn.close()
        out["search_in_process_ms"] = {"p50": round(statistics.median(times), 2),
                                       "p90": round(p(times, 0.9), 2), "n": len(times)}
        wall = []
        for q in queries:
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "--db", db, "search",
                            q, "--cwd", root, "--json"], capture_output=True, check=True)
            wall.append((time.perf_counter() - t) * 1000)
        out["search_cli_process_ms"] = {"p50": round(statistics.median(wall), 1),
                                        "p90": round(p(wall, 0.9), 1), "n": len(wall)}
        out["gold_file_in_top10_files"] = f"{hits}/{len(queries)}"
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
