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

Judging (`judge`, for `brainbox doctor`): a registered hook kind that has not run for N
days (`stale_days`, default 7), or never ran and was registered longer ago than that, is a
problem, stated per hook, or once per agent when none of its hooks ran (the agent was not
used, or runs none of them); so is one whose last FAIL_STREAK (3) runs failed with no
success since. Fewer failures before a first success are not "every time": a fresh
home's first hook can time out while it creates the database (seen in this module's
tests on the loaded 2-core machine).

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


# --------------------------------------------------------------------------- judging


STALE_DAYS = 7  # a registered hook that has not run for this long is reported
FAIL_STREAK = 3  # this many failures in a row (none succeeded since) is "fails every time"
BAD_STATES = ("failing", "never ran", "not run for days")  # shouted in the human output


def stale_days(given: float | None = None) -> float:
    """N for "has not run for N days": `--stale-days`, else `BRAINBOX_DOCTOR_STALE_DAYS` or
    config.json's `doctor_stale_days`, else 7."""
    from brainbox.cli import hookconf

    value = given if given is not None else hookconf.config("doctor_stale_days", STALE_DAYS)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return STALE_DAYS
    return value if value > 0 else STALE_DAYS


def ago(t: float | None, now: float) -> str:
    """`t` (epoch seconds) said as an age: "40 s ago", "3 h ago", "9 days ago", "never"."""
    if t is None:
        return "never"
    s = max(0.0, now - t)
    if s < 120:
        return f"{s:.0f} s ago"
    if s < 7200:
        return f"{s / 60:.0f} min ago"
    if s < 2 * 86400:
        return f"{s / 3600:.0f} h ago"
    return f"{s / 86400:.0f} days ago"


def judge(registered: dict, days: float, now: float | None = None) -> dict:
    """Each hook kind (`registered`: (agent, event) -> registered since, at the latest; or
    recorded here) with its last success and last failure, its state, and the problems
    (for `brainbox doctor`): a registered hook that has not run for `days` days (or never,
    registered longer ago than that), and a hook that fails every time (FAIL_STREAK
    failures since its last success, or since it was first run)."""
    now = time.time() if now is None else now
    limit = days * 86400
    recorded = read_all()
    keys = sorted(set(registered) | {(a, e) for a, evs in recorded.items() for e in evs})
    kinds, problems = [], []
    for agent, event in keys:
        rec = recorded.get(agent, {}).get(event) or {
            "last_success": None, "last_failure": None, "failures_since_success": 0,
            "failures_kept": 0}
        fail = rec["last_failure"]
        last_run = max(rec["last_success"] or 0.0, fail["at"] if fail else 0.0) or None
        k = dict(rec, agent=agent, event=event, registered=(agent, event) in registered,
                 registered_since=registered.get((agent, event)), last_run=last_run)
        streak = rec["failures_since_success"]
        if streak >= FAIL_STREAK:  # fewer: a first run timed out creating the database
            k["state"] = "failing"
            since = ("it has never succeeded" if rec["last_success"] is None else
                     f"its last success was {ago(rec['last_success'], now)}")
            more = "+" if streak >= rec["failures_kept"] >= FAIL_KEEP else ""
            problems.append(f"hook {agent}/{event} fails every time: its last {streak}{more} "
                            f"run(s) failed and {since}; last reason: {fail['reason']}"
                            f" (details in hook-errors.log)")
        elif not k["registered"]:
            k["state"] = "ok (not registered here)"
        elif last_run is None:
            since = k["registered_since"]
            old = since is not None and now - since > limit
            k["state"] = "never ran" if old else "not run yet"
        elif now - last_run > limit:
            k["state"] = "not run for days"
        else:
            k["state"] = "ok"
        kinds.append(k)
    problems += _stale_problems(kinds, days, now)
    return {"stale_days": days, "kinds": kinds, "problems": problems}


def _stale_problems(kinds: list[dict], days: float, now: float) -> list[str]:
    """One line per registered hook that has not run for `days` days; one line for the
    agent when none of its registered hooks has (then the agent itself was not used, or
    runs none of them)."""
    out = []
    for agent in sorted({k["agent"] for k in kinds}):
        mine = [k for k in kinds if k["agent"] == agent and k["registered"]]
        stale = [k for k in mine if k["state"] in ("never ran", "not run for days")]
        if not stale:
            continue
        why = (f"if you used {agent} since, it is not running brainbox's hooks: check the "
               f"settings file and the agent's hook list"
               + (" (`/hooks` in Codex: a hook runs only once trusted)" if agent == "codex"
                  else ""))
        if len(stale) == len(mine):
            last = max((k["last_run"] or 0.0 for k in mine), default=0.0) or None
            out.append(f"hooks {agent}: no registered brainbox hook has run for {days:g} "
                       f"days (last run: {ago(last, now)}); {why}")
            continue
        newest = max(k["last_run"] or 0.0 for k in mine)
        for k in stale:
            out.append(f"hook {agent}/{k['event']} is registered but has not run for "
                       f"{days:g} days (last run: {ago(k['last_run'], now)}) while other "
                       f"{agent} hooks ran {ago(newest, now)}; {why}")
    return out
