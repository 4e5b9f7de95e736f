"""Whole-repository localization (issue 16, Deliver 5; `brainbox.eval.localization` and
`brainbox replay --repos DIR`): the repository map's PageRank against a plain reference,
the snapshot folder and its no-foresight rule, gold patches, a series over a small
snapshot built here, and the command on a real snapshot where ../shared/data is present."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from brainbox import BrainboxError
from brainbox.cli.app import cli
from brainbox.eval import localization as L
from brainbox.eval.loaders import Task

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


# --- the repository map -----------------------------------------------------------------

def pagerank_reference(dense: np.ndarray, pers: np.ndarray, damping: float) -> np.ndarray:
    """The fixed point solved directly: r = d (M r + (dangling mass) p) + (1 - d) p, with
    M[j, i] = w(i, j) / out(i), as one linear system (no iteration)."""
    n = len(pers)
    p = pers / pers.sum()
    out = dense.sum(axis=1)
    M = np.zeros((n, n))
    for i in range(n):
        if out[i] > 0:
            M[:, i] = dense[i] / out[i]
        else:
            M[:, i] = p  # a node without out-edges jumps to the seeds
    return np.linalg.solve(np.eye(n) - damping * M, (1 - damping) * p)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 9).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1),
                       st.floats(0.05, 1.0)), max_size=3 * n),
    st.lists(st.tuples(st.integers(0, n - 1), st.floats(0.1, 5.0)), min_size=1,
             max_size=n))))
def test_pagerank_is_the_fixed_point_of_the_seeded_walk(case):
    n, edges, seeds = case
    dense = np.zeros((n, n))
    for i, j, w in edges:
        if i != j:
            dense[i, j] = max(dense[i, j], w)
    pers = np.zeros(n)
    for s, w in seeds:
        pers[s] += w
    got = L.pagerank(sparse.csr_array(dense.astype(np.float32)), [s for s, _ in seeds],
                     [w for _, w in seeds], iterations=300)
    want = pagerank_reference(dense.astype(np.float32).astype(np.float64), pers, L.DAMPING)
    assert np.allclose(got, want, atol=1e-9)
    assert got.sum() == pytest.approx(1.0)


def test_the_repository_map_ranks_what_the_seeds_import_then_bm25_order():
    # 0 imports 1, 1 imports 2; 3 and 4 are unreached; BM25 found 0 and then 4
    P = sparse.csr_array((np.array([1.0, 1.0], np.float32), ([0, 1], [1, 2])), shape=(5, 5))
    got = L.repo_map(P, np.array([0, 4]), np.array([3.0, 1.0]), limit=5, seeds=1)
    assert got[:3] == [0, 1, 2] or got[:3] == [2, 1, 0]
    assert set(got[:3]) == {0, 1, 2} and got[3] == 4 and len(got) == 4
    assert L.repo_map(P, np.array([], np.int64), np.array([]), limit=5) == []


def test_metrics_of_a_ranking():
    assert L.metrics(["a", "b", "c"], {"b", "z"}) == [0.0, 1.0, 0.5, 0.5]
    assert L.metrics([], {"b"}) == [0.0, 0.0, 0.0, 0.0]
    assert L.metrics(["b"] + [f"x{i}" for i in range(12)], {"b"}) == [1.0, 1.0, 1.0, 1.0]


# --- snapshots and golds ------------------------------------------------------------------

def make_snapshot(folder: Path, repo: str, files: dict[str, str], pr: int | None) -> Path:
    sub = folder / repo.replace("/", "__")
    sub.mkdir(parents=True)
    tar = sub / "0123abc.tar.gz"
    with tarfile.open(tar, "w:gz") as tf:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    if pr is not None:
        manifest = folder / "MANIFEST.tsv"
        head = "" if manifest.exists() else "repo\tpr_number\tbase_commit\n"
        with manifest.open("a") as fh:
            fh.write(f"{head}{repo}\t{pr}\t0123abc\n")
    return tar


def test_snapshots_read_the_layout_and_the_manifest(tmp_path):
    make_snapshot(tmp_path, "o/a", {"x.py": "x = 1\n"}, 10)
    make_snapshot(tmp_path, "o/b", {"y.py": "y = 1\n"}, None)
    (tmp_path / "notes").mkdir()
    got = L.snapshots(tmp_path)
    assert sorted(got) == ["o/a", "o/b"]
    assert got["o/a"]["pr"] == 10 and got["o/b"]["pr"] is None
    assert got["o/a"]["path"].name == "0123abc.tar.gz"
    with pytest.raises(BrainboxError, match="not a folder"):
        L.snapshots(tmp_path / "missing")
    with pytest.raises(BrainboxError, match="no <owner>__<name>"):
        L.snapshots(tmp_path / "notes")


def test_gold_patches_from_swe_bench_rows(tmp_path):
    patch = ("diff --git a/pkg/core.py b/pkg/core.py\n--- a/pkg/core.py\n+++ b/pkg/core.py\n"
             "@@ -1 +1 @@\n-a\n+b\ndiff --git a/pkg/util.py b/pkg/util.py\n")
    (tmp_path / "rows.jsonl").write_text(
        json.dumps({"instance_id": "o__a-1", "patch": patch}) + "\nnot json\n"
        + json.dumps({"instance_id": "o__a-2"}) + "\n")
    assert L.gold_patches([tmp_path, tmp_path / "absent"]) == {
        "o__a-1": {"pkg/core.py", "pkg/util.py"}}


# --- a series over a small snapshot ---------------------------------------------------------

FILLER = {f"pkg/mod{i}.py": f"def helper_{i}(value):\n    return value + {i}\n" for i in range(8)}
FILES = {
    **FILLER,
    "pkg/parsing.py": "from pkg.units import convert_units\n\n"
                      "def parse_quantity(text):\n    return convert_units(text)\n",
    "pkg/units.py": "def convert_units(text):\n    return text\n",
    "docs/guide.md": "Parsing a quantity with units: parse_quantity reads the quantity and "
                     "its units; parse_quantity then converts the units of the quantity "
                     "(parse_quantity, units, quantity).\n" * 3,
}


def ev(tool, *files, session):
    return {"session": session, "cwd": "/r", "project": "/r", "tool": tool, "kind": "tool",
            "files": [f"/r/{f}" for f in files], "args": None, "at": None}


def tasks():
    out = []
    for n, desc, edits in [
            (5, "parse_quantity() drops the units of a quantity", ["pkg/parsing.py"]),
            (12, "convert_units returns the text unchanged", ["pkg/units.py"]),
            (20, "helper_3 adds the wrong value", ["pkg/mod3.py"])]:
        events = [ev("Read", *edits, session=f"t{n}"), ev("Edit", *edits, session=f"t{n}")]
        out.append(Task(id=f"o__a-{n}", repo="o/a", order=n, description=desc, events=events,
                        gold_read=set(edits), gold_edit=set(edits), source="test", path="",
                        project="/r"))
    return out


def test_a_series_ranks_every_file_of_the_snapshot(tmp_path):
    tar = make_snapshot(tmp_path / "snaps", "o/a", FILES, 5)
    rows = L.series("o/a", tasks(), tar, {"o__a-5": {"pkg/parsing.py", "gone.py"}})
    assert [r["id"] for r in rows] == ["o__a-5", "o__a-12", "o__a-20"]
    first = rows[0]
    assert first["gold"] == {"edit": ["pkg/parsing.py"], "patch": ["pkg/parsing.py"]}
    # memory has seen nothing before the first task; the index finds the defining file
    # that the prose of docs/guide.md outranks in BM25 over whole files
    assert first["rank"]["edit"]["memory"] == [0.0, 0.0, 0.0, 0.0]
    assert first["rank"]["edit"]["bm25-files"][:3] == [0.0, 1.0, 0.5]  # the guide first
    assert first["rank"]["edit"]["brainbox"][0] == 1.0
    assert first["rank"]["edit"]["index"][0] == 1.0
    assert set(first["rank"]["edit"]) == set(L.METHODS)
    assert "patch" not in rows[1]["rank"]  # no gold patch for that task
    assert rows[2]["rank"]["edit"]["brainbox"][0] == 1.0
    # the conditional probe: only a file memory has seen counts, ranked among those
    assert rows[0]["conditional"] == {} and rows[1]["conditional"] == {}
    again = L.series("o/a", tasks()[:1] + [Task(**{**tasks()[0].__dict__, "id": "o__a-6",
                                                   "order": 6})], tar, {})
    assert set(again[1]["conditional"]) == {"brainbox", "memory"}
    assert again[1]["conditional"]["memory"][2] == 1.0  # the one file memory knows


def test_run_scores_only_tasks_at_or_after_the_snapshot(tmp_path):
    folder = tmp_path / "snaps"
    make_snapshot(folder, "o/a", FILES, 12)
    make_snapshot(folder, "o/b", {"z.py": "z = 1\n"}, None)
    other = [Task(**{**t.__dict__, "repo": "o/b", "id": "o__b-1"}) for t in tasks()[:1]]
    doc = L.run([("test", "o/a", tasks()), ("test", "o/b", other),
                 ("test", "o/c", tasks()[:2])], folder, resamples=50)
    assert doc["skipped"] == {"no_snapshot": 2, "no_manifest_pr": 1, "before_snapshot": 1}
    assert doc["tasks"] == 2 and [r["id"] for r in doc["rows"]] == ["o__a-12", "o__a-20"]
    edit = doc["golds"]["edit"]
    assert edit["scored"] == 2 and set(edit["mean"]) == set(L.METHODS)
    assert set(edit["diff"]) == set(L.METHODS[1:])
    assert doc["golds"]["patch"]["scored"] == 0
    assert doc["conditional"]["scored"] == 0  # no task edits a file an earlier one did


# --- the command -------------------------------------------------------------------------

def test_replay_repos_takes_a_number_or_a_folder_and_refuses_the_rest(tmp_path):
    r = CliRunner().invoke(cli, ["replay", str(tmp_path), "--repos", "zero"])
    assert r.exit_code == 2 and "neither a number of repositories" in r.output
    r = CliRunner().invoke(cli, ["replay", str(tmp_path), "--repos", "0"])
    assert r.exit_code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    r = CliRunner().invoke(cli, ["replay", str(tmp_path), "--repos", str(empty)])
    assert r.exit_code == 1 and "no <owner>__<name>/<commit>.tar.gz snapshot" in r.output


@pytest.mark.skipif(not (SHARED / "repos" / "psf__requests").is_dir(),
                    reason="../shared/data is absent")
def test_replay_with_a_real_snapshot_reports_localization(tmp_path):
    src = SHARED / "trajectories" / "claude-code-swebench-lite"
    snaps = tmp_path / "repos"
    (snaps / "psf__requests").mkdir(parents=True)
    real = next((SHARED / "repos" / "psf__requests").glob("*.tar.gz"))
    (snaps / "psf__requests" / real.name).symlink_to(real)
    rows = (SHARED / "repos" / "MANIFEST.tsv").read_text().splitlines()
    (snaps / "MANIFEST.tsv").write_text(
        "\n".join([rows[0]] + [r for r in rows if r.startswith("psf/requests\t")]) + "\n")
    out = tmp_path / "r.json"
    r = CliRunner().invoke(cli, ["replay", str(src), "--repos", str(snaps), "--bootstrap",
                                 "100", "--max-tasks-per-repo", "3", "--no-progress",
                                 "--json-out", str(out), "--markdown", str(tmp_path / "r.md")],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    loc = json.loads(out.read_text())["localization"]
    assert loc["tasks"] == 3 and loc["skipped"]["no_snapshot"] > 0
    patch = loc["golds"]["patch"]
    assert patch["scored"] >= 1 and set(patch["mean"]) == set(L.METHODS)
    assert all(r["repo"] == "psf/requests" for r in loc["rows"])
    md = (tmp_path / "r.md").read_text()
    assert "## Whole-repository localization" in md and "files of the gold patch" in md
