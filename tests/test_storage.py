"""storage: connection, migrations, validation of foreign files, event log, arrays."""

import hashlib
import os
import sqlite3
import stat

import numpy as np
import pytest
import scipy.sparse as sp

from brainbox.storage import arrays, db


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_new_database_is_created_private_with_wal_and_schema(tmp_path):
    path = tmp_path / "sub" / "b.db"
    conn = db.connect(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == db.SCHEMA_VERSION
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == db.BUSY_TIMEOUT_MS
    names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations")]
    assert names == [m[0] for m in db.MIGRATIONS]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"events", "resources", "state_blobs", "brainbox_meta"} <= tables


def test_default_path_follows_home_and_db_override(monkeypatch, tmp_path):
    monkeypatch.setenv("BRAINBOX_HOME", str(tmp_path / "h"))
    assert db.default_db_path() == tmp_path / "h" / "brainbox.db"
    monkeypatch.setenv("BRAINBOX_DB", str(tmp_path / "x.db"))
    assert db.default_db_path() == tmp_path / "x.db"


def test_reopening_applies_no_migration_twice(tmp_path):
    path = tmp_path / "b.db"
    db.connect(path).close()
    conn = db.connect(path)
    assert db.migrate(conn) == []


def test_foreign_sqlite_database_is_refused_and_left_identical(tmp_path):
    path = tmp_path / "other.db"
    c = sqlite3.connect(path)
    c.execute("CREATE TABLE notes(x)")
    c.commit()
    c.close()
    before = digest(path)
    with pytest.raises(db.StoreError, match="not brainbox"):
        db.connect(path)
    assert digest(path) == before


def test_corrupt_file_is_refused_and_left_identical(tmp_path):
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite at all" * 100)
    before = digest(path)
    with pytest.raises(db.StoreError, match="not a SQLite"):
        db.connect(path)
    assert digest(path) == before


def test_truncated_database_is_refused_and_left_identical(tmp_path):
    path = tmp_path / "b.db"
    conn = db.connect(path)
    db.append_events(conn, [{"at": 1.0, "session": "s", "project": "/p", "kind": "tool",
                             "tool": "Read", "files": ["a.py"]}])
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = path.read_bytes()
    path.write_bytes(data[:100] + b"\xff" * 50 + data[150:1000])
    before = digest(path)
    with pytest.raises(db.StoreError):
        db.connect(path)
    assert digest(path) == before


def test_newer_schema_is_refused_and_left_identical(tmp_path):
    path = tmp_path / "b.db"
    conn = db.connect(path)
    conn.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION + 5}")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = digest(path)
    with pytest.raises(db.StoreError, match="newer"):
        db.connect(path)
    assert digest(path) == before


def test_event_log_round_trips_in_order(tmp_path):
    conn = db.connect(tmp_path / "b.db")
    evs = [{"at": float(i), "session": "s", "project": "/p", "kind": "tool", "tool": "Read",
            "files": [f"f{i}.py", "ü.py"], "meta": {"k": i}} for i in range(5)]
    last = db.append_events(conn, evs)
    got = list(db.iter_events(conn, after=0, batch=2))
    assert last == 5 and [e["id"] for e in got] == [1, 2, 3, 4, 5]
    assert got[3]["files"] == ["f3.py", "ü.py"] and got[3]["meta"] == {"k": 3}
    assert [e["id"] for e in db.iter_events(conn, after=3)] == [4, 5]


def test_event_ids_are_never_reused_after_delete(tmp_path):
    conn = db.connect(tmp_path / "b.db")
    ev = {"at": 1.0, "session": "s", "project": "/p", "kind": "tool", "tool": "Read",
          "files": ["gone.py"]}
    db.append_events(conn, [ev, ev])
    assert db.delete_events_mentioning(conn, "/p", "gone.py") == 2
    assert db.append_events(conn, [dict(ev, files=["x.py"])]) == 3


def test_atomic_rolls_back_everything_on_error(tmp_path):
    conn = db.connect(tmp_path / "b.db")
    with pytest.raises(RuntimeError):
        with db.atomic(conn):
            db.append_events(conn, [{"at": 1.0, "session": "s", "project": "/p",
                                     "kind": "prompt", "prompt": "x"}])
            raise RuntimeError
    assert db.count_events(conn) == 0


def test_arrays_and_csr_round_trip_with_dtype_and_shape(tmp_path):
    conn = db.connect(tmp_path / "b.db")
    m = sp.random_array((50, 40), density=0.1, rng=0, dtype=np.float32).tocsr()
    payload = {"a": np.arange(7, dtype=np.int64), "h": np.ones((3, 50)),
               **arrays.csr_to_arrays("W", m)}
    arrays.save_arrays(conn, payload)
    back = arrays.load_arrays(conn)
    assert back["a"].dtype == np.int64 and back["h"].shape == (3, 50)
    assert back["a"].flags.writeable
    w = arrays.arrays_to_csr("W", back)
    assert w.dtype == np.float32 and w.shape == (50, 40)
    assert (w != m).nnz == 0


def test_database_left_with_a_wal_by_a_killed_process_opens_with_its_events(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "b.db"
    code = (
        "import os; from brainbox.storage import db; "
        f"c = db.connect({str(path)!r}); "
        "db.append_events(c, [{'at': 1.0, 'session': 's', 'project': '/p', 'kind': 'tool', "
        "'tool': 'Read', 'files': ['a.py']}]); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert (tmp_path / "b.db-wal").exists()  # never checkpointed: the process died
    (tmp_path / "b.db-shm").unlink()  # and its WAL index is gone (e.g. a cleaned /tmp)
    conn = db.connect(path)
    assert db.count_events(conn) == 1
