"""Open errors (issue 17): the error fingerprints of a project not yet followed by a
passing rerun, for the SessionStart block.

The state knew no such notion (an error is a resource shared by all projects, with
associations and counts, but nothing says it was fixed), so it is folded here from the
log, event by event (`State.encode` calls `observe` for each tool event, `State._special`
`resolve` for a resolve event), and saved with the state; `rebuild()` gives the same.

Choices:
- An error is open in a project from a tool event of that project with its fingerprint,
  until a *passing rerun*: a later tool event of the project with the same tool key (a
  shell command's is its program, `Bash:pytest`) and no error, its exit code 0 or none.
  "The same program" is the state's own key: `pytest tests/a.py` passing closes a
  `pytest tests/b.py` failure too. A `resolve` of the fingerprint in the project (CLI or
  MCP) closes it as well.
- Per fingerprint: the tool it last failed in and how many times it failed since it was
  last closed. Kept newest last (a failure moves it to the end); at most
  `MAX_PER_PROJECT` per project, the oldest dropped.
- A state saved before this module knew no open errors: they appear for failures folded
  after it, and for all after a `brainbox rebuild`.
"""

from __future__ import annotations

MAX_PER_PROJECT = 32


class OpenErrors:
    def __init__(self):
        self.by_project: dict[str, dict[str, list]] = {}  # fp -> [tool, count], newest last

    def observe(self, project: str, tool: str, error_fp: str | None, exit_code) -> None:
        """One tool event: a failure opens (or repeats) its fingerprint, a pass of the same
        tool closes every fingerprint that tool left open."""
        if error_fp:
            errs = self.by_project.setdefault(project, {})
            entry = errs.pop(error_fp, None) or [tool, 0]
            entry[0], entry[1] = tool, entry[1] + 1
            errs[error_fp] = entry
            if len(errs) > MAX_PER_PROJECT:
                del errs[next(iter(errs))]
            return
        errs = self.by_project.get(project)
        if errs and exit_code in (None, 0):
            for fp in [fp for fp, (t, _) in errs.items() if t == tool]:
                del errs[fp]
            if not errs:
                del self.by_project[project]

    def resolve(self, project: str, error_fp: str) -> None:
        errs = self.by_project.get(project)
        if errs and errs.pop(error_fp, None) is not None and not errs:
            del self.by_project[project]

    def newest(self, project: str, k: int) -> list[dict]:
        """The project's `k` most recently failed open errors, newest first."""
        errs = list(self.by_project.get(project, {}).items())[::-1][:k]
        return [{"fingerprint": fp, "tool": tool, "count": count}
                for fp, (tool, count) in errs]

    def to_json(self) -> dict:
        return {p: [[fp, *e] for fp, e in errs.items()]
                for p, errs in sorted(self.by_project.items())}

    @classmethod
    def from_json(cls, data) -> OpenErrors:
        out = cls()
        for project, rows in (data or {}).items():
            out.by_project[project] = {fp: [tool, int(count)] for fp, tool, count in rows}
        return out
