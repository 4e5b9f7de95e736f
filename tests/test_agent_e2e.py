"""End to end: real transcripts replayed through hook processes, import == hooks,
installers through the CLI, doctor."""

from __future__ import annotations

import json
import os
import posixpath
import subprocess
import sys
import time
from pathlib import Path

import pytest

from brainbox import store as dbmod
from brainbox.cli import client, hookconf, spool, transcripts

SPOTTER = Path(__file__).resolve().parents[2] / "shared" / "data" / "transcripts" / \
    "claude-code" / "spotter"
MAIN = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
OTHER = "258c7280-ae70-4798-800f-63464d01a85d"
FILE_TOOLS = {"Read", "Edit", "Write", "MultiEdit", "NotebookEdit"}
SKIP_PROMPT = ("<", "Caveat:", "[Request interrupted", "This session is being continued")


def replay_items(path: Path):
    """(line number, payload) in the order hooks would fire: a prompt when it is
    submitted, a tool call when its result arrives. Built here, independently of
    `brainbox.cli.transcripts`, from the raw transcript lines."""
    uses, items = {}, []
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        d = json.loads(line)
        content = (d.get("message") or {}).get("content")
        base = {"session_id": d.get("sessionId"), "cwd": d.get("cwd"),
                "transcript_path": str(path), "permission_mode": "default"}
        if d.get("type") == "assistant" and isinstance(content, list):
            for c in content:
                if isinstance(c, dict) and c.get("type") == "tool_use":
                    uses[c["id"]] = c
        if d.get("type") != "user" or d.get("isMeta") or d.get("isCompactSummary"):
            continue
        if isinstance(content, str) and content.strip() and not content.startswith(SKIP_PROMPT):
            items.append((no, dict(base, hook_event_name="UserPromptSubmit", prompt=content)))
            continue
        for c in content if isinstance(content, list) else ():
            if not (isinstance(c, dict) and c.get("type") == "tool_result"):
                continue
            use = uses.get(c.get("tool_use_id"))
            if use is None:
                continue
            p = dict(base, tool_name=use["name"], tool_input=use.get("input") or {},
                     tool_use_id=use["id"])
            if c.get("is_error"):
                text = c["content"] if isinstance(c.get("content"), str) else json.dumps(
                    c.get("content"))
                p.update(hook_event_name="PostToolUseFailure", error=text, is_interrupt=False)
            else:
                resp = d.get("toolUseResult")
                if resp is None:
                    resp = c.get("content")
                p.update(hook_event_name="PostToolUse", tool_response=resp)
            items.append((no, p))
    return items


def relocate(src: Path, dst: Path, root: Path, upto_line: int | None = None) -> Path:
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    if upto_line is not None:
        lines = lines[: upto_line + 1]
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("".join(lines).replace("/home/USER", str(root / "home" / "USER")),
                   encoding="utf-8")
    os.utime(dst, (time.time() - 3600, time.time() - 3600))
    return dst


def hook(event, payload, env):
    return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "hook", "claude", event],
                          input=payload if isinstance(payload, str) else json.dumps(payload),
                          capture_output=True, text=True, env=env,
                          timeout=120)


def memory_counts() -> dict:
    from brainbox.memory import Memory

    with Memory.open() as mem:
        st = mem.stats()
    return {"resources": st["resources"], "associations": st["associations"],
            "events": st["events"]}


def stored(kind=None):
    conn = dbmod.connect()
    try:
        return [e for e in dbmod.iter_events(conn) if kind is None or e["kind"] == kind]
    finally:
        conn.close()


def replay(tmp_path, brainbox_home, name: str, n: int | None):
    src = SPOTTER / f"{name}.jsonl"
    work = tmp_path / "t" / f"{name}.jsonl"
    relocate(src, work, tmp_path)
    items = replay_items(work)[:n] if n else replay_items(work)
    # every file the session touched exists (suggestions never name a missing file)
    for _, p in items:
        fp = (p.get("tool_input") or {}).get("file_path") if isinstance(
            p.get("tool_input"), dict) else None
        if isinstance(fp, str) and fp.startswith(str(tmp_path)):
            Path(fp).parent.mkdir(parents=True, exist_ok=True)
            Path(fp).touch()
    brainbox_home.mkdir(parents=True, exist_ok=True)
    # behaviour, not speed: a loaded test machine must not push calls into the spool
    env = dict(os.environ, BRAINBOX_HOOK_BUDGET_TOOL="10", BRAINBOX_HOOK_BUDGET_PROMPT="30")
    client.spawn(brainbox_home, force=True)
    deadline = time.monotonic() + 120
    while not client.status(brainbox_home)["running"] and time.monotonic() < deadline:
        time.sleep(0.1)
    outputs = []
    for _, payload in items:
        r = hook(payload["hook_event_name"], payload, env)
        assert r.returncode == 0, r.stderr
        if payload["hook_event_name"] != "UserPromptSubmit":
            assert r.stdout == ""
        outputs.append((payload, r.stdout))
    return work, items, outputs


@pytest.fixture
def spotter():
    if not SPOTTER.is_dir():
        pytest.skip("../shared/data/transcripts is absent")
    return SPOTTER


@pytest.fixture(autouse=True)
def no_stray_daemon(brainbox_home):
    yield
    client.stop(brainbox_home, wait=10)


def check_replay(items, outputs, tmp_path):
    tools = [p for _, p in items if p["hook_event_name"] != "UserPromptSubmit"]
    evs = [e for e in stored("tool")]
    assert len(evs) == len(tools)
    assert [e["tool"].split(":")[0] for e in evs] == [p["tool_name"] for p in tools]
    for e, p in zip(evs, tools):
        if p["tool_name"] in FILE_TOOLS:
            fp = p["tool_input"]["file_path"]
            rel = posixpath.relpath(fp, e["project"])
            assert e["files"] == ([] if rel.startswith("..") else [rel]), (e, fp)
        if p["hook_event_name"] == "PostToolUseFailure":
            assert e["error"]
    prompts = [p["prompt"] for _, p in items if p["hook_event_name"] == "UserPromptSubmit"]
    assert [e["prompt"] for e in stored("prompt")] == [hooks_strip(t) for t in prompts]
    folder = Path(spool.spool_dir())
    assert not folder.exists() or not list(folder.iterdir())


def hooks_strip(text):
    from brainbox.cli.hookmap import strip_context

    return strip_context(text)


def test_replayed_transcript_through_hook_processes_and_import_agree(
        spotter, tmp_path, brainbox_home, monkeypatch):
    _, items, outputs = replay(tmp_path, brainbox_home, MAIN, 150)
    check_replay(items, outputs, tmp_path)
    # the later prompt is told about files the session touched earlier
    later = [(p, out) for p, out in outputs if p["hook_event_name"] == "UserPromptSubmit"][-1]
    assert later[0]["prompt"] == "continue implementation"
    ctx = json.loads(later[1])["hookSpecificOutput"]["additionalContext"]
    touched = {f for e in stored("tool") for f in e["files"]}
    named = [ln[2:].split(" — ")[0] for ln in ctx.splitlines() if ln.startswith("- ")]
    assert named and set(named) <= touched
    assert len(ctx) <= hookconf.INJECT_CHARS
    hooks_memory = memory_counts()
    client.stop(brainbox_home, wait=10)

    # the same transcript, cut where the replay stopped, imported into a fresh memory
    home2 = tmp_path / "home2"
    monkeypatch.setenv("BRAINBOX_HOME", str(home2))
    cut = relocate(spotter / f"{MAIN}.jsonl", tmp_path / "imp" / f"{MAIN}.jsonl", tmp_path,
                   upto_line=items[-1][0])
    stats = transcripts.import_sessions("claude", cut)
    assert stats["tools"] + stats["prompts"] == len(items)
    assert memory_counts() == hooks_memory


@pytest.mark.slow
def test_two_whole_transcripts_replayed_and_imported_agree(spotter, tmp_path, brainbox_home,
                                                           monkeypatch):
    all_items = []
    for name in (MAIN, OTHER):
        _, items, _ = replay(tmp_path, brainbox_home, name, None)
        all_items += items
    assert len(stored("tool")) == 242 + 186
    hooks_memory = memory_counts()
    client.stop(brainbox_home, wait=10)
    monkeypatch.setenv("BRAINBOX_HOME", str(tmp_path / "home2"))
    for name in (MAIN, OTHER):
        transcripts.import_sessions("claude", tmp_path / "t" / f"{name}.jsonl")
    assert memory_counts() == hooks_memory


# --------------------------------------------------------------------------- installers

SETTINGS = json.dumps({
    "model": "opus",
    "permissions": {"allow": ["Bash(git diff:*)"]},
    "hooks": {
        "PostToolUse": [{"matcher": "Edit|Write",
                         "hooks": [{"type": "command", "command": "prettier --write"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
    },
    "statusLine": {"type": "command", "command": "echo hi"},
}, indent=4).encode()


def cli(*args, env):
    return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", *args],
                          capture_output=True, text=True, env=env, timeout=300)


def test_install_twice_then_uninstall_is_byte_identical(tmp_path):
    home = tmp_path / "user"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_bytes(SETTINGS)
    codex = home / ".codex" / "config.toml"
    codex.parent.mkdir(parents=True)
    codex_original = b'model = "gpt-5-codex"\n\n[features]\nweb_search = true\n'
    codex.write_bytes(codex_original)
    env = dict(os.environ, HOME=str(home))
    env.pop("CODEX_HOME", None)
    for _ in range(2):
        r = cli("install", "--claude", "--user", "--json", env=env)
        assert r.returncode == 0, r.stderr
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["statusLine"]["command"] == "echo hi"
    ours = [h["command"] for g in data["hooks"]["PostToolUse"] for h in g["hooks"]
            if "brainbox" in h["command"]]
    assert len(ours) == 1 and ours[0].endswith("hook claude PostToolUse")
    assert "prettier --write" in json.dumps(data["hooks"]["PostToolUse"])
    r = cli("install", "--codex", "--json", env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(cli("doctor", "--json", "--no-latency", env=env).stdout)
    assert doc["hooks"]["claude_user"]["events"] == sorted(
        ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
         "PostToolBatch", "Stop", "SessionEnd"])
    assert doc["hooks"]["codex"]["events"] == sorted(
        ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"])
    r = cli("uninstall", "--claude", "--user", "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert settings.read_bytes() == SETTINGS
    r = cli("uninstall", "--json", env=env)  # both agents; claude has nothing left
    assert r.returncode == 0, r.stderr
    assert codex.read_bytes() == codex_original
    assert cli("install", env=env).returncode == 2  # which agent?


def test_install_into_a_project(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    env = dict(os.environ, HOME=str(tmp_path / "user"))
    r = cli("install", "--claude", "--project", str(proj), "--json", env=env)
    assert r.returncode == 0, r.stderr
    path = proj / ".claude" / "settings.json"
    assert "hook claude UserPromptSubmit" in path.read_text()
    cli("uninstall", "--claude", "--project", str(proj), env=env)
    assert not path.exists()


def test_doctor_reports_database_daemon_errors_and_latency(tmp_path, brainbox_home):
    env = dict(os.environ)
    p = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "PostToolUse",
         "tool_name": "Read", "tool_input": {"file_path": str(tmp_path / "a.py")},
         "tool_response": {}}
    assert hook("PostToolUse", p, env).returncode == 0
    assert hook("PostToolUse", "{not json", env).returncode == 0
    r = cli("doctor", "--json", env=env)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["ok"] and d["database"]["events"] == 1 and d["database"]["schema_ok"]
    assert d["daemon"]["running"] is False
    assert d["hook_errors"]["last"] and "not JSON" in d["hook_errors"]["last"][-1]
    lat = d["latency"]
    assert lat["record_exit"] == 0 and lat["hook_exit"] == 0
    assert lat["record_ms"] > 0 and lat["python_ms"] > 0
    human = cli("doctor", "--no-latency", env=env)
    assert "db " in human.stdout and "errors" in human.stdout
