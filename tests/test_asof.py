"""`--as-of T` (issue 19 item 1, `brainbox.asof`): the answer of the memory that only ever
saw the events with `at` <= T, and nothing written."""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3

import pytest
from click.testing import CliRunner

from brainbox import store
from brainbox.asof import AsOf
from brainbox.cli.app import cli
from brainbox.memory import Memory
from brainbox.workload import generate

VOLATILE = ("served_by", "elapsed_ms", "as_of", "db_bytes", "db_path")


def run(db, *args):
    out = CliRunner().invoke(cli, ["--db", str(db), *map(str, args)], catch_exceptions=False)
    return out


def answer(db, *args) -> dict:
    out = run(db, *args, "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    return {k: v for k, v in data.items() if k not in VOLATILE}


def truncated(src, dst, t: float) -> None:
    """A database that only ever saw the events of `src` with at <= t (their ids kept)."""
    store.connect(dst).close()
    conn = sqlite3.connect(dst)
    conn.execute("ATTACH DATABASE ? AS src", (str(src),))
    conn.execute("INSERT INTO events SELECT * FROM src.events WHERE at <= ? ORDER BY id", (t,))
    conn.commit()
    conn.close()


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    """The demo's workload over two projects, 10% of its times moved back up to an hour
    (concurrent sessions: `at` is not monotonic in id order), recorded and folded."""
    rng = random.Random(19)
    raw = list(generate(events=900, files=40, projects=2, seed=11))
    for ev in raw:
        if rng.random() < 0.1:
            ev["at"] = float(ev["at"]) - rng.uniform(0, 3600)
    path = tmp_path_factory.mktemp("asof") / "full.db"
    with Memory.open(path) as mem:
        mem.record(raw)
        mem.sync()
    return path, raw


def test_as_of_matches_the_truncated_memory_on_the_demo_workload_at_10_random_times(
        workload, tmp_path):
    path, raw = workload
    times = sorted(float(e["at"]) for e in raw)
    assert times != [float(e["at"]) for e in raw]  # the log's ids are not in time order
    rng = random.Random(7)
    prompts = [e["prompt"] for e in raw if e.get("prompt")]
    projects = sorted({e["project"] for e in raw})
    sessions = sorted({e["session"] for e in raw})
    found = 0
    for i in range(10):
        t = rng.choice(times[20:])  # an event's time: the fold's clock is T itself
        cut = tmp_path / f"cut{i}.db"
        truncated(path, cut, t)
        query, project = rng.choice(prompts), rng.choice(projects)
        session = rng.choice(sessions)
        for args in (("recall", query, "--project", project, "--limit", 20),
                     ("recall", query, "--project", project, "--session", session),
                     ("predict", "--session", session, "--limit", 5), ("predict",),
                     ("stats",)):
            want = answer(cut, *args)
            got = answer(path, *args, "--as-of", t)
            assert got == want, (t, args)
            found += len(got.get("results") or got.get("tools") or ())
        assert answer(path, "stats", "--as-of", t)["events"] == sum(x <= t for x in times)
    assert found > 50  # the answers compared are not empty


def test_as_of_between_two_events_is_the_memory_that_saw_those_before(workload, tmp_path):
    path, raw = workload
    times = sorted(float(e["at"]) for e in raw)
    t = (times[400] + times[401]) / 2
    cut = tmp_path / "cut.db"
    truncated(path, cut, t)
    project = raw[0]["project"]
    with Memory.open(cut) as mem, AsOf.open(path, t) as past:
        for q in ("auth login", "billing invoice", ""):
            assert [r.as_dict() for r in past.recall(q, project=project, limit=30)] == \
                [r.as_dict() for r in mem.recall(q, project=project, limit=30)]
        assert past.state.clock == mem.state.clock == times[400]
        st = mem.state
        for rid in list(st.proj_files[project])[:5]:
            assert past.explain(st.res_key[rid], "auth", project=project) == \
                mem.explain(st.res_key[rid], "auth", project=project)


def test_as_of_writes_nothing_and_bad_times_are_one_line(workload, tmp_path):
    _, raw = workload
    db = tmp_path / "m.db"
    with Memory.open(db) as mem:
        mem.record(raw[:300])  # recorded, not folded: a plain read would fold and save
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    t = sorted(float(e["at"]) for e in raw[:300])[150]
    for args in (("recall", "auth", "--project", raw[0]["project"]), ("predict",), ("stats",),
                 ("log",), ("log", "--excluded")):
        assert run(db, *args, "--as-of", t).exit_code == 0, args
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    early = run(db, "stats", "--as-of", "2001-01-01")
    assert early.exit_code == 1
    assert len(early.stderr.strip().splitlines()) == 1
    assert early.stderr.startswith("brainbox: --as-of 2001-01-01T00:00:00Z is before the "
                                   "first event (")
    bad = run(db, "recall", "x", "--as-of", "yesterday")
    assert bad.exit_code == 2 and "--as-of" in bad.stderr and "yesterday" in bad.stderr
    empty = run(tmp_path / "empty.db", "stats", "--as-of", "1d")
    assert empty.exit_code == 1 and "no events" in empty.stderr


def test_as_of_a_span_ago_after_every_event_is_todays_answer(workload):
    path, raw = workload
    project = raw[0]["project"]
    for args in (("recall", "auth login", "--project", project), ("predict",)):
        assert answer(path, *args, "--as-of", "2d") == answer(path, *args)
    iso = answer(path, "stats", "--as-of", "2025-10-09T09:00:00+00:00")
    assert 0 < iso["events"] < len(raw)


def test_log_as_of_shows_what_was_scored_and_pending_then(tmp_path):
    db = tmp_path / "m.db"
    repo = str(tmp_path / "repo")
    item = {"used": True, "edited": False, "rank": 1, "via": None, "channels": {"lexical": 1},
            "confidence": 0.5}
    with Memory.open(db) as mem:
        mem.record({"session": "a", "cwd": repo, "project": repo, "tool": "Read",
                    "files": ["src/a.py"], "at": 900.0})
        for sess, shown, scored, path in (("s1", 1000.0, 1100.0, "src/a.py"),
                                          ("s2", 1200.0, 1400.0, "src/b.py"),
                                          ("s3", 1500.0, 1600.0, "src/c.py")):
            mem.record({"session": sess, "cwd": repo, "project": repo, "kind": "feedback",
                        "at": scored, "meta": {"op": "feedback", "reward": 1.0,
                                               "suggestions": 1, "items": [
                                                   dict(item, path=path, at=shown)]}})
    rows = json.loads(run(db, "log", "--as-of", 1300, "--json").stdout)
    assert [(r["path"], r["outcome"], r["at"]) for r in rows] == [
        ("src/b.py", "pending", 1200.0), ("src/a.py", "read", 1000.0)]
    now = json.loads(run(db, "log", "--json").stdout)
    assert [(r["path"], r["outcome"]) for r in now] == [
        ("src/c.py", "read"), ("src/b.py", "read"), ("src/a.py", "read")]


def test_mcp_tools_take_as_of(workload, monkeypatch):
    pytest.importorskip("mcp")
    from tests.test_mcp import run_session

    path, raw = workload
    monkeypatch.setenv("BRAINBOX_DB", str(path))
    t = sorted(float(e["at"]) for e in raw)[300]
    project = raw[0]["project"]

    async def script(s):
        out = {}
        for name, args in (("recall", {"query": "auth login", "project": project}),
                           ("predict_next", {"session": raw[0]["session"]}), ("stats", {})):
            for key, extra in (("now", {}), ("past", {"as_of": str(t)})):
                r = await s.call_tool(name, {**args, **extra})
                assert not r.isError, r.content
                out[name, key] = json.loads(r.content[0].text)
        out["bad"] = await s.call_tool("stats", {"as_of": "soon"})
        return out

    out = run_session(script)
    with AsOf.open(path, t) as past:
        assert out["recall", "past"]["results"] == [
            r.as_dict() for r in past.recall("auth login", project=project)]
        assert out["stats", "past"]["events"] == past.stats()["events"] < len(raw)
    assert out["stats", "now"]["events"] == len(raw)
    assert out["bad"].isError and "as_of" in out["bad"].content[0].text
