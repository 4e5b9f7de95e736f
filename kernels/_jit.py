"""The project's numba policy, in one place.

Every kernel is decorated with :func:`jit`; no module calls ``numba.njit`` directly, so a
change of policy (caching, fastmath, parallel) is one edit here.

- ``nogil=True``: kernels release the GIL, so a daemon can serve recall while folding.
- ``cache=True``: hooks run as fresh processes; a cached kernel loads in milliseconds where a
  compile takes seconds (DESIGN §8). The cache directory must be writable
  (``NUMBA_CACHE_DIR``).
- ``fastmath=False``: kernels must agree bit for bit with ``tests/reference.py`` and a rebuild
  from the event log must equal the incremental state; turn it on only where measured.

The cache is keyed by the kernels' own source: numba checks only the source file of each
cached function, not the kernels it calls (``replay_task`` compiles ``fold_touches`` into
itself), so an edited ``hebbian.py`` would leave a stale ``replay_task`` in the cache. The
cache directory (``NUMBA_CACHE_DIR``, else ``~/.cache/brainbox/numba``) therefore gets a
subdirectory named by a hash of every module of this package.

``NUMBA_DISABLE_JIT=1`` makes ``numba.njit`` return the plain Python function, so every
kernel also runs (slowly) as Python; the kernel tests run once that way too.
"""

import hashlib
import os
from pathlib import Path

import numba


def _cache_dir() -> str:
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for src in sorted(here.glob("*.py")):
        digest.update(src.name.encode())
        digest.update(src.read_bytes())
    base = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "brainbox", "numba")
    return os.path.join(base, "kernels-" + digest.hexdigest()[:16])


numba.config.CACHE_DIR = _cache_dir()

DEFAULTS = {"nogil": True, "cache": True, "fastmath": False}


def jit(*args, **kw):
    """``numba.njit`` with the project defaults; use as ``@jit`` or ``@jit(option=...)``."""
    return numba.njit(*args, **{**DEFAULTS, **kw})
