"""Project identity (issue 17): which memory a working directory belongs to.

The project key is the repository, not the directory: every worktree of one clone shares
one memory. Git itself says which repository a worktree belongs to with
`git rev-parse --path-format=absolute --git-common-dir`; this module gives the same answer
without spawning git (a fresh hook process runs this on every tool call, and a `git`
process costs more than the whole hook), by reading the files git reads:

- the worktree root is the nearest folder above `cwd` holding a `.git` entry (else `cwd`:
  outside git the directory is the key);
- a `.git` folder: the worktree is its repository's main one, and the key is the root;
- a `.git` file (`gitdir: <path>`, relative to the file's folder) names a git dir. If that
  git dir holds a `commondir` file (relative to the git dir), it is a linked worktree's
  (`git worktree add`) and the common dir is the repository: its parent when it is a
  `.git` folder (a normal clone: the key is the main worktree's root), else the folder
  its `config` names as `core.worktree` (a submodule's own linked worktree), else the
  common dir itself (a bare repository's worktrees);
- a `.git` file whose git dir has no `commondir` is a repository of its own whose git dir
  lives elsewhere: a submodule (`<super>/.git/modules/<name>`) or a
  `--separate-git-dir` clone. The key is the root: a submodule is its own project and
  never merges into its superproject.
- Anything unreadable (a dangling gitdir, a file that is not `gitdir: ...`) keeps the
  root as the key, as before issue 17.

`BRAINBOX_PROJECT` overrides the key (taken as given: a name or a path); the worktree
root still anchors relative paths. Paths stay relative to each worktree's root, so
`src/a.py` in two worktrees is one resource.

Cost: one `lstat` per folder walked (as the `.git` search always did), one read of a
`.git` file and one of a `commondir` in a linked worktree; results are cached per
directory for the process (the daemon clears the cache per handed-over hook,
`forget`). PostToolUse whole-process medians are in the commit that added this module.
"""

from __future__ import annotations

import os
import stat

ENV = "BRAINBOX_PROJECT"
_MAX_GIT_FILE = 4096  # a `.git` or `commondir` file is one line; more is not git's

_CACHE: dict[str, tuple[str, str]] = {}
_override: list[str | None] = []  # the daemon's per-request BRAINBOX_PROJECT (`overriding`)


def worktree_root(cwd: str) -> str:
    """Nearest ancestor of `cwd` (absolute) with a `.git` entry, else `cwd` itself."""
    return _identify(os.path.abspath(cwd))[1]


def repository_key(cwd: str) -> str:
    """The repository's key for `cwd`, without the `BRAINBOX_PROJECT` override."""
    return _identify(os.path.abspath(cwd))[0]


def identify(cwd: str) -> tuple[str, str]:
    """(project key, worktree root) of the folder `cwd` (module docstring)."""
    key, root = _identify(os.path.abspath(cwd))
    env = project_override()
    return (env, root) if env else (key, root)


def project_override() -> str | None:
    """`BRAINBOX_PROJECT` (the hook's, inside the daemon: `overriding`), None when unset."""
    value = _override[-1] if _override else os.environ.get(ENV)
    value = value.strip() if isinstance(value, str) else None
    return value or None


class overriding:  # a context manager, named like one
    """`with overriding(value):` identify as a hook process whose `BRAINBOX_PROJECT` is
    `value` ("" or None: unset) would; the daemon wraps each handed-over hook in it."""

    def __init__(self, value):
        self.value = value if isinstance(value, str) else ""

    def __enter__(self):
        _override.append(self.value)
        return self

    def __exit__(self, *exc):
        _override.pop()
        return False


def forget() -> None:
    """Clear the cache: the next call reads `.git` afresh."""
    _CACHE.clear()


def _identify(cwd: str) -> tuple[str, str]:
    hit = _CACHE.get(cwd)
    if hit is not None:
        return hit
    d = cwd
    out = (cwd, cwd)
    while True:
        dot = os.path.join(d, ".git")
        try:
            mode = os.lstat(dot).st_mode
        except OSError:
            mode = None
        if mode is not None:
            key = _key_of_git_file(d, dot) if stat.S_ISREG(mode) else d
            out = (key, d)
            break
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    if len(_CACHE) > 4096:
        _CACHE.clear()
    _CACHE[cwd] = out
    return out


def _read_line(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(_MAX_GIT_FILE + 1)
    except OSError:
        return None
    if len(data) > _MAX_GIT_FILE:
        return None
    text = data.decode("utf-8", "surrogateescape").strip()
    return text.splitlines()[0].strip() if text else None


def _key_of_git_file(root: str, dot: str) -> str:
    """The key of a worktree whose `.git` is a file (module docstring); `root` when it
    cannot be read or names no linked worktree."""
    line = _read_line(dot)
    if not line or not line.startswith("gitdir:"):
        return root
    gitdir = line[len("gitdir:"):].strip()
    if not gitdir:
        return root
    gitdir = os.path.normpath(os.path.join(root, gitdir))
    common = _read_line(os.path.join(gitdir, "commondir"))
    if not common:
        return root  # a submodule or a separate git dir: a repository of its own
    common = os.path.normpath(os.path.join(gitdir, common))
    if not os.path.isdir(common):
        return root
    if os.path.basename(common) == ".git":
        return os.path.dirname(common)
    worktree = _core_worktree(common)
    return worktree if worktree else common


def _core_worktree(common: str) -> str | None:
    """`core.worktree` of the repository at `common` (absolute), or None. A submodule's
    git dir records its checkout this way; only read for a linked worktree of one."""
    try:
        with open(os.path.join(common, "config"), encoding="utf-8", errors="replace") as fh:
            text = fh.read(1 << 16)
    except OSError:
        return None
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[]").strip().lower()
            continue
        if section == "core" and "=" in line:
            name, value = line.split("=", 1)
            if name.strip().lower() == "worktree":
                value = value.strip().strip('"')
                return os.path.normpath(os.path.join(common, value)) if value else None
    return None
