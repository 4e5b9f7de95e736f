"""The replay's repo view (eval/views.py): agent files, the series-level rule, the view as a
pure transformation of the tasks; then the real development data (skipped when
../shared/data is absent)."""

import copy
from collections import Counter

import pytest

from brainbox.eval import sources as S
from brainbox.eval.loaders import Task
from brainbox.eval.views import agent_files, creates_nothing, repo_view, touched

ROOT = "/testbed"


def ev(*files, error=None, cwd=ROOT, tool="Bash"):
    return {"session": "s", "cwd": cwd, "project": ROOT, "tool": tool, "kind": "tool",
            "files": [f if f.startswith("/") else f"{ROOT}/{f}" for f in files],
            "error": error, "action": "other"}


def task(i, events, read=(), edit=(), created=()):
    return Task(id=f"o__r-{i}", repo="o/r", order=i, description=f"task {i}", events=events,
                gold_read=set(read), gold_edit=set(edit), source="t", path="", project=ROOT,
                created=set(created))


def series():
    return [
        # 1: the agent writes its reproduction script and edits a repository file
        task(1, [ev("repro.py"), ev("src/a.py"), ev("repro.py", "src/a.py")],
             read={"src/a.py"}, edit={"repro.py", "src/a.py"}, created={"repro.py"}),
        # 2: runs the script (no gold), re-creates src/a.py, fails to read notes.md
        task(2, [ev("repro.py"), ev("src/a.py"), ev("notes.md", error="No such file")],
             read={"repro.py"}, edit={"src/a.py"}, created={"src/a.py"}),
        # 3: creates notes.md (first touched, failed, in task 2); runs tests/run.py
        task(3, [ev("notes.md"), ev("tests/run.py")], edit={"notes.md"},
             created={"notes.md"}),
        # 4: re-creates tests/run.py, which task 3 ran: a repository file
        task(4, [ev("tests/run.py"), ev("notes.md")], read={"notes.md"},
             edit={"tests/run.py"}, created={"tests/run.py"}),
    ]


def test_a_file_is_an_agent_file_when_its_first_touch_in_the_series_is_a_create():
    assert agent_files(series()) == {"repro.py", "notes.md"}


def test_a_run_is_a_touch_and_a_step_with_an_error_touches_only_what_it_added_to_gold():
    ts = series()
    assert touched(ts[2]) == {"notes.md", "tests/run.py"}  # tests/run.py: only run
    assert "notes.md" not in touched(ts[1])  # named by a failed step only


def test_the_repo_view_drops_agent_files_from_every_event_and_gold_set_and_keeps_created():
    view = repo_view(series())
    for t in view:
        for e in t.events:
            assert not {f"{ROOT}/repro.py", f"{ROOT}/notes.md"} & set(e["files"])
    assert [t.gold_edit for t in view] == [{"src/a.py"}, {"src/a.py"}, set(), {"tests/run.py"}]
    assert [t.gold_read for t in view] == [{"src/a.py"}, set(), set(), set()]
    assert [t.created for t in view] == [t.created for t in series()]
    assert [len(t.events) for t in view] == [3, 3, 2, 2]  # events stay: P3 is unchanged
    assert view[2].events[0]["files"] == [] and view[0].events[2]["files"] == [f"{ROOT}/src/a.py"]


def test_the_repo_view_is_pure_and_deterministic():
    ts = series()
    before = copy.deepcopy(ts)
    a, b = repo_view(ts), repo_view(ts)
    assert ts == before  # the input is not changed
    assert a == b
    assert a[0] is not ts[0] and a[0].events[1] is ts[0].events[1]  # untouched events shared


def test_relative_event_paths_resolve_against_the_event_cwd():
    ts = [task(1, [ev("repro.py", cwd=f"{ROOT}/sub")], edit={"sub/repro.py"},
               created={"sub/repro.py"})]
    ts[0].events[0]["files"] = ["repro.py"]
    assert repo_view(ts)[0].events[0]["files"] == []


def test_a_series_without_agent_files_is_its_own_repo_view():
    ts = [task(1, [ev("src/a.py")], edit={"src/a.py"})]
    view = repo_view(ts)
    assert agent_files(ts) == set() and all(a is b for a, b in zip(view, ts))


def test_creates_nothing_passes_tasks_through_and_refuses_one_that_created_a_file():
    ts = [task(1, [ev("src/a.py")], edit={"src/a.py"})]
    assert list(creates_nothing(ts)) == ts
    with pytest.raises(ValueError, match="repro.py"):
        list(creates_nothing(series()))


def _series_of(data_dir, name):
    path = data_dir / "trajectories" / name
    if not path.is_dir():
        pytest.skip(f"{name} absent")
    tasks, _ = S.load_source(path)
    return S.select(tasks)


@pytest.mark.parametrize("name", ["mini-swe-agent-gemini3-verified",
                                  "openhands-codeact-verified50"])
def test_on_real_trajectories_no_repo_view_gold_or_file_was_created_by_the_agent(data_dir, name):
    removed = Counter()
    for _, ts in _series_of(data_dir, name):
        view = repo_view(ts)
        assert [t.id for t in view] == [t.id for t in ts]
        existing: set[str] = set()  # first touched, in an earlier task, as an existing file
        made: set[str] = set()  # created in an earlier or the current task, not existing
        for t, v in zip(ts, view):
            made |= t.created - existing
            existing |= touched(t) - made
            assert not (v.gold_read | v.gold_edit) & made
            files = {f[len(t.project) + 1:] for e in v.events for f in e["files"]}
            assert not files & made
            removed["gold"] += len(t.gold_read | t.gold_edit) - len(v.gold_read | v.gold_edit)
            removed["files"] += (sum(len(e["files"]) for e in t.events)
                                 - sum(len(e["files"]) for e in v.events))
            assert v.gold_read <= t.gold_read and v.gold_edit <= t.gold_edit
    assert removed["gold"] > 0 and removed["files"] > 0  # the sources do create files


def test_on_real_trajectories_a_reproduction_script_is_gold_only_in_the_all_view(data_dir):
    hits = 0
    for _, ts in _series_of(data_dir, "mini-swe-agent-gemini3-verified"):
        view = repo_view(ts)
        for t, v in zip(ts, view):
            scratch = {g for g in t.gold_edit | t.gold_read
                       if g.rsplit("/", 1)[-1] == "reproduce_issue.py"}
            hits += len(scratch)
            assert not scratch & (v.gold_edit | v.gold_read)
    assert hits > 0
