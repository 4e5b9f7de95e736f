"""Pins (`brainbox pin` / `unpin` / `pins`, `Memory.pin`) and the open errors of the
SessionStart block (`brainbox.openerrors`): event-sourced, kept by rebuild, never decayed."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from brainbox.cli.app import cli
from brainbox.cli.service import Service, format_start
from brainbox.memory import Memory
from tests.records import git_repo

FILES = ("src/auth/login.py", "src/auth/session.py", "src/billing/invoice.py")
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PYTEST_FAIL = "Traceback (most recent call last):\nKeyError: 'user'"


@pytest.fixture
def repo(tmp_path):
    return git_repo(tmp_path / "repo", FILES)


@pytest.fixture
def mem(repo, brainbox_home):
    m = Memory.open()
    for s in range(3):
        for i, (tool, f) in enumerate((("Read", "src/auth/login.py"),
                                       ("Edit", "src/auth/session.py"))):
            m.record({"session": f"s{s}", "cwd": str(repo), "tool": tool, "files": [f],
                      "at": 1_700_000_000 + 100 * s + i})
    yield m
    m.close()


def invoke(*args, cwd=None):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def start_text(repo, max_chars=1200, session="new"):
    svc = Service()
    try:
        return svc.handle({"op": "start", "project": str(repo), "session": session,
                           "max_chars": max_chars})["result"]["text"]
    finally:
        svc.close()


def test_pins_open_the_session_start_block_in_pin_order(mem, repo):
    assert "pinned:" not in start_text(repo)
    mem.pin("src/billing/invoice.py", cwd=str(repo))
    mem.pin(text="run make lint before committing", cwd=str(repo))
    text = start_text(repo)
    lines = text.splitlines()
    assert lines[2:5] == ["pinned:", "- src/billing/invoice.py",
                          "- note: run make lint before committing"]
    assert lines[5] == "likely files:" and "- src/auth/login.py — used 3x" in lines
    # a pinned file is not listed again among the likely files
    mem.pin(str(repo / "src/auth/login.py"))
    assert start_text(repo).count("src/auth/login.py") == 1


def test_a_path_is_project_relative_and_pinning_twice_writes_nothing(mem, repo):
    first = mem.pin("auth/login.py", cwd=str(repo / "src"))
    assert (first["kind"], first["value"], first["project"], first["pinned"]) == (
        "file", "src/auth/login.py", str(repo), True)
    events = mem.count_events()
    again = mem.pin(str(repo / "src/auth/login.py"))
    assert again["pinned"] is False and again["id"] == first["id"]
    assert mem.count_events() == events
    other = repo.parent / "elsewhere"
    other.mkdir()
    assert mem.pin("src/auth/login.py", project=str(repo), cwd=str(other))["id"] == first["id"]


def test_pins_are_events_that_rebuild_keeps_and_decay_never_touches(mem, repo):
    a = mem.pin("src/auth/session.py", cwd=str(repo))
    b = mem.pin(text="the staging db is read-only", cwd=str(repo))
    mem.unpin("src/auth/session.py", cwd=str(repo))
    c = mem.pin("src/auth/session.py", cwd=str(repo))  # pinned again: a new pin, last
    before = mem.pins(cwd=str(repo))
    assert [p["id"] for p in before] == [b["id"], c["id"]] and c["id"] > a["id"]
    kinds = [r[0] for r in mem.conn.execute(
        "SELECT json_extract(meta, '$.op') FROM events WHERE kind = 'maintenance'")]
    assert kinds == ["pin", "pin", "unpin", "pin"]
    mem.decay(now=time.time() + 400 * 86400, force=True)  # a year on: all pruned
    assert mem.stats()["associations"] == 0
    mem.rebuild()
    assert mem.pins(cwd=str(repo)) == before
    with Memory.open() as fresh:  # saved with the state
        assert fresh.state.pins.to_json() == mem.state.pins.to_json()
    assert start_text(repo).splitlines()[3:5] == [
        "- note: the staging db is read-only", "- src/auth/session.py"]


def test_a_text_pin_is_redacted_before_it_touches_disk(mem, repo, brainbox_home):
    pin = mem.pin(text=f"deploy with token {SECRET}", cwd=str(repo))
    assert SECRET not in pin["value"] and "[REDACTED" in pin["value"]
    mem.save()
    mem.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for f in brainbox_home.iterdir():
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f.name
    assert SECRET not in start_text(repo)
    # unpinning by the same text finds the redacted pin
    assert mem.unpin(text=f"deploy with token {SECRET}", cwd=str(repo))["id"] == pin["id"]


def test_forget_of_a_pinned_file_removes_its_pin(mem, repo):
    mem.pin("src/auth/login.py", cwd=str(repo))
    mem.forget("src/auth/login.py", cwd=str(repo))
    assert mem.pins(cwd=str(repo)) == []
    assert mem.conn.execute("SELECT count(*) FROM events WHERE files LIKE '%login%'"
                            ).fetchone()[0] == 0


@pytest.mark.parametrize("args, message", [
    (("pin", "--text", "   "), "pin: the text is empty"),
    (("pin",), "pin takes a PATH or --text TEXT"),
    (("pin", "a.py", "--text", "x"), "pin takes a PATH or --text TEXT"),
    (("pin", "../outside.py"), "is not a file under the project"),
    (("pin", "--text", "x" * 501), "more than 500"),
    (("unpin", "src/auth/login.py"), "nothing pinned matches src/auth/login.py"),
    (("unpin", "--id", "99999"), "nothing pinned matches id 99999"),
    (("unpin", "--id", "1", "--text", "x"), "unpin takes one of"),
])
def test_bad_pin_input_is_one_line_and_writes_nothing(mem, repo, monkeypatch, args, message):
    monkeypatch.chdir(repo)
    events = mem.count_events()
    r = CliRunner().invoke(cli, list(args))
    assert r.exit_code == 1, r.output
    assert r.stderr.count("\n") == 1 and message in r.stderr, r.stderr
    assert mem.count_events() == events


def test_pin_unpin_pins_commands_speak_json(mem, repo, monkeypatch):
    monkeypatch.chdir(repo / "src")
    one = json.loads(invoke("pin", "auth/login.py", "--json").stdout)
    two = json.loads(invoke("pin", "--text", "ask before migrating", "--json").stdout)
    assert one["value"] == "src/auth/login.py" and one["pinned"] and two["kind"] == "text"
    listed = json.loads(invoke("pins", "--json").stdout)
    assert [p["id"] for p in listed] == [one["id"], two["id"]]
    assert invoke("pins").stdout.splitlines()[1].endswith("note: ask before migrating")
    monkeypatch.chdir(repo.parent)  # elsewhere: --project names it, --id needs none
    assert json.loads(invoke("pins", "--project", str(repo), "--json").stdout) == listed
    assert json.loads(invoke("pins", "--json").stdout) == []
    gone = json.loads(invoke("unpin", "--id", str(one["id"]), "--json").stdout)
    assert gone["unpinned"] and gone["project"] == str(repo)
    out = invoke("unpin", "--text", "ask before migrating", "--project", str(repo)).stdout
    assert out.startswith("unpinned note: ask before migrating")
    assert invoke("pins", "--project", str(repo)).stdout == "no pins\n"


def test_pins_alone_over_the_budget_are_cut_with_a_marker():
    block = {"pins": [{"kind": "text", "value": f"note number {i} " + "x" * 80}
                      for i in range(30)], "files": [{"path": "a.py", "why": "used 1x"}],
             "errors": [], "procedures": []}
    text, items = format_start(block, 1200)
    assert len(text) <= 1200 and items == []  # no room left for files
    lines = text.splitlines()
    assert lines[2] == "pinned:" and lines[3].startswith("- note: note number 0 ")
    assert lines[-2].startswith("- … ") and lines[-2].endswith(" more pinned (brainbox pins)")
    assert lines[-3].endswith("…")  # the last pin shown, cut to fit
    shown = sum(ln.startswith("- note:") for ln in lines)
    assert int(lines[-2].split()[2]) == 30 - shown
    one = {**block, "pins": [{"kind": "text", "value": "y" * 400}]}
    text, _ = format_start(one, 200)
    assert len(text) <= 200 and text.splitlines()[3].endswith("y…")
    assert format_start(block, 60) == ("", [])  # not even the marker fits


def test_sections_keep_their_order_and_live_procedures_have_a_seam(mem, repo, monkeypatch):
    block = mem.start_block(str(repo))
    assert block["procedures"] == []  # none exist yet
    monkeypatch.setattr(Memory, "live_procedures",
                        lambda self, project: [{"text": "pytest passes after editing a.py"}])
    text = start_text(repo)
    assert text.splitlines()[-3:-1] == ["live procedures:", "- pytest passes after editing a.py"]


# --------------------------------------------------------------------------- open errors


def fail(repo, session, tool="Bash", command="pytest tests", error=PYTEST_FAIL, code=1):
    return {"session": session, "cwd": str(repo), "tool": tool, "command": command,
            "error": error, "exit_code": code}


def test_an_error_is_open_until_a_passing_rerun_of_the_same_program(mem, repo):
    mem.record(fail(repo, "e1"))
    mem.record(fail(repo, "e1", command="python -c 'import yaml'",
                    error="ModuleNotFoundError: No module named 'yaml'"))
    mem.record(fail(repo, "e1"))
    errs = mem.start_block(str(repo))["errors"]
    assert [(e["tool"], e["count"]) for e in errs] == [("Bash:pytest", 2), ("Bash:python", 1)]
    assert "open errors (no passing rerun since):" in start_text(repo)
    assert f"- {errs[0]['fingerprint']} — after Bash:pytest, 2x" in start_text(repo)
    mem.record(fail(repo, "e1", command="npm test", error=None, code=0))  # another program
    assert len(mem.start_block(str(repo))["errors"]) == 2
    mem.record(fail(repo, "e1", command="pytest tests/test_auth.py", error=None, code=0))
    assert [e["tool"] for e in mem.start_block(str(repo))["errors"]] == ["Bash:python"]
    mem.resolve("ModuleNotFoundError: No module named 'yaml'", ["setup.py"], cwd=str(repo))
    assert mem.start_block(str(repo))["errors"] == []
    assert "open errors" not in start_text(repo)


def test_open_errors_and_pins_fold_incrementally_as_a_rebuild_does(repo, tmp_path):
    raws = [fail(repo, "a"), fail(repo, "a", command="make", error="make: *** [all] Error 2"),
            fail(repo, "b", error=None, code=0), fail(repo, "c", command="tsc",
                                                       error="error TS2304: Cannot find name")]
    inc = Memory.open(tmp_path / "inc.db")
    for raw in raws:
        inc.record(raw)
        inc.sync()
        inc.close()
        inc = Memory.open(tmp_path / "inc.db")  # through SQLite each time
    inc.pin(text="one", cwd=str(repo))
    inc.close()
    inc = Memory.open(tmp_path / "inc.db")
    inc.sync()
    assert [e["tool"] for e in inc.state.open_errors.newest(str(repo), 5)] == [
        "Bash:tsc", "Bash:make"]
    one = Memory.open(tmp_path / "inc.db")
    one.rebuild()
    assert one.state.open_errors.to_json() == inc.state.open_errors.to_json()
    assert one.state.pins.to_json() == inc.state.pins.to_json()
    inc.close(), one.close()
