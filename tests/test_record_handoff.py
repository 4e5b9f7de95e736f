"""A tool call's hook hands its raw payload to a warm daemon (`record` op, issue 20), which
acknowledges only once the event is committed; without the receipt in time the hook
records the event itself under the same uid. Real daemons and real hook processes: every
event is stored exactly once, whoever writes it, and the hook exits 0."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from brainbox import paths
from brainbox.cli import client, wire
from brainbox.cli.service import Service
from tests.records import git_repo, hook_script, running_daemon, stored_events

HEAVY = ("sqlite3", "brainbox.cli.hookmap", "brainbox.recorder", "brainbox.redact")
RUN_HOOK = hook_script(HEAVY)


@pytest.fixture
def home(brainbox_home, monkeypatch):
    brainbox_home.mkdir(mode=0o700, parents=True, exist_ok=True)
    monkeypatch.setenv("BRAINBOX_NO_BACKGROUND_WARMUP", "1")
    monkeypatch.setenv("BRAINBOX_HOOK_BUDGET_TOOL", "30")  # a loaded test machine
    yield brainbox_home
    client.stop(brainbox_home, wait=10)


@pytest.fixture
def repo(tmp_path):
    return git_repo(tmp_path / "repo", ["src/a.py"])


def payload(repo, n, secret=""):
    return {"session_id": "s1", "cwd": str(repo), "hook_event_name": "PostToolUse",
            "tool_name": "Bash", "tool_use_id": f"t{n}",
            "tool_input": {"command": f"echo run{n} {secret}".strip()},
            "tool_response": {"stdout": f"run{n}", "stderr": "", "exit_code": 0}}


def run_hook(p, event="PostToolUse", **env):
    """A real hook process: (its stdout, the heavy modules it imported)."""
    import ast

    r = subprocess.run([sys.executable, "-c", RUN_HOOK, event], input=json.dumps(p),
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **env))
    assert r.returncode == 0, r.stderr
    return r.stdout, ast.literal_eval(r.stderr.strip().rsplit("\n", 1)[-1])


def commands():
    return sorted(e["command"] for e in stored_events("tool"))


def uids() -> dict[str, str]:
    """command -> uid of the stored tool events (a command stored twice fails here)."""
    import sqlite3

    conn = sqlite3.connect(paths.db_path())
    try:
        rows = conn.execute("SELECT command, uid FROM events WHERE kind = 'tool'").fetchall()
    finally:
        conn.close()
    assert len(rows) == len({c for c, _ in rows}), rows
    return dict(rows)


def test_a_warm_daemon_records_the_tool_call_once_and_the_hook_imports_no_database(home,
                                                                                 repo):
    with running_daemon(home):
        before = client.status(home)["requests"]
        secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
        for n in range(3):
            out, heavy = run_hook(payload(repo, n, secret), BRAINBOX_RECORD_ACK_MS="20000")
            assert out == "" and heavy == []  # mapped, redacted and committed by the daemon
        assert client.status(home)["requests"] >= before + 3
    evs = stored_events("tool")
    assert sorted(e["command"].split()[1] for e in evs) == ["run0", "run1", "run2"]
    assert all(len(u) == 24 for u in uids().values())  # the hooks' ids
    assert secret not in repr(evs)  # redacted by the daemon before the commit
    assert not os.path.exists(os.path.join(paths.home(), "spool")) or not os.listdir(
        os.path.join(paths.home(), "spool"))


def test_without_a_daemon_the_hook_records_itself(home, repo):
    out, heavy = run_hook(payload(repo, 0))
    assert out == "" and "brainbox.recorder" in heavy
    with running_daemon(home):
        run_hook(payload(repo, 1), BRAINBOX_RECORD_ACK_MS="20000")
    # stopped: the socket is gone, the hook records itself
    out, heavy = run_hook(payload(repo, 2), BRAINBOX_RECORD_ACK_MS="20000")
    assert "brainbox.recorder" in heavy
    assert commands() == ["echo run0", "echo run1", "echo run2"]


class SilentSocket:
    """A socket of ours at the daemon's path that accepts, reads, and never answers (a
    wedged daemon), or closes after reading (`close_after_read`: one killed mid-handoff),
    or runs a real `Service` that commits and then loses its receipt (`commit_then_die`:
    killed between its commit and its ACK)."""

    def __init__(self, mode: str):
        self.mode = mode
        self.requests: list[dict] = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(paths.socket_path())
        self.sock.listen(8)
        self.open: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):  # one connection
        conn, _ = self.sock.accept()
        self.open.append(conn)
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = conn.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
        req = json.loads(buf)
        self.requests.append(req)
        if self.mode == "close_after_read":
            conn.close()
        elif self.mode == "commit_then_die":
            service = Service()
            try:
                self.answer = service.handle(req, ack=lambda c=conn: c.close() or False)
            finally:
                service.close()

    def close(self):
        self.sock.close()
        for c in self.open:
            c.close()
        os.unlink(paths.socket_path())


@pytest.mark.parametrize("mode", ["silent", "close_after_read", "commit_then_die"])
def test_a_daemon_that_never_acknowledges_costs_the_wait_not_the_event(home, repo, mode):
    run_hook(payload(repo, 0))  # the database exists (the fake service opens it)
    fake = SilentSocket(mode)
    try:
        # a wedged daemon costs the wait; the others close the connection themselves
        wait = "300" if mode == "silent" else "20000"
        out, heavy = run_hook(payload(repo, 1), BRAINBOX_RECORD_ACK_MS=wait)
        fake.thread.join(120)
    finally:
        fake.close()
    if mode == "commit_then_die":
        assert fake.answer["ok"], fake.answer  # the fake daemon committed first
    assert out == "" and "brainbox.recorder" in heavy  # it recorded itself
    [req] = fake.requests
    assert req["op"] == "record" and len(req["uid"]) == 24
    assert uids()["echo run1"] == req["uid"]  # once, whoever wrote it first
    assert commands() == ["echo run0", "echo run1"]


def test_a_stopped_daemon_then_resumed_stores_the_event_once(home, repo):
    """SIGSTOP: the hook connects (the kernel queues it), waits, records itself; resumed,
    the daemon commits the same uid: nothing doubles."""
    with running_daemon(home):
        run_hook(payload(repo, 0), BRAINBOX_RECORD_ACK_MS="20000")
        st = client.status(home)
        pid, r0 = st["pid"], st["requests"]
        os.kill(pid, signal.SIGSTOP)
        try:
            out, heavy = run_hook(payload(repo, 1), BRAINBOX_RECORD_ACK_MS="200")
        finally:
            os.kill(pid, signal.SIGCONT)
        assert out == "" and "brainbox.recorder" in heavy
        for k in range(1, 600):  # until a ping counts the record request before it
            if client.status(home)["requests"] - r0 - k >= 1:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the resumed daemon never read the queued request")
    assert commands() == ["echo run0", "echo run1"]


def test_a_killed_daemon_leaves_the_hook_to_record(home, repo):
    with running_daemon(home):
        run_hook(payload(repo, 0), BRAINBOX_RECORD_ACK_MS="20000")
        os.kill(client.status(home)["pid"], signal.SIGKILL)
        out, heavy = run_hook(payload(repo, 1), BRAINBOX_RECORD_ACK_MS="20000")
        assert out == "" and "brainbox.recorder" in heavy  # refused connection: the hook records
    assert commands() == ["echo run0", "echo run1"]


def test_the_record_op_refuses_a_missing_uid_and_acks_only_after_the_commit(home, repo):
    run_hook(payload(repo, 0))
    service = Service()
    seen = []
    try:
        req = {"op": "record", "agent": "claude", "event": "PostToolUse",
               "payload": payload(repo, 1), "at": time.time(), "cwd": str(repo),
               "budget": 5.0, "uid": "ab" * 12}
        bad = service.handle(dict(req, uid=None), ack=lambda: seen.append("early") or True)
        assert not bad["ok"] and "uid" in bad["error"] and seen == []

        def ack():
            seen.append([e["command"] for e in stored_events("tool")])
            return True

        assert service.handle(req, ack=ack)["ok"]
    finally:
        service.close()
    assert seen == [["echo run0", "echo run1"]]  # the receipt came after the commit
    assert wire.DURABLE_OPS == {"record"}
