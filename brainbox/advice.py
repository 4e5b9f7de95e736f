"""Advice at the moment of action (issue 17, item 3): what memory observed about the file
an agent is about to edit, or the command it is about to run (the PreToolUse hook).

Three answers, each a function of the log:

- **The files expected next after X** (:func:`next_edits`): the session's trail (the
  files this session touched, the last first, ``TRAIL_DECAY`` per place) plus
  ``GRAPH_GAIN`` times the engine's association weight from X (:func:`co_edits`:
  ``State.out_edges``, the Hebbian weights of files accessed near X in this session and
  earlier ones, a file the project has *edited* counting ``EDITED_BOOST`` times). Shown
  only when a file of the list has an association weight of at least ``MIN_WEIGHT``: the
  advice speaks of history, and the trail alone is what the agent just did. On the
  development replay (``benchmarks/measure_advice.py``, 1,364 probes; the next file the
  agent edits) the ranking reaches MRR@10 0.4956, above the trail alone (0.4583, paired
  +0.037 [+0.022, +0.054]), co-session (0.2409) and co-edit counting (0.1953); the graph
  alone 0.2485. As shown (3 files, silent without support): 0.2681, against co-session
  0.2121 (+0.056 [+0.028, +0.087]) and co-edit counting 0.1727 (+0.095 [+0.067,
  +0.125]); the trail's first 3 reach 0.4143 because they speak at every probe, and
  0.2290 where the advice speaks (+0.039 [+0.022, +0.058] for the advice).
- **Errors after edits of X** (:meth:`Advice.errors_after`): the fingerprints of the
  first command a session ran after editing X, counted over the runs that followed an
  edit of X; one shown only from ``MIN_ERROR_COUNT`` occurrences.
- **A command's fix** (:meth:`Advice.command`): a command is its tool key and its target
  (``Bash:pytest`` and the files it names: :func:`command_key`). When it failed with a
  fingerprint and later passed, the files the project edited in between are its fix (the
  seed of DESIGN §4.9 procedures); while it has not passed again, its open failure.

What is folded here (``State.encode`` calls :meth:`Advice.observe` for every tool event;
saved with the state, and ``rebuild()`` gives the same):

- every tool event with files moves them to the end of its session's trail (at most
  ``MAX_TRAIL`` files, ``MAX_SESSIONS`` sessions);
- an edit (action ``edit``, no error) adds its files to the project's edited files, to
  the session's edits since its last run, and to every failing command of the project;
- a run (action ``run``) closes the session's edits since its last run (each counts one
  run after it, and its error when it failed), then opens, repeats or closes the
  command's failure: a pass (exit code 0 or none, no error) after edits records the fix.

Bounds, so the state stays small: ``MAX_SESSIONS`` sessions with pending edits (oldest
dropped), ``MAX_FAILING`` failing commands and ``MAX_FIXES`` fixes per project,
``MAX_FILES`` files per failing command and ``MAX_FPS`` fingerprints per file.

Standard library only at import (numpy only inside :func:`co_edits`, which reads arrays).
"""

from __future__ import annotations

MIN_ERROR_COUNT = 2  # an error is advice once it followed edits of X this often
MIN_WEIGHT = 0.05  # a co-edit is advice from this association weight (recall's prune floor)
EDITED_BOOST = 2.0  # an edited file's weight counts this many times (measure_advice.py)
MAX_SESSIONS = 256
MAX_FAILING = 32
MAX_FIXES = 256
MAX_FILES = 20
MAX_FPS = 8
MAX_TRAIL = 32  # files of a session's trail kept, newest last
# The next-edit ranking (`next_edits`): a file at position r of the session's trail (0: the
# file touched last) scores TRAIL_DECAY**r, plus GRAPH_GAIN times its association weight
# from X (an edited file's weight counting EDITED_BOOST times). Chosen on the development
# replay, leave-one-repository-out (benchmarks/measure_advice.py --loro).
TRAIL_DECAY = 0.9
GRAPH_GAIN = 1.0


def command_key(tool: str, files) -> str:
    """A command's identity for advice: its tool key and its target files, sorted."""
    return f"{tool}|{','.join(sorted(set(files or ())))}"


def _bounded_put(d: dict, key, value, limit: int) -> None:
    """`d[key] = value`, newest last, the oldest dropped beyond `limit`."""
    d.pop(key, None)
    d[key] = value
    while len(d) > limit:
        del d[next(iter(d))]


class Advice:
    def __init__(self):
        self.edited: dict[str, dict[str, int]] = {}  # project -> {path: edits}
        self.pending: dict[str, list] = {}  # session -> [project, [paths edited since a run]]
        self.after: dict[str, dict[str, list]] = {}  # project -> {path: [runs, {fp: n}]}
        self.failing: dict[str, dict[str, list]] = {}  # project -> {key: [fp, n, [paths]]}
        self.fixes: dict[str, dict[str, list]] = {}  # project -> {key: [fp, [paths], n]}
        self.trail: dict[str, list] = {}  # session -> [project, [paths touched, newest last]]

    def observe(self, session: str, project: str, tool: str, action, files, error_fp,
                exit_code) -> None:
        """One tool event (module docstring)."""
        files = list(files or ())
        if files:
            self._touch(session, project, files)
        if action == "edit":
            if error_fp or not files:
                return None  # a failed edit changed nothing
            counts = self.edited.setdefault(project, {})
            for f in files:
                counts[f] = counts.get(f, 0) + 1
            pend = self.pending.get(session)
            if pend is None or pend[0] != project:
                pend = [project, []]
            for f in files:
                if f not in pend[1]:
                    pend[1].append(f)
            _bounded_put(self.pending, session, pend, MAX_SESSIONS)
            for entry in self.failing.get(project, {}).values():
                for f in files:
                    if f not in entry[2] and len(entry[2]) < MAX_FILES:
                        entry[2].append(f)
            return None
        if action != "run":
            return None
        pend = self.pending.pop(session, None)
        if pend is not None and pend[0] == project:
            after = self.after.setdefault(project, {})
            for f in pend[1]:
                row = after.setdefault(f, [0, {}])
                row[0] += 1
                if error_fp:
                    fps = row[1]
                    _bounded_put(fps, error_fp, fps.get(error_fp, 0) + 1, MAX_FPS)
        key = command_key(tool, files)
        failing = self.failing.setdefault(project, {})
        if error_fp:
            old = failing.get(key)
            entry = [error_fp, (old[1] if old else 0) + 1, old[2] if old else []]
            _bounded_put(failing, key, entry, MAX_FAILING)
            return None
        entry = failing.pop(key, None)
        if not failing:
            del self.failing[project]
        if entry is not None and exit_code in (None, 0) and entry[2]:
            fixes = self.fixes.setdefault(project, {})
            times = fixes.get(key, [None, None, 0])[2] + 1
            _bounded_put(fixes, key, [entry[0], list(entry[2]), times], MAX_FIXES)
            return tool, sorted(set(files)), entry[0], list(entry[2])
        return None

    def _touch(self, session: str, project: str, files: list) -> None:
        entry = self.trail.get(session)
        if entry is None or entry[0] != project:
            entry = [project, []]
        trail = entry[1]
        for f in files:
            if f in trail:
                trail.remove(f)
            trail.append(f)
        del trail[:-MAX_TRAIL]
        _bounded_put(self.trail, session, entry, MAX_SESSIONS)

    # --- reading ------------------------------------------------------------------------

    def session_trail(self, session, project: str) -> list[str]:
        """The files `session` touched in `project`, the last touched first."""
        entry = self.trail.get(session) if session else None
        if entry is None or entry[0] != project:
            return []
        return entry[1][::-1]

    def is_edited(self, project: str, path: str) -> bool:
        return path in self.edited.get(project, ())

    def errors_after(self, project: str, path: str, k: int = 2,
                     floor: int = MIN_ERROR_COUNT) -> list[dict]:
        """The fingerprints that followed edits of `path` at least `floor` times, most
        often first (ties by fingerprint), each with the runs after edits of it."""
        row = self.after.get(project, {}).get(path)
        if row is None:
            return []
        runs, fps = row
        hits = sorted((fp for fp, n in fps.items() if n >= floor), key=lambda fp: (-fps[fp], fp))
        return [{"fingerprint": fp, "count": fps[fp], "runs": runs} for fp in hits[:k]]

    def command(self, project: str, key: str) -> dict | None:
        """What memory knows of a command (`command_key`): its last fix and its open
        failure, or None when neither exists."""
        fix = self.fixes.get(project, {}).get(key)
        fail = self.failing.get(project, {}).get(key)
        if fix is None and fail is None:
            return None
        return {"fix": None if fix is None else {"fingerprint": fix[0], "files": list(fix[1]),
                                                 "times": fix[2]},
                "failing": None if fail is None else {"fingerprint": fail[0],
                                                      "count": fail[1]}}

    # --- persistence --------------------------------------------------------------------

    def to_json(self) -> dict:
        return {"edited": self.edited, "pending": [[s, *p] for s, p in self.pending.items()],
                "after": self.after, "failing": self.failing, "fixes": self.fixes,
                "trail": [[s, *t] for s, t in self.trail.items()]}

    @classmethod
    def from_json(cls, data) -> Advice:
        out = cls()
        data = data or {}
        out.edited = {p: dict(v) for p, v in (data.get("edited") or {}).items()}
        out.pending = {s: [p, list(fs)] for s, p, fs in data.get("pending") or ()}
        out.after = {p: {f: [int(r[0]), dict(r[1])] for f, r in v.items()}
                     for p, v in (data.get("after") or {}).items()}
        out.failing = {p: {k: [e[0], int(e[1]), list(e[2])] for k, e in v.items()}
                       for p, v in (data.get("failing") or {}).items()}
        out.fixes = {p: {k: [e[0], list(e[1]), int(e[2])] for k, e in v.items()}
                     for p, v in (data.get("fixes") or {}).items()}
        out.trail = {s: [p, list(fs)] for s, p, fs in data.get("trail") or ()}
        return out


def co_edits(state, project: str, path: str, k: int = 5, floor: float = MIN_WEIGHT,
             boost: float = EDITED_BOOST) -> list[tuple[str, float]]:
    """The files of `path`'s project most strongly associated with it in `state`'s graph,
    those the project has edited counting `boost` times their weight (0: edited files
    only), at least `floor` weight: [(path, weight)], best first, ties by path."""
    from brainbox.kernels.codes import FILE

    fid = state.res_index.get((FILE, project, path))
    if fid is None:
        return []
    dst, w = state.out_edges(fid)
    edited = state.advice.edited.get(project, {})
    kinds, projects, keys = state.res_kind, state.res_project, state.res_key
    out = []
    for d, weight in zip(dst.tolist(), w.tolist()):
        if d == fid or weight < floor or kinds[d] != FILE or projects[d] != project:
            continue
        key = keys[d]
        if key in edited:
            out.append((key, float(weight), float(weight) * (boost or 1.0)))
        elif boost:
            out.append((key, float(weight), float(weight)))
    out.sort(key=lambda x: (-x[2], x[0]))
    return [(p, wt) for p, wt, _ in out[:k]]


def next_edits(state, project: str, path: str, session: str | None, k: int = 3,
               floor: float = MIN_WEIGHT, decay: float = TRAIL_DECAY,
               gain: float = GRAPH_GAIN) -> list[tuple[str, float, bool]]:
    """The files memory expects to be edited after `path`: the session's trail (the file
    touched last scoring 1, then `decay` per place) plus `gain` times the association
    weight from `path` (`co_edits`, no floor). [(path, score, supported)], best first,
    ties by path; `supported` when the file's association weight clears `floor` (what
    earlier sessions observed, beyond this one's trail). Empty when no file is supported:
    the advice is about history, and the trail alone is what the agent just did."""
    score: dict[str, float] = {}
    for f in state.advice.session_trail(session, project):
        if f != path:
            score[f] = decay ** len(score)
    graph = dict(co_edits(state, project, path, k=10**6, floor=0.0))
    edited = state.advice.edited.get(project, {})
    for f, w in graph.items():
        score[f] = score.get(f, 0.0) + gain * w * (EDITED_BOOST if f in edited else 1.0)
    ranked = sorted(score, key=lambda f: (-score[f], f))[:k]
    out = [(f, round(score[f], 6), graph.get(f, 0.0) >= floor) for f in ranked]
    return out if any(s for _, _, s in out) else []
