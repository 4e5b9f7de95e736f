"""The raw record schema the hook mapping and the trajectory loaders both emit (the input
of `brainbox record --jsonl` and `brainbox.events.normalize`), for the tests of both, and
the hook mapping's record check and payload fixtures (tests/test_hookmap*.py)."""

import contextlib
import json
from pathlib import Path

from brainbox import store
from brainbox.cli import hookmap
from brainbox.events import ACTIONS

__all__ = ["ACTIONS", "RECORD_KEYS", "check_record", "fixture_payloads", "git_repo",
           "hook_process", "old_database", "real_tasks", "running_daemon",
           "stored_events"]

HOOK_FIXTURES = Path(__file__).parent / "fixtures" / "hooks"

# Every record carries every key (None when unknown); loaders add `project`.
RECORD_KEYS = frozenset({
    "session", "cwd", "tool", "files", "error", "exit_code", "at", "prompt", "command",
    "args", "kind", "action",
})


def old_database(monkeypatch, path: Path, migrations: int) -> None:
    """A database at `path` as brainbox made it when it had only its first `migrations`
    migrations, holding one tool event of project `/p` written with that schema's columns
    (every patch undone)."""
    from brainbox.storage import db

    monkeypatch.setattr(db, "MIGRATIONS", db.MIGRATIONS[:migrations])
    monkeypatch.setattr(db, "SCHEMA_VERSION", migrations)
    old = store.connect(path)
    try:
        with db.atomic(old):
            old.execute("INSERT INTO events (at, session, project, kind, tool, files) "
                        "VALUES (1.0, 's', '/p', 'tool', 'Read', '[\"a.py\"]')")
    finally:
        old.close()
        monkeypatch.undo()


def real_tasks(data_dir: Path, source: str) -> list:
    """The tasks of the development source `source` (../shared/data/trajectories), skipping
    the test when it is absent."""
    import pytest

    from brainbox.eval import sources

    path = data_dir / "trajectories" / source
    if not path.exists():
        pytest.skip(f"{source} is absent")
    return sources.load_source(path)[0]


def git_repo(root: Path, files) -> Path:
    """A folder with `.git` (a project root) and each of `files` holding one line."""
    (root / ".git").mkdir(parents=True)
    for f in files:
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text("x = 1\n")
    return root


def record_tool(mem, repo, session, name, at, *, files=(), command=None, error=None,
                code=None) -> None:
    """Record one tool call of `repo` (its files relative to it) in `mem`."""
    rec = {"session": session, "cwd": str(repo), "tool": name, "at": at,
           "files": [str(repo / f) for f in files]}
    if command is not None:
        rec.update(command=command, exit_code=code)
    if error is not None:
        rec["error"] = error
    mem.record(rec)


def hook_process(event: str, payload: dict, env: dict, agent: str = "claude") -> str:
    """Run one real hook process on `payload`; its stdout (it must exit 0)."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "hook", agent, event],
                       input=json.dumps(payload), capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def hook_script(heavy) -> str:
    """`python -c` code running one hook (argv[1] its event), then writing to stderr the
    modules of `heavy` it imported."""
    return ("import sys\n"
            "from brainbox.cli.entry import main\n"
            "rc = main(['hook', 'claude', sys.argv[1]])\n"
            f"heavy = sorted(m for m in {tuple(heavy)!r} if m in sys.modules)\n"
            "sys.stderr.write(repr(heavy))\n"
            "sys.exit(rc)\n")


@contextlib.contextmanager
def running_daemon(home):
    """A daemon for `home`, started and waited for; stopped after the block."""
    import time

    from brainbox.cli import client

    client.spawn(home, force=True)
    deadline = time.monotonic() + 120
    while not client.status(home)["running"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert client.status(home)["running"]
    try:
        yield
    finally:
        client.stop(home, wait=10)


def fixture_payloads() -> list[dict]:
    """The recorded Claude Code hook payloads (tests/fixtures/hooks)."""
    return json.loads((HOOK_FIXTURES / "claude_payloads.json").read_text())["payloads"]


def check_record(rec: dict) -> None:
    """A raw record as the hook mapping must emit it: every key, bounded, storable."""
    assert RECORD_KEYS <= rec.keys()
    assert rec["kind"] in {"tool", "prompt", "session_start", "session_end"}
    assert rec["action"] in ACTIONS
    assert isinstance(rec["session"], str) and isinstance(rec["cwd"], str)
    assert isinstance(rec["files"], list) and len(rec["files"]) <= hookmap.MAX_FILES
    assert all(isinstance(f, str) and f for f in rec["files"])
    assert rec["exit_code"] is None or type(rec["exit_code"]) is int
    for key, limit in (
        ("command", hookmap.MAX_COMMAND),
        ("prompt", hookmap.MAX_PROMPT),
        ("error", hookmap.MAX_ERROR),
        ("args", hookmap.MAX_ARGS),
    ):
        assert rec[key] is None or (isinstance(rec[key], str) and len(rec[key]) <= limit)
    # Every string must reach SQLite: valid UTF-8, no NULs.
    text = json.dumps(rec, ensure_ascii=False)
    text.encode("utf-8")
    assert "\\u0000" not in text


def stored_events(kind=None) -> list[dict]:
    """The events in the default database (the test's home), of `kind` when given."""
    conn = store.connect()
    try:
        evs = list(store.iter_events(conn))
    finally:
        conn.close()
    return [e for e in evs if kind is None or e["kind"] == kind]
