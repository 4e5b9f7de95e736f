"""The candidate universe and the four probes (DESIGN §5, paper §4.3).

**Universe.** A :class:`Registry` gives every file (keyed by project and project-relative
path) and every tool a dense id in first-seen order within one repository series. Before
task *t* the replay notes ``n_t = len(registry)``; ``U_t`` is then exactly the ids below
``n_t`` (everything folded in earlier tasks), and nothing first seen in task *t* or later
can be a member: ids only grow. A resource enters the registry when an event naming it is
folded, so "seen" means "folded into memory", the same thing the engine knows.

**Probes.**
- P1-edit / P1-read: one ranking per task from the task description, made before anything
  of the task is folded, scored against ``gold_edit`` / ``gold_read`` of the loader
  (first relevant file, MRR@10). One task = one probe.
- P2: before each tool event that names files, the next file; gold = the event's files,
  eligible = those in ``U_t`` (MRR@10, first relevant).
- P3: before each tool event, the next tool (MRR@3).
A probe whose eligible gold is empty counts toward coverage only and is not ranked at all
(no method's ranking of it could be scored, and skipping it leaves memory unchanged).
"""

from __future__ import annotations

from brainbox.eval.metrics import PROBES, new_probe_record


class Registry:
    """Dense ids in first-seen order."""

    def __init__(self):
        self.ids: dict = {}
        self.keys: list = []
        self.first_task: list[int] = []

    def __len__(self) -> int:
        return len(self.keys)

    def get(self, key):
        return self.ids.get(key)

    def add(self, key, task: int) -> tuple[int, bool]:
        """(id, newly added)."""
        i = self.ids.get(key)
        if i is not None:
            return i, False
        i = len(self.keys)
        self.ids[key] = i
        self.keys.append(key)
        self.first_task.append(task)
        return i, True


def new_task_record(task, n_methods: int, n_events: int, universe: tuple[int, int]) -> dict:
    return {
        "id": task.id, "source": task.source, "repo": task.repo, "order": task.order,
        "events": n_events, "universe": {"files": universe[0], "tools": universe[1]},
        "probes": {p: new_probe_record(n_methods) for p in PROBES},
    }


def count_probe(record: dict, gold: int, eligible: int) -> None:
    """Coverage bookkeeping of one probe (before ranking)."""
    record["probes"] += 1
    record["gold"] += gold
    record["eligible"] += eligible
