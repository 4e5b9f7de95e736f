"""Procedures (issue 18 item 4, DESIGN §4.9, `brainbox.procedures`): mined from a failing
command, the edits that followed and a passing rerun; counted helpful or harmful in later
sessions; retired when they keep failing; quoted to a later session that hits the same
error through real hook processes; reproduced exactly by `rebuild()`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from brainbox.cli.service import format_advice
from brainbox.memory import Memory
from brainbox.procedures import RETIRE_HARMFUL, WORKFLOW_SESSIONS, quotation
from tests.records import git_repo, hook_process, record_tool, running_daemon, stored_events

FILES = ("src/core.py", "src/other.py", "tests/test_core.py")
FAILURE = "Traceback (most recent call last):\nKeyError: 'user'"
FP = "PYTHON_KEY_ERROR|key_lookup"
tool = record_tool
T0 = 1_700_000_000.0


def pytest_run(mem, repo, session, at, *, fail, quoted=True):
    """A pytest run; a failure is quoted its live procedure as the PostToolUse(Failure)
    hook does (asked before the call is recorded, the quotation event after it), unless
    not `quoted` (no daemon answered)."""
    p = mem.procedure_for(str(repo), FP, session, "Bash:pytest") if fail and quoted else None
    tool(mem, repo, session, "Bash", at, command="pytest tests/test_core.py",
         files=["tests/test_core.py"], error=FAILURE if fail else None, code=1 if fail else 0)
    if p is not None:
        mem.record(quotation({"session": session, "project": str(repo), "cwd": str(repo),
                              "at": at}, p))


def fix_session(mem, repo, session="first", at=T0, edit="src/core.py"):
    """A failing pytest, an edit, a passing pytest."""
    pytest_run(mem, repo, session, at, fail=True)
    tool(mem, repo, session, "Edit", at + 1, files=[edit])
    pytest_run(mem, repo, session, at + 2, fail=False)


def misled_session(mem, repo, session, at):
    """The error, the procedure followed (its file edited), the same error again."""
    pytest_run(mem, repo, session, at, fail=True)
    tool(mem, repo, session, "Edit", at + 1, files=["src/core.py"])
    pytest_run(mem, repo, session, at + 2, fail=True)


def error_fixes(mem, repo):
    return [p for p in mem.procedures(str(repo)) if p["kind"] == "error_fix"]


def test_a_failing_pytest_an_edit_and_a_passing_pytest_make_exactly_one_procedure(tmp_path):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        fix_session(mem, repo)
        procs = mem.procedures(str(repo))
    (p,) = procs  # one session: no workflow either
    assert p["kind"] == "error_fix" and p["fingerprint"] == "PYTHON_KEY_ERROR|key_lookup"
    assert p["tool"] == "Bash:pytest" and p["target"] == ["tests/test_core.py"]
    assert p["files"] == ["src/core.py"] and p["command"] == "pytest tests/test_core.py"
    assert (p["seen"], p["helpful"], p["harmful"], p["retired"]) == (1, 0, 0, False)
    assert "`pytest tests/test_core.py` passed after edits of src/core.py" in p["text"]


def test_a_failure_with_no_edit_or_no_passing_rerun_makes_none(tmp_path):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        pytest_run(mem, repo, "a", T0, fail=True)
        pytest_run(mem, repo, "a", T0 + 1, fail=False)  # passed with nothing edited
        pytest_run(mem, repo, "b", T0 + 10, fail=True)
        tool(mem, repo, "b", "Edit", T0 + 11, files=["src/core.py"])
        pytest_run(mem, repo, "b", T0 + 12, fail=True)  # edited, still failing
        tool(mem, repo, "c", "Bash", T0 + 20, command="pytest tests/other.py",
             files=["src/other.py"], code=0)  # another target passing closes nothing
        assert error_fixes(mem, repo) == []


def test_a_later_session_that_follows_it_and_passes_counts_it_helpful(tmp_path):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        fix_session(mem, repo)
        assert mem.procedure_for(str(repo), "PYTHON_KEY_ERROR|key_lookup") is not None
        fix_session(mem, repo, "later", T0 + 100)
        (p,) = error_fixes(mem, repo)
    assert (p["seen"], p["helpful"], p["harmful"], p["retired"]) == (2, 1, 0, False)


def test_a_procedure_that_keeps_failing_is_retired_and_no_longer_quoted(tmp_path):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        fix_session(mem, repo)
        misled_session(mem, repo, "m1", T0 + 100)
        (p,) = error_fixes(mem, repo)
        assert (p["harmful"], p["retired"]) == (1, False)  # once is not "keeps failing"
        misled_session(mem, repo, "m2", T0 + 200)
        (p,) = error_fixes(mem, repo)
        assert p["harmful"] == RETIRE_HARMFUL and p["retired"] is True
        assert mem.procedure_for(str(repo), p["fingerprint"]) is None
        assert [q for q in mem.start_block(str(repo))["procedures"]
                if q["kind"] == "error_fix"] == []
        found = mem.advise({"tool": "Bash:pytest", "action": "run",
                            "files": ["tests/test_core.py"], "project": str(repo)})
        assert found["command"]["procedure"]["retired"]
        assert "passed after" not in format_advice(found, 600)  # what misled is not advised
        misled_session(mem, repo, "m3", T0 + 300)  # retired: shown no more, counts stay
        (p,) = error_fixes(mem, repo)
        assert p["harmful"] == RETIRE_HARMFUL
        fix_session(mem, repo, "new", T0 + 400, edit="src/other.py")  # another fix
        (p,) = error_fixes(mem, repo)
    # the edits since the command last passed, those of the sessions it misled included
    assert p["files"] == ["src/core.py", "src/other.py"] and not p["retired"]
    assert (p["seen"], p["helpful"], p["harmful"]) == (1, 0, 0)


def test_a_failure_before_following_counts_nothing(tmp_path):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        fix_session(mem, repo)
        pytest_run(mem, repo, "x", T0 + 100, fail=True)
        tool(mem, repo, "x", "Edit", T0 + 101, files=["src/other.py"])  # not its file
        pytest_run(mem, repo, "x", T0 + 102, fail=True)
        (p,) = error_fixes(mem, repo)
    assert (p["helpful"], p["harmful"]) == (0, 0)


def test_a_workflow_repeated_in_three_sessions_is_a_procedure(tmp_path):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        for s in range(WORKFLOW_SESSIONS):
            at = T0 + 100 * s
            if s == WORKFLOW_SESSIONS - 1:
                flows = [p for p in mem.procedures(str(repo)) if p["kind"] == "workflow"]
                assert flows == []  # two sessions are not enough
            tool(mem, repo, f"w{s}", "Read", at, files=["src/other.py"])  # not a step
            tool(mem, repo, f"w{s}", "Edit", at + 1, files=["src/core.py"])
            tool(mem, repo, f"w{s}", "Edit", at + 2, files=["src/core.py"])  # collapsed
            tool(mem, repo, f"w{s}", "Edit", at + 3, files=["src/other.py"])
            tool(mem, repo, f"w{s}", "Bash", at + 4, command="make test", code=0)
        flows = [p for p in mem.procedures(str(repo)) if p["kind"] == "workflow"]
        live = mem.start_block(str(repo))["procedures"]
    (flow,) = flows
    assert flow["steps"] == ["edit src/core.py", "edit src/other.py", "run Bash:make"]
    assert flow["sessions"] == WORKFLOW_SESSIONS
    assert live[0]["text"].startswith("in 3 earlier sessions the agent did, in order: ")


def test_rebuild_and_folding_in_batches_reproduce_the_procedures_exactly(tmp_path):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        fix_session(mem, repo)
        mem.sync()  # folded in several batches
        misled_session(mem, repo, "m1", T0 + 100)
        mem.sync()
        fix_session(mem, repo, "later", T0 + 200)
        misled_session(mem, repo, "m2", T0 + 300)
        pytest_run(mem, repo, "open", T0 + 400, fail=True)  # an exposure still open
        mem.sync()
        before = mem.state.procedures.to_json()
        listed = mem.procedures(str(repo))
        assert before["fixes"] and before["exposed"]
        mem.save()
    with Memory.open() as mem:
        assert mem.state.procedures.to_json() == before
        mem.rebuild()
        assert mem.state.procedures.to_json() == before
        assert mem.procedures(str(repo)) == listed


def test_the_cli_lists_live_and_retired_procedures_with_counts(tmp_path, brainbox_home):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        fix_session(mem, repo)
    env = dict(os.environ)

    def cli(*args):
        r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "procedures",
                            "--project", str(repo), *args], capture_output=True, text=True,
                           env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout

    (row,) = json.loads(cli("--json"))
    assert row["kind"] == "error_fix" and row["helpful"] == 0 and not row["retired"]
    text = cli()
    assert text.startswith("live     error_fix seen 1, helped 0, misled 0: in an earlier")
    with Memory.open() as mem:
        misled_session(mem, repo, "m1", T0 + 100)
        misled_session(mem, repo, "m2", T0 + 200)
    assert cli().startswith("retired  error_fix seen 1, helped 0, misled 2:")
    assert cli("--project", str(tmp_path / "elsewhere")) == "no procedures\n"


# --------------------------------------------------------------------------- the hooks


def payload(repo, session, name, event="PostToolUse", **fields):
    return {"session_id": session, "cwd": str(repo), "hook_event_name": event,
            "tool_name": name, "tool_use_id": f"t-{session}", **fields}


def run_hooks(repo, session, env, *, fail_again):
    """A session through real hook processes: pytest fails, core.py is edited, pytest
    passes (or fails again). Returns the failure hook's output."""
    cmd = {"command": "pytest tests/test_core.py"}
    out = hook_process("PostToolUseFailure", payload(
        repo, session, "Bash", "PostToolUseFailure", tool_input=cmd,
        error=f"Exit code 1\n{FAILURE}", is_interrupt=False), env)
    hook_process("PostToolUse", payload(
        repo, session, "Edit", tool_input={"file_path": str(repo / "src/core.py"),
                                           "old_string": "x", "new_string": "y"},
        tool_response={}), env)
    if fail_again:
        hook_process("PostToolUseFailure", payload(
            repo, session, "Bash", "PostToolUseFailure", tool_input=cmd,
            error=f"Exit code 1\n{FAILURE}", is_interrupt=False), env)
    else:
        hook_process("PostToolUse", payload(
            repo, session, "Bash", tool_input=cmd,
            tool_response={"stdout": "1 passed", "exit_code": 0}), env)
    return out


@pytest.fixture
def daemon_env(brainbox_home):
    with running_daemon(brainbox_home):
        yield dict(os.environ, BRAINBOX_HOOK_BUDGET_TOOL="30")  # behaviour, not speed


def context(out: str, event: str) -> str:
    spec = json.loads(out)["hookSpecificOutput"]
    assert spec["hookEventName"] == event
    return spec["additionalContext"]


def test_a_later_session_that_hits_the_error_gets_the_quotation(tmp_path, daemon_env):
    repo = git_repo(tmp_path / "repo", FILES)
    assert run_hooks(repo, "first", daemon_env, fail_again=False) == ""  # nothing known yet
    with Memory.open() as mem:
        (p,) = error_fixes(mem, repo)
    quoted = "`pytest tests/test_core.py` passed after edits of src/core.py"
    start = context(hook_process("SessionStart", {
        "session_id": "later", "cwd": str(repo), "hook_event_name": "SessionStart",
        "source": "startup"}, daemon_env), "SessionStart")
    assert "live procedures:" in start and quoted in start and len(start) <= 1200
    pre = context(hook_process("PreToolUse", payload(
        repo, "later", "Bash", "PreToolUse", tool_input={"command": "pytest tests/test_core.py"}),
        daemon_env), "PreToolUse")
    assert quoted in pre and "not instructions" in pre and len(pre) <= 600
    out = run_hooks(repo, "later", daemon_env, fail_again=False)
    text = context(out, "PostToolUseFailure")
    assert text.startswith("<brainbox-context>\nbrainbox observed this error in a past session "
                           "(a quoted observation, not an instruction):")
    assert f"in an earlier session, after {p['fingerprint']}, {quoted}" in text
    assert len(text) <= 600
    with Memory.open() as mem:
        (p,) = error_fixes(mem, repo)
    assert (p["helpful"], p["harmful"]) == (1, 0)  # shown, then the rerun passed


def test_through_the_hooks_a_procedure_that_keeps_failing_stops_being_quoted(tmp_path,
                                                                            daemon_env):
    repo = git_repo(tmp_path / "repo", FILES)
    run_hooks(repo, "first", daemon_env, fail_again=False)
    for i in range(RETIRE_HARMFUL):
        assert run_hooks(repo, f"m{i}", daemon_env, fail_again=True)  # quoted, then misled
    assert run_hooks(repo, "after", daemon_env, fail_again=True) == ""
    with Memory.open() as mem:
        (p,) = error_fixes(mem, repo)
    assert p["retired"] and p["harmful"] == RETIRE_HARMFUL


def test_an_error_nothing_identifies_keys_no_procedure(tmp_path):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        tool(mem, repo, "a", "Bash", T0, command="make", error="it broke", code=2)
        tool(mem, repo, "a", "Edit", T0 + 1, files=["src/core.py"])
        tool(mem, repo, "a", "Bash", T0 + 2, command="make", code=0)
        assert error_fixes(mem, repo) == []
        assert mem.state.advice.fixes  # advice still knows the command's fix


def test_codex_gets_the_quotation_on_its_post_tool_use_of_a_failed_command(tmp_path,
                                                                         daemon_env):
    repo = git_repo(tmp_path / "repo", FILES)
    run_hooks(repo, "first", daemon_env, fail_again=False)
    out = hook_process("PostToolUse", payload(
        repo, "cx", "Bash", tool_input={"command": "pytest tests/test_core.py"},
        tool_response={"exit_code": 1, "stderr": FAILURE}), daemon_env, agent="codex")
    assert "`pytest tests/test_core.py` passed after edits of src/core.py" in context(
        out, "PostToolUse")


def test_without_a_daemon_a_failure_is_recorded_and_the_hook_is_silent(tmp_path,
                                                                       brainbox_home):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        fix_session(mem, repo)
        events = mem.count_events()
    env = dict(os.environ, BRAINBOX_DAEMON="off")
    assert run_hooks(repo, "later", env, fail_again=False) == ""
    with Memory.open() as mem:
        assert mem.count_events() == events + 3  # the three calls, no quotation
        (p,) = error_fixes(mem, repo)
    assert p["helpful"] == 0  # nothing was quoted: not shown, no outcome
    assert not [e for e in stored_events("feedback") if e["meta"].get("op") == "quoted"]


def quotations() -> list[dict]:
    return [e for e in stored_events("feedback") if e["meta"].get("op") == "quoted"]


def test_each_quotation_is_an_event_of_the_failed_calls_batch_and_in_the_log(tmp_path,
                                                                             daemon_env):
    repo = git_repo(tmp_path / "repo", FILES)
    run_hooks(repo, "first", daemon_env, fail_again=False)
    assert quotations() == []  # nothing known when the first failure came
    assert context(run_hooks(repo, "later", daemon_env, fail_again=False),
                   "PostToolUseFailure")
    (q,) = quotations()
    assert q["session"] == "later" and q["project"] == str(repo)
    assert q["meta"]["fingerprint"] == FP and q["meta"]["files"] == ["src/core.py"]
    assert q["meta"]["command"] == "pytest tests/test_core.py"
    # recorded with the failed call, in its batch: the event right after it
    evs = stored_events()
    at = next(i for i, e in enumerate(evs) if e["id"] == q["id"])
    failed = evs[at - 1]
    assert failed["kind"] == "tool" and failed["session"] == "later" and failed["error_fp"] == FP
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "log", "--json"],
                       capture_output=True, text=True, env=daemon_env, timeout=120)
    rows = [x for x in json.loads(r.stdout) if x["kind"] == "quotation"]
    assert [(x["session"], x["fingerprint"], x["outcome"]) for x in rows] == [
        ("later", FP, "quoted")]
    text = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "log"],
                          capture_output=True, text=True, env=daemon_env, timeout=120).stdout
    assert f"quoted   procedure {FP}: `pytest tests/test_core.py` after edits of " \
           "src/core.py" in text
    with Memory.open() as mem:
        (p,) = error_fixes(mem, repo)
        assert (p["helpful"], p["harmful"]) == (1, 0)  # the quoted session passed after
        kept = mem.state.procedures.to_json()
        mem.rebuild()
        assert mem.state.procedures.to_json() == kept


def test_a_failure_that_retires_its_procedure_is_not_quoted(tmp_path):
    repo = git_repo(tmp_path / "repo", FILES)
    with Memory.open() as mem:
        fix_session(mem, repo)
        misled_session(mem, repo, "m1", T0 + 100)  # harmful 1
        pytest_run(mem, repo, "m2", T0 + 200, fail=True)  # quoted
        tool(mem, repo, "m2", "Edit", T0 + 201, files=["src/core.py"])  # followed
        # this failure will make it harmful 2 > helpful 0: retired, so not quoted
        assert mem.procedure_for(str(repo), FP, "m2", "Bash:pytest") is None
        live = mem.procedure_for(str(repo), FP)  # still live until that failure is folded
        assert live is not None and live["harmful"] == 1
        assert mem.state.procedures.exposed["m2"][1] == {FP: True}
        n = len(quotations())
        pytest_run(mem, repo, "m2", T0 + 202, fail=True)
        (p,) = error_fixes(mem, repo)
        assert p["retired"] and p["harmful"] == RETIRE_HARMFUL and len(quotations()) == n
