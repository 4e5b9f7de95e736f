"""Where the kernels' numba cache lives, whether it is warm, and how kernels run (standard
library only: importing this module imports neither numpy nor numba, so the policy in
``brainbox.jitmode`` can read it before any kernel is decorated).

- The cache directory is ``NUMBA_CACHE_DIR``, else ``~/.cache/brainbox/numba``, with a
  subdirectory named by a hash of the modules that compile (see ``_jit``: numba checks
  only the source file of each cached function, not the kernels it calls).
- The warm marker is a file in that subdirectory, written by ``brainbox warmup``
  (``brainbox.warm``) once every engine kernel is in the cache; its name carries the numba
  and Python versions (numba's cache is keyed by both), so an upgrade of either leaves no
  marker behind.
- ``MODE`` is ``"numba"`` (kernels compiled, loaded from the cache) or ``"python"`` (every
  kernel runs as its plain Python function, as under ``NUMBA_DISABLE_JIT=1``, and numba is
  not even imported). It is read once, when ``_jit`` is imported: set it (or the
  environment variable ``BRAINBOX_JIT=python``) before the first kernel module is imported.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = ("numba", "python")
MODE = "python" if os.environ.get("BRAINBOX_JIT", "").lower() in ("python", "off", "0") else "numba"
_HASH: str | None = None
_NUMBA: str | None = None


def source_hash() -> str:
    """sha256 (16 hex digits) of the package's modules that define compiled code, their
    paths relative to the package and their bytes, sub-packages included (``kernels/replay/``:
    its loop compiles engine kernels into itself, and they it); not the ``__init__`` modules
    and this one, which compile nothing (editing them does not send every process to a cold
    cache)."""
    global _HASH
    if _HASH is None:
        _HASH = tree_hash(HERE)
    return _HASH


def tree_hash(root: Path) -> str:
    """``source_hash`` of the package folder ``root`` (uncached)."""
    digest = hashlib.sha256()
    for src in sorted(root.rglob("*.py")):
        if src.name in ("__init__.py", "_cache.py") or "__pycache__" in src.parts:
            continue
        digest.update(src.relative_to(root).as_posix().encode())
        digest.update(src.read_bytes())
    return digest.hexdigest()[:16]


def base_dir() -> str:
    return os.environ.get("NUMBA_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "brainbox", "numba")


def cache_dir() -> str:
    """The directory numba caches this package's kernels in (``numba.config.CACHE_DIR``)."""
    return os.path.join(base_dir(), "kernels-" + source_hash())


def numba_version() -> str:
    """numba's version without importing numba, nor ``importlib.metadata`` (its import took
    15-90 ms here, most of a warm ``install``): the name of the ``dist-info`` folder beside
    the package, else the metadata."""
    global _NUMBA
    if _NUMBA is None:
        spec = importlib.util.find_spec("numba")
        if spec is not None and spec.origin:
            site = Path(spec.origin).parent.parent
            found = sorted(site.glob("numba-*.dist-info"))
            if len(found) == 1:
                _NUMBA = found[0].name[len("numba-"):-len(".dist-info")]
        if _NUMBA is None:
            from importlib import metadata

            try:
                _NUMBA = metadata.version("numba")
            except metadata.PackageNotFoundError:  # pragma: no cover - a dependency
                _NUMBA = "none"
    return _NUMBA


def marker_path(part: str = "engine") -> str:
    """The warm marker of ``part`` ("engine": recall, record, predict, decay; "replay")."""
    py = f"py{sys.version_info[0]}{sys.version_info[1]}"
    return os.path.join(cache_dir(), f"warm-{part}-numba{numba_version()}-{py}.json")

