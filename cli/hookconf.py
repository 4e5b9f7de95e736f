"""The hooks' and the daemon's settings: the environment variable wins, then
`$BRAINBOX_HOME/config.json`, then the defaults below (written once: the daemon's answers
use the same defaults when a request leaves a cap out).

The budget (tool events 0.2 s of the hook's own work, counted from the moment the payload
has arrived; the others 1.5 s from process start, since the agent waits for the whole
process) is `BRAINBOX_HOOK_BUDGET_TOOL` / `_PROMPT` or `config.json`'s `hook_budget_*`.
Reading stdin has a wait of its own (`STDIN_WAIT` 2 s, `BRAINBOX_HOOK_STDIN_WAIT`).
The injected prompt block is at most `INJECT_CHARS` (500) characters, the SessionStart
block `SESSION_START_CHARS` (1,200; `BRAINBOX_SESSION_START_CHARS`, `session_start_chars`).
The earlier `session_start_tokens` (characters / 4) still counts when no character budget
is set. Recall's fusion for the prompt's list is `inject_fusion` (`BRAINBOX_INJECT_FUSION`;
unset: recall's default, whose associative channel weighs 0, so no suggestion names the
association that produced it; "fixed", the paper's weights, computes it, and an ignored
suggestion then weakens that association, DESIGN §4.8).

Standard library only: every hook process reads its budget here.
"""

from __future__ import annotations

import json
import os

from brainbox import paths

DEFAULT_BUDGET = {"tool": 0.2, "prompt": 1.5}
STDIN_WAIT = 2.0  # for the payload to arrive (agents write it at once; the trial's late
# writer 0.25-0.5 s after spawn); the tool budget starts when it has
INJECT_CHARS = 500  # the prompt block's cap, in characters
SESSION_START_CHARS = 1200  # the SessionStart block's cap, in characters
ADVICE_CHARS = 600  # the PreToolUse advice's cap (the host's is 10,000)
CHARS_PER_TOKEN = 4  # the earlier `session_start_tokens` setting's unit
ENV = {
    "hook_budget_prompt": "BRAINBOX_HOOK_BUDGET_PROMPT",
    "hook_budget_tool": "BRAINBOX_HOOK_BUDGET_TOOL",
    "hook_stdin_wait": "BRAINBOX_HOOK_STDIN_WAIT",
    "daemon_idle": "BRAINBOX_DAEMON_IDLE",
    "daemon_max_rss_mb": "BRAINBOX_DAEMON_MAX_RSS_MB",
    "doctor_stale_days": "BRAINBOX_DOCTOR_STALE_DAYS",
    "daemon": "BRAINBOX_DAEMON",
    "reindex_every": "BRAINBOX_REINDEX_EVERY",
    "inject": "BRAINBOX_INJECT",
    "inject_chars": "BRAINBOX_INJECT_CHARS",
    "inject_fusion": "BRAINBOX_INJECT_FUSION",
    "session_start_chars": "BRAINBOX_SESSION_START_CHARS",
    "session_start_tokens": "BRAINBOX_SESSION_START_TOKENS",
}
_config_cache: dict | None = None


def reset() -> None:
    """Forget `config.json` as read (a hook's `main` starts afresh; tests rewrite it)."""
    global _config_cache
    _config_cache = None


def config(key: str, default=None):
    """A setting: the environment variable wins, then `$BRAINBOX_HOME/config.json`."""
    global _config_cache
    env = ENV.get(key)
    if env and os.environ.get(env) not in (None, ""):
        return os.environ[env]
    if _config_cache is None:
        try:
            with open(os.path.join(paths.home(), "config.json"), encoding="utf-8") as fh:
                loaded = json.load(fh)
            _config_cache = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            _config_cache = {}
    return _config_cache.get(key, default)


def _on(value) -> bool:
    return str(value).strip().lower() not in ("0", "off", "false", "no")


def enabled(key: str) -> bool:
    return _on(config(key, True))


def _as_int(value, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def settings(given: dict | None = None) -> dict:
    """What the prompt and SessionStart answers depend on, resolved once: `given` (a hook
    request's, in the daemon) wins, then the environment and `config.json`."""
    given = given or {}

    def pick(key, default):
        return given[key] if key in given else config(key, default)

    start = pick("session_start_chars", None)
    if start is None and pick("session_start_tokens", None) is not None:
        start = _as_int(pick("session_start_tokens", None), -1) * CHARS_PER_TOKEN
    start = _as_int(start, SESSION_START_CHARS)
    return {"inject": _on(pick("inject", True)),
            "inject_chars": _as_int(pick("inject_chars", INJECT_CHARS), INJECT_CHARS),
            "inject_fusion": str(pick("inject_fusion", "") or ""),
            "session_start_chars": start if start >= 0 else SESSION_START_CHARS}


def seconds(key: str, default: float) -> float:
    """A duration setting; `default` when it is not a number in (0, 3600)."""
    try:
        value = float(config(key, default))
    except (TypeError, ValueError):
        return default
    return value if 0 < value < 3600 else default


def budget(kind: str) -> float:
    """A hook's budget in seconds: `kind` "tool" or "prompt"."""
    return seconds(f"hook_budget_{kind}", DEFAULT_BUDGET[kind])


def stdin_wait() -> float:
    return seconds("hook_stdin_wait", STDIN_WAIT)
