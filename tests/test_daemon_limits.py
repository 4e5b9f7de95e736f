"""No leaked daemon (issue 17 item 5): bursts of real hook processes start one daemon at
most, it exits when idle (`BRAINBOX_DAEMON_IDLE`) and when over its memory ceiling
(`BRAINBOX_DAEMON_MAX_RSS_MB`), after the work in hand. Daemons are counted in /proc:
processes running `brainbox.cli.daemon --serve` whose folder is this test's home (the
spawner starts them there), so other homes' daemons on the machine are not counted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from brainbox import paths
from brainbox.cli import client, health
from tests import test_daemon
from tests.test_daemon import hook_process

home, repo = test_daemon.home, test_daemon.repo  # the fixtures: a home stopped after

HOOK = [sys.executable, "-m", "brainbox.cli.entry", "hook", "claude"]


def daemons(home: Path) -> set[int]:
    """Live processes serving (or starting to serve) `home`'s daemon."""
    want = os.path.realpath(home)
    found = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            if b"brainbox.cli.daemon" not in argv or b"--serve" not in argv:
                continue
            if os.readlink(f"/proc/{name}/cwd") == want:
                found.add(int(name))
        except OSError:
            continue  # gone meanwhile
    return found


class Watch:
    """Samples `daemons(home)` in a thread until stopped: the most seen at one moment,
    and every pid seen."""

    def __init__(self, home):
        self.home, self.most, self.seen = home, 0, set()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self._stop.is_set():
            now = daemons(self.home)
            self.most = max(self.most, len(now))
            self.seen |= now
            time.sleep(0.005)

    def stop(self):
        self._stop.set()
        self.thread.join(10)


def wait_until(cond, timeout=180.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} not reached within {timeout} s")


def payloads(repo, n):
    s = f"burst{n}"
    return [("UserPromptSubmit", {"session_id": s, "cwd": str(repo), "prompt": "the login",
                                  "hook_event_name": "UserPromptSubmit"}),
            ("SessionStart", {"session_id": s + "b", "cwd": str(repo), "source": "startup",
                              "hook_event_name": "SessionStart"}),
            ("UserPromptSubmit", {"session_id": s + "c", "cwd": str(repo),
                                  "prompt": "login again", "hook_event_name":
                                  "UserPromptSubmit"}),
            ("PostToolUse", {"session_id": s, "cwd": str(repo), "tool_name": "Read",
                             "hook_event_name": "PostToolUse", "tool_response": {},
                             "tool_input": {"file_path": str(repo / "src" / "auth" / "login.py")}})]


@pytest.mark.slow  # 200 hook processes
def test_fifty_hook_bursts_start_one_daemon_at_most_and_none_is_left_after_idle(home, repo):
    env = dict(os.environ, BRAINBOX_DAEMON_IDLE="3", BRAINBOX_HOOK_BUDGET_PROMPT="30",
               BRAINBOX_HOOK_BUDGET_TOOL="30")  # budgets for a loaded machine
    watch = Watch(home)
    try:
        for n in range(50):
            procs = []
            for event, payload in payloads(repo, n):
                p = subprocess.Popen([*HOOK, event], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
                procs.append(p)
            for p, (_, payload) in zip(procs, payloads(repo, n)):
                p.communicate(json.dumps(payload).encode(), timeout=180)
                assert p.returncode == 0
        assert watch.seen, "no hook started a daemon"
        wait_until(lambda: not daemons(home), what="the idle daemon's exit")
    finally:
        watch.stop()
    assert watch.most == 1, f"{watch.most} daemons at once (pids {sorted(watch.seen)})"
    assert client.lock_free(home) and not Path(paths.socket_path(home)).exists()
    ran = health.read_all()["claude"]
    # the daemon answered some, and recorded their success itself
    assert ran["UserPromptSubmit"]["last_success"] and ran["SessionStart"]["last_success"]
    log = (home / client.LOG_NAME).read_text()
    assert "already serves" not in log


def test_concurrent_spawners_take_turns_on_the_marker(home):
    """Two hooks that find no daemon at once: the second waits for the first's marker and
    starts nothing. The test holds the marker's lock as the first spawner would, with an
    old marker that an unserialised spawner would take as "no spawn lately"."""
    import fcntl

    marker = home / client.SPAWN_NAME
    marker.write_text("1")
    marker.chmod(0o600)
    os.utime(marker, (time.time() - 600, time.time() - 600))
    fd = os.open(marker, os.O_RDWR)
    result = []
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        t = threading.Thread(target=lambda: result.append(client.spawn(home)))
        t.start()
        time.sleep(0.5)  # the second spawner reaches the marker meanwhile (or later)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())  # the first one has just spawned
    finally:
        os.close(fd)  # releases the lock
    t.join(60)
    assert result == [False]
    assert not daemons(home)


def test_the_idle_exit_is_configured_by_the_environment(home):
    env = dict(os.environ, BRAINBOX_DAEMON_IDLE="1")
    p = subprocess.Popen([sys.executable, "-m", "brainbox.cli.daemon", "--serve"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(home))
    assert p.wait(timeout=180) == 0  # warm, then one idle second: no request ever came
    assert client.lock_free(home) and not Path(paths.socket_path(home)).exists()


def test_over_its_memory_ceiling_the_daemon_answers_the_hook_in_hand_then_exits(
        home, repo, monkeypatch):
    for s in range(3):  # something to answer with
        subprocess.run([*HOOK, "PostToolUse"], check=True, timeout=180, input=json.dumps(
            payloads(repo, s)[3][1]).encode())
    monkeypatch.setenv("BRAINBOX_HOOK_BUDGET_PROMPT", "30")  # a loaded machine
    # any real daemon holds more than 1 MiB: the first answered request finds it over
    env = dict(os.environ, BRAINBOX_DAEMON_MAX_RSS_MB="1")
    p = subprocess.Popen([sys.executable, "-m", "brainbox.cli.daemon", "--serve"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(home))
    try:
        # bound and listening once daemon.json exists (a ping would be its first request)
        wait_until(lambda: (home / client.INFO_NAME).exists() or p.poll() is not None,
                   what="the daemon's start")
        prompt = {"session_id": "m", "cwd": str(repo), "prompt": "the login",
                  "hook_event_name": "UserPromptSubmit"}
        out, heavy = hook_process("UserPromptSubmit", prompt)
        assert heavy == [] and "src/auth/login.py" in out  # the daemon's answer, not ours
        assert p.wait(timeout=180) == 0
        err = p.stderr.read().decode()
    finally:
        if p.poll() is None:
            p.kill()
    assert "over the ceiling of 1 MiB" in err, err
    assert client.lock_free(home) and not Path(paths.socket_path(home)).exists()
    # the daemon took the hook and recorded it before leaving: its health says so, and
    # the prompt is stored once, with nothing left in the spool
    assert health.read_all()["claude"]["UserPromptSubmit"]["last_success"]
    from brainbox import store

    conn = store.connect()
    try:
        assert [e["prompt"] for e in store.iter_events(conn) if e["kind"] == "prompt"] == [
            "the login"]
    finally:
        conn.close()
    spool = home / "spool"
    assert not (spool.exists() and any(spool.iterdir()))
