"""The replay's two views of a series' files: ``all`` (every file the agent touched) and
``repo`` (the repository's files only), chosen with ``brainbox replay --files``.

**Why.** Files the agent creates itself (``reproduce_issue.py``, ``test_issue.py``) are the
most-touched "files" of a series: a method that ranks the agent's own scratch script
first wins P1 without saying anything about the repository (issue 15 measured most of
the frequency baseline's P1-edit first hits on such files). The ``repo`` view scores
what a user of brainbox wants predicted: the repository's files.

**The rule** (series level, in replay order). A file is an *agent file* of a series when
the first task of the series that touches it has it in that task's ``Task.created`` (the
loader's "the task's first touch of the file is a create"). A *touch* is a successful one,
as the loader counts them: a path in the task's ``gold_read``, ``gold_edit`` or
``created``, or a file of a step without an error (a ``run`` of a script adds to no gold
set but is a touch). A step with an error may name a file that was not there (``cat
reproduce.py`` before it is written), so only what it added to the gold sets counts; a
path named only by failed steps decides nothing. Once a file was first touched as an existing file, it is a repository file for
the rest of the series, even if a later task re-creates it; once created, it is an agent
file for the rest of the series (``reproduce_issue.py`` created in task 1 is an agent
file in every later task).

Measured on the development set (the four sources of ``shared/data/trajectories``, with
the loaders' file facts of issue 15: runs are not reads, ``created`` means a create), the
repo view keeps of the (task, file) gold pairs, P1-edit / P1-read: claude-code 227 of 431
/ 428 of 432, mini-swe-agent 364 of 1,645 / 752 of 785, openhands 25 of 33 / 32 of 32,
swe-agent (Java) 56 of 136 / 103 of 146; and of the events' file mentions 2,116 of
2,807, 5,329 of 9,503, 123 of 157, 270 of 496. Most edits of mini-swe-agent's runs are of
files it wrote itself.

**The view** is a transformation of the tasks before the replay (:func:`repo_view`, a
pure, deterministic function): each agent file is removed from every event's ``files``
(and ``shown``, the text a result showed of it: issue 16's history-only snippet channel)
and from ``gold_read`` / ``gold_edit`` of every task of the series (``created`` is kept
as the loader gave it). Before the task that creates it, an agent file can appear only
in failed steps (a successful touch there would have been its first touch, as an
existing file), so removing it from every task removes nothing a probe could score and
keeps it out of memory altogether. Every engine (compiled and ``--engine python``) and
every baseline then sees the same input and the replay loops do not change: **in the
repo view no method ranks, is scored on, or learns from agent files.** An event whose
only files were agent files names no file in the view, so it is not a P2 probe; it is
still a tool call, so P3 is unchanged by the view.

The synthetic workload creates no file (``sources`` never sets ``created``), so its repo
view is its all view: :func:`creates_nothing` checks that as the tasks stream by, and the
runner replays such a series once for both views. So does any series with no agent file.
"""

from __future__ import annotations

import dataclasses
import posixpath

from brainbox.eval.cache import carry_normalized

VIEWS = ("all", "repo")
HEADLINE = "repo"  # the view the top-level ``cohorts`` of a ``--files both`` run report
LABELS = {"all": "All files", "repo": "Repository files only"}
FILES = {"all": ("all",), "repo": ("repo",), "both": ("repo", "all")}  # headline first


def touched(task) -> set[str]:
    """The files ``task`` touched (project-relative; see the module docstring)."""
    out = task.gold_read | task.gold_edit | task.created
    for ev in task.events:
        if ev.get("files") and not ev.get("error"):
            root = ev.get("project") or task.project
            out.update(_relative(f, ev.get("cwd"), root) for f in ev["files"])
    return out


def agent_files(tasks) -> set[str]:
    """The agent files of a series (project-relative paths; see the module docstring)."""
    first: dict[str, bool] = {}  # file -> its first touch in the series was a create
    for task in tasks:
        created = task.created
        for f in touched(task):
            if f not in first:
                first[f] = f in created
    return {f for f, made in first.items() if made}


def _relative(path: str, cwd: str | None, root: str) -> str:
    """``path`` (absolute, or relative to ``cwd``) relative to ``root``; else as given."""
    full = posixpath.normpath(path if path.startswith("/") else
                              posixpath.join(cwd or root or "/", path))
    prefix = root.rstrip("/") + "/"
    return full[len(prefix):] if full.startswith(prefix) else path


def repo_view(tasks) -> list:
    """The series ``tasks`` without its agent files (a new list; the input is not changed;
    tasks and events that lose nothing are shared, not copied)."""
    tasks = list(tasks)
    agent = agent_files(tasks)
    if not agent:
        return tasks
    out = []
    for task in tasks:
        events, changed = [], False
        for ev in task.events:
            files, shown = ev.get("files"), ev.get("shown")
            root = ev.get("project") or task.project
            if files:
                keep = [f for f in files if _relative(f, ev.get("cwd"), root) not in agent]
                if len(keep) != len(files):
                    ev, changed = {**ev, "files": keep}, True
            if shown:
                kept = {f: v for f, v in shown.items()
                        if _relative(f, ev.get("cwd"), root) not in agent}
                if len(kept) != len(shown):
                    ev, changed = {**ev, "shown": kept or None}, True
            events.append(ev)
        read, edit = task.gold_read - agent, task.gold_edit - agent
        if changed or read != task.gold_read or edit != task.gold_edit:
            task = carry_normalized(task, dataclasses.replace(
                task, events=events, gold_read=read, gold_edit=edit))
        out.append(task)
    return out


def creates_nothing(tasks):
    """``tasks`` as they come, raising ``ValueError`` at the first one that created a file:
    the runner replays a series whose tasks pass through this once for both views."""
    for task in tasks:
        if task.created:
            raise ValueError(f"task {task.id} created {min(task.created)!r}: its "
                             "repo view is not its all view")
        yield task
