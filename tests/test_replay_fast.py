"""The compiled replay loop (eval/fast.py + kernels/replay.py) against the Python reference
loop (eval/replay.py): identical task records, on the workload generator and on real
trajectories of every development source."""

from collections import defaultdict

import pytest
from brainbox.eval import sources as S
from brainbox.eval.fast import MultiProject, replay_series_fast
from brainbox.eval.replay import replay_series

from brainbox.events import normalize


def same_records(tasks, **kw):
    tasks = list(tasks)
    want = replay_series(tasks, **kw)
    got = replay_series_fast(tasks, **kw)
    assert got["events"] == want["events"]
    assert got["skipped_events"] == want["skipped_events"]
    assert len(got["tasks"]) == len(want["tasks"])
    for a, b in zip(got["tasks"], want["tasks"]):
        assert a == b, a["id"]
    return want


@pytest.mark.parametrize("project", [0, 1])
def test_synthetic_series_give_identical_records(project):
    spec = S.synthetic_spec(4000, 2, 3)
    want = same_records(S.synthetic_tasks(spec, project), series="syn", seed=7)
    scored = sum(t["probes"]["P2"]["scored"] for t in want["tasks"])
    assert scored > 500  # the comparison covers many predictions


@pytest.mark.parametrize("ablate", [("lexical",), ("associative", "recency"), ("base_level",)])
def test_ablations_give_identical_records(ablate):
    spec = S.synthetic_spec(1500, 1, 5)
    same_records(S.synthetic_tasks(spec, 0), series="syn", seed=1, ablate=ablate)


SOURCES = ["claude-code-swebench-lite", "mini-swe-agent-gemini3-verified",
           "openhands-codeact-verified50", "sweagent-java-multiswebench"]


@pytest.mark.parametrize("source", SOURCES)
def test_real_series_give_identical_records(data_dir, source):
    path = data_dir / "trajectories" / source
    if not path.exists():
        pytest.skip(f"{source} is absent")
    tasks, _ = S.load_source(path)
    by_repo = defaultdict(list)
    for t in tasks:
        by_repo[t.repo].append(t)
    # the two largest repositories, their first 25 tasks in order
    for repo in sorted(by_repo, key=lambda r: -len(by_repo[r]))[:2]:
        series = sorted(by_repo[repo], key=lambda t: t.order)[:25]
        same_records(series, series=f"{source}:{repo}", seed=42)


def test_a_task_over_two_projects_is_refused_so_the_reference_loop_runs_it():
    spec = S.synthetic_spec(400, 1, 2)
    tasks = list(S.synthetic_tasks(spec, 0))
    ev = dict(tasks[1].events[2])
    ev["cwd"] = ev["project"] = "/elsewhere"
    tasks[1].events.append(ev)
    normalize(ev)  # a valid event
    with pytest.raises(MultiProject):
        replay_series_fast(tasks, series="x")
