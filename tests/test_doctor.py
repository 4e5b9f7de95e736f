"""`brainbox doctor`: a verdict, hooks whose command is gone, damaged pages, unsafe modes
(issue 13 items 11, 12 and 19; newcomer report, reliability D8 and D10)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from brainbox import store
from tests.damage import damaged_db


def doctor(tmp_path, *args):
    env = dict(os.environ, HOME=str(tmp_path), CODEX_HOME=str(tmp_path / "codex"),
               BRAINBOX_DAEMON="off")
    return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "doctor",
                           "--no-latency", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=str(tmp_path))


def settings(tmp_path, command):
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    hooks = {ev: [{"hooks": [{"type": "command", "command": f"{command} hook claude {ev}"}]}]
             for ev in ("SessionStart", "UserPromptSubmit", "PostToolUse",
                        "PostToolUseFailure", "Stop", "SessionEnd")}
    path.write_text(json.dumps({"hooks": hooks}))


@pytest.fixture
def healthy(tmp_path, brainbox_home):
    brainbox_home.mkdir(mode=0o700)
    conn = store.connect()
    store.append_events(conn, [{"at": 1.0, "session": "s", "project": "/p", "kind": "tool",
                                "tool": "Read", "files": ["a.py"]}])
    conn.close()
    settings(tmp_path, f"{sys.executable} -m brainbox.cli.entry")
    return brainbox_home


def test_a_healthy_setup_gets_the_verdict_ok(tmp_path, healthy):
    r = doctor(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "verdict: ok"
    data = json.loads(doctor(tmp_path, "--json").stdout)
    assert data["ok"] is True and data["problems"] == []


def test_a_hook_whose_command_no_longer_exists_is_a_problem(tmp_path, healthy):
    settings(tmp_path, str(tmp_path / "old-venv" / "bin" / "brainbox"))
    r = doctor(tmp_path, "--json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["ok"] is False
    [problem] = data["problems"]
    assert "old-venv/bin/brainbox" in problem and "no longer exists" in problem
    human = doctor(tmp_path)
    assert human.returncode == 1
    assert human.stdout.strip().splitlines()[-1] == "verdict: 1 problem"


def test_doctor_runs_the_quick_check(tmp_path, healthy):
    path = healthy / "brainbox.db"
    path.unlink()
    damaged_db(path)
    res = doctor(tmp_path, "--json")
    assert res.returncode == 1
    data = json.loads(res.stdout)
    assert any("damaged" in p for p in data["problems"]), data["problems"]


def test_doctor_reports_wrong_ownership_and_modes_before_anything_fixes_them(tmp_path,
                                                                            healthy):
    (healthy / "hook-errors.log").write_text("x\n")
    (healthy / "hook-errors.log").chmod(0o644)
    (healthy / "brainbox.db").chmod(0o644)
    (healthy / "daemon.json").symlink_to(tmp_path / "elsewhere.json")
    healthy.chmod(0o755)
    data = json.loads(doctor(tmp_path, "--json").stdout)
    text = "\n".join(data["problems"])
    assert f"{healthy} has mode 0755" in text
    assert "brainbox.db has mode 0644" in text and "hook-errors.log has mode 0644" in text
    assert "daemon.json is a symlink" in text
    assert data["ok"] is False
    if os.geteuid() == 0:
        os.chown(healthy / "hook-errors.log", 4242, 4242)
        data = json.loads(doctor(tmp_path, "--json").stdout)
        assert any("hook-errors.log belongs to uid 4242" in p for p in data["problems"])
    assert not Path(tmp_path / "elsewhere.json").exists()


def test_a_fifo_as_the_database_is_a_problem_not_a_hang(tmp_path, healthy):
    fifo = tmp_path / "fifo.db"
    os.mkfifo(fifo)
    env = dict(os.environ, HOME=str(tmp_path), BRAINBOX_DB=str(fifo), BRAINBOX_DAEMON="off")
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "doctor", "--no-latency",
                        "--json"], capture_output=True, text=True, env=env, timeout=60,
                       cwd=str(tmp_path))
    assert r.returncode == 1
    assert any("not a regular file" in p for p in json.loads(r.stdout)["problems"])


def test_quarantined_spool_files_are_a_problem_and_the_fallback_log_is_shown(tmp_path,
                                                                            healthy):
    # hooks.drain_spool moves a spool file the database refused to spool/bad/; the hook
    # engineer's fallback log takes entries the home's log refused
    bad = healthy / "spool" / "bad"
    bad.mkdir(parents=True, mode=0o700)
    (healthy / "spool").chmod(0o700)
    (bad / "00000000000000000001-1.jsonl").write_text("{}\n")
    (bad / "00000000000000000001-1.jsonl").chmod(0o600)
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    (run / "brainbox-hook-errors.log").write_text(
        "=== 2026-12-01T10:00:00 pid=1 agent=claude event=PostToolUse: event lost: "
        "cannot spool (OSError: read-only)\n")
    env_run = {"XDG_RUNTIME_DIR": str(run)}
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "doctor", "--no-latency",
                        "--json"], capture_output=True, text=True, timeout=120,
                       cwd=str(tmp_path), env=dict(os.environ, HOME=str(tmp_path),
                                                   CODEX_HOME=str(tmp_path / "codex"),
                                                   BRAINBOX_DAEMON="off", **env_run))
    assert r.returncode == 1, r.stdout + r.stderr
    data = json.loads(r.stdout)
    assert data["hook_errors"]["quarantined_files"] == 1
    assert any("spool/bad" in p for p in data["problems"]), data["problems"]
    assert any("event lost" in e for e in data["hook_errors"]["last"])


def test_with_codex_hooks_installed_doctor_says_how_to_trust_them(tmp_path, healthy,
                                                                 monkeypatch):
    from brainbox.cli.install import codex_config_path, install_codex

    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))  # as doctor's, below
    path = codex_config_path()
    summary = install_codex(path, command=f"{sys.executable} -m brainbox.cli.entry")
    assert any("/hooks" in n and "untrusted hook is silent" in n for n in summary["notes"])
    out = doctor(tmp_path).stdout
    assert "codex: Codex runs new hooks only after you trust them" in out and "/hooks" in out
