"""The reliability trial's damaged store (D10), shared by the storage and doctor tests."""

from __future__ import annotations

import random
from pathlib import Path

from brainbox.storage import db


def damaged_db(path: Path, n: int = 3000) -> None:
    """A real store of `n` events, checkpointed, then bytes overwritten every 97 bytes
    across 40 KB at one third of the file, the header intact."""
    conn = db.connect(path)
    r = random.Random(1)
    db.append_events(conn, [{"at": float(i), "session": f"s{i // 40}", "project": "/p",
                             "kind": "tool", "tool": "Read",
                             "files": [f"src/m{r.randrange(300)}/f{r.randrange(40)}.py"],
                             "command": f"pytest tests/test_{r.randrange(90)}.py"}
                            for i in range(n)])
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    b = bytearray(path.read_bytes())
    r = random.Random(3)
    for o in range(len(b) // 3, len(b) // 3 + 40960, 97):
        b[o] = r.randrange(256)
    path.write_bytes(bytes(b))
