"""The project's numba policy, in one place.

Every kernel is decorated with :func:`jit`; no module calls ``numba.njit`` directly, so a
change of policy (caching, fastmath, parallel) is one edit here.

- ``nogil=True``: kernels release the GIL, so a daemon can serve recall while folding.
- ``cache=True``: hooks run as fresh processes; a cached kernel loads in milliseconds where a
  compile takes seconds (DESIGN §8). The cache directory must be writable
  (``NUMBA_CACHE_DIR``).
- ``fastmath=False``: kernels must agree bit for bit with ``tests/reference.py`` and a rebuild
  from the event log must equal the incremental state; turn it on only where measured.

``NUMBA_DISABLE_JIT=1`` makes ``numba.njit`` return the plain Python function, so every
kernel also runs (slowly) as Python; the kernel tests run once that way too.
"""

import numba

DEFAULTS = {"nogil": True, "cache": True, "fastmath": False}


def jit(*args, **kw):
    """``numba.njit`` with the project defaults; use as ``@jit`` or ``@jit(option=...)``."""
    return numba.njit(*args, **{**DEFAULTS, **kw})
