"""Merging old per-worktree project keys into their repository (issue 17).

Before issue 17 the project key was the worktree's root, so each `git worktree add`
checkout had a memory of its own. Now the key is the repository (`brainbox.identity`),
and an old key that names a linked worktree of a repository is merged into it.

Choices:
- Found, not guessed: an old key is proposed only when its folder is still there and
  its `.git` file says (through `commondir`) which repository it belongs to, the key
  `identity.repository_key` gives today. A submodule's `.git` names no `commondir`, so a
  submodule is never merged into its superproject. A worktree whose folder is gone (the
  checkout removed, `git worktree prune`) cannot be recognised and stays as it is; so
  does a key set by `BRAINBOX_PROJECT` (it is not a worktree root).
- Proposed by `brainbox doctor` (a problem line: the memory is split), applied by
  `brainbox doctor --fix` (`--dry-run` lists what it would merge and writes nothing).
  Not on open: the hooks open the store on every tool call with the standard library
  only, and a merge rewrites the log, which the user should see happen once.
- Event-sourced: one `maintenance` event per merge (session `SESSION`, `meta.op`
  "merge_project", `from`, `into`), appended in the transaction that moves every earlier
  event of the old key to the repository's key, the old key kept as the event's
  `worktree` (what the hook records today in a linked worktree, so a merged log reads
  as if it had been recorded so). The state folds the event as an alias: an event of
  the old key after it (a late spool drain, an older brainbox's hook) folds as the
  repository's. A state that folded the old key is then rebuilt (`Memory.sync`), so the
  incremental state equals `rebuild()`. Paths are relative to each worktree's root, so
  `src/a.py` of the worktree and of the main checkout become one resource.
- The code index is left as it is: it is keyed by the folder `brainbox index` named.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from brainbox.identity import repository_key
from brainbox.storage import queries

SESSION = "brainbox:projects"
OP = "merge_project"


@dataclass(frozen=True)
class Merge:
    """One proposed merge: the old key `source` (a linked worktree's root) into `into`."""

    source: str
    into: str
    events: int

    def as_dict(self) -> dict:
        return {"from": self.source, "into": self.into, "events": self.events}


def proposals(conn) -> list[Merge]:
    """The stored project keys that are linked worktrees of another key's repository,
    by key (module docstring)."""
    out = []
    for key, n in sorted(queries.project_event_counts(conn).items()):
        if not key.startswith("/") or not os.path.isfile(os.path.join(key, ".git")):
            continue
        into = repository_key(key)
        if into != key:
            out.append(Merge(key, into, n))
    return out


def event(merge: Merge, at: float | None = None) -> dict:
    """The maintenance event that records `merge` (stored as is: both keys are project
    keys, which are never redacted)."""
    return {"at": time.time() if at is None else float(at), "session": SESSION,
            "project": merge.into, "kind": "maintenance", "files": [],
            "meta": {"op": OP, "from": merge.source, "into": merge.into}}


def apply(conn, merges: list[Merge], at: float | None = None) -> list[dict]:
    """Record each merge and move its events (one transaction each); the caller rebuilds
    the state (`Memory.sync` does when it meets them). Returns what was merged."""
    done = []
    for m in merges:
        merge_id, moved = queries.merge_project(conn, event(m, at), m.source, m.into)
        done.append({**m.as_dict(), "event": merge_id, "moved": moved})
    return done
