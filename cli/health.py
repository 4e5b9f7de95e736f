"""Each hook kind's last success and last failures (issue 17 item 5): what `brainbox
doctor` judges a registered hook by, so that a dead or always-failing install cannot look
healthy.

A hook kind is an agent and an installed event (`claude/PostToolUse`). Its record is two
files in `$BRAINBOX_HOME/health/` (0700; files 0600, never through a symlink):

- `<agent>.<event>.ok`: empty; its mtime is the last success. A success is one `utime`
  call (no data written, no rename), so the record path pays a system call, not a write:
  rewriting a file costs 1-4 ms on ext4 (handler.py's measurement), and a success happens
  on every tool call. The file is created (checked, 0600) the first time only.
- `<agent>.<event>.fail`: one line per failure, `<epoch seconds>\\t<reason>`, appended by
  `hooklog.log_failure` (every failure a hook logs is one); cut to its newest
  `FAIL_KEEP` lines when it grows past `FAIL_MAX` bytes. Failures are rare, so their cost
  is not the record path's.

Who records: the process that did the work. A hook process records its success when it
handled the event itself and logged no failure; an event handed to the daemon is recorded
by the daemon (`service.op_hook`), which does the work and would otherwise fail unseen
behind the hook's successful handoff. Failures are recorded wherever they are logged.

Standard library only, and nothing is imported on the success path but `os`.
"""

from __future__ import annotations

import os
import time

from brainbox import paths

DIR_NAME = "health"
FAIL_MAX = 16 << 10
FAIL_KEEP = 50
_NAME_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def _part(name) -> str | None:
    if isinstance(name, str) and 0 < len(name) <= 40 and set(name) <= _NAME_OK:
        return name
    return None


def kind_base(agent, event) -> str | None:
    """`<home>/health/<agent>.<event>`, or None when either is not a plain name (a hook
    run by hand with odd arguments has no kind to record)."""
    a, e = _part(agent), _part(event)
    if a is None or e is None:
        return None
    return os.path.join(paths.home(), DIR_NAME, f"{a}.{e}")


def _folder() -> str:
    """The health folder, checked (a real folder of ours, 0700) and created if missing."""
    from brainbox import store

    store.private_dir(paths.home(), what="brainbox home", tighten=True)
    d = os.path.join(paths.home(), DIR_NAME)
    why = store.strict_dir(d)
    if why:
        raise store.StoreError(f"health folder refused: {why}")
    return d


def succeeded(agent, event) -> None:
    """Record a success of this hook kind now (never raises)."""
    base = kind_base(agent, event)
    if base is None:
        return
    path = base + ".ok"
    try:
        os.utime(path, follow_symlinks=False)  # a planted symlink's own time, not a target's
        return
    except FileNotFoundError:
        pass
    except OSError:
        return
    try:
        from brainbox import store

        _folder()
        os.close(store.open_private(path, os.O_WRONLY | os.O_CREAT))
    except Exception:  # noqa: BLE001, S110 - health is never worth a hook's failure
        pass


def failed(agent, event, reason: str) -> None:
    """Record a failure of this hook kind now, with its one-line reason (never raises)."""
    base = kind_base(agent, event)
    if base is None:
        return
    try:
        from brainbox import store

        _folder()
        path = base + ".fail"
        line = f"{time.time():.6f}\t{' '.join(str(reason).split())[:300]}\n"
        fd = store.open_private(path)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > FAIL_MAX:
            _trim(path)
    except Exception:  # noqa: BLE001, S110 - health is never worth a hook's failure
        pass


def _trim(path: str) -> None:
    from brainbox import store

    with open(path, "rb") as fh:
        lines = fh.read().splitlines(keepends=True)
    store.write_private(path, b"".join(ln for ln in lines[-FAIL_KEEP:] if ln.endswith(b"\n")))


# --------------------------------------------------------------------------- reading


def read_all() -> dict:
    """Every recorded hook kind: {agent: {event: record}}, where a record holds
    `last_success` (epoch seconds or None), `last_failure` ({"at", "reason"} or None),
    `failures_since_success` (counted in the kept lines: at most FAIL_KEEP) and
    `failures_kept`. `lstat` and reads only: doctor reports, it does not change."""
    import stat

    folder = os.path.join(paths.home(), DIR_NAME)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return {}
    kinds: dict[str, dict] = {}
    for name in names:
        stem, dot, suffix = name.rpartition(".")
        agent, _, event = stem.partition(".")
        if not dot or suffix not in ("ok", "fail") or not _part(agent) or not _part(event):
            continue
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue  # a symlink or worse: files_status reports it
        rec = kinds.setdefault(agent, {}).setdefault(event, {
            "last_success": None, "last_failure": None, "failures_since_success": 0,
            "failures_kept": 0})
        if suffix == "ok":
            rec["last_success"] = st.st_mtime
        else:
            rec["_fails"] = _fail_lines(path)
    for events in kinds.values():
        for rec in events.values():
            fails = rec.pop("_fails", [])
            ok = rec["last_success"]
            rec["failures_kept"] = len(fails)
            rec["failures_since_success"] = sum(1 for at, _ in fails if ok is None or at > ok)
            if fails:
                at, reason = max(fails, key=lambda f: f[0])  # the first of equal times
                if fails[-1][0] == at:
                    reason = fails[-1][1]  # appended last: the newest
                rec["last_failure"] = {"at": at, "reason": reason}
    return kinds


def _fail_lines(path: str) -> list[tuple[float, str]]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(FAIL_MAX * 4)
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        at, _, reason = line.partition("\t")
        try:
            out.append((float(at), reason))
        except ValueError:
            continue  # a line torn by a crash
    return out
