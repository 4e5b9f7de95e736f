"""Private folders and files: brainbox's home, its database and everything written beside it.

Standard library only (`os`, `stat`), and no `sqlite3`: the record hook, the prompt hook's
socket client and the daemon all call it. Every check is a `stat`/`lstat` or an `fstat` of
an open descriptor: a few microseconds, cheap enough for every hook.

Why (reliability trial 2026-12-01, D3, D8, D15): another local user pre-created the
socket folder `/tmp/brainbox-<uid>` with mode 0777 and took the daemon's socket over; a
shared `BRAINBOX_HOME` let another user plant the database (owner 4242, mode 0666), a log
symlink and a spool symlink, and brainbox used all three; log files followed the umask.

Rules:
- `private_dir(path)`: a folder brainbox writes into. Missing: created 0700 (parents too).
  Present: it may be a symlink to a folder (a home on another disk), but not a dangling
  one; the folder must be owned by us (or by root, who could read it anyway) and not
  writable by others, nor by a group other than our own primary group (with per-user
  groups, the default on Debian and Ubuntu, umask 002 makes 0775 folders). With
  `tighten` (brainbox's home, not a folder the user chose for `BRAINBOX_DB`) an own
  folder readable by others or writable by our own group is set to 0700; a foreign or
  shared-writable one is refused: files may already have been planted in it.
- `strict_dir(path)`: a folder in a world-writable parent (`/tmp/brainbox-<uid>`, the
  socket's fallback): made with a plain `mkdir` 0700; when it exists, `lstat` must show a
  real folder (not a symlink), owned by us, mode exactly 0700.
- `open_private(path, flags)`: `O_NOFOLLOW` (never through a symlink), then `fstat` of
  what was opened: a regular file, owned by us, one link (a hard link to another file is
  refused); mode tightened to 0600 when it is ours. A file is therefore 0600 whatever
  the umask, and never written through a link another user planted.
- `check_file(path)`: the same for a file opened by someone else (SQLite opens the
  database itself): it must be a regular file, not a symlink to someone else's file, owned
  by us; group/other bits on an own file are removed. A directory or a FIFO is refused
  before SQLite opens it (a FIFO would block the open forever).
- Failures raise `StoreError` with one line that names the path and what to do.
"""

from __future__ import annotations

import os
import stat


class StoreError(Exception):
    """The database or brainbox's home cannot be used: not brainbox's, corrupt, from a newer
    schema, unsafe (foreign owner, shared-writable folder, symlink), read-only or full."""


def _uid() -> int:
    return os.geteuid()


def _mode(st) -> str:
    return oct(stat.S_IMODE(st.st_mode))[2:].rjust(4, "0")


def private_dir(path, *, create: bool = True, what: str = "folder",
                tighten: bool = False) -> str:
    """Check (or create 0700) a folder brainbox writes into; returns it as a string."""
    path = os.fspath(path)
    try:
        lst = os.lstat(path)
    except FileNotFoundError:
        if not create:
            raise StoreError(f"{what} {path} does not exist") from None
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except FileExistsError:  # a dangling symlink somewhere on the way
            raise StoreError(f"{what} {path} is a dangling symlink; remove it or point it "
                             f"at a folder") from None
        except OSError as exc:
            raise StoreError(f"cannot create {what} {path}: {_reason(exc)}") from exc
        lst = os.lstat(path)
    st = lst
    if stat.S_ISLNK(lst.st_mode):
        try:
            st = os.stat(path)
        except OSError:
            raise StoreError(f"{what} {path} is a dangling symlink; remove it or point it "
                             f"at a folder") from None
    if not stat.S_ISDIR(st.st_mode):
        raise StoreError(f"{what} {path} is not a folder")
    if st.st_uid not in (_uid(), 0):
        raise StoreError(f"{what} {path} belongs to uid {st.st_uid}, not to you "
                         f"(uid {_uid()}); refusing to use it")
    if st.st_mode & 0o002 or (st.st_mode & 0o020 and st.st_gid != os.getegid()):
        raise StoreError(f"{what} {path} is writable by others (mode {_mode(st)}); "
                         f"refusing to use it: check its files, then chmod 700 it")
    if tighten and st.st_uid == _uid() and st.st_mode & 0o077:
        try:
            os.chmod(path, 0o700)
        except OSError:
            pass  # read-only file system: readable by others is not a reason to stop
    return path


def strict_dir(path) -> str | None:
    """A folder of our own inside a world-writable parent; returns why it is refused (one
    line) or None when it is safe (created here with a plain mkdir when missing)."""
    path = os.fspath(path)
    try:
        os.mkdir(path, 0o700)
        os.chmod(path, 0o700)  # mkdir's mode goes through the umask
    except FileExistsError:
        pass
    except OSError as exc:
        return f"cannot create {path}: {_reason(exc)}"
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot check {path}: {_reason(exc)}"
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symlink"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a folder"
    if st.st_uid != _uid():
        return f"{path} belongs to uid {st.st_uid}, not to uid {_uid()}"
    if stat.S_IMODE(st.st_mode) != 0o700:
        return f"{path} has mode {_mode(st)}, not 0700"
    return None


def _check_fd(fd: int, path: str) -> None:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(f"{path} is not a regular file")
    if st.st_uid != _uid():
        raise StoreError(f"{path} belongs to uid {st.st_uid}, not to you (uid {_uid()}); "
                         f"refusing to write to it")
    if st.st_nlink > 1:
        raise StoreError(f"{path} has {st.st_nlink} hard links; refusing to write to it")
    if stat.S_IMODE(st.st_mode) != 0o600:
        os.fchmod(fd, 0o600)


def open_private(path, flags: int = os.O_WRONLY | os.O_APPEND | os.O_CREAT) -> int:
    """`os.open` of a file of ours, never through a symlink, left with mode 0600."""
    path = os.fspath(path)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: the last component is a symlink
            raise StoreError(f"{path} is a symlink; refusing to write through it") from None
        raise
    try:
        _check_fd(fd, path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_private(path, data: bytes) -> None:
    """Replace `path` atomically with `data` in a new 0600 file (a symlink planted at
    `path` is replaced, never followed)."""
    path = os.fspath(path)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.unlink(tmp)
    except OSError:
        pass
    fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def check_file(path, *, what: str = "file") -> bool:
    """Check an existing file another library opens by name (SQLite); returns False when
    it does not exist. Symlinks are followed only to a file of ours."""
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        try:
            os.lstat(path)
        except FileNotFoundError:
            return False
        raise StoreError(f"{what} {path} is a dangling symlink") from None
    if stat.S_ISDIR(st.st_mode):
        raise StoreError(f"{what} {path} is a folder, not a database file")
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(f"{what} {path} is not a regular file (a FIFO, socket or device)")
    if st.st_uid != _uid():
        raise StoreError(f"{what} {path} belongs to uid {st.st_uid}, not to you "
                         f"(uid {_uid()}); refusing to open it")
    if stat.S_IMODE(st.st_mode) & 0o077:
        try:
            os.chmod(path, stat.S_IMODE(st.st_mode) & 0o700)
        except OSError:
            pass  # read-only: the open that follows says so
    return True


def _reason(exc: OSError) -> str:
    import errno

    if exc.errno == errno.EROFS or exc.errno == errno.EACCES or exc.errno == errno.EPERM:
        return "read-only (permission denied or read-only file system)"
    if exc.errno == errno.ENOSPC:
        return "disk full"
    return exc.strerror or str(exc)
