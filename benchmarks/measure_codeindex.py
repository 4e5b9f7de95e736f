"""Code index figures for the notes (issue 16): `brainbox index` on a source snapshot.

Usage: python benchmarks/measure_codeindex.py [ARCHIVE] [--runs N]
(default: the sympy snapshot in ../shared/data/repos, 3 runs). Extracts the archive into a
temporary folder, then, N times, on a fresh database: a cold `brainbox index --json` (wall
time of the process, chunks, database growth: the file, WAL checkpointed, minus an empty
brainbox database), a second run with nothing changed, and a third after touching one
file's bytes (re-indexed count, wall time). Prints the medians and every run as JSON.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "..", "shared", "data", "repos", "sympy__sympy", "*.tar.gz")


def index(db: str, root: str) -> tuple[float, dict]:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "--db", db, "index",
                           root, "--json", "--no-progress"], capture_output=True, text=True,
                          check=True)
    return time.perf_counter() - t, json.loads(proc.stdout)


def size(db: str) -> int:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return os.path.getsize(db)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("archive", nargs="?", default=None)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    archive = args.archive or min(glob.glob(DEFAULT))
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "src")
        with tarfile.open(archive) as tar:
            tar.extractall(root, filter="data")
        touched = min(glob.glob(os.path.join(root, "**", "*.py"), recursive=True))
        for i in range(args.runs):
            db = os.path.join(tmp, f"run{i}.db")
            make = "import sys\nfrom brainbox import store\nstore.connect(sys.argv[1]).close()"
            subprocess.run([sys.executable, "-c", make, db], check=True)
            empty = size(db)
            cold, out = index(db, root)
            grown = size(db) - empty
            same, again = index(db, root)
            with open(touched, "a", encoding="utf-8") as fh:
                fh.write(f"\n# touched {i}\n")
            warm, third = index(db, root)
            runs.append({"cold_s": round(cold, 3), "files": out["files"],
                         "chunks": out["chunks"], "db_growth_bytes": grown,
                         "unchanged_s": round(same, 3), "unchanged": again["unchanged"],
                         "touched_s": round(warm, 3), "touched_reindexed": third["indexed"],
                         "skipped": out["skipped"], "parse_errors": out["parse_errors"]})
    med = {k: statistics.median(r[k] for r in runs)
           for k in ("cold_s", "chunks", "db_growth_bytes", "unchanged_s", "touched_s",
                     "touched_reindexed")}
    print(json.dumps({"archive": os.path.basename(archive), "median": med, "runs": runs},
                     indent=1))


if __name__ == "__main__":
    main()
