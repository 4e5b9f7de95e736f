"""storage: connection, migrations, validation of foreign files, event log, arrays."""

import hashlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from brainbox import paths, store
from brainbox.storage import arrays, db, queries
from tests.damage import damaged_db


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def refused_untouched(path, match=None):
    """Opening `path` raises a StoreError (matching `match`) and leaves it byte-identical."""
    before = digest(path)
    with pytest.raises(db.StoreError, match=match):
        db.connect(path)
    assert digest(path) == before


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
    assert paths.db_path() == str(tmp_path / "h" / "brainbox.db")
    monkeypatch.setenv("BRAINBOX_DB", str(tmp_path / "x.db"))
    assert paths.db_path() == str(tmp_path / "x.db")


def test_store_opens_the_default_database_and_tightens_only_the_home(brainbox_home, tmp_path):
    brainbox_home.mkdir()
    brainbox_home.chmod(0o755)
    store.connect().close()
    assert (brainbox_home / "brainbox.db").exists()
    assert stat.S_IMODE(os.stat(brainbox_home).st_mode) == 0o700
    mine = tmp_path / "mine"  # a folder the user chose for the database: left as it is
    mine.mkdir()
    mine.chmod(0o755)
    store.connect(mine / "b.db").close()
    assert stat.S_IMODE(os.stat(mine).st_mode) == 0o755
    told = tmp_path / "told"  # storage tightens only when its caller says so
    told.mkdir()
    told.chmod(0o755)
    db.connect(told / "b.db", tighten=True).close()
    assert stat.S_IMODE(os.stat(told).st_mode) == 0o700


def test_store_loads_sqlite3_only_when_a_database_name_is_used():
    code = ("import sys; from brainbox import store; "
            "assert 'sqlite3' not in sys.modules, 'at import'; "
            "store.StoreError, store.open_private; assert 'sqlite3' not in sys.modules; "
            "assert store.BUSY_TIMEOUT_MS == 5000 and 'sqlite3' in sys.modules\n"
            "try:\n    store.no_such_name\nexcept AttributeError:\n    pass\n"
            "else:\n    raise SystemExit('no AttributeError')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr


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
    refused_untouched(path, "not brainbox")


def test_corrupt_file_is_refused_and_left_identical(tmp_path):
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite at all" * 100)
    refused_untouched(path, "not a SQLite")


def test_truncated_database_is_refused_and_left_identical(tmp_path):
    path = tmp_path / "b.db"
    conn = db.connect(path)
    db.append_events(conn, [{"at": 1.0, "session": "s", "project": "/p", "kind": "tool",
                             "tool": "Read", "files": ["a.py"]}])
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = path.read_bytes()
    path.write_bytes(data[:100] + b"\xff" * 50 + data[150:1000])
    refused_untouched(path)


def test_newer_schema_is_refused_and_left_identical(tmp_path):
    path = tmp_path / "b.db"
    conn = db.connect(path)
    conn.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION + 5}")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    refused_untouched(path, "newer")


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
    assert queries.delete_events_mentioning(conn, "/p", "gone.py") == 2
    # id 3 is the deletion's record (the hash chain's gap), never one of the deleted ids
    (rec,) = list(db.iter_events(conn))
    assert rec["id"] == 3 and rec["meta"]["op"] == "erase" and rec["meta"]["count"] == 2
    assert "gone" not in json.dumps(rec)
    assert db.append_events(conn, [dict(ev, files=["x.py"])]) == 4


def test_atomic_rolls_back_everything_on_error(tmp_path):
    conn = db.connect(tmp_path / "b.db")
    with pytest.raises(RuntimeError), db.atomic(conn):
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


# --------------------------------------------------------------------------- issue 13

EV = {"at": 1.0, "session": "s", "project": "/p", "kind": "tool", "tool": "Read",
      "files": ["a.py"]}


def brainbox(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", *args],
                          capture_output=True, text=True, env=env, timeout=timeout)


def one_line_error(r, *words):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr and all(w in lines[0] for w in words), r.stderr


def test_quick_check_names_damaged_pages(tmp_path):
    path = tmp_path / "b.db"
    damaged_db(path)
    conn = db.connect(path)  # the header, meta and schema are intact: opening is allowed
    try:
        with pytest.raises(db.StoreError, match="damaged"):
            db.quick_check(conn)
    finally:
        conn.close()
    ok = db.connect(tmp_path / "ok.db")
    db.quick_check(ok)  # a healthy file passes


def test_rebuild_and_forget_stop_on_damaged_pages_before_writing(brainbox_home):
    path = brainbox_home / "brainbox.db"
    brainbox_home.mkdir()
    damaged_db(path)
    before = digest(path)
    for args in (["rebuild"], ["forget", "src/m1/f1.py", "--project", "/p"]):
        r = brainbox(*args)
        one_line_error(r, "damaged")
        assert digest(path) == before


def test_a_pending_migration_never_writes_into_a_damaged_file(tmp_path, monkeypatch):
    path = tmp_path / "b.db"
    damaged_db(path)
    before = digest(path)
    monkeypatch.setattr(db, "MIGRATIONS", db.MIGRATIONS + [("999_test", lambda c: None)])
    monkeypatch.setattr(db, "SCHEMA_VERSION", len(db.MIGRATIONS))
    with pytest.raises(db.StoreError, match="damaged"):
        db.connect(path)
    assert digest(path) == before


def test_a_full_disk_says_disk_full_and_keeps_what_was_stored(tmp_path):
    path = tmp_path / "b.db"
    conn = db.connect(path)
    db.append_events(conn, [EV])
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # the file may not grow: a full disk
    with pytest.raises(db.StoreError, match="disk full") as info:
        db.append_events(conn, [dict(EV, command="x" * 20000)] * 50)
    assert "corrupt" not in str(info.value)
    conn.close()
    conn = db.connect(path)
    assert db.count_events(conn) == 1


def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs",
                        str(where)], capture_output=True)
    return r.returncode == 0


def test_a_full_tmpfs_says_disk_full_not_corrupt(tmp_path, monkeypatch):
    fs = tmp_path / "small"
    if not _mount_tmpfs(fs, "600k"):
        pytest.skip("cannot mount a tmpfs here")
    try:
        home = fs / "bb"
        monkeypatch.setenv("BRAINBOX_HOME", str(home))
        r = brainbox("record", "--session", "s", "--tool", "Read", "--project", "/p")
        assert r.returncode == 0, r.stderr
        with open(fs / "filler", "ab") as fh:  # fill what is left
            try:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
            except OSError:
                pass
        r = brainbox("record", "--session", "s", "--tool", "Bash", "--project", "/p",
                     "--command", "y" * 5000)
        one_line_error(r, "disk full")
        (fs / "filler").unlink()
        conn = db.connect(home / "brainbox.db")
        assert db.count_events(conn) == 1
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        conn.close()
    finally:
        subprocess.run(["umount", "-l", str(fs)], capture_output=True)


def _immutable(path: Path, on: bool) -> bool:
    r = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True)
    return r.returncode == 0


def test_a_read_only_db_file_says_read_only(brainbox_home):
    r = brainbox("record", "--session", "s", "--tool", "Read", "--project", "/p")
    assert r.returncode == 0, r.stderr
    path = brainbox_home / "brainbox.db"
    conn = db.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    if os.geteuid() == 0:
        if not _immutable(path, True):
            pytest.skip("root ignores chmod and chattr +i is not available")
    else:
        path.chmod(0o400)
    try:
        before = digest(path)
        for args in (["record", "--session", "s", "--tool", "Edit", "--project", "/p"],
                     ["rebuild"]):
            r = brainbox(*args)
            one_line_error(r, "read-only")
            assert "corrupt" not in r.stderr
        assert digest(path) == before
    finally:
        if os.geteuid() == 0:
            _immutable(path, False)
        path.chmod(0o600)
    conn = db.connect(path)
    assert db.count_events(conn) == 1


def test_a_read_only_home_folder_says_read_only(brainbox_home):
    r = brainbox("record", "--session", "s", "--tool", "Read", "--project", "/p")
    assert r.returncode == 0, r.stderr
    if os.geteuid() == 0:
        if not _immutable(brainbox_home, True):
            pytest.skip("root ignores chmod and chattr +i is not available")
    else:
        brainbox_home.chmod(0o500)
    try:
        r = brainbox("record", "--session", "s", "--tool", "Edit", "--project", "/p")
        one_line_error(r, "read-only")
        assert "corrupt" not in r.stderr
    finally:
        if os.geteuid() == 0:
            _immutable(brainbox_home, False)
        brainbox_home.chmod(0o700)
    conn = db.connect(brainbox_home / "brainbox.db")
    assert db.count_events(conn) == 1


def test_a_directory_or_a_fifo_as_the_database_is_refused_at_once(tmp_path, monkeypatch):
    d = tmp_path / "adir.db"
    d.mkdir()
    fifo = tmp_path / "fifo.db"
    os.mkfifo(fifo)
    for target, word in ((d, "folder"), (fifo, "not a regular file")):
        with pytest.raises(db.StoreError, match=word):
            db.connect(target)
        env = dict(os.environ, BRAINBOX_DB=str(target))
        r = brainbox("record", "--session", "s", "--tool", "Read", "--project", "/p",
                     env=env, timeout=60)  # a FIFO used to hang here
        one_line_error(r, str(target))
        r = brainbox("stats", env=env, timeout=60)  # click may refuse a folder as --db (2)
        assert r.returncode in (1, 2) and "Traceback" not in r.stderr, r.stderr
        assert str(target) in r.stderr


def test_forget_leaves_no_text_in_the_db_or_its_wal(brainbox_home, tmp_path):
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    for _ in range(20):
        r = brainbox("record", "--session", "s", "--cwd", str(proj), "--tool", "Read",
                     "--file", str(proj / "docs/plan-ZX81QW.md"))
        assert r.returncode == 0, r.stderr
    brainbox("record", "--session", "s", "--cwd", str(proj), "--tool", "Read",
             "--file", str(proj / "docs/keep.md"))
    assert brainbox("stats").returncode == 0

    def occurrences():
        return sum(Path(f"{brainbox_home / 'brainbox.db'}{s}").read_bytes().count(b"ZX81QW")
                   for s in ("", "-wal") if Path(f"{brainbox_home / 'brainbox.db'}{s}").exists())

    assert occurrences() >= 20
    r = brainbox("forget", "docs/plan-ZX81QW.md", "--cwd", str(proj))
    assert r.returncode == 0, r.stderr
    assert occurrences() == 0
    assert brainbox("rebuild").returncode == 0
    assert occurrences() == 0
    conn = db.connect(brainbox_home / "brainbox.db")
    assert db.count_events(conn) == 2  # keep.md's and the deletion's record


def test_one_process_opens_every_database_file_with_one_sqlite_library(tmp_path):
    """Two SQLite copies in one process lose each other's POSIX locks (the daemon's memory
    on sqlean and its re-indexer on sqlite3 corrupted page 1 of the database): whatever
    each caller prefers, the first library chosen opens every later file connection."""
    pytest.importorskip("sqlean")
    from brainbox.storage import db

    path = tmp_path / "one.db"
    first = db.connect(path, prefer_vec=True)  # the memory, with sqlite-vec
    second = db.connect(path)  # a re-indexer's own connection, preferring nothing
    assert type(second) is type(first) and type(first).__module__.startswith("sqlean")
    first.close(), second.close()
    db._PROCESS_DRIVER = None
    plain = db.connect(tmp_path / "two.db")  # a hook records first, with the stdlib
    vec = db.connect(tmp_path / "two.db", prefer_vec=True)
    assert type(vec) is type(plain) and type(plain).__module__.startswith("sqlite3")
    mem = db.connect(":memory:", prefer_vec=True)  # in memory: no file, still one library
    assert type(mem) is type(plain)
    plain.close(), vec.close(), mem.close()


def test_opening_a_second_connection_keeps_the_first_ones_locks(tmp_path):
    """Opening a database checks the file without opening it in Python: closing any
    descriptor of a file drops the process's POSIX locks on it, and another process then
    deleted the WAL this process's connection was still writing to (its commits were
    invisible to every other process, and the database was later corrupted)."""
    import subprocess
    import sys

    from brainbox.storage import db

    path = tmp_path / "locks.db"
    first = db.connect(path)
    db.set_meta(first, "k0", "v")
    db.connect(path).close()  # another connection of this process: checked, then closed
    other = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
             "print(c.execute('SELECT count(*) FROM brainbox_meta').fetchone()[0]); c.close()")
    seen = [subprocess.run([sys.executable, "-c", other, str(path)], capture_output=True,
                           text=True, check=True).stdout.strip()]
    db.set_meta(first, "k1", "v")  # after another process opened and closed the file
    seen.append(subprocess.run([sys.executable, "-c", other, str(path)], capture_output=True,
                               text=True, check=True).stdout.strip())
    first.close()
    assert int(seen[1]) == int(seen[0]) + 1  # the second write is visible to others
    assert db.connect(path).execute("PRAGMA quick_check").fetchone()[0] == "ok"
