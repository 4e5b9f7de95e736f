"""The hash chain at scale: time to chain N stored events (what migration 009 does to an
existing database) and to audit them, streaming.

Usage: python benchmarks/measure_audit.py [N]   (default 1,000,000)
The events are inserted with plain SQL (no hash), like a database from before the chain.
"""

import os
import sys
import tempfile
import time

from brainbox.storage import chain, db


def main(n=1_000_000):
    folder = tempfile.mkdtemp(prefix="bb-audit-")
    path = os.path.join(folder, "a.db")
    conn = db.connect(path)
    cols = ", ".join(db.EVENT_COLUMNS)
    rows = ((1.7e9 + i, f"s{i // 60}", "/work/p", "tool", "Read", "read",
             f'["src/m{i % 97}/f{i % 1013}.py"]', None, None, None, None, None, None, None, None)
            for i in range(n))
    with db.atomic(conn):
        conn.executemany(f"INSERT INTO events ({cols}) VALUES ({', '.join('?' * 15)})", rows)
    t0 = time.perf_counter()
    with db.atomic(conn):
        chain.rechain(conn, db.CHAIN_COLUMNS, 1)
    t1 = time.perf_counter()
    got = chain.audit(conn, db.CHAIN_COLUMNS)
    t2 = time.perf_counter()
    assert got["ok"] and got["events"] == n, got
    print(f"{n:,} events: chain (migration 009) {t1 - t0:.1f} s, audit {t2 - t1:.1f} s; "
          f"file {os.path.getsize(path) / 1e6:.0f} MB")
    conn.close()
    for s in ("", "-wal", "-shm"):
        if os.path.exists(path + s):
            os.unlink(path + s)
    os.rmdir(folder)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
