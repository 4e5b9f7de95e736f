"""What `forget PATH` deletes, decided before anything is deleted. Standard library only:
`forget --dry-run` runs this without numpy (it is a fast command).

Choices:
- An empty or blank PATH is refused (`ForgetRefused`, a usage error): `forget "$FILE"` with
  FILE unset used to delete every event of the project.
- An absolute PATH belongs to its own project whatever the working folder: its
  repository (`brainbox.identity`, relative to its worktree's root) when memory holds
  that, else the stored project that holds it (the deepest), else its repository. A relative PATH is
  taken from `cwd` (default: the process's folder), like `record --file`; with `--project`
  given and `cwd` outside it, it is taken as project-relative.
- PATH is a file when the memory holds it; a folder when it is a folder on disk or the
  memory holds files under it (`.` at the root: the whole project, prompts included); a
  glob when it has `*`, `?` or `[` (matched by `fnmatch` against project-relative paths,
  so `*` also crosses `/`). A folder or a glob needs `recursive`.
- An event goes when it touches one of the chosen files, or its command, arguments, error
  or prompt text contain one of them (or the folder's `path/`): what mentions a file is forgotten with
  it. Nothing to delete is `NotInMemory` (exit 1, like `explain`).
- The code index (`brainbox index`) holds file contents (chunk terms, symbols, vectors):
  the chosen files' entries go too (`indexed`: file -> chunks), by the same rule, and a
  file the index holds counts as a file even when no event names it.
- A file the checkpoint of `consolidate` holds is refused (`brainbox.retention`): its old
  events live on only inside the checkpoint's arrays.
- Deleting goes through `storage.chain.erase`, which records the gaps for `audit`.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
from dataclasses import dataclass, field

from brainbox import BrainboxError
from brainbox.events import relative_path
from brainbox.identity import identify
from brainbox.storage import queries
from brainbox.storage.codeindex import file_chunk_counts

GLOB_CHARS = "*?["


class ForgetRefused(BrainboxError):
    """Input `forget` will not act on (empty, or a folder/glob without recursive): exit 2."""


class NotInMemory(BrainboxError):
    """Nothing in memory mentions the path: exit 1."""


@dataclass
class Plan:
    path: str  # project-relative path or pattern ("" for the whole project)
    project: str
    kind: str  # "file", "folder", "glob", "project" or "text" (mentioned in text only)
    files: dict[str, int] = field(default_factory=dict)  # file -> events touching it
    event_ids: list[int] = field(default_factory=list)
    indexed: dict[str, int] = field(default_factory=dict)  # code index: file -> chunks

    def as_dict(self) -> dict:
        return {"path": self.path, "project": self.project, "kind": self.kind,
                "files": [{"path": f, "events": n} for f, n in sorted(self.files.items())],
                "events": len(self.event_ids), "indexed_files": len(self.indexed),
                "indexed_chunks": sum(self.indexed.values())}


def count(n: int, word: str) -> str:
    """`1 file`, `2 files`."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def _owner(projects: list[str], full: str) -> str | None:
    """The deepest stored project that holds `full`."""
    inside = [p for p in projects if full == p or full.startswith(p.rstrip("/") + "/")]
    return max(inside, key=len) if inside else None


def resolve(conn, path: str, cwd: str | None = None,
            project: str | None = None) -> tuple[str, str, str]:
    """(project, project-relative path or "" for the root, absolute path) of PATH."""
    if not isinstance(path, str) or not path.strip():
        raise ForgetRefused("forget: PATH is empty; name a file (or a folder with --recursive)")
    path = path.strip()
    cwd = os.path.abspath(cwd or os.getcwd())
    if project:
        project = posixpath.normpath(os.path.abspath(os.path.expanduser(project)))
    absolute = os.path.isabs(path) or path.startswith("~")
    if absolute:
        full = posixpath.normpath(os.path.expanduser(path))
    elif project and not (cwd == project or cwd.startswith(project.rstrip("/") + "/")):
        full = posixpath.normpath(posixpath.join(project, path))
    else:
        full = posixpath.normpath(posixpath.join(cwd, path))
    root = project
    if project is None:
        # the repository the path lies in (its worktree's root anchors the path, issue
        # 17), when memory holds it; else the deepest stored project holding the path
        start = full if os.path.isdir(full) else posixpath.dirname(full)
        key, worktree = identify(start if absolute else cwd)
        stored = queries.stored_projects(conn)
        project = key if key in stored else _owner(stored, full)
        if project is None or project == key:
            project, root = key, worktree
        else:
            root = project
    if full in (posixpath.normpath(project), posixpath.normpath(root)):
        return project, "", full
    rel = relative_path(full, root, root)
    if rel is None:
        raise BrainboxError(f"{path} is outside the project {project}")
    return project, rel, full


def plan(conn, path: str, *, cwd: str | None = None, project: str | None = None,
         recursive: bool = False) -> Plan:
    """What forgetting PATH deletes; raises ForgetRefused or NotInMemory instead."""
    project, rel, full = resolve(conn, path, cwd, project)
    files = queries.project_files(conn, project)
    code = file_chunk_counts(conn, project)
    if rel == "":
        out = Plan("", project, "project", files, queries.project_event_ids(conn, project),
                   code)
    elif any(c in rel for c in GLOB_CHARS):
        chosen = {f: n for f, n in files.items() if fnmatch.fnmatchcase(f, rel)}
        out = Plan(rel, project, "glob", chosen,
                   queries.events_mentioning(conn, project, chosen, chosen),
                   {f: n for f, n in code.items() if fnmatch.fnmatchcase(f, rel)})
    elif rel in files or rel in code:
        out = Plan(rel, project, "file", {rel: files[rel]} if rel in files else {},
                   queries.events_mentioning(conn, project, [rel], [rel]),
                   {rel: code[rel]} if rel in code else {})
    else:
        under = {f: n for f, n in files.items() if f.startswith(rel + "/")}
        code_under = {f: n for f, n in code.items() if f.startswith(rel + "/")}
        if under or code_under or os.path.isdir(full):
            out = Plan(rel, project, "folder", under,
                       queries.events_mentioning(conn, project, under, [*under, rel + "/"]),
                       code_under)
        else:
            out = Plan(rel, project, "text", {},
                       queries.events_mentioning(conn, project, [], [rel]))
    held = queries.checkpoint_keys(conn)
    if held and any((project, f) in held for f in [*out.files, rel]):
        raise BrainboxError(f"{rel or '.'} is folded into the checkpoint `consolidate` made "
                            "and cannot be taken out of it; nothing was deleted")
    if not out.event_ids and not out.indexed:
        raise NotInMemory(f"nothing in memory mentions {rel or '.'} (project {project})")
    if out.kind in ("folder", "glob", "project") and not recursive:
        what = "a folder" if out.kind != "glob" else "a glob"
        raise ForgetRefused(
            f"forget: {rel or '.'} is {what}: {count(len(out.files), 'file')}, "
            f"{count(len(out.event_ids), 'event')}; pass --recursive to forget them all (--dry-run lists them)")
    return out
