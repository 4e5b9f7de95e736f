"""The hook processes: recording, injection, feedback, budgets, spooling, fuzzing, concurrency."""

from __future__ import annotations

import io
import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from brainbox import feedback, paths, store
from brainbox.cli import client, daemon, handler, hookconf, hooklog, hooks, spool
from brainbox.cli.guard import Guard
from brainbox.cli.hookmap import CONTEXT_CLOSE, CONTEXT_OPEN
from brainbox.cli.service import Service
from brainbox.storage import db as dbmod
from tests.records import stored_events

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def inprocess(hooks_inprocess):
    """Every hook here runs in this process (conftest's `hooks_inprocess`)."""
    yield


def run(event, payload, agent="claude"):
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    out = io.StringIO()
    assert hooks.main([agent, event], stdin=io.BytesIO(data), stdout=out) == 0
    return out.getvalue()


events = stored_events  # the test home's stored events, of a kind when given


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    for f in ("src/auth/login.py", "src/auth/session.py", "src/billing/invoice.py",
              "tests/test_auth.py"):
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text("x = 1\n")
    return root


def tool(repo, name, path, session="s1", event="PostToolUse", **extra):
    p = {"session_id": session, "cwd": str(repo), "hook_event_name": event, "tool_name": name,
         "tool_input": {"file_path": str(repo / path)}, "tool_response": {}}
    p.update(extra)
    return p


def prompt(repo, text, session="s1"):
    return {"session_id": session, "cwd": str(repo), "hook_event_name": "UserPromptSubmit",
            "prompt": text}


def teach(repo, sessions=4):
    """Past sessions, recorded by the hooks themselves (with a daemon a tool call is
    handed over: the tests count the daemon's connections after this)."""
    was = os.environ.get("BRAINBOX_DAEMON")
    os.environ["BRAINBOX_DAEMON"] = "off"
    try:
        for s in range(sessions):
            for name, path in (("Read", "src/auth/login.py"),
                               ("Edit", "src/auth/session.py"), ("Read", "tests/test_auth.py")):
                assert run("PostToolUse", tool(repo, name, path, session=f"past{s}")) == ""
    finally:
        if was is None:
            os.environ.pop("BRAINBOX_DAEMON")
        else:
            os.environ["BRAINBOX_DAEMON"] = was


# --------------------------------------------------------------------------- recording


def test_post_tool_use_records_one_event_and_prints_nothing(repo):
    assert run("PostToolUse", tool(repo, "Read", "src/auth/login.py")) == ""
    [ev] = events()
    assert (ev["kind"], ev["tool"], ev["files"], ev["action"]) == (
        "tool", "Read", ["src/auth/login.py"], "read")
    assert ev["project"] == str(repo)


def test_post_tool_use_failure_records_the_error(repo):
    p = tool(repo, "Bash", "x", event="PostToolUseFailure", error="Exit code 1\nKeyError: 'x'")
    p["tool_input"] = {"command": "pytest tests/test_auth.py"}
    run("PostToolUseFailure", p)
    [ev] = events()
    assert ev["tool"].startswith("Bash") and ev["exit_code"] == 1 and ev["error_fp"]


def test_post_tool_use_imports_standard_library_only(repo):
    code = (
        "import sys\n"
        "from brainbox.cli.entry import main\n"
        "rc = main(['hook', 'claude', 'PostToolUse'])\n"
        "bad = sorted(m for m in ('click', 'numpy', 'numba', 'scipy', 'sqlean') if m in sys.modules)\n"
        "sys.stderr.write(repr(bad))\n"
        "sys.exit(rc)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], input=json.dumps(tool(repo, "Read", "src/a.py")),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout == ""
    assert p.stderr.strip().endswith("[]"), p.stderr
    assert len(events()) == 1


# --------------------------------------------------------------------------- prompts


def context_of(out: str, event="UserPromptSubmit") -> str:
    data = json.loads(out)
    assert data["hookSpecificOutput"]["hookEventName"] == event
    return data["hookSpecificOutput"]["additionalContext"]


def test_prompt_injects_compact_context_and_never_a_deleted_file(repo):
    teach(repo)
    (repo / "tests" / "test_auth.py").unlink()
    out = run("UserPromptSubmit", prompt(repo, "fix the login redirect in auth"))
    text = context_of(out)
    assert text.startswith(CONTEXT_OPEN) and text.endswith(CONTEXT_CLOSE)
    assert "src/auth/login.py — matches query" in text
    assert "tests/test_auth.py" not in text  # deleted from disk since
    assert len(text) <= hookconf.INJECT_CHARS
    assert "next tool: " in text
    [p] = events("prompt")
    assert p["prompt"] == "fix the login redirect in auth"


def test_prompt_with_nothing_relevant_prints_nothing(repo):
    teach(repo)
    assert run("UserPromptSubmit", prompt(repo, "zyzzyva quux", session="new")) == ""
    assert len(events("prompt")) == 1


def test_prompt_hook_strips_our_injected_block_before_recording(repo):
    teach(repo)
    first = context_of(run("UserPromptSubmit", prompt(repo, "auth login please")))
    run("UserPromptSubmit", prompt(repo, f"{first}\nnow the invoice"))
    stored = [e["prompt"] for e in events("prompt")]
    assert stored[-1] == "now the invoice"
    assert all(CONTEXT_OPEN not in s and "matches query" not in s for s in stored)


def test_inject_chars_and_inject_off_are_configurable(repo, monkeypatch):
    teach(repo)
    monkeypatch.setenv("BRAINBOX_INJECT_CHARS", "190")
    text = context_of(run("UserPromptSubmit", prompt(repo, "auth login session")))
    assert len(text) <= 190
    monkeypatch.setenv("BRAINBOX_INJECT", "off")
    assert run("UserPromptSubmit", prompt(repo, "auth login session")) == ""


def test_config_file_sets_the_budget(brainbox_home, monkeypatch):
    brainbox_home.mkdir(parents=True, exist_ok=True)
    (brainbox_home / "config.json").write_text('{"hook_budget_tool": 0.7}')
    hookconf.reset()
    assert hookconf.budget("tool") == 0.7
    monkeypatch.setenv("BRAINBOX_HOOK_BUDGET_TOOL", "0.3")
    assert hookconf.budget("tool") == 0.3


# --------------------------------------------------------------------------- session start


def test_session_start_lists_frequent_files_within_the_character_budget(repo, monkeypatch):
    teach(repo)
    start = {"session_id": "fresh", "cwd": str(repo), "hook_event_name": "SessionStart",
             "source": "startup"}
    text = context_of(run("SessionStart", start), "SessionStart")
    assert "src/auth/login.py" in text and len(text) <= hookconf.SESSION_START_CHARS == 1200
    assert text.startswith(CONTEXT_OPEN) and text.endswith(CONTEXT_CLOSE)
    monkeypatch.setenv("BRAINBOX_SESSION_START_CHARS", "130")
    small = context_of(run("SessionStart", start), "SessionStart")
    assert len(small) <= 130 and 1 == small.count("\n- ") < text.count("\n- ")
    monkeypatch.setenv("BRAINBOX_SESSION_START_CHARS", "20")
    assert run("SessionStart", start) == ""  # not even one line fits
    monkeypatch.delenv("BRAINBOX_SESSION_START_CHARS")
    monkeypatch.setenv("BRAINBOX_SESSION_START_TOKENS", "5")  # the earlier setting, x 4
    assert run("SessionStart", start) == ""
    monkeypatch.setenv("BRAINBOX_SESSION_START_CHARS", "130")  # characters win
    assert context_of(run("SessionStart", start), "SessionStart") == small


# --------------------------------------------------------------------------- feedback


def test_score_follows_the_reward_formula():
    batches = [{"after_id": 10, "at": 0, "project": "/p", "chars": 400,
                "items": [{"path": "a.py", "rank": 1, "via": None},
                          {"path": "b.py", "rank": 2, "via": "a.py"},
                          {"path": "c.py", "rank": 3, "via": "a.py"}]}]
    evs = [
        {"id": 9, "kind": "tool", "project": "/p", "files": ["c.py"], "action": "edit"},
        {"id": 11, "kind": "tool", "project": "/p", "files": ["a.py"], "action": "read"},
        {"id": 12, "kind": "tool", "project": "/p", "files": ["b.py"], "action": "edit"},
        {"id": 13, "kind": "tool", "project": "/q", "files": ["c.py"], "action": "edit"},
    ]
    items, reward = feedback.score(batches, evs)
    by = {i["path"]: i for i in items}
    assert by["a.py"] == {"path": "a.py", "used": True, "via": None, "rank": 1, "edited": False,
                          "confidence": None, "channels": {}, "at": 0.0, "shown": 1}
    assert by["b.py"]["used"] and by["b.py"]["edited"]
    assert not by["c.py"]["used"]  # touched before the suggestion, or in another project
    assert reward == pytest.approx(1 / 1 + 1.5 / 2 - 2 * (400 / 4) / 1000)


def test_stop_scores_suggestions_into_one_feedback_event(repo):
    teach(repo)
    text = context_of(run("UserPromptSubmit", prompt(repo, "fix the auth login session")))
    assert "src/auth/session.py" in text
    run("PostToolUse", tool(repo, "Edit", "src/auth/login.py"))
    stop = {"session_id": "s1", "cwd": str(repo), "hook_event_name": "Stop"}
    assert run("Stop", stop) == ""
    [fb] = events("feedback")
    meta = fb["meta"]
    assert meta["op"] == "feedback" and meta["suggestions"] == 1
    by = {i["path"]: i for i in meta["items"]}
    assert by["src/auth/login.py"]["used"] and by["src/auth/login.py"]["edited"]
    assert not by["src/auth/session.py"]["used"]
    # why it was shown, and when, kept for `brainbox log` (issue 18)
    assert set(by["src/auth/session.py"]) == {"path", "used", "via", "rank", "edited",
                                              "confidence", "channels", "at", "shown"}
    assert by["src/auth/session.py"]["channels"] and by["src/auth/session.py"]["shown"] == 1
    assert 0 < by["src/auth/session.py"]["confidence"] <= 1
    rank = by["src/auth/login.py"]["rank"]
    assert meta["reward"] == pytest.approx(1.5 / rank - 2 * (len(text) / 4) / 1000, abs=1e-5)
    # the Stop hook folded it (State._special applies op == "feedback") and saved
    from brainbox.memory import Memory

    with Memory(store.connect(), autosave=False) as mem:
        assert mem.state.watermark == max(e["id"] for e in events())
    # scored once: the next Stop has nothing pending
    run("Stop", stop)
    assert len(events("feedback")) == 1
    assert [e["meta"]["reason"] for e in events("session_end")] == ["stop", "stop"]


# --------------------------------------------------------------------------- reliability


def test_a_locked_database_spools_the_event_and_a_later_hook_drains_it(repo, monkeypatch):
    monkeypatch.setenv("BRAINBOX_HOOK_BUDGET_TOOL", "0.3")
    run("PostToolUse", tool(repo, "Read", "src/auth/login.py"))
    conn = sqlite3.connect(paths.db_path(), isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    try:
        t0 = time.monotonic()
        assert run("PostToolUse", tool(repo, "Edit", "src/auth/session.py")) == ""
        waited = time.monotonic() - t0
    finally:
        conn.execute("ROLLBACK")
        conn.close()
    assert waited < 5  # bounded by the budget, not by SQLite's 5 s busy timeout
    assert len(list(Path(spool.spool_dir()).glob("*.jsonl"))) == 1
    log = (Path(paths.home()) / hooklog.LOG_NAME).read_text()
    assert "event spooled" in log or "timeout" in log
    run("PostToolUse", tool(repo, "Read", "tests/test_auth.py"))
    assert [e["files"][0] for e in events()] == [
        "src/auth/login.py", "tests/test_auth.py", "src/auth/session.py"]
    assert not list(Path(spool.spool_dir()).iterdir())


def test_an_unusable_database_never_breaks_the_hook(repo, tmp_path, monkeypatch):
    bad = tmp_path / "not-a-db"
    bad.write_bytes(b"this is not sqlite" * 10)
    monkeypatch.setenv("BRAINBOX_DB", str(bad))
    assert run("PostToolUse", tool(repo, "Read", "src/auth/login.py")) == ""
    assert bad.read_bytes() == b"this is not sqlite" * 10
    assert len(list(Path(spool.spool_dir()).glob("*.jsonl"))) == 1
    monkeypatch.delenv("BRAINBOX_DB")
    run("PostToolUse", tool(repo, "Read", "src/auth/session.py"))
    assert len(events()) == 2  # nothing lost once the database is usable


def test_failures_are_logged_with_traceback_and_the_log_is_bounded(repo, monkeypatch):
    def boom(*a):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(handler, "handle", boom)
    assert run("PostToolUse", tool(repo, "Read", "src/a.py")) == ""
    log = Path(paths.home()) / hooklog.LOG_NAME
    text = log.read_text()
    assert "RuntimeError: kaboom" in text and "Traceback (most recent call last)" in text
    assert hooklog.last_errors(1)[0].split(": ", 1)[1].startswith("RuntimeError: kaboom")
    log.write_text("x" * (hooklog.LOG_MAX + 10))
    run("PostToolUse", tool(repo, "Read", "src/a.py"))
    assert log.stat().st_size < 10_000 and (log.parent / (log.name + ".1")).exists()


def test_a_hook_whose_stdin_never_closes_still_exits_0_quietly(tmp_path):
    env = dict(os.environ, BRAINBOX_HOOK_BUDGET_TOOL="0.2")
    p = subprocess.Popen([sys.executable, "-m", "brainbox.cli.entry", "hook", "claude",
                          "PostToolUse"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    p.stdin.write(b'{"session_id": "s", "hook_event_name": "PostToolUse"')  # and no EOF
    p.stdin.flush()
    rc = p.wait(timeout=30)  # stdin still open: only the budget ends it
    out = p.stdout.read()
    p.stdin.close()
    assert rc == 0 and out == b""
    log = (Path(paths.home()) / hooklog.LOG_NAME).read_text()
    assert "event lost" in log and "recorded only" not in log  # nothing could be kept


def test_a_prompt_beyond_its_budget_degrades_to_recording_only(repo, monkeypatch):
    teach(repo)
    monkeypatch.setenv("BRAINBOX_HOOK_BUDGET_PROMPT", "0.05")
    assert run("UserPromptSubmit", prompt(repo, "auth login")) == ""
    assert len(events("prompt")) == 1


# --------------------------------------------------------------------------- fuzzing


def fuzz_payloads(rng: random.Random, n: int, repo: Path):
    names = ["PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "SessionStart", "Stop",
             "SessionEnd", "Nope", ""]
    junk = [None, 1, -1.5, True, "", "x" * 5000, [], {}, [1, {"a": None}], "\ud800",
            "\x00\x01", "é" * 3000, {"nested": [[[[{}]]]]}]
    for i in range(n):
        r = rng.random()
        if r < 0.15:
            yield bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 300)))
        elif r < 0.25:
            yield json.dumps(rng.choice(junk)).encode()
        elif r < 0.3:
            yield (b"[" * rng.randint(1, 5000)) + b"]"
        elif r < 0.35:
            yield b'{"session_id": "s", "tool_name": "Read", "tool_input": {"file_path": "'
        else:
            p = {"session_id": rng.choice(["s1", "s2", "", None, 5, "\udcff", "x" * 400]),
                 "cwd": rng.choice([str(repo), "", None, "/nonexistent/\udcff", 7, "rel/dir"]),
                 "hook_event_name": rng.choice(names),
                 "tool_name": rng.choice(["Read", "Edit", "Bash", "Grep", "", None, 3,
                                          "mcp__x__y", "\x00"]),
                 "tool_input": rng.choice([{"file_path": str(repo / "src/auth/login.py")},
                                           {"command": "pytest -x && cat a.py > b.py"},
                                           {"command": ["bash", "-lc", "ls"]},
                                           {"file_path": "../../etc/passwd"},
                                           {"pattern": "x", "path": 5}, rng.choice(junk)]),
                 "tool_response": rng.choice([{"filenames": ["a.py"] * 100}, "Exit code 2",
                                              {"exit_code": "9"}, rng.choice(junk)]),
                 "prompt": rng.choice(["fix auth", CONTEXT_OPEN + "x", rng.choice(junk)]),
                 "error": rng.choice(["Exit code 1\nboom", rng.choice(junk)])}
            for k in rng.sample(sorted(p), rng.randint(0, 3)):
                del p[k]
            yield json.dumps(p).encode("utf-8", "surrogatepass")


@pytest.mark.slow  # 86 s in one loaded run of the suite (README, Tests)
def test_fuzzing_10000_payloads_never_breaks_a_hook_or_the_database(repo, monkeypatch):
    monkeypatch.setenv("BRAINBOX_INJECT", "off")
    rng = random.Random(1234)
    events_arg = ["PostToolUse", "UserPromptSubmit", "Stop", "SessionStart",
                  "PostToolUseFailure", None]
    big = json.dumps({"session_id": "s", "cwd": str(repo), "hook_event_name": "PostToolUse",
                      "tool_name": "Read", "tool_input": {"file_path": "a.py"},
                      "tool_response": {"content": "y" * (3 << 20)}}).encode()
    huge = b'{"session_id": "s", "hook_event_name": "PostToolUse", "x": "' + b"z" * (
        hooks.MAX_STDIN + 10) + b'"}'
    payloads = list(fuzz_payloads(rng, 9_800, repo)) + [big] * 3 + [huge]
    t0 = time.monotonic()
    for data in payloads:
        out = io.StringIO()
        ev = rng.choice(events_arg)
        assert hooks.main(["claude", ev] if ev else ["codex"], stdin=io.BytesIO(data),
                          stdout=out) == 0
        assert out.getvalue() == ""  # injection is off: nothing may be printed
    in_process = time.monotonic() - t0
    # a few hundred real processes, four at a time
    sample = rng.sample(payloads[:-4], 200) + [big]

    def one(data):
        return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "hook", "claude",
                               rng.choice(["PostToolUse", "UserPromptSubmit", "Stop"])],
                              input=data, capture_output=True, timeout=60)

    with ThreadPoolExecutor(4) as pool:
        procs = list(pool.map(one, sample))
    assert all(p.returncode == 0 for p in procs)
    assert all(p.stdout == b"" for p in procs)
    conn = sqlite3.connect(paths.db_path())
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    conn.close()
    assert stored > 1000
    from brainbox.memory import Memory

    with Memory.open() as mem:  # usable: folds everything and answers
        assert mem.stats()["events"] == stored
        mem.recall("auth login", cwd=str(repo))
    print(f"fuzz: {len(payloads)} in-process in {in_process:.1f} s, {len(procs)} processes")


# --------------------------------------------------------------------------- concurrency

WORKER = """
import io, json, sys
from brainbox.cli import hooks
hooks.HARD_EXIT = False
repo, wid, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n):
    p = {"session_id": f"w{wid}", "cwd": repo, "hook_event_name": "PostToolUse",
         "tool_name": "Read", "tool_input": {"file_path": f"{repo}/src/f{wid}_{i}.py"},
         "tool_response": {}}
    out = io.StringIO()
    assert hooks.main(["claude", "PostToolUse"], stdin=io.BytesIO(json.dumps(p).encode()),
                      stdout=out) == 0
    assert out.getvalue() == ""
"""


def test_eight_concurrent_writers_lose_no_event(repo):
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(repo), str(w), "125"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for w in range(8)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()[-2000:]
        assert out == b""
    conn = store.connect()
    spool.drain_spool(conn)  # anything a timed-out call spooled
    conn.close()
    evs = events()
    assert all(e["files"] for e in evs), [e for e in evs if not e["files"]][:3]
    files = [e["files"][0] for e in evs]
    assert len(files) == 1000 and len(set(files)) == 1000


def test_eight_concurrent_hook_processes_lose_no_event(repo):
    def stream(w, n=15):
        rcs = []
        for i in range(n):
            p = tool(repo, "Read", f"src/p{w}_{i}.py", session=f"p{w}")
            r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "hook", "claude",
                                "PostToolUse"], input=json.dumps(p).encode(),
                               capture_output=True, timeout=60)
            rcs.append((r.returncode, r.stdout))
        return rcs

    with ThreadPoolExecutor(8) as pool:
        results = [x for rs in pool.map(stream, range(8)) for x in rs]
    assert all(rc == 0 and out == b"" for rc, out in results)
    conn = store.connect()
    spool.drain_spool(conn)
    conn.close()
    assert len({e["files"][0] for e in events()}) == 120


# Not slow: the concurrency tests run in every tier (issue 14's acceptance).
def test_eight_concurrent_hook_processes_1000_events(repo):
    def stream(w, n=125):
        for i in range(n):
            p = tool(repo, "Read", f"src/q{w}_{i}.py", session=f"q{w}")
            r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "hook", "claude",
                                "PostToolUse"], input=json.dumps(p).encode(),
                               capture_output=True, timeout=60)
            assert r.returncode == 0 and r.stdout == b""

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(stream, range(8)))
    conn = store.connect()
    spool.drain_spool(conn)
    conn.close()
    assert len({e["files"][0] for e in events()}) == 1000


# --------------------------------------------------------------------------- daemon handoff


class Served:
    """The daemon's protocol (`daemon.serve_connection` over a real `Service`) in a thread
    of this process, so a test can hold it back, slow it down or point it elsewhere."""

    def __init__(self, home: Path, db: str | None = None):
        import socket
        import threading

        home.mkdir(parents=True, exist_ok=True)
        self.svc = Service(db)
        self.hold = threading.Event()
        self.hold.set()  # cleared: an accepted connection waits before it is served
        self.served = threading.Event()
        self.answers = 0
        self.stop = False
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(paths.socket_path(home))
        self.listener.listen(8)
        self.listener.settimeout(0.05)
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stop:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            self.hold.wait(60)
            daemon.serve_connection(self.svc, conn)
            self.answers += 1
            self.served.set()

    def connections(self, n: int) -> int:
        """Connections served, once `n` have been (the hook may return before the
        daemon's side of the connection is closed); the count after 10 s otherwise."""
        deadline = time.monotonic() + 10
        while self.answers < n and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.answers

    def close(self):
        self.stop = True
        self.hold.set()
        self.thread.join(10)
        self.listener.close()
        self.svc.close()


@pytest.fixture
def one_sqlite(monkeypatch):
    """A daemon in a thread of this process opens the database with the same SQLite
    library as the hooks here: two SQLite copies in one process (sqlean's and the
    standard module's) do not see each other's POSIX locks, so closing one connection
    checkpoints and drops the WAL the other still writes to. A real daemon is its own
    process."""
    monkeypatch.setattr(dbmod, "_PROCESS_DRIVER", sqlite3)


@pytest.fixture
def served(monkeypatch, brainbox_home, one_sqlite):
    monkeypatch.setenv("BRAINBOX_DAEMON", "on")
    spawned = []
    monkeypatch.setattr(client, "spawn", lambda *a, **k: spawned.append(1) or False)
    s = Served(brainbox_home)
    s.spawned = spawned
    yield s
    s.close()


def spool_files():
    d = Path(spool.spool_dir())
    return sorted(d.iterdir()) if d.exists() else []


def test_a_prompt_handed_to_the_daemon_is_recorded_once_with_the_same_text(repo, served,
                                                                            monkeypatch):
    teach(repo)
    assert served.svc.requests == 0
    monkeypatch.setenv("BRAINBOX_DAEMON", "off")
    local = run("UserPromptSubmit", prompt(repo, "fix the auth login session", session="a"))
    monkeypatch.setenv("BRAINBOX_DAEMON", "on")
    via = run("UserPromptSubmit", prompt(repo, "fix the auth login session", session="b"))
    assert served.svc.requests >= 1 and served.connections(1) == 1
    assert via == local  # the same line, byte for byte
    text = context_of(via)
    assert text.startswith(CONTEXT_OPEN) and "src/auth/login.py — matches query" in text
    assert [(e["session"], e["prompt"]) for e in events("prompt")] == [
        ("a", "fix the auth login session"), ("b", "fix the auth login session")]
    assert not spool_files() and not served.spawned
    # the daemon remembered what it suggested; Stop (handed over too) scores it once
    run("PostToolUse", tool(repo, "Edit", "src/auth/login.py", session="b"))  # handed over
    assert run("Stop", {"session_id": "b", "cwd": str(repo), "hook_event_name": "Stop"}) == ""
    assert served.connections(3) == 3
    [fb] = events("feedback")
    assert fb["session"] == "b" and fb["meta"]["suggestions"] == 1
    assert [e["session"] for e in events("session_end")] == ["b"]


def test_session_start_is_handed_over_too(repo, served):
    teach(repo)
    start = {"session_id": "fresh", "cwd": str(repo), "hook_event_name": "SessionStart",
             "source": "startup"}
    text = context_of(run("SessionStart", start), "SessionStart")
    assert "src/auth/login.py" in text and served.connections(1) == 1
    [ev] = events("session_start")
    assert ev["session"] == "fresh" and ev["meta"]["source"] == "startup"


def test_the_daemon_maps_a_payload_without_cwd_in_the_hooks_directory(repo, served,
                                                                      monkeypatch):
    sub = repo / "src" / "auth"
    monkeypatch.chdir(sub)
    run("UserPromptSubmit", {"session_id": "s", "hook_event_name": "UserPromptSubmit",
                             "prompt": "where is login"})
    [ev] = events("prompt")
    assert ev["project"] == str(repo) and served.connections(1) == 1  # not the daemon's


def test_no_daemon_the_hook_records_locally_once_and_starts_one(repo, served, monkeypatch):
    teach(repo)
    served.close()  # nobody listens: the socket file is left behind, like a crashed daemon
    out = run("UserPromptSubmit", prompt(repo, "fix the auth login session"))
    assert "src/auth/login.py" in context_of(out)  # answered in-process
    assert len(events("prompt")) == 1 and served.spawned == [1]


def test_a_daemon_that_never_acknowledges_leaves_the_record_to_the_hook(repo, served,
                                                                       monkeypatch):
    teach(repo)
    monkeypatch.setenv("BRAINBOX_HOOK_BUDGET_PROMPT", "1.0")
    served.hold.clear()  # accepted, but not read: a daemon busy with a long request
    t0 = time.monotonic()
    assert run("UserPromptSubmit", prompt(repo, "fix the auth login session")) == ""
    assert time.monotonic() - t0 < 1.0
    assert len(events("prompt")) == 1  # recorded here, after the hook gave up
    served.hold.set()  # now the daemon reads the request: its receipt cannot be sent
    assert served.served.wait(10)
    assert len(events("prompt")) == 1 and served.svc.requests == 1
    assert not spool_files() and not served.spawned


def test_a_daemon_that_acknowledged_records_even_when_the_hook_stops_waiting(repo, served,
                                                                            monkeypatch):
    teach(repo)
    monkeypatch.setenv("BRAINBOX_HOOK_BUDGET_PROMPT", "1.0")
    slow = served.svc.op_suggest

    def late(req):
        time.sleep(1.2)
        return slow(req)

    monkeypatch.setattr(served.svc, "op_suggest", late)
    t0 = time.monotonic()
    assert run("UserPromptSubmit", prompt(repo, "fix the auth login session")) == ""
    assert time.monotonic() - t0 < 1.1
    assert len(events("prompt")) == 1  # the daemon recorded it before it recalled
    assert served.served.wait(10)
    assert len(events("prompt")) == 1 and not spool_files()


def test_a_daemon_serving_another_database_is_refused_and_the_hook_works_alone(
        repo, tmp_path, brainbox_home, monkeypatch, one_sqlite):
    teach(repo)
    monkeypatch.setenv("BRAINBOX_DAEMON", "on")
    monkeypatch.setattr(client, "spawn", lambda *a, **k: False)
    other = Served(brainbox_home, db=str(tmp_path / "other.db"))
    try:
        out = run("UserPromptSubmit", prompt(repo, "fix the auth login session"))
    finally:
        other.close()
    assert "src/auth/login.py" in context_of(out)  # in-process
    assert len(events("prompt")) == 1 and other.connections(1) >= 1


def test_a_failing_daemon_spools_what_it_acknowledged(repo, served, monkeypatch):
    monkeypatch.setattr(served.svc, "memory", lambda: (_ for _ in ()).throw(OSError("disk")))
    monkeypatch.setenv("BRAINBOX_DB", str(repo / "src" / "auth" / "login.py" / "bb.db"))
    served.svc.db = paths.db_path()
    assert run("UserPromptSubmit", prompt(repo, "auth")) == ""
    [f] = spool_files()  # acknowledged, then the database failed: kept for the drainer
    assert json.loads(f.read_text())["kind"] == "prompt"
    assert "event spooled" in (Path(paths.home()) / hooklog.LOG_NAME).read_text()


def test_shutting_the_reading_side_settles_who_records():
    """The kernel behaviour `_handoff` relies on: after the hook shuts its reading side, a
    receipt queued before is still read, and one sent after fails."""
    import socket

    from brainbox.cli.wire import ACK

    a, b = socket.socketpair()
    b.sendall(ACK)
    assert client.daemon_took(a, bytearray(64)) is True
    c, d = socket.socketpair()
    assert client.daemon_took(c, bytearray(64)) is False
    with pytest.raises(BrokenPipeError):
        d.sendall(ACK)
    e, f = socket.socketpair()  # the main thread read the receipt already
    f.sendall(ACK)
    rx = bytearray(64)
    e.recv_into(rx)
    assert client.daemon_took(e, rx) is True
    for s in (a, b, c, d, e, f):
        s.close()


def test_the_watchdog_spools_a_handoff_only_when_the_daemon_did_not_take_it(repo):
    import socket

    from brainbox.cli.wire import ACK

    p = prompt(repo, "auth")
    for acked in (True, False):
        guard = Guard(1.0, False, ("claude", "UserPromptSubmit"))
        guard.payload = p
        a, b = socket.socketpair()
        if acked:
            b.sendall(ACK)
        guard.sock, guard.rx = a, bytearray(64)
        guard.spool_uncommitted()  # what the watchdog does at the deadline
        assert guard.committed
        assert len(spool_files()) == (0 if acked else 1)
        if not acked:
            with pytest.raises(BrokenPipeError):
                b.sendall(ACK)
        a.close()
        b.close()
    [f] = spool_files()
    [ev] = [json.loads(line) for line in f.read_text().splitlines()]
    assert "raw" not in ev and (ev["kind"], ev["prompt"]) == ("prompt", "auth")  # mapped


def test_pending_suggestions_are_appended_bounded_and_read_in_the_old_format(monkeypatch):
    for i in range(handler.PENDING_BATCHES + 5):
        handler.remember("s", {"after_id": i, "at": 0, "project": "/p", "chars": 1,
                             "items": [{"path": "a.py", "rank": 1, "via": None}]})
    got = handler.take_pending("s")
    assert [b["after_id"] for b in got] == list(range(5, handler.PENDING_BATCHES + 5))
    assert handler.take_pending("s") == []  # claimed once
    monkeypatch.setattr(handler, "PENDING_MAX_BYTES", 2000)
    for i in range(40):
        handler.remember("t", {"after_id": i, "at": 0, "project": "/p", "chars": 1,
                             "items": [{"path": "a.py", "rank": 1, "via": None}]})
    with open(handler.session_file("t"), "rb") as fh:
        assert len(fh.read().splitlines()) <= handler.PENDING_BATCHES
    assert handler.take_pending("t")[-1]["after_id"] == 39
    legacy = handler.session_file("u")[:-1]  # `.json`, written by the previous version
    Path(legacy).write_text(json.dumps({"session": "u", "batches": [
        {"after_id": 7, "items": [{"path": "b.py", "rank": 1}]}, {"after_id": 8, "items": []}]}))
    handler.remember("u", {"after_id": 9, "items": [{"path": "c.py", "rank": 1}]})
    assert [b["after_id"] for b in handler.take_pending("u")] == [7, 9]


def test_the_daemon_stores_exactly_what_the_hook_would_have(repo, tmp_path, monkeypatch,
                                                            one_sqlite):
    """The same fuzzed prompt/start/stop payloads through the hook process alone (home a)
    and handed to the daemon (home b): the same events, field for field, but the time."""
    monkeypatch.setenv("BRAINBOX_INJECT", "off")
    rng = random.Random(99)
    payloads = [p for p in fuzz_payloads(rng, 1500, repo)][:400]
    argv = [rng.choice(["UserPromptSubmit", "SessionStart", "Stop", None]) for _ in payloads]
    stored = {}
    for side in ("a", "b"):
        home = tmp_path / side
        monkeypatch.setenv("BRAINBOX_HOME", str(home))
        monkeypatch.setenv("BRAINBOX_DAEMON", "on" if side == "b" else "off")
        srv = Served(home) if side == "b" else None
        try:
            for data, ev in zip(payloads, argv):
                out = io.StringIO()
                assert hooks.main(["claude", ev] if ev else ["codex"],
                                  stdin=io.BytesIO(data), stdout=out) == 0
                assert out.getvalue() == ""
        finally:
            if srv is not None:
                handed = srv.svc.requests
                srv.close()
        stored[side] = [{k: v for k, v in e.items() if k not in ("at", "id")} for e in events()]
    assert handed > 50  # most went through the daemon
    assert len(stored["a"]) > 50 and stored["a"] == stored["b"]


def test_only_a_whole_hook_process_skips_finalisation(monkeypatch):
    argv = ["claude", "UserPromptSubmit"]
    for sys_argv, whole in ((["/usr/bin/brainbox", "hook", *argv], True),
                            (["/x/brainbox/cli/entry.py", "hook", *argv], True),
                            (["/x/brainbox/cli/hooks.py", *argv], True),
                            (["-c"], False), (["-c", "UserPromptSubmit"], False),
                            (["pytest", "tests/test_hooks.py"], False)):
        monkeypatch.setattr(sys, "argv", sys_argv)
        assert hooks._whole_process(argv) is whole, sys_argv


# --------------------------------------------------------------------------- issue 13

HOOK = [sys.executable, "-m", "brainbox.cli.entry", "hook", "claude"]


def hook_proc(event, data: bytes, env=None, timeout=60):
    return subprocess.run([*HOOK, event], input=data, capture_output=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def drain():
    conn = store.connect()
    try:
        return spool.drain_spool(conn)
    finally:
        conn.close()


def use_ids():
    return sorted((e["meta"] or {}).get("tool_use_id") for e in events("tool"))


def locked_run(event, payload):
    """Run a hook in-process while another connection holds the write lock: it spools."""
    conn = sqlite3.connect(paths.db_path(), isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    try:
        return run(event, payload)
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def test_a_late_writer_loses_no_event(repo):
    """The agent writes stdin 0.25 s and 0.5 s after spawn: the 0.2 s tool budget used to
    run out during the read, and the event was neither stored nor spooled (report D1)."""
    run("PostToolUse", tool(repo, "Read", "src/auth/login.py", tool_use_id="first"))
    for delay in (0.25, 0.5):
        p = subprocess.Popen([*HOOK, "PostToolUse"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(delay)
        data = json.dumps(tool(repo, "Read", "src/auth/session.py", tool_use_id=f"late{delay}"))
        stdin, p.stdin = p.stdin, None
        try:
            stdin.write(data.encode())
            stdin.close()
        except BrokenPipeError:
            pass  # the hook gave up before the payload came: the asserts below say so
        out, err = p.communicate(timeout=60)
        assert (p.returncode, out, err) == (0, b"", b"")
    drain()  # what a slow machine spooled
    assert use_ids() == ["first", "late0.25", "late0.5"]
    log = Path(paths.home()) / hooklog.LOG_NAME
    assert not log.exists() or "recorded only" not in log.read_text()


def test_a_deadline_before_mapping_never_spools_a_secret(repo):
    """A 3 MB payload and a 0.03 s budget: the deadline comes before the mapping, and the
    watchdog used to spool the raw payload, tool output and file contents included (D2)."""
    secret = "Hunter2Secret" + "Zq7" * 3
    bash = {"session_id": "s", "cwd": str(repo), "hook_event_name": "PostToolUse",
            "tool_name": "Bash", "tool_input": {"command": "cat .env"},
            "tool_response": {"stdout": "x" * 3_000_000 + f" DB_PASSWORD={secret}",
                              "stderr": ""}}
    write = {"session_id": "s", "cwd": str(repo), "hook_event_name": "PostToolUse",
             "tool_name": "Write", "tool_input": {"file_path": str(repo / "src/a.py"),
                                                  "content": "y" * 3_000_000 + secret}}
    run("PostToolUse", tool(repo, "Read", "src/auth/login.py"))
    runs = 8
    for i in range(runs):
        p = dict(bash if i % 2 else write, tool_use_id=f"big{i}")
        r = hook_proc("PostToolUse", json.dumps(p).encode(), {"BRAINBOX_HOOK_BUDGET_TOOL": "0.03"})
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
        for f in Path(paths.home()).rglob("*"):
            if f.is_file():
                assert secret.encode() not in f.read_bytes(), f
    drain()
    assert len(events("tool")) == runs + 1  # nothing lost either
    for f in Path(paths.home()).rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f


def test_a_poisoned_spool_file_is_quarantined_and_the_rest_drains(repo, tmp_path):
    """Report D6: an exit code >= 2^63 spooled by an older hook raised OverflowError on
    every drain, so every file spooled after it waited forever and `import` failed."""
    run("PostToolUse", tool(repo, "Read", "src/auth/login.py", tool_use_id="first"))
    folder = Path(spool.spool_dir())
    folder.mkdir(mode=0o700)
    poison = {"at": 1.0, "session": "s1", "project": str(repo), "kind": "tool",
              "tool": "Bash:make", "action": "run", "files": [], "exit_code": 1 << 64,
              "error": "exit code", "meta": {"tool_use_id": "poison"}}
    (folder / "00000000000000000001-1.jsonl").write_text(json.dumps(poison) + "\n")
    locked_run("PostToolUse", tool(repo, "Read", "src/auth/session.py", tool_use_id="behind"))
    assert len(list(folder.glob("*.jsonl"))) == 2
    empty = tmp_path / "transcripts"
    empty.mkdir()
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "import", "claude",
                        str(empty)], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert use_ids() == ["behind", "first"]
    assert not list(folder.glob("*.jsonl*"))
    [bad] = (folder / "bad").iterdir()
    assert json.loads(bad.read_text())["meta"]["tool_use_id"] == "poison"
    for i in range(3):
        run("PostToolUse", tool(repo, "Read", "tests/test_auth.py", tool_use_id=f"later{i}"))
    assert use_ids() == ["behind", "first", "later0", "later1", "later2"]
    log = (Path(paths.home()) / hooklog.LOG_NAME).read_text()
    assert log.count("quarantined") == 1 and "Overflow" in log


def test_a_drain_killed_after_its_commit_stores_nothing_twice(repo):
    """Report D7: a drainer killed between its commit and the unlink left a claim that
    the next drainer took over and appended again."""
    run("PostToolUse", tool(repo, "Read", "src/auth/login.py", tool_use_id="first"))
    locked_run("PostToolUse", tool(repo, "Read", "src/auth/session.py", tool_use_id="spooled"))
    assert len(spool_files()) == 1
    killed_at_unlink = (
        "import os\n"
        "from brainbox.cli import spool\n"
        "from brainbox import store as db\n"
        "real = os.unlink\n"
        "def unlink(p, *a, **k):\n"
        "    if '.claimed.' in str(p):\n"
        "        os._exit(9)  # SIGKILL-like: no cleanup\n"
        "    return real(p, *a, **k)\n"
        "os.unlink = unlink\n"
        "spool.drain_spool(db.connect())\n")
    r = subprocess.run([sys.executable, "-c", killed_at_unlink], capture_output=True, timeout=60)
    assert r.returncode == 9, r.stderr.decode()[-2000:]
    assert use_ids() == ["first", "spooled"]  # committed before the kill
    [claim] = spool_files()
    assert ".claimed." in claim.name  # left by a dead process: the next drainer takes it
    run("PostToolUse", tool(repo, "Read", "tests/test_auth.py", tool_use_id="third"))
    drain()  # the hook drains too when its budget allows: not on a loaded machine
    assert use_ids() == ["first", "spooled", "third"]
    assert not spool_files()
    from brainbox.memory import Memory

    with Memory.open() as mem:  # the log folds as usual, and a rebuild gives the same
        folded = mem.stats()
        assert folded["events"] == 3
        assert mem.rebuild()["events"] == 3 and mem.stats() == folded


def test_a_version_1_database_upgrades_and_keeps_its_events(repo, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(dbmod, "MIGRATIONS", dbmod.MIGRATIONS[:1])
        m.setattr(dbmod, "SCHEMA_VERSION", 1)
        run("PostToolUse", tool(repo, "Read", "src/auth/login.py", tool_use_id="old"))
        conn = store.connect()
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        conn.close()
    run("PostToolUse", tool(repo, "Read", "src/auth/session.py", tool_use_id="new"))
    conn = store.connect()
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == dbmod.SCHEMA_VERSION >= 2
        names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY 1")]
        assert names == [n for n, _ in dbmod.MIGRATIONS]
    finally:
        conn.close()
    assert use_ids() == ["new", "old"]


@pytest.mark.parametrize("with_daemon", [False, True])
def test_the_argv_event_decides(repo, monkeypatch, request, with_daemon):
    """Report D13: a PostToolUse hook whose payload says SessionStart printed a
    SessionStart block (the payload's name decided)."""
    teach(repo)
    start = {"session_id": "s9", "cwd": str(repo), "hook_event_name": "SessionStart",
             "source": "startup"}
    assert context_of(run("SessionStart", start), "SessionStart")  # what it would print
    before = len(events())
    if with_daemon:  # the tool calls are handed over (`record`), as tool calls
        request.getfixturevalue("served")
    assert run("PostToolUse", dict(start, session_id="s10")) == ""
    assert run("PostToolUse", dict(start, session_id="s11", tool_name="Read",
                                   tool_input={"file_path": str(repo / "src/a.py")})) == ""
    new = events()[before:]
    assert [(e["kind"], e["session"], e["meta"]["event"]) for e in new] == [
        ("tool", "s11", "PostToolUse")]


def test_log_and_spool_files_are_0600_whatever_the_umask(repo):
    run("PostToolUse", tool(repo, "Read", "src/auth/login.py"))
    old = os.umask(0)
    try:
        locked_run("PostToolUse", tool(repo, "Read", "src/auth/session.py"))
        run("PostToolUse", b"not json")
    finally:
        os.umask(old)
    [f] = spool_files()
    assert f.stat().st_mode & 0o777 == 0o600
    assert (Path(paths.home()) / hooklog.LOG_NAME).stat().st_mode & 0o777 == 0o600
    assert Path(spool.spool_dir()).stat().st_mode & 0o777 == 0o700


def test_a_symlinked_log_or_spool_folder_is_refused(repo, tmp_path):
    run("PostToolUse", tool(repo, "Read", "src/auth/login.py"))
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home = Path(paths.home())
    (home / hooklog.LOG_NAME).symlink_to(victim)
    (home / "spool").symlink_to(elsewhere)
    assert run("PostToolUse", b"not json") == ""
    assert locked_run("PostToolUse", tool(repo, "Read", "src/auth/session.py")) == ""
    assert victim.read_text() == "mine\n"
    assert list(elsewhere.iterdir()) == []
    (elsewhere / "00000000000000000001-1.jsonl").write_text(json.dumps(
        {"at": 1.0, "session": "planted", "project": str(repo), "kind": "tool"}) + "\n")
    run("PostToolUse", tool(repo, "Read", "tests/test_auth.py"))
    assert "planted" not in {e["session"] for e in events()}  # never drained from there


def _lost_entries(*logs: Path) -> int:
    return sum(p.read_text(errors="replace").count("event lost") for p in logs if p.exists())


@pytest.fixture
def runtime_dir(tmp_path, monkeypatch):
    run_dir = tmp_path / "xdg-run"
    run_dir.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run_dir))
    return run_dir


def test_a_read_only_home_still_exits_0_and_keeps_or_traces_every_event(repo, runtime_dir):
    """Report D12: with a read-only home the hook spooled nothing and logged nothing."""
    home = Path(paths.home())
    run("PostToolUse", tool(repo, "Read", "src/auth/login.py", tool_use_id="first"))
    Path(spool.spool_dir()).mkdir(mode=0o700)  # kept writable: the event is kept there
    if subprocess.run(["chattr", "+i", str(home)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here")
    try:
        for i in range(2):
            r = hook_proc("PostToolUse", json.dumps(tool(repo, "Read", "src/auth/session.py",
                                                         tool_use_id=f"ro{i}")).encode())
            assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
        kept = len(spool_files())
        subprocess.run(["chattr", "+i", spool.spool_dir()], check=True)
        r = hook_proc("PostToolUse", json.dumps(tool(repo, "Read", "tests/test_auth.py",
                                                     tool_use_id="ro-lost")).encode())
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    finally:
        subprocess.run(["chattr", "-i", str(home), spool.spool_dir()], capture_output=True)
    assert kept == 2
    fallback = runtime_dir / f"brainbox-{hooklog.LOG_NAME}"
    assert _lost_entries(fallback) == 1  # the one event that could not be kept, said so
    run("PostToolUse", tool(repo, "Read", "tests/test_auth.py", tool_use_id="after"))
    drain()
    assert use_ids() == ["after", "first", "ro0", "ro1"]


def test_a_full_disk_still_exits_0_and_every_lost_event_leaves_a_trace(repo, tmp_path,
                                                                       runtime_dir,
                                                                       monkeypatch):
    """Report D12: on a full disk 29 of 30 events were lost without a trace."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        monkeypatch.setenv("BRAINBOX_HOME", str(mnt / "bb"))
        run("PostToolUse", tool(repo, "Read", "src/auth/login.py", tool_use_id="first"))
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:  # fill the disk
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        n = 6
        for i in range(n):
            r = hook_proc("PostToolUse", json.dumps(tool(repo, "Read", "src/auth/session.py",
                                                         tool_use_id=f"full{i}")).encode())
            assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
        (mnt / "filler").unlink()
        lost = _lost_entries(runtime_dir / f"brainbox-{hooklog.LOG_NAME}",
                             mnt / "bb" / hooklog.LOG_NAME)
        run("PostToolUse", tool(repo, "Read", "tests/test_auth.py", tool_use_id="after"))
        drain()
        kept = [u for u in use_ids() if u.startswith("full")]
        assert len(kept) + lost == n, (kept, lost)  # stored, spooled, or said to be lost
        assert len(set(kept)) == len(kept)
    finally:
        monkeypatch.setenv("BRAINBOX_HOME", str(tmp_path / "bbhome"))
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_hook_never_hands_its_payload_to_an_untrusted_socket(repo, served, brainbox_home):
    """Report D3 on the hook's side: the handoff connected to whatever socket was at the
    path; it now goes through `client.trusted_connect` (a shared-writable folder here)."""
    teach(repo)
    asked = served.svc.requests
    os.chmod(brainbox_home, 0o777)
    try:
        run("UserPromptSubmit", prompt(repo, "fix the auth login session"))
    finally:
        os.chmod(brainbox_home, 0o700)
    assert served.svc.requests == asked  # the prompt never reached that socket
