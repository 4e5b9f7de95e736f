"""The CLI contract: JSON shapes, exit codes, bad input, cold-start imports."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from brainbox.cli.app import cli
from brainbox.cli.entry import main as entry_main


def run(*args, stdin=None, env=None):
    return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", *args], input=stdin,
                          capture_output=True, text=True, env=env)


def invoke(*args, input=None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


@pytest.fixture
def auth_memory(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "auth").mkdir(parents=True)
    for s in range(5):
        for i, (tool, f) in enumerate((("Read", "src/auth/login.py"),
                                       ("Edit", "src/auth/session.py"))):
            assert entry_main(["record", "--session", f"s{s}", "--cwd", str(repo / "src"),
                               "--tool", tool, "--file", str(repo / f),
                               "--at", f"2026-01-0{s + 1}T10:00:0{i}Z"]) == 0
    return repo


def test_record_then_recall_login_ranks_login_with_its_evidence(auth_memory):
    """login.py is recalled for "login" with its channel ranks and a probability; no edge
    (the associative channel, which gives the edge login.py -> session.py as `via`, has
    weight 0 by default: brainbox.recall; tests/test_memory.py checks the edge with the
    paper's weights)."""
    out = invoke("recall", "login", "--cwd", str(auth_memory), "--json")
    data = json.loads(out.stdout)
    assert {"query", "results", "elapsed_ms"} <= set(data)
    hit = data["results"][0]
    assert hit["path"] == "src/auth/login.py"
    assert 0 < hit["confidence"] <= 1
    assert hit["via"] is None and hit["channels"]["lexical"] == 1
    assert "associative" not in hit["channels"]
    assert all(isinstance(v, int) for v in hit["channels"].values())


def test_nonsense_query_gives_empty_results(auth_memory):
    data = json.loads(invoke("recall", "zyzzyva quux", "--cwd", str(auth_memory), "--json").stdout)
    assert data["results"] == []


def test_predict_explain_stats_decay_rebuild_forget_speak_json(auth_memory):
    cwd = str(auth_memory)
    pred = json.loads(invoke("predict", "--session", "s4", "--json").stdout)
    assert [t["tool"] for t in pred["tools"]][:2] and len(pred["tools"]) <= 3
    exp = json.loads(invoke("explain", "src/auth/session.py", "--query", "login", "--cwd", cwd,
                            "--json").stdout)
    assert exp["incoming"][0]["source"] in ("src/auth/login.py", "Edit")
    st = json.loads(invoke("stats", "--json").stdout)
    assert st["events"] == 10 and st["resources"]["file"] == 2 and st["associations"] > 0
    assert st["db_bytes"] > 0
    dec = json.loads(invoke("decay", "--now", "2027-01-01T00:00:00Z", "--yes", "--json").stdout)
    assert dec["associations"] < st["associations"]
    reb = json.loads(invoke("rebuild", "--json").stdout)
    assert reb["events"] == 11
    fg = json.loads(invoke("forget", "src/auth/session.py", "--cwd", cwd, "--json").stdout)
    assert fg["deleted_events"] == 5
    data = json.loads(invoke("recall", "session", "--cwd", cwd, "--json").stdout)
    assert all(r["path"] != "src/auth/session.py" for r in data["results"])


def test_jsonl_stores_good_lines_and_reports_bad_ones_by_number(tmp_path):
    lines = [
        json.dumps({"session": "s", "cwd": "/r", "tool": "Read", "files": ["/r/a.py"]}),
        "{not json",
        json.dumps({"cwd": "/r", "tool": "Read"}),
        "",
        json.dumps({"session": "s", "cwd": "/r", "prompt": "hello"}),
        json.dumps([1, 2]),
    ]
    p = run("record", "--jsonl", "-", "--json", stdin="\n".join(lines))
    assert p.returncode == 1
    out = json.loads(p.stdout)
    assert out["recorded"] == 2
    assert [r["line"] for r in out["rejected"]] == [2, 3, 6]
    assert "line 2" in p.stderr and "line 3" in p.stderr
    st = json.loads(invoke("stats", "--json").stdout)
    assert st["events"] == 2


def test_usage_error_exits_2_and_domain_error_exits_1(tmp_path):
    assert run("record", "--exit-code", "x").returncode == 2
    assert run("recall").returncode == 2
    bad = tmp_path / "foreign.db"
    bad.write_bytes(b"garbage" * 50)
    p = run("--db", str(bad), "stats")
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "not a SQLite" in p.stderr
    p = run("record", "--session", "s", "--tool", "Read", "--at", "yesterday")
    assert p.returncode == 2 and "ISO 8601" in p.stderr and "--at" in p.stderr


def test_import_brainbox_pulls_no_numpy_or_numba():
    p = subprocess.run([sys.executable, "-X", "importtime", "-c", "import brainbox"],
                       capture_output=True, text=True)
    mods = {line.split("|")[-1].strip() for line in p.stderr.splitlines()}
    assert "brainbox" in mods
    assert not any(m.split(".")[0] in ("numpy", "numba", "scipy", "click") for m in mods)


def test_record_process_imports_stdlib_only(tmp_path):
    code = ("import sys; from brainbox.cli.entry import main; "
            f"main(['record','--session','s','--cwd',{str(tmp_path)!r},'--tool','Read']); "
            "bad=[m for m in sys.modules if m.split('.')[0] in "
            "('numpy','numba','scipy','click','sqlean')]; print(bad)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.stdout.strip().splitlines()[-1] == "[]", p.stderr


def test_demo_runs_and_reports(tmp_path):
    out = invoke("demo", "--sessions", "6", "--json")
    data = json.loads(out.stdout)
    assert data["stats"]["events"] == 240
    assert data["recalls"][-1]["results"] == []  # the nonsense query
    assert any(r["results"] for r in data["recalls"][:-1])
    assert len(data["predict"]) == 3


@pytest.mark.slow  # 142 s in one loaded run of the suite (README, Tests)
def test_warmup_fills_the_numba_cache_and_a_fresh_process_loads_it(tmp_path):
    env = dict(__import__("os").environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    first = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "warmup", "--json"],
                           capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr
    assert len(json.loads(first.stdout)["kernels"]) >= 8
    cached = {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*.nb*")}
    assert len([p for p in cached if p.suffix == ".nbi"]) >= 5
    # a second process loads every kernel from the cache: nothing is compiled or rewritten
    second = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "warmup", "--json"],
                            capture_output=True, text=True, env=env)
    assert second.returncode == 0
    again = {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*.nb*")}
    assert again == cached


def test_record_says_when_a_file_is_outside_the_project_instead_of_dropping_it_silently(
        tmp_path):
    """A relative --file is taken from the folder brainbox runs in, not --cwd: a file that
    lands outside the project was dropped with "recorded 1 event" and nothing else."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    p = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "record", "--session", "s",
                        "--cwd", str(repo), "--tool", "Read", "--file", "src/a.py", "--file",
                        str(repo / "src" / "b.py"), "--json"], capture_output=True, text=True,
                       cwd=elsewhere)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["recorded"] == 1 and out["dropped_files"] == [str(elsewhere / "src" / "a.py")]
    (line,) = p.stderr.strip().splitlines()
    assert "src/a.py" in line and "outside the project" in line and str(repo) in line
