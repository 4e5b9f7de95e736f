"""First use on an empty numba cache, through the real commands: `brainbox recall` and the
daemon answer at once with the kernels' Python versions (brainbox.jitmode) instead of
compiling for minutes, and a Python daemon gives way once the cache is warm.

Each test gets its own empty NUMBA_CACHE_DIR; the background warm-up stays off
(BRAINBOX_NO_BACKGROUND_WARMUP, set by conftest), so nothing compiles here at all: a
regression shows up as a timeout or as cache files in the empty folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from brainbox.cli import client


@pytest.fixture
def cold_env(tmp_path, brainbox_home):
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), BRAINBOX_NO_BACKGROUND_WARMUP="1",
               BRAINBOX_DAEMON="off")
    env.pop("NUMBA_DISABLE_JIT", None)
    env.pop("BRAINBOX_JIT", None)
    return env, cache


def bb(env, *args, cwd=None, timeout=240):
    return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", *args], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=timeout)


def cached_files(cache) -> list[str]:
    return [n for _, _, names in os.walk(cache) for n in names if n.endswith((".nbi", ".nbc"))]


def test_first_recall_on_an_empty_cache_answers_without_compiling(cold_env, tmp_path):
    env, cache = cold_env
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    for i in range(3):
        r = bb(env, "record", "--session", f"s{i}", "--tool", "Read",
               "--file", "src/auth/login.py", "--file", "src/auth/session.py", cwd=root)
        assert r.returncode == 0, r.stderr
    r = bb(env, "recall", "fix the login", "--json", cwd=root)
    assert r.returncode == 0, r.stderr
    paths = [it["path"] for it in json.loads(r.stdout)["results"]]
    assert "src/auth/login.py" in paths
    assert cached_files(cache) == []  # nothing compiled, nothing cached


def test_a_daemon_on_an_empty_cache_serves_and_gives_way_once_the_cache_is_warm(
        cold_env, brainbox_home):
    env, cache = cold_env
    env = dict(env, BRAINBOX_DAEMON="on")
    brainbox_home.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "brainbox.cli.entry", "serve"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not client.status(brainbox_home)["running"]:
            assert proc.poll() is None, "the daemon exited before serving"
            time.sleep(0.2)
        answer = client.request({"op": "recall", "query": "login", "project": "/"}, 30.0,
                                brainbox_home)
        assert answer is not None and answer.get("ok"), answer
        assert cached_files(cache) == []
        # the background warm-up finishing is its marker appearing
        marker = subprocess.run(
            [sys.executable, "-c",
             "from brainbox.kernels import _cache; print(_cache.marker_path('engine'))"],
            env=env, capture_output=True, text=True, check=True).stdout.strip()
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        with open(marker, "w") as fh:
            fh.write("{}")
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
