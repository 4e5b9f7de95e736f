"""Results do not depend on the executor: one process, a spawn process pool of two, and a
Dask LocalCluster on loopback give the same JSON apart from timings (both file views and
every ablation included; on real data too, where the views differ)."""

import json
from pathlib import Path

import pytest

from brainbox.eval.runner import run

SYN = {"synthetic": 600, "synthetic_projects": 3, "seed": 42, "bootstrap": 200, "progress": False,
       "ablations": True}
OPENHANDS = Path(__file__).resolve().parents[2] / "shared" / "data" / "trajectories" / \
    "openhands-codeact-verified50"


def canonical(result: dict) -> str:
    return json.dumps({k: v for k, v in result.items() if k != "timings"}, sort_keys=True)


pytestmark = pytest.mark.usefixtures("pinned_commit")


@pytest.fixture(scope="module")
def local(pinned_commit):
    return run(workers=1, **SYN)


def test_same_seed_same_json_in_process(local):
    again = run(workers=1, **SYN)
    assert canonical(again) == canonical(local)
    assert local["timings"]["executor"] == "local"
    assert len(local["series"]) == 3
    assert set(local["ablations"]) == {"repo", "all"}


@pytest.mark.slow
def test_two_worker_processes_give_the_same_json(local):
    two = run(workers=2, **SYN)
    assert two["timings"]["executor"] == "process"
    assert canonical(two) == canonical(local)


@pytest.mark.slow
def test_a_dask_local_cluster_gives_the_same_json(local):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        res = run(scheduler=cluster.scheduler_address, **SYN)
    assert res["timings"]["executor"] == "dask"
    assert canonical(res) == canonical(local)


def test_another_seed_changes_only_what_is_random(local):
    other = run(workers=1, **{**SYN, "seed": 7})
    assert canonical(other) != canonical(local)
    for a, b in zip(local["tasks"], other["tasks"]):
        for p in a["probes"]:
            assert a["probes"][p]["rr"][:5] == b["probes"][p]["rr"][:5]


@pytest.mark.slow
def test_the_views_of_real_data_are_the_same_with_two_worker_processes():
    if not OPENHANDS.is_dir():
        pytest.skip("openhands source absent")
    kw = {"seed": 42, "bootstrap": 100, "progress": False, "max_tasks_per_repo": 8}
    one = run([str(OPENHANDS)], workers=1, **kw)
    two = run([str(OPENHANDS)], workers=2, **kw)
    assert one["views"]["repo"] != one["views"]["all"]
    assert canonical(two) == canonical(one)
