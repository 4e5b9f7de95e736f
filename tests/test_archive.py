"""`brainbox export` and `brainbox restore` (issue 19 item 2, `brainbox.archive`): the event
log as JSONL and back, identical answers after the round trip, and a broken file that
changes nothing."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from brainbox.cli.app import cli
from brainbox.memory import Memory

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "shared" / "data" / "transcripts"
VOLATILE = ("served_by", "elapsed_ms", "db_bytes", "db_path")


def run(db, *args, input=None):
    return CliRunner().invoke(cli, ["--db", str(db), *map(str, args)], input=input,
                              catch_exceptions=False)


def answer(db, *args) -> dict:
    out = run(db, *args, "--json")
    assert out.exit_code == 0, out.output
    return {k: v for k, v in json.loads(out.stdout).items() if k not in VOLATILE}


def rows(db, drop=()) -> list[tuple]:
    """Every event row in id order, without the columns named in `drop`."""
    conn = sqlite3.connect(db)
    try:
        cur = conn.execute("SELECT * FROM events ORDER BY id")
        keep = [i for i, d in enumerate(cur.description) if d[0] not in drop]
        return [tuple(r[i] for i in keep) for r in cur.fetchall()]
    finally:
        conn.close()


def digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def small(db, n=6, **extra) -> None:
    with Memory.open(db) as mem:
        for i in range(n):
            mem.record({"session": f"s{i % 2}", "cwd": "/p", "project": "/p", "tool": "Read",
                        "files": [f"src/f{i % 3}.py"], "at": 1_000_000.0 + i, **extra})
        mem.sync()


@pytest.fixture(scope="module")
def transcripts_memory(tmp_path_factory):
    """The memory built from every transcript in ../shared/data/transcripts."""
    claude = TRANSCRIPTS / "claude-code"
    if not claude.is_dir():
        pytest.skip("../shared/data/transcripts is absent")
    db = tmp_path_factory.mktemp("archive") / "full.db"
    out = run(db, "import", "claude", claude, "--json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["events"] > 400
    return db


def test_export_restore_round_trip_on_every_transcript_gives_identical_answers(
        transcripts_memory, tmp_path):
    db, file, new = transcripts_memory, tmp_path / "events.jsonl", tmp_path / "new.db"
    out = run(db, "export", "-o", file, "--json")
    assert out.exit_code == 0, out.output
    manifest = json.loads(file.read_text().splitlines()[0])
    assert manifest["format"] == "brainbox-events" and manifest["version"] == 1
    assert manifest["events"] == len(rows(db)) == len(file.read_text().splitlines()) - 1
    assert (manifest["first_id"], manifest["last_id"]) == (rows(db)[0][0], rows(db)[-1][0])
    head = sqlite3.connect(db).execute("SELECT hash FROM events ORDER BY id DESC").fetchone()[0]
    assert manifest["chain_head"] == head and head  # the hash chain's head (issue 19 item 4)
    assert stat.S_IMODE(os.stat(file).st_mode) == 0o600
    done = run(new, "restore", file, "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["restored"] == manifest["events"]
    assert rows(new) == rows(db)  # every column of every event, ids and uids kept
    audit = answer(new, "audit")
    assert audit["ok"] and audit["head"] == head  # the restored chain verifies
    assert answer(new, "stats") == answer(db, "stats")
    conn = sqlite3.connect(db)
    projects = [r[0] for r in conn.execute("SELECT DISTINCT project FROM events ORDER BY 1")]
    sessions = [r[0] for r in conn.execute("SELECT DISTINCT session FROM events ORDER BY 1")]
    prompts = [r[0] for r in conn.execute("SELECT prompt FROM events WHERE prompt IS NOT NULL "
                                          "ORDER BY id LIMIT 5")]
    conn.close()
    found = 0
    for project in projects:
        for q in [*prompts, "hook", "test controller"]:
            want = answer(db, "recall", q, "--project", project, "--limit", 20)
            assert answer(new, "recall", q, "--project", project, "--limit", 20) == want
            found += len(want["results"])
    assert found > 0
    for session in [None, *sessions]:
        args = ("predict",) if session is None else ("predict", "--session", session)
        assert answer(new, *args) == answer(db, *args)
    again = tmp_path / "again.jsonl"
    assert run(new, "export", "-o", again).exit_code == 0
    assert again.read_bytes() == file.read_bytes()  # the same log is the same bytes


def test_a_broken_line_fails_naming_it_and_changes_nothing(transcripts_memory, tmp_path):
    file = tmp_path / "events.jsonl"
    assert run(transcripts_memory, "export", "-o", file).exit_code == 0
    lines = file.read_bytes().splitlines(keepends=True)
    target = tmp_path / "target.db"
    small(target)
    empty = tmp_path / "empty.db"
    Memory.open(empty).close()
    broken = {
        "bad json": (lines[:4] + [lines[4][:40] + b"\n"] + lines[5:], "line 5: not JSON"),
        "edited": (lines[:7] + [lines[7].replace(b'"session":"', b'"session":"x')]
                   + lines[8:], "sha256"),
        "truncated": (lines[:-1], "truncated"),
        "no id": (lines[:3] + [b'{"at":1.0,"session":"s","project":"/p","kind":"tool"}\n']
                  + lines[4:], "line 4: id is missing"),
        "object": (lines[:2] + [lines[2].replace(b'"tool":"', b'"tool":{"x":"', 1)
                                .replace(b'","action"', b'"},"action"', 1)] + lines[3:],
                   "line 3: tool holds a dict"),
        "newer schema": ([lines[0].replace(b'"schema": ', b'"schema": 9')] + lines[1:],
                         "newer than this brainbox"),
    }
    for name, (content, says) in broken.items():
        bad = tmp_path / f"{name.replace(' ', '_')}.jsonl"
        bad.write_bytes(b"".join(content))
        for db, extra in ((target, ("--merge",)), (empty, ()), (tmp_path / "none.db", ())):
            before = digest(db) if db.exists() else None
            out = run(db, "restore", bad, *extra)
            assert out.exit_code == 1, (name, out.output)
            assert len(out.stderr.strip().splitlines()) == 1 and says in out.stderr, \
                (name, out.stderr)
            assert (digest(db) if db.exists() else None) == before, name
    assert len(rows(target)) == 6 and rows(empty) == []


def test_restore_refuses_a_non_empty_database_and_merge_adds_only_new_events(tmp_path):
    src, dst, file = tmp_path / "src.db", tmp_path / "dst.db", tmp_path / "e.jsonl"
    small(src)
    with Memory.open(src) as mem:  # hook events carry a uid
        mem.record_normalized([dict(ev, uid=f"u{i}") for i, ev in enumerate(
            [{"at": 2e6 + i, "session": "h", "project": "/p", "kind": "tool", "tool": "Edit",
              "action": "edit", "files": ["src/f1.py"]} for i in range(3)])])
    assert run(src, "export", "-o", file).exit_code == 0
    small(dst, n=2)  # the same first two events, with no uid
    with Memory.open(dst) as mem:
        mem.record_normalized([{"at": 2e6, "session": "h", "project": "/p", "kind": "tool",
                                "tool": "Edit", "action": "edit", "files": ["src/f1.py"],
                                "uid": "u0"}])
    before = digest(dst)
    refused = run(dst, "restore", file)
    assert refused.exit_code == 1 and "--merge" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and digest(dst) == before
    dry = json.loads(run(dst, "restore", file, "--merge", "--dry-run", "--json").stdout)
    assert (dry["restored"], dry["skipped"]) == (6, 3) and digest(dst) == before
    merged = json.loads(run(dst, "restore", file, "--merge", "--json").stdout)
    assert (merged["restored"], merged["skipped"]) == (6, 3)
    new_ids = ("id", "hash")  # merged events get new ids, so new places in the chain
    assert sorted(rows(dst, new_ids), key=repr) == sorted(rows(src, new_ids), key=repr)
    assert answer(dst, "audit")["ok"]
    assert json.loads(run(dst, "restore", file, "--merge", "--json").stdout)["restored"] == 0
    assert answer(dst, "stats")["events"] == 9 and answer(dst, "stats") == {
        **answer(src, "stats"), "watermark": answer(dst, "stats")["watermark"]}


def test_export_filters_stdout_and_the_id_high_water_mark(tmp_path):
    src, file = tmp_path / "src.db", tmp_path / "e.jsonl"
    small(src, n=8)
    conn = sqlite3.connect(src)
    conn.execute("DELETE FROM events WHERE id = 8")  # as forget deletes
    conn.commit()
    conn.close()
    file.write_text("old")
    out = run(src, "export", "-o", file, "--json")
    assert out.exit_code == 0 and json.loads(out.stdout)["id_high_water"] == 8
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    piped = run(src, "export", "-o", "-")
    assert piped.stdout_bytes == file.read_bytes() and "exported 7" in piped.stderr
    since = run(src, "export", "--since", "1970-01-12T13:46:43Z", "-o", "-")
    m = json.loads(since.stdout.splitlines()[0])
    assert (m["events"], m["first_id"], m["since"]) == (4, 4, 1_000_003.0)
    assert json.loads(run(src, "export", "--project", "/q", "-o", "-").stdout
                      .splitlines()[0])["events"] == 0
    new = tmp_path / "new.db"
    assert run(new, "restore", file).exit_code == 0
    with Memory.open(new) as mem:  # an id a forget freed is never given again
        assert mem.record({"session": "n", "cwd": "/p", "project": "/p", "tool": "Read",
                           "files": ["a.py"]}) == 9


def test_export_keeps_text_as_stored_and_names_the_hash_chain_head_when_it_exists(tmp_path):
    src, file = tmp_path / "src.db", tmp_path / "e.jsonl"
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    with Memory.open(src) as mem:
        mem.record({"session": "s", "cwd": "/p", "project": "/p", "kind": "prompt",
                    "prompt": f"use token {secret} for the api", "at": 5.0})
    stored = rows(src)[0]
    assert run(src, "export", "-o", file).exit_code == 0
    text = file.read_text()
    assert secret not in text and json.loads(text.splitlines()[1])["prompt"] == stored[
        [d[0] for d in sqlite3.connect(src).execute("SELECT * FROM events").description]
        .index("prompt")]
    head = sqlite3.connect(src).execute("SELECT hash FROM events ORDER BY id DESC").fetchone()[0]
    assert json.loads(text.splitlines()[0])["chain_head"] == head
    chained = tmp_path / "chained.db"
    assert run(chained, "restore", file).exit_code == 0
    assert rows(chained) == rows(src)  # the hashes kept, so the chain still verifies


def test_a_merged_restore_keeps_the_chain_verifiable(tmp_path):
    src, dst, file = tmp_path / "src.db", tmp_path / "dst.db", tmp_path / "e.jsonl"
    with Memory.open(src) as mem:
        for i in range(3):
            mem.record({"session": "a", "cwd": "/p", "project": "/p", "tool": "Read",
                        "files": [f"a{i}.py"], "at": 10.0 + i})
    with Memory.open(dst) as mem:
        mem.record({"session": "b", "cwd": "/q", "project": "/q", "tool": "Read",
                    "files": ["b.py"], "at": 1.0})
    assert run(src, "export", "-o", file).exit_code == 0
    assert run(dst, "restore", file, "--merge").exit_code == 0
    audit = answer(dst, "audit")
    assert audit["ok"] and audit["events"] == 4
