"""The hooks' spool: events that could not be committed in time, kept for a later drain.

Events that could not be committed in time (lock contention, a slow disk, an unusable
database, a deadline before the mapping) go to the spool, `$BRAINBOX_HOME/spool/*.jsonl`,
one atomic rename each, as normalised (redacted) events: when the deadline comes before
the mapping, the watchdog maps the payload itself (milliseconds, bounded by hookmap's
limits). The raw payload never touches the disk: it holds file contents and command
output, secrets included, that the log never stores (report D2: 25 of 32 planted secrets
were found in raw spool files). The next hook, the daemon and the importer drain the
spool, so a timeout never loses an event. Every event carries a random `uid` before it is
committed or spooled and the log stores a uid once (`storage.db` migration 002), so a
drain killed between its commit and its unlink, or a watchdog that spooled while a
commit finished, stores nothing twice (report D7: the whole file was stored again). A
lock shared with the watchdog makes "commit" and "spool" exclusive besides. A spool file
the database refuses for its content (an exit code beyond int64 spooled by an older
version) is stored event by event and the rest moves to `spool/bad/`, logged once; it
used to fail every drain and block every file after it (report D6). A database that
fails (locked, full, read-only) leaves the file for a later drain.

Files (reliability report D8, D15; `brainbox.store`): the spool folder must be a real
folder of ours with mode 0700 (never a symlink: a planted link received the events),
spool files are opened with `O_NOFOLLOW` and are 0600 whatever the umask.

Standard library only at import; mapping a payload imports hookmap and the recorder,
storing imports the database (`brainbox.store`).
"""

from __future__ import annotations

import json
import os
import time

from brainbox import paths
from brainbox.cli.hooklog import log_failure, safe

SPOOL_MAX_FILES = 20_000


def to_events(agent: str, payload, event, at) -> tuple[list[dict], list]:
    """A hook payload as normalised events, and what normalising refused: `hookmap` maps
    it (the installed hook's `event` decides what it is), `at` fills a missing time. Each
    event's `source` is "hook" (provenance, issue 19)."""
    from brainbox.cli.hookmap import payload_to_records
    from brainbox.recorder import normalize_many

    records = payload_to_records(agent, payload, event)
    if at is not None:
        for r in records:
            if r.get("at") is None:
                r["at"] = at
    events, bad = normalize_many(records)
    for e in events:
        e["source"] = "hook"
    return events, bad


def stamp(events: list[dict], base: str | None = None) -> list[dict]:
    """Give each event an id of its own (`uid`, 96 random bits) before it is committed or
    spooled: the log stores an id once, so a spooled copy of a committed event (a drain
    killed before its unlink, a watchdog that spooled while the commit ran) is not stored
    twice (report D7). With `base` (a PostToolUse hook's `new_uid`, sent to the daemon
    with the raw payload) the ids are `base`, `base.1`, ...: the daemon and the hook that
    stopped waiting for it give the same event the same id, so both may write it."""
    for i, e in enumerate(events):
        if not e.get("uid"):
            e["uid"] = (base if i == 0 else f"{base}.{i}") if base else new_uid()
    return events


def new_uid() -> str:
    """A fresh event id: 96 random bits, as hex."""
    return os.urandom(12).hex()


def spool_dir() -> str:
    return os.path.join(paths.home(), "spool")


class UnsafeSpool(OSError):
    """The spool folder is a symlink, not a folder, or not ours: never written or read."""


def spool_folder(create: bool = True) -> str:
    """The spool folder, checked: a real folder (never a symlink: another user's planted
    link received the events, report D8), ours, mode 0700; created so when missing."""
    from brainbox import store

    d = spool_dir()
    if create:
        store.private_dir(paths.home(), what="brainbox home", tighten=True)
    elif not os.path.lexists(d):
        raise FileNotFoundError(d)
    why = store.strict_dir(d)
    if why:
        raise UnsafeSpool(f"spool refused: {why}")
    return d


def spool_write(events: list[dict]) -> str | None:
    """Keep events that could not be committed: one 0600 file, written then renamed; None
    when the spool is full. Raises OSError (or StoreError) when it cannot be written."""
    from brainbox import store

    d = spool_folder()
    if len(os.listdir(d)) >= SPOOL_MAX_FILES:
        log_failure("", "", f"spool full ({SPOOL_MAX_FILES} files); {len(events)} events lost")
        return None
    name = os.path.join(d, f"{time.time_ns():020d}-{os.getpid()}.jsonl")
    tmp = name + ".tmp"
    data = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events)
    fd = store.open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        try:
            view = memoryview(data.encode("utf-8", "replace"))
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, name)
    except BaseException:
        safe(os.unlink, tmp)  # a full disk leaves no half-written file behind
        raise
    return name


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def drain_spool(conn, lock=None, until: float | None = None) -> int:
    """Append spooled events (oldest first) and delete their files; returns the count.
    A file is claimed by renaming it, so two drainers never append it at once; a claim left
    by a process that died (or by this one, after a failure) is taken over, and appending
    it again stores nothing twice (each event's `uid`). A file the database refuses for
    what it holds (an exit code beyond int64, a missing field) is stored event by event,
    and what still fails moves to `spool/bad/` with its reason logged once; when the
    database itself fails (locked, full, read-only) the file is put back and the drain
    stops. `until` (monotonic) bounds a hook's drain. Never raises for a spool file."""
    try:
        d = spool_folder(create=False)
        names = sorted(os.listdir(d))
    except Exception:  # noqa: BLE001 - missing, unsafe (refused), unreadable
        return 0
    total = 0
    me = os.getpid()
    for name in names:
        if until is not None and time.monotonic() > until:
            break
        if ".jsonl.claimed." in name:
            try:
                owner = int(name.rsplit(".", 1)[1])
            except ValueError:
                continue
            if owner != me and _alive(owner):
                continue
        elif not name.endswith(".jsonl"):
            if name.endswith(".tmp"):  # being written, or left by a process that was killed
                safe(_unlink_if_old, os.path.join(d, name))
            continue
        base = name.split(".claimed.")[0]
        claimed = os.path.join(d, f"{base}.claimed.{me}")
        with lock or _NOLOCK:  # a hook's watchdog waits: append + unlink stay together
            try:
                os.rename(os.path.join(d, name), claimed)
            except OSError:
                continue
            try:
                total += _ingest(conn, claimed, base)
            except _DatabaseDown:
                safe(os.rename, claimed, os.path.join(d, base))  # for a later drain
                break
            except Exception:  # noqa: BLE001 - unreadable, or no room to quarantine: the
                # file goes back and is retried (what it stored is not stored twice)
                safe(os.rename, claimed, os.path.join(d, base))
    return total


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NOLOCK = _NoLock()


class _DatabaseDown(Exception):
    """The database failed, not the file: it stays for a later drain."""


def _database_failed(exc: BaseException) -> bool:
    """A failure of the database (locked, busy, full, read-only, corrupt: sqlite3's and
    sqlean's OperationalError and plain DatabaseError, or brainbox's StoreError), as
    opposed to one of the events (OverflowError, IntegrityError, TypeError, ...)."""
    return type(exc).__name__ in ("OperationalError", "DatabaseError", "StoreError")


def _from_raw(raw: dict) -> list[dict]:
    """Events of a raw payload spooled by an older version (before mapping existed there)."""
    return to_events(raw.get("agent") or "", raw.get("payload"), raw.get("event"),
                     raw.get("at"))[0]


def _unlink_if_old(path: str, age: float = 60.0) -> None:
    if time.time() - os.path.getmtime(path) > age:
        os.unlink(path)


def _ingest(conn, claimed: str, base: str) -> int:
    """Append one claimed spool file, then delete it (see `drain_spool`)."""
    from brainbox import store

    events, bad = [], []
    with open(claimed, encoding="utf-8", errors="replace") as fh:
        for no, line in enumerate(fh, start=1):
            try:
                e = json.loads(line)
                if isinstance(e, dict) and isinstance(e.get("raw"), dict):
                    got = _from_raw(e["raw"])
                elif isinstance(e, dict) and all(k in e for k in ("at", "session", "project",
                                                                    "kind")):
                    got = [e]
                else:
                    got = []
            except Exception as exc:  # noqa: BLE001 - a torn or foreign line
                if line.strip():
                    bad.append((line, f"line {no}: {type(exc).__name__}: {exc}"))
                continue
            for k, ev in enumerate(got):
                if not ev.get("uid"):  # an older hook's file: an id from its name and place
                    ev["uid"] = f"{base}:{no}:{k}"
                events.append(ev)
    stored = 0
    if events:
        try:
            store.append_events(conn, events)
            stored = len(events)
        except Exception as exc:
            if _database_failed(exc):
                raise _DatabaseDown(str(exc)) from exc
            for ev in events:  # one at a time: the others are stored
                try:
                    store.append_events(conn, [ev])
                    stored += 1
                except Exception as exc1:
                    if _database_failed(exc1):
                        raise _DatabaseDown(str(exc1)) from exc1
                    bad.append((json.dumps(ev, ensure_ascii=False, default=str) + "\n",
                                f"{type(exc1).__name__}: {exc1}"))
    if bad:
        _quarantine(claimed, base, bad)
    os.unlink(claimed)
    return stored


def _quarantine(claimed: str, base: str, bad: list[tuple[str, str]]) -> None:
    """Keep what the database refused in `spool/bad/<file>` (0600), logged once."""
    from brainbox import store

    folder = os.path.join(os.path.dirname(claimed), "bad")
    why = store.strict_dir(folder)
    if why:
        raise UnsafeSpool(f"quarantine refused: {why}")
    path = os.path.join(folder, base)
    fd = store.open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, "".join(line for line, _ in bad).encode("utf-8", "replace"))
    finally:
        os.close(fd)
    log_failure("", "", f"spool {base}: {len(bad)} event(s) quarantined to spool/bad/{base}:"
                f" {bad[0][1]}")
