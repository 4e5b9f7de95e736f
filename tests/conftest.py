import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
DATA = SHARED / "data"


@pytest.fixture(autouse=True)
def brainbox_home(tmp_path, monkeypatch):
    """Every test gets its own BRAINBOX_HOME; nothing touches the user's memory."""
    home = tmp_path / "bbhome"
    monkeypatch.setenv("BRAINBOX_HOME", str(home))
    monkeypatch.delenv("BRAINBOX_DB", raising=False)
    # the replay's input cache (brainbox.eval.cache) of this test only, never ~/.cache
    monkeypatch.setenv("BRAINBOX_CACHE_DIR", str(tmp_path / "bbcache"))
    # A daemon a test's hook starts and the test does not stop (a prompt hook spawns one
    # after answering) exits after two idle minutes, not the default 30: one such daemon
    # per run of tests/test_startup.py outlived the run, its home deleted.
    monkeypatch.setenv("BRAINBOX_DAEMON_IDLE", "120")
    # Each test starts as a fresh process would: no SQLite library chosen yet
    # (storage.db._driver keeps one per process).
    from brainbox.storage import db

    monkeypatch.setattr(db, "_PROCESS_DRIVER", None)
    return home


@pytest.fixture(scope="module")
def pinned_commit():
    """Other engineers commit while tests run: the replay reports of a module carry one
    pinned commit, so reports made minutes apart compare (tests/test_replay_dist.py)."""
    from brainbox.eval import runner

    mp = pytest.MonkeyPatch()
    mp.setattr(runner, "source_commit", lambda: ("pinned", False))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def warm():
    from brainbox.warm import warmup

    warmup()  # load (or compile) the kernels once, not inside a hook's budget


@pytest.fixture
def hooks_inprocess(monkeypatch, brainbox_home, warm):
    """A hook's `main` runs inside pytest: no os._exit watchdog, no daemon spawned, and a
    prompt budget for a loaded test machine (behaviour is tested there, not speed)."""
    from brainbox.cli import client, hooks

    monkeypatch.setattr(hooks, "HARD_EXIT", False)
    monkeypatch.setenv("BRAINBOX_DAEMON", "off")
    monkeypatch.setenv("BRAINBOX_HOOK_BUDGET_PROMPT", "20")
    yield
    if brainbox_home.exists():
        client.stop(brainbox_home, wait=5)


@pytest.fixture
def data_dir():
    if not DATA.is_dir():
        pytest.skip("../shared/data is absent")
    return DATA


@pytest.fixture
def sympy_core(tmp_path):
    """``extract(n)``: the first ``n`` ``sympy/core/*.py`` files of the sympy snapshot
    (``data/repos``), extracted into a fresh folder, which it returns; skips when absent."""
    import tarfile

    folder = DATA / "repos" / "sympy__sympy"
    archives = sorted(folder.glob("*.tar.gz")) if folder.is_dir() else []
    if not archives:
        pytest.skip("../shared/data/repos/sympy__sympy is absent")

    def extract(n: int) -> Path:
        root = tmp_path / "sympy"
        root.mkdir()
        with tarfile.open(archives[0]) as tar:
            members = sorted((m for m in tar.getmembers()
                              if m.isfile() and m.name.endswith(".py")
                              and m.name.startswith("sympy/core/")), key=lambda m: m.name)[:n]
            tar.extractall(root, members=members, filter="data")
        return root

    return extract


def pytest_configure(config):
    os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".numba-cache"))
    # A command that opens a memory on a cold cache starts `brainbox warmup` in the
    # background (brainbox.jitmode); in tests that would compile beside every test.
    os.environ.setdefault("BRAINBOX_NO_BACKGROUND_WARMUP", "1")
    # Fix this process's kernel mode now (compiled, unless NUMBA_DISABLE_JIT=1): otherwise the
    # first in-process command on a cold cache would pick the Python kernels for the whole
    # session, and the compiled kernels would go untested. Subprocesses choose their own.
    import brainbox.kernels._jit  # noqa: F401

