"""Register brainbox's hooks with Claude Code and Codex CLI, and take them out again.

Standard library only. Both installers share one contract:

- Everything else in the file stays as it was: other keys, other hooks, their order.
  Our entries are recognised by their command (`<...brainbox...> hook <agent> <Event>`),
  so installing twice equals installing once, and a reinstall with another `command`
  (say an absolute path) updates our entries in place instead of adding more.
- Before the first change of an install cycle the file is copied to
  `<file>.brainbox-backup` (same mode). Uninstall removes exactly our entries; when the
  result equals the backup, the backup's bytes are written back (byte-identical, whatever
  the original formatting) and the backup is deleted. If the user changed the file in
  between, the result is kept, written in the file's own style, and the backup stays.
- A file that did not exist is created; `<file>.brainbox-state` records that, and
  uninstall deletes the file again when nothing but our entries was ever in it.
- A file we cannot parse raises `ConfigFileError` (a `ValueError`, one-line message) and
  is left untouched. Writes are atomic (temporary file + `os.replace`), keep the file's
  mode, and go through symlinks to the real file (dotfile managers link these files).

Claude Code (`settings.json`, hooks reference at code.claude.com/docs/en/hooks): nested
format `{"hooks": {Event: [{"matcher": ..., "hooks": [{"type": "command", "command": ...,
"timeout": seconds}]}]}}`. Tool events (PostToolUse, PostToolUseFailure) take a tool-name
matcher, `"*"` for all; UserPromptSubmit and Stop take none; SessionStart and SessionEnd
filter on source/reason, and an omitted matcher fires for all. PostToolUse fires only for
calls that succeeded, so PostToolUseFailure is installed too: failed commands and edits are
the evidence the error channel learns from. PreToolUse (advice before an edit or a shell
command; never a permission decision, and not recorded: PostToolUse records the call)
matches `Edit|MultiEdit|Write|Bash` only. PostToolBatch (once per batch of parallel calls,
after they all resolved; no matcher) records a batch as one step; where PostToolUse
recorded a call of it already (same session and tool-use id), the batch leaves it out.

Codex CLI (`config.toml`, developers.openai.com/codex/hooks): Codex >= 0.124 runs
Claude-style hooks declared inline as `[[hooks.<Event>]]` / `[[hooks.<Event>.hooks]]`
tables (or in a `hooks.json`; we keep one representation, the TOML one). TOML has no
writer in the standard library, so we append one marked block, `# >>> brainbox >>>` ...
`# <<< brainbox <<<`, at the end of the file (arrays of tables may be extended anywhere)
and uninstall cuts exactly that block. Codex has no SessionEnd or PostToolUseFailure; its
PostToolUse also sees failed shell commands; its PreToolUse fires for shell commands and
`apply_patch` (matcher `Bash|apply_patch`) and takes `additionalContext`. We leave `notify` alone: it holds a single
program and is usually the user's own. Codex runs new hooks only after the user trusts
them (`/hooks` in Codex); the summary says so.

Timeouts are the agent's safety net, in seconds, 5 for every event: brainbox's own budget
is 0.2 s per tool call and 1.5 s per prompt (the product budget), so 5 s is only reached when
something is wrong, and then the agent kills the hook and carries on.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tempfile
from pathlib import Path

CLAUDE_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Stop",
    "SessionEnd",
)
CODEX_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
# PreToolUse only where advice exists (an edit, a shell command): a matcher of all tools
# would start a process before every read and search for nothing
PRE_MATCHER = {"claude": "Edit|MultiEdit|Write|Bash", "codex": "Bash|apply_patch"}
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"})
DEFAULT_TIMEOUT = 5
CODEX_TRUST = ("Codex runs new hooks only after you trust them (by hash; an untrusted hook "
               "is silent): run /hooks in Codex and trust brainbox's, again after an "
               "install that changed them.")
BACKUP_SUFFIX = ".brainbox-backup"
STATE_SUFFIX = ".brainbox-state"
BLOCK_BEGIN = "# >>> brainbox >>>"
BLOCK_END = "# <<< brainbox <<<"
_BLOCK = re.compile(
    r"(?:\r?\n)?"
    + re.escape(BLOCK_BEGIN)
    + r"\r?\n.*?"
    + re.escape(BLOCK_END)
    + r"[^\r\n]*(?:\r?\n|\Z)",
    re.DOTALL,
)


class ConfigFileError(ValueError):
    """An agent config file we cannot read or safely change; it was left untouched."""


# --------------------------------------------------------------------------- paths


def claude_settings_path(user: bool, project: Path | None) -> Path:
    """`~/.claude/settings.json` for --user, `DIR/.claude/settings.json` for --project."""
    if user == (project is not None):
        raise ValueError("choose exactly one of user or project")
    if user:
        return Path.home() / ".claude" / "settings.json"
    return Path(project).expanduser().resolve() / ".claude" / "settings.json"


def codex_config_path(user: bool = True, project: Path | None = None) -> Path:
    """`$CODEX_HOME/config.toml` (default `~/.codex`) or `DIR/.codex/config.toml`."""
    if user == (project is not None):
        raise ValueError("choose exactly one of user or project")
    if user:
        home = os.environ.get("CODEX_HOME")
        return (Path(home).expanduser() if home else Path.home() / ".codex") / "config.toml"
    return Path(project).expanduser().resolve() / ".codex" / "config.toml"


def hook_command(command: str, agent: str, event: str) -> str:
    """The shell command a hook runs; `command` is used verbatim (quote it yourself) and
    must name brainbox (`brainbox`, `/path/to/brainbox`, `python -m brainbox.cli`), else
    our entries could not be told from foreign ones later."""
    cmd = f"{command} hook {agent} {event}"
    if not isinstance(command, str) or "\n" in command or not is_brainbox_command(cmd, agent):
        raise ValueError(f"hook command {command!r} does not name brainbox")
    return cmd


def is_brainbox_command(cmd, agent: str) -> bool:
    """True for `<...brainbox...> hook <agent> <Event>` commands: ours, whatever the path."""
    if not isinstance(cmd, str) or "hook" not in cmd or "brainbox" not in cmd:
        return False
    try:
        words = shlex.split(cmd)
    except ValueError:
        words = cmd.split()
    for i in range(1, len(words) - 1):
        if words[i] == "hook" and words[i + 1] == agent:
            return any(_names_brainbox(w) for w in words[:i])
    return False


def _names_brainbox(word: str) -> bool:
    """`brainbox`, `/x/bin/brainbox`, `brainbox.exe`, `brainbox.cli` (after `-m`)."""
    base = word.replace("\\", "/").rsplit("/", 1)[-1]
    return base == "brainbox" or base.startswith("brainbox.")


# --------------------------------------------------------------------------- Claude Code


def install_claude(
    settings_path: Path, command: str = "brainbox", timeouts: dict | None = None, events=None
) -> dict:
    """Add (or update) brainbox's hooks in a Claude Code settings file."""
    path, events, limits, raw = _begin(settings_path, events, timeouts, CLAUDE_EVENTS)
    data = {} if raw is None else _parse_json(path, raw)
    hooks = data.get("hooks")
    if hooks is None:
        hooks = {}
    elif not isinstance(hooks, dict):
        raise ConfigFileError(f"{path}: 'hooks' is not an object; nothing was changed")
    had_ours = _claude_has_ours(hooks)

    added, updated = [], []
    for event in events:
        groups = hooks.get(event)
        if groups is None:
            groups = []
        elif not isinstance(groups, list):
            raise ConfigFileError(f"{path}: hooks.{event} is not a list; nothing was changed")
        want = {
            "type": "command",
            "command": hook_command(command, "claude", event),
            "timeout": limits[event],
        }
        found = False
        for group in list(groups):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                continue
            for h in list(handlers):
                if not (isinstance(h, dict) and is_brainbox_command(h.get("command"), "claude")):
                    continue
                if found:  # a duplicate of ours: drop it, and its group if now empty
                    handlers.remove(h)
                    if not handlers:
                        groups.remove(group)
                    updated.append(event)
                elif any(h.get(k) != v for k, v in want.items()):
                    h.update(want)
                    updated.append(event)
                found = True
        if not found:
            group = {"matcher": _matcher("claude", event)} if event in TOOL_EVENTS else {}
            group["hooks"] = [want]
            groups.append(group)
            added.append(event)
            hooks[event] = groups
    changed = bool(added or updated)
    if changed:
        data["hooks"] = hooks
        _begin_cycle(path, raw, had_ours)
        _write(path, _dump_json(data, raw))
    return _summary("claude", path, changed, added, sorted(set(updated)), [], raw is None)


def uninstall_claude(settings_path: Path) -> dict:
    """Remove exactly brainbox's hooks from a Claude Code settings file."""
    path = Path(settings_path)
    raw = _read(path)
    if raw is None:
        return _summary("claude", path, False, [], [], [], False)
    data = _parse_json(path, raw)
    hooks = data.get("hooks")
    removed = []
    if isinstance(hooks, dict):
        for event in list(hooks):
            groups = hooks[event]
            if not isinstance(groups, list):
                continue
            for group in list(groups):
                handlers = group.get("hooks") if isinstance(group, dict) else None
                if not isinstance(handlers, list):
                    continue
                keep = [
                    h
                    for h in handlers
                    if not (isinstance(h, dict) and is_brainbox_command(h.get("command"), "claude"))
                ]
                if len(keep) == len(handlers):
                    continue
                removed.append(event)
                if keep:
                    group["hooks"] = keep
                else:
                    groups.remove(group)
            if not groups and event in removed:
                del hooks[event]
        if not hooks and removed:
            del data["hooks"]
    if not removed:
        return _summary("claude", path, False, [], [], [], False)
    _put_back(path, lambda original: _same_json(original, data), data == {},
              _dump_json(data, raw))
    return _summary("claude", path, True, [], [], sorted(set(removed)), False)


def _claude_has_ours(hooks: dict) -> bool:
    for groups in hooks.values():
        for group in groups if isinstance(groups, list) else ():
            for h in (group.get("hooks") or ()) if isinstance(group, dict) else ():
                if isinstance(h, dict) and is_brainbox_command(h.get("command"), "claude"):
                    return True
    return False


def _parse_json(path: Path, raw: bytes) -> dict:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigFileError(f"{path}: not UTF-8 (byte {exc.start}); nothing was changed")
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigFileError(
            f"{path}: not valid JSON ({exc.msg}, line {exc.lineno} column "
            f"{exc.colno}); fix it first, nothing was changed"
        ) from None
    if not isinstance(data, dict):
        raise ConfigFileError(f"{path}: expected a JSON object at the top; nothing was changed")
    return data


def _same_json(raw: bytes, data: dict) -> bool:
    try:
        text = raw.decode("utf-8-sig")
        return (json.loads(text) if text.strip() else {}) == data
    except ValueError:
        return False


def _dump_json(data: dict, raw: bytes | None) -> bytes:
    """Serialise in the existing file's style: indent, newline at the end, CRLF."""
    text = raw.decode("utf-8-sig", "replace") if raw else ""
    m = re.search(r"^([ \t]+)\S", text, re.MULTILINE)
    indent = m.group(1) if m else 2
    out = json.dumps(data, indent=indent, ensure_ascii=False)
    if not text or text.endswith("\n"):
        out += "\n"
    if "\r\n" in text:
        out = out.replace("\n", "\r\n")
    prefix = b"\xef\xbb\xbf" if raw and raw.startswith(b"\xef\xbb\xbf") else b""
    return prefix + out.encode("utf-8")


# --------------------------------------------------------------------------- Codex CLI


def install_codex(
    config_path: Path, command: str = "brainbox", timeouts: dict | None = None, events=None
) -> dict:
    """Append (or update) brainbox's marked hooks block in a Codex `config.toml`."""
    import tomllib

    path, events, limits, raw = _begin(config_path, events, timeouts, CODEX_EVENTS)
    text = _decode_toml(path, raw)
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path}: not valid TOML ({exc}); nothing was changed") from None
    nl = "\r\n" if "\r\n" in text else "\n"
    block = _codex_block(command, events, limits, nl)
    m = _BLOCK.search(text)
    if m:
        lead = m.group(0)[: len(m.group(0)) - len(m.group(0).lstrip("\r\n"))]
        new = text[: m.start()] + lead + block + text[m.end() :]
        added, updated = [], list(events)
    else:
        new = text + (nl if text else "") + block
        added, updated = list(events), []
    changed = new != text
    if changed:
        try:
            tomllib.loads(new)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigFileError(
                f"{path}: brainbox's [[hooks.*]] tables would clash with this file's own hooks "
                f"settings ({exc}); nothing was changed"
            ) from None
        _begin_cycle(path, raw, m is not None)
        _write(path, new.encode("utf-8"))
    else:
        added = updated = []
    summary = _summary("codex", path, changed, added, updated, [], raw is None)
    summary["warnings"] = _codex_warnings(path, config)
    summary["notes"] = [CODEX_TRUST]
    return summary


def uninstall_codex(config_path: Path) -> dict:
    """Cut brainbox's marked block out of a Codex `config.toml`."""
    path = Path(config_path)
    raw = _read(path)
    if raw is None:
        return _summary("codex", path, False, [], [], [], False)
    text = _decode_toml(path, raw)
    m = _BLOCK.search(text)
    if not m:
        return _summary("codex", path, False, [], [], [], False)
    removed = sorted(set(re.findall(r"^\[\[hooks\.(\w+)\]\]", m.group(0), re.MULTILINE)))
    new = _BLOCK.sub("", text)
    _put_back(path, lambda original: original.decode("utf-8", "replace") == new,
              not new.strip(), new.encode("utf-8"))
    return _summary("codex", path, True, [], [], removed, False)


def _decode_toml(path: Path, raw: bytes | None) -> str:
    if raw is None:
        return ""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigFileError(f"{path}: not UTF-8 (byte {exc.start}); nothing was changed")


def _codex_block(command: str, events, limits: dict, nl: str) -> str:
    lines = [
        BLOCK_BEGIN,
        "# Added by `brainbox install --codex`; `brainbox uninstall --codex` removes it.",
        "# Keep it last in the file: keys written below a table header belong to it.",
    ]
    for event in events:
        lines.append(f"[[hooks.{event}]]")
        if event in TOOL_EVENTS:
            lines.append(f"matcher = {_toml_string(_matcher('codex', event))}")
        lines += [
            f"[[hooks.{event}.hooks]]",
            'type = "command"',
            f"command = {_toml_string(hook_command(command, 'codex', event))}",
            f"timeout = {limits[event]}",
            "",
        ]
    lines.append(BLOCK_END)
    return nl.join(lines) + nl


def _matcher(agent: str, event: str) -> str:
    return PRE_MATCHER[agent] if event == "PreToolUse" else "*"


def _toml_string(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch < " " or ch == "\x7f":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _codex_warnings(path: Path, config: dict) -> list[str]:
    warnings = []
    features = config.get("features")
    if isinstance(features, dict) and (
        features.get("hooks") is False or features.get("codex_hooks") is False
    ):
        warnings.append(f"{path}: [features] turns hooks off; brainbox's hooks will not run")
    if (path.parent / "hooks.json").exists():
        warnings.append(
            f"{path.parent / 'hooks.json'} exists too; Codex prefers one hooks "
            "representation per folder"
        )
    return warnings


# --------------------------------------------------------------------------- shared


def _begin(path, events, timeouts, supported) -> tuple[Path, tuple, dict, bytes | None]:
    """An install's inputs checked: (path, events, their timeouts, the file's bytes or None)."""
    path = Path(path)
    events = _events(events, supported)
    return path, events, _timeouts(timeouts, events), _read(path)


def _put_back(path: Path, is_original, empty: bool, data: bytes) -> None:
    """Write what an uninstall leaves: the pre-install backup when `is_original(backup)`
    (byte-identical restore), no file when install created it and nothing else is left
    (`empty`), else `data`."""
    original = _read(_backup_path(path))
    if original is not None and is_original(original):
        _write(path, original)
        _end_cycle(path, restored=True)
    elif empty and _state(path).get("created"):
        _remove_created(path)
    else:
        _write(path, data)
        _end_cycle(path, restored=False)


def _events(events, supported) -> tuple:
    if events is None:
        return tuple(supported)
    events = tuple(dict.fromkeys(events))
    unknown = [e for e in events if e not in supported]
    if unknown:
        raise ValueError(f"unsupported hook events {unknown}; choose from {list(supported)}")
    return events


def _timeouts(timeouts: dict | None, events) -> dict:
    limits = {e: DEFAULT_TIMEOUT for e in events}
    for event, value in (timeouts or {}).items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"timeout for {event} must be a positive number of seconds")
        if event in limits:
            limits[event] = int(value) if float(value).is_integer() else float(value)
    return limits


def _summary(agent, path, changed, added, updated, removed, created) -> dict:
    backup = _backup_path(Path(path))
    return {
        "agent": agent,
        "path": str(path),
        "changed": changed,
        "created": created,
        "added": list(added),
        "updated": list(updated),
        "removed": list(removed),
        "backup": str(backup) if backup.exists() else None,
        "warnings": [],
    }


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _backup_path(path: Path) -> Path:
    real = _real(path)
    return real.with_name(real.name + BACKUP_SUFFIX)


def _state_path(path: Path) -> Path:
    real = _real(path)
    return real.with_name(real.name + STATE_SUFFIX)


def _state(path: Path) -> dict:
    try:
        state = json.loads(_state_path(path).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _read(path: Path) -> bytes | None:
    try:
        return _real(path).read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ConfigFileError(f"{path}: is a directory") from None
    except OSError as exc:
        raise ConfigFileError(f"{path}: cannot read ({exc.strerror})") from None


def _begin_cycle(path: Path, raw: bytes | None, installed: bool) -> None:
    """Before our first change of a cycle: back the file up, or note that we create it."""
    if installed:
        return  # the backup (or the state) of this cycle already exists
    if raw is None:
        real = _real(path)
        created_dir = not real.parent.exists()
        real.parent.mkdir(parents=True, exist_ok=True)
        _write(
            _state_path(path),
            json.dumps({"created": True, "created_dir": created_dir}).encode(),
            mode=0o600,
        )
        return
    _write(_backup_path(path), raw, mode=_mode(path))
    _state_path(path).unlink(missing_ok=True)


def _end_cycle(path: Path, restored: bool) -> None:
    """After uninstall: a backup now equal to the file is dropped, else kept."""
    if restored:
        _backup_path(path).unlink(missing_ok=True)
    _state_path(path).unlink(missing_ok=True)


def _remove_created(path: Path) -> None:
    state = _state(path)
    real = _real(path)
    real.unlink(missing_ok=True)
    _state_path(path).unlink(missing_ok=True)
    if state.get("created_dir"):
        try:
            real.parent.rmdir()  # only when empty
        except OSError:
            pass


def _mode(path: Path) -> int | None:
    try:
        return _real(path).stat().st_mode & 0o7777
    except OSError:
        return None


def _write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Atomic replace through symlinks, keeping the mode (new files: 0o666 & ~umask)."""
    real = _real(path)
    if mode is None:
        mode = _mode(real)
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
