"""Store safety figures for the notes: `PRAGMA quick_check` and `secure_delete` costs.

Usage: python benchmarks/measure_store_checks.py [--events N] [--appends N]
(default 10000 events, 300 appends). Builds a real store (events and folded state) in a
temporary folder, then reports:
- quick_check: median of 5 passes, with the stdlib sqlite3 and with sqlean, and
  integrity_check beside it (the figure in `storage.db.quick_check`'s docstring);
- append: one event per fresh connection (what a hook does), median over N appends,
  secure_delete ON and OFF alternating in two rounds; and one rebuild+save each.
The machine is shared and noisy: read the medians as such.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import statistics
import tempfile
import time


def build(path: str, n: int) -> None:
    from brainbox.memory import Memory
    from brainbox.storage import db

    conn = db.connect(path)
    r = random.Random(1)
    db.append_events(conn, [{
        "at": 1.7e9 + i, "session": f"s{i // 50}", "project": "/p", "kind": "tool",
        "tool": r.choice(["Read", "Edit", "Bash"]),
        "files": [f"src/m{r.randrange(400)}/f{r.randrange(50)}.py"],
        "command": f"pytest -q tests/test_{r.randrange(100)}.py"} for i in range(n)])
    conn.close()
    with Memory.open(path) as mem:
        mem.stats()  # folds and saves the state
    conn = db.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def check_ms(path: str, driver, pragma: str, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        c = driver.connect(path)
        t = time.perf_counter()
        c.execute(f"PRAGMA {pragma}").fetchall()
        times.append(time.perf_counter() - t)
        c.close()
    return statistics.median(times) * 1e3


def append_ms(src: str, work: str, mode: str, appends: int) -> tuple[float, float]:
    from brainbox.memory import Memory
    from brainbox.storage import db

    path = os.path.join(work, f"sd_{mode}.db")
    shutil.copy(src, path)
    ev = {"at": 1.0, "session": "s", "project": "/p", "kind": "tool", "tool": "Read",
          "files": ["src/x.py"], "command": "pytest -q"}
    times = []
    for _ in range(appends):
        c = db.connect(path)
        c.execute(f"PRAGMA secure_delete = {mode}")
        t = time.perf_counter()
        db.append_events(c, [ev])
        times.append(time.perf_counter() - t)
        c.close()
    with Memory.open(path) as mem:
        mem.conn.execute(f"PRAGMA secure_delete = {mode}")
        mem.stats()
        t = time.perf_counter()
        mem.rebuild()
        rebuild = time.perf_counter() - t
    return statistics.median(times) * 1e3, rebuild


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=10_000)
    p.add_argument("--appends", type=int, default=300)
    args = p.parse_args(argv)
    if args.events < 1 or args.appends < 1:
        p.error("--events and --appends must be positive")
    import sqlean

    with tempfile.TemporaryDirectory(prefix="bb-store-checks-") as work:
        src = os.path.join(work, "store.db")
        build(src, args.events)
        conn = sqlite3.connect(src)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.close()
        print(f"store: {args.events} events, {os.path.getsize(src) / 1e6:.1f} MB, "
              f"{pages} pages")
        for drv in (sqlite3, sqlean):
            print(f"{drv.__name__} {drv.sqlite_version}: quick_check "
                  f"{check_ms(src, drv, 'quick_check'):.1f} ms, integrity_check "
                  f"{check_ms(src, drv, 'integrity_check', 3):.1f} ms (median)")
        for rnd in range(2):
            for mode in ("OFF", "ON"):
                a, rb = append_ms(src, work, mode, args.appends)
                print(f"round {rnd} secure_delete {mode}: append median {a:.2f} ms, "
                      f"rebuild+save {rb:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
