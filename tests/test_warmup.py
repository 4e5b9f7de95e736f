"""First use: the kernel mode policy, compile progress, `warmup`, the background warm-up
(issue 13 item 15)."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from brainbox import jitmode
from brainbox.kernels import _cache
from brainbox.workload import generate

ROOT = Path(__file__).resolve().parents[1]


def _events(n=200):
    return list(generate(events=n, files=20, sessions=5, seed=3))


def _record(db, events):
    from brainbox.memory import Memory

    with Memory.open(db) as mem:
        mem.record(events)


@pytest.fixture
def cold(tmp_path, monkeypatch):
    """An empty numba cache; the policy free to decide again in this process."""
    cache = tmp_path / "numba"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(cache))
    monkeypatch.delenv("NUMBA_DISABLE_JIT", raising=False)
    monkeypatch.delenv("BRAINBOX_JIT", raising=False)
    monkeypatch.setattr(jitmode, "_fixed", lambda: False)
    monkeypatch.setattr(_cache, "MODE", _cache.MODE)  # restored after the test
    return cache


# --- the policy ------------------------------------------------------------------------

def test_a_small_memory_on_a_cold_cache_runs_as_python_and_a_large_one_compiles(
        cold, tmp_path, monkeypatch):
    db = tmp_path / "m.db"
    assert jitmode.choose(db) == "python"  # no database yet
    _record(db, _events(200))
    assert jitmode.memory_size(db) == (200, 200)
    assert jitmode.choose(db) == "python"
    monkeypatch.setattr(jitmode, "PYTHON_MAX_PENDING", 100)  # 200 events to fold: compile
    assert jitmode.choose(db) == "numba"
    monkeypatch.setattr(jitmode, "PYTHON_MAX_PENDING", 1000)
    monkeypatch.setattr(jitmode, "PYTHON_MAX_EVENTS", 100)
    assert jitmode.choose(db) == "numba"


def test_a_warm_cache_compiles_and_the_environment_overrides(cold, tmp_path, monkeypatch):
    db = tmp_path / "m.db"
    marker = Path(_cache.marker_path("engine"))
    marker.parent.mkdir(parents=True)
    marker.write_text("{}")
    assert jitmode.is_warm()
    assert jitmode.choose(db) == "numba"
    monkeypatch.setenv("BRAINBOX_JIT", "python")
    assert jitmode.choose(db) == "python"
    marker.unlink()
    monkeypatch.setenv("BRAINBOX_JIT", "numba")
    assert jitmode.choose(db) == "numba"


def test_the_marker_is_keyed_by_the_kernels_source_numba_and_python(cold):
    path = _cache.marker_path("engine")
    assert path.startswith(os.path.join(str(cold), "kernels-" + _cache.source_hash()))
    assert f"numba{_cache.numba_version()}" in path
    assert f"py{sys.version_info[0]}{sys.version_info[1]}" in path


_FIRST_USE = r"""
import json, os, sys
from brainbox import jitmode
db, mode = sys.argv[1], sys.argv[2]
if mode == "policy":
    chosen = jitmode.prepare(db, background=False)
else:
    chosen = jitmode.force(mode)
from brainbox.memory import Memory
from brainbox.workload import generate
events = list(generate(events=200, files=20, sessions=5, seed=3))
with Memory.open(db) as mem:
    mem.record(events)
    res = [r.as_dict() for r in mem.recall("fix the auth login", project=events[0]["project"],
                                           session=events[-1]["session"])]
    res += [r.as_dict() for r in mem.recall("fix the auth login", project=events[0]["project"])]
    tools = mem.predict_tools(events[-1]["session"])
print(json.dumps({"mode": chosen, "numba": "numba" in sys.modules, "recall": res,
                  "predict": tools}))
"""


def _first_use(db, mode, env):
    out = subprocess.run([sys.executable, "-c", _FIRST_USE, str(db), mode], check=False,
                         env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), out.stderr


def test_first_recall_on_a_cold_cache_compiles_nothing_and_answers_as_compiled(tmp_path):
    cold_cache = tmp_path / "cold-numba"
    env = {k: v for k, v in os.environ.items() if k not in ("BRAINBOX_JIT", "NUMBA_DISABLE_JIT")}
    first, err = _first_use(tmp_path / "a.db", "policy", dict(env, NUMBA_CACHE_DIR=str(cold_cache)))
    assert first["mode"] == "python"
    assert not first["numba"]  # not even imported
    assert first["recall"] and first["predict"]
    assert not list(cold_cache.rglob("*.nb*"))  # nothing compiled, nothing cached
    assert "compil" not in err
    # the same memory through the compiled kernels (the suite's cache) answers the same
    compiled, _ = _first_use(tmp_path / "b.db", "numba", env)
    assert compiled["mode"] == "numba" and compiled["numba"]
    assert compiled["recall"] == first["recall"]
    assert compiled["predict"] == first["predict"]


# --- saying so when kernels compile -------------------------------------------------------

@pytest.fixture
def fresh_kernel():
    if os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"):
        pytest.skip("nothing compiles under NUMBA_DISABLE_JIT")
    import numba

    def make():
        @numba.njit(cache=False)
        def add_one(x):
            return x + 1

        return add_one

    return make


def test_a_compile_prints_one_line_at_start_and_one_at_the_end(fresh_kernel):
    err = io.StringIO()
    kernel = fresh_kernel()
    with jitmode.CompileReport(err, live=False) as report:
        assert kernel(1) == 2
        assert kernel(2) == 3  # compiled once
    lines = err.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("brainbox: compiling kernels (one time")
    assert jitmode.cache_dir() in lines[0]
    assert lines[1].startswith("brainbox: compiled 1 kernels in ")
    assert report.compiled == 1


def test_on_a_terminal_the_line_is_live_and_nothing_is_printed_without_a_compile(fresh_kernel):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    err = Tty()
    with jitmode.CompileReport(err, label="replay") as report:
        report.set_step("warm-up 1/2 fold")
        fresh_kernel()(1)
    out = err.getvalue()
    assert "\r" in out and "replay: warm-up 1/2 fold: compiling kernels (one time)" in out
    assert out.endswith(f"(one time; cached in {jitmode.cache_dir()})\n")
    quiet = io.StringIO()
    kernel = fresh_kernel()
    kernel(1)
    with jitmode.CompileReport(quiet, live=False):
        kernel(5)  # already compiled: no event, no output
    assert quiet.getvalue() == ""


def test_replay_says_it_compiles_and_leaves_compile_time_out_of_its_rate(
        fresh_kernel, monkeypatch, capsys):
    import time

    from brainbox.eval import runner

    kernel = fresh_kernel()

    def compiling_warmup():
        t = time.perf_counter()
        kernel(1)
        time.sleep(0.3)
        return time.perf_counter() - t

    monkeypatch.setattr(runner, "warmup", compiling_warmup)
    doc = runner.run(synthetic=300, engine="python", progress=False, bootstrap=10)
    tm = doc["timings"]
    assert tm["compile_s"] >= 0.3
    assert tm["events_per_s"] == pytest.approx(tm["events"] / (tm["replay_s"] - tm["compile_s"]))
    err = capsys.readouterr().err
    assert "replay: compiling kernels (one time" in err
    assert "replay: compiled 1 kernels in " in err


# --- warmup and the background warm-up -------------------------------------------------

def _warmup_json(env):
    out = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "warmup", "--no-replay",
                          "--json"], check=False, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), out.stderr


@pytest.mark.slow
def test_warmup_reports_numbas_real_cache_dir_when_none_is_set_and_marks_it_warm(tmp_path):
    """NUMBA_CACHE_DIR unset: the kernels are cached under ~/.cache/brainbox/numba.

    The warm-up runs first into the suite's own cache, where every compiled test loads its
    kernels from: on a cold cache (a fresh clone, an edited kernel) it compiles there once
    for the whole suite, not again in a throwaway home. A copy of that cache in the home
    then has every kernel recall needs: the second warm-up compiles nothing."""
    suite = Path(os.environ["NUMBA_CACHE_DIR"])
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "BRAINBOX_JIT", "NUMBA_DISABLE_JIT")}
    filled, _ = _warmup_json(dict(env, NUMBA_CACHE_DIR=str(suite)))
    assert Path(filled["cache_dir"]).parent == suite
    home = tmp_path / "home"
    expected = home / ".cache" / "brainbox" / "numba" / Path(filled["cache_dir"]).name
    shutil.copytree(filled["cache_dir"], expected)
    (expected / Path(_cache.marker_path("engine")).name).unlink(missing_ok=True)  # not warm yet
    cached = {p: p.stat().st_mtime_ns for p in expected.rglob("*.nb*")}
    data, err = _warmup_json(dict(env, HOME=str(home)))
    assert data["cache_dir"] == str(expected)
    assert str(expected) in err.splitlines()[0]
    assert data["compiled"] == 0, err  # all loaded: the first warm-up cached them
    assert {p: p.stat().st_mtime_ns for p in expected.rglob("*.nb*")} == cached  # none rewritten
    assert len(list(expected.rglob("*.nbi"))) >= 20
    assert {"rank_files", "fold_touches", "predict_kernel", "rebuild_adjacency"} <= set(
        data["kernels"])
    marker = Path(str(expected) + _cache.marker_path("engine")[len(_cache.cache_dir()):])
    assert stat.S_IMODE(marker.stat().st_mode) == 0o600
    assert json.loads(marker.read_text())["kernels"] == data["kernels"]


def test_install_starts_the_warmup_in_the_background(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from brainbox import jitmode
    from brainbox.cli.app import cli

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    calls = []
    monkeypatch.setattr(jitmode, "spawn_background", lambda **kw: calls.append(kw) or 4242)
    res = CliRunner().invoke(cli, ["install", "--claude", "--user", "--json"],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert calls == [{}]


class FakePopen:
    """Records the spawn; holds a copy of the inherited lock fd, as the child would."""

    spawned: ClassVar[list] = []

    def __init__(self, argv, **kw):
        self.pid = 31337
        held = [os.dup(fd) for fd in kw.get("pass_fds", ())]
        FakePopen.spawned.append({"argv": argv, "held": held, **kw})


def test_the_background_warmup_is_detached_logged_0600_once_and_skipped_when_warm(
        cold, brainbox_home, monkeypatch):
    from brainbox import jitmode

    FakePopen.spawned = []
    monkeypatch.setattr(subprocess, "Popen", FakePopen)
    monkeypatch.delenv("BRAINBOX_NO_BACKGROUND_WARMUP", raising=False)
    monkeypatch.setenv("BRAINBOX_JIT", "python")  # this process's choice: not the child's
    assert jitmode.spawn_background() == 31337
    (child,) = FakePopen.spawned
    assert child["argv"][1:] == ["-m", "brainbox.cli.entry", "warmup"]
    assert child["start_new_session"] is True
    assert child["stdin"] == subprocess.DEVNULL
    assert "BRAINBOX_JIT" not in child["env"] and "NUMBA_DISABLE_JIT" not in child["env"]
    log = brainbox_home / jitmode.WARMUP_LOG
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(brainbox_home.stat().st_mode) == 0o700
    assert "warm-up started" in log.read_text()
    # while that warm-up runs (it holds the lock), no second one starts
    assert jitmode.spawn_background() is None
    assert len(FakePopen.spawned) == 1
    for fd in child["held"]:
        os.close(fd)  # the warm-up ended
    # neither does the switch
    monkeypatch.setenv("BRAINBOX_NO_BACKGROUND_WARMUP", "1")
    assert jitmode.spawn_background() is None
    assert len(FakePopen.spawned) == 1
    monkeypatch.delenv("BRAINBOX_NO_BACKGROUND_WARMUP")
    # a warm cache starts none
    for part in ("engine", "replay"):
        marker = Path(_cache.marker_path(part))
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("{}")
    assert jitmode.spawn_background() is None
    assert len(FakePopen.spawned) == 1


def test_the_progress_rate_leaves_the_warmup_out():
    from brainbox.eval.runner import Progress

    def rate(out):
        return float(out.getvalue().rsplit("events, ", 1)[1].split(" events/s")[0]
                     .replace(",", ""))

    out = io.StringIO()
    bar = Progress(None, stream=out, interval=0.0)
    bar.t0 -= 10_000.0  # started 10,000 s ago, 9,000 s of them warming up
    bar.update(0, 0, warm=9_000.0)
    bar.update(1, 100_000)
    assert 95 <= rate(out) <= 100.01  # 100,000 events in the 1,000 s after the warm-up
    bar.parallel = True  # workers warm up side by side: the longest warm-up counts
    bar.update(0, 0, warm=5_000.0)
    bar.update(0, 0, force=True)
    assert 95 <= rate(out) <= 100.01


def test_a_recall_imports_no_replay_or_baseline_kernels(tmp_path):
    """brainbox.kernels imports its modules on first use: a recall (compiled, the suite's
    cache) decorates and loads only the engine's kernels."""
    script = r"""
import json, sys
from brainbox import jitmode
jitmode.force("numba")
from brainbox.memory import Memory
from brainbox.workload import generate
events = list(generate(events=100, files=10, sessions=3, seed=5))
with Memory.open(sys.argv[1]) as mem:
    mem.record(events)
    mem.recall("fix the auth login", project=events[0]["project"])
    mem.predict_tools(events[-1]["session"])
print(json.dumps(sorted(m for m in sys.modules if m.startswith("brainbox.kernels."))))
"""
    env = {k: v for k, v in os.environ.items() if k not in ("BRAINBOX_JIT", "NUMBA_DISABLE_JIT")}
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "m.db")], check=False,
                         env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    loaded = set(json.loads(out.stdout))
    assert "brainbox.kernels.rank" in loaded and "brainbox.kernels.hebbian" in loaded
    assert not loaded & {"brainbox.kernels.baselines", "brainbox.kernels.replay"}
