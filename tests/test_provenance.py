"""Provenance (issue 19, item 3): every event records where it came from (hook, import,
MCP, CLI), old rows are classified by the migration, `recall --source` answers from
those events alone, exactly, and `explain` names the sources of its evidence."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from brainbox import provenance, store
from brainbox.cli import transcripts
from brainbox.cli.app import cli
from brainbox.memory import Memory
from tests.records import git_repo, hook_process, old_database, stored_events

FILES = ("src/auth/login.py", "src/auth/session.py", "src/billing/invoice.py",
         "src/billing/tax.py", "docs/auth.md")


@pytest.fixture
def repo(tmp_path):
    return git_repo(tmp_path / "repo", FILES)


def invoke(*args):
    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.output


def hook_env():
    return dict(os.environ, BRAINBOX_HOOK_BUDGET_TOOL="10", BRAINBOX_DAEMON="off")


def read(repo, path, session, **extra):
    return {"session_id": session, "cwd": str(repo), "hook_event_name": "PostToolUse",
            "tool_name": "Read", "tool_input": {"file_path": str(repo / path)},
            "tool_response": {}, **extra}


def transcript(repo: Path, folder: Path, session: str, paths) -> Path:
    """A small Claude Code transcript: a prompt, then one Read per path."""
    lines = [{"type": "user", "sessionId": session, "cwd": str(repo), "uuid": "u0",
              "timestamp": "2026-11-01T10:00:00Z",
              "message": {"role": "user", "content": "billing tax rounding"}}]
    for i, p in enumerate(paths, 1):
        use = f"toolu_{session}_{i}"
        lines.append({"type": "assistant", "sessionId": session, "cwd": str(repo),
                      "uuid": f"a{i}", "timestamp": f"2026-11-01T10:0{i}:00Z",
                      "message": {"role": "assistant", "content": [
                          {"type": "tool_use", "id": use, "name": "Read",
                           "input": {"file_path": str(repo / p)}}]}})
        lines.append({"type": "user", "sessionId": session, "cwd": str(repo),
                      "uuid": f"r{i}", "timestamp": f"2026-11-01T10:0{i}:30Z",
                      "message": {"role": "user", "content": [
                          {"type": "tool_result", "tool_use_id": use, "content": "x"}]},
                      "toolUseResult": {"type": "text", "file": {"filePath": str(repo / p)}}})
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session}.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    os.utime(path, (time.time() - 3600, time.time() - 3600))
    return path


def test_each_writer_records_its_source_and_detail(repo, tmp_path, brainbox_home):
    # a hook (a sub-agent's call): source hook, the agent, event and agent id in meta
    hook_process("PostToolUse", read(repo, FILES[0], "live", agent_id="a1",
                                     agent_type="Explore"), hook_env())
    # an import: the transcript and the offset of its line
    t = transcript(repo, tmp_path / "claude", "past", [FILES[2]])
    assert transcripts.import_sessions("claude", t)["tools"] == 1
    # the CLI: `brainbox record`, and a verb (pin)
    invoke("record", "--session", "c1", "--cwd", str(repo), "--tool", "Read",
           "--file", str(repo / FILES[1]))
    invoke("pin", str(repo / FILES[3]))
    by = {}
    for e in stored_events():
        by.setdefault(e["source"], []).append(e)
    assert set(by) == {"hook", "import", "cli"}
    (h,) = by["hook"]
    assert (h["meta"]["agent"], h["meta"]["event"], h["meta"]["agent_id"]) == (
        "claude", "PostToolUse", "a1")
    imp = next(e for e in by["import"] if e["kind"] == "tool")
    assert imp["meta"]["transcript"] == str(t)
    with open(t, "rb") as fh:
        fh.seek(imp["meta"]["offset"])
        line = json.loads(fh.readline())  # the call's line
    assert line["message"]["content"][0]["id"] == imp["meta"]["tool_use_id"]
    assert {e["kind"] for e in by["cli"]} == {"tool", "maintenance"}


def test_mcp_records_its_source(repo, brainbox_home, monkeypatch):
    pytest.importorskip("mcp")
    from brainbox.cli import mcp_server

    monkeypatch.setattr(mcp_server, "_mem", None)
    mem = mcp_server.memory()
    try:
        mem.record({"session": "m1", "cwd": str(repo), "tool": "Read",
                    "files": [str(repo / FILES[0])]})
    finally:
        mem.close()
        monkeypatch.setattr(mcp_server, "_mem", None)
    assert [e["source"] for e in stored_events()] == ["mcp"]


def test_the_migration_classifies_old_rows(tmp_path, monkeypatch):
    path = tmp_path / "old.db"
    old_database(monkeypatch, path, 8)  # before 010: one event without meta
    raw = sqlite3.connect(path)
    raw.execute("INSERT INTO events (at, session, project, kind, tool, files, meta) VALUES "
                "(2.0, 's', '/p', 'tool', 'Read', '[\"b.py\"]', "
                "'{\"agent\": \"claude\", \"event\": \"PostToolUse\"}')")
    raw.execute("INSERT INTO events (at, session, project, kind, tool, files, meta) VALUES "
                "(3.0, 's', '/p', 'tool', 'Read', '[\"c.py\"]', '{\"op\": \"x\"}')")
    raw.commit()
    raw.close()
    conn = store.connect(path)
    try:
        got = [(e["files"], e["source"]) for e in store.iter_events(conn)]
    finally:
        conn.close()
    assert got == [(["a.py"], None), (["b.py"], "hook"), (["c.py"], None)]


def teach_by_hooks(repo, sessions=3):
    env = hook_env()
    for s in range(sessions):
        for f in FILES[:2]:
            hook_process("PostToolUse", read(repo, f, f"h{s}"), env)


def teach_by_import(repo, tmp_path, sessions=3):
    for s in range(sessions):
        t = transcript(repo, tmp_path / "claude", f"imp{s}", FILES[2:4])
        transcripts.import_sessions("claude", t)


def recall_json(*args):
    return json.loads(invoke("recall", *args, "--json"))


def test_recall_by_source_equals_a_memory_that_saw_only_those(repo, tmp_path, brainbox_home,
                                                              monkeypatch):
    teach_by_hooks(repo)
    teach_by_import(repo, tmp_path)
    q = ("auth login session billing tax", "--cwd", str(repo), "--limit", "10")
    every = {r["path"] for r in recall_json(*q)["results"]}
    assert {FILES[0], FILES[2]} <= every
    live = recall_json(*q, "--source", "hook")
    assert live["sources"] == ["hook"] and live["served_by"] == "process"
    assert {r["path"] for r in live["results"]} <= set(FILES[:2])
    past = recall_json(*q, "--source", "import")
    assert {r["path"] for r in past["results"]} <= set(FILES[2:4])
    both = recall_json(*q, "--source", "import", "--source", "hook")
    assert {r["path"] for r in both["results"]} == every
    assert recall_json(*q, "--source", "mcp")["results"] == []
    # exact: the same answer as a memory that only ever saw the hooks' events
    conn = store.connect()
    try:
        hooked = [e for e in store.iter_events(conn) if e["source"] == "hook"]
    finally:
        conn.close()
    monkeypatch.setenv("BRAINBOX_HOME", str(tmp_path / "only-hooks"))
    with Memory.open() as mem:
        mem.record_normalized([{k: v for k, v in e.items() if k != "id"} for e in hooked])
    alone = recall_json(*q)
    strip = [{k: v for k, v in r.items()} for r in alone["results"]]
    assert [{k: v for k, v in r.items()} for r in live["results"]] == strip


def test_recall_source_refuses_an_unknown_one(repo, brainbox_home):
    r = CliRunner().invoke(cli, ["recall", "x", "--source", "web"])
    assert r.exit_code == 2 and "web" in r.output
    with pytest.raises(Exception, match="unknown source 'web'"):
        provenance.check_sources(["hook", "web"])


def test_explain_counts_the_evidence_by_source(repo, tmp_path, brainbox_home):
    teach_by_hooks(repo)
    teach_by_import(repo, tmp_path)
    # the same two files read together once more, imported
    t = transcript(repo, tmp_path / "claude", "imp-auth", FILES[:2])
    transcripts.import_sessions("claude", t)
    out = json.loads(invoke("explain", FILES[1], "--query", "auth", "--cwd", str(repo),
                            "--json"))
    assert out["provenance"] == {"hook": 3, "import": 1}
    edge = next(e for e in out["incoming"] if e["source"] == FILES[0])
    # the events naming either file in the sessions that read both: 3 hook sessions of
    # 2 reads, one imported of 2
    assert edge["sources"] == {"hook": 6, "import": 2}
    text = invoke("explain", FILES[1], "--query", "auth", "--cwd", str(repo))
    assert "events: 3 hook, 1 import" in text
    assert f"<- {FILES[0]} (file, w=" in text and "6 hook, 2 import)" in text
