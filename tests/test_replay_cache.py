"""The replay's input cache (brainbox.eval.cache): a second replay of the same inputs reads
the loaded and normalised tasks instead of parsing, with identical results; a touched or
changed input file invalidates exactly its entry; a corrupt entry is rebuilt; files 0600
in 0700 folders; `--no-cache` and `brainbox cache clear [--dry-run]`. On a slice of the
SWE-agent (Java) trajectories of /work/shared/data (skipped when absent)."""

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from brainbox.eval import cache as C
from brainbox.eval import sources as S
from brainbox.eval import views as V
from brainbox.eval.replay import normalized

TRAJS = Path(__file__).resolve().parents[2] / "shared" / "data" / "trajectories" / \
    "sweagent-java-multiswebench" / "trajs"
pytestmark = pytest.mark.skipif(not TRAJS.is_dir(), reason="no SWE-agent trajectories")


@pytest.fixture
def source(tmp_path):
    """Two repositories' trajectories (9 tasks), copied so a test may change them."""
    src = tmp_path / "sweagent-slice"
    (src / "trajs").mkdir(parents=True)
    for p in sorted(TRAJS.glob("apache__dubbo-*.traj")) + sorted(TRAJS.glob("google__gson-*")):
        shutil.copyfile(p, src / "trajs" / p.name)
        os.chmod(src / "trajs" / p.name, 0o644)
    return src


def _entries():
    return {p.name: p.read_bytes() for p in (C.cache_dir() / "tasks").glob("*.jsonl.gz")}


def _canonical(tasks):
    """Tasks with their normalised events, ``at`` aside: normalising an event without a
    time stamps it now, and the replay sets every event's ``at`` itself."""
    def norm(t, shown):
        evs, skipped = normalized(t, shown)
        return [{k: v for k, v in e.items() if k != "at"} for e in evs], skipped
    return [(t, norm(t, False), norm(t, True)) for t in tasks]


def test_warm_load_reads_entries_and_equals_a_fresh_parse(source):
    tasks, warns = S.load_source(source)
    cold = S.load_input("s", source)
    assert cold[3] == {"hit": 0, "written": 9, "corrupt": 0}
    warm = S.load_input("s", source)
    assert warm[3] == {"hit": 9, "written": 0, "corrupt": 0}
    assert warm[0] == tasks and warm[1] == warns
    assert _canonical(warm[0]) == _canonical(tasks)  # cached normalisation = live
    assert warm[2] == S.manifest("s", source)  # the manifest is the one the JSON reports
    # the repo view of cached tasks normalises as the repo view of parsed ones
    live, cached = V.repo_view(tasks), V.repo_view(warm[0])
    assert any(getattr(t, "normalized_patch", None) for t in cached)
    assert _canonical(cached) == _canonical(live)
    # 0700 folders, 0600 files, under BRAINBOX_CACHE_DIR (tests: their tmp folder)
    folder = C.cache_dir()
    assert folder == Path(os.environ["BRAINBOX_CACHE_DIR"])
    for p in [folder, *folder.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), (p, oct(mode))


def test_touching_or_changing_one_file_invalidates_exactly_its_entry(source):
    S.load_input("s", source)
    before = _entries()
    assert len(before) == 9
    victim = source / "trajs" / "google__gson-1093.traj"
    st = victim.stat()
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # touch
    again = S.load_input("s", source)
    assert again[3]["written"] == 1
    after = _entries()
    assert set(before) <= set(after) and len(after) == 10  # one new entry, none rewritten
    assert all(after[k] == v for k, v in before.items())
    assert S.load_input("s", source)[3] == {"hit": 9, "written": 0, "corrupt": 0}

    doc = json.loads(victim.read_text())  # a changed file: its entry only, new content
    doc["history"] = doc["history"][:3]
    victim.write_text(json.dumps(doc))
    got = S.load_input("s", source)
    assert got[3]["written"] == 1 and len(_entries()) == 11
    assert got[0] == S.load_source(source)[0]


def test_a_corrupt_entry_is_ignored_and_rebuilt(source):
    tasks = S.load_input("s", source)[0]
    names = sorted(_entries())
    (C.cache_dir() / "tasks" / names[0]).write_bytes(b"not gzip")
    (C.cache_dir() / "tasks" / names[1]).write_bytes(b"")  # a truncated one
    got = S.load_input("s", source)
    assert got[3]["corrupt"] >= 1 and got[3]["written"] == 2
    assert got[0] == tasks and _canonical(got[0]) == _canonical(tasks)
    assert S.load_input("s", source)[3] == {"hit": 9, "written": 0, "corrupt": 0}


def test_no_cache_neither_reads_nor_writes(source):
    tasks, _, _, stats = S.load_input("s", source, cache=False)
    assert stats is None and not C.cache_dir().exists()
    assert tasks == S.load_source(source)[0]


def _brainbox(*args, env=None):
    return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", *args],
                          capture_output=True, text=True, env=env or os.environ.copy(),
                          timeout=900)


def test_cache_info_and_clear_dry_run_then_clear(source):
    S.load_input("s", source)
    foreign = C.cache_dir() / "notes.txt"  # not the cache's: clear leaves it
    foreign.write_text("mine")
    info = _brainbox("cache", "info", "--json")
    assert info.returncode == 0, info.stderr
    doc = json.loads(info.stdout)
    assert doc["entries"] == 9 and doc["sources"] == 1 and doc["bytes"] > 0
    dry = _brainbox("cache", "clear", "--dry-run")
    assert dry.returncode == 0 and "would remove 9 entries" in dry.stdout
    assert len(_entries()) == 9
    done = _brainbox("cache", "clear")
    assert done.returncode == 0 and "removed 9 entries" in done.stdout
    assert not (C.cache_dir() / "tasks").exists() and foreign.read_text() == "mine"
    assert S.load_input("s", source)[3]["written"] == 9  # refilled by the next load


def _replay(source, *extra):
    out = _brainbox("replay", str(source), "--json", "--no-progress", "--bootstrap", "50",
                    *extra)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    cache = doc.pop("timings")["cache"]
    return doc, cache


@pytest.mark.slow
def test_cold_then_warm_replay_give_the_same_json(source):
    """Two worker processes read (and on the cold run write) the cache."""
    cold, c1 = _replay(source, "--workers", "2")
    warm, c2 = _replay(source, "--workers", "2")
    assert c1 == {"hit": 0, "written": 9, "corrupt": 0}
    assert c2 == {"hit": 9, "written": 0, "corrupt": 0}
    assert warm == cold
    bypass, c3 = _replay(source, "--no-cache")
    assert c3 is None and bypass == cold
