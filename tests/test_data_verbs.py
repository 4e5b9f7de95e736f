"""The data verbs as a user meets them (real `brainbox` processes on a real SQLite file):
decay never wipes the memory by accident, forget refuses empty or absurd input, record
resolves relative paths and honours --db, import records what it imported."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

SPOTTER = Path(__file__).resolve().parents[2] / "shared" / "data" / "transcripts" / \
    "claude-code" / "spotter"
DAY = 86400.0


def bb(*args, cwd=None, stdin=None, env=None):
    """One `brainbox` process (the console entry point), as a user runs it."""
    return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", *map(str, args)],
                          input=stdin, capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def js(p):
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


@pytest.fixture
def repo(tmp_path):
    """A git project with the newcomer report's files."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    for f in ("src/auth/login.py", "src/auth/session.py", "src/auth/tokens.py",
              "src/billing/invoice.py", "tests/test_login.py"):
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text("x = 1\n")
    return root


def live_log(repo: Path, sessions: int = 4) -> str:
    """JSON lines of live sessions (now): login then session edits, then a prompt."""
    lines, t = [], time.time()
    for s in range(sessions):
        for tool, f in (("Read", "src/auth/login.py"), ("Edit", "src/auth/session.py"),
                        ("Read", "src/billing/invoice.py")):
            t += 1
            lines.append(json.dumps({"session": f"s{s}", "cwd": str(repo), "tool": tool,
                                     "files": [f], "at": t}))
        lines.append(json.dumps({"session": f"s{s}", "cwd": str(repo),
                                 "prompt": "fix the login redirect", "at": t + 0.5}))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- decay


def test_decay_after_importing_the_spotter_transcripts_keeps_them_and_rebuild_agrees():
    """The newcomer report's friction #2: import ~10-month-old transcripts, decay, rebuild:
    every association is still there (it was 6,382 -> 0)."""
    if not SPOTTER.is_dir():
        pytest.skip("../shared/data/transcripts is absent")
    js(bb("import", "claude", SPOTTER, "--json"))
    before = js(bb("stats", "--json"))["associations"]
    assert before > 1000
    dry = js(bb("decay", "--dry-run", "--json"))
    assert dry["dry_run"] and dry["pruned"] == 0 and dry["associations"] == before
    out = js(bb("decay", "--json"))
    assert out == {"pruned": 0, "associations": before}
    js(bb("rebuild", "--json"))
    assert js(bb("stats", "--json"))["associations"] == before


def test_a_future_now_refuses_without_yes_and_dry_run_shows_the_numbers(repo):
    js(bb("record", "--jsonl", "-", "--json", stdin=live_log(repo)))
    stats = js(bb("stats", "--json"))
    n = stats["associations"]
    assert n > 0
    future = iso(time.time() + 200 * DAY)
    p = bb("decay", "--now", future)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "--yes" in p.stderr and f"of {n}" in p.stderr
    assert js(bb("stats", "--json")) == stats  # nothing logged, nothing pruned
    dry = js(bb("decay", "--now", future, "--dry-run", "--json"))
    assert dry["dry_run"] is True and dry["pruned"] == n and dry["remain"] == 0
    human = bb("decay", "--now", future, "--dry-run")
    assert human.returncode == 0 and f"would prune {n} of {n}" in human.stdout
    assert js(bb("stats", "--json")) == stats
    out = js(bb("decay", "--now", future, "--force", "--json"))
    assert out == {"pruned": n, "associations": 0}
    js(bb("rebuild", "--json"))
    assert js(bb("stats", "--json"))["associations"] == 0  # a forced decay replays too


def test_a_routine_decay_keeps_what_was_learnt_this_week(repo):
    js(bb("record", "--jsonl", "-", "--json", stdin=live_log(repo)))
    n = js(bb("stats", "--json"))["associations"]
    out = js(bb("decay", "--now", iso(time.time() + 3 * DAY), "--json"))
    assert out == {"pruned": 0, "associations": n}


def test_a_bad_now_is_a_usage_error_that_names_now():
    p = bb("decay", "--now", "garbage")
    assert p.returncode == 2 and "--now" in p.stderr and "'at'" not in p.stderr


# --------------------------------------------------------------------------- forget


@pytest.fixture
def remembered(repo):
    """The repo with four live sessions recorded (12 tool events, 4 prompts)."""
    js(bb("record", "--jsonl", "-", "--json", stdin=live_log(repo)))
    return repo


def events():
    return js(bb("stats", "--json"))["events"]


@pytest.mark.parametrize("path", ["", "   "])
def test_forget_of_an_empty_path_is_refused_and_deletes_nothing(remembered, path):
    n = events()
    p = bb("forget", path, cwd=remembered)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "empty" in p.stderr
    assert events() == n == 16


@pytest.mark.parametrize("path", [".", "src", "src/", "src/auth/*.py"])
def test_a_folder_or_glob_needs_recursive(remembered, path):
    p = bb("forget", path, cwd=remembered)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--recursive" in p.stderr
    assert " events" in p.stderr  # the count, before anything is done
    assert events() == 16


def test_forget_dry_run_lists_what_would_go_and_deletes_nothing(remembered):
    out = js(bb("forget", "src/auth", "--dry-run", "--json", cwd=remembered))
    assert out["dry_run"] is True and out["kind"] == "folder"
    assert out["files"] == [{"path": "src/auth/login.py", "events": 4},
                            {"path": "src/auth/session.py", "events": 4}]
    assert out["events"] == 8 and out["project"] == str(remembered)
    human = bb("forget", "src/auth", "--dry-run", cwd=remembered)
    assert human.returncode == 0 and "src/auth/login.py" in human.stdout
    assert "nothing deleted" in human.stdout
    assert events() == 16


def test_forget_recursive_shows_the_count_then_deletes_the_folder(remembered):
    p = bb("forget", "src/auth", "--recursive", "--json", cwd=remembered)
    assert p.returncode == 0, p.stderr
    assert "2 files, 8 events" in p.stderr
    assert json.loads(p.stdout)["deleted_events"] == 8
    assert events() == 9  # the billing reads and the prompts stay, and the deletion's record


def test_forget_an_absolute_path_from_another_folder_finds_its_project(remembered, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = remembered / "src" / "auth" / "session.py"
    out = js(bb("forget", target, "--json", cwd=elsewhere))
    assert out["deleted_events"] == 4 and out["project"] == str(remembered)
    assert out["path"] == "src/auth/session.py"
    assert events() == 13  # with the deletion's record (storage.chain)
    rec = js(bb("recall", "session", "--cwd", remembered, "--json"))
    assert all(r["path"] != "src/auth/session.py" for r in rec["results"])


def test_forget_of_something_not_in_memory_exits_1(remembered):
    p = bb("forget", "src/nowhere.py", cwd=remembered)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "not" in p.stderr.lower()
    assert events() == 16


def test_forget_dry_run_does_not_import_numpy(remembered):
    code = ("import sys; from brainbox.cli.entry import main\n"
            "try:\n    main(['forget', 'src/auth/login.py', '--dry-run', '--json'])\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "print([m for m in sys.modules if m.split('.')[0] in ('numpy', 'numba', 'scipy')])")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=remembered)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "[]"
    assert json.loads(p.stdout.splitlines()[0])["events"] == 4


# --------------------------------------------------------------------------- record


def stored_files(db: Path) -> list[list[str]]:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return [json.loads(r[0]) for r in conn.execute("SELECT files FROM events ORDER BY id")]
    finally:
        conn.close()


def test_the_readmes_first_line_stores_the_file_and_recall_finds_it(repo, brainbox_home):
    p = bb("record", "--session", "s1", "--cwd", ".", "--tool", "Read", "--file",
           "src/auth/login.py", cwd=repo)
    assert p.returncode == 0, p.stderr
    assert stored_files(brainbox_home / "brainbox.db") == [["src/auth/login.py"]]
    rec = js(bb("recall", "login", "--json", cwd=repo))
    assert [r["path"] for r in rec["results"]][:1] == ["src/auth/login.py"]


def test_relative_cwd_and_file_are_taken_from_the_process_folder(repo, brainbox_home):
    js(bb("record", "--session", "s", "--cwd", "src", "--tool", "Edit", "--file",
          "src/auth/session.py", "--json", cwd=repo))
    js(bb("record", "--session", "s", "--tool", "Read", "--file", "auth/tokens.py", "--json",
          cwd=repo / "src"))
    assert stored_files(brainbox_home / "brainbox.db") == [["src/auth/session.py"],
                                                           ["src/auth/tokens.py"]]


def test_db_is_honoured_before_and_after_the_subcommand(repo, tmp_path, brainbox_home):
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    js(bb("--db", one, "record", "--session", "s", "--tool", "Read", "--json", cwd=repo))
    js(bb("record", "--session", "s", "--tool", "Read", "--db", two, "--json", cwd=repo))
    js(bb("record", "--session", "s", "--tool", "Edit", "--db", two, "--json", cwd=repo))
    assert not (brainbox_home / "brainbox.db").exists()
    assert js(bb("stats", "--db", one, "--json"))["events"] == 1
    assert js(bb("--db", two, "stats", "--json"))["events"] == 2
    assert js(bb("predict", "--session", "s", "--json", "--db", two))["tools"]
    assert not (brainbox_home / "brainbox.db").exists()


def test_record_help_lists_its_options_with_help_text():
    p = bb("record", "--help")
    assert p.returncode == 0
    for option, words in (("--file", "file the tool touched"), ("--tool", "tool name"),
                          ("--at", "event time"), ("--jsonl", "per line"), ("--db", "database")):
        assert option in p.stdout and words in p.stdout, option


def test_a_bad_at_is_a_usage_error_like_a_bad_now():
    p = bb("record", "--session", "s", "--tool", "Read", "--at", "yesterday")
    assert p.returncode == 2 and "--at" in p.stderr and "yesterday" in p.stderr
    assert bb("decay", "--now", "yesterday").returncode == 2


# --------------------------------------------------------------------------- explain


def test_explain_finds_a_file_given_by_its_absolute_path(remembered, tmp_path):
    target = remembered / "src" / "auth" / "login.py"
    for where in (remembered, tmp_path):  # inside the project, and from another folder
        out = js(bb("explain", target, "--query", "login", "--json", cwd=where))
        assert out["path"] == "src/auth/login.py" and out["rank"] == 1
    sub = js(bb("explain", "auth/session.py", "-q", "login", "--json", cwd=remembered / "src"))
    assert sub["path"] == "src/auth/session.py"  # relative to the folder it runs in
    p = bb("explain", remembered / "src" / "nowhere.py", "-q", "login", cwd=remembered)
    assert p.returncode == 1 and "not in memory" in p.stderr


def test_db_after_the_subcommand_is_moved_before_it_unless_the_command_has_its_own():
    from brainbox.cli.app import cli, hoist_db

    assert hoist_db(cli, ["stats", "--json", "--db", "x.db"]) == \
        ["--db", "x.db", "stats", "--json"]
    assert hoist_db(cli, ["--db", "a.db", "recall", "q", "--db=b.db"]) == \
        ["--db", "a.db", "--db=b.db", "recall", "q"]  # the later one wins
    assert hoist_db(cli, ["demo", "--db", "keep.db"]) == ["demo", "--db", "keep.db"]
    assert hoist_db(cli, ["recall", "--", "--db"]) == ["recall", "--", "--db"]


def test_import_honours_db_after_the_subcommand(tmp_path, brainbox_home):
    if not SPOTTER.is_dir():
        pytest.skip("../shared/data/transcripts is absent")
    db = tmp_path / "imported.db"
    out = js(bb("import", "claude", SPOTTER / "short.jsonl", "--db", db, "--json"))
    assert out["events"] > 0
    assert js(bb("stats", "--json", "--db", db))["events"] == out["events"]
    assert not (brainbox_home / "brainbox.db").exists()
