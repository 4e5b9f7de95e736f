"""Where brainbox keeps things: the home folder, the database and the daemon's socket.

The one place these are computed (they were computed in four). Standard library only and
no pathlib: the hook process imports this module on every prompt.

- The home is `$BRAINBOX_HOME`, else `~/.brainbox`.
- The database is `$BRAINBOX_DB`, else `<home>/brainbox.db`, made absolute (a hook names
  it in its request to the daemon, which may run in another folder).
- The socket is `<home>/daemon.sock`. When that path is too long for `sun_path` (108
  bytes; deep temporary folders reach it) it is `$XDG_RUNTIME_DIR/brainbox-<hash>.sock`
  when that folder is a private one of ours (mode 0700, lstat), else
  `/tmp/brainbox-<uid>/<hash>.sock` (the daemon makes and checks that folder).
"""

from __future__ import annotations

import os

SOCK_NAME = "daemon.sock"
DB_NAME = "brainbox.db"
TMP = "/tmp"  # the fallback socket folder's parent (tests point it elsewhere)
SUN_PATH_MAX = 100  # bytes of a socket path we use as is (sun_path holds 108 with the NUL)


def home() -> str:
    """The brainbox home folder (not created here)."""
    return os.environ.get("BRAINBOX_HOME") or os.path.join(os.path.expanduser("~"), ".brainbox")


def db_path() -> str:
    """The default database file, absolute."""
    return os.path.abspath(os.environ.get("BRAINBOX_DB") or os.path.join(home(), DB_NAME))


def is_home(folder) -> bool:
    """Is `folder` the brainbox home (where brainbox may tighten the mode to 0700)?"""
    return os.path.abspath(os.fspath(folder)) == os.path.abspath(home())


def private_runtime(run: str) -> bool:
    """`run` (normally $XDG_RUNTIME_DIR) is a real folder (lstat) of ours with mode 0700."""
    try:
        st = os.lstat(run)
    except OSError:
        return False
    return (st.st_mode & 0o170777) == 0o040700 and st.st_uid == os.geteuid()


def socket_path(home_dir=None) -> str:
    """The daemon socket of `home_dir` (default: `home()`)."""
    base = os.fspath(home_dir) if home_dir is not None else home()
    path = os.path.abspath(os.path.join(base, SOCK_NAME))
    if len(path.encode()) <= SUN_PATH_MAX:
        return path
    import hashlib

    digest = hashlib.sha1(path.encode()).hexdigest()[:16]
    run = os.environ.get("XDG_RUNTIME_DIR") or ""
    if run.startswith("/") and len(run.encode()) <= 70 and private_runtime(run):
        return os.path.join(run, f"brainbox-{digest}.sock")
    return f"{TMP}/brainbox-{os.geteuid()}/{digest}.sock"
