"""mini-swe-agent trajectories (``<instance_id>.traj.json``, ``trajectory_format:
"mini-swe-agent-1"``).

The agent has one tool, a shell in ``/testbed`` (the project root): each ``assistant``
message holds one fenced ```` ```bash ```` block and the next ``user`` message its
observation, ``<returncode>N</returncode><output>...</output>`` (or ``<output_head>`` /
``<warning>`` for long output). Every step goes through :mod:`brainbox.shell`.

- ``exit_code`` is the return code; ``error`` the output's tail when the code is non-zero
  *and* there was output (``grep`` finding nothing exits 1 silently: not an error). A
  command killed by the harness's timeout has ``error`` "timed out" and no exit code.
- ``at`` is ``extra.response.created`` of the assistant message (unix seconds).
- Steps the harness rejected (not exactly one bash block: the observation is "Please always
  provide EXACTLY ONE action ...") ran nothing and are left out.
- The final ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff
  --cached`` step is the harness's submit protocol, not work on the issue: dropped.
- ``cd`` is not persistent between steps (each command runs in a fresh subshell in
  ``/testbed``); a ``cd x && ...`` inside one command is followed.
- The task description is the text inside ``<pr_description>`` of ``messages[1]``.
- A step whose whole output (``<output>``) is a view of a file (``nl -ba f | sed -n
  '1,80p'``, ``cat f``: :mod:`.shown`) records that text on the event (``shown``).
"""

from __future__ import annotations

import re
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

__all__ = ["load", "load_file"]

SOURCE = "mini_swe_agent"
PROJECT = "/testbed"
SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
_RC = re.compile(r"<returncode>(-?\d+)</returncode>")
_OUT = re.compile(r"<output(?:_head|_tail)?>\n?(.*?)</output(?:_head|_tail)?>", re.DOTALL)
_FULL = re.compile(r"<output>\n?(.*)</output>", re.DOTALL)  # not cut (no _head/_tail)
_PR = re.compile(r"<pr_description>\s*(.*?)\s*</pr_description>", re.DOTALL)


def _content(msg: dict) -> str:
    c = msg.get("content")
    if isinstance(c, list):
        return "\n".join(str(x.get("text", "")) if isinstance(x, dict) else str(x) for x in c)
    return c if isinstance(c, str) else ""


def _observation(text: str) -> tuple[int | None, str | None, bool]:
    """(exit code, error text, executed?) of one observation message."""
    if text.startswith("Please always provide EXACTLY ONE action"):
        return None, None, False
    m = _RC.search(text)
    if m is None:
        if "timed out" in text[:300]:
            first = text.strip().splitlines()[0] if text.strip() else "timed out"
            return None, first, True
        return None, None, True
    rc = int(m.group(1))
    if rc == 0:
        return 0, None, True
    outs = _OUT.findall(text)
    body = "\n".join(o.strip("\n") for o in outs).strip()
    return rc, (body or None), True


def _full_output(text: str) -> str | None:
    """The whole output of an observation (``<output>``; a long one, cut into
    ``<output_head>``/``<output_tail>``, shows no file whole: None), for the text of the
    file a view showed (:mod:`.shown`)."""
    m = _FULL.search(text) if "<output>" in text else None
    return m.group(1) if m else None


def load_file(path) -> Task | None:
    """One ``.traj.json`` -> Task (``None``, with a warning, when unusable)."""
    path = Path(path)
    data = read_json(path)
    if data is None:
        return None
    try:
        messages = data["messages"]
        tid = data.get("instance_id") or path.name.split(".traj")[0]
        parse_task_id(tid)
        if not isinstance(messages, list) or len(messages) < 2:
            raise KeyError("messages")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        warn_skip(path, f"missing field or bad id ({exc}); task skipped")
        return None
    intro = _content(messages[1])
    m = _PR.search(intro)
    description = m.group(1) if m else intro
    b = TaskBuilder(session=tid, project=PROJECT)
    for i in range(2, len(messages)):
        msg = messages[i]
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        blocks = _BLOCK.findall(_content(msg))
        nxt = (
            messages[i + 1] if i + 1 < len(messages) and isinstance(messages[i + 1], dict) else None
        )
        obs = _content(nxt) if nxt and nxt.get("role") == "user" else ""
        if len(blocks) != 1:
            continue
        command = blocks[0]
        if SUBMIT in command:
            continue
        rc, error, ran = _observation(obs)
        if not ran:
            continue
        created = ((msg.get("extra") or {}).get("response") or {}).get("created")
        b.shell(
            command,
            cwd=PROJECT,
            error=error,
            exit_code=rc,
            at=float(created) if isinstance(created, (int, float)) else None,
            output=_full_output(obs),
        )
    info = data.get("info") or {}
    meta = {
        "exit_status": info.get("exit_status"),
        "submission": info.get("submission"),
        "mini_version": info.get("mini_version"),
    }
    return b.task(tid, description, SOURCE, path, meta)


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    found = (
        sorted(path.glob("trajs/*/*.traj.json"))
        or sorted(path.glob("*/*.traj.json"))
        or sorted(path.glob("*.traj.json"))
    )
    return found


def _key(p: Path):
    return task_sort_key(p.name.split(".traj")[0])


def load(path) -> Iterator[Task]:
    """Tasks of one ``.traj.json`` or of a folder of them (``trajs/<id>/<id>.traj.json``),
    by repository then PR number."""
    for p in sorted(_files(Path(path)), key=_key):
        t = load_file(p)
        if t is not None:
            yield t
