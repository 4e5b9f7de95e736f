"""The raw record schema the hook mapping and the trajectory loaders both emit (the input
of `brainbox record --jsonl` and `brainbox.events.normalize`), for the tests of both."""

from brainbox.events import ACTIONS

__all__ = ["ACTIONS", "RECORD_KEYS"]

# Every record carries every key (None when unknown); loaders add `project`.
RECORD_KEYS = frozenset({
    "session", "cwd", "tool", "files", "error", "exit_code", "at", "prompt", "command",
    "args", "kind", "action",
})
