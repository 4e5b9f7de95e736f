"""eval/loaders/base.py: read_json (the one reader of a whole-file JSON trajectory or log)
and TaskBuilder's file facts (run is not read, test labels are not files, created is a
first touch that writes the whole file), by hand and on the real development data."""

import re
import warnings
from pathlib import Path

import pytest

from brainbox.eval.loaders import load, mini_swe_agent, swe_agent
from brainbox.eval.loaders.base import TaskBuilder, TrajectoryWarning, read_json

TRAJ = Path(__file__).resolve().parents[2] / "shared" / "data" / "trajectories"


def test_a_json_file_is_read_without_a_warning(tmp_path):
    p = tmp_path / "t.json"
    p.write_text('{"messages": [1, 2]}', encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrajectoryWarning)
        assert read_json(p) == {"messages": [1, 2]}


def test_bad_json_warns_with_the_file_and_line_and_gives_none(tmp_path):
    p = tmp_path / "t.traj.json"
    p.write_text('{\n  "messages": [\n  oops\n}', encoding="utf-8")
    with pytest.warns(TrajectoryWarning, match=r"t\.traj\.json:3: unreadable trajectory "
                                               r"\(JSONDecodeError: .*\); task skipped"):
        assert read_json(p) is None


def test_a_missing_file_warns_with_what_it_is(tmp_path):
    p = tmp_path / "gone.json"
    with pytest.warns(TrajectoryWarning, match=r"gone\.json: unreadable LLM log "
                                               r"\(FileNotFoundError: .*\); task skipped"):
        assert read_json(p, "LLM log") is None


def test_undecodable_bytes_are_unreadable(tmp_path):
    p = tmp_path / "t.traj"
    p.write_bytes(b'{"a": "\xff"}')
    with pytest.warns(TrajectoryWarning, match=r"unreadable trajectory \(UnicodeDecodeError"):
        assert read_json(p) is None


@pytest.mark.parametrize("load_file,name", [(mini_swe_agent.load_file, "x__y-1.traj.json"),
                                            (swe_agent.load_file, "x__y-1.traj")])
def test_the_loaders_skip_an_unreadable_trajectory_with_one_warning(tmp_path, load_file, name):
    p = tmp_path / name
    p.write_text("not json", encoding="utf-8")
    with pytest.warns(TrajectoryWarning, match="unreadable trajectory") as got:
        assert load_file(p) is None
    assert len(got) == 1



# --------------------------------------------------------------------------- file facts


def _files(task):
    return [f for e in task.events for f in e["files"]]


def test_running_a_script_or_its_tests_touches_them_without_reading_them():
    b = TaskBuilder("s", "/w")
    b.shell("python tests/runtests.py admin_views.tests.AdminViewBasicTest.test_x", cwd="/w")
    b.shell("cd /w && python -m pytest tests/test_x.py::T -q && bash ci/run.sh", cwd="/w")
    b.shell("./scripts/check.py && python -m unittest tests.test_y.TestY", cwd="/w")
    t = b.task("o__r-1", "issue", "test", "x")
    assert _files(t) == [
        "/w/tests/runtests.py",
        "/w/tests/test_x.py",
        "/w/ci/run.sh",
        "/w/scripts/check.py",
    ]  # still touches (P2 targets, learned from); no dotted test label became a file
    assert [e["action"] for e in t.events] == ["run", "run", "run"]
    assert t.gold_read == set() and t.gold_edit == set() and t.created == set()


def test_a_test_label_is_a_file_only_if_that_path_was_touched_before():
    b = TaskBuilder("s", "/w")
    b.shell("python runtests.py suite.Smoke", cwd="/w")  # not seen yet: a label
    b.tool("Read", files=[("/w/suite.Smoke", "read")], action="read")
    b.tool("Read", files=[("/w/gone.Case", "read")], action="read", error="no", file_tool=True)
    b.shell("python runtests.py suite.Smoke gone.Case other.Case", cwd="/w")
    t = b.task("o__r-1", "issue", "test", "x")
    assert t.events[0]["files"] == ["/w/runtests.py"]
    assert t.events[3]["files"] == ["/w/runtests.py", "/w/suite.Smoke"]  # a failed Read: unseen
    assert t.gold_read == {"suite.Smoke"}  # from the Read; the run adds nothing


def test_created_is_a_first_touch_that_writes_the_whole_file():
    b = TaskBuilder("s", "/w")
    b.shell("cat <<'EOF' > reproduce_issue.py\nimport pkg\nEOF\npython reproduce_issue.py", cwd="/w")
    b.tool("Edit", files=[("pkg/mod.py", "edit")], action="edit", cwd="/w")  # str_replace
    b.shell("sed -i 's/a/b/' pkg/b.py && echo '# x' >> pkg/c.py", cwd="/w")
    b.tool("Read", files=[("pkg/d.py", "read")], action="read", cwd="/w")
    b.tool("Write", files=[("pkg/d.py", "create")], action="edit", cwd="/w")  # read first
    b.shell("cp pkg/mod.py pkg/mod.py.bak && touch pkg/new/__init__.py", cwd="/w")
    b.tool("Write", files=[("late.py", "create")], action="edit", error="denied", file_tool=True)
    b.shell("python -c \"open('late.py', 'w').write('x')\" | tee out.txt", cwd="/w")
    b.shell("python late.py", cwd="/w")
    t = b.task("o__r-1", "issue", "test", "x")
    assert t.created == {
        "reproduce_issue.py",
        "pkg/mod.py.bak",
        "pkg/new/__init__.py",
        "late.py",  # its first successful touch writes it; the failed Write decides nothing
        "out.txt",
    }
    assert t.gold_edit == t.created | {"pkg/mod.py", "pkg/b.py", "pkg/c.py", "pkg/d.py"}
    assert t.gold_read == {"pkg/d.py", "pkg/mod.py"}  # cp reads its source
    assert [e["action"] for e in t.events].count("edit") == 7


def test_a_synthetic_run_event_touches_its_test_file_without_reading_it():
    from brainbox.eval.sources import synthetic_spec, synthetic_tasks

    tasks = list(synthetic_tasks(synthetic_spec(900, seed=3)))
    only_run = 0
    for t in tasks:
        run = {f for e in t.events if e["action"] == "run" for f in e["files"]}
        read = {f for e in t.events if e["action"] in ("read", "search") for f in e["files"]}
        assert not (run - read) & t.gold_read
        only_run += len(run - read)
    assert only_run > 0


def _real_tasks(name):
    p = TRAJ / name
    if not p.is_dir():
        pytest.skip(f"development data {p} not present")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrajectoryWarning)
        return list(load(p))


def _label_like(path):
    """A dotted test label taken for a file (``admin_views.tests.Foo``, ``tests.test_x``)."""
    last = path.rsplit("/", 1)[-1]
    ext = last.rsplit(".", 1)[-1]
    return last.count(".") >= 1 and (ext[:1].isupper() or ext.startswith("test"))


def _first_touches(task):
    """{project-relative file: the first successful event that names it}."""
    first: dict[str, dict] = {}
    for e in task.events:
        for f in e["files"] if not e["error"] else ():
            first.setdefault(f[len(task.project) + 1 :], e)
    return first


def test_real_data_runs_are_not_reads_and_created_means_written_first():
    """On the real trajectories: sympy's test runner ``bin/test``, run as ``python
    bin/test ...``, is not read gold in the tasks that only ran it; no dotted test label
    is a file; a ``reproduce*.py`` written by a heredoc, and a file written by Claude
    Code's ``Write`` or an editor's ``create`` as their first touch, are created; a file
    whose first touch is an in-place ``sed -i`` is not."""
    tasks = [
        t
        for name in (
            "claude-code-swebench-lite",
            "mini-swe-agent-gemini3-verified",
            "openhands-codeact-verified50",
            "sweagent-java-multiswebench",
        )
        for t in _real_tasks(name)
    ]
    ran = 0
    for t in tasks:
        runner = f"{t.project}/bin/test"
        commands = [e["command"] or "" for e in t.events if runner in e["files"]]
        if commands and all(re.search(r"python[\d.]* +bin/test ", c) for c in commands):
            ran += 1
            assert "bin/test" not in t.gold_read, t.id
    assert ran >= 1  # measured: 1 task ran it (sympy__sympy-11870, three times)
    assert not [(t.id, f) for t in tasks for f in _files(t) if _label_like(f)]
    counts = {"heredoc": 0, "write": 0, "editor create": 0, "sed -i": 0}
    for t in tasks:
        for rel, e in _first_touches(t).items():
            c = e["command"] or ""
            if re.match(r"cat *(<<|>)", c) and re.search(rf">\s*{re.escape(rel)}\b", c):
                if rel.startswith("reproduce"):
                    counts["heredoc"] += 1
                    assert rel in t.created, (t.id, rel)
            elif e["tool"] == "Write":
                counts["write"] += 1
                assert rel in t.created, (t.id, rel)
            elif e["tool"] in ("create", "str_replace_editor:create"):  # SWE-agent, OpenHands
                counts["editor create"] += 1
                assert rel in t.created, (t.id, rel)
            elif re.match(r"sed -i", c) and ">" not in c and "\n" not in c:
                counts["sed -i"] += 1
                assert rel not in t.created, (t.id, rel)
    assert all(counts.values()), counts
