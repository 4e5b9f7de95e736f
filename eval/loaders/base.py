"""The common shape of a loaded trajectory, and the bookkeeping every loader shares.

A loader reads one agent's trajectory format and yields :class:`Task` objects: the task
(SWE-bench-style id, repository, PR number, issue text) and its steps as *raw record dicts*,
the schema ``brainbox record --jsonl`` accepts (``session``, ``cwd``, ``project``, ``tool``,
``files``, ``error``, ``exit_code``, ``at``, ``prompt``, ``command``, ``args``, ``kind``,
``action``, and ``shown``: the text of files the step's result showed, see
:mod:`.shown`); ``brainbox.events.normalize()`` turns them into stored events. Every event
carries every key (``None`` when unknown), so consumers need no ``.get``.

Paths. Each loader maps the agent's paths into one in-container project root (``/testbed``,
``/workspace/astropy__astropy__5.0``, ``/fasterxml__jackson-databind``) and emits absolute
paths under it; paths outside the root (scratch files in ``/tmp``, ``/workspace``, the
benchmark harness's own files) are dropped here already, so an event's ``files`` are always
inside ``project``.

File facts. Each file of a step has its own *fact*, apart from the event's single
``action`` (a shell step ``cp a b`` reads ``a`` and creates ``b``; the event's action is
``edit``): ``read`` (also a search that names the file: ``grep pat f.py``,
``search_file``), ``edit`` (an in-place change: ``Edit``, ``str_replace``, ``insert``,
SWE-agent ``edit``, ``sed -i``, ``>>``, ``patch``), ``create`` (a whole-file write of the
path: Claude Code ``Write``, the editors' ``create``, ``>``, ``cat <<EOF > f``, ``tee``,
``cp``/``mv``/``install`` targets, ``touch``) or ``run`` (``python x.py``, ``bash x.sh``,
``./x.sh``, the script and test files given to ``pytest`` or ``tests/runtests.py``).

Gold sets. ``gold_read`` / ``gold_edit`` are project-relative paths the task read /
changed: ``read`` goes to ``gold_read``, ``edit`` and ``create`` to ``gold_edit``. A ``run``
adds to neither: running is not reading (counted as a read, ``python tests/runtests.py``
made a Django-style repository's test runner read gold in most of its tasks); the file
stays in the event's ``files``, so it is still a touch the memory learns from and a next
file (P2) to predict. A test runner's argument is a file only if it has a path separator
or a source extension, or a file of that exact path was already touched in the task
(``admin_views.tests.Foo`` and ``tests.test_x.TestY`` are test labels, not files; see
:mod:`brainbox.shell`). A file tool that failed (``Read`` of a missing file, an ``Edit``
whose string was not found, an editor ``ERROR:``) adds nothing; a failed shell step drops
only the files its error text names as missing ("No such file", "can't read"), because a
compound command's exit status belongs to its last part.

Created. ``created`` holds the files whose FIRST touch in the task (of any fact, failed
steps aside) is a ``create``: the agent wrote the whole file before it read, ran or edited
it, as it writes scratch scripts (``reproduce_issue.py``). A repository file whose first
touch is a ``str_replace`` or ``sed -i`` is not created (it had to exist to be edited in
place), nor is a file read first and rewritten with ``Write``. Before issue 15 the rule was
"first touch is any edit", which conflated the two.

Measured on the four dev sources (issue 15): gold_read went from 2,901 distinct (task,
file) pairs to 1,395; of the 1,506 that left, 1,213 are scripts the agent wrote and then
ran, 279 test files only given to a test runner, 14 other scripts run (``python setup.py
...``, sympy's ``bin/test``). gold_edit did not change (3,245). created went from 1,627
to 1,572: the 55 that left have an in-place first touch (``sed -i`` 9, ``git checkout``
14, ``rm`` 26, an SWE-agent ``edit``, a ``>>``). No event's files changed, so P2 and P3
did not; pooled P1-read, now over the 231 tasks that read a file (352 before), fell for
every method that ranked the agent's own scripts (brainbox 0.582 -> 0.318, frequency
0.628 -> 0.307, co-session 0.589 -> 0.162; BM25 0.386 -> 0.370).

Bad input never stops a load: a task whose file is truncated, not JSON, or lacks a field
is skipped with a :class:`TrajectoryWarning` naming the file (and line, when there is one).
"""

from __future__ import annotations

import json
import posixpath
import re
import warnings
from dataclasses import dataclass, field
from datetime import UTC, datetime

from brainbox import shell as _shell
from brainbox.eval.loaders.shown import shell_views

__all__ = [
    "Task",
    "TaskBuilder",
    "TrajectoryWarning",
    "clip",
    "parse_task_id",
    "read_json",
    "to_unix",
    "warn_skip",
]

# The version of what the loaders make of a trajectory: bump it when a loader's output
# changes (the replay's input cache, brainbox.eval.cache, keys its entries by it; it also
# hashes the loaders' code, so a forgotten bump still invalidates).
NORMALIZER_VERSION = 1
MAX_COMMAND = 4000  # characters of a command kept (heredoc bodies make some 20k+)
MAX_ERROR = 2000  # characters of error text kept: the tail, where the exception is
MAX_ARGS = 500

_ID = re.compile(r"^(?P<owner>.+?)__(?P<name>.+)-(?P<pr>\d+)$")


class TrajectoryWarning(UserWarning):
    """A task (or line) of a trajectory file was skipped."""


def warn_skip(path, reason: str, line: int | None = None) -> None:
    where = f"{path}:{line}" if line is not None else f"{path}"
    warnings.warn(f"{where}: {reason}", TrajectoryWarning, stacklevel=3)


def read_json(path, what: str = "trajectory"):
    """The JSON document in the file ``path``; None, after a :func:`warn_skip` naming the
    file (and the line of a syntax error), when it cannot be read or is not JSON."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        warn_skip(
            path,
            f"unreadable {what} ({exc.__class__.__name__}: {exc}); task skipped",
            getattr(exc, "lineno", None),
        )
        return None


def parse_task_id(task_id: str) -> tuple[str, int]:
    """``'sympy__sympy-20590'`` -> ``('sympy/sympy', 20590)``; raises ``ValueError``."""
    m = _ID.match(task_id or "")
    if not m:
        raise ValueError(f"not a SWE-bench-style task id: {task_id!r}")
    return f"{m['owner']}/{m['name']}", int(m["pr"])


def task_sort_key(task_id: str) -> tuple:
    """(repo, PR number, id): the time order of SWE-bench-style ids; others sort last."""
    try:
        repo, order = parse_task_id(task_id)
        return (repo, order, task_id)
    except ValueError:
        return ("~", 0, task_id)


def to_unix(ts) -> float | None:
    """ISO 8601 string or number -> unix seconds (float); ``None`` when unreadable."""
    if ts is None or isinstance(ts, bool):
        return None
    if isinstance(ts, (int, float)):
        return float(ts)
    try:
        s = str(ts).strip()
        if s.endswith("Z"):
            s = s[:-1] + "+00:00"
        dt = datetime.fromisoformat(s)
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return dt.timestamp()
    except (ValueError, TypeError):
        return None


def clip(text, limit: int, tail: bool = False) -> str | None:
    if text is None:
        return None
    text = str(text)
    if len(text) <= limit:
        return text
    return ("…" + text[-(limit - 1) :]) if tail else (text[: limit - 1] + "…")


@dataclass
class Task:
    """One agent run on one task, ready for replay.

    ``events`` are raw record dicts in order, without the task-description prompt (the
    replay adds it). ``gold_read``/``gold_edit``/``created`` are project-relative paths.
    ``meta`` holds format-specific extras (exit status, resolved flag, model, ...).
    """

    id: str
    repo: str
    order: int
    description: str
    events: list[dict]
    gold_read: set[str]
    gold_edit: set[str]
    source: str
    path: str
    project: str = ""
    created: set[str] = field(default_factory=set)
    meta: dict = field(default_factory=dict)

    @property
    def tool_events(self) -> list[dict]:
        return [e for e in self.events if e["kind"] == "tool"]


_MISSING = re.compile(
    r"No such file|can't read|cannot open|cannot access|not found|does not exist", re.IGNORECASE
)


class TaskBuilder:
    """Collects a task's events and gold sets while a loader walks its steps.

    ``aliases`` maps other spellings of the project root to it (OpenHands mounts the same
    checkout as ``/testbed`` and ``/workspace/<repo>__<version>``).
    """

    def __init__(self, session: str, project: str, aliases: tuple[str, ...] = ()):
        self.session = session
        self.project = project.rstrip("/") or "/"
        self.aliases = tuple(a.rstrip("/") for a in aliases if a and a.rstrip("/") != self.project)
        self.events: list[dict] = []
        self.gold_read: set[str] = set()
        self.gold_edit: set[str] = set()
        self.created: set[str] = set()
        self._touched: set[str] = set()  # project-relative paths touched (failed steps aside)
        self._scripts: dict[str, str] = {}  # absolute path -> text the agent wrote into it

    # -- paths
    def absolute(self, path: str, cwd: str | None = None) -> str | None:
        """``path`` as an absolute path under the project root, or ``None`` if outside."""
        if not path or not isinstance(path, str):
            return None
        p = path.strip()
        if p.startswith("~"):
            return None
        if not p.startswith("/"):
            p = posixpath.join(cwd or self.project, p)
        p = posixpath.normpath(p)
        if p.startswith("//"):
            p = "/" + p.lstrip("/")
        for a in self.aliases:
            if p == a or p.startswith(a + "/"):
                p = self.project + p[len(a) :]
                break
        return p if self.rel(p) else None

    def rel(self, abs_path: str) -> str | None:
        root = self.project
        if root == "/":
            return abs_path.lstrip("/") or None
        if abs_path.startswith(root + "/") and len(abs_path) > len(root) + 1:
            return abs_path[len(root) + 1 :]
        return None

    def map_cwd(self, cwd: str | None) -> str:
        if not cwd:
            return self.project
        p = posixpath.normpath(cwd)
        for a in self.aliases:
            if p == a or p.startswith(a + "/"):
                return self.project + p[len(a) :]
        return p

    # -- events
    def tool(
        self,
        tool: str,
        *,
        files=(),
        action: str = "other",
        cwd: str | None = None,
        at=None,
        error: str | None = None,
        exit_code: int | None = None,
        command: str | None = None,
        args: str | None = None,
        file_tool: bool = False,
    ) -> dict:
        """Record one tool call. ``files`` are ``(path, fact)`` pairs (absolute, or
        relative to ``cwd``; facts ``read | edit | create | run``, see the module
        docstring); outside paths are dropped. ``file_tool``: the step is a dedicated file
        tool, so an error means none of its files were touched."""
        cwd = self.map_cwd(cwd)
        out, seen = [], set()
        for path, fact in files:
            ap = self.absolute(path, cwd)
            if ap is None:
                continue
            rel = self.rel(ap)
            if ap not in seen:
                seen.add(ap)
                out.append(ap)
            failed = bool(error) and (
                file_tool
                or (posixpath.basename(rel) in error and _MISSING.search(error) is not None)
            )
            if failed:
                continue
            if rel not in self._touched:
                self._touched.add(rel)
                if fact == "create":
                    self.created.add(rel)
            if fact in ("edit", "create"):
                self.gold_edit.add(rel)
            elif fact in ("read", "search"):
                self.gold_read.add(rel)
        ev = {
            "session": self.session,
            "cwd": cwd,
            "project": self.project,
            "tool": tool,
            "files": out,
            "error": clip(error, MAX_ERROR, tail=True) if error else None,
            "exit_code": exit_code,
            "at": at,
            "prompt": None,
            "command": clip(command, MAX_COMMAND),
            "args": clip(args, MAX_ARGS) if args else None,
            "kind": "tool",
            "action": action,
            "shown": None,
        }
        self.events.append(ev)
        return ev

    def show(self, ev: dict, path, start: int, text, whole: bool = False,
             cwd: str | None = None) -> None:
        """Record on ``ev`` (a step that succeeded) the ``text`` its result showed of
        ``path`` from line ``start`` (:mod:`.shown`); a path outside the project, or no
        text, records nothing."""
        if ev.get("error") or not isinstance(text, str) or not text.strip():
            return
        ap = self.absolute(path, self.map_cwd(cwd)) if isinstance(path, str) else None
        if ap is not None:
            ev["shown"] = {**(ev.get("shown") or {}), ap: [int(start), text, bool(whole)]}

    def note_file(self, path: str, text, cwd: str | None = None) -> None:
        """Remember the text the agent wrote into ``path`` (a Write/create of a script), so
        running it later (``python fix.py``) adds the files the script opens."""
        ap = posixpath.normpath(posixpath.join(self.map_cwd(cwd), path)) if path else None
        if ap and isinstance(text, str) and ap.endswith(".py"):
            self._scripts[ap] = text

    def shell(
        self,
        command: str,
        *,
        cwd: str | None = None,
        at=None,
        error: str | None = None,
        exit_code: int | None = None,
        path_map=None,
        shown: str | None = None,
        output: str | None = None,
    ) -> dict:
        """Record one shell step through :func:`brainbox.shell.describe`. ``path_map``
        rewrites each resolved path (the Claude Code loader collapses nested checkouts);
        ``shown`` is the command text to record when it differs from the parsed one;
        ``output``, the step's output when the format has it: a plain view of a file
        (``cat``, ``sed -n``, ``nl``, ...: :func:`.shown.shell_views`) is recorded on the
        event (:meth:`show`) when the step succeeded.
        Scripts written by heredoc are remembered; running a remembered Python script adds
        the files it opens (agents often patch files that way). A test-runner argument
        that is not plainly a file is one only if that path was touched earlier in the task
        (see the module docstring)."""
        cwd = self.map_cwd(cwd)
        command = command if isinstance(command, str) else ""
        pm = path_map or (lambda p: p)
        d = _shell.describe(command, cwd, seen=lambda p: self._was_touched(pm(p), cwd))
        files = [(pm(p), a) for p, a in d["files"]]
        for path, body in d["writes"]:
            self.note_file(pm(path), body)
        for script, here in d["runs"]:
            body = self._scripts.get(pm(script))
            if body:
                base = pm(here) if here else cwd
                files += [
                    (pm(posixpath.normpath(posixpath.join(base, p))), a)
                    for p, a in _shell.python_files(body)
                ]
        action = d["action"]
        if action != "edit" and any(a in ("edit", "create") for _, a in files):
            action = "edit"
        ev = self.tool(
            d["tool"],
            files=files,
            action=action,
            cwd=cwd,
            at=at,
            error=error,
            exit_code=exit_code,
            command=shown if shown is not None else command,
            args=d["terms"],
        )
        if output and exit_code in (0, None) and not error:
            for path, start, text, whole in shell_views(command, output, cwd):
                self.show(ev, pm(path), start, text, whole)
        return ev

    def _was_touched(self, path: str, cwd: str) -> bool:
        ap = self.absolute(path, cwd)
        return ap is not None and self.rel(ap) in self._touched

    def prompt(self, text: str, *, at=None, cwd: str | None = None) -> dict:
        ev = {
            "session": self.session,
            "cwd": self.map_cwd(cwd),
            "project": self.project,
            "tool": None,
            "files": [],
            "error": None,
            "exit_code": None,
            "at": at,
            "prompt": text,
            "command": None,
            "args": None,
            "kind": "prompt",
            "action": None,
            "shown": None,
        }
        self.events.append(ev)
        return ev

    def task(self, task_id: str, description: str, source: str, path, meta=None) -> Task:
        repo, order = parse_task_id(task_id)
        return Task(
            id=task_id,
            repo=repo,
            order=order,
            description=description,
            events=self.events,
            gold_read=set(self.gold_read),
            gold_edit=set(self.gold_edit),
            source=source,
            path=str(path),
            project=self.project,
            created=set(self.created),
            meta=dict(meta or {}),
        )
