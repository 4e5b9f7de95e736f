"""`brainbox mcp` driven by the official SDK's own client over stdio."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

mcp = pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TOOLS = {"record", "recall", "explain", "error", "resolve", "predict_next", "stats", "forget",
         "search", "pin", "unpin", "pins", "procedures", "log", "feedback"}


def run_session(script, errlog=None):
    async def main():
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "brainbox.cli.entry", "mcp"],
                                       env=dict(os.environ))
        async with (stdio_client(params, errlog=errlog or sys.stderr) as (read, write),
                    ClientSession(read, write) as session):
            await session.initialize()
            return await script(session)

    return asyncio.run(asyncio.wait_for(main(), 300))


def test_mcp_tools_over_stdio(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "auth").mkdir(parents=True)
    (repo / "src" / "auth" / "login.py").write_text(
        "def login_redirect(user):\n    return '/home'\n")
    err = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'yaml'"

    async def script(s):
        out = {}
        listed = (await s.list_tools()).tools
        out["tools"] = {t.name: t.inputSchema for t in listed}
        call = s.call_tool
        for sess in ("a", "b", "c"):
            r = await call("record", {"session": sess, "cwd": str(repo), "tool": "Read",
                                      "files": ["src/auth/login.py"]})
            assert not r.isError, r.content
            await call("record", {"session": sess, "cwd": str(repo), "tool": "Edit",
                                  "files": ["src/auth/session.py"]})
        out["recall"] = (await call("recall", {"query": "login", "cwd": str(repo)}))
        out["explain"] = await call("explain", {"path": "src/auth/session.py",
                                                "query": "login", "cwd": str(repo)})
        out["missing"] = await call("explain", {"path": "nope.py", "query": "x",
                                                "cwd": str(repo)})
        out["error1"] = await call("error", {"text": err, "session": "d", "cwd": str(repo)})
        out["resolve"] = await call("resolve", {"error": err, "files": ["setup.py"],
                                                "cwd": str(repo)})
        out["error2"] = await call("error", {"text": err, "session": "e", "cwd": str(repo)})
        out["predict"] = await call("predict_next", {"session": "c"})
        out["stats"] = await call("stats", {})
        out["bad"] = await call("recall", {"limit": 5})  # missing the required query
        out["search0"] = await call("search", {"query": "login", "cwd": str(repo)})
        await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "brainbox.cli.entry", "index", str(repo),
                             "--no-progress"], check=True, capture_output=True)
        out["search"] = await call("search", {"query": "login redirect", "cwd": str(repo)})
        return out

    out = run_session(script)
    assert set(out["tools"]) == TOOLS
    for name, schema in out["tools"].items():
        assert schema["type"] == "object", name
    assert out["tools"]["recall"]["required"] == ["query"]
    assert out["tools"]["recall"]["properties"]["limit"]["type"] == "integer"
    assert out["tools"]["resolve"]["properties"]["files"]["type"] == "array"
    recall = out["recall"].structuredContent
    assert recall["results"][0]["path"] == "src/auth/login.py"
    exp = out["explain"].structuredContent
    assert exp["path"] == "src/auth/session.py" and exp["incoming"]
    assert out["missing"].isError and "not in memory" in out["missing"].content[0].text
    assert out["error1"].structuredContent["fingerprint"] == "PYTHON_TRACEBACK|importing"
    assert out["error1"].structuredContent["fix_files"] == []
    fixes = out["error2"].structuredContent["fix_files"]
    assert fixes[0]["path"] == "setup.py" and fixes[0]["weight"] > 0.8
    assert out["predict"].structuredContent["tools"]
    stats = out["stats"].structuredContent
    assert stats["events"] == 9 and stats["resources"]["error"] == 1
    assert out["bad"].isError
    assert out["search0"].isError and "no code index" in out["search0"].content[0].text
    found = out["search"].structuredContent
    assert found["snippets"][0]["path"] == "src/auth/login.py"
    assert found["snippets"][0]["symbol"] == "login_redirect"


def test_mcp_recall_takes_a_project_refuses_unknown_arguments_and_forgets_safely(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    log = tmp_path / "server-stderr.txt"

    async def script(s):
        out = {}
        call = s.call_tool
        for sess in ("a", "b"):
            await call("record", {"session": sess, "cwd": str(repo), "tool": "Read",
                                  "files": ["src/auth/login.py"]})
            await call("record", {"session": sess, "cwd": str(repo), "tool": "Edit",
                                  "files": ["src/auth/session.py", "src/db/pool.py"]})
        # the server's cwd is not the repo: only `project` points recall at it
        out["by_project"] = await call("recall", {"query": "login", "project": str(repo)})
        out["unknown"] = await call("recall", {"query": "login", "projekt": str(repo)})
        out["decay"] = await call("decay", {})
        out["empty"] = await call("forget", {"path": "", "cwd": str(repo)})
        out["folder"] = await call("forget", {"path": "src/auth", "cwd": str(repo)})
        out["dry"] = await call("forget", {"path": "src/auth", "cwd": str(repo),
                                           "dry_run": True})
        out["after_dry"] = await call("recall", {"query": "login", "project": str(repo)})
        out["gone"] = await call("forget", {"path": "src/auth/login.py", "cwd": str(repo)})
        out["after"] = await call("recall", {"query": "login", "project": str(repo)})
        return out

    with open(log, "w") as errlog:
        out = run_session(script, errlog)
    hits = [r["path"] for r in out["by_project"].structuredContent["results"]]
    assert hits and hits[0] == "src/auth/login.py"
    assert out["unknown"].isError and "projekt" in out["unknown"].content[0].text
    assert out["decay"].isError  # not exposed: an agent must not prune the memory
    assert out["empty"].isError and "empty" in out["empty"].content[0].text
    assert out["folder"].isError and "recursive" in out["folder"].content[0].text
    dry = out["dry"].structuredContent
    assert dry["dry_run"] is True and {f["path"] for f in dry["files"]} == {
        "src/auth/login.py", "src/auth/session.py"}
    assert out["after_dry"].structuredContent["results"]  # a dry run deletes nothing
    assert out["gone"].structuredContent["deleted_events"] == 2
    assert "src/auth/login.py" not in [
        r["path"] for r in out["after"].structuredContent["results"]]
    assert "Processing request" not in log.read_text()


def test_mcp_pin_unpin_pins(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

    async def script(s):
        call = s.call_tool
        out = {"file": await call("pin", {"path": "src/app.py", "cwd": str(repo)}),
               "note": await call("pin", {"text": f"token {secret} is revoked",
                                          "project": str(repo)}),
               "again": await call("pin", {"path": str(repo / "src/app.py")}),
               "empty": await call("pin", {"text": " ", "cwd": str(repo)}),
               "outside": await call("pin", {"path": "/etc/passwd", "project": str(repo)}),
               "neither": await call("pin", {"cwd": str(repo)}),
               "listed": await call("pins", {"cwd": str(repo)})}
        note_id = out["note"].structuredContent["id"]
        out["unpin"] = await call("unpin", {"id": note_id})
        out["unpin_path"] = await call("unpin", {"path": "src/app.py", "cwd": str(repo)})
        out["missing"] = await call("unpin", {"path": "src/app.py", "cwd": str(repo)})
        out["after"] = await call("pins", {"project": str(repo)})
        return out

    out = run_session(script)
    first = out["file"].structuredContent
    assert (first["kind"], first["value"], first["project"], first["pinned"]) == (
        "file", "src/app.py", str(repo), True)
    note = out["note"].structuredContent
    assert note["kind"] == "text" and secret not in note["value"]
    assert out["again"].structuredContent["pinned"] is False
    assert out["empty"].isError and "the text is empty" in out["empty"].content[0].text
    assert out["outside"].isError and "not a file under the project" in \
        out["outside"].content[0].text
    assert out["neither"].isError
    listed = out["listed"].structuredContent["pins"]
    assert [p["id"] for p in listed] == [first["id"], note["id"]]
    assert out["unpin"].structuredContent["unpinned"] and not out["unpin_path"].isError
    assert out["missing"].isError and "nothing pinned" in out["missing"].content[0].text
    assert out["after"].structuredContent["pins"] == []


def test_mcp_log_and_feedback(tmp_path):
    from brainbox.cli import handler
    from brainbox.memory import Memory

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    with Memory.open() as mem:
        for sess in ("a", "b"):
            for f in ("src/a.py", "src/b.py"):
                mem.record({"session": sess, "cwd": str(repo), "tool": "Read", "files": [f]})
        # one injection the Stop hook scored (b.py ignored, reached from a.py), one pending
        mem.record({"session": "c", "cwd": str(repo), "kind": "feedback", "at": 1_800_000_000,
                    "meta": {"op": "feedback", "reward": 0.5, "suggestions": 1, "items": [
                        {"path": "src/a.py", "used": True, "edited": True, "rank": 1,
                         "via": None, "channels": {"lexical": 1}, "confidence": 0.9},
                        {"path": "src/b.py", "used": False, "edited": False, "rank": 2,
                         "via": "src/a.py", "channels": {"associative": 1},
                         "confidence": 0.4}]}})
    handler.remember("d", {"after_id": 0, "at": 1_900_000_000, "project": str(repo),
                           "session": "d", "chars": 80,
                           "items": [{"path": "src/b.py", "rank": 1, "via": None,
                                     "confidence": 0.3, "channels": {"frequency": 1}}]})

    async def script(s):
        call = s.call_tool
        out = {"log": await call("log", {}),
               "one": await call("log", {"session": "c", "limit": 1}),
               "wrong": await call("feedback", {"path": "src/b.py", "verdict": "wrong",
                                                "cwd": str(repo)}),
               "never": await call("feedback", {"path": str(repo / "src/b.py"),
                                                "verdict": "never", "query": "b things"}),
               "excluded": await call("log", {"excluded": True, "project": str(repo)}),
               "unknown": await call("feedback", {"path": "src/nope.py", "verdict": "never",
                                                  "cwd": str(repo)}),
               "bad": await call("feedback", {"path": "src/a.py", "verdict": "maybe",
                                              "cwd": str(repo)}),
               "undo": await call("feedback", {"path": "src/b.py", "verdict": "undo",
                                               "cwd": str(repo)}),
               "after": await call("log", {"excluded": True})}
        return out

    out = run_session(script)
    rows = out["log"].structuredContent["injections"]
    assert [(r["session"], r["path"], r["outcome"]) for r in rows] == [
        ("d", "src/b.py", "pending"), ("c", "src/a.py", "edited"), ("c", "src/b.py", "ignored")]
    assert rows[2]["via"] == "src/a.py" and rows[2]["channels"] == {"associative": 1}
    assert [r["path"] for r in out["one"].structuredContent["injections"]] == ["src/a.py"]
    # --wrong names the latest injection's edge: the pending one, which came by none
    assert out["wrong"].structuredContent["via"] is None
    assert out["never"].structuredContent["changed"]
    assert [x["path"] for x in out["excluded"].structuredContent["excluded"]] == ["src/b.py"]
    assert out["unknown"].isError and "not a file memory knows" in out["unknown"].content[0].text
    assert out["bad"].isError
    assert out["undo"].structuredContent["verdict"] == "undo"
    assert out["after"].structuredContent["excluded"] == []


def test_mcp_without_the_sdk_says_how_to_install_it(tmp_path):
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "mcp").mkdir()
    (blocker / "mcp" / "__init__.py").write_text("raise ImportError('no mcp here')\n")
    env = dict(os.environ, PYTHONPATH=str(blocker))
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "mcp"], capture_output=True,
                       text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 1
    assert "pip install 'brainbox[mcp]'" in r.stderr and "Traceback" not in r.stderr
