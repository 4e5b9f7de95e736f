"""The procedures' offline evaluation (issue 18 Deliver 5, `brainbox.eval.procedures_eval`,
`brainbox replay SOURCE --procedures`): a later task that hits an error with a live
procedure is counted, the procedure's files are scored against the files then edited,
beside the frequency baseline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from brainbox.eval.procedures_eval import series_rows, summary

FP = "PYTHON_KEY_ERROR|key_lookup"
SOURCE = (Path(__file__).resolve().parents[2] / "shared" / "data" / "trajectories"
          / "openhands-codeact-verified50")


def run(session, *, fail, fp=FP):
    return {"kind": "tool", "session": session, "tool": "Bash:pytest", "action": "run",
            "files": ["tests/test_x.py"], "error_fp": fp if fail else None,
            "exit_code": 1 if fail else 0}


def edit(session, path):
    return {"kind": "tool", "session": session, "tool": "Edit", "action": "edit",
            "files": [path], "error_fp": None, "exit_code": None}


def test_a_later_task_hitting_the_error_is_scored_against_its_edits_and_the_baseline():
    first = [edit("t1", "notes.py"), edit("t1", "notes.py"),
             run("t1", fail=True), edit("t1", "src/a.py"), run("t1", fail=False),
             run("t1", fail=True)]  # mined in this very task: no hit for it
    second = [run("t2", fail=True), edit("t2", "src/a.py"), edit("t2", "src/b.py"),
              run("t2", fail=False)]
    third = [run("t3", fail=True, fp="PYTHON_TYPE_ERROR|operator"), edit("t3", "src/c.py")]
    rows = series_rows([("t1", first), ("t2", second), ("t3", third)], "repo")
    assert [r["hit"] for r in rows] == [False, True, False]
    r = rows[1]
    assert r["fingerprint"] == FP and r["files"] == ["src/a.py"]
    assert r["edited_after"] == ["src/a.py", "src/b.py"]
    assert (r["precision"], r["recall"]) == (1.0, 0.5)
    assert r["baseline"] == ["notes.py"]  # edited twice before: the most edited so far
    assert (r["base_precision"], r["base_recall"]) == (0.0, 0.0)
    s = summary(rows, resamples=50)
    assert (s["tasks"], s["tasks_with_history"], s["hits"]) == (3, 2, 1)
    assert s["hit_rate"] == 0.5 and s["fingerprints"] == {FP: 1}
    assert s["precision"]["procedure"] == 1.0 and s["precision"]["diff"] == 1.0
    assert s["recall"]["ci"] == [0.5, 0.5]


def test_a_procedure_retired_by_earlier_tasks_is_not_a_hit():
    fix = [run("t1", fail=True), edit("t1", "src/a.py"), run("t1", fail=False)]
    misled = [[run(s, fail=True), edit(s, "src/a.py"), run(s, fail=True)] for s in ("m1", "m2")]
    later = [run("t9", fail=True), edit("t9", "src/z.py")]
    rows = series_rows([("t1", fix), ("m1", misled[0]), ("m2", misled[1]), ("t9", later)],
                       "repo")
    assert [r["hit"] for r in rows] == [False, True, True, False]
    assert summary(rows, resamples=10)["recall"]["n"] == 2


def test_a_task_that_edits_nothing_after_the_hit_has_no_recall():
    fix = [run("t1", fail=True), edit("t1", "src/a.py"), run("t1", fail=False)]
    rows = series_rows([("t1", fix), ("t2", [run("t2", fail=True)])], "repo")
    assert rows[1]["hit"] and rows[1]["precision"] == 0.0 and rows[1]["recall"] is None
    s = summary(rows, resamples=10)
    assert s["precision"]["n"] == 1 and s["recall"]["n"] == 0 and s["recall"]["ci"] is None


@pytest.mark.skipif(not SOURCE.is_dir(), reason="../shared/data is absent")
def test_replay_procedures_on_a_real_source(tmp_path):
    out = tmp_path / "p.json"
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "replay", str(SOURCE),
                        "--procedures", "--json-out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "openhands-codeact-verified50:" in r.stdout and "frequency baseline" in r.stdout
    doc = json.loads(out.read_text())
    s = doc["sources"]["openhands-codeact-verified50"]
    rows = doc["rows"]["openhands-codeact-verified50"]
    assert s["tasks"] == len(rows) > 0 and s["hits"] == sum(x["hit"] for x in rows)
    assert not rows[0]["hit"]  # the first task of each repository has nothing mined
    bad = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "replay",
                          "--procedures"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--procedures replays trajectory SOURCEs" in bad.stderr
