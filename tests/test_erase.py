"""Forget that erases (issue 19, item 5; reliability report D9): after `forget PATH`,
`forget --session S` and `forget --before T`, no byte of the forgotten paths, commands,
prompts or error texts is left in the database file, its -wal or its -shm, the hash chain
audits ok, and bad input is refused before anything is deleted. Real `brainbox` processes
on a real SQLite file."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

OLD = 1_600_000_000.0  # 2020


def bb(*args, cwd=None, stdin=None):
    return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", *map(str, args)],
                          input=stdin, capture_output=True, text=True, cwd=cwd, timeout=300)


def ok(p):
    assert p.returncode == 0, p.stdout + p.stderr
    return p


def raw(home: Path, needle: str) -> int:
    """Copies of `needle` in the raw bytes of the database, its -wal and its -shm."""
    return sum(Path(f"{home / 'brainbox.db'}{s}").read_bytes().count(needle.encode())
               for s in ("", "-wal", "-shm") if Path(f"{home / 'brainbox.db'}{s}").exists())


PATH_MARKS = ["plan-ZX81QW", "PATHCMD-K1", "PATHERR-K2", "PATHPROMPT-K3"]
SESSION_MARKS = ["sess-GONE-Q1W2", "SESSPROMPT-X71", "SESSCMD-X72", "SESSERR-X73",
                 "sessfile-X74"]
OLD_MARKS = ["oldfile-R5", "OLDCMD-R6", "OLDERR-R7", "OLDPROMPT-R8"]


@pytest.fixture
def stored(brainbox_home, tmp_path):
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    now = time.time()
    base = {"cwd": str(proj)}
    recs = []
    for i in range(3):
        recs += [
            {**base, "session": "keep", "tool": "Read", "files": ["docs/keep.md"], "at": now - 9 + i},
            {**base, "session": "keep", "tool": "Read", "files": ["docs/plan-ZX81QW.md"],
             "at": now - 8 + i},
            {**base, "session": "keep", "tool": "Bash", "command": "cat docs/plan-ZX81QW.md "
             "PATHCMD-K1", "error": "docs/plan-ZX81QW.md: PATHERR-K2 no such file",
             "exit_code": 1, "at": now - 7 + i},
            {**base, "session": "keep", "prompt": "open docs/plan-ZX81QW.md PATHPROMPT-K3",
             "at": now - 6 + i},
            {**base, "session": "sess-GONE-Q1W2", "prompt": "summarise SESSPROMPT-X71 please",
             "at": now - 5 + i},
            {**base, "session": "sess-GONE-Q1W2", "tool": "Bash", "command": "grep SESSCMD-X72 .",
             "error": "SESSERR-X73 failed hard", "exit_code": 2, "at": now - 4 + i},
            {**base, "session": "sess-GONE-Q1W2", "tool": "Edit",
             "files": ["src/sessfile-X74.py"], "at": now - 3 + i},
            {**base, "session": "old", "prompt": "do OLDPROMPT-R8 things", "at": OLD + i},
            {**base, "session": "old", "tool": "Bash", "command": "make OLDCMD-R6",
             "error": "OLDERR-R7 boom", "exit_code": 2, "at": OLD + 1 + i},
            {**base, "session": "old", "tool": "Read", "files": ["src/oldfile-R5.py"],
             "at": OLD + 2 + i},
        ]
    ok(bb("record", "--jsonl", "-", stdin="\n".join(json.dumps(r) for r in recs) + "\n"))
    ok(bb("rebuild"))  # the state blobs and resources hold them too
    for m in PATH_MARKS + SESSION_MARKS + OLD_MARKS:
        assert raw(brainbox_home, m) > 0, m
    return proj


def audited():
    p = bb("audit", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["ok"], p.stdout + p.stderr


def test_forget_path_session_and_before_leave_no_byte_behind(brainbox_home, stored):
    ok(bb("forget", "docs/plan-ZX81QW.md", "--cwd", stored))
    assert {m: raw(brainbox_home, m) for m in PATH_MARKS} == dict.fromkeys(PATH_MARKS, 0)
    audited()
    out = json.loads(ok(bb("forget", "--session", "sess-GONE-Q1W2", "--json")).stdout)
    assert out["deleted_events"] == 9
    assert {m: raw(brainbox_home, m) for m in SESSION_MARKS} == dict.fromkeys(SESSION_MARKS, 0)
    audited()
    out = json.loads(ok(bb("forget", "--before", "30d", "--json")).stdout)
    assert out["deleted_events"] == 9
    assert {m: raw(brainbox_home, m) for m in OLD_MARKS} == dict.fromkeys(OLD_MARKS, 0)
    audited()
    ok(bb("rebuild"))
    for m in PATH_MARKS + SESSION_MARKS + OLD_MARKS:
        assert raw(brainbox_home, m) == 0, m
    assert raw(brainbox_home, "docs/keep.md") > 0  # what was not forgotten stays
    stats = json.loads(ok(bb("stats", "--json")).stdout)
    assert stats["events"] == 3 + 3  # keep.md's reads and the three deletions' records
    audited()


def test_forget_before_an_iso_date_and_its_dry_run(brainbox_home, stored):
    out = json.loads(ok(bb("forget", "--before", "2021-01-01", "--dry-run", "--json")).stdout)
    assert out["dry_run"] and out["events"] == 9
    assert raw(brainbox_home, "OLDCMD-R6") > 0
    human = ok(bb("forget", "--session", "old", "--dry-run")).stdout
    assert "would forget 9 events" in human and "nothing deleted" in human
    ok(bb("forget", "--before", "2021-01-01T00:00:00Z"))
    assert raw(brainbox_home, "OLDCMD-R6") == 0
    audited()


@pytest.mark.parametrize("args, word", [
    (["--session", ""], "empty"), (["--session", "  "], "empty"),
    (["--before", ""], "empty"), (["--before", "yesterday-ish"], "ISO 8601"),
    (["--before", "2999-01-01"], "future"), (["--before", "-5d"], "ISO 8601"),
    (["docs/keep.md", "--session", "keep"], "not several"), ([], "PATH"),
])
def test_bad_forget_input_is_refused_and_deletes_nothing(brainbox_home, stored, args, word):
    n = json.loads(ok(bb("stats", "--json")).stdout)["events"]
    p = bb("forget", *args, cwd=stored)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and word in p.stderr, p.stderr
    assert json.loads(ok(bb("stats", "--json")).stdout)["events"] == n


def test_forget_before_that_takes_every_event_needs_yes(brainbox_home, stored):
    p = bb("forget", "--before", "1s")
    assert p.returncode == 2 and "every event" in p.stderr and "--yes" in p.stderr
    assert raw(brainbox_home, "docs/keep.md") > 0
    ok(bb("forget", "--before", "2999-01-01", "--yes"))
    assert raw(brainbox_home, "docs/keep.md") == 0
    audited()


def test_forget_of_a_session_not_in_memory_exits_1(stored):
    p = bb("forget", "--session", "nobody")
    assert p.returncode == 1 and "nothing in memory" in p.stderr
