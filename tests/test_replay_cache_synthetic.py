"""The input cache for the synthetic workload (brainbox.eval.cache.synthetic_stream): a
second replay of the same ``--synthetic`` settings reads the generated and normalised tasks
instead of generating and normalising them, with identical records; other settings or
another project are other entries; a corrupt entry is regenerated; an early stop writes
nothing; ``--no-cache`` bypasses it. Needs no data."""

import json
import os
import stat
import subprocess
import sys

from brainbox.eval import cache as C
from brainbox.eval import sources as S
from brainbox.eval.replay import normalized

SPEC = S.synthetic_spec(3000, 2)


def _make(spec=SPEC, project=0):
    return lambda: S.synthetic_tasks(spec, project)


def _entries():
    d = C.cache_dir() / "tasks"
    return sorted(d.glob("*" + C.SUFFIX)) if d.is_dir() else []


def test_cold_writes_then_warm_reads_the_generators_tasks():
    fresh = list(S.synthetic_tasks(SPEC, 0))
    stats = {}
    cold = list(C.synthetic_stream(SPEC, 0, _make(), stats))
    assert stats == {"hit": 0, "written": 1, "corrupt": 0}
    assert cold == fresh
    warm_stats = {}
    warm = list(C.synthetic_stream(SPEC, 0, _make(), warm_stats))
    assert warm_stats == {"hit": 1, "written": 0, "corrupt": 0}
    assert warm == fresh
    # the cached normalisation is what normalising the generated events gives
    assert [normalized(t, False) for t in warm] == [normalized(t, False) for t in fresh]
    assert all(getattr(t, "normalized_json", None) for t in warm)
    (path,) = _entries()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_each_project_and_setting_is_its_own_entry():
    keys = {C.synthetic_key(SPEC, 0), C.synthetic_key(SPEC, 1),
            C.synthetic_key(S.synthetic_spec(3000, 2, seed=8), 0),
            C.synthetic_key(S.synthetic_spec(4000, 2), 0)}
    assert len(keys) == 4
    for p in (0, 1):
        list(C.synthetic_stream(SPEC, p, _make(project=p)))
    assert len(_entries()) == 2
    stats = {}
    assert list(C.synthetic_stream(SPEC, 1, _make(project=1), stats)) == \
        list(S.synthetic_tasks(SPEC, 1))
    assert stats["hit"] == 1


def test_a_corrupt_entry_is_regenerated_and_rewritten():
    list(C.synthetic_stream(SPEC, 0, _make()))
    (path,) = _entries()
    path.write_bytes(b"not gzip at all")
    stats = {}
    tasks = list(C.synthetic_stream(SPEC, 0, _make(), stats))
    assert stats == {"hit": 0, "written": 1, "corrupt": 1}
    assert tasks == list(S.synthetic_tasks(SPEC, 0))
    stats = {}
    list(C.synthetic_stream(SPEC, 0, _make(), stats))
    assert stats["hit"] == 1


def test_a_consumer_that_stops_early_leaves_no_entry():
    stream = C.synthetic_stream(SPEC, 0, _make())
    next(stream)
    stream.close()
    assert _entries() == []


def _replay(*extra):
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "replay", "--synthetic", "3000",
                          "--projects", "2", "--synthetic-shape", "uniform", "--json",
                          "--no-progress", "--bootstrap", "20", *extra],
                         capture_output=True, text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    return doc, doc.pop("timings")["cache"]


def test_cold_then_warm_synthetic_replay_give_the_same_json():
    cold, c1 = _replay()
    warm, c2 = _replay()
    assert c1 == {"hit": 0, "written": 2, "corrupt": 0}
    assert c2 == {"hit": 2, "written": 0, "corrupt": 0}
    assert warm == cold
    bypass, c3 = _replay("--no-cache")
    assert c3 is None and bypass == cold
