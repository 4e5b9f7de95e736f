"""The replay's input cache: a source's loaded tasks and their normalised events, stored
once per input file, so that a second ``brainbox replay`` of the same inputs reads them
instead of parsing and normalising the trajectories again (issue 20, "normalise once").

**What.** Per task, the loader's :class:`Task` (raw events, gold sets) and its events as
``brainbox.events.normalize`` makes them for a replay without ``--seen-snippets`` (one
JSON list, null where an event is skipped; ``brainbox.eval.replay.normalized`` decodes it
afresh for every replay, which sets each event's ``at``). The repo view
(``brainbox.eval.views``) changes some events of some tasks; it keeps the cached
normalisation and names the changed positions, which alone are normalised again
(:func:`carry_normalized`). With ``--seen-snippets`` the events are normalised live.

**Where.** ``$BRAINBOX_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/brainbox/replay`` or
``~/.cache/brainbox/replay``: never in the repository. Folders brainbox creates there are
0700, files 0600. ``brainbox replay --no-cache`` bypasses it, ``brainbox cache clear``
removes it (only the files this module names: an odd ``BRAINBOX_CACHE_DIR`` loses
nothing else), ``brainbox cache info`` shows it.

**Keys.** Each input file of a source (every regular file under its root, as the
manifest lists them) has a fingerprint: its relative path, size, ``mtime_ns`` and
SHA-256 (the manifest's hash, computed once for both). The tasks a loader made from a
file (``Task.path``) are one *entry*, keyed by the SHA-256 of that file's fingerprint,
the fingerprints of the source's side files (``index.tsv``, completion times: files no
task names, which every task of the source may depend on), the format asked for and
:func:`version` (``NORMALIZER_VERSION``, brainbox's version and a hash of the loaders'
code). A changed or touched input file therefore changes exactly its entry's key; a
changed side file, loader or version changes every key. A source's *index* (keyed by
all its fingerprints) lists its entries in the loader's order with the loader's
warnings. A hit reads the index and its entries and parses nothing; any miss (a file
changed, added or removed) loads the source again and writes the entries that are not
there yet.

**Format.** gzip'd JSON lines (level 1), one line per task: its fields, gold sets as
lists, ``meta`` and ``events`` as JSON texts (the loaders' events are JSON values, so
the round trip gives equal tasks). Pickle-free, so a planted cache file cannot run code;
standard library only. Parquet (pyarrow, the ``parquet`` extra, is installed here) was
measured and lost: an entry is one input file, mostly one task, and a Parquet file's
fixed cost dominates. Reading the 235 entries of mini-swe-agent (5.5 MiB): gzip JSON
lines 0.11 s, Arrow IPC zstd 0.23 s, Parquet zstd 0.32 s (``ParquetFile.read``; 0.66 s
through ``read_table``), against 2.8 s to parse the source. One file for the whole
development set (19.3 MB of task JSON) read in 0.57 s as Parquet and 0.58 s as gzip
JSON lines: no gain there either, as the events stay JSON text in both.

**Safety.** Entries are written to a temporary file in their folder and renamed into
place (no fsync: a killed run leaves a stray ``.tmp-*`` or nothing, never a half entry
under a key), so concurrent workers writing the same entry each write a whole one. An
entry that cannot be read (corrupt, truncated, wrong shape) is ignored: the source is
loaded again and the entry rewritten.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
from pathlib import Path

from brainbox.eval.loaders.base import NORMALIZER_VERSION, Task

ENV = "BRAINBOX_CACHE_DIR"
TASK_FIELDS = ("id", "repo", "order", "description", "source", "path", "project")
SET_FIELDS = ("gold_read", "gold_edit", "created")
SUFFIX = ".jsonl.gz"
# brainbox modules the loaders' output depends on, besides the loaders themselves
# and normalisation (brainbox.events.normalize) does
_CODE = ("events.py", "fingerprint.py", "identity.py", "redact.py", "shell.py", "shellcmd.py",
         "shellwords.py", "transcript.py")


def cache_dir() -> Path:
    """The replay cache folder (see the module docstring); not created here."""
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "brainbox" / "replay"


_VERSION = None


def version() -> str:
    """What the cached tasks depend on besides the inputs: ``NORMALIZER_VERSION``,
    brainbox's version and the SHA-256 of the loaders', normalisation's and this
    module's source (so editing them invalidates the cache even when nobody bumps the
    constant; `brainbox.eval.replay.normalize_one` is covered by the constant only)."""
    global _VERSION
    if _VERSION is None:
        import brainbox
        from brainbox.eval import loaders

        h = hashlib.sha256()
        code = sorted(Path(loaders.__file__).parent.glob("*.py")) + [Path(__file__)]
        code += [Path(brainbox.__file__).parent / n for n in _CODE]
        for p in code:
            h.update(p.name.encode() + b"\0")
            try:
                h.update(p.read_bytes())
            except OSError:
                pass
        _VERSION = f"{NORMALIZER_VERSION}:{brainbox.__version__}:{h.hexdigest()[:16]}"
    return _VERSION


def _key(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()


def _mkdir(path: Path) -> None:
    """``path`` and the missing folders above it, each created 0700."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(d, 0o700)


def _atomic_write(path: Path, data: bytes) -> None:
    """``data`` into a 0600 temporary beside ``path``, renamed over it (no fsync)."""
    _mkdir(path.parent)
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".tmp-", delete=False) as fh:
        tmp = Path(fh.name)  # mkstemp's: 0600
        written = False
        try:
            fh.write(data)
            written = True
        finally:
            if not written:
                tmp.unlink(missing_ok=True)
    try:
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------------- rows <-> tasks

def attach_normalized(t: Task) -> None:
    """Give ``t`` its events normalised as a replay without ``--seen-snippets`` folds them
    (``brainbox.eval.replay.normalize_one(raw, False)`` each, null where skipped) as
    ``t.normalized_json``, one JSON text. An attribute, not a field:
    ``dataclasses.replace`` leaves it behind (:func:`carry_normalized` says what of it
    still holds), pickling (workers, Dask) keeps it."""
    from brainbox.eval.replay import normalize_one

    t.normalized_json = json.dumps([normalize_one(raw, False) for raw in t.events],
                                   ensure_ascii=False)


def carry_normalized(old: Task, new: Task) -> Task:
    """``new``, made from ``old`` by changing some of its events (the repo view: the same
    number of events, the unchanged ones the same objects), with ``old``'s normalised
    events and the positions to normalise again (``normalized_patch``)."""
    pre = getattr(old, "normalized_json", None)
    if pre is not None and len(old.events) == len(new.events):
        new.normalized_json = pre
        new.normalized_patch = [i for i, (a, b) in enumerate(zip(old.events, new.events))
                                if a is not b]
    return new


def _row(t: Task) -> dict:
    row = {f: getattr(t, f) for f in TASK_FIELDS}
    row.update({f: sorted(getattr(t, f)) for f in SET_FIELDS})
    row["meta"] = json.dumps(t.meta, ensure_ascii=False)
    row["events"] = json.dumps(t.events, ensure_ascii=False)
    if getattr(t, "normalized_json", None) is None:
        attach_normalized(t)
    row["normalized"] = t.normalized_json
    return row


def _task(row: dict) -> Task:
    kw = {f: row[f] for f in TASK_FIELDS}
    kw.update({f: set(row[f]) for f in SET_FIELDS})
    t = Task(meta=json.loads(row["meta"]), events=json.loads(row["events"]), **kw)
    if not isinstance(row["normalized"], str):
        raise TypeError("bad normalised events")
    t.normalized_json = row["normalized"]
    return t


def _encode(rows: list[dict]) -> bytes:
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    return gzip.compress(text.encode("utf-8"), compresslevel=1)


def _decode(path: Path) -> list[Task]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [_task(json.loads(line)) for line in fh]


# ---------------------------------------------------------------------------- the cache

class SourceCache:
    """The cache of one source: ``fingerprints`` maps each input file (relative path) to
    ``[size, mtime_ns, sha256]``."""

    def __init__(self, root, fmt: str, fingerprints: dict, folder: Path | None = None):
        self.root = Path(root)
        self.fmt = fmt
        self.fp = fingerprints
        self.folder = folder or cache_dir()
        self.index_key = _key("index", version(), fmt, sorted(fingerprints.items()))
        self.stats = {"hit": 0, "written": 0, "corrupt": 0}

    def _index_path(self) -> Path:
        return self.folder / "index" / f"{self.index_key}.json"

    def _entry_path(self, key: str) -> Path | None:
        p = self.folder / "tasks" / f"{key}{SUFFIX}"
        return p if p.exists() else None

    def read(self) -> tuple[list[Task], list[str]] | None:
        """The source's tasks and warnings, or None (not cached, or unreadable)."""
        ip = self._index_path()
        if not ip.exists():
            return None
        try:
            doc = json.loads(ip.read_text(encoding="utf-8"))
            loaded: dict[str, list[Task]] = {}
            tasks = []
            for key, i in doc["order"]:
                if key not in loaded:
                    p = self._entry_path(key)
                    if p is None:
                        return None
                    loaded[key] = _decode(p)
                tasks.append(loaded[key][i])
            self.stats["hit"] = len(loaded)
            return tasks, [str(w) for w in doc["warnings"]]
        except Exception:  # noqa: BLE001 - any unreadable entry is a miss, then rebuilt
            self.stats["corrupt"] += 1
            return None

    def _rel(self, task_path: str) -> str | None:
        try:
            rel = Path(task_path).resolve().relative_to(self.root.resolve()).as_posix()
        except (ValueError, OSError):
            return None
        if rel == "." and self.root.is_file():
            rel = self.root.name
        return rel if rel in self.fp else None

    def write(self, tasks: list[Task], warns: list[str]) -> None:
        """Store the tasks a fresh load gave: entries not yet there, then the index."""
        by_file: dict[str | None, list[int]] = {}
        rels = []
        for i, t in enumerate(tasks):
            rel = self._rel(t.path) if t.path else None
            rels.append(rel)
            by_file.setdefault(rel, []).append(i)
        mains = {r for r in by_file if r is not None}
        side = sorted((r, v) for r, v in self.fp.items() if r not in mains)
        order = [None] * len(tasks)
        for rel, idx in by_file.items():
            # tasks naming no input file depend on the whole source
            own = self.fp[rel] if rel is not None else sorted(self.fp.items())
            key = _key("tasks", version(), self.fmt, rel, own, side)
            for j, i in enumerate(idx):
                order[i] = (key, j)
            p = self._entry_path(key)
            if p is not None:
                try:
                    if len(_decode(p)) == len(idx):
                        for i in idx:
                            attach_normalized(tasks[i])
                        continue
                except Exception:  # noqa: BLE001 - corrupt: rewritten below
                    self.stats["corrupt"] += 1
            _atomic_write(self.folder / "tasks" / f"{key}{SUFFIX}",
                          _encode([_row(tasks[i]) for i in idx]))
            self.stats["written"] += 1
        doc = {"version": version(), "root": str(self.root), "format": self.fmt,
               "order": order, "warnings": list(warns)}
        _atomic_write(self._index_path(), json.dumps(doc).encode("utf-8"))


def entries(folder: Path | None = None) -> list[Path]:
    """Every file of the cache this module wrote (entries, indexes, stray temporaries)."""
    folder = folder or cache_dir()
    out = []
    for sub, pats in (("tasks", ("*" + SUFFIX, ".tmp-*")),
                      ("index", ("*.json", ".tmp-*"))):
        d = folder / sub
        if d.is_dir():
            for pat in pats:
                out += [p for p in d.glob(pat) if p.is_file() and not p.is_symlink()]
    return sorted(set(out))


def info(folder: Path | None = None) -> dict:
    folder = folder or cache_dir()
    files = entries(folder)
    return {"folder": str(folder),
            "entries": sum(1 for p in files if p.parent.name == "tasks"
                           and not p.name.startswith(".tmp-")),
            "sources": sum(1 for p in files if p.parent.name == "index"
                           and not p.name.startswith(".tmp-")),
            "bytes": sum(p.stat().st_size for p in files)}


def clear(folder: Path | None = None, dry_run: bool = False) -> dict:
    """Remove the cache's files (:func:`entries`) and its then-empty folders; what was (or,
    with ``dry_run``, would be) removed, as :func:`info` counts it."""
    folder = folder or cache_dir()
    out = info(folder)
    if not dry_run:
        for p in entries(folder):
            p.unlink(missing_ok=True)
        for sub in ("tasks", "index"):
            try:
                (folder / sub).rmdir()
            except OSError:
                pass
    return out
