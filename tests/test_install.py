"""Installing brainbox's hooks into Claude Code and Codex configs, and taking them out."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from brainbox.cli import install as inst
from brainbox.cli.install import (
    ConfigFileError,
    claude_settings_path,
    codex_config_path,
    install_claude,
    install_codex,
    is_brainbox_command,
    uninstall_claude,
    uninstall_codex,
)

# A user's settings: four-space indent, no newline at the end, non-ASCII, foreign hooks.
CLAUDE_ORIGINAL = json.dumps(
    {
        "model": "opus",
        "permissions": {"allow": ["Bash(git diff:*)"], "deny": []},
        "env": {"GREETING": "grüß dich"},
        "hooks": {
            "PostToolUse": [
                {
                    "matcher": "Edit|Write",
                    "hooks": [{"type": "command", "command": "prettier --write"}],
                }
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "say done", "timeout": 3}]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}],
        },
        "statusLine": {"type": "command", "command": "echo hi"},
    },
    indent=4,
    ensure_ascii=False,
).encode()

CODEX_ORIGINAL = b"""model = "gpt-5-codex"
notify = ["python3", "/home/me/notify.py"]

[features]
web_search = true

[[hooks.PostToolUse]]
matcher = "^Bash$"

[[hooks.PostToolUse.hooks]]
type = "command"
command = "python3 review.py"
timeout = 30

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]"""


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return tmp_path


def config_file(path, original: bytes):
    path.parent.mkdir()
    path.write_bytes(original)
    return path


@pytest.fixture
def claude_file(home):
    return config_file(home / ".claude" / "settings.json", CLAUDE_ORIGINAL)


@pytest.fixture
def codex_file(home):
    return config_file(home / ".codex" / "config.toml", CODEX_ORIGINAL)


def ours(settings: dict) -> dict:
    """event -> list of (matcher or None, our handler)."""
    found = {}
    for event, groups in settings.get("hooks", {}).items():
        for group in groups:
            for h in group["hooks"]:
                if is_brainbox_command(h["command"], "claude"):
                    found.setdefault(event, []).append((group.get("matcher"), h))
    return found


# ------------------------------------------------------------------ paths and recognition


def test_paths(home, tmp_path, monkeypatch):
    assert claude_settings_path(True, None) == home / ".claude" / "settings.json"
    assert (
        claude_settings_path(False, tmp_path / "proj")
        == (tmp_path / "proj").resolve() / ".claude" / "settings.json"
    )
    with pytest.raises(ValueError):
        claude_settings_path(True, tmp_path)
    assert codex_config_path() == home / ".codex" / "config.toml"
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "ch"))
    assert codex_config_path() == tmp_path / "ch" / "config.toml"
    assert codex_config_path(False, tmp_path) == tmp_path.resolve() / ".codex" / "config.toml"


@pytest.mark.parametrize(
    "cmd,agent,expected",
    [
        ("brainbox hook claude PostToolUse", "claude", True),
        ("/home/u/.local/bin/brainbox hook claude Stop", "claude", True),
        ("'/path with space/brainbox' hook claude Stop", "claude", True),
        ("python -m brainbox.cli hook claude Stop", "claude", True),
        ("brainbox hook codex Stop", "claude", False),
        ("other-tool hook claude Stop", "claude", False),
        ("brainbox-lite hook claude Stop", "claude", False),
        ("echo brainbox", "claude", False),
        ("brainbox hook", "claude", False),
        (None, "claude", False),
        ("brainbox 'unbalanced hook claude X", "claude", True),
    ],
)
def test_is_brainbox_command(cmd, agent, expected):
    assert is_brainbox_command(cmd, agent) is expected


# ------------------------------------------------------------------ Claude Code


def test_claude_install_adds_documented_nested_hooks_and_keeps_everything_else(claude_file):
    summary = install_claude(claude_file)
    assert summary["changed"] and summary["added"] == list(inst.CLAUDE_EVENTS)
    data = json.loads(claude_file.read_text())
    before = json.loads(CLAUDE_ORIGINAL)
    # Other keys untouched and in order; foreign hooks first, untouched.
    assert list(data)[:4] == list(before)[:4] and data["statusLine"] == before["statusLine"]
    for event, groups in before["hooks"].items():
        assert data["hooks"][event][: len(groups)] == groups
    found = ours(data)
    assert set(found) == set(inst.CLAUDE_EVENTS)
    for event, entries in found.items():
        assert len(entries) == 1
        matcher, handler = entries[0]
        assert handler == {
            "type": "command",
            "command": f"brainbox hook claude {event}",
            "timeout": 5,
        }
        assert matcher == {"PostToolUse": "*", "PostToolUseFailure": "*",
                           "PreToolUse": "Edit|MultiEdit|Write|Bash"}.get(event)
    # Written in the file's own style: 4-space indent, no newline at the end, UTF-8 kept.
    text = claude_file.read_text("utf-8")
    assert text.startswith('{\n    "model"') and not text.endswith("\n") and "grüß" in text
    assert Path(summary["backup"]).read_bytes() == CLAUDE_ORIGINAL


def test_claude_install_twice_equals_once_and_uninstall_restores_bytes(claude_file):
    install_claude(claude_file)
    after_one = claude_file.read_bytes()
    mtime = claude_file.stat().st_mtime_ns
    second = install_claude(claude_file)
    assert not second["changed"] and claude_file.read_bytes() == after_one
    assert claude_file.stat().st_mtime_ns == mtime
    summary = uninstall_claude(claude_file)
    assert summary["changed"] and set(summary["removed"]) == set(inst.CLAUDE_EVENTS)
    assert claude_file.read_bytes() == CLAUDE_ORIGINAL
    assert not (claude_file.parent / "settings.json.brainbox-backup").exists()
    assert not uninstall_claude(claude_file)["changed"]
    assert claude_file.read_bytes() == CLAUDE_ORIGINAL


def test_claude_reinstall_with_another_command_updates_in_place(claude_file):
    install_claude(claude_file)
    summary = install_claude(
        claude_file, command="/opt/bb/bin/brainbox", timeouts={"UserPromptSubmit": 8}
    )
    assert summary["changed"] and not summary["added"]
    found = ours(json.loads(claude_file.read_text()))
    assert all(len(v) == 1 for v in found.values())
    assert found["UserPromptSubmit"][0][1] == {
        "type": "command",
        "command": "/opt/bb/bin/brainbox hook claude UserPromptSubmit",
        "timeout": 8,
    }
    uninstall_claude(claude_file)
    assert claude_file.read_bytes() == CLAUDE_ORIGINAL


def test_claude_duplicates_of_ours_are_collapsed(claude_file):
    install_claude(claude_file)
    data = json.loads(claude_file.read_text())
    data["hooks"]["Stop"].append(
        {"hooks": [{"type": "command", "command": "brainbox hook claude Stop", "timeout": 5}]}
    )
    claude_file.write_text(json.dumps(data, indent=4))
    install_claude(claude_file)
    data = json.loads(claude_file.read_text())
    assert len(ours(data)["Stop"]) == 1
    assert data["hooks"]["Stop"][0]["hooks"][0]["command"] == "say done"


def test_claude_uninstall_keeps_changes_the_user_made_meanwhile(claude_file):
    install_claude(claude_file)
    data = json.loads(claude_file.read_text())
    data["theme"] = "dark"
    data["hooks"]["PostToolUse"][-1]["hooks"].append({"type": "command", "command": "lint"})
    claude_file.write_text(json.dumps(data, indent=4) + "\n")
    summary = uninstall_claude(claude_file)
    data = json.loads(claude_file.read_text())
    assert data["theme"] == "dark" and not ours(data)
    assert data["hooks"]["PostToolUse"][-1] == {
        "matcher": "*",
        "hooks": [{"type": "command", "command": "lint"}],
    }
    assert data["hooks"]["Stop"] == json.loads(CLAUDE_ORIGINAL)["hooks"]["Stop"]
    assert "SessionEnd" not in data["hooks"]  # emptied by us, so removed
    assert summary["backup"] and Path(summary["backup"]).read_bytes() == CLAUDE_ORIGINAL


def test_claude_creates_a_missing_file_and_uninstall_removes_it(home):
    path = claude_settings_path(True, None)
    summary = install_claude(path)
    assert summary["created"] and summary["backup"] is None
    assert set(ours(json.loads(path.read_text()))) == set(inst.CLAUDE_EVENTS)
    assert install_claude(path)["changed"] is False
    uninstall_claude(path)
    assert not path.exists() and not path.parent.exists()
    assert list(home.iterdir()) == []


def test_claude_created_file_with_user_additions_is_kept(home):
    path = claude_settings_path(True, None)
    install_claude(path)
    data = json.loads(path.read_text())
    data["model"] = "sonnet"
    path.write_text(json.dumps(data, indent=2) + "\n")
    uninstall_claude(path)
    assert json.loads(path.read_text()) == {"model": "sonnet"}
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.json"]


@pytest.mark.parametrize(
    "content",
    [
        b'{"hooks": {',
        b"[1, 2]",
        b'{"a": 1,}',
        b"\xff\xfe{}",
        b'{"hooks": []}',
        b'{"hooks": {"Stop": {}}}',
    ],
)
def test_claude_malformed_settings_raise_and_stay_untouched(claude_file, content):
    claude_file.write_bytes(content)
    with pytest.raises(ConfigFileError) as err:
        install_claude(claude_file)
    assert isinstance(err.value, ValueError) and "\n" not in str(err.value)
    assert str(claude_file) in str(err.value)
    assert claude_file.read_bytes() == content
    assert sorted(p.name for p in claude_file.parent.iterdir()) == ["settings.json"]


def test_claude_empty_file_counts_as_empty_settings(claude_file):
    claude_file.write_bytes(b"")
    install_claude(claude_file)
    assert ours(json.loads(claude_file.read_text()))
    uninstall_claude(claude_file)
    assert claude_file.read_bytes() == b""


def test_claude_keeps_mode_and_symlinks(claude_file, tmp_path):
    real = tmp_path / "dotfiles" / "claude-settings.json"
    real.parent.mkdir()
    real.write_bytes(CLAUDE_ORIGINAL)
    os.chmod(real, 0o600)
    claude_file.unlink()
    claude_file.symlink_to(real)
    install_claude(claude_file)
    assert claude_file.is_symlink() and ours(json.loads(real.read_text()))
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert stat.S_IMODE((real.parent / (real.name + ".brainbox-backup")).stat().st_mode) == 0o600
    uninstall_claude(claude_file)
    assert claude_file.is_symlink() and real.read_bytes() == CLAUDE_ORIGINAL
    assert stat.S_IMODE(real.stat().st_mode) == 0o600


def test_claude_event_subset_and_timeouts(claude_file):
    with pytest.raises(ValueError, match="does not name brainbox"):
        install_claude(claude_file, command="bb")
    install_claude(
        claude_file,
        command="/opt/bin/brainbox",
        events=["PostToolUse", "UserPromptSubmit"],
        timeouts={"PostToolUse": 2, "UserPromptSubmit": 2.5},
    )
    found = ours(json.loads(claude_file.read_text()))
    assert {e: h["timeout"] for e, [(_, h)] in found.items()} == {
        "PostToolUse": 2,
        "UserPromptSubmit": 2.5,
    }
    with pytest.raises(ValueError):
        install_claude(claude_file, events=["Bogus"])
    with pytest.raises(ValueError):
        install_claude(claude_file, timeouts={"Stop": 0})


def test_claude_project_settings(tmp_path):
    path = claude_settings_path(False, tmp_path)
    install_claude(path)
    assert path == tmp_path.resolve() / ".claude" / "settings.json" and path.exists()
    uninstall_claude(path)
    assert not path.exists()


def test_uninstall_of_a_missing_file_is_a_no_op(home):
    assert uninstall_claude(home / "nope.json")["changed"] is False
    assert uninstall_codex(home / "nope.toml")["changed"] is False


# ------------------------------------------------------------------ Codex CLI


def codex_ours(text: str) -> dict:
    config = tomllib.loads(text)
    found = {}
    for event, groups in config.get("hooks", {}).items():
        for group in groups:
            for h in group.get("hooks", []):
                if h["command"].startswith("brainbox hook codex"):
                    found.setdefault(event, []).append((group.get("matcher"), h))
    return found


def test_codex_install_appends_a_marked_block_and_keeps_the_rest(codex_file):
    summary = install_codex(codex_file)
    assert summary["changed"] and summary["added"] == list(inst.CODEX_EVENTS)
    assert any("/hooks" in note for note in summary["notes"])
    text = codex_file.read_text()
    assert text.startswith(CODEX_ORIGINAL.decode())
    assert text.rstrip().endswith(inst.BLOCK_END) and inst.BLOCK_BEGIN in text
    config = tomllib.loads(text)
    assert config["notify"] == ["python3", "/home/me/notify.py"]
    assert config["mcp_servers"]["docs"]["args"] == ["-y", "docs-mcp"]
    assert config["hooks"]["PostToolUse"][0]["hooks"][0]["command"] == "python3 review.py"
    found = codex_ours(text)
    assert set(found) == set(inst.CODEX_EVENTS)
    for event, [(matcher, handler)] in found.items():
        assert handler == {
            "type": "command",
            "command": f"brainbox hook codex {event}",
            "timeout": 5,
        }
        assert matcher == {"PostToolUse": "*", "PreToolUse": "Bash|apply_patch"}.get(event)
    assert Path(summary["backup"]).read_bytes() == CODEX_ORIGINAL


def test_codex_install_twice_then_uninstall_is_byte_identical(codex_file):
    install_codex(codex_file)
    once = codex_file.read_bytes()
    assert install_codex(codex_file)["changed"] is False
    assert codex_file.read_bytes() == once
    summary = uninstall_codex(codex_file)
    assert summary["removed"] == sorted(inst.CODEX_EVENTS)
    assert codex_file.read_bytes() == CODEX_ORIGINAL
    assert not (codex_file.parent / "config.toml.brainbox-backup").exists()


@pytest.mark.parametrize(
    "original", [b"", b"\n", b'model = "o3"\n', b'model = "o3"\n\n\n', b"a = 1\r\nb = 2\r\n"]
)
def test_codex_round_trip_for_any_ending(codex_file, original):
    codex_file.write_bytes(original)
    install_codex(codex_file)
    assert codex_ours(codex_file.read_text())
    install_codex(codex_file, command="/x/brainbox")
    assert (
        codex_ours(codex_file.read_text()) == {}
        and "/x/brainbox hook codex" in codex_file.read_text()
    )
    uninstall_codex(codex_file)
    assert codex_file.read_bytes() == original


def test_codex_user_text_after_the_block_survives_uninstall(codex_file):
    install_codex(codex_file)
    with open(codex_file, "a") as f:
        f.write('\n[profiles.fast]\nmodel = "o4-mini"\n')
    uninstall_codex(codex_file)
    text = codex_file.read_text()
    assert inst.BLOCK_BEGIN not in text and 'model = "o4-mini"' in text
    assert tomllib.loads(text)["profiles"]["fast"]["model"] == "o4-mini"


def test_codex_creates_a_missing_file_and_uninstall_removes_it(home):
    path = codex_config_path()
    summary = install_codex(path, command='"/opt/my tools/brainbox"')
    assert summary["created"]
    handler = codex_ours_any(path.read_text())
    assert handler == '"/opt/my tools/brainbox" hook codex Stop'
    uninstall_codex(path)
    assert not path.exists() and not path.parent.exists()


def codex_ours_any(text):
    return tomllib.loads(text)["hooks"]["Stop"][0]["hooks"][0]["command"]


@pytest.mark.parametrize("content", [b"model = ", b"[a]\nx=1\n[a]\nx=2\n", b"\xff = 1"])
def test_codex_malformed_config_raises_and_stays_untouched(codex_file, content):
    codex_file.write_bytes(content)
    with pytest.raises(ConfigFileError) as err:
        install_codex(codex_file)
    assert "\n" not in str(err.value) and codex_file.read_bytes() == content
    assert sorted(p.name for p in codex_file.parent.iterdir()) == ["config.toml"]


def test_codex_config_whose_hooks_clash_is_refused_untouched(codex_file):
    content = b'[hooks]\nPostToolUse = "not an array of tables"\n'
    codex_file.write_bytes(content)
    with pytest.raises(ConfigFileError, match="clash"):
        install_codex(codex_file)
    assert codex_file.read_bytes() == content


def test_codex_warns_when_hooks_are_turned_off_or_split(codex_file):
    codex_file.write_bytes(b"[features]\ncodex_hooks = false\n")
    (codex_file.parent / "hooks.json").write_text("{}")
    warnings = install_codex(codex_file)["warnings"]
    assert len(warnings) == 2 and "turns hooks off" in warnings[0]


def test_codex_keeps_file_mode(codex_file):
    os.chmod(codex_file, 0o640)
    install_codex(codex_file)
    assert stat.S_IMODE(codex_file.stat().st_mode) == 0o640
    uninstall_codex(codex_file)
    assert stat.S_IMODE(codex_file.stat().st_mode) == 0o640


def test_toml_strings_escape_everything_tomllib_rejects():
    for s in ['a"b', "back\\slash", "tab\there", "del\x7f", "nl\nx", "ünï 😀"]:
        assert tomllib.loads(f"x = {inst._toml_string(s)}")["x"] == s


def test_the_package_builds_without_warnings_and_declares_an_spdx_licence(tmp_path):
    """`make install` printed setuptools' 14-line licence deprecation banner three times;
    a real isolated build (what pip does) of a copy of the source tree."""
    import shutil
    import zipfile

    root = Path(__file__).resolve().parents[1]
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, src / name)
    for pkg in ("brainbox", "kernels", "storage", "cli", "eval"):
        shutil.copytree(root / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                        str(tmp_path / "dist"), str(src)], capture_output=True, text=True,
                       timeout=600, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    noise = [ln for ln in (r.stdout + r.stderr).splitlines()
             if "deprecat" in ln.lower() or "warning" in ln.lower()]
    assert not noise, "\n".join(noise)
    (wheel,) = (tmp_path / "dist").glob("brainbox-*.whl")
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith("METADATA"))).decode()
    assert "License-Expression: MIT" in meta
    assert "Classifier: License" not in meta  # no classifier beside the expression


def test_installed_hook_timeouts_are_seconds_in_each_agents_unit(claude_file, codex_file):
    """Claude Code's `timeout` and Codex's are seconds (code.claude.com/docs/en/hooks,
    developers.openai.com/codex/hooks): what install writes is a whole number of seconds
    above brainbox's own budget (0.2 s a tool call, 1.5 s a prompt) and far below a
    minute. A value in milliseconds (5000) would leave a hung hook blocking the agent for
    83 minutes; one below the budget would kill every healthy hook."""
    from brainbox.cli import hookconf

    install_claude(claude_file)
    install_codex(codex_file)
    written = [h["timeout"] for _, h in
               (e for entries in ours(json.loads(claude_file.read_text())).values()
                for e in entries)]
    written += [h["timeout"] for [(_, h)] in codex_ours(codex_file.read_text()).values()]
    assert len(written) == len(inst.CLAUDE_EVENTS) + len(inst.CODEX_EVENTS)
    budget = max(hookconf.DEFAULT_BUDGET.values())
    for t in written:
        assert isinstance(t, int) and not isinstance(t, bool)
        assert budget < t <= 60
