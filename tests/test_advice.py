"""Advice at the moment of action (issue 17, item 3): what the engine folds for it
(`brainbox.advice`), the block the PreToolUse hook prints, and the hook itself as a real
process, with and without a daemon."""

from __future__ import annotations

import json
import os

import pytest

from brainbox.cli.service import format_advice
from brainbox.memory import Memory
from tests.records import git_repo, hook_process, record_tool, running_daemon

FILES = ("src/core.py", "src/helpers.py", "src/other.py", "tests/test_core.py", "run.py")
FAILURE = "Traceback (most recent call last):\nKeyError: 'user'"
tool = record_tool


def seed(mem, repo, t0=1_700_000_000.0):
    """Three sessions that edit core.py and helpers.py together, then run pytest, which
    fails after the edits of the first two; one session that fixes a failing command.
    A command's files are what hookmap gives it (the script it runs)."""
    for s in range(3):
        at = t0 + 1000 * s
        tool(mem, repo, f"s{s}", "Edit", at, files=["src/core.py"])
        tool(mem, repo, f"s{s}", "Edit", at + 1, files=["src/helpers.py"])
        tool(mem, repo, f"s{s}", "Bash", at + 2, command="pytest tests/test_core.py",
             files=["tests/test_core.py"],
             error=FAILURE if s < 2 else None, code=1 if s < 2 else 0)
    tool(mem, repo, "s9", "Read", t0 + 9000, files=["src/other.py"])
    tool(mem, repo, "fix", "Bash", t0 + 9100, command="python run.py", files=["run.py"],
         error=FAILURE, code=1)
    tool(mem, repo, "fix", "Edit", t0 + 9101, files=["src/other.py"])
    tool(mem, repo, "fix", "Bash", t0 + 9102, command="python run.py", files=["run.py"],
         code=0)
    tool(mem, repo, "fix", "Bash", t0 + 9103, command="make lint", error=FAILURE, code=2)


def edit_event(repo, path):
    return {"tool": "Edit", "action": "edit", "files": [path], "project": str(repo)}


def test_an_edit_is_advised_its_co_edited_files_and_the_errors_that_followed(tmp_path):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        seed(mem, repo)
        found = mem.advise(edit_event(repo, "src/core.py"))
    (entry,) = found["edits"]
    assert entry["path"] == "src/core.py"
    co = [c["path"] for c in entry["co_edits"]]
    assert co[0] == "src/helpers.py" and "src/core.py" not in co
    (err,) = entry["errors"]
    assert err["count"] == 2 and err["runs"] == 3 and err["fingerprint"]
    assert found["command"] is None


def test_an_error_that_followed_edits_once_is_below_the_floor(tmp_path):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        tool(mem, repo, "a", "Edit", 1_700_000_000.0, files=["src/core.py"])
        tool(mem, repo, "a", "Bash", 1_700_000_001.0, command="pytest", error=FAILURE, code=1)
        found = mem.advise(edit_event(repo, "src/core.py"))
    assert found["edits"] == [] or found["edits"][0]["errors"] == []


def test_a_command_is_advised_the_files_edited_before_it_passed_and_its_open_failure(tmp_path):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        seed(mem, repo)
        fixed = mem.advise({"tool": "Bash:python", "action": "run", "files": ["run.py"],
                            "project": str(repo)})["command"]
        failing = mem.advise({"tool": "Bash:make", "action": "run", "files": [],
                              "project": str(repo)})["command"]
        unknown = mem.advise({"tool": "Bash:ls", "action": "run", "files": [],
                              "project": str(repo)})
    assert fixed["fix"]["files"] == ["src/other.py"] and fixed["fix"]["times"] == 1
    assert fixed["failing"] is None
    assert failing["fix"] is None and failing["failing"]["count"] == 1
    assert unknown == {"edits": [], "command": None}


def test_the_advice_state_survives_saving_and_equals_a_rebuild(tmp_path):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        seed(mem, repo)
        mem.sync()
        before = mem.state.advice.to_json()
        assert before["fixes"] and before["after"] and before["failing"]
        mem.save()
    with Memory.open() as mem:
        assert mem.state.advice.to_json() == before
        mem.rebuild()
        assert mem.state.advice.to_json() == before


def test_the_block_is_quoted_observation_bounded_and_silent_when_empty(tmp_path):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        seed(mem, repo)
        found = mem.advise(edit_event(repo, "src/core.py"))
        fix = mem.advise({"tool": "Bash:python", "action": "run", "files": ["run.py"],
                          "project": str(repo)})
    text = format_advice(found, 600)
    assert text.startswith("<brainbox-context>\nbrainbox observed in past sessions")
    assert "- edited together with src/core.py: src/helpers.py" in text
    assert "the next command failed with" in text and "(2 of 3 runs)" in text
    assert "passed after edits of src/other.py" in format_advice(fix, 600)
    assert len(format_advice(found, 150)) <= 150
    assert format_advice({"edits": [], "command": None}, 600) == ""
    assert format_advice(found, 10) == ""


# --------------------------------------------------------------------------- the hook


hook = hook_process


def pre_edit(repo, path, sid="live"):
    return {"session_id": sid, "cwd": str(repo), "hook_event_name": "PreToolUse",
            "tool_name": "Edit", "tool_use_id": "t1",
            "tool_input": {"file_path": str(repo / path), "old_string": "x", "new_string": "y"}}


@pytest.fixture
def daemon_env(brainbox_home):
    with running_daemon(brainbox_home):
        yield dict(os.environ, BRAINBOX_HOOK_BUDGET_TOOL="30")  # behaviour, not speed


def test_the_pre_tool_hook_prints_advice_and_records_nothing(tmp_path, daemon_env):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        seed(mem, repo)
        events = mem.count_events()
    out = hook("PreToolUse", pre_edit(repo, "src/core.py"), daemon_env)
    data = json.loads(out)
    spec = data["hookSpecificOutput"]
    assert spec["hookEventName"] == "PreToolUse"
    assert "permissionDecision" not in spec and "decision" not in data
    assert "edited together with src/core.py: src/helpers.py" in spec["additionalContext"]
    assert len(spec["additionalContext"]) <= 600
    assert hook("PreToolUse", pre_edit(repo, "src/unknown.py"), daemon_env) == ""  # silent
    bash = {"session_id": "live", "cwd": str(repo), "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "python run.py"}}
    assert "passed after edits of src/other.py" in json.loads(hook(
        "PreToolUse", bash, daemon_env))["hookSpecificOutput"]["additionalContext"]
    with Memory.open() as mem:
        assert mem.count_events() == events  # the PostToolUse records the call, once


def test_without_a_daemon_the_pre_tool_hook_is_silent_and_exits_0(tmp_path, brainbox_home):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        seed(mem, repo)
    env = dict(os.environ, BRAINBOX_DAEMON="off")
    assert hook("PreToolUse", pre_edit(repo, "src/core.py"), env) == ""


def test_the_session_trail_ranks_the_next_edit_but_alone_says_nothing(tmp_path):
    """`advice.next_edits`: within a session, the file touched last ranks first among the
    supported files (the trail plus the association weight), and a session whose trail
    holds only files no earlier session linked to X gets no advice at all."""
    from brainbox import advice

    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        seed(mem, repo)
        # a new session reads other.py and test_core.py, then edits core.py
        tool(mem, repo, "now", "Read", 1_800_000_000.0, files=["src/other.py"])
        tool(mem, repo, "now", "Read", 1_800_000_001.0, files=["tests/test_core.py"])
        mem.sync()
        st = mem.state
        assert st.advice.session_trail("now", str(repo)) == ["tests/test_core.py",
                                                              "src/other.py"]
        ranked = advice.next_edits(st, str(repo), "src/core.py", "now", k=5, floor=0.0)
        plain = advice.next_edits(st, str(repo), "src/core.py", None, k=5, floor=0.0)
        found = mem.advise({**edit_event(repo, "src/core.py"), "session": "now"})
        quiet = mem.advise({**edit_event(repo, "docs/new.md"), "session": "now"})
        trail_only = advice.next_edits(st, str(repo), "docs/new.md", "now", k=5)
    by_path = {p: s for p, s, _ in ranked}
    plain_by = {p: s for p, s, _ in plain}
    # the trail adds 1 to the file touched last and 0.9 to the one before it
    assert by_path["tests/test_core.py"] == pytest.approx(plain_by["tests/test_core.py"] + 1.0)
    assert by_path["src/other.py"] == pytest.approx(plain_by.get("src/other.py", 0.0) + 0.9)
    assert ranked[0][0] == "tests/test_core.py"
    assert "src/core.py" not in by_path  # never the file being edited
    assert found["edits"][0]["co_edits"][0]["path"] == "tests/test_core.py"
    # a file no earlier session linked to anything: the trail alone, no advice
    assert trail_only == [] and quiet["edits"] == []


def test_the_trail_is_bounded_and_saved_with_the_state(tmp_path):
    from brainbox.advice import MAX_TRAIL, Advice

    a = Advice()
    for i in range(MAX_TRAIL + 10):
        a.observe("s", "/p", "Read", "read", [f"f{i}.py"], None, None)
    a.observe("s", "/p", "Read", "read", ["f20.py"], None, None)  # touched again: newest
    trail = a.session_trail("s", "/p")
    assert len(trail) == MAX_TRAIL and trail[0] == "f20.py" and trail.count("f20.py") == 1
    assert a.session_trail("s", "/other") == [] and a.session_trail(None, "/p") == []
    back = Advice.from_json(json.loads(json.dumps(a.to_json())))
    assert back.session_trail("s", "/p") == trail
    old = a.to_json()
    del old["trail"]  # a state saved before the trail existed still loads
    assert Advice.from_json(old).session_trail("s", "/p") == []
