"""The hooks' failure log: `$BRAINBOX_HOME/hook-errors.log`, and where entries go when that
cannot be written.

Failures are logged with their traceback (rotated at 256 KiB, one old file kept); when
the log cannot be written (refused, read-only home, full disk), to
`$XDG_RUNTIME_DIR/brainbox-hook-errors.log` if that is a private folder of ours, else
nowhere. The log says what became of the event: "spooled", "event lost: ..." (never
"recorded" unless it was). Files (reliability report D8, D15; `brainbox.store`): opened
with `O_NOFOLLOW` and 0600 whatever the umask; never written through a symlink. Every
failure of a hook kind (an agent and event) is also its health record's (`health.failed`),
and counted per process (`failures`): a hook that logged none succeeded.

Standard library only (the file helpers of `brainbox.store` load `os` and `stat`).
"""

from __future__ import annotations

import os
import time

from brainbox import paths
from brainbox.cli import health

LOG_NAME = "hook-errors.log"
LOG_MAX = 256 << 10
_failures: dict[tuple, int] = {}  # (agent, event) -> failures logged by this process


def safe(fn, *args):
    """`fn(*args)`, or None when it raises anything: for what a hook must never fail on."""
    try:
        return fn(*args)
    except BaseException:  # noqa: BLE001
        return None


def log_failure(agent, event, what: str, exc: BaseException | None = None) -> None:
    """Append one entry (with the traceback) to hook-errors.log (0600, never through a
    symlink: `brainbox.store.open_private`); never raises. When the log cannot be written
    (refused, read-only home, full disk) the entry goes to `$XDG_RUNTIME_DIR`, if that is
    a private folder of ours (`_fallback_log`)."""
    entry = ""
    who = (agent, event)
    _failures[who] = _failures.get(who, 0) + 1
    if agent and event:
        safe(health.failed, agent, event, what)
    try:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
        entry = f"=== {stamp} pid={os.getpid()} agent={agent} event={event}: {what[:500]}\n"
        if exc is not None:
            import traceback

            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            entry += tb[-4000:]
        _append_log(os.path.join(paths.home(), LOG_NAME), entry, rotate=True)
    except BaseException as why:  # noqa: BLE001
        safe(_fallback_log, entry, why)


def failures(agent, event) -> int:
    """How many failures this process has logged for the hook kind (agent, event): a hook
    that logged none since it started succeeded (`health.succeeded`)."""
    return _failures.get((agent, event), 0)


def _append_log(path: str, entry: str, rotate: bool) -> None:
    import stat as _stat

    from brainbox import store

    store.private_dir(os.path.dirname(path), what="brainbox home", tighten=True)
    if rotate:
        try:
            st = os.lstat(path)
            if _stat.S_ISREG(st.st_mode) and st.st_size > LOG_MAX:
                os.replace(path, path + ".1")
        except OSError:
            pass
    fd = store.open_private(path)
    try:
        os.write(fd, entry.encode("utf-8", "replace"))
    finally:
        os.close(fd)


def _fallback_log(entry: str, why: BaseException) -> None:
    """The entry, and why the home's log refused it, in `$XDG_RUNTIME_DIR/brainbox-hook-
    errors.log`: only when that folder is a real one of ours, mode 0700 (the XDG rule);
    otherwise nowhere (writing beside a planted symlink is what must not happen)."""
    path = fallback_log_path()
    if path is None:
        return
    try:
        if os.path.getsize(path) > LOG_MAX:
            return  # bounded: the first entries say what went wrong
    except OSError:
        pass
    note = f"(hook-errors.log in {paths.home()} not written: {type(why).__name__}: {why})\n"
    _append_log(path, entry + note, rotate=False)


def fallback_log_path() -> str | None:
    """`$XDG_RUNTIME_DIR/brainbox-hook-errors.log` when that folder is a private one of ours
    (where entries go that the home's log refused), else None."""
    from brainbox import store

    run = os.environ.get("XDG_RUNTIME_DIR")
    if not run or not os.path.isabs(run) or not os.path.isdir(run) or \
            store.strict_dir(run) is not None:
        return None
    return os.path.join(run, "brainbox-" + LOG_NAME)


def last_errors(n: int = 5) -> list[str]:
    """The newest `n` entries of hook-errors.log and of the fallback log (for `brainbox
    doctor`), oldest first; an entry starts with its local time, so they sort by it."""
    entries = []
    for path in (os.path.join(paths.home(), LOG_NAME), fallback_log_path()):
        if path is None:
            continue
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                fh.seek(max(0, os.path.getsize(path) - 64_000))
                text = fh.read()
        except OSError:
            continue
        entries += [e for e in text.split("=== ")[1:] if e.strip()]
    entries.sort(key=lambda e: e[:19])  # stable: one log's order is kept within a second
    return [e.rstrip()[:2000] for e in entries[-n:]]
