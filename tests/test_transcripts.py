"""`brainbox import claude|codex`: real transcripts, hook-equal normalisation, cursors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from brainbox import store
from brainbox.cli import transcripts
from brainbox.cli.hookmap import CONTEXT_CLOSE, CONTEXT_OPEN
from brainbox.events import parse_time
from tests.records import stored_events

SPOTTER = Path(__file__).resolve().parents[2] / "shared" / "data" / "transcripts" / \
    "claude-code" / "spotter"
MAIN = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"


def rewrite(src: Path, dst: Path, root: Path) -> Path:
    """Copy a transcript with `/home/USER` moved under `root` (so its files can exist)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    text = src.read_text(encoding="utf-8")
    dst.write_text(text.replace("/home/USER", str(root / "home" / "USER")), encoding="utf-8")
    os.utime(dst, (time.time() - 3600, time.time() - 3600))  # not a live session
    return dst


@pytest.fixture
def spotter(tmp_path):
    if not SPOTTER.is_dir():
        pytest.skip("../shared/data/transcripts is absent")
    out = tmp_path / "projects" / "-home-USER-projects-spotter"
    rewrite(SPOTTER / f"{MAIN}.jsonl", out / f"{MAIN}.jsonl", tmp_path)
    for sub in sorted((SPOTTER / MAIN / "subagents").glob("*.jsonl")):
        rewrite(sub, out / MAIN / "subagents" / sub.name, tmp_path)
    return tmp_path / "projects"


def transcript_calls(path: Path):
    """Independent count of the transcript's answered tool calls and its prompts."""
    uses, answered, first_ts = {}, 0, None
    for line in path.read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        content = (d.get("message") or {}).get("content")
        for c in content if isinstance(content, list) else ():
            if isinstance(c, dict) and c.get("type") == "tool_use":
                uses[c["id"]] = c["name"]
            elif isinstance(c, dict) and c.get("type") == "tool_result" and c.get(
                    "tool_use_id") in uses:
                answered += 1
                first_ts = first_ts or d["timestamp"]
    return uses, answered, first_ts


def test_import_claude_follows_the_transcript(spotter):
    stats = transcripts.import_sessions("claude", spotter)
    uses, answered, first_ts = transcript_calls(spotter / "-home-USER-projects-spotter" /
                                                f"{MAIN}.jsonl")
    main = [e for e in stored_events("tool") if e["session"] == MAIN]
    assert len(main) == answered == 242
    assert sorted(e["tool"].split(":")[0] for e in main) == sorted(uses.values())
    assert main[0]["at"] == parse_time(first_ts)  # the transcript's time, not now
    assert main[0]["project"].endswith("/home/USER/projects/spotter-worktrees/spotter-4te")
    assert [e["prompt"][:25] for e in stored_events("prompt") if e["session"] == MAIN] == [
        "Work on bead spotter-4te.", "continue implementation"]
    edits = [e for e in main if e["tool"] == "Edit"]
    assert edits and all(len(e["files"]) == 1 and not e["files"][0].startswith("/")
                         for e in edits)
    assert sum(1 for e in main if e["error"]) == 12
    sub = {e["session"] for e in stored_events("tool")} - {MAIN}
    assert sub == {f"{MAIN}/aac57f5"}  # the subagent's calls: a session of its own
    assert stats["files"] == 3 and stats["held_back"] == 0


def test_a_second_import_adds_nothing_and_new_lines_are_picked_up(spotter):
    first = transcripts.import_sessions("claude", spotter)
    n = len(stored_events())
    again = transcripts.import_sessions("claude", spotter)
    assert again["events"] == 0 and again["files_read"] == 0 and len(stored_events()) == n
    # the session goes on: one more prompt and one more (answered) call
    path = spotter / "-home-USER-projects-spotter" / f"{MAIN}.jsonl"
    last = json.loads(path.read_text().splitlines()[-1])
    base = {"sessionId": MAIN, "cwd": last["cwd"], "isSidechain": False}
    more = [
        dict(base, type="user", timestamp="2026-02-13T10:00:00Z",
             message={"role": "user", "content": f"{CONTEXT_OPEN}\n- x — y\n"
                                                 f"{CONTEXT_CLOSE}\nnow the docs"}),
        dict(base, type="assistant", timestamp="2026-02-13T10:00:01Z",
             message={"content": [{"type": "tool_use", "id": "toolu_new", "name": "Read",
                                   "input": {"file_path": f"{last['cwd']}/README.md"}}]}),
    ]
    with open(path, "a") as fh:
        fh.writelines(json.dumps(d) + "\n" for d in more)
    # the call has no result yet and the file is live: it waits for its result
    held = transcripts.import_sessions("claude", spotter)
    assert held["held_back"] == 1 and held["prompts"] == 1 and held["tools"] == 0
    with open(path, "a") as fh:
        fh.write(json.dumps(dict(base, type="user", timestamp="2026-02-13T10:00:02Z",
                                 message={"content": [{"type": "tool_result",
                                                       "tool_use_id": "toolu_new",
                                                       "content": "# spotter"}]})) + "\n")
        fh.write('{"type": "user", "partial li')  # a line still being written
    done = transcripts.import_sessions("claude", spotter)
    assert done["tools"] == 1 and done["prompts"] == 0
    assert transcripts.import_sessions("claude", spotter)["events"] == 0
    assert len(stored_events()) == n + 2 == first["events"] + 2
    assert stored_events("prompt")[-1]["prompt"] == "now the docs"  # our block stripped
    assert stored_events("tool")[-1]["files"] == ["README.md"]


def test_import_filters_by_project_and_since(spotter, tmp_path):
    other = tmp_path / "elsewhere"
    assert transcripts.import_sessions("claude", spotter, project=str(other))["events"] == 0
    assert transcripts.import_sessions(
        "claude", spotter, since=time.time() - 60)["events"] == 0  # files are an hour old
    assert transcripts.parse_since("30d") == pytest.approx(time.time() - 30 * 86400, abs=5)
    with pytest.raises(ValueError):
        transcripts.parse_since("soon")


def test_import_cli_json(spotter):
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "import", "claude",
                        str(spotter), "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["tools"] == 254 and data["prompts"] >= 2
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "import", "claude",
                        str(spotter), "--json"], capture_output=True, text=True, timeout=300)
    assert json.loads(r.stdout)["events"] == 0


# --------------------------------------------------------------------------- Codex


def rollout(tmp_path: Path) -> Path:
    """A Codex rollout in the `{"timestamp", "type", "payload"}` envelope format."""
    repo = tmp_path / "crepo"
    (repo / ".git").mkdir(parents=True)
    sid = "0199a0b1-2c3d-7e4f-8a9b-0c1d2e3f4a5b"
    path = tmp_path / "sessions" / "2026" / "02" / "10" / f"rollout-2026-02-10T10-00-00-{sid}.jsonl"
    path.parent.mkdir(parents=True)
    patch = ("*** Begin Patch\n*** Update File: src/app.py\n@@\n-x = 1\n+x = 2\n"
             "*** End Patch\n")
    lines = [
        {"type": "session_meta", "payload": {"id": sid, "cwd": str(repo), "cli_version": "0.99"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]}},
        {"type": "event_msg", "payload": {"type": "user_message", "message": "fix the app test"}},
        {"type": "turn_context", "payload": {"cwd": str(repo), "model": "gpt-5-codex"}},
        {"type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": "c1",
            "arguments": json.dumps({"command": ["bash", "-lc", "pytest tests/test_app.py"],
                                     "workdir": str(repo)})}},
        {"type": "response_item", "payload": {
            "type": "function_call_output", "call_id": "c1",
            "output": json.dumps({"output": "E   AssertionError: assert 1 == 2\n1 failed",
                                  "metadata": {"exit_code": 1, "duration_seconds": 0.4}})}},
        {"type": "response_item", "payload": {
            "type": "custom_tool_call", "name": "apply_patch", "call_id": "c2",
            "input": patch}},
        {"type": "response_item", "payload": {
            "type": "custom_tool_call_output", "call_id": "c2",
            "output": json.dumps({"output": "Success. Updated: M src/app.py",
                                  "metadata": {"exit_code": 0}})}},
        {"type": "response_item", "payload": {
            "type": "function_call", "name": "exec_command", "call_id": "c3",
            "arguments": json.dumps({"cmd": "cat src/app.py"})}},
        {"type": "response_item", "payload": {
            "type": "function_call_output", "call_id": "c3",
            "output": "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nx = 2\n"}},
        {"type": "response_item", "payload": {
            "type": "function_call", "name": "update_plan", "call_id": "c4",
            "arguments": json.dumps({"plan": [{"step": "fix", "status": "completed"}]})}},
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c4",
                                              "output": "Plan updated"}},
    ]
    with open(path, "w") as fh:
        fh.writelines(json.dumps({"timestamp": f"2026-02-10T10:00:{i:02d}.000Z", **d}) + "\n" for i, d in enumerate(lines))
    os.utime(path, (time.time() - 3600, time.time() - 3600))
    return path


def test_import_codex_rollout(tmp_path):
    path = rollout(tmp_path)
    stats = transcripts.import_sessions("codex", tmp_path / "sessions")
    assert stats["tools"] == 4 and stats["prompts"] == 1
    prompts = stored_events("prompt")
    assert [p["prompt"] for p in prompts] == ["fix the app test"]
    tools = stored_events("tool")
    assert [t["tool"] for t in tools] == ["Bash:pytest", "apply_patch", "Bash:cat", "update_plan"]
    assert tools[0]["exit_code"] == 1 and tools[0]["error"]
    assert tools[0]["files"] == ["tests/test_app.py"]
    assert tools[1]["files"] == ["src/app.py"] and tools[1]["action"] == "edit"
    assert tools[2]["files"] == ["src/app.py"] and tools[2]["error"] is None
    assert tools[0]["at"] == parse_time("2026-02-10T10:00:05.000Z")
    assert {t["session"] for t in tools} == {"0199a0b1-2c3d-7e4f-8a9b-0c1d2e3f4a5b"}
    assert transcripts.import_sessions("codex", tmp_path / "sessions")["events"] == 0
    assert transcripts.find_files("codex", path) == [path]


# --------------------------------------------------------------------------- what a user meets


def brainbox(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


def test_since_records_what_it_imported_so_a_wider_import_gets_the_older_events(spotter):
    """Friction #5: `--since 7d` imported 0 events and marked every file read, so a plain
    import afterwards got nothing."""
    week = brainbox("import", "claude", spotter, "--since", "7d", "--json")
    assert week.returncode == 0, week.stderr
    assert json.loads(week.stdout)["events"] == 0  # the transcript is from months ago
    wide = json.loads(brainbox("import", "claude", spotter, "--json").stdout)
    plain = transcripts.import_sessions("claude", spotter, conn=store.connect(":memory:"))
    assert wide["events"] == plain["events"] > 254 and len(stored_events()) == wide["events"]
    again = json.loads(brainbox("import", "claude", spotter, "--json").stdout)
    assert again["events"] == 0 and again["files_read"] == 0  # and nothing twice


def test_a_narrow_then_a_wider_since_imports_each_event_once(spotter):
    path = spotter / "-home-USER-projects-spotter" / f"{MAIN}.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    times = sorted(parse_time(d["timestamp"]) for d in rows if d.get("timestamp"))
    mid = times[len(times) // 2]
    first = transcripts.import_sessions("claude", spotter, since=mid)
    assert 0 < first["events"] < 254
    second = transcripts.import_sessions("claude", spotter, since=times[0] - 1)
    third = transcripts.import_sessions("claude", spotter)
    assert third["events"] == 0
    assert first["events"] + second["events"] == len(stored_events())
    ids = [(e["session"], e["at"], e["kind"], e["tool"], e["prompt"]) for e in stored_events()]
    fresh = store.connect(":memory:")
    conn_stats = transcripts.import_sessions("claude", spotter, conn=fresh, project=None)
    assert conn_stats["events"] == len(ids)  # the same events as one plain import
    assert sorted(ids, key=repr) == sorted(
        ((e["session"], e["at"], e["kind"], e["tool"], e["prompt"])
         for e in store.iter_events(fresh)), key=repr)


def test_a_folder_named_jsonl_and_a_fifo_are_skipped_and_garbage_is_reported(tmp_path):
    root = tmp_path / "tr"
    (root / "x.jsonl").mkdir(parents=True)
    os.mkfifo(root / "p.jsonl")
    (root / "garbage.jsonl").write_bytes(os.urandom(3000).replace(b"\n", b"") + b"\n")
    (root / "notes.jsonl").write_text('{"hello": "world"}\n')
    # a real process (the FIFO used to hang it, the folder to raise IsADirectoryError)
    p = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "import", "claude",
                        str(root), "--json"], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in p.stderr
    stats = json.loads(p.stdout)
    assert stats["files"] == 2 and stats["not_files"] == 2
    assert stats["not_transcripts"] == 2 and stats["events"] == 0
    line, _, code = transcripts.import_report(stats)
    assert "2 files not Claude Code transcripts" in line and code == 1


def test_import_codex_on_claude_transcripts_finds_no_codex_sessions(spotter):
    stats = transcripts.import_sessions("codex", spotter)
    assert stats["events"] == 0 and stats["not_transcripts"] == stats["files"] == 3
    _, err, code = transcripts.import_report(stats)
    assert "no Codex sessions" in err and code == 1


def test_an_empty_folder_is_a_note_not_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    _, err, code = transcripts.import_report(transcripts.import_sessions("claude",
                                                                         tmp_path / "empty"))
    assert code == 0 and "no Claude Code transcripts" in err


def test_a_missing_path_is_reported_with_exit_1(tmp_path):
    stats = transcripts.import_sessions("claude", tmp_path / "does" / "not" / "exist")
    assert stats["missing"] is True
    _, err, code = transcripts.import_report(stats)
    assert code == 1 and err.count("\n") == 0 and "no such file or folder" in err


def test_compaction_summaries_are_not_imported_as_prompts():
    if not SPOTTER.is_dir():
        pytest.skip("../shared/data/transcripts is absent")
    conn = store.connect(":memory:")
    transcripts.import_sessions("claude", SPOTTER, conn=conn)
    prompts = [e["prompt"] for e in store.iter_events(conn) if e["kind"] == "prompt"]
    assert prompts  # real prompts are still there
    assert not any(p.startswith(("Your task is to create a detailed summary",
                                 "This session is being continued")) for p in prompts)
    assert not any("/acompact-" in e["session"] for e in store.iter_events(conn))


def test_a_bad_since_names_the_option_once():
    p = brainbox("import", "claude", "--since", "soon")
    assert p.returncode == 2 and p.stderr.count("--since") == 1


def test_a_project_filter_then_a_plain_import_gets_the_rest_once(spotter, tmp_path):
    """The cursor after `--project P` holds what P left out: a plain import gets it."""
    fresh = store.connect(":memory:")
    plain = transcripts.import_sessions("claude", spotter, conn=fresh)
    other = str(tmp_path / "elsewhere")
    assert transcripts.import_sessions("claude", spotter, project=other)["events"] == 0
    path = spotter / "-home-USER-projects-spotter" / f"{MAIN}.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    times = sorted(parse_time(d["timestamp"]) for d in rows if d.get("timestamp"))
    part = transcripts.import_sessions("claude", spotter, since=times[len(times) // 2])
    assert 0 < part["events"] < plain["events"]
    rest = transcripts.import_sessions("claude", spotter)
    assert part["events"] + rest["events"] == plain["events"] == len(stored_events())
    assert transcripts.import_sessions("claude", spotter)["events"] == 0

    def key(e):
        return repr((e["session"], e["at"], e["kind"], e["tool"], e["prompt"], e["files"]))

    assert sorted(map(key, stored_events())) == sorted(map(key, store.iter_events(fresh)))


# --------------------------------------------------------------------------- the one reader


def test_the_shared_reader_tags_items_and_skips_what_is_not_a_prompt():
    from brainbox import transcript

    lines = [
        (10, {"type": "user", "sessionId": "s", "message": {"content": "fix the login"}}),
        (20, {"type": "assistant", "sessionId": "s", "message": {"content": [
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a.py"}},
            {"type": "tool_use", "id": "t2", "name": "Bash", "input": "not a dict"}]}}),
        (30, {"type": "user", "sessionId": "s", "timestamp": "T", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": [
                {"type": "text", "text": "no"}, {"type": "tool_result", "content": "such"},
                "file"]}]}}),
        (40, {"type": "user", "agentId": "acompact-1", "message": {"content": "summarise"}}),
        (50, {"type": "user", "isMeta": True, "message": {"content": "meta"}}),
        (60, {"type": "user", "message": {"content": "<system-reminder>x"}}),
    ]
    items = list(transcript.items(lines))
    assert [(i["type"], i["line"]) for i in items] == [("prompt", 10), ("tool", 20), ("tool", 20)]
    read, bash = items[1], items[2]
    assert read["is_error"] and read["result_text"] == "no\nsuch\nfile"
    assert read["result_timestamp"] == "T" and read["has_result"]
    assert bash["tool_input"] == {} and not bash["has_result"] and bash["tool_response"] is None
    assert transcript.text_of([{"type": "input_text", "text": "a"}, {"type": "image"}]) == "a"


def test_import_and_the_replay_loader_read_the_same_calls_and_prompts():
    """Both callers of brainbox.transcript, on every real Claude transcript we have."""
    from brainbox.eval.loaders import claude_code

    files = sorted(SPOTTER.rglob("*.jsonl")) if SPOTTER.is_dir() else []
    if not files:
        pytest.skip("../shared/data/transcripts is absent")
    for path in files:
        imported = [p for _, _, p, _ in transcripts.claude_items(path)]
        loaded = list(claude_code.iter_transcript(path))
        assert [p.get("tool_use_id") or p["prompt"] for p in imported] == [
            i.get("tool_use_id") or i["prompt"] for i in loaded], path
