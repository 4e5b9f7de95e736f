"""Pins (issue 17): files and notes that open every SessionStart block of their project.

Choices:
- Event-sourced, since the log is the truth: `pin` and `unpin` are `maintenance` events
  (session `SESSION`, `meta.op` "pin" / "unpin"), folded into `State.pins` (a `Board`)
  between batches like a decay, and kept in the saved state. `rebuild()` replays them;
  no migration. An older brainbox folds them as nothing (its decay needs `op` decay).
- A file pin's event names the file in `files` (project-relative, its secret segments
  redacted, like any file resource) and so does its unpin: `forget PATH` deletes them
  with everything else that mentions the file. A text pin's text is in `meta.text`,
  redacted by `events.normalize` before it touches disk.
- A pin is not a resource: it has no weight, so decay never touches it. Its id is its
  event's id (`brainbox unpin --id N`). Pinning what is pinned already is a no-op.
- Pins come in pin order (ascending id): the same pins give the same block.
"""

from __future__ import annotations

from brainbox import BrainboxError

SESSION = "brainbox:pins"
MAX_TEXT = 500  # characters of a text pin: a pin is a line of the block, not a document
KINDS = ("file", "text")


class PinError(BrainboxError):
    """Input a pin command refuses: one line, nothing written."""


def record(path: str | None, text: str | None, *, project: str | None,
           cwd: str | None, op: str = "pin") -> dict:
    """The raw record of a pin (or unpin) of `path` or `text`, for `events.normalize`;
    PinError unless exactly one of them is given and not blank."""
    if (path is None) == (text is None):
        raise PinError(f"{op} takes a PATH or --text TEXT (one of them)")
    if path is not None:
        if not path.strip():
            raise PinError(f"{op}: the path is empty")
        return {"session": SESSION, "cwd": cwd, "project": project, "kind": "maintenance",
                "files": [path], "meta": {"op": op, "pin": "file"}}
    text = " ".join(text.split())
    if not text:
        raise PinError(f"{op}: the text is empty")
    if len(text) > MAX_TEXT:
        raise PinError(f"{op}: the text has {len(text)} characters, more than {MAX_TEXT}")
    return {"session": SESSION, "cwd": cwd, "project": project, "kind": "maintenance",
            "meta": {"op": op, "pin": "text", "text": text}}


def subject(ev: dict, path: str | None) -> tuple[str, str]:
    """(kind, value) a normalised pin event names; PinError for a path outside its
    project (normalisation dropped it)."""
    meta = ev.get("meta") or {}
    if meta.get("pin") == "text":
        return "text", str(meta.get("text") or "")
    files = ev.get("files") or []
    if not files:
        raise PinError(f"{path} is not a file under the project {ev['project']}")
    return "file", files[0]


class Board:
    """The pins of every project, folded from pin and unpin events (`apply`)."""

    def __init__(self):
        self.by_project: dict[str, list[dict]] = {}  # pin order

    def apply(self, ev: dict, at_id: int) -> None:
        """Fold one pin or unpin event (`at_id`: its id, the watermark when it has none)."""
        meta = ev.get("meta") or {}
        project = ev["project"]
        pins = self.by_project.setdefault(project, [])
        if meta.get("op") == "pin":
            try:
                kind, value = subject(ev, None)
            except PinError:
                return
            if value and self.find(project, kind, value) is None:
                pins.append({"id": int(ev.get("id", at_id)), "kind": kind, "value": value,
                             "at": float(ev["at"])})
        elif meta.get("op") == "unpin":
            pins[:] = [p for p in pins if p["id"] != meta.get("id")]
        if not pins:
            del self.by_project[project]

    def of(self, project: str) -> list[dict]:
        return [dict(p) for p in self.by_project.get(project, ())]

    def find(self, project: str | None, kind: str | None = None, value: str | None = None,
             pin_id: int | None = None) -> tuple[str, dict] | None:
        """(project, pin) of the pin of `kind` and `value` in `project`, or of id `pin_id`
        in `project` (any project when None); None when there is none."""
        places = [project] if project is not None else sorted(self.by_project)
        for where in places:
            for p in self.by_project.get(where, ()):
                if (p["id"] == pin_id) if pin_id is not None else (
                        p["kind"] == kind and p["value"] == value):
                    return where, p
        return None

    def to_json(self) -> dict:
        return {k: v for k, v in sorted(self.by_project.items())}

    @classmethod
    def from_json(cls, data) -> Board:
        board = cls()
        for project, pins in (data or {}).items():
            board.by_project[project] = [dict(p) for p in pins]
        return board
