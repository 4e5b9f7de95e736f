"""The two vector stores of code search on one index (issue 16): sqlite-vec against the
numpy scan of the BLOB column, same vectors.

Usage: python benchmarks/measure_vectors.py --db DB --root DIR [--rounds R]
DB is a database that `brainbox index DIR` filled with embeddings in sqlite-vec (the
sqlean driver). The script copies it, moves every vector of the copy from `code_vec` into
`code_vectors.vec` (the numpy store), then for the problem statements of the first 20
sympy tasks (as in measure_codesearch.py) embedded once: `knn(..., k=50)` on the original
(sqlite-vec) and on the copy (`use_vec=False`), and through the cached matrix of a warm
process (`cached=True`, what search uses), warm, p50 over R rounds; and how many of the
50 neighbours the two stores share.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

from measure_codesearch import TASKS


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    from brainbox import codevectors, embed, store
    from brainbox.storage.vectors import load_vec

    with open(TASKS, encoding="utf-8") as fh:
        tasks = [json.loads(line) for line in fh]
    tasks = sorted((t for t in tasks if t["repo"] == "sympy/sympy"),
                   key=lambda t: int(t["instance_id"].rsplit("-", 1)[1]))[:20]
    qv = embed.load().embed([t["problem_statement"] for t in tasks])
    root = os.path.abspath(args.root)
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "numpy.db")
        src = store.connect(args.db, prefer_vec=True)
        src.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        shutil.copy(args.db, copy)
        os.chmod(copy, 0o600)
        dst = store.connect(copy, prefer_vec=True)
        assert load_vec(dst)
        with store.atomic(dst):  # the vectors into the BLOB column, the vec0 table dropped
            rows = dst.execute("SELECT rowid, embedding FROM code_vec").fetchall()
            dst.executemany("UPDATE code_vectors SET vec = ? WHERE chunk_id = ?",
                            [(bytes(e), i) for i, e in rows])
            dst.execute("DROP TABLE code_vec")
        out = {"vectors": len(rows)}
        same = []
        for name, conn, use_vec in (("sqlite_vec", src, None), ("numpy", dst, False),
                                    ("cached_matrix", src, None)):
            times = []
            for r in range(args.rounds + 1):
                for i, q in enumerate(qv):
                    t = time.perf_counter()
                    found = codevectors.nearest(conn, root, q, 50, use_vec=use_vec,
                                                cached=name == "cached_matrix")
                    if r:  # round 0 is the warm-up
                        times.append((time.perf_counter() - t) * 1000)
                    elif name == "numpy":
                        ref = codevectors.nearest(src, root, q, 50)
                        same.append(len({c for c, _ in found} & {c for c, _ in ref}))
            out[name] = {"knn50_p50_ms": round(statistics.median(times), 2), "n": len(times)}
        out["shared_of_50_median"] = statistics.median(same)
        out["shared_of_50_min"] = min(same)
        src.close()
        dst.close()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
