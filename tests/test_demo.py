"""`brainbox demo` as a newcomer runs it: a real process, a fresh home (issue 13 item 19)."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def demo(tmp_path, *args, **extra_env):
    env = dict(os.environ, BRAINBOX_HOME=str(tmp_path / "home"), TMPDIR=str(tmp_path),
               **extra_env)
    env.pop("BRAINBOX_DB", None)
    return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "demo", *args],
                          env=env, capture_output=True, text=True, timeout=900, check=False)


def test_the_demo_never_names_a_file_it_deletes_and_explains_its_numbers(tmp_path):
    # An empty kernel cache, as after `pip install`; Python kernels, so nothing compiles here.
    r = demo(tmp_path, NUMBA_CACHE_DIR=str(tmp_path / "cold"), NUMBA_DISABLE_JIT="1")
    assert r.returncode == 0, r.stderr
    assert "brainbox-demo-" not in r.stdout + r.stderr  # the temporary folder, gone by now
    assert "a temporary database" in r.stdout
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("brainbox-demo-")]
    # a file's confidence is a probability; the tool scores are not
    assert "confidence: the probability" in r.stdout and "not a probability" in r.stdout
    first_run = [ln for ln in r.stderr.splitlines() if "first run" in ln]
    assert len(first_run) == 1 and "warmup" in first_run[0], r.stderr


def test_the_demo_keeps_and_names_the_file_given_with_db(tmp_path):
    db = tmp_path / "kept.db"
    r = demo(tmp_path, "--db", str(db))
    assert r.returncode == 0, r.stderr
    assert db.is_file() and str(db) in r.stdout and "kept" in r.stdout


def test_the_demo_asks_each_held_out_session_its_own_prompt_and_marks_only_true_hits(tmp_path):
    r = demo(tmp_path, "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    held = [q for q in data["recalls"] if q.get("session")]
    assert len(held) == 3
    for q in held:
        # asked before the session was recorded: the memory had not seen its files used yet
        assert q["query"].startswith("fix the ") and q["opened"]
        for res in q["results"]:
            assert res["opened"] == (res["path"] in q["opened"])
    assert data["recalls"][-1]["results"] == []  # the nonsense query: nothing
    nxt = data["next_tool"]
    assert nxt["actual"] and len(nxt["predicted"]) == 3
    assert nxt["hit"] == (nxt["actual"] in [t["tool"] for t in nxt["predicted"]])
