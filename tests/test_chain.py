"""The hash chain over the event log and `brainbox audit` (issue 19, item 4): every kind of
tampering a user with the `sqlite3` shell can do is named at its first bad id; brainbox's
own deletions (forget) and rewrites (project merge) keep it verifiable; eight concurrent
hook processes write a valid chain."""

import json
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from brainbox import store
from brainbox.storage import db, queries
from tests.records import old_database


def ev(i, **kw):
    return {"at": 1000.0 + i, "session": "s", "project": "/p", "kind": "tool",
            "tool": "Read", "files": [f"f{i}.py"], **kw}


@pytest.fixture
def dbfile(tmp_path):
    path = tmp_path / "c.db"
    conn = db.connect(path)
    db.append_events(conn, [ev(i) for i in range(1, 6)])
    db.append_events(conn, [ev(6, meta={"k": "ü"}, exit_code=1, at=1006)])  # an int `at`
    for i in range(7, 11):
        db.append_events(conn, [ev(i)])
    conn.close()
    return path


def audit(path):
    conn = db.connect(path)
    try:
        return store.audit(conn)
    finally:
        conn.close()


def shell(path, *sql):
    """What a user does with the sqlite3 shell: plain SQL, no brainbox."""
    conn = sqlite3.connect(path, isolation_level=None)
    for s in sql:
        conn.execute(s)
    conn.close()


def test_every_event_is_chained_and_the_chain_audits_ok(dbfile):
    got = audit(dbfile)
    assert got["ok"] and got["events"] == 10 and len(got["head"]) == 64
    conn = db.connect(dbfile)
    rows = conn.execute("SELECT hash FROM events ORDER BY id").fetchall()
    assert all(h and len(h) == 64 for (h,) in rows) and len(set(rows)) == 10
    # the definition: sha256(prev + canon(row)), canon over the stored non-NULL columns
    import hashlib

    cols = ("id",) + db.EVENT_COLUMNS + ("uid",)
    r1 = conn.execute(f"SELECT {', '.join(cols)} FROM events WHERE id = 1").fetchone()
    body = json.dumps({k: v for k, v in zip(cols, r1) if v is not None}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    assert rows[0][0] == hashlib.sha256(body.encode()).hexdigest()


def test_an_edited_event_is_named(dbfile):
    shell(dbfile, "UPDATE events SET files = '[\"other.py\"]' WHERE id = 4")
    got = audit(dbfile)
    assert not got["ok"] and (got["bad_id"], got["problem"]) == (4, "edited")


def test_a_deleted_event_is_named(dbfile):
    shell(dbfile, "DELETE FROM events WHERE id = 5")
    got = audit(dbfile)
    assert (got["ok"], got["bad_id"], got["problem"]) == (False, 5, "deleted")
    shell(dbfile, "DELETE FROM events WHERE id >= 9")  # the tail too
    got = audit(dbfile)
    assert (got["bad_id"], got["problem"]) == (5, "deleted")


def test_deleting_the_last_events_is_named(dbfile):
    shell(dbfile, "DELETE FROM events WHERE id >= 9")
    got = audit(dbfile)
    assert (got["ok"], got["bad_id"], got["problem"]) == (False, 9, "deleted")


def test_an_inserted_event_is_named(dbfile):
    shell(dbfile, "INSERT INTO events (at, session, project, kind, tool, files) "
                  "VALUES (2000, 's', '/p', 'tool', 'Read', '[\"planted.py\"]')")
    got = audit(dbfile)
    assert (got["ok"], got["bad_id"], got["problem"]) == (False, 11, "inserted")


def test_an_event_inserted_into_a_forgotten_gap_is_named(dbfile):
    conn = db.connect(dbfile)
    assert queries.delete_events_mentioning(conn, "/p", "f3.py") == 1
    conn.close()
    assert audit(dbfile)["ok"]
    shell(dbfile, "INSERT INTO events (id, at, session, project, kind, files) "
                  "VALUES (3, 2000, 's', '/p', 'tool', '[]')")
    got = audit(dbfile)
    assert (got["ok"], got["bad_id"], got["problem"]) == (False, 3, "inserted")


@pytest.mark.parametrize("sql", [
    ["UPDATE events SET id = 1000 WHERE id = 6"],
    ["UPDATE events SET id = -1 WHERE id = 6", "UPDATE events SET id = 6 WHERE id = 7",
     "UPDATE events SET id = 7 WHERE id = -1"],
])
def test_a_reordered_id_is_named(dbfile, sql):
    shell(dbfile, *sql)
    got = audit(dbfile)
    assert (got["ok"], got["bad_id"], got["problem"]) == (False, 6, "reordered"), got


def test_forget_records_its_gaps_and_the_chain_stays_verifiable(dbfile):
    conn = db.connect(dbfile)
    for name in ("f3.py", "f4.py", "f10.py", "f9.py", "f1.py"):  # a run, the tail, the head
        assert queries.delete_events_mentioning(conn, "/p", name) == 1
        assert store.audit(conn)["ok"]
    db.append_events(conn, [ev(11)])
    recs = [e for e in db.iter_events(conn) if e["kind"] == "maintenance"]
    assert [r["meta"]["reason"] for r in recs] == ["forget"] * 5
    assert [g[:2] for r in recs for g in r["meta"]["gaps"]] == [[3, 3], [4, 4], [10, 10],
                                                               [9, 9], [1, 1]]
    text = json.dumps(recs)
    assert "f3.py" not in text and "f10.py" not in text
    got = store.audit(conn)
    assert got["ok"] and got["events"] == 11, got
    # a gap record is never deleted, so its gaps stay covered
    assert queries.delete_events_mentioning(conn, "", "gaps") == 0
    conn.close()


def test_a_project_merge_rechains_the_rows_it_rewrites(tmp_path):
    conn = db.connect(tmp_path / "m.db")
    db.append_events(conn, [ev(i, project="/old" if i % 2 else "/p") for i in range(1, 9)])
    merge = {"at": 2000.0, "session": "brainbox:maintenance", "project": "",
             "kind": "maintenance", "files": [],
             "meta": {"op": "merge_project", "from": "/old", "into": "/p"}}
    _, moved = queries.merge_project(conn, merge, "/old", "/p")
    assert moved == 4 and store.audit(conn)["ok"]


def test_an_old_database_is_chained_by_the_migration_gaps_included(tmp_path, monkeypatch):
    path = tmp_path / "old.db"
    old_database(monkeypatch, path, 8)
    raw = sqlite3.connect(path, isolation_level=None)
    raw.executemany("INSERT INTO events (at, session, project, kind, files) VALUES "
                    "(?, 's', '/p', 'tool', '[]')", [(float(i),) for i in range(20)])
    raw.execute("DELETE FROM events WHERE id IN (4, 5, 21)")  # forgotten before the chain
    raw.close()
    conn = db.connect(path)
    got = store.audit(conn)
    assert got["ok"] and got["events"] == 19, got
    (rec,) = [e for e in db.iter_events(conn) if e["kind"] == "maintenance"]
    assert rec["meta"]["gaps"][0][:2] == [4, 5] and rec["meta"]["gaps"][1][:2] == [21, 21]
    assert rec["id"] == 22
    conn.close()


def test_audit_cli_reports_ok_or_the_first_bad_id_and_exits_nonzero(dbfile):
    env_db = ["--db", str(dbfile)]
    run = [sys.executable, "-m", "brainbox.cli.entry", "audit", *env_db]
    r = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "ok" in r.stdout and "10 events" in r.stdout, r.stderr
    shell(dbfile, "UPDATE events SET command = 'rm -rf /' WHERE id = 2")
    r = subprocess.run([*run, "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout)["bad_id"] == 2 and json.loads(r.stdout)["problem"] == "edited"
    r = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "event 2" in r.stdout and "edited" in r.stdout


HOOK = [sys.executable, "-m", "brainbox.cli.entry", "hook", "claude", "PostToolUse"]


def test_eight_concurrent_hook_processes_write_a_valid_chain(brainbox_home, tmp_path):
    from brainbox.cli import spool

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)

    def stream(w, n=12):
        for i in range(n):
            p = {"session_id": f"c{w}", "cwd": str(repo), "hook_event_name": "PostToolUse",
                 "tool_name": "Read", "tool_input": {"file_path": f"{repo}/src/c{w}_{i}.py"},
                 "tool_response": {}}
            r = subprocess.run(HOOK, input=json.dumps(p).encode(), capture_output=True,
                               timeout=60)
            assert r.returncode == 0 and r.stdout == b""

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(stream, range(8)))
    conn = store.connect()
    spool.drain_spool(conn)
    got = store.audit(conn)
    assert got["ok"] and got["events"] == db.count_events(conn) >= 96, got
    conn.close()
