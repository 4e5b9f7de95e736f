"""Inputs of a replay: trajectory sources, task selection, the input manifest, and the
synthetic workload as tasks.

**Sources.** Each ``SOURCE`` argument is one source (an agent's folder, a file), or a
folder holding several (``data/trajectories/``), which is expanded into its recognised
subfolders; every source is its own cohort, and its repositories are its series (two
agents working on the same repository do not share a memory).

**Selection** (paper §4.2), per source: keep the first attempt at each task id; rank
repositories by their number of distinct tasks (ties by name); ``--repos N`` keeps the N
largest; ``--split dev|test`` then alternates over that ranking (largest dev, next test,
next dev, ...); ``--max-tasks-per-repo N`` keeps each repository's N earliest tasks by PR
number. Series come out sorted by repository name, tasks by (PR number, id).

**Manifest.** Every regular file under a source's root (the root itself for a file
source) with its size and SHA-256: a superset of what the loaders read (they read side
files such as ``index.tsv`` too), so nothing a result depends on is missing from it.

**Synthetic.** ``brainbox.workload.generate`` at any size: a task is a session (its
prompt is the description), a series is a project; gold reads are the files of read and
search events, gold edits those of edit events (a run event's test file is run, not read:
the loaders' rule, :mod:`brainbox.eval.loaders.base`).
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path

from brainbox import BrainboxError
from brainbox.eval.loaders import Task, TrajectoryWarning, detect, load

FORMAT_ALIASES = {"claude-code": "claude_code", "mini-swe-agent": "mini_swe_agent",
                  "swe-agent": "swe_agent", "openhands": "openhands", "nebius": "nebius",
                  "auto": "auto"}


def expand_sources(paths, fmt: str = "auto") -> list[tuple[str, Path]]:
    """[(label, path)]: container folders expanded, labels unique (folder or file name)."""
    out: list[tuple[str, Path]] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise BrainboxError(f"no such source: {raw}")
        subs = [p]
        if fmt == "auto" and detect(p) is None and p.is_dir():
            subs = [d for d in sorted(p.iterdir()) if d.is_dir() and detect(d) is not None]
            if not subs:
                raise BrainboxError(f"cannot tell the trajectory format of {raw}; "
                                    "pass --format")
        for s in subs:
            label, n = s.name, 2
            while label in {lab for lab, _ in out}:
                label, n = f"{s.name}-{n}", n + 1
            out.append((label, s))
    return out


def load_source(path, fmt: str = "auto") -> tuple[list[Task], list[str]]:
    """All tasks of one source and the loader's warnings (as text)."""
    fmt = FORMAT_ALIASES.get(fmt, fmt)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TrajectoryWarning)
        try:
            tasks = list(load(path, format=fmt))
        except (ValueError, FileNotFoundError) as exc:
            raise BrainboxError(str(exc)) from exc
    return tasks, [str(w.message) for w in caught if issubclass(w.category, TrajectoryWarning)]


def load_input(label: str, path, fmt: str = "auto", cache: bool = True):
    """One source as the replay reads it: ``(tasks, warnings, manifest, cache stats)``.
    With ``cache``, the tasks come from the input cache (:mod:`brainbox.eval.cache`) when
    every input file is unchanged, and a fresh load is stored there; the manifest's
    hashes are the cache's keys too (each file is hashed once). Stats: ``{"hit": entries
    read, "written": entries written, "corrupt": entries ignored}`` (None without)."""
    root = Path(path)
    files = _files(root)
    fps = {rel: [st.st_size, st.st_mtime_ns, sha256(p)]
           for rel, p, st in ((rel, p, p.stat()) for rel, p in files)}
    man = {"source": label, "root": str(root),
           "files": [{"path": rel, "size": fp[0], "sha256": fp[2]} for rel, fp in fps.items()]}
    if not cache:
        tasks, warns = load_source(root, fmt)
        return tasks, warns, man, None
    from brainbox.eval.cache import SourceCache

    sc = SourceCache(root, FORMAT_ALIASES.get(fmt, fmt), fps)
    got = sc.read()
    if got is None:
        got = load_source(root, fmt)
        try:
            sc.write(*got)
        except OSError as exc:  # a full or read-only disk costs the cache, not the replay
            got[1].append(f"replay cache not written ({exc})")
    return got[0], got[1], man, sc.stats


def select(tasks, *, repos: int | None = None, max_tasks_per_repo: int | None = None,
           split: str = "all") -> list[tuple[str, list[Task]]]:
    """[(repo, tasks in order)] sorted by repo (see the module docstring)."""
    by_repo: dict[str, dict[str, Task]] = {}
    for t in tasks:
        by_repo.setdefault(t.repo, {}).setdefault(t.id, t)
    ranked = sorted(by_repo, key=lambda r: (-len(by_repo[r]), r))
    if repos:
        ranked = ranked[:repos]
    if split == "dev":
        ranked = ranked[0::2]
    elif split == "test":
        ranked = ranked[1::2]
    elif split != "all":
        raise BrainboxError(f"unknown split {split!r}; expected dev, test or all")
    out = []
    for r in sorted(ranked):
        ts = sorted(by_repo[r].values(), key=lambda t: (t.order, t.id))
        if max_tasks_per_repo:
            ts = ts[:max_tasks_per_repo]
        out.append((r, ts))
    return out


def sha256(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def _files(root: Path) -> list[tuple[str, Path]]:
    """[(path relative to root, path)] of every regular file under root, sorted."""
    if root.is_file():
        return [(root.name, root)]
    files = []
    for dirpath, dirnames, names in os.walk(root):
        dirnames.sort()
        for n in sorted(names):
            p = Path(dirpath) / n
            if p.is_file():
                files.append((p.relative_to(root).as_posix(), p))
    files.sort()
    return files


def manifest(label: str, root: Path) -> dict:
    """{"source", "root", "files": [{"path", "size", "sha256"}]} (paths relative to root)."""
    root = Path(root)
    return {"source": label, "root": str(root),
            "files": [{"path": rel, "size": p.stat().st_size, "sha256": sha256(p)}
                      for rel, p in _files(root)]}


def synthetic_spec(events: int, projects: int = 1, seed: int = 7,
                   shape: str = "uniform") -> dict:
    """Generator settings for ``--synthetic``. ``uniform`` (the sizes of
    benchmarks/bench_engine.py): equal projects, a file per 200 of a project's events (so
    ``--synthetic 1000000`` is one repository of 5,000 files, and with 10 projects ten of
    500). ``catalogue`` (``--projects P``, P > 1): :func:`brainbox.workload.catalogue`,
    heavy-tailed repository sizes; ``sizes`` then holds each repository's events."""
    if shape == "catalogue" and projects > 1:
        from brainbox.workload import catalogue_sizes

        try:
            sizes = catalogue_sizes(int(events), int(projects), int(seed))
        except ValueError as exc:
            raise BrainboxError(str(exc)) from None
        return {"events": int(events), "projects": int(projects), "seed": int(seed),
                "shape": "catalogue", "sizes": sizes}
    per_project = events // max(int(projects), 1)
    return {"events": int(events), "files": max(60, per_project // 200),
            "sessions": max(10, events // 150), "projects": int(projects), "seed": int(seed)}


def _synthetic_task(evs: list[dict]) -> Task:
    first = evs[0]
    desc = first.get("prompt") if first.get("kind") == "prompt" else ""
    body = evs[1:] if first.get("kind") == "prompt" else evs
    read, edit = set(), set()
    for e in body:
        target = edit if e.get("action") == "edit" else read
        if e.get("action") in ("read", "search", "edit"):
            target.update(e.get("files") or ())
    root = first["project"]
    return Task(id=first["session"], repo=root, order=int(first["session"].lstrip("s")),
                description=desc or "", events=body, gold_read=read, gold_edit=edit,
                source="synthetic", path="", project=root)


def synthetic_tasks(spec: dict, project: int | None = None):
    """Tasks (sessions) of the synthetic workload, lazily; only ``project`` if given."""
    from brainbox.workload import catalogue, generate

    if spec.get("shape") == "catalogue":
        raws = catalogue(spec["events"], spec["projects"], spec["seed"], only=project)
    else:
        raws = generate(events=spec["events"], files=spec["files"], sessions=spec["sessions"],
                        projects=spec["projects"], seed=spec["seed"], only=project)
    cur, evs = None, []
    for raw in raws:
        if raw["session"] != cur:
            if evs:
                yield _synthetic_task(evs)
            cur, evs = raw["session"], []
        evs.append(raw)
    if evs:
        yield _synthetic_task(evs)
