"""Hook payloads to raw records: real Claude Code shapes and Codex shapes (totality:
tests/test_hookmap_totality.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from brainbox.cli import hookmap
from brainbox.cli.hookmap import CONTEXT_CLOSE, CONTEXT_OPEN, payload_to_records
from tests.records import check_record, fixture_payloads

FIXTURES = Path(__file__).parent / "fixtures" / "hooks"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TRANSCRIPTS = [
    *sorted((DATA / "transcripts" / "claude-code").rglob("*.jsonl")),
    *sorted((DATA / "trajectories" / "claude-code-swebench-lite" / "sessions").glob("*.jsonl")),
]


def post(tool_name: str, tool_input: dict, **extra) -> dict:
    """A PostToolUse payload of session `s` in `/r`."""
    return {"session_id": "s", "cwd": "/r", "hook_event_name": "PostToolUse",
            "tool_name": tool_name, "tool_input": tool_input, **extra}


def bash(command: str) -> dict:
    """A Bash PostToolUse payload without a cwd."""
    return {"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}}


def one(payload, agent="claude"):
    records = payload_to_records(agent, payload)
    assert len(records) == 1, records
    return records[0]


def pairs_from_transcript(path: Path):
    """(tool_use input block, tool_result block, toolUseResult, line) for each call."""
    uses = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        content = (row.get("message") or {}).get("content") if isinstance(row, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                uses[block.get("id")] = block
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in uses:
                yield uses[block["tool_use_id"]], block, row.get("toolUseResult"), row


def payload_from_pair(use, result, response, row) -> dict:
    payload = {
        "session_id": row.get("sessionId", "s"),
        "cwd": row.get("cwd", "/repo"),
        "transcript_path": "/t.jsonl",
        "permission_mode": "default",
        "tool_name": use["name"],
        "tool_input": use.get("input"),
        "tool_use_id": use.get("id"),
    }
    if result.get("is_error"):
        content = result.get("content")
        payload.update(
            hook_event_name="PostToolUseFailure",
            is_interrupt=False,
            error=content if isinstance(content, str) else str(response),
        )
    else:
        payload.update(hook_event_name="PostToolUse", tool_response=response)
    return payload


# ------------------------------------------------------------------ Claude Code, fixture


@pytest.mark.parametrize(
    "payload", fixture_payloads(), ids=lambda p: f"{p['hook_event_name']}-{p.get('tool_name', '')}"
)
def test_every_fixture_payload_maps_to_one_wellformed_record(payload):
    rec = one(payload)
    check_record(rec)
    assert rec["session"] == payload["session_id"]
    assert rec["cwd"] == payload["cwd"]


def by_tool(name, event="PostToolUse"):
    return next(
        p
        for p in fixture_payloads()
        if p.get("tool_name") == name and p["hook_event_name"] == event
    )


def test_read_records_the_file_as_read():
    p = by_tool("Read")
    rec = one(p)
    assert (rec["tool"], rec["action"], rec["files"]) == (
        "Read",
        "read",
        [p["tool_input"]["file_path"]],
    )
    assert rec["error"] is None and rec["kind"] == "tool"


@pytest.mark.parametrize("name", ["Edit", "Write"])
def test_edit_and_write_record_the_file_as_edited(name):
    p = by_tool(name)
    rec = one(p)
    assert rec["action"] == "edit" and rec["files"] == [p["tool_input"]["file_path"]]


def test_glob_records_pattern_as_args_and_capped_results_as_search():
    p = by_tool("Glob")
    rec = one(p)
    assert rec["action"] == "search" and rec["args"] == p["tool_input"]["pattern"]
    assert rec["files"] == p["tool_response"]["filenames"][: hookmap.MAX_SEARCH_FILES]
    many = dict(p, tool_response={"filenames": [f"/r/f{i}.py" for i in range(500)]})
    assert len(one(many)["files"]) == hookmap.MAX_SEARCH_FILES


def test_grep_records_its_path_and_pattern():
    p = by_tool("Grep")
    rec = one(p)
    assert rec["action"] == "search" and rec["args"] == p["tool_input"]["pattern"]
    assert rec["files"][0] == p["tool_input"]["path"]


def test_grep_over_the_working_directory_names_no_file():
    rec = one(post("Grep", {"pattern": "x", "path": "."}, tool_response={"filenames": []}))
    assert rec["files"] == [] and rec["args"] == "x"


def test_successful_bash_keeps_its_command_and_no_error():
    p = by_tool("Bash")
    rec = one(p)
    assert rec["command"] == p["tool_input"]["command"]
    assert rec["tool"].startswith("Bash") and rec["error"] is None and rec["exit_code"] is None
    assert rec["action"] in {"run", "read", "edit"}


def test_failed_bash_carries_error_text_and_exit_code():
    p = next(
        p
        for p in fixture_payloads()
        if p["hook_event_name"] == "PostToolUseFailure"
        and p["tool_name"] == "Bash"
        and p["error"].startswith("Exit code")
    )
    rec = one(p)
    assert rec["exit_code"] == 1 and "permission denied" in rec["error"]
    assert rec["command"] == p["tool_input"]["command"]


def test_failed_edit_keeps_its_file_and_drops_claude_error_wrapper():
    p = by_tool("Edit", "PostToolUseFailure")
    rec = one(p)
    assert rec["files"] == [p["tool_input"]["file_path"]] and rec["action"] == "edit"
    assert rec["error"].startswith("String to replace not found")
    assert "tool_use_error" not in rec["error"]


def test_interrupted_failure_says_so():
    p = dict(by_tool("Bash", "PostToolUseFailure"), is_interrupt=True, error="")
    assert one(p)["error"] == "interrupted"


def test_other_tools_keep_their_names_with_action_other():
    for name in ("Task", "WebFetch", "Skill", "TaskOutput"):
        rec = one(by_tool(name))
        assert rec["tool"] == name and rec["action"] == "other"
    assert one(by_tool("WebFetch"))["args"].startswith("https://")


def test_todowrite_is_plan_and_mcp_tools_keep_name_and_path():
    rec = one(post("TodoWrite", {"todos": []}, tool_response={}))
    assert rec["action"] == "plan"
    rec = one(post("mcp__fs__read_file", {"path": "src/a.py"},
                   tool_response=[{"type": "text", "text": "..."}]))
    assert (rec["tool"], rec["files"], rec["action"]) == (
        "mcp__fs__read_file",
        ["src/a.py"],
        "other",
    )


def test_notebook_edit_uses_notebook_path():
    rec = one(post("NotebookEdit", {"notebook_path": "/r/a.ipynb", "new_source": "x"}))
    assert rec["files"] == ["/r/a.ipynb"] and rec["action"] == "edit"


def test_error_flags_in_a_tool_response_are_errors():
    base = post("BashOutput", {"bash_id": "1"})
    rec = one(dict(base, tool_response={"exitCode": 2, "stdout": "", "stderr": "bad thing"}))
    assert rec["exit_code"] == 2 and rec["error"] == "bad thing"
    rec = one(dict(base, tool_response={"is_error": True, "content": "nope"}))
    assert rec["error"] == "nope"
    rec = one(dict(base, tool_response={"exit_code": 0, "stderr": "just a warning"}))
    assert rec["error"] is None and rec["exit_code"] == 0
    rec = one(dict(base, tool_response={"interrupted": True, "stderr": ""}))
    assert rec["error"] == "interrupted"


def test_long_stderr_keeps_first_line_and_tail():
    stderr = "Traceback (most recent call last):\n" + "x\n" * 5000 + "ValueError: the end"
    rec = one(post("Bash", {"command": "python t.py"},
                   tool_response={"returncode": 1, "stderr": stderr}))
    assert len(rec["error"]) <= hookmap.MAX_ERROR
    assert rec["error"].startswith("Traceback") and rec["error"].endswith("ValueError: the end")


# ------------------------------------------------------------------ Bash and brainbox.shell


def test_bash_uses_brainbox_shell_for_tool_and_files(monkeypatch):
    fake = types.ModuleType("brainbox.shell")
    fake.command_files = lambda cmd, cwd=None: [("src/a.py", "read"), ("out.txt", "edit")]
    fake.command_tool = lambda cmd: "Bash:python"
    monkeypatch.setitem(sys.modules, "brainbox.shell", fake)
    rec = one(post("Bash", {"command": "python src/a.py > out.txt"},
                   tool_response={"stdout": "", "stderr": "", "interrupted": False}))
    assert rec["tool"] == "Bash:python" and rec["files"] == ["src/a.py", "out.txt"]
    assert rec["action"] == "edit" and rec["meta"]["file_actions"] == ["read", "edit"]

    fake.command_files = lambda cmd, cwd=None: [("m.py", "read"), ("m.py", "edit")]
    rec = one(bash("cat m.py && sed -i s/a/b/ m.py"))
    assert (rec["files"], rec["action"]) == (["m.py"], "edit")

    fake.command_files = lambda cmd, cwd=None: [("src/a.py", "read")]
    assert one(bash("cat src/a.py"))["action"] == "read"
    fake.command_files = lambda cmd, cwd=None: []
    assert one(bash("ls"))["action"] == "run"


def test_shell_facts_map_to_stored_file_actions():
    """brainbox.shell's facts as the hook stores them: a create is an edit (as the Write
    tool is), a run stays a run (not a read), a test label is no file."""
    def sh(command):
        return one(post("Bash", {"command": command}))

    rec = sh("cat <<'EOF' > r.py\nprint(1)\nEOF\npython r.py && cat src/a.py")
    assert rec["files"] == ["/r/r.py", "/r/src/a.py"] and rec["action"] == "edit"
    assert rec["meta"]["file_actions"] == ["edit", "read"]  # r.py: created, then run
    rec = sh("python tests/runtests.py admin_views.tests.Foo")
    assert (rec["files"], rec["action"]) == (["/r/tests/runtests.py"], "run")
    assert "file_actions" not in rec["meta"]
    rec = sh("pytest tests/test_a.py && cat tests/conftest.py")
    assert rec["action"] == "read" and rec["meta"]["file_actions"] == ["run", "read"]
    rec = sh("touch new.py")
    assert (rec["files"], rec["action"]) == (["/r/new.py"], "edit")


def test_bash_without_brainbox_shell_falls_back_to_plain_bash(monkeypatch):
    monkeypatch.setitem(sys.modules, "brainbox.shell", None)  # import raises ImportError
    rec = one(post("Bash", {"command": "pytest -q"}))
    assert (rec["tool"], rec["files"], rec["action"]) == ("Bash", [], "run")


def test_a_crashing_brainbox_shell_does_not_crash_the_hook(monkeypatch):
    fake = types.ModuleType("brainbox.shell")

    def boom(*args, **kwargs):
        raise RuntimeError("bug")

    fake.command_files = fake.command_tool = boom
    monkeypatch.setitem(sys.modules, "brainbox.shell", fake)
    rec = one(bash("make"))
    assert rec["tool"] == "Bash" and rec["files"] == []


def test_huge_command_is_truncated_and_scanned_boundedly(monkeypatch):
    seen = []
    fake = types.ModuleType("brainbox.shell")
    fake.command_files = lambda cmd, cwd=None: seen.append(len(cmd)) or []
    fake.command_tool = lambda cmd: "Bash:cat"
    monkeypatch.setitem(sys.modules, "brainbox.shell", fake)
    command = "cat > big.txt <<'EOF'\n" + ("y" * 100 + "\n") * 20000 + "EOF"
    rec = one(
        {
            "session_id": "s",
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command},
        }
    )
    assert len(rec["command"]) == hookmap.MAX_COMMAND
    assert seen and seen[0] <= hookmap.MAX_SHELL_SCAN


# ------------------------------------------------------------------ prompts and sessions


def test_prompt_is_recorded_without_our_injected_context():
    p = next(p for p in fixture_payloads() if p["hook_event_name"] == "UserPromptSubmit")
    rec = one(p)
    assert rec["kind"] == "prompt" and rec["prompt"] == p["prompt"] and rec["tool"] is None
    wrapped = (
        f"{CONTEXT_OPEN}\nlib/a.ex — edited with b.ex\n{CONTEXT_CLOSE}\n{p['prompt']}"
        f"\n{CONTEXT_OPEN}unclosed tail"
    )
    assert one(dict(p, prompt=wrapped))["prompt"] == p["prompt"]


def test_strip_context_handles_stray_markers():
    assert hookmap.strip_context(f"a {CONTEXT_CLOSE} b") == "a  b"
    assert hookmap.strip_context(f"{CONTEXT_OPEN}x{CONTEXT_CLOSE}") == ""


def test_huge_prompt_is_truncated():
    rec = one({"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": "p" * 10**6})
    assert len(rec["prompt"]) == hookmap.MAX_PROMPT


def test_session_events():
    base = {"session_id": "s", "cwd": "/r", "transcript_path": "/t/s.jsonl"}
    rec = one(dict(base, hook_event_name="SessionStart", source="resume"))
    assert (rec["kind"], rec["source"]) == ("session_start", "resume")
    rec = one(dict(base, hook_event_name="SessionEnd", reason="prompt_input_exit"))
    assert (rec["kind"], rec["reason"]) == ("session_end", "prompt_input_exit")
    rec = one(dict(base, hook_event_name="Stop", stop_hook_active=False))
    assert (rec["kind"], rec["reason"]) == ("session_end", "stop")
    for name in ("PreToolUse", "Notification", "PreCompact", "SubagentStop", "Bogus"):
        assert payload_to_records("claude", dict(base, hook_event_name=name)) == []


def test_event_argument_is_used_when_the_payload_lacks_a_name():
    recs = payload_to_records(
        "claude", {"session_id": "s", "prompt": "hi"}, event="UserPromptSubmit"
    )
    assert recs[0]["kind"] == "prompt"


def test_session_falls_back_to_the_transcript_name():
    rec = one({"transcript_path": "/x/abc-123.jsonl", "hook_event_name": "SessionStart"})
    assert rec["session"] == "abc-123"


# ------------------------------------------------------------------ Codex


def codex(**kw):
    base = {
        "session_id": "019a-thread",
        "turn_id": "t1",
        "cwd": "/repo",
        "transcript_path": None,
        "model": "gpt-5-codex",
        "permission_mode": "default",
    }
    return dict(base, **kw)


def test_codex_bash_with_text_output_and_exit_code():
    rec = one(
        codex(
            hook_event_name="PostToolUse",
            tool_name="Bash",
            tool_use_id="c1",
            tool_input={"command": "cargo test"},
            tool_response="Exit code: 101\nWall time: 2.1 seconds\nOutput:\nfailed",
        ),
        "codex",
    )
    assert rec["exit_code"] == 101 and "failed" in rec["error"]
    assert rec["command"] == "cargo test" and rec["meta"]["turn"] == "t1"
    ok = one(
        codex(
            hook_event_name="PostToolUse",
            tool_name="Bash",
            tool_input={"command": "ls"},
            tool_response="Exit code: 0\nOutput:\na",
        ),
        "codex",
    )
    assert ok["exit_code"] == 0 and ok["error"] is None


def test_codex_argv_commands_are_joined():
    rec = one(
        codex(
            hook_event_name="PostToolUse",
            tool_name="Bash",
            tool_input={"command": ["bash", "-lc", "pytest -x tests"]},
        ),
        "codex",
    )
    assert rec["command"] == "pytest -x tests"


def test_codex_apply_patch_names_every_file_it_touches():
    patch = (
        "*** Begin Patch\n*** Update File: src/a.py\n*** Move to: src/b.py\n@@\n-x\n+y\n"
        "*** Add File: docs/new.md\n+hi\n*** Delete File: old.txt\n*** End Patch\n"
    )
    rec = one(
        codex(
            hook_event_name="PostToolUse",
            tool_name="apply_patch",
            tool_input={"command": patch},
            tool_response="Success.",
        ),
        "codex",
    )
    assert rec["files"] == ["src/a.py", "src/b.py", "docs/new.md", "old.txt"]
    assert rec["action"] == "edit" and rec["tool"] == "apply_patch"


def test_codex_prompt_start_and_stop():
    assert (
        one(codex(hook_event_name="UserPromptSubmit", prompt="fix it"), "codex")["prompt"]
        == "fix it"
    )
    assert (
        one(codex(hook_event_name="SessionStart", source="startup"), "codex")["kind"]
        == "session_start"
    )
    rec = one(
        codex(hook_event_name="Stop", stop_hook_active=False, last_assistant_message="done"),
        "codex",
    )
    assert (rec["kind"], rec["reason"]) == ("session_end", "stop")


def test_codex_legacy_notify_payload_becomes_a_prompt_record():
    rec = one(
        {
            "type": "agent-turn-complete",
            "thread-id": "th",
            "turn-id": "12",
            "cwd": "/repo",
            "input-messages": ["first", f"Rename {CONTEXT_OPEN}x"],
            "last-assistant-message": "done",
        },
        "codex",
    )
    assert (rec["session"], rec["kind"], rec["prompt"]) == ("th", "prompt", "Rename")
    assert payload_to_records("codex", {"type": "agent-turn-complete"}) == []


# ------------------------------------------------------------------ real transcripts


@pytest.mark.skipif(not TRANSCRIPTS, reason="shared/data transcripts are not present")
def test_every_tool_call_in_real_transcripts_maps_cleanly():
    counts: dict[str, int] = {}
    for path in TRANSCRIPTS:
        for use, result, response, row in pairs_from_transcript(path):
            payload = payload_from_pair(use, result, response, row)
            rec = one(payload)
            check_record(rec)
            name = use["name"]
            counts[name] = counts.get(name, 0) + 1
            inp = use.get("input") or {}
            if result.get("is_error"):
                assert rec["error"], payload
            if name in ("Read", "Edit", "Write", "MultiEdit") and inp.get("file_path"):
                assert rec["files"][:1] == [inp["file_path"]]
                assert rec["action"] == ("read" if name == "Read" else "edit")
            elif name == "Bash":
                assert rec["tool"].startswith("Bash")
                assert rec["command"] == inp["command"][: hookmap.MAX_COMMAND]
            elif name in ("Grep", "Glob"):
                assert rec["action"] == "search" and rec["args"] == inp.get("pattern")
            elif name == "TodoWrite":
                assert rec["action"] == "plan"
    assert counts.get("Bash", 0) > 100 and counts.get("Read", 0) > 100


@pytest.mark.skipif(not TRANSCRIPTS, reason="shared/data transcripts are not present")
def test_real_user_prompts_map_to_prompt_records():
    n = 0
    for path in TRANSCRIPTS[:20]:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            row = json.loads(line)
            content = (row.get("message") or {}).get("content")
            if row.get("type") == "user" and isinstance(content, str):
                rec = one(
                    {
                        "session_id": row["sessionId"],
                        "cwd": row.get("cwd", ""),
                        "hook_event_name": "UserPromptSubmit",
                        "prompt": content,
                    }
                )
                check_record(rec)
                assert rec["prompt"] == content.strip()[: hookmap.MAX_PROMPT]
                n += 1
    assert n > 0


def test_the_hook_module_imports_only_the_standard_library():
    code = (
        "import sys, brainbox.cli.hookmap; "
        "bad = [m for m in ('numpy', 'numba', 'scipy', 'click', 'sqlite3') "
        "if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_fixture_records_are_accepted_by_the_engine():
    events = pytest.importorskip("brainbox.events")
    for payload in fixture_payloads():
        rec = one(payload)
        event = events.normalize(rec)
        assert event["kind"] == rec["kind"] and event["session"] == rec["session"]
        if rec["kind"] == "tool":
            assert event["action"] == rec["action"]


# --------------------------------------------------------------------------- issue 13


@pytest.mark.parametrize("code", [1 << 63, 1 << 64, 10**30, -(1 << 63) - 1, -(10**30)])
def test_an_exit_code_outside_int64_is_clamped(code):
    """A tool_response exit code SQLite cannot store (>= 2^63) used to reach append_events
    and raise OverflowError there, blocking the spool (reliability report D6)."""
    rec = one({"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Bash",
               "tool_input": {"command": "make"}, "tool_response": {"exit_code": code}})
    assert -(1 << 63) <= rec["exit_code"] <= (1 << 63) - 1
    assert (rec["exit_code"] > 0) == (code > 0) and rec["error"]


def test_the_argv_event_decides_over_the_payloads_name():
    """A PostToolUse hook whose payload says SessionStart maps as a tool call (D13)."""
    p = {"session_id": "s", "hook_event_name": "SessionStart", "source": "startup"}
    assert payload_to_records("claude", p, "PostToolUse") == []
    p = dict(p, tool_name="Read", tool_input={"file_path": "/r/a.py"})
    [rec] = payload_to_records("claude", p, "PostToolUse")
    assert rec["kind"] == "tool" and rec["meta"]["event"] == "PostToolUse"
    [rec] = payload_to_records("claude", {"session_id": "s", "hook_event_name": "Stop"},
                               "SessionStart")
    assert rec["kind"] == "session_start"
    [rec] = payload_to_records("claude", {"session_id": "s", "hook_event_name": "Stop"})
    assert rec["kind"] == "session_end"  # no argv event: the payload's name
