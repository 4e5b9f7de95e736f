"""brainbox: a local behavioral memory for coding agents.

`import brainbox` stays cheap (no numpy, no numba): hooks run as fresh processes and the
record path is standard library only. `Memory` is imported lazily on first access.
"""

__version__ = "0.1.0"

__all__ = ["BrainboxError", "Memory", "__version__"]


class BrainboxError(Exception):
    """A domain error: the CLI prints its message on one line and exits 1."""


def __getattr__(name):
    if name == "Memory":
        from brainbox.memory import Memory

        return Memory
    raise AttributeError(f"module 'brainbox' has no attribute {name!r}")
