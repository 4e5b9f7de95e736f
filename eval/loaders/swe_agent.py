"""SWE-agent trajectories (``<instance_id>.traj``: ``environment``, ``trajectory``,
``history``, ``info``), as in the Multi-SWE-bench Java submissions (Aug 2024 ACI).

Each ``trajectory[i]`` is one step: ``action`` (the command text), ``observation``, and
``state``, a JSON string with ``open_file`` and ``working_dir`` *before* the action runs
(the state shown in the prompt the model answered). The project root is ``/<owner>__<repo>``.

Interface commands become tools of their own name:

==================  ========  ============================================================
command             action    file
==================  ========  ============================================================
``open P [N]``      read      ``P``
``goto N``          read      ``state.open_file``
``scroll_down/up``  read      ``state.open_file``
``create P``        edit      ``P`` (the file's fact: ``create``)
``edit N:M ...``    edit      ``state.open_file``
``search_file T [F]`` search  ``F`` or ``state.open_file``; ``T`` in ``args``
``search_dir T [D]``  search  none (a directory); ``T`` in ``args``
``find_file N [D]``   search  none; ``N`` in ``args``
==================  ========  ============================================================

``submit`` and the harness's ``exit_cost``/``exit_*`` (cost or format limits) are not work
on the issue and are dropped, as the other loaders drop their submit steps. Anything else is
a shell command, read through :mod:`brainbox.shell` with ``working_dir`` as its cwd.

There are no exit codes and no timestamps (``at`` is ``None``; the replay's clock ticks per
event). ``error`` is set when the observation says so: an editor refusal ("Your proposed
edit has introduced new syntax error(s)"), "File ... not found", "Directory ... not found",
``Error:``; for shell commands the first line matching "command not found", "No such file
or directory", ``error:``, ``Exception``/``Error`` at line start, ``BUILD FAILURE`` or a
traceback (searched in the first and last 20 lines only, so a ``cat`` of source code that
mentions ``Error`` is not an error).

``shown`` (:mod:`.shown`): the file window a step's observation shows (``[File: P (N lines
total)]`` and numbered lines), and the output of a shell step that views one file (``cat
F``). The task description is the issue text of the first non-demo ``user`` message of
``history`` (between ``ISSUE:`` and ``INSTRUCTIONS:``); the ``is_demo`` message before it
is a worked example on another repository and is ignored.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

from brainbox.eval.loaders.base import (
    Task,
    TaskBuilder,
    parse_task_id,
    read_json,
    task_sort_key,
    warn_skip,
)
from brainbox.eval.loaders.shown import window_view

__all__ = ["load", "load_file"]

SOURCE = "swe_agent"
_VIEW = {"goto", "scroll_down", "scroll_up"}
_DROP = {
    "submit",
    "exit_cost",
    "exit_context",
    "exit_format",
    "exit_api",
    "exit_error",
    "exit_forfeit",
    "exit",
}
_EDIT_FAIL = ("Your proposed edit has introduced new syntax error",)
_NOT_FOUND = re.compile(r"^(File|Directory) .* not found|^Error:|^Usage:", re.MULTILINE)
_SHELL_ERROR = re.compile(
    r"command not found|No such file or directory|\berror:|^\s*(?:[\w.]+(?:Exception|Error))\b"
    r"|^Exception in thread|BUILD FAILURE|Traceback \(most recent call last\)|^ERROR\b"
    r"|Permission denied|cannot access",
    re.MULTILINE,
)


def _args(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _shell_error(obs: str) -> str | None:
    lines = obs.splitlines()
    window = lines[:20] + lines[-20:] if len(lines) > 40 else lines
    for ln in window:
        if _SHELL_ERROR.search(ln):
            return ln.strip()[:500]
    return None


def _state(step: dict) -> dict:
    st = step.get("state")
    if isinstance(st, str):
        try:
            st = json.loads(st)
        except json.JSONDecodeError:
            st = {}
    return st if isinstance(st, dict) else {}


def _step(b: TaskBuilder, step: dict) -> None:
    n = len(b.events)
    _add_step(b, step)
    obs = step.get("observation")
    view = window_view(obs) if len(b.events) > n and isinstance(obs, str) else None
    if view is not None:  # the file window the step showed (.shown)
        b.show(b.events[-1], view[0], *view[1:])


def _add_step(b: TaskBuilder, step: dict) -> None:
    action = step.get("action")
    if not isinstance(action, str) or not action.strip():
        return
    obs = step.get("observation") if isinstance(step.get("observation"), str) else ""
    st = _state(step)
    cwd = st.get("working_dir") or b.project
    open_file = st.get("open_file")
    if not open_file or open_file == "n/a":
        open_file = None
    text = action.strip()
    first_line = text.split("\n", 1)[0]
    words = _args(first_line)
    cmd = words[0] if words else ""
    if cmd in _DROP:
        return
    if cmd == "open" and len(words) >= 2:
        err = obs.strip().splitlines()[0] if _NOT_FOUND.search(obs[:300]) else None
        b.tool(
            "open",
            files=[(words[1], "read")],
            action="read",
            cwd=cwd,
            error=err,
            file_tool=True,
            command=first_line,
        )
    elif cmd in _VIEW:
        err = obs.strip().splitlines()[0] if obs.startswith(("No file open", "Error")) else None
        b.tool(
            cmd,
            files=[(open_file, "read")] if open_file else [],
            action="read",
            cwd=cwd,
            error=err,
            file_tool=True,
            command=first_line,
        )
    elif cmd == "create" and len(words) >= 2:
        err = obs.strip().splitlines()[0] if obs.startswith(("Error", "/root/commands")) else None
        b.tool(
            "create",
            files=[(words[1], "create")],
            action="edit",
            cwd=cwd,
            error=err,
            file_tool=True,
            command=first_line,
        )
    elif cmd == "edit":
        err = None
        if obs.startswith(_EDIT_FAIL) or obs.startswith(("No file open", "Usage:", "Error")):
            err = obs.strip().splitlines()[0]
        b.tool(
            "edit",
            files=[(open_file, "edit")] if open_file else [],
            action="edit",
            cwd=cwd,
            error=err,
            file_tool=True,
            command=first_line,
        )
    elif cmd == "search_file" and len(words) >= 2:
        target = words[2] if len(words) >= 3 else open_file
        err = obs.strip().splitlines()[0] if _NOT_FOUND.search(obs[:300]) else None
        b.tool(
            "search_file",
            files=[(target, "read")] if target else [],
            action="search",
            cwd=cwd,
            error=err,
            args=words[1],
            file_tool=True,
            command=first_line,
        )
    elif cmd in ("search_dir", "find_file") and len(words) >= 2:
        err = obs.strip().splitlines()[0] if _NOT_FOUND.search(obs[:300]) else None
        b.tool(cmd, action="search", cwd=cwd, error=err, args=words[1], command=first_line)
    else:
        b.shell(text, cwd=cwd, error=_shell_error(obs), output=obs)


def _description(history: list) -> str | None:
    for h in history:
        if isinstance(h, dict) and h.get("role") == "user" and not h.get("is_demo"):
            c = h.get("content")
            if isinstance(c, list):
                c = "\n".join(str(x.get("text", "")) for x in c if isinstance(x, dict))
            if not isinstance(c, str):
                continue
            _, sep, rest = c.partition("ISSUE:\n")
            body = rest if sep else c
            return body.split("\n\nINSTRUCTIONS:", 1)[0].strip()
    return None


def load_file(path) -> Task | None:
    """One ``.traj`` -> Task (``None``, with a warning, when unusable)."""
    path = Path(path)
    data = read_json(path)
    if data is None:
        return None
    tid = path.name[: -len(".traj")] if path.name.endswith(".traj") else path.stem
    try:
        parse_task_id(tid)
        steps = data["trajectory"]
        history = data.get("history") or []
        if not isinstance(steps, list):
            raise KeyError("trajectory")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        warn_skip(path, f"missing field or bad id ({exc}); task skipped")
        return None
    description = _description(history)
    if description is None:
        warn_skip(path, "no issue text in history; task skipped")
        return None
    project = "/" + tid.rsplit("-", 1)[0]
    first = _state(steps[0]) if steps and isinstance(steps[0], dict) else {}
    if first.get("working_dir", "").count("/") == 1:
        project = first["working_dir"]
    b = TaskBuilder(session=tid, project=project)
    for step in steps:
        if isinstance(step, dict):
            _step(b, step)
    info = data.get("info") or {}
    meta = {"exit_status": info.get("exit_status"), "submission": info.get("submission")}
    return b.task(tid, description, SOURCE, path, meta)


def _key(p: Path):
    return task_sort_key(p.name[: -len(".traj")])


def load(path) -> Iterator[Task]:
    """Tasks of one ``.traj`` or of a folder of them (``trajs/*.traj``), by repository then
    PR number."""
    path = Path(path)
    files = (
        [path]
        if path.is_file()
        else (sorted(path.glob("trajs/*.traj")) or sorted(path.glob("*.traj")))
    )
    for p in sorted(files, key=_key):
        t = load_file(p)
        if t is not None:
            yield t
