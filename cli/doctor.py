"""`brainbox doctor`: is the agent integration healthy?

Checks, each reported with what was found:
- hooks: which of brainbox's hook events are registered in Claude Code's user and project
  settings and in Codex's config (recognised by command, as the installer does), and
  whether each command's program still exists (an absolute path, or a bare name on
  `PATH`): a venv deleted after `install` leaves hooks that fail on every call;
- files: the home, the database (with its -wal/-shm) and every file brainbox writes in
  the home must be ours, not symlinks (the database may be a symlink to a file of ours),
  0600 (folders 0700, and the DB's own folder not writable by others). Checked with
  `lstat` before anything opens the store, since opening tightens an own file's mode
  and doctor is there to report, not to fix silently;
- database: path, size (with the WAL), event count, schema (a brainbox file of our
  schema version) and `PRAGMA quick_check` (damaged pages behind an intact header, 10-42
  ms per 10,000 events);
- health: each hook kind's (agent and event: `claude/PostToolUse`) last success and last
  failure, as the hooks record them (`health`); a registered hook that has not run for N
  days (`--stale-days`, default 7; never ran, registered longer ago than that, counts
  too) or that fails every time (FAIL_STREAK failures since its last success, or since
  its first run when it never succeeded) is a problem. An agent none of whose registered
  hooks ran for N days is one problem, not one per hook;
- daemon: running or not, its pid, socket and resident memory;
- hook errors: the newest entries of `$BRAINBOX_HOME/hook-errors.log` (and of the fallback
  log in `$XDG_RUNTIME_DIR`, where entries go that the home refused), spooled events
  waiting to be ingested, and quarantined spool files (`spool/bad/`: events the database
  refused, a problem until the user has read and deleted them);
- projects: stored project keys that are linked worktrees of a repository memory also
  knows by its own key (issue 17: one memory per repository, `brainbox.projectmerge`),
  each a problem until `brainbox doctor --fix` merges them (`--fix --dry-run` lists
  them and writes nothing);
- latency: a real `brainbox record` subprocess and a PostToolUse hook subprocess against a
  temporary database (median of 3 each), beside `python -c pass` as the baseline.
Every finding that breaks recording or exposes it is one line in `problems`; the last
line of the human output is the verdict, "verdict: ok" or "verdict: N problems", and
`ok` is true only with no problem (`brainbox doctor` then exits 0, else 1, with or
without `--json`). Events not registered and a daemon not running are reported but are
not problems: both are choices.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def hooks_status(cwd: str | None = None) -> dict:
    from brainbox.cli import install as inst

    out = {}
    cwd = Path(cwd or os.getcwd())
    for scope, path in (("claude_user", Path.home() / ".claude" / "settings.json"),
                        ("claude_project", cwd / ".claude" / "settings.json"),
                        ("claude_project_local", cwd / ".claude" / "settings.local.json")):
        out[scope] = _claude_events(path, inst)
    out["codex"] = _codex_events(inst.codex_config_path(), inst)
    expected = set(inst.CLAUDE_EVENTS)
    claude = set().union(*(set(out[k]["events"]) for k in out if k.startswith("claude")))
    out["claude_missing"] = sorted(expected - claude) if claude else sorted(expected)
    return out


def _settings_info(path: Path) -> dict:
    info = {"path": str(path), "exists": path.exists(), "events": []}
    if info["exists"]:
        try:  # when the hooks were registered, at the latest (for "never ran" in health)
            info["mtime"] = path.stat().st_mtime
        except OSError:
            pass
    return info


def _claude_events(path: Path, inst) -> dict:
    info = _settings_info(path)
    if not info["exists"]:
        return info
    try:
        data = json.loads(path.read_text("utf-8-sig") or "{}")
    except (OSError, ValueError) as exc:
        info["error"] = f"unreadable: {exc}"
        return info
    hooks = data.get("hooks") if isinstance(data, dict) else None
    for event, groups in (hooks or {}).items() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            for h in (group.get("hooks") or ()) if isinstance(group, dict) else ():
                if isinstance(h, dict) and inst.is_brainbox_command(h.get("command"), "claude"):
                    info["events"].append(event)
                    info.setdefault("command", h.get("command"))
                    _note_missing(info, event, h.get("command"))
    info["events"] = sorted(set(info["events"]))
    return info


def command_problem(cmd: str) -> str | None:
    """Why a hook command cannot run: its program (after `VAR=value` words) is an
    absolute or relative path that is not an executable file, or a bare name not on
    PATH. None when it can run (or cannot be parsed: the agent would say so itself)."""
    try:
        words = shlex.split(cmd)
    except ValueError:
        return None
    while words and "=" in words[0] and not words[0].startswith(("/", ".")):
        words = words[1:]
    if not words:
        return None
    prog = words[0]
    if "/" in prog:
        path = os.path.expanduser(prog)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return None
        return f"{prog} no longer exists" if not os.path.exists(path) else (
            f"{prog} is not executable")
    if shutil.which(prog):
        return None
    return f"{prog} is not on PATH"


def _note_missing(info: dict, event: str, cmd) -> None:
    problem = command_problem(cmd) if isinstance(cmd, str) else None
    if problem:
        events = info.setdefault("broken", {}).setdefault(problem, [])
        if event not in events:
            events.append(event)


def _codex_events(path: Path, inst) -> dict:
    import tomllib

    info = _settings_info(path)
    if not info["exists"]:
        return info
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        info["error"] = f"unreadable: {exc}"
        return info
    hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else ():
            for h in (group.get("hooks") or ()) if isinstance(group, dict) else ():
                if isinstance(h, dict) and inst.is_brainbox_command(h.get("command"), "codex"):
                    info["events"].append(event)
                    _note_missing(info, event, h.get("command"))
    info["events"] = sorted(set(info["events"]))
    return info


def database_status() -> dict:
    from brainbox import paths, store

    path = Path(paths.db_path())
    info = {"path": str(path), "exists": path.exists(), "ok": True}
    if not info["exists"]:
        info["note"] = "not created yet (the first hook creates it)"
        return info
    size = 0
    for suffix in ("", "-wal", "-shm"):
        try:
            size += os.path.getsize(f"{path}{suffix}")
        except OSError:
            pass
    info["bytes"] = size
    try:
        conn = store.connect(path)  # checks the file type and owner first (a FIFO blocked)
        try:
            store.quick_check(conn, path)
            info["quick_check"] = "ok"
            info["events"] = store.count_events(conn)
            info["watermark"] = int(store.get_meta(conn, "watermark", "0") or 0)
            info["schema_ok"] = store.get_meta(conn, "application") == "brainbox"
        finally:
            conn.close()
        info["schema_version"] = store.SCHEMA_VERSION
    except store.StoreError as exc:
        info.update(ok=False, schema_ok=False, error=str(exc))
    return info


def errors_status(n: int = 5) -> dict:
    from brainbox import paths
    from brainbox.cli import hooklog
    from brainbox.cli import spool as spool_mod

    log = Path(paths.home()) / hooklog.LOG_NAME
    spool = Path(spool_mod.spool_dir())
    try:
        spooled = len([p for p in spool.iterdir() if p.name.endswith(".jsonl")])
    except OSError:
        spooled = 0
    try:  # spool files the database refused for their content (spool.drain_spool)
        quarantined = len([p for p in (spool / "bad").iterdir() if p.is_file()])
    except OSError:
        quarantined = 0
    return {"log": str(log), "bytes": log.stat().st_size if log.exists() else 0,
            "fallback_log": hooklog.fallback_log_path(),
            "last": hooklog.last_errors(n), "spooled_files": spooled,
            "quarantined_files": quarantined, "quarantine_dir": str(spool / "bad")}


def _median_run(cmd: list[str], env: dict, stdin: bytes | None = None, runs: int = 3):
    times, rc = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        # the exit code is reported, not raised: doctor says which check failed
        p = subprocess.run(cmd, input=stdin, env=env, capture_output=True, timeout=60,
                           check=False)
        times.append(time.perf_counter() - t0)
        rc = rc or p.returncode
    return round(statistics.median(times) * 1000, 1), rc


def measure_latency(runs: int = 3) -> dict:
    """Whole-process latency of the record path against a temporary database."""
    with tempfile.TemporaryDirectory(prefix="brainbox-doctor-") as tmp:
        env = dict(os.environ, BRAINBOX_HOME=tmp, BRAINBOX_DB=os.path.join(tmp, "doctor.db"),
                   BRAINBOX_DAEMON="off", BRAINBOX_INJECT="off")
        base, _ = _median_run([sys.executable, "-c", "pass"], env, runs=runs)
        record, rc = _median_run(
            [sys.executable, "-m", "brainbox.cli.entry", "record", "--session", "doctor",
             "--cwd", tmp, "--tool", "Read", "--file", os.path.join(tmp, "x.py")], env,
            runs=runs)
        payload = json.dumps({"session_id": "doctor", "cwd": tmp,
                              "hook_event_name": "PostToolUse", "tool_name": "Read",
                              "tool_input": {"file_path": os.path.join(tmp, "x.py")},
                              "tool_response": {}}).encode()
        hook, hook_rc = _median_run(
            [sys.executable, "-m", "brainbox.cli.entry", "hook", "claude", "PostToolUse"], env,
            stdin=payload, runs=runs)
    return {"python_ms": base, "record_ms": record, "record_exit": rc,
            "hook_post_tool_use_ms": hook, "hook_exit": hook_rc,
            "record_vs_python": round(record / base, 2) if base else None}


def files_status() -> list[str]:
    """Ownership and mode problems of the home, the database and the files brainbox
    writes, one line each; `lstat` only, nothing is opened or changed."""
    from brainbox import paths
    from brainbox.cli import client, health, hooklog
    from brainbox.cli import spool as spool_mod

    home = Path(paths.home())
    dbp = Path(paths.db_path())
    uid = os.geteuid()
    out: list[str] = []

    def check(path: Path, want: int, may_link: bool = False) -> None:
        try:
            st = os.lstat(path)
        except OSError:
            return
        if stat.S_ISLNK(st.st_mode):
            if not may_link:
                out.append(f"{path} is a symlink (to {os.readlink(path)}); brainbox will "
                           f"not write through it: remove it")
                return
            try:
                st = os.stat(path)
            except OSError:
                out.append(f"{path} is a dangling symlink")
                return
        if st.st_uid != uid:
            out.append(f"{path} belongs to uid {st.st_uid}, not to you (uid {uid})")
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o077 & ~(want & 0o077):
            out.append(f"{path} has mode {mode:04o}, should be {want:04o}")

    check(home, 0o700, may_link=True)
    if dbp.parent != home:
        try:
            st = os.stat(dbp.parent)
            if st.st_mode & 0o002 or st.st_uid not in (uid, 0):
                out.append(f"{dbp.parent} (the database's folder) is writable by others "
                           f"or belongs to uid {st.st_uid}")
        except OSError:
            pass
    for suffix in ("", "-wal", "-shm"):
        check(Path(f"{dbp}{suffix}"), 0o600, may_link=not suffix)
    for name in (hooklog.LOG_NAME, client.LOG_NAME, client.INFO_NAME, client.SPAWN_NAME,
                 client.LOCK_NAME, "config.json"):
        check(home / name, 0o600)
    for folder in (Path(spool_mod.spool_dir()), home / health.DIR_NAME):
        check(folder, 0o700)
        if folder.is_dir() and not folder.is_symlink():
            for p in sorted(folder.iterdir())[:200]:
                check(p, 0o600)
    return out


def _registered(hooks: dict) -> dict[tuple[str, str], float | None]:
    """(agent, event) -> since when it is registered, at the latest (the oldest mtime of
    the settings files that register it: any later edit only makes that later)."""
    out: dict[tuple[str, str], float | None] = {}
    for scope, info in hooks.items():
        if not isinstance(info, dict) or not info.get("events"):
            continue
        agent = "codex" if scope == "codex" else "claude"
        for event in info["events"]:
            old = out.get((agent, event))
            mtime = info.get("mtime")
            out[(agent, event)] = mtime if old is None else min(old, mtime or old)
    return out


def run_doctor(latency: bool = True, days: float | None = None) -> dict:
    from brainbox.cli import client, health

    data = {"files": files_status()}  # before the store is opened (that tightens modes)
    hooks = hooks_status()
    data.update({
        "hooks": hooks,
        "health": health.judge(_registered(hooks), health.stale_days(days)),
        "database": database_status(),
        "daemon": client.status(),
        "hook_errors": errors_status(),
        "latency": measure_latency() if latency else None,
    })
    data["projects"] = projects_status() if data["database"]["ok"] else {"merges": []}
    problems = list(data["files"])
    seen = set()  # run in the home folder, the project settings are the user's
    for scope, info in data["hooks"].items():
        if isinstance(info, dict) and info["path"] not in seen:
            seen.add(info["path"])
            for why, events in sorted(info.get("broken", {}).items()):
                problems.append(f"hooks {scope}: {why}, so {len(events)} hook(s) fail "
                                f"({', '.join(sorted(events))} in {info['path']}); "
                                f"run `brainbox install` again")
            if info.get("error"):
                problems.append(f"hooks {scope}: {info['error']} ({info['path']})")
    problems += data["health"]["problems"]
    if not data["database"]["ok"]:
        problems.append(f"database: {data['database'].get('error')}")
    bad = data["hook_errors"]["quarantined_files"]
    if bad:
        problems.append(f"spool: {bad} file(s) in {data['hook_errors']['quarantine_dir']} hold events "
                        f"the database refused (reasons in hook-errors.log); delete them once "
                        f"read")
    for m in data["projects"]["merges"]:
        problems.append(f"projects: {m['from']} is a worktree of {m['into']} and holds "
                        f"{m['events']} event(s) of its own; `brainbox doctor --fix` merges "
                        f"them (`--dry-run` to list)")
    if data["latency"] is not None and data["latency"].get("record_exit") != 0:
        problems.append("a test `brainbox record` against a temporary database failed")
    data["problems"] = problems
    data["ok"] = not problems
    return data


def health_lines(judged: dict) -> list[str]:
    """One line per hook kind; the states that are problems in capitals."""
    from brainbox.cli.health import BAD_STATES, ago

    now, lines = time.time(), []
    for k in judged["kinds"]:
        fail = k["last_failure"]
        state = k["state"].upper() if k["state"] in BAD_STATES else k["state"]
        lines.append(f"health  {k['agent']}/{k['event']}: {state}; "
                     f"last success {ago(k['last_success'], now)}"
                     + (f", last failure {ago(fail['at'], now)}: {fail['reason'][:100]}"
                        if fail else ""))
    return lines


def projects_status() -> dict:
    """{merges: [{from, into, events}]}: stored keys that are linked worktrees of another
    repository (`brainbox.projectmerge`), which `doctor --fix` merges."""
    from brainbox import paths, projectmerge, store

    if not Path(paths.db_path()).exists():
        return {"merges": []}
    try:
        conn = store.connect()
    except store.StoreError:
        return {"merges": []}  # the database section says why
    try:
        return {"merges": [m.as_dict() for m in projectmerge.proposals(conn)]}
    except Exception as exc:  # noqa: BLE001 - doctor reports, it does not fail
        return {"merges": [], "error": f"{type(exc).__name__}: {exc}"}
    finally:
        conn.close()


def fix(dry_run: bool) -> dict:
    """`doctor --fix`: merge old per-worktree keys into their repository (or list them)."""
    from brainbox.memory import Memory

    with Memory.open() as mem:
        return mem.merge_projects(dry_run=dry_run)


def human(d: dict) -> str:
    lines = []
    h = d["hooks"]
    for key in ("claude_user", "claude_project", "claude_project_local", "codex"):
        info = h[key]
        state = ", ".join(info["events"]) if info["events"] else (
            "no brainbox hooks" if info["exists"] else "no file")
        lines.append(f"hooks   {key}: {state}  ({info['path']})")
    if h["codex"]["events"]:
        from brainbox.cli.install import CODEX_TRUST

        lines.append(f"        codex: {CODEX_TRUST}")
    if h["claude_missing"] and len(h["claude_missing"]) < 6:
        lines.append(f"        claude events not registered: {', '.join(h['claude_missing'])}")
    lines += health_lines(d["health"])
    db = d["database"]
    if db.get("error"):
        lines.append(f"db      PROBLEM: {db['error']}")
    elif db["exists"]:
        lines.append(f"db      {db['path']}: {db['events']} events, {db['bytes']} bytes, "
                     f"schema {'ok' if db.get('schema_ok') else 'NOT OK'}")
    else:
        lines.append(f"db      {db['path']}: {db.get('note')}")
    dm = d["daemon"]
    state = "not running"
    if dm["running"]:
        state = f"running, pid {dm['pid']}"
        if dm.get("rss_mb") is not None:  # an older daemon does not say
            state += f", {dm['rss_mb']:g} MiB resident (ceiling {dm.get('max_rss_mb')} MiB)"
    lines.append(f"daemon  {state}  ({dm['socket']})")
    er = d["hook_errors"]
    lines.append(f"errors  {len(er['last'])} recent in {er['log']}"
                 + (f"; {er['spooled_files']} spooled files waiting" if er["spooled_files"]
                    else ""))
    for e in er["last"]:
        lines.append("        " + e.splitlines()[0][:160])
    lat = d["latency"]
    if lat:
        lines.append(f"latency record {lat['record_ms']} ms, PostToolUse hook "
                     f"{lat['hook_post_tool_use_ms']} ms, python -c pass {lat['python_ms']} ms")
    fixed = d.get("fixed")
    if fixed is not None:
        verb = "would merge" if fixed["dry_run"] else "merged"
        for m in fixed["merges"]:
            lines.append(f"fix     {verb} {m['from']} into {m['into']} ({m['events']} events)")
        if not fixed["merges"]:
            lines.append("fix     nothing to merge")
    for p in d.get("problems", []):
        lines.append(f"PROBLEM {p}")
    n = len(d.get("problems", []))
    lines.append("verdict: ok" if not n else f"verdict: {n} problem{'s' if n > 1 else ''}")
    return "\n".join(lines)
