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
subdirectory named by a hash of the package's modules that compile (``_cache.source_hash``).

Two ways to run without compiling, both giving the plain Python function of every kernel:
``NUMBA_DISABLE_JIT=1`` (numba's own switch; the kernel tests run once that way too) and
``_cache.MODE == "python"`` (set by ``brainbox.jitmode`` before the first kernel module is
imported, or ``BRAINBOX_JIT=python``), which does not even import numba (0.27 s of the
0.46 s that ``import brainbox.kernels`` took, ``python -X importtime``). That is the path
of a first command on a cold cache: on the demo memory (480 events) a recall in Python took
0.5 s where compiling its kernels took 55 s (benchmarks/measure_compile.py).
"""

from brainbox.kernels import _cache

DEFAULTS = {"nogil": True, "cache": True, "fastmath": False}
PYTHON = _cache.MODE == "python"

if PYTHON:
    def jit(*args, **kw):
        """Python mode: the function itself (as ``numba.njit`` under ``NUMBA_DISABLE_JIT``)."""
        if len(args) == 1 and callable(args[0]) and not kw:
            return args[0]
        return lambda fn: fn
else:
    import numba

    numba.config.CACHE_DIR = _cache.cache_dir()

    def jit(*args, **kw):
        """``numba.njit`` with the project defaults; use as ``@jit`` or ``@jit(option=...)``."""
        return numba.njit(*args, **{**DEFAULTS, **kw})
