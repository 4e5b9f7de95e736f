"""Commands that compute nothing start without numpy, scipy or numba (issue 13 item 16).

Behaviour, not timing: each command runs as a real `brainbox` process under
`python -X importtime`, and the test reads which modules it imported. The timings are in
benchmarks/, and in the report that went with this change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("numpy", "scipy", "numba")


def run(args, env, *, cwd=None, stdin=None, timeout=600):
    """`brainbox ARGS` in a fresh interpreter with -X importtime; (proc, imported names)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "brainbox.cli.entry", *args],
        env=env, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=timeout,
        check=False)
    mods = set()
    err = []
    for line in proc.stderr.splitlines():
        if line.startswith("import time:"):
            name = line.rsplit("|", 1)[-1].strip()
            mods.add(name.split(".")[0])
        else:
            err.append(line)
    proc.stderr = "\n".join(err)
    return proc, mods


@pytest.fixture
def env(tmp_path):
    e = dict(os.environ)
    e["BRAINBOX_HOME"] = str(tmp_path / "home")
    e.pop("BRAINBOX_DB", None)
    e["HOME"] = str(tmp_path)
    return e


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "src" / "auth").mkdir(parents=True)
    for name in ("login.py", "session.py"):
        (root / "src" / "auth" / name).write_text("x = 1\n")
    return root


def _events(root, n=6):
    lines = []
    for i in range(n):
        lines.append({"session": f"s{i % 2}", "cwd": str(root), "prompt": "fix the login bug"})
        lines.append({"session": f"s{i % 2}", "cwd": str(root), "tool": "Read",
                      "files": ["src/auth/login.py"]})
        lines.append({"session": f"s{i % 2}", "cwd": str(root), "tool": "Edit",
                      "files": ["src/auth/session.py"]})
    lines.append({"session": "s0", "cwd": str(root), "tool": "Bash", "command": "pytest",
                  "exit_code": 1, "error": "KeyError: 'user_id'"})
    return "".join(json.dumps(x) + "\n" for x in lines)


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["stats", "--help"],
                                  ["serve", "--status"], ["uninstall", "--claude", "--json"]])
def test_commands_that_compute_nothing_import_no_numpy_scipy_or_numba(env, args):
    proc, mods = run(args, env)
    assert proc.returncode == 0, proc.stderr
    assert not mods & set(HEAVY), f"brainbox {' '.join(args)} imported {mods & set(HEAVY)}"


def test_doctor_imports_no_numpy_scipy_or_numba(env):
    proc, mods = run(["doctor", "--no-latency"], env)
    assert proc.returncode in (0, 1), proc.stderr  # 1: it found a problem (no hooks here)
    assert proc.stdout.strip()
    assert not mods & set(HEAVY), f"brainbox doctor imported {mods & set(HEAVY)}"


def test_stats_is_answered_from_sql_without_numpy_and_equals_the_folded_stats(env, project):
    proc, _ = run(["record", "--jsonl", "-"], env, stdin=_events(project))
    assert proc.returncode == 0, proc.stderr
    first, mods = run(["stats", "--json"], env)  # folds the log and saves the state
    assert first.returncode == 0, first.stderr
    folded = json.loads(first.stdout)
    assert folded["events"] == 19 and folded["resources"]["file"] == 2
    assert folded["resources"]["error"] == 1  # every kind name, as the engine spells it
    second, mods = run(["stats", "--json"], env)
    assert second.returncode == 0, second.stderr
    assert not mods & set(HEAVY), f"stats imported {mods & set(HEAVY)}"
    assert json.loads(second.stdout) == folded
    # Events past the saved state: stats must still count them (it folds, in-process).
    run(["record", "--jsonl", "-"], env, stdin=_events(project, 1))
    third, _ = run(["stats", "--json"], env)
    assert json.loads(third.stdout)["events"] == 23


def test_stats_human_output_is_readable_lines_not_dict_reprs(env, project):
    run(["record", "--jsonl", "-"], env, stdin=_events(project))
    proc, _ = run(["stats"], env)
    assert proc.returncode == 0, proc.stderr
    assert "{" not in proc.stdout and "'" not in proc.stdout, proc.stdout
    assert "events: 19" in proc.stdout
    assert "files: 2" in proc.stdout



def _wait_daemon(home, timeout=300):
    import time

    from brainbox.cli import client

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.status(home)["running"]:
            return
        time.sleep(0.2)
    log = home / client.LOG_NAME
    raise AssertionError(f"daemon did not start: {log.read_text() if log.exists() else ''}")


def test_recall_predict_and_explain_use_the_warm_daemon_and_answer_as_in_process(env,
                                                                                project):
    from pathlib import Path

    from brainbox.cli import client

    home = Path(env["BRAINBOX_HOME"])
    run(["record", "--jsonl", "-"], env, stdin=_events(project))
    query = ["recall", "fix the login bug", "--cwd", str(project), "--json"]
    predict = ["predict", "--session", "s1", "--json"]
    explain = ["explain", "auth/login.py", "-q", "fix the login bug", "--json"]
    # run in project/src: the path is relative to the client's folder, not the daemon's
    alone, _ = run(query, env)
    alone_p, _ = run(predict, env)
    alone_e, _ = run(explain, env, cwd=str(project / "src"))
    assert alone_e.returncode == 0, alone_e.stderr
    assert alone.returncode == 0 and alone_p.returncode == 0, alone.stderr + alone_p.stderr
    assert json.loads(alone.stdout)["served_by"] == "process"
    try:
        proc, _ = run(["serve", "--detach"], env)
        assert proc.returncode == 0, proc.stderr
        _wait_daemon(home)
        warm, mods = run(query, env, cwd=str(project / "src"))
        assert warm.returncode == 0, warm.stderr
        assert not mods & set(HEAVY), f"recall with a daemon imported {mods & set(HEAVY)}"
        a, b = json.loads(alone.stdout), json.loads(warm.stdout)
        assert b["served_by"] == "daemon"
        assert b["results"] == a["results"] and a["results"]
        assert a["results"][0]["path"] == "src/auth/login.py"
        warm_p, mods = run(predict, env)
        assert not mods & set(HEAVY), f"predict with a daemon imported {mods & set(HEAVY)}"
        assert json.loads(warm_p.stdout)["tools"] == json.loads(alone_p.stdout)["tools"]
        warm_e, mods = run(explain, env, cwd=str(project / "src"))
        assert warm_e.returncode == 0, warm_e.stderr
        assert not mods & set(HEAVY), f"explain with a daemon imported {mods & set(HEAVY)}"
        e_warm, e_alone = json.loads(warm_e.stdout), json.loads(alone_e.stdout)
        assert (e_warm["served_by"], e_alone["served_by"]) == ("daemon", "process")
        assert e_warm | {"served_by": 0} == e_alone | {"served_by": 0}
        assert e_warm["path"] == "src/auth/login.py"
        # not in memory: the daemon cannot answer, and the process says so (exit 1)
        missing, _ = run(["explain", "nowhere.py", "-q", "x", "--cwd", str(project)], env)
        assert missing.returncode == 1 and "not in memory" in missing.stderr
        # A daemon serving another database is not asked: --db is honoured.
        other, _ = run(["--db", str(home / "other.db"), *query], env)
        assert json.loads(other.stdout) | {"elapsed_ms": 0} == {
            "query": "fix the login bug", "results": [], "served_by": "process",
            "elapsed_ms": 0}
    finally:
        client.stop(home, wait=10)


def test_version_is_answered_without_click_and_matches_the_installed_metadata(env):
    from importlib.metadata import version

    proc, mods = run(["--version"], env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"brainbox, version {version('brainbox')}\n"
    assert not {"click", "sqlite3", "email"} & mods, mods & {"click", "sqlite3", "email"}


# The code index's heavy dependencies (issue 16): tree-sitter parses, onnxruntime embeds,
# sqlite-vec searches vectors; none is for `import brainbox`, a hook or the record path.
INDEX_DEPS = ("tree_sitter", "onnxruntime", "sqlite_vec")


@pytest.mark.parametrize("event,tool_input", [
    ("PostToolUse", {"tool_name": "Edit", "tool_input": {"file_path": "src/auth/login.py"},
                     "tool_response": {}}),
    ("UserPromptSubmit", {"prompt": "fix the login bug"}),
])
def test_the_hooks_import_no_tree_sitter_onnxruntime_or_sqlite_vec(env, project, event,
                                                                    tool_input):
    payload = json.dumps({"session_id": "s", "cwd": str(project), "hook_event_name": event,
                          **tool_input})
    proc, mods = run(["hook", "claude", event], env, stdin=payload)
    assert proc.returncode == 0, proc.stderr
    assert not mods & set(INDEX_DEPS), f"the {event} hook imported {mods & set(INDEX_DEPS)}"


def test_import_brainbox_and_record_import_none_of_the_index_deps_and_the_probe_sees_them(
        env, project):
    proc, mods = run(["record", "--session", "s", "--cwd", str(project), "--tool", "Read",
                      "--file", "src/auth/login.py"], env)
    assert proc.returncode == 0, proc.stderr
    assert not mods & set(INDEX_DEPS), mods & set(INDEX_DEPS)
    code = "import brainbox, brainbox.codesearch, brainbox.embed, brainbox.codevectors"
    light = subprocess.run([sys.executable, "-X", "importtime", "-c", code], env=env,
                           capture_output=True, text=True, check=False)
    names = {ln.rsplit("|", 1)[-1].strip().split(".")[0] for ln in light.stderr.splitlines()
             if ln.startswith("import time:")}
    assert light.returncode == 0 and "brainbox" in names
    assert not names & set(INDEX_DEPS), names & set(INDEX_DEPS)
    pytest.importorskip("onnxruntime")
    # the probe sees the import when a model is loaded (any model: this one is not ONNX)
    bad = project / "not-a-model.onnx"
    bad.write_bytes(b"junk")
    heavy = subprocess.run(
        [sys.executable, "-X", "importtime", "-c",
         (f"from brainbox import embed\ntry:\n    embed.load({str(bad)!r})\n"
          f"except embed.EmbedError as e:\n    print(e)")],
        env=env, capture_output=True, text=True, check=False)
    assert "cannot be loaded" in heavy.stdout
    assert "onnxruntime" in {ln.rsplit("|", 1)[-1].strip().split(".")[0]
                             for ln in heavy.stderr.splitlines() if ln.startswith("import time:")}
