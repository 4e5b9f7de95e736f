"""Where the evidence came from (issue 19, item 3).

Every event records its source (`events.source`, migration 010): "hook" (the agents'
hooks; `meta` names the agent, the hook event and, for a sub-agent, `agent_id`),
"import" (`brainbox import`; `meta.transcript` and `meta.offset`, the line's first
byte), "mcp" (the MCP server), "cli" (`brainbox record` and the other verbs), or none
("unknown": the replay, the demo, a library caller, an old row that named no hook).

`only(mem, sources)` is recall's exact filter: a read-only memory folded from the events
of those sources alone (the whole fold, as `rebuild` does, then nothing is saved), so
`recall --source hook` answers what a memory that only ever saw the hooks would. Imported
history weighs the same as live history: no weight was measured on the replay, so none is
applied. `explain` counts, by source, the events naming the file and the events behind
each association into it (`storage.provenance.pair_sources`).
"""

from __future__ import annotations

from brainbox import BrainboxError, learning
from brainbox.memory import Memory
from brainbox.recall import Index
from brainbox.state import State
from brainbox.storage import provenance as P

SOURCES = P.SOURCES


def check_sources(values) -> tuple[str, ...]:
    """The sources named (each once, in SOURCES order); BrainboxError for an unknown one."""
    bad = [v for v in values if v not in SOURCES]
    if bad:
        raise BrainboxError(f"unknown source {bad[0]!r}; expected one of {', '.join(SOURCES)}")
    return tuple(s for s in SOURCES if s in values)


class SourceMemory(Memory):
    """`mem`'s database seen through the events of `sources` only: folded once, never
    synced past that fold nor saved (the saved state stays the whole log's)."""

    def __init__(self, mem: Memory, sources):
        super().__init__(mem.conn, autosave=False, path=mem.path)
        self.sources = check_sources(sources)
        self._state = State()
        self._index = Index(self._state)
        learning.fold(self._state, P.events_of(self.conn, self.sources))

    def sync(self) -> int:
        return 0

    def save(self, *, replace: bool = False) -> None:
        return None


def only(mem: Memory, sources) -> Memory:
    """A memory of `mem`'s events of `sources` alone (`SourceMemory`)."""
    return SourceMemory(mem, sources)


def explain_sources(mem: Memory, data: dict, project: str | None, cwd: str | None) -> dict:
    """`data` (an `explain` answer) with the provenance of its evidence: `provenance`, the
    events naming the file by source, and each learned file association's `sources`."""
    project, path = mem.file_key(data["path"], project, cwd)
    data["provenance"] = P.file_sources(mem.conn, project, path)
    for edge in data.get("incoming") or ():
        if edge.get("kind") == "file" and not edge.get("structural"):
            edge["sources"] = P.pair_sources(mem.conn, project, edge["source"], path)
    return data
