"""The CLI's conventions hold on every command (issue 13 item 19): one JSON shape per
command, contradictory flags refused, a help text for every option, rounded numbers."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

from brainbox.cli.app import cli

# The commands of cli/app.py's recall..demo, cli/agent_cmds.py, cli/replay_cmd.py and
# cli/index_cmd.py and cli/search_cmd.py.
COMMANDS = ("recall", "predict", "explain", "stats", "demo", "replay", "serve", "install",
            "uninstall", "doctor", "mcp", "import", "index",
            "search")


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_has_a_help_text(name):
    cmd = cli.commands[name]
    missing = [p.opts[0] for p in cmd.params
               if isinstance(p, click.Option) and not p.hidden and not p.help]
    assert not missing, f"brainbox {name}: options without help: {missing}"
    assert cmd.help and cmd.help.strip()


def test_serve_status_and_stop_together_is_a_usage_error():
    r = CliRunner().invoke(cli, ["serve", "--status", "--stop"])
    assert r.exit_code == 2
    assert "exclude each other" in r.stderr


@pytest.mark.parametrize("agents", [["--claude"], ["--codex"], []])
def test_uninstall_json_has_one_shape_for_one_agent_or_two(tmp_path, monkeypatch, agents):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    r = CliRunner().invoke(cli, ["uninstall", *agents, "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert isinstance(data, list) and len(data) == (len(agents) or 2)
    assert all(isinstance(d, dict) and {"agent", "path", "changed"} <= set(d) for d in data)


def test_install_json_has_the_same_shape(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    import brainbox.jitmode

    monkeypatch.setattr(brainbox.jitmode, "spawn_background", lambda **kw: None)
    r = CliRunner().invoke(cli, ["install", "--claude", "--json"])
    assert r.exit_code == 0, r.output
    (data,) = json.loads(r.stdout)
    assert data["agent"] == "claude" and data["changed"] is True


def test_explain_rounds_its_confidence(tmp_path):
    from brainbox.memory import Memory

    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    db = tmp_path / "b.db"
    with Memory.open(db) as mem:
        for s in range(7):
            mem.record({"session": f"s{s}", "cwd": str(root), "prompt": "fix the login flow"})
            mem.record({"session": f"s{s}", "cwd": str(root), "tool": "Read",
                        "files": ["src/auth/login.py", "src/auth/session.py"][: 1 + s % 2]})
    r = CliRunner().invoke(cli, ["--db", str(db), "explain", "src/auth/session.py", "-q",
                                 "login", "--cwd", str(root), "--json"])
    assert r.exit_code == 0, r.output
    c = json.loads(r.stdout)["confidence"]
    assert c > 0 and c == round(c, 4)
