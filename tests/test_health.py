"""Health that cannot lie (issue 17 item 5): each hook kind records its last success and
its failures, from real hook processes, and `brainbox doctor` judges registered hooks by
them: one that fails every time, one that has not run for N days."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time

import pytest

from brainbox.cli import health

DAY = 86400.0


def hook(event, payload, agent="claude", env=None):
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "hook", agent, event],
                       input=data, capture_output=True, timeout=120,
                       env={**os.environ, "BRAINBOX_DAEMON": "off", "BRAINBOX_INJECT": "off",
                            "BRAINBOX_HOOK_BUDGET_TOOL": "30",  # a loaded test machine
                            **(env or {})})
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    return r


def tool(tmp_path, name="Read"):
    return {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "PostToolUse",
            "tool_name": name, "tool_input": {"file_path": str(tmp_path / "a.py")},
            "tool_response": {}}


def record(agent="claude", event="PostToolUse"):
    return health.read_all().get(agent, {}).get(event)


def test_a_hook_that_handled_its_event_records_a_success_0600_in_a_0700_folder(
        tmp_path, brainbox_home):
    before = time.time()
    hook("PostToolUse", tool(tmp_path))
    rec = record()
    assert rec["last_success"] >= before - 1 and rec["last_failure"] is None
    folder = brainbox_home / health.DIR_NAME
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for p in folder.iterdir():
        assert stat.S_IMODE(p.lstat().st_mode) == 0o600 and p.is_file()


def test_a_failing_hook_records_its_reason_and_a_later_success_clears_the_streak(tmp_path):
    hook("PostToolUse", b"{not json")
    hook("PostToolUse", b"[1, 2]")
    rec = record()
    assert rec["last_success"] is None and rec["failures_since_success"] == 2
    assert "not an object" in rec["last_failure"]["reason"]
    hook("PostToolUse", tool(tmp_path))
    rec = record()
    assert rec["failures_since_success"] == 0 and rec["failures_kept"] == 2
    assert rec["last_success"] >= rec["last_failure"]["at"]
    assert record("claude", "UserPromptSubmit") is None  # kinds are kept apart


def test_a_hook_killed_by_its_watchdog_is_a_failure_not_a_success(tmp_path):
    # a budget no hook can keep: the watchdog spools the event and exits
    hook("PostToolUse", tool(tmp_path), env={"BRAINBOX_HOOK_BUDGET_TOOL": "0.0001"})
    rec = record()
    assert rec["last_success"] is None
    assert "timeout" in rec["last_failure"]["reason"]


def test_odd_hook_arguments_record_no_kind(tmp_path, brainbox_home):
    hook("../../etc", tool(tmp_path), agent="claude")
    assert health.read_all() == {}


def test_the_fail_file_keeps_its_newest_lines(brainbox_home):
    for i in range(health.FAIL_MAX // 40):
        health.failed("claude", "Stop", f"reason {i} " + "x" * 30)
    rec = health.read_all()["claude"]["Stop"]
    assert health.FAIL_KEEP <= rec["failures_kept"] < health.FAIL_MAX // 40
    assert rec["last_failure"]["reason"].startswith(f"reason {health.FAIL_MAX // 40 - 1} ")


# --------------------------------------------------------------------------- doctor


def doctor(tmp_path, *args):
    env = dict(os.environ, HOME=str(tmp_path), CODEX_HOME=str(tmp_path / "codex"),
               BRAINBOX_DAEMON="off")
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "doctor", "--no-latency",
                        *args], capture_output=True, text=True, env=env, timeout=120,
                       cwd=str(tmp_path))
    return r


def register(tmp_path, events, age_days=30.0):
    """Claude Code user settings registering brainbox's hooks, written `age_days` ago."""
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    cmd = f"{sys.executable} -m brainbox.cli.entry"
    hooks = {ev: [{"hooks": [{"type": "command", "command": f"{cmd} hook claude {ev}"}]}]
             for ev in events}
    path.write_text(json.dumps({"hooks": hooks}))
    then = time.time() - age_days * DAY
    os.utime(path, (then, then))


def age(event, days, suffix="ok", agent="claude"):
    path = health.kind_base(agent, event) + "." + suffix
    then = time.time() - days * DAY
    os.utime(path, (then, then))


@pytest.fixture
def used(tmp_path, brainbox_home):
    """A home where PostToolUse and Stop ran fine today."""
    hook("PostToolUse", tool(tmp_path))
    hook("Stop", {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "Stop"})
    return brainbox_home


def kinds(data):
    return {f"{k['agent']}/{k['event']}": k for k in data["health"]["kinds"]}


def test_doctor_reports_a_hook_that_fails_every_time(tmp_path, used):
    register(tmp_path, ("PostToolUse", "Stop", "UserPromptSubmit"))
    for _ in range(3):
        hook("UserPromptSubmit", b"\x00 not json")
    r = doctor(tmp_path, "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    data = json.loads(r.stdout)
    [problem] = data["problems"]
    assert problem.startswith("hook claude/UserPromptSubmit fails every time")
    assert "never succeeded" in problem and "payload is not JSON" in problem
    k = kinds(data)
    assert k["claude/UserPromptSubmit"]["state"] == "failing"
    assert k["claude/PostToolUse"]["state"] == "ok" and k["claude/Stop"]["state"] == "ok"
    human = doctor(tmp_path)
    assert human.returncode == 1
    assert "health  claude/UserPromptSubmit: FAILING" in human.stdout
    assert "PROBLEM hook claude/UserPromptSubmit fails every time" in human.stdout
    assert human.stdout.strip().splitlines()[-1] == "verdict: 1 problem"


def test_a_hook_that_succeeded_before_its_failures_fails_every_time_after_three(tmp_path,
                                                                               used):
    register(tmp_path, ("PostToolUse", "Stop"))
    age("PostToolUse", 3)  # its success was 3 days ago; since then:
    for n in range(3):
        hook("PostToolUse", b"{")
        ok = json.loads(doctor(tmp_path, "--json").stdout)
        assert (ok["problems"] != []) is (n == 2), ok["problems"]
    [problem] = ok["problems"]
    assert "its last 3 run(s) failed and its last success was 3 days ago" in problem


def test_doctor_reports_a_registered_hook_that_has_not_run(tmp_path, used):
    register(tmp_path, ("PostToolUse", "Stop", "SessionEnd"))
    age("Stop", 9)
    data = json.loads(doctor(tmp_path, "--json").stdout)
    assert sorted(data["problems"]) == sorted([p for p in data["problems"]
                                               if "has not run for 7 days" in p])
    text = "\n".join(data["problems"])
    assert "hook claude/SessionEnd is registered but has not run for 7 days (last run: " \
           "never)" in text
    assert "hook claude/Stop is registered but has not run for 7 days (last run: 9 days " \
           "ago)" in text
    assert len(data["problems"]) == 2 and data["ok"] is False
    assert kinds(data)["claude/SessionEnd"]["state"] == "never ran"
    # N is configurable: with 10 days, Stop is fine, and SessionEnd (registered 30 days
    # ago) still has never run
    r = doctor(tmp_path, "--json", "--stale-days", "10")
    [problem] = json.loads(r.stdout)["problems"]
    assert problem.startswith("hook claude/SessionEnd is registered but has not run for 10 "
                              "days (last run: never)")
    env_days = subprocess.run(
        [sys.executable, "-m", "brainbox.cli.entry", "doctor", "--no-latency", "--json"],
        capture_output=True, text=True, timeout=120, cwd=str(tmp_path),
        env=dict(os.environ, HOME=str(tmp_path), CODEX_HOME=str(tmp_path / "codex"),
                 BRAINBOX_DAEMON="off", BRAINBOX_DOCTOR_STALE_DAYS="40"))
    assert env_days.returncode == 0, env_days.stdout


def test_hooks_registered_moments_ago_have_not_run_yet_and_that_is_fine(tmp_path,
                                                                         brainbox_home):
    register(tmp_path, ("PostToolUse", "Stop"), age_days=0)
    r = doctor(tmp_path, "--json")
    assert r.returncode == 0, r.stdout
    assert {k["state"] for k in json.loads(r.stdout)["health"]["kinds"]} == {"not run yet"}


def test_an_agent_none_of_whose_hooks_ran_is_one_plain_problem(tmp_path, used):
    register(tmp_path, ("PostToolUse", "Stop", "SessionStart"))
    age("PostToolUse", 12)
    age("Stop", 11)
    data = json.loads(doctor(tmp_path, "--json").stdout)
    assert data["problems"] == [(
        "hooks claude: no registered brainbox hook has run for 7 days (last run: 11 days "
        "ago); if you used claude since, it is not running brainbox's hooks: check the "
        "settings file and the agent's hook list")]
