"""Trajectory loaders: agent runs on SWE-bench-style tasks -> :class:`Task` objects.

>>> from brainbox.eval.loaders import load
>>> for task in load("shared/data/trajectories/mini-swe-agent-gemini3-verified"):
...     print(task.id, len(task.events), sorted(task.gold_edit))

``load(path, format="auto")`` picks the reader by looking at ``path`` (see
:func:`detect`); formats: ``claude_code``, ``mini_swe_agent``, ``swe_agent``,
``openhands`` (``llm_completions`` logs) and ``nebius`` (SWE-rebench OpenHands rows,
parquet or JSONL). A folder holding several such folders (``data/trajectories/``) yields
each in turn. Within one source, tasks come by repository, then PR number (the order the
replay uses). Events are raw record dicts (see :mod:`.base`).

``claude_code.iter_transcript(path)`` reads a real ``~/.claude/projects`` transcript into
tool calls and prompts, for transcript import and hook-payload replay.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from brainbox.eval.loaders.base import Task, TrajectoryWarning, parse_task_id

__all__ = ["FORMATS", "Task", "TrajectoryWarning", "detect", "load", "parse_task_id"]

FORMATS = ("claude_code", "mini_swe_agent", "swe_agent", "openhands", "nebius")


def _peek_json_line(path: Path) -> dict | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for _, raw in zip(range(20), fh):
                raw = raw.strip()
                if not raw:
                    continue
                try:
                    d = json.loads(raw)
                except json.JSONDecodeError:
                    continue
                if isinstance(d, dict):
                    return d
    except OSError:
        return None
    return None


def _peek_json_keys(path: Path, limit: int = 4096) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(limit)
    except OSError:
        return ""


def detect(path) -> str | None:
    """The format of ``path`` (file or folder), or ``None`` when it is not recognised."""
    p = Path(path)
    if p.is_file():
        name = p.name
        if name.endswith(".parquet"):
            return "nebius"
        if name.endswith(".traj.json"):
            return "mini_swe_agent"
        if name.endswith(".traj"):
            return "swe_agent"
        if name.endswith(".jsonl"):
            d = _peek_json_line(p) or {}
            if "trajectory" in d and "instance_id" in d:
                return "nebius"
            if "sessionId" in d or d.get("type") in (
                "summary",
                "file-history-snapshot",
                "user",
                "assistant",
                "progress",
            ):
                return "claude_code"
            return None
        if name.endswith(".json"):
            head = _peek_json_keys(p)
            if '"trajectory_format"' in head or '"mini-swe-agent' in head:
                return "mini_swe_agent"
            if '"messages"' in head and p.parent.parent.name == "llm_completions":
                return "openhands"
            if '"messages"' in head and '"response"' in head:
                return "openhands"
            if '"trajectory"' in head and '"history"' in head:
                return "swe_agent"
        return None
    if not p.is_dir():
        return None
    if (p / "index.tsv").exists() and (p / "sessions").is_dir():
        return "claude_code"
    if (p / "llm_completions").is_dir() or (p.name == "llm_completions"):
        return "openhands"
    if (
        any(p.glob("trajs/*/*.traj.json"))
        or any(p.glob("*/*.traj.json"))
        or any(p.glob("*.traj.json"))
    ):
        return "mini_swe_agent"
    if any(p.glob("trajs/*.traj")) or any(p.glob("*.traj")):
        return "swe_agent"
    if any(p.glob("*.parquet")):
        return "nebius"
    jsonl = sorted(p.glob("*.jsonl")) or sorted(p.glob("sessions/*.jsonl"))
    if jsonl:
        return detect(jsonl[0])
    return None


def _reader(fmt: str):
    if fmt == "claude_code":
        from brainbox.eval.loaders import claude_code

        return claude_code.load
    if fmt == "mini_swe_agent":
        from brainbox.eval.loaders import mini_swe_agent

        return mini_swe_agent.load
    if fmt == "swe_agent":
        from brainbox.eval.loaders import swe_agent

        return swe_agent.load
    if fmt == "openhands":
        from brainbox.eval.loaders import openhands

        return openhands.load_completions
    if fmt == "nebius":
        from brainbox.eval.loaders import openhands

        return openhands.load_nebius
    raise ValueError(f"unknown trajectory format {fmt!r}; expected one of {', '.join(FORMATS)}")


def load(source_path, format: str = "auto") -> Iterator[Task]:
    """Tasks of ``source_path`` in ``format`` (``"auto"``: :func:`detect`).

    Raises ``ValueError`` for an unknown format or a path nothing recognises, and
    ``FileNotFoundError`` for a missing path. Unusable tasks inside a source are skipped
    with a :class:`TrajectoryWarning`.
    """
    p = Path(source_path)
    if not p.exists():
        raise FileNotFoundError(p)
    if format != "auto":
        yield from _reader(format)(p)
        return
    fmt = detect(p)
    if fmt is not None:
        yield from _reader(fmt)(p)
        return
    if p.is_dir():
        subs = [(d, detect(d)) for d in sorted(p.iterdir()) if d.is_dir()]
        subs = [(d, f) for d, f in subs if f is not None]
        if subs:
            for d, f in subs:
                yield from _reader(f)(d)
            return
    raise ValueError(
        f"cannot tell the trajectory format of {p}; pass format= one of {', '.join(FORMATS)}"
    )
