"""Cache-stable injection (issue 17, item 2), through real hook processes: two sessions of
an unchanged memory get byte-identical SessionStart blocks, and the same prompt the same
UserPromptSubmit block; when memory changes, so does the block."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from brainbox.cli.hookmap import CONTEXT_CLOSE, CONTEXT_OPEN
from brainbox.memory import Memory
from tests.records import git_repo, hook_process, running_daemon

FILES = ("src/auth/login.py", "src/auth/session.py", "src/billing/invoice.py",
         "tests/test_auth.py")
PROMPT = "fix the login redirect in auth"
FAILURE = "Traceback (most recent call last):\nKeyError: 'user'"


hook = hook_process


def context(out: str, event: str) -> str:
    data = json.loads(out)
    assert data["hookSpecificOutput"]["hookEventName"] == event
    return data["hookSpecificOutput"]["additionalContext"]


def session(repo, sid, env) -> dict:
    """One session's opening as the agent drives it: SessionStart, then two prompts (one
    that memory knows something about, one it does not)."""
    base = {"session_id": sid, "cwd": str(repo), "transcript_path": f"/tmp/{sid}.jsonl"}
    return {
        "start": hook("SessionStart", dict(base, hook_event_name="SessionStart",
                                           source="startup"), env),
        "prompt": hook("UserPromptSubmit", dict(base, hook_event_name="UserPromptSubmit",
                                                prompt=PROMPT), env),
        "nothing": hook("UserPromptSubmit", dict(base, hook_event_name="UserPromptSubmit",
                                                 prompt="zyzzyva quux"), env),
    }


@pytest.fixture
def seeded(tmp_path, brainbox_home):
    """A project memory of a week ago: three sessions of auth work, one open error."""
    repo = git_repo(tmp_path / "repo", FILES)
    t0 = time.time() - 7 * 86400
    with Memory.open() as mem:
        for s in range(3):
            for i, (tool, f) in enumerate((("Read", "src/auth/login.py"),
                                           ("Edit", "src/auth/session.py"),
                                           ("Read", "tests/test_auth.py"))):
                mem.record({"session": f"past{s}", "cwd": str(repo), "tool": tool,
                            "files": [f], "at": t0 + 3600 * s + 10 * i})
        mem.record({"session": "past2", "cwd": str(repo), "tool": "Bash",
                    "command": "pytest tests/test_auth.py", "error": FAILURE,
                    "exit_code": 1, "at": t0 + 7300})
    return repo


@pytest.fixture(params=["in-process", "daemon"])
def hook_env(request, brainbox_home):
    env = dict(os.environ, BRAINBOX_HOOK_BUDGET_PROMPT="30")  # behaviour, not speed
    if request.param == "in-process":
        env["BRAINBOX_DAEMON"] = "off"
        yield env
        return
    with running_daemon(brainbox_home):
        yield env


def test_two_sessions_of_an_unchanged_memory_get_byte_identical_blocks(seeded, hook_env):
    a = session(seeded, "sess-aaaa-1111", hook_env)
    b = session(seeded, "sess-bbbb-2222", hook_env)
    assert a["start"] == b["start"] and a["prompt"] == b["prompt"]  # every byte the agent sees
    start = context(a["start"], "SessionStart")
    assert start.startswith(CONTEXT_OPEN) and start.endswith(CONTEXT_CLOSE)
    assert len(start) <= 1200
    assert "- src/auth/login.py — used 3x" in start
    assert "open errors (no passing rerun since):" in start and "after Bash:pytest, 1x" in start
    assert "sess-" not in start and "sess-" not in a["prompt"]
    assert "src/auth/login.py — matches query" in context(a["prompt"], "UserPromptSubmit")
    assert a["nothing"] == b["nothing"] == ""  # nothing clears the floor: nothing at all


def test_the_session_start_block_changes_when_memory_does(seeded, hook_env):
    before = session(seeded, "sess-one", hook_env)["start"]
    for _ in range(4):  # the invoice becomes the most used file; pytest passes again
        hook("PostToolUse", {"session_id": "work", "cwd": str(seeded),
                             "hook_event_name": "PostToolUse", "tool_name": "Edit",
                             "tool_input": {"file_path": str(seeded / "src/billing/invoice.py")},
                             "tool_response": {}}, hook_env)
    hook("PostToolUse", {"session_id": "work", "cwd": str(seeded),
                         "hook_event_name": "PostToolUse", "tool_name": "Bash",
                         "tool_input": {"command": "pytest tests/test_auth.py"},
                         "tool_response": {"stdout": "3 passed", "exit_code": 0}}, hook_env)
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "pin", "--text",
                        "staging is read-only", "--project", str(seeded)],
                       capture_output=True, text=True, env=hook_env, timeout=120)
    assert r.returncode == 0, r.stderr
    after = context(session(seeded, "sess-two", hook_env)["start"], "SessionStart")
    assert after != context(before, "SessionStart")
    lines = after.splitlines()
    assert lines[2:4] == ["pinned:", "- note: staging is read-only"]
    assert "- src/billing/invoice.py — used 4x" in lines[5:7]  # beside tests/test_auth.py,
    # which the passing pytest ran: its 4th use
    assert "open errors" not in after  # the passing rerun closed it
