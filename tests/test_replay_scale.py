"""Scale out (issue 20, item 5): the catalogue-shaped synthetic workload
(``brainbox.workload.catalogue``, ``replay --synthetic N --projects P``) and identical
results across the executors: one process, a spawn pool of two, a Dask LocalCluster of two
started by ``--scheduler local:2``, and the Python reference loop."""

import json
import os
import statistics
import subprocess
import sys

import pytest

from brainbox import BrainboxError
from brainbox.eval.runner import local_workers, run
from brainbox.eval.sources import synthetic_spec, synthetic_tasks
from brainbox.workload import MIN_EVENTS, catalogue, catalogue_files, catalogue_sizes

CAT = {"synthetic": 20000, "synthetic_projects": 50, "synthetic_shape": "catalogue",
       "seed": 42, "bootstrap": 100, "progress": False}


def canonical(result: dict) -> str:
    """The report's figures: everything but the timings and the commit it ran at."""
    skip = {"timings", "source_commit", "source_dirty"}
    return json.dumps({k: v for k, v in result.items() if k not in skip}, sort_keys=True)


pytestmark = pytest.mark.usefixtures("pinned_commit")


def test_catalogue_sizes_are_heavy_tailed_exact_and_seeded():
    sizes = catalogue_sizes(4_000_000, 2000, 7)
    assert sum(sizes) == 4_000_000 and min(sizes) >= MIN_EVENTS
    assert catalogue_sizes(4_000_000, 2000, 7) == sizes
    assert catalogue_sizes(4_000_000, 2000, 8) != sizes
    top = sorted(sizes, reverse=True)
    assert top[0] > 20 * statistics.median(sizes)  # heavy tail: not a uniform split
    assert sum(top[:20]) > 0.1 * sum(sizes)  # the largest 1% hold over a tenth
    assert catalogue_files(top[0]) > catalogue_files(top[-1])


def test_catalogue_too_small_is_one_clear_error():
    with pytest.raises(ValueError, match="needs at least 1000 events"):
        catalogue_sizes(999, 50)
    with pytest.raises(BrainboxError, match="needs at least"):
        synthetic_spec(999, 50, 7, "catalogue")


def test_a_repository_alone_is_its_records_of_the_whole_stream():
    whole = list(catalogue(6000, 12, 3))
    assert len(whole) == 6000
    sizes = catalogue_sizes(6000, 12, 3)
    for p in (0, 5, 11):
        own = list(catalogue(6000, 12, 3, only=p))
        assert own == [e for e in whole if e["project"] == f"/work/project{p}"]
        assert len(own) == sizes[p]
    sessions = [e["session"] for e in whole]
    assert len(set(sessions)) > 12  # many trajectories per repository on average
    spec = synthetic_spec(6000, 12, 3, "catalogue")
    tasks = list(synthetic_tasks(spec, 5))
    assert {t.repo for t in tasks} == {"/work/project5"}
    assert len({t.order for t in tasks}) == len(tasks)


def test_the_uniform_shape_is_unchanged():
    assert "shape" not in synthetic_spec(4000, 2, 3)
    assert synthetic_spec(4000, 2, 3) == synthetic_spec(4000, 2, 3, "uniform")


def test_local_scheduler_address():
    assert local_workers("local:2") == 2
    assert local_workers("tcp://10.0.0.1:8786") is None
    for bad in ("local:", "local:0", "local:two"):
        with pytest.raises(BrainboxError, match="expected local:N"):
            local_workers(bad)


@pytest.fixture(scope="module")
def one(pinned_commit):
    return run(workers=1, **CAT)


def test_the_catalogue_replays_every_repository(one):
    assert len(one["series"]) == 50
    sizes = catalogue_sizes(20000, 50, 7)
    assert one["settings"]["synthetic"]["sizes"] == sizes
    by_repo = {s["repo"]: s for s in one["series"]}
    big = max(range(50), key=sizes.__getitem__)
    small = min(range(50), key=sizes.__getitem__)
    assert by_repo[f"/work/project{big}"]["tasks"] > by_repo[f"/work/project{small}"]["tasks"]


@pytest.mark.slow
def test_two_worker_processes_give_the_same_figures(one):
    two = run(workers=2, **CAT)
    assert two["timings"]["executor"] == "process"
    assert canonical(two) == canonical(one)


@pytest.mark.slow
def test_a_dask_local_cluster_from_the_command_line_gives_the_same_figures(one, tmp_path):
    pytest.importorskip("distributed")
    out = tmp_path / "dask.json"
    proc = subprocess.run(
        [sys.executable, "-m", "brainbox.cli.entry", "replay", "--synthetic", "20000",
         "--projects", "50", "--seed", "42", "--bootstrap", "100", "--no-progress",
         "--scheduler", "local:2", "--json-out", str(out)],
        capture_output=True, text=True, env={**os.environ})
    assert proc.returncode == 0, proc.stderr
    res = json.loads(out.read_text())
    assert (res["timings"]["executor"], res["timings"]["workers"]) == ("dask", 2)
    assert res["timings"]["scheduler"] == "local:2"
    assert canonical(res) == canonical(one)


@pytest.mark.slow
def test_the_reference_loop_gives_the_same_figures():
    small = {**CAT, "synthetic": 3000, "synthetic_projects": 8}
    ref = run(engine="python", **small)
    assert ref["settings"].pop("engine") == "python"
    fast = run(engine="compiled", **small)
    assert fast["settings"].pop("engine") == "compiled"
    assert len(fast["tasks"]) > 8
    assert canonical(ref) == canonical(fast)


@pytest.mark.slow
def test_too_few_events_for_the_catalogue_exit_1_with_one_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "brainbox.cli.entry", "replay", "--synthetic", "100",
         "--projects", "50", "--no-progress", "--json-out", str(tmp_path / "x.json")],
        capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "brainbox: a catalogue of 50 repositories needs at least 1000 events (got 100)"]
    assert not (tmp_path / "x.json").exists()
