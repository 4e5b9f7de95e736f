"""`brainbox consolidate --keep` (issue 19, item 6): old raw events are folded into a
checkpoint and dropped; recall, predict and the stats' counts are what they were, a rebuild
from the checkpoint equals the state before, later events fold on as if nothing happened,
and the hash chain audits ok."""

import json
import subprocess
import sys

import numpy as np
import pytest

from brainbox import retention, store, workload
from brainbox.memory import Memory
from brainbox.storage import db

DAY = 86400.0
START = 1_760_000_000.0


def arrays(mem):
    """The folded state's arrays and resources, the watermark left out (the checkpoint's
    record is one more event)."""
    a = mem.state.to_arrays()
    extra = json.loads(a.pop("json").tobytes())
    extra.pop("watermark")
    return a, extra, mem.state.resource_rows(0)


def same(x, y):
    a1, e1, r1 = x
    a2, e2, r2 = y
    assert e1 == e2 and r1 == r2 and a1.keys() == a2.keys()
    for k in a1:
        assert np.array_equal(a1[k], a2[k]), k


def answers(mem, now):
    st = mem.stats()
    return ([(r.path, r.score) for r in mem.recall("fix the auth bug", project="/work/project0",
                                                   now=now)],
            [(r.path, r.score) for r in mem.recall("pytest error", project="/work/project0",
                                                   now=now, session="s000003")],
            mem.predict_tools("s000020"),
            {k: st[k] for k in ("resources", "associations", "sessions", "projects")})


@pytest.fixture
def evs():
    return list(workload.generate(1500, start=START))  # raw records, as `record` takes


def test_consolidate_keeps_the_state_and_rebuild_starts_from_the_checkpoint(tmp_path, evs):
    path = tmp_path / "r.db"
    mem = Memory.open(path)
    old, new = evs[:1200], evs[1200:]
    mem.record(old)
    now = max(e["at"] for e in old) + 1.0
    keep = (now - old[900]["at"]) / DAY  # about the last 300 events stay raw
    mem.sync()
    before, state_before = answers(mem, now), arrays(mem)
    n_before = db.count_events(mem.conn)

    assert before[0] and before[1] and before[2] and mem.state.n_res > 40
    dry = retention.consolidate(mem, f"{keep}d", now=now, dry_run=True)
    assert dry["dry_run"] and dry["events"] > 0 and db.count_events(mem.conn) == n_before
    got = retention.consolidate(mem, f"{keep}d", now=now)
    assert got["events"] == dry["events"] and 850 <= got["events"] <= 905, got
    assert db.count_events(mem.conn) == n_before - got["events"] + 1
    assert store.audit(mem.conn)["ok"]
    assert answers(mem, now) == before
    same(arrays(mem), state_before)
    (rec,) = [e for e in db.iter_events(mem.conn) if (e["meta"] or {}).get("op") == "checkpoint"]
    assert rec["meta"]["upto"] == got["upto"] and rec["meta"]["count"] == got["events"]
    mem.close()

    again = Memory.open(path)  # a fresh process: rebuild from the checkpoint
    again.rebuild()
    same(arrays(again), state_before)
    assert answers(again, now) == before
    # later events fold on exactly as in a memory that never consolidated
    again.record(new)
    again.sync()
    plain = Memory.in_memory()
    plain.record(evs)
    plain.sync()
    same(arrays(again), arrays(plain))
    later = max(e["at"] for e in new) + 1.0
    assert answers(again, later) == answers(plain, later)
    # a second consolidation starts from the first's checkpoint
    retention.consolidate(again, "0.5d", now=later)
    same(arrays(again), arrays(plain))
    assert store.audit(again.conn)["ok"]
    again.rebuild()
    same(arrays(again), arrays(plain))
    again.close()


def test_forget_refuses_a_file_the_checkpoint_holds(tmp_path, evs):
    from brainbox import BrainboxError

    mem = Memory.open(tmp_path / "f.db")
    mem.record(evs[:600])
    now = evs[599]["at"] + DAY
    retention.consolidate(mem, "0.5d", now=now)
    f = evs[5]["files"][0]
    n = db.count_events(mem.conn)
    with pytest.raises(BrainboxError, match="checkpoint"):
        mem.forget(f, project="/work/project0")
    assert db.count_events(mem.conn) == n
    mem.close()


def bb(*args):
    return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def test_consolidate_cli_dry_run_and_bad_keep(tmp_path, evs):
    path = tmp_path / "c.db"
    mem = Memory.open(path)
    mem.record([dict(e, at=e["at"] - START + 1_600_000_000.0) for e in evs[:300]])  # 2020
    mem.close()
    for bad in ("", "abc", "0d", "-3d"):
        r = bb("--db", path, "consolidate", "--keep", bad)
        assert r.returncode == 2 and "--keep" in r.stderr and "Traceback" not in r.stderr
    r = bb("--db", path, "consolidate", "--keep", "30d", "--dry-run", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["events"] == 300
    assert db.count_events(db.connect(path)) == 300
    r = bb("--db", path, "consolidate", "--keep", "30d")
    assert r.returncode == 0 and "folded 300 events" in r.stdout, r.stderr
    assert db.count_events(db.connect(path)) == 1
    r = bb("--db", path, "audit")
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stdout + r.stderr


def test_as_of_after_a_consolidation_starts_from_its_checkpoint(tmp_path, evs):
    """`--as-of` (brainbox.asof) folds from the checkpoint as `rebuild` does: a time after
    it answers what the live memory answered then; a time before it is refused."""
    from brainbox import BrainboxError
    from brainbox.asof import AsOf

    path = tmp_path / "a.db"
    mem = Memory.open(path)
    mem.record(evs[:1200])
    now = max(e["at"] for e in evs[:1200]) + 1.0
    retention.consolidate(mem, f"{(now - evs[900]['at']) / DAY}d", now=now)
    mem.sync()
    live = answers(mem, None)
    mem.close()
    t = max(e["at"] for e in evs[:1200])
    with AsOf.open(path, at=t) as past:
        assert answers(past, None) == live
    with pytest.raises(BrainboxError, match="before"):  # its events are gone
        AsOf.open(path, at=evs[100]["at"]).recall("fix the auth bug", project="/work/project0")
