"""The data verbs as a user meets them (real `brainbox` processes on a real SQLite file):
decay never wipes the memory by accident, forget refuses empty or absurd input, record
resolves relative paths and honours --db, import records what it imported."""

from __future__ import annotations

import json
import os
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
