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
    return home


@pytest.fixture
def data_dir():
    if not DATA.is_dir():
        pytest.skip("../shared/data is absent")
    return DATA


def pytest_configure(config):
    os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".numba-cache"))
