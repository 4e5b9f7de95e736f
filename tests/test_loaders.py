"""Trajectory loaders: hermetic fixtures first, then slices of the real development data
(``../shared/data``; those tests skip when it is absent)."""

import json
import re
import shutil
import sys
import warnings
from pathlib import Path

import pytest

from brainbox.eval.loaders import (
    FORMATS,
    Task,
    TrajectoryWarning,
    claude_code,
    detect,
    load,
    mini_swe_agent,
    openhands,
    parse_task_id,
    swe_agent,
)
from brainbox.eval.loaders.base import TaskBuilder, to_unix
from tests.records import ACTIONS, RECORD_KEYS

FIXTURES = Path(__file__).resolve().parent / "fixtures"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TRAJ = DATA / "trajectories"
EVENT_KEYS = RECORD_KEYS | {"project", "shown"}  # shown: the text a result showed


def real(name: str) -> Path:
    p = TRAJ / name
    if not p.exists():
        pytest.skip(f"development data {p} not present")
    return p


def check_task(t: Task) -> None:
    """Invariants every loaded task keeps, whatever its source."""
    repo, order = parse_task_id(t.id)
    assert (t.repo, t.order) == (repo, order)
    assert t.description.strip()
    assert t.project.startswith("/")
    for e in t.events:
        assert set(e) == EVENT_KEYS
        assert e["session"] and e["project"] == t.project
        assert e["kind"] in ("tool", "prompt")
        if e["kind"] == "tool":
            assert e["tool"] and e["action"] in ACTIONS and e["prompt"] is None
        else:
            assert e["prompt"] and e["tool"] is None
        for f in e["files"]:
            assert f.startswith(t.project + "/"), f
        assert e["at"] is None or isinstance(e["at"], float)
    for g in t.gold_read | t.gold_edit | t.created:
        assert not g.startswith(("/", "../")) and ".." not in g.split("/") and g, g
    assert t.created <= t.gold_edit


def load_all(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrajectoryWarning)
        return list(load(path, **kw))


# --------------------------------------------------------------------------- base


def test_parse_task_id_splits_owner_repo_and_pr():
    assert parse_task_id("sympy__sympy-20590") == ("sympy/sympy", 20590)
    assert parse_task_id("pylint-dev__pylint-7080") == ("pylint-dev/pylint", 7080)
    assert parse_task_id("fasterxml__jackson-databind-3371") == ("fasterxml/jackson-databind", 3371)
    assert parse_task_id("PlasmaFAIR__sdf-xarray-24") == ("PlasmaFAIR/sdf-xarray", 24)
    with pytest.raises(ValueError):
        parse_task_id("not-a-task")


def test_to_unix_reads_iso_and_numbers():
    assert to_unix("2025-12-15T21:14:16.375Z") == pytest.approx(1765833256.375)
    assert to_unix(1763510516) == 1763510516.0
    assert to_unix("garbage") is None and to_unix(None) is None


def test_builder_drops_outside_paths_and_keeps_gold_per_file_action():
    b = TaskBuilder("s", "/testbed", aliases=("/workspace/pkg__pkg__1.0",))
    b.tool(
        "Bash:cp",
        files=[("a.py", "read"), ("/tmp/x.py", "create"), ("b.py", "create")],
        action="edit",
        cwd="/testbed",
    )
    b.tool("Read", files=[("/workspace/pkg__pkg__1.0/c.py", "read")], action="read")
    b.tool(
        "Read",
        files=[("gone.py", "read")],
        action="read",
        error="File does not exist.",
        file_tool=True,
    )
    b.tool(
        "Bash:cat",
        files=[("d.py", "read"), ("e.py", "read")],
        action="read",
        error="cat: e.py: No such file or directory",
        exit_code=1,
    )
    t = b.task("pkg__pkg-1", "issue", "test", "x")
    assert t.events[0]["files"] == ["/testbed/a.py", "/testbed/b.py"]
    assert t.events[1]["files"] == ["/testbed/c.py"]
    assert t.gold_read == {"a.py", "c.py", "d.py"}
    assert t.gold_edit == {"b.py"} and t.created == {"b.py"}


# --------------------------------------------------------------------------- detection


def test_detect_and_unknown_inputs(tmp_path):
    assert detect(FIXTURES / "nebius_sample.jsonl") == "nebius"
    assert detect(FIXTURES / "claude_transcript.jsonl") == "claude_code"
    assert detect(FIXTURES / "claude_swebench_session.jsonl") == "claude_code"
    (tmp_path / "x.txt").write_text("hello")
    assert detect(tmp_path / "x.txt") is None
    with pytest.raises(ValueError, match="format"):
        list(load(tmp_path / "x.txt"))
    with pytest.raises(ValueError, match="unknown trajectory format"):
        list(load(FIXTURES / "nebius_sample.jsonl", format="nope"))
    with pytest.raises(FileNotFoundError):
        list(load(tmp_path / "missing"))
    assert set(FORMATS) == {"claude_code", "mini_swe_agent", "swe_agent", "openhands", "nebius"}


# --------------------------------------------------------------------------- Claude Code fixtures


def test_iter_transcript_joins_results_and_skips_injections():
    with pytest.warns(TrajectoryWarning, match=r"claude_transcript\.jsonl:19: bad JSON line"):
        items = list(claude_code.iter_transcript(FIXTURES / "claude_transcript.jsonl"))
    kinds = [(i["type"], i.get("tool_name") or i.get("prompt")) for i in items]
    assert kinds == [
        ("prompt", "why does the server not start?"),
        ("tool", "Bash"),
        ("tool", "Read"),
        ("tool", "Edit"),
        ("prompt", "now run the tests"),
        ("tool", "Grep"),
        ("tool", "Bash"),
    ]
    bash, read = items[1], items[2]
    assert set(bash) >= {
        "type",
        "session_id",
        "cwd",
        "timestamp",
        "tool_name",
        "tool_input",
        "tool_response",
        "is_error",
    }
    assert bash["is_error"] is True and bash["tool_input"]["command"].startswith("cd ")
    assert bash["result_text"].startswith("Exit code 1")
    assert read["tool_response"]["file"]["filePath"].endswith("config/dev.exs")  # structured
    assert read["timestamp"] == "2026-02-10T21:12:04.500Z"
    assert items[-1]["tool_response"] is None and items[-1]["has_result"] is False
    assert all(i["session_id"] == "11111111-2222-3333-4444-555555555555" for i in items)


def test_claude_benchmark_session_maps_paths_and_drops_setup():
    (t,) = load_all(FIXTURES / "claude_swebench_session.jsonl")
    check_task(t)
    assert (t.id, t.repo, t.order, t.source, t.project) == (
        "acme__widget-42",
        "acme/widget",
        42,
        "claude_code",
        "/testbed",
    )
    assert t.description.startswith("Widget.render drops the title")
    commands = [e["command"] or "" for e in t.events]
    assert not any(
        re.search(r"git clone|rm -rf testbed|checkout c76af|add -A|--cached|pip install", c)
        for c in commands
    )
    assert not any("manual.yaml" in f or "preds" in f for e in t.events for f in e["files"])
    assert [e["tool"] for e in t.events] == [
        "TodoWrite",
        "Grep",
        "Read",
        "Read",
        "Write",
        "Write",
        "Bash:python",
        "Bash:pytest",
        "Edit",
        "Read",
        "Read",
    ]
    # ./swebench_9_15/testbed/x, testbed/x, relative to cwd, testbed/testbed/x and
    # ~/desktop/swebench_9_15/testbed/<owner>__<repo>-N/x all land on /testbed/x
    files = [f for e in t.events for f in e["files"]]
    assert "/testbed/widget/util.py" in files and "/testbed/widget/style.py" in files
    assert t.gold_edit == {"widget/core.py", "fix_widget.py"}  # fix_widget.py patched core.py
    assert t.created == {"fix_widget.py"}  # a Write is a create
    assert "widget/missing.py" not in t.gold_read  # the Read failed
    assert t.events[4]["files"] == []  # test_issue.py sits outside testbed: scratch
    pytest_event = t.events[7]
    assert pytest_event["exit_code"] == 1 and pytest_event["error"] == "1 failed"
    assert pytest_event["cwd"] == "/testbed"
    ats = [e["at"] for e in t.events]
    assert ats == sorted(ats) and None not in ats


# --------------------------------------------------------------------------- Nebius fixtures

NEBIUS_IDS = ["acme__tidy-3", "acme__tidy-7", "astropy__astropy-12907"]


def _check_nebius(tasks):
    assert [t.id for t in tasks] == NEBIUS_IDS
    for t in tasks:
        check_task(t)
        assert t.source == "nebius" and t.project == "/testbed"
        assert all(e["at"] is None for e in t.events)
        assert "finish" not in {e["tool"] for e in t.events}
    tidy = tasks[1]
    assert tidy.events[0]["session"] == "fixture-tidy-7-a"
    assert [e["tool"] for e in tidy.events] == [
        "str_replace_editor:view",
        "Bash:grep",
        "think",
        "str_replace_editor:str_replace",
        "str_replace_editor:view",
        "Bash:pytest",
    ]
    assert tidy.events[0]["files"] == []  # a directory view touches no file
    assert tidy.events[2]["action"] == "plan"
    assert tidy.events[4]["error"].startswith("ERROR:")
    assert (tidy.events[5]["exit_code"], tidy.events[5]["error"].splitlines()[0]) == (1, "F.")
    # the test file was only run by pytest: a touch (in the event), not a read
    assert tidy.events[5]["files"] == ["/testbed/tests/test_core.py"]
    assert tidy.gold_edit == {"tidy/core.py"} and tidy.gold_read == set()
    assert tidy.created == set()  # first touched by a str_replace: it existed
    assert tidy.description.startswith("Sorting a list with None")
    astro = tasks[2]
    assert astro.gold_edit == {"astropy/modeling/separable.py"}  # /workspace scratch dropped
    assert astro.meta["resolved"] == 1


def test_nebius_jsonl_fixture():
    _check_nebius(load_all(FIXTURES / "nebius_sample.jsonl"))


def test_nebius_parquet_fixture(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [
        json.loads(line) for line in (FIXTURES / "nebius_sample.jsonl").read_text().splitlines()
    ]
    for r in rows:  # parquet needs one type per column: arguments as JSON strings, as Nebius has
        for m in r["trajectory"]:
            for c in m.get("tool_calls") or []:
                if not isinstance(c["function"]["arguments"], str):
                    c["function"]["arguments"] = json.dumps(c["function"]["arguments"])
    path = tmp_path / "train-00000.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    assert detect(path) == "nebius"
    _check_nebius(load_all(path))
    _check_nebius(load_all(tmp_path))  # a folder of parquet files


def test_parquet_without_pyarrow_says_what_to_install(tmp_path, monkeypatch):
    path = tmp_path / "x.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match=r"brainbox\[parquet\]"):
        list(load(path))


def test_nebius_bad_rows_are_skipped_with_warnings(tmp_path):
    lines = (FIXTURES / "nebius_sample.jsonl").read_text().splitlines()
    broken = json.loads(lines[0])
    del broken["trajectory"]
    path = tmp_path / "rows.jsonl"
    path.write_text(
        "\n".join([lines[0], json.dumps(broken), lines[1][: len(lines[1]) // 2], lines[2]]) + "\n"
    )
    with pytest.warns(TrajectoryWarning) as rec:
        tasks = list(load(path))
    msgs = [str(w.message) for w in rec]
    assert any(f"{path}:2:" in m and "trajectory" in m for m in msgs)
    assert any(f"{path}:3:" in m and "bad JSON" in m for m in msgs)
    assert [t.id for t in tasks] == ["acme__tidy-3", "acme__tidy-7"]


# --------------------------------------------------------------------------- real data: slices


def _claude_slice(tmp_path, n=6) -> Path:
    src = real("claude-code-swebench-lite")
    rows = (src / "index.tsv").read_text().splitlines()
    head, body = (
        rows[0],
        [r for r in rows[1:] if r.split("\t")[1] in ("psf/requests", "pallets/flask")],
    )
    (tmp_path / "sessions").mkdir(parents=True)
    for r in body[:n]:
        f = r.split("\t")[4]
        (tmp_path / f).symlink_to(src / f)
    (tmp_path / "index.tsv").write_text("\n".join([head] + body[:n]) + "\n")
    return tmp_path


def test_claude_code_slice(tmp_path):
    folder = _claude_slice(tmp_path)
    assert detect(folder) == "claude_code"
    tasks = load_all(folder)
    assert len(tasks) == 6
    keys = [(t.repo, t.order) for t in tasks]
    assert keys == sorted(keys)
    tools = set()
    for t in tasks:
        check_task(t)
        assert t.project == "/testbed" and t.source == "claude_code"
        assert t.gold_edit and t.gold_read
        for e in t.events:
            tools.add(e["tool"])
            c = e["command"] or ""
            assert not re.search(r"git clone|rm -rf testbed\b|manual\.yaml|_preds\.json", c), c
            assert not any("swebench" in f or "/testbed/testbed" in f for f in e["files"])
        ats = [e["at"] for e in t.events]
        assert None not in ats and ats == sorted(ats)
    assert {"Read", "Bash:python", "TodoWrite"} <= tools
    assert all(x.startswith("Bash:") or x[0].isupper() for x in tools)


def test_real_transcripts_yield_every_tool_call():
    """Counts from shared/data/transcripts/claude-code/README.md."""
    folder = DATA / "transcripts" / "claude-code" / "spotter"
    if not folder.is_dir():
        pytest.skip("transcripts not present")
    from collections import Counter

    items = list(claude_code.iter_transcript(folder / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"))
    tools = Counter(i["tool_name"] for i in items if i["type"] == "tool")
    assert {k: tools[k] for k in ("Bash", "Read", "Edit", "Write", "Glob", "Grep")} == {
        "Bash": 79,
        "Read": 42,
        "Edit": 35,
        "Write": 13,
        "Glob": 8,
        "Grep": 5,
    }
    prompts = [i["prompt"] for i in items if i["type"] == "prompt"]
    assert prompts == ["Implement spotter-gqc", "did you push?"]
    assert all(i["has_result"] for i in items if i["type"] == "tool")
    items = list(claude_code.iter_transcript(folder / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"))
    tools = Counter(i["tool_name"] for i in items if i["type"] == "tool")
    assert (tools["Bash"], tools["Edit"], tools["Read"], tools["WebFetch"], tools["Skill"]) == (
        120,
        67,
        37,
        4,
        1,
    )


def _mini_slice(tmp_path, ids) -> Path:
    src = real("mini-swe-agent-gemini3-verified") / "trajs"
    (tmp_path / "trajs").mkdir(parents=True)
    for i in ids:
        assert (src / i).is_dir(), i
        (tmp_path / "trajs" / i).symlink_to(src / i)
    return tmp_path


MINI = [
    "pytest-dev__pytest-7432",
    "pytest-dev__pytest-5262",
    "psf__requests-2317",
    "pytest-dev__pytest-10356",
    "sympy__sympy-13372",
    "pydata__xarray-6461",
    "scikit-learn__scikit-learn-10297",
    "astropy__astropy-12907",
]


def test_mini_swe_agent_slice(tmp_path):
    folder = _mini_slice(tmp_path, MINI)
    assert detect(folder) == "mini_swe_agent"
    tasks = load_all(folder)
    assert [t.id for t in tasks] == sorted(MINI, key=lambda i: parse_task_id(i))
    for t in tasks:
        check_task(t)
        assert t.project == "/testbed"
        assert all(e["tool"].startswith("Bash") for e in t.events)
        assert not any("COMPLETE_TASK_AND_SUBMIT" in (e["command"] or "") for e in t.events)
        assert all(e["exit_code"] is not None or e["error"] for e in t.events)
        ats = [e["at"] for e in t.events]
        assert None not in ats and ats == sorted(ats)
        # every file of the final diff that the agent changed is a gold edit
        diff = set(re.findall(r"^diff --git a/(\S+) b/", t.meta["submission"], re.MULTILINE))
        diff -= {"pyproject.toml", "tox.ini", "setup.py", "AUTHORS"}  # environment, not the agent
        assert diff <= t.gold_edit, (t.id, diff - t.gold_edit)
    by_id = {t.id: t for t in tasks}
    # edits made by running a Python script the agent wrote (open(path, 'w'))
    assert "sympy/core/evalf.py" in by_id["sympy__sympy-13372"].gold_edit
    assert "sklearn/linear_model/ridge.py" in by_id["scikit-learn__scikit-learn-10297"].gold_edit
    timed_out = [
        e for e in by_id["psf__requests-2317"].events if e["error"] and "timed out" in e["error"]
    ]
    assert len(timed_out) == 1 and timed_out[0]["exit_code"] is None


def test_swe_agent_full_folder():
    folder = real("sweagent-java-multiswebench")
    tasks = load_all(folder)
    assert len(tasks) == 63
    from collections import Counter

    assert Counter(t.repo for t in tasks) == {
        "fasterxml/jackson-databind": 49,
        "google/gson": 5,
        "googlecontainertools/jib": 5,
        "apache/dubbo": 4,
    }
    keys = [(t.repo, t.order) for t in tasks]
    assert keys == sorted(keys)
    tools = Counter(e["tool"] for t in tasks for e in t.events)
    assert {
        "open",
        "edit",
        "create",
        "goto",
        "search_dir",
        "search_file",
        "find_file",
        "scroll_down",
    } <= set(tools)
    assert not {"submit", "exit_cost"} & set(tools)
    for t in tasks:
        check_task(t)
        assert t.project == "/" + t.id.rsplit("-", 1)[0]
        assert all(e["at"] is None for e in t.events)
        assert (
            "We're currently solving" not in t.description
            and "marshmallow" not in t.description[:200]
        )
        diff = set(re.findall(r"^diff --git a/(\S+) b/", t.meta["submission"] or "", re.MULTILINE))
        assert diff <= t.gold_edit
    edits = [e for t in tasks for e in t.events if e["tool"] == "edit"]
    assert all(len(e["files"]) == 1 for e in edits if not e["error"])


def test_openhands_full_folder():
    folder = real("openhands-codeact-verified50")
    tasks = load_all(folder)
    assert len(tasks) == 22 and {t.repo for t in tasks} == {"astropy/astropy"}
    assert [t.order for t in tasks] == sorted(t.order for t in tasks)
    times = {}
    for line in (folder / "llm_completion_times.tsv").read_text().splitlines()[1:]:
        iid, _, ts, _ = line.split("\t")
        times.setdefault(iid, []).append(float(ts))
    for t in tasks:
        check_task(t)
        assert t.project == "/testbed"  # both /workspace/astropy__astropy__X.Y and /testbed
        tools = {e["tool"] for e in t.events}
        assert "finish" not in tools and tools <= {
            "str_replace_editor:view",
            "str_replace_editor:create",
            "str_replace_editor:str_replace",
            "str_replace_editor:insert",
            "str_replace_editor:undo_edit",
        } | {x for x in tools if x.startswith("Bash:")}
        ats = [e["at"] for e in t.events]
        assert None not in ats and ats == sorted(ats)
        assert ats[-1] < max(times[t.id])  # the final response (finish) holds the last time
        assert set(ats) <= set(times[t.id])
    assert sum(len(t.gold_edit) for t in tasks) >= 22


# --------------------------------------------------------------------------- truncated files


def test_truncated_real_files_skip_one_task_with_a_warning(tmp_path):
    # mini-swe-agent: one truncated .traj.json among good ones
    folder = _mini_slice(tmp_path / "mini", MINI[:3])
    victim = folder / "trajs" / MINI[1]
    victim.unlink()
    victim.mkdir()
    src = real("mini-swe-agent-gemini3-verified") / "trajs" / MINI[1] / f"{MINI[1]}.traj.json"
    data = src.read_text()
    (victim / src.name).write_text(data[: len(data) // 2])
    with pytest.warns(TrajectoryWarning, match=re.escape(MINI[1])):
        tasks = list(load(folder))
    assert sorted(t.id for t in tasks) == sorted([MINI[0], MINI[2]])

    # Claude Code: a session cut off mid-line is skipped, naming file and line
    folder = _claude_slice(tmp_path / "cc", n=3)
    index = (folder / "index.tsv").read_text().splitlines()
    name = index[2].split("\t")[4]
    target = folder / name
    raw = target.resolve().read_text()
    target.unlink()
    cut = raw[: len(raw) * 2 // 3]
    target.write_text(cut)
    line_no = cut.count("\n") + 1
    with pytest.warns(TrajectoryWarning, match=rf"{re.escape(name)}:{line_no}: bad JSON line"):
        tasks = list(load(folder))
    assert len(tasks) == 2

    # SWE-agent and OpenHands LLM logs: truncated JSON documents
    swe = real("sweagent-java-multiswebench") / "trajs"
    (tmp_path / "swe").mkdir()
    for p in sorted(swe.glob("*.traj"))[:3]:
        shutil.copy(p, tmp_path / "swe" / p.name)
    p = min((tmp_path / "swe").glob("*.traj"))
    p.write_text(p.read_text()[:5000])
    with pytest.warns(TrajectoryWarning, match=re.escape(p.name)):
        assert len(list(load(tmp_path / "swe"))) == 2

    oh = real("openhands-codeact-verified50")
    dst = tmp_path / "oh" / "llm_completions"
    for d in sorted((oh / "llm_completions").iterdir())[:2]:
        shutil.copytree(d, dst / d.name)
    p = next((dst / min(x.name for x in dst.iterdir())).glob("*.json"))
    p.write_text(p.read_text()[:3000])
    with pytest.warns(TrajectoryWarning, match=re.escape(p.name)):
        assert len(list(load(tmp_path / "oh"))) == 1


# --------------------------------------------------------------------------- real data: everything


@pytest.mark.slow
def test_all_development_data_loads():
    """483 tasks in four agents (shared/data/trajectories/README.md), ordered by PR."""
    real("")
    counts = {}
    for name, fmt, n in [
        ("claude-code-swebench-lite", "claude_code", 163),
        ("mini-swe-agent-gemini3-verified", "mini_swe_agent", 235),
        ("sweagent-java-multiswebench", "swe_agent", 63),
        ("openhands-codeact-verified50", "openhands", 22),
    ]:
        assert detect(TRAJ / name) == fmt
        tasks = load_all(TRAJ / name)
        counts[name] = len(tasks)
        assert len(tasks) == n
        for t in tasks:
            check_task(t)
        keys = [(t.repo, t.order) for t in tasks]
        assert keys == sorted(keys)
        assert all(t.tool_events for t in tasks)
    assert sum(counts.values()) == 483


def test_a_folder_of_sources_yields_each_in_turn(tmp_path):
    _mini_slice(tmp_path / "a-mini", MINI[:2])
    (tmp_path / "b-nebius").mkdir()
    shutil.copy(FIXTURES / "nebius_sample.jsonl", tmp_path / "b-nebius" / "rows.jsonl")
    tasks = load_all(tmp_path)
    assert [t.source for t in tasks] == ["mini_swe_agent"] * 2 + ["nebius"] * 3


@pytest.mark.parametrize(
    "name,content,reader",
    [
        ("a__b-1.traj.json", '{"instance_id": "a__b-1"}', mini_swe_agent.load),
        ("a__b-1.traj.json", '{"instance_id": "a__b-1", "messages": [', mini_swe_agent.load),
        ("a__b-1.traj", '{"history": []}', swe_agent.load),
        ("not-an-id.traj", '{"trajectory": [], "history": []}', swe_agent.load),
        ("x.jsonl", '{"instance_id": "a__b-1"}\n', openhands.load_nebius),
        ("x.jsonl", '{"instance_id": "a__b-1", "trajectory": []}\n', openhands.load_nebius),
        ("s.jsonl", '{"type": "summary"}\n', claude_code.load),
    ],
)
def test_a_task_missing_a_field_is_skipped_with_a_warning(tmp_path, name, content, reader):
    path = tmp_path / name
    path.write_text(content)
    with pytest.warns(TrajectoryWarning, match=re.escape(str(path))):
        assert list(reader(path)) == []
