"""The resident daemon: lifecycle, single instance, stale socket, protocol, freshness."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from brainbox import paths
from brainbox import store as dbmod
from brainbox.cli import client, handler, spool
from brainbox.cli.service import Service
from tests.records import hook_script


def cli(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", *args],
                          capture_output=True, text=True, env=env, timeout=timeout)


def wait_running(home, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = client.status(home)
        if st["running"]:
            return st
        time.sleep(0.1)
    log = home / client.LOG_NAME
    raise AssertionError(f"daemon did not start: {log.read_text() if log.exists() else ''}")


@pytest.fixture
def home(brainbox_home):
    brainbox_home.mkdir(parents=True, exist_ok=True)
    yield brainbox_home
    client.stop(brainbox_home, wait=10)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    for f in ("src/auth/login.py", "src/auth/session.py", "src/billing.py"):
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text("x\n")
    return root


def hook(repo, name, path, session="s1"):
    p = {"session_id": session, "cwd": str(repo), "hook_event_name": "PostToolUse",
         "tool_name": name, "tool_input": {"file_path": str(repo / path)}, "tool_response": {}}
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "hook", "claude",
                        "PostToolUse"], input=json.dumps(p), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and r.stdout == ""


# --------------------------------------------------------------------------- in-process


def test_service_answers_every_op(repo):
    for s in range(3):
        hook(repo, "Read", "src/auth/login.py", f"p{s}")
        hook(repo, "Edit", "src/auth/session.py", f"p{s}")
    svc = Service()
    try:
        assert svc.handle({"op": "ping"})["result"]["pid"] == os.getpid()
        assert svc.handle({"op": "sync"})["result"]["folded"] == 6
        rec = svc.handle({"op": "recall", "query": "login", "project": str(repo)})["result"]
        assert rec[0]["path"] == "src/auth/login.py"
        assert svc.handle({"op": "predict", "session": "p2"})["result"]
        sug = svc.handle({"op": "suggest", "query": "auth login", "project": str(repo),
                          "session": "new"})["result"]
        assert "src/auth/login.py — matches query" in sug["text"]
        assert {it["path"] for it in sug["items"]} >= {"src/auth/login.py"}
        start = svc.handle({"op": "start", "project": str(repo), "max_chars": 1200})["result"]
        assert "src/auth/session.py" in start["text"]
        assert svc.handle({"op": "stats"})["result"]["events"] == 6
        assert svc.handle({"op": "nope"}) == {"ok": False, "error": "unknown op 'nope'"}
        assert not svc.handle([1, 2])["ok"]
        assert "serves" in svc.handle({"op": "stats", "db": "/elsewhere.db"})["error"]
    finally:
        svc.close()


def test_memory_builds_the_answers_the_daemon_sends(repo):
    """`Memory.suggest`, `Memory.session_start` and `Memory.fix_files` (the engine's
    answers, issue 14): files that are gone are never listed, evidence words come with
    each, the start list with no session fuses access count and recency."""
    from brainbox.memory import Memory

    with Memory.open(paths.db_path(), autosave=False) as mem:
        for s in range(3):
            mem.record({"session": f"p{s}", "cwd": str(repo), "tool": "Read", "at": 10.0 + s,
                        "files": ["src/auth/login.py"]})
            mem.record({"session": f"p{s}", "cwd": str(repo), "tool": "Edit", "at": 10.5 + s,
                        "files": ["src/auth/session.py"]})
        mem.record({"session": "p3", "cwd": str(repo), "tool": "Read", "at": 20.0,
                    "files": ["src/billing.py"]})
        items = mem.suggest("auth login", project=str(repo), session="new", limit=1)
        assert [(it["path"], it["rank"], it["why"]) for it in items] == [
            ("src/auth/login.py", 1, "matches query")]
        assert set(items[0]) == {"path", "rank", "why", "via", "confidence", "channels"}
        assert items[0]["channels"]["lexical"] == 1  # why it was shown (the injection log)
        # no session evidence: 2 / (20 + count rank) + 1 / (20 + recency rank); counts
        # 3, 3, 1 (ties by id: login first), billing newest, login oldest:
        # login 2/21 + 1/23 > session 2/22 + 1/22 > billing 2/23 + 1/21
        start = mem.session_start(str(repo))
        assert [it["path"] for it in start] == ["src/auth/login.py", "src/auth/session.py",
                                                "src/billing.py"]
        assert start[0]["why"] == "used 3x" and start[2]["why"] == "used 1x"
        # a session that touched files: recall's session evidence, in recall's order
        hits = mem.recall("", project=str(repo), session="p3", limit=40)
        assert hits and [it["path"] for it in mem.session_start(str(repo), "p3")] == [
            r.path for r in hits]
        (repo / "src" / "auth" / "session.py").unlink()  # gone: never listed
        assert "src/auth/session.py" not in {it["path"] for it in mem.session_start(str(repo))}
        assert "src/auth/session.py" not in {
            it["path"] for it in mem.suggest("auth session", project=str(repo))}
        assert mem.session_start(str(repo / "elsewhere")) == []
        assert mem.fix_files("NO_SUCH|error", str(repo)) == []
        mem.record({"session": "e", "cwd": str(repo), "tool": "Bash", "command": "pytest",
                    "exit_code": 1, "error": "KeyError: 'user_id'"})
        from brainbox.fingerprint import fingerprint

        fp = fingerprint("KeyError: 'user_id'")
        mem.resolve("KeyError: 'user_id'", ["src/billing.py"], cwd=str(repo))
        fixes = mem.fix_files(fp, str(repo))
        assert fixes[0]["path"] == "src/billing.py" and fixes[0]["weight"] > 0.8
        assert mem.fix_files(fp, "/another/project") == []


def test_a_handed_over_hook_looks_for_git_afresh(tmp_path):
    """The daemon outlives many hooks: before each handed-over one it forgets the project
    roots it found (`events.forget_project_roots`), as a fresh hook process would."""
    from brainbox import events

    sub = tmp_path / "outer" / "inner"
    sub.mkdir(parents=True)
    (tmp_path / "outer" / ".git").mkdir()
    assert events.project_root(str(sub)) == str(tmp_path / "outer")
    (sub / ".git").mkdir()  # a repository made inside since
    assert events.project_root(str(sub)) == str(tmp_path / "outer")  # cached
    events.forget_project_roots()
    assert events.project_root(str(sub)) == str(sub)


def test_service_reloads_after_forget(repo):
    hook(repo, "Read", "src/auth/login.py")
    hook(repo, "Read", "src/billing.py")
    svc = Service()
    try:
        q = {"op": "recall", "query": "login billing", "project": str(repo)}
        assert {r["path"] for r in svc.handle(q)["result"]} == {"src/auth/login.py",
                                                               "src/billing.py"}
        r = cli("forget", "src/auth/login.py", "--cwd", str(repo), "--json")
        assert r.returncode == 0, r.stderr
        assert {r["path"] for r in svc.handle(q)["result"]} == {"src/billing.py"}
    finally:
        svc.close()


def test_long_home_paths_get_a_short_socket(tmp_path):
    deep = tmp_path / ("d" * 120)
    path = paths.socket_path(deep)
    assert len(path.encode()) <= 100 and path.startswith("/tmp/brainbox-")
    assert paths.socket_path(Path("/tmp/h")) == "/tmp/h/daemon.sock"


# --------------------------------------------------------------------------- processes


def test_serve_detach_status_stop_and_json(home, repo):
    hook(repo, "Read", "src/auth/login.py")
    r = cli("serve", "--detach", "--json")
    assert r.returncode == 0, r.stderr
    st = wait_running(home)
    assert st["db"] == paths.db_path()
    r = cli("serve", "--status", "--json")
    data = json.loads(r.stdout)
    assert data["running"] and data["pid"] == st["pid"]
    # the daemon answers over the socket with the same JSON-lines protocol
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(paths.socket_path(home))
    s.sendall(b'not json\n{"op": "ping"}\n')
    f = s.makefile("rb")
    assert json.loads(f.readline()) == {"ok": False, "error": "not JSON"}
    assert json.loads(f.readline())["result"]["pid"] == st["pid"]
    s.close()
    r = cli("serve", "--stop", "--json")
    assert json.loads(r.stdout)["stopped"] is True
    assert not client.status(home)["running"]
    assert not Path(paths.socket_path(home)).exists()
    assert json.loads(cli("serve", "--status", "--json").stdout)["running"] is False


def test_one_daemon_per_home(home):
    assert client.spawn(home, force=True)
    st = wait_running(home)
    r = cli("serve", timeout=120)  # a second one in the foreground exits at once
    assert r.returncode == 0 and "already serves" in r.stderr
    assert client.spawn(home) is False  # alive: no new spawn
    assert client.status(home)["pid"] == st["pid"]


def test_a_stale_socket_is_replaced(home):
    path = paths.socket_path(home)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()  # the file stays, nobody listens: a daemon that crashed
    assert Path(path).exists() and not client.status(home)["running"]
    assert client.request({"op": "ping"}, 0.5, home) is None
    assert client.spawn(home, force=True)
    assert wait_running(home)["running"]


def test_the_daemon_sees_events_hooks_appended_since(home, repo):
    hook(repo, "Read", "src/auth/login.py")
    client.spawn(home, force=True)
    wait_running(home)
    first = client.call("recall", 30, home, query="login billing", project=str(repo))
    assert [r["path"] for r in first] == ["src/auth/login.py"]
    hook(repo, "Read", "src/billing.py")
    again = client.call("recall", 30, home, query="login billing", project=str(repo))
    assert {r["path"] for r in again} == {"src/auth/login.py", "src/billing.py"}
    assert client.call("stats", 30, home)["events"] == 2


def test_the_daemon_exits_when_idle(home):
    p = subprocess.Popen([sys.executable, "-m", "brainbox.cli.daemon", "--serve", "--idle", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.wait(timeout=120) == 0
    assert not Path(paths.socket_path(home)).exists()
    assert client.lock_free(home)


def test_a_prompt_hook_starts_the_daemon_and_still_answers(home, repo, monkeypatch):
    for s in range(3):
        hook(repo, "Read", "src/auth/login.py", f"p{s}")
    monkeypatch.setenv("BRAINBOX_HOOK_BUDGET_PROMPT", "30")  # a loaded test machine
    p = {"session_id": "s9", "cwd": str(repo), "hook_event_name": "UserPromptSubmit",
         "prompt": "the login page"}
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "hook", "claude",
                        "UserPromptSubmit"], input=json.dumps(p), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0
    ctx = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "src/auth/login.py" in ctx  # answered in-process while the daemon starts
    wait_running(home)
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "hook", "claude",
                        "UserPromptSubmit"], input=json.dumps(p), capture_output=True,
                       text=True, timeout=120)
    assert "src/auth/login.py" in json.loads(r.stdout)["hookSpecificOutput"][
        "additionalContext"]
    assert client.status(home)["requests"] >= 1
    conn = dbmod.connect()  # one in-process, one handed to the daemon: one event each
    try:
        assert sum(e["kind"] == "prompt" for e in dbmod.iter_events(conn)) == 2
    finally:
        conn.close()


def test_hooks_fold_through_the_daemon_at_stop(home, repo, monkeypatch):
    for s in range(3):
        hook(repo, "Read", "src/auth/login.py", f"p{s}")
    client.spawn(home, force=True)
    wait_running(home)
    monkeypatch.setenv("BRAINBOX_HOOK_BUDGET_PROMPT", "30")
    handler.remember("s1", {"after_id": 0, "at": 0, "project": str(repo), "chars": 100,
                          "items": [{"path": "src/auth/login.py", "rank": 1, "via": None}]})
    stop = {"session_id": "s1", "cwd": str(repo), "hook_event_name": "Stop"}
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "hook", "claude", "Stop"],
                       input=json.dumps(stop), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout == ""
    stats = client.call("stats", 30, home)
    assert stats["watermark"] == stats["events"] == 5  # 3 tools, stop, feedback: all folded


HEAVY = ("brainbox.cli.hookmap", "brainbox.recorder", "brainbox.events", "brainbox.redact",
         "brainbox.storage.db", "sqlite3", "_sqlite3", "numpy", "click", "hashlib")
RUN_HOOK = hook_script(HEAVY)


def hook_process(event, payload):
    """A hook process: (its output, the heavy modules it imported)."""
    import ast

    r = subprocess.run([sys.executable, "-c", RUN_HOOK, event], input=json.dumps(payload),
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    return r.stdout, ast.literal_eval(r.stderr.strip().rsplit("\n", 1)[-1])


def stored(kind):
    conn = dbmod.connect()
    try:
        return [e for e in dbmod.iter_events(conn) if e["kind"] == kind]
    finally:
        conn.close()


def test_prompt_start_and_stop_hooks_hand_their_payload_to_the_daemon(home, repo,
                                                                      monkeypatch):
    for s in range(3):
        hook(repo, "Read", "src/auth/login.py", f"p{s}")
    monkeypatch.setenv("BRAINBOX_HOOK_BUDGET_PROMPT", "30")  # a loaded test machine
    client.spawn(home, force=True)
    wait_running(home)
    before = client.status(home)["requests"]
    p = {"session_id": "s9", "cwd": str(repo), "hook_event_name": "UserPromptSubmit",
         "prompt": "the login page"}
    out, heavy = hook_process("UserPromptSubmit", p)
    ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "src/auth/login.py — matches query" in ctx
    assert heavy == []  # mapped, normalised and recorded by the daemon
    assert client.status(home)["requests"] > before
    assert [e["prompt"] for e in stored("prompt")] == ["the login page"]  # exactly once
    start = {"session_id": "s10", "cwd": str(repo), "hook_event_name": "SessionStart",
             "source": "startup"}
    out, heavy = hook_process("SessionStart", start)
    assert "src/auth/login.py" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert heavy == [] and len(stored("session_start")) == 1
    hook(repo, "Edit", "src/auth/login.py", "s9")
    out, heavy = hook_process("Stop", {"session_id": "s9", "cwd": str(repo),
                                       "hook_event_name": "Stop"})
    assert out == "" and heavy == []
    [fb] = stored("feedback")
    assert fb["meta"]["items"][0]["path"] == "src/auth/login.py" and fb["meta"]["items"][0][
        "used"]
    assert len(stored("session_end")) == 1
    # the daemon gone: the next prompt records itself, nothing is lost or doubled
    client.stop(home, wait=30)
    out, heavy = hook_process("UserPromptSubmit", dict(p, prompt="the login page again"))
    assert "src/auth/login.py" in out and "brainbox.recorder" in heavy
    assert [e["prompt"] for e in stored("prompt")] == ["the login page", "the login page again"]
    assert not (Path(spool.spool_dir()).exists() and list(Path(spool.spool_dir()).iterdir()))


def test_client_paths_are_the_homes_without_importing_storage(tmp_path, monkeypatch):
    # one rule (brainbox.paths) for the client, the daemon and storage's callers
    home = str(tmp_path / "h" / ".." / "h2/")
    monkeypatch.setenv("BRAINBOX_HOME", home)
    assert paths.db_path() == os.path.abspath(os.path.join(home, "brainbox.db"))
    assert paths.socket_path() == paths.socket_path(Path(home))
    monkeypatch.setenv("BRAINBOX_DB", "rel/x.db")
    assert paths.db_path() == os.path.abspath("rel/x.db")
    monkeypatch.delenv("BRAINBOX_HOME")
    monkeypatch.delenv("BRAINBOX_DB")
    assert paths.db_path() == os.path.abspath(os.path.expanduser("~/.brainbox/brainbox.db"))


# --------------------------------------------------------------------------- fairness (D14)


def test_slow_clients_do_not_starve_a_ping(home, monkeypatch):
    """One client trickles a byte a second, one connects and sends nothing: a third
    client's ping is answered while both are still connected (issue 13 item 14)."""
    monkeypatch.setenv("BRAINBOX_DAEMON_DEADLINE", "60")  # long enough for a loaded machine
    client.spawn(home, force=True)
    wait_running(home)
    path = paths.socket_path(home)
    trickle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    trickle.connect(path)
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(path)
    stop = {"now": False}

    def dribble():
        for ch in b'{"op": "ping"':  # never the newline: the request never ends
            if stop["now"]:
                return
            try:
                trickle.send(bytes([ch]))
            except OSError:
                return
            time.sleep(1.0)

    import threading

    t = threading.Thread(target=dribble, daemon=True)
    t.start()
    try:
        time.sleep(1.5)  # both slow clients are in the daemon's hands
        answer = client.request({"op": "ping"}, 30.0, home)
        assert answer and answer["ok"], answer
        for s in (trickle, silent):  # still connected: neither was dropped to make room
            s.setblocking(False)
            with pytest.raises(BlockingIOError):
                s.recv(1)
    finally:
        stop["now"] = True
        trickle.close()
        silent.close()
        t.join(timeout=30)


def test_a_trickling_request_is_cut_at_the_total_deadline(home, monkeypatch):
    monkeypatch.setenv("BRAINBOX_DAEMON_DEADLINE", "2")
    client.spawn(home, force=True)
    wait_running(home)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(paths.socket_path(home))
    s.settimeout(0.5)
    closed = False
    try:
        for ch in b'{"op": "ping", "pad": "' + b"x" * 200:  # 0.5 s a byte: 100 s in all
            try:
                s.send(bytes([ch]))
                if s.recv(1) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except OSError:
                closed = True
                break
    finally:
        s.close()
    assert closed  # the daemon hung up long before the request could have finished
