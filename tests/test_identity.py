"""Project identity (issue 17): one memory per repository across its worktrees, read from
`.git` files without spawning git; a submodule, `BRAINBOX_PROJECT` and a folder outside
git each their own project; old per-worktree keys merged into their repository by an
event. Real git repositories, real worktrees and real hook processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from brainbox import identity, store
from brainbox.events import forget_project_roots, normalize
from brainbox.memory import FILE, Memory
from brainbox.recall import Result
from tests.records import old_database

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

HOOK = [sys.executable, "-m", "brainbox.cli.entry", "hook", "claude"]
CLI = [sys.executable, "-m", "brainbox.cli.entry"]


def git(*args, cwd):
    return subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t",
                           "-c", "protocol.file.allow=always", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def make_repo(path: Path, files=("src/a.py", "src/b.py")) -> Path:
    path.mkdir(parents=True)
    git("init", "-q", cwd=path)
    for f in files:
        (path / f).parent.mkdir(parents=True, exist_ok=True)
        (path / f).write_text(f"# {f}\n")
    git("add", ".", cwd=path)
    git("commit", "-qm", "init", cwd=path)
    return path


@pytest.fixture(autouse=True)
def fresh_identity(monkeypatch):
    monkeypatch.delenv("BRAINBOX_PROJECT", raising=False)
    forget_project_roots()
    yield
    forget_project_roots()


@pytest.fixture
def repo(tmp_path):
    """A clone with a linked worktree beside it: (main root, linked worktree root)."""
    main = make_repo(tmp_path / "repo")
    wt = tmp_path / "wt"
    git("worktree", "add", "-q", str(wt), cwd=main)
    return main, wt


def git_key(cwd: Path) -> str:
    """What git says: the common dir's parent when it is a `.git` folder."""
    common = Path(git("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=cwd))
    return str(common.parent if common.name == ".git" else common)


# --------------------------------------------------------------------------- identity


def test_every_worktree_of_a_clone_has_the_repository_as_key_as_git_says(repo):
    main, wt = repo
    (wt / "src" / "deep").mkdir()
    for cwd, root in ((main, main), (main / "src", main), (wt, wt), (wt / "src" / "deep", wt)):
        assert identity.identify(str(cwd)) == (str(main), str(root))
        assert identity.identify(str(cwd))[0] == git_key(cwd)


def test_a_bare_repositorys_worktrees_have_the_bare_folder_as_key(tmp_path):
    src = make_repo(tmp_path / "src")
    bare = tmp_path / "bare.git"
    git("clone", "-q", "--bare", str(src), str(bare), cwd=tmp_path)
    wt = tmp_path / "w1"
    git("worktree", "add", "-q", str(wt), cwd=bare)
    assert identity.identify(str(wt)) == (str(bare), str(wt)) == (git_key(wt), str(wt))


def test_a_submodule_is_its_own_project_not_its_superprojects(tmp_path):
    lib = make_repo(tmp_path / "lib", files=("lib.py",))
    sup = make_repo(tmp_path / "super")
    git("submodule", "add", "-q", str(lib), "vendor/lib", cwd=sup)
    sub = sup / "vendor" / "lib"
    assert (sub / ".git").is_file()  # a gitdir file into super/.git/modules/...
    assert identity.identify(str(sub)) == (str(sub), str(sub))
    assert identity.identify(str(sup / "src")) == (str(sup), str(sup))


def test_a_submodules_linked_worktree_joins_the_submodule_not_the_superproject(tmp_path):
    lib = make_repo(tmp_path / "lib", files=("lib.py",))
    sup = make_repo(tmp_path / "super")
    git("submodule", "add", "-q", str(lib), "vendor/lib", cwd=sup)
    sub = sup / "vendor" / "lib"
    wt = tmp_path / "libwt"
    git("worktree", "add", "-q", str(wt), cwd=sub)
    assert identity.identify(str(wt)) == (str(sub), str(wt))


def test_outside_git_the_folder_is_the_key(tmp_path):
    plain = tmp_path / "plain" / "dir"
    plain.mkdir(parents=True)
    assert identity.identify(str(plain)) == (str(plain), str(plain))


def test_brainbox_project_overrides_the_key_and_the_worktree_still_anchors_paths(repo,
                                                                                  monkeypatch):
    main, wt = repo
    monkeypatch.setenv("BRAINBOX_PROJECT", "my-project")
    assert identity.identify(str(wt / "src")) == ("my-project", str(wt))
    ev = normalize({"session": "s", "cwd": str(wt / "src"), "tool": "Read", "files": ["a.py"]})
    assert (ev["project"], ev["worktree"], ev["files"]) == ("my-project", str(wt), ["src/a.py"])
    with identity.overriding(""):  # the daemon, for a hook that had none
        assert identity.identify(str(wt)) == (str(main), str(wt))
    with identity.overriding("other"):
        assert identity.identify(str(main)) == ("other", str(main))


def test_an_unreadable_git_file_keeps_the_folder_as_key(tmp_path):
    for i, text in enumerate(("not a gitdir line\n", "gitdir: /nowhere/at/all\n", "")):
        d = tmp_path / f"d{i}"
        d.mkdir()
        (d / ".git").write_text(text)
        assert identity.identify(str(d)) == (str(d), str(d))


def test_events_of_two_worktrees_share_the_key_and_keep_worktree_relative_paths(repo):
    main, wt = repo
    a = normalize({"session": "s", "cwd": str(main), "tool": "Read",
                   "files": [str(main / "src/a.py")]})
    b = normalize({"session": "s", "cwd": str(wt / "src"), "tool": "Edit",
                   "files": [str(wt / "src/a.py"), str(main / "src/b.py")]})
    assert a["project"] == b["project"] == str(main)
    assert a["worktree"] is None and b["worktree"] == str(wt)
    assert a["files"] == b["files"] == ["src/a.py"]  # main's file is outside this worktree


# --------------------------------------------------------------------------- hooks


def hook(event: str, payload: dict, env: dict | None = None) -> subprocess.CompletedProcess:
    e = dict(os.environ, BRAINBOX_DAEMON="off", BRAINBOX_HOOK_BUDGET_PROMPT="30",
             BRAINBOX_HOOK_BUDGET_TOOL="30")
    e.update(env or {})
    p = subprocess.run([*HOOK, event], input=json.dumps(payload).encode(), env=e,
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p


def tool(cwd: Path, name: str, path: Path, session="s1") -> dict:
    return {"session_id": session, "hook_event_name": "PostToolUse", "cwd": str(cwd),
            "tool_name": name, "tool_input": {"file_path": str(path)}, "tool_response": {}}


def stored(sql="SELECT project, worktree, files FROM events WHERE kind = 'tool' ORDER BY id"):
    conn = store.connect()
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def cli(*args, cwd=None, env=None):
    p = subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=300,
                       env=dict(os.environ, BRAINBOX_DAEMON="off", **(env or {})))
    return p


@pytest.mark.slow
def test_two_worktrees_through_real_hooks_are_one_project_and_recall_across(repo):
    main, wt = repo
    for _ in range(3):
        hook("PostToolUse", tool(wt, "Edit", wt / "src/login.py"))
        hook("PostToolUse", tool(wt, "Read", wt / "src/a.py"))
    hook("PostToolUse", tool(main, "Read", main / "src/b.py", session="s2"))
    assert {r[0] for r in stored()} == {str(main)}
    assert {r[1] for r in stored()} == {str(wt), None}
    stats = json.loads(cli("stats", "--json").stdout)
    assert stats["projects"] == 1
    (main / "src/login.py").write_text("# login\n")  # on disk in the asking worktree
    out = json.loads(cli("recall", "login", "--cwd", str(main), "--json").stdout)
    assert [r["path"] for r in out["results"]][:1] == ["src/login.py"]
    # the prompt hook of a session in the main worktree suggests what the other recorded
    p = hook("UserPromptSubmit", {"session_id": "s3", "hook_event_name": "UserPromptSubmit",
                                  "cwd": str(main), "prompt": "fix the login bug"})
    text = json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "src/login.py" in text


@pytest.mark.slow
def test_the_prompt_hook_lists_only_files_of_the_asking_worktree(repo):
    main, wt = repo
    (wt / "src/login_form.py").write_text("# only on this branch\n")
    for _ in range(3):
        hook("PostToolUse", tool(wt, "Edit", wt / "src/login_form.py"))
    payload = {"session_id": "s9", "hook_event_name": "UserPromptSubmit",
               "prompt": "the login form"}
    p = hook("UserPromptSubmit", dict(payload, cwd=str(wt)))
    assert "src/login_form.py" in json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
    p = hook("UserPromptSubmit", dict(payload, cwd=str(main)))
    assert b"src/login_form.py" not in p.stdout  # not in the main checkout: never suggested


@pytest.mark.slow
def test_real_hooks_in_a_submodule_outside_git_and_with_brainbox_project(tmp_path, repo):
    main, wt = repo
    lib = make_repo(tmp_path / "lib", files=("lib.py",))
    git("submodule", "add", "-q", str(lib), "vendor/lib", cwd=main)
    sub = main / "vendor" / "lib"
    plain = tmp_path / "plain"
    plain.mkdir()
    hook("PostToolUse", tool(sub, "Read", sub / "lib.py"))
    hook("PostToolUse", tool(plain, "Read", plain / "notes.md"))
    hook("PostToolUse", tool(wt, "Read", wt / "src/a.py"), env={"BRAINBOX_PROJECT": "named"})
    assert stored() == [(str(sub), None, '["lib.py"]'), (str(plain), None, '["notes.md"]'),
                        ("named", str(wt), '["src/a.py"]')]


@pytest.mark.slow
def test_the_daemon_keys_a_handed_over_hook_by_the_hooks_brainbox_project(repo, monkeypatch):
    """The daemon normalises a handed-over prompt with the hook's BRAINBOX_PROJECT (or its
    absence), not with the environment the daemon was started in."""
    from brainbox.cli.service import Service

    main, wt = repo
    monkeypatch.setenv("BRAINBOX_PROJECT", "the-daemons")
    svc = Service()
    try:
        base = {"op": "hook", "agent": "claude", "event": "UserPromptSubmit", "cwd": str(wt),
                "settings": {"inject": False}}
        for env, session in (("", "a"), ("the-hooks", "b")):
            payload = {"session_id": session, "hook_event_name": "UserPromptSubmit",
                       "cwd": str(wt), "prompt": "hello there"}
            ans = svc.handle(dict(base, payload=payload, project_env=env))
            assert ans["ok"], ans
    finally:
        svc.close()
    rows = stored("SELECT session, project, worktree FROM events ORDER BY id")
    assert rows == [("a", str(main), str(wt)), ("b", "the-hooks", str(wt))]


@pytest.mark.slow
def test_search_in_a_linked_worktree_finds_the_index_built_there_alone(repo):
    _main, wt = repo
    (wt / "src/a.py").write_text("def login_redirect():\n    return 1\n")
    assert cli("index", str(wt)).returncode == 0
    p = cli("search", "login redirect", "--cwd", str(wt / "src"), "--json")
    assert p.returncode == 0, p.stderr
    assert [r["path"] for r in json.loads(p.stdout)][:1] == ["src/a.py"]


# --------------------------------------------------------------------------- preference


def test_equal_confidences_prefer_the_files_last_touched_in_the_asking_worktree(repo):
    main, wt = repo
    with Memory.open() as mem:
        mem.record([{"session": "s", "cwd": str(main), "tool": "Read", "files": ["src/a.py"]},
                    {"session": "s", "cwd": str(wt), "tool": "Read", "files": ["src/b.py"]}])
        mem.sync()
        hits = [Result("src/a.py", 0.5, 1.0), Result("src/b.py", 0.5, 1.0),
                Result("src/c.py", 0.4, 1.0)]
        key = str(main)
        assert [r.path for r in mem.prefer_worktree(hits, key, str(wt))] == \
            ["src/b.py", "src/a.py", "src/c.py"]
        assert [r.path for r in mem.prefer_worktree(hits, key, None)] == \
            ["src/a.py", "src/b.py", "src/c.py"]
        hits[0].confidence = 0.6  # more evidence wins over the worktree
        assert mem.prefer_worktree(hits, key, str(wt))[0].path == "src/a.py"
        # the main checkout touches b again: it is no longer the worktree's
        mem.record({"session": "s", "cwd": str(main), "tool": "Read", "files": ["src/b.py"]})
        mem.sync()
        st = mem.state
        assert st.file_worktree == {}
        fresh = Memory.open()
        try:
            fresh.rebuild()
            assert fresh.state.file_worktree == st.file_worktree
        finally:
            fresh.close()


# --------------------------------------------------------------------------- migration


def old_events(main: Path, wt: Path) -> list[dict]:
    """What an older brainbox stored: the linked worktree as a project of its own."""
    return [{"session": "s1", "cwd": str(wt), "project": str(wt), "tool": "Edit",
             "files": ["src/a.py"], "at": 1000.0 + i} for i in range(3)] + [
        {"session": "s2", "cwd": str(main), "project": str(main), "tool": "Read",
         "files": ["src/a.py", "src/b.py"], "at": 1100.0}]


def arrays_equal(a, b) -> bool:
    import numpy as np

    x, y = a.to_arrays(), b.to_arrays()
    return x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)


@pytest.mark.slow
def test_doctor_proposes_the_merge_dry_run_writes_nothing_and_fix_merges(repo):
    main, wt = repo
    with Memory.open() as mem:
        mem.record(old_events(main, wt))
        mem.sync()
    before = stored("SELECT * FROM events ORDER BY id")
    p = cli("doctor", "--json", "--no-latency")
    data = json.loads(p.stdout)
    assert data["projects"]["merges"] == [{"from": str(wt), "into": str(main), "events": 3}]
    assert any("brainbox doctor --fix" in line for line in data["problems"])
    p = cli("doctor", "--fix", "--dry-run", "--json", "--no-latency")
    assert json.loads(p.stdout)["fixed"]["dry_run"] is True
    assert stored("SELECT * FROM events ORDER BY id") == before
    assert cli("doctor", "--dry-run").returncode == 2  # only with --fix
    p = cli("doctor", "--fix", "--no-latency")
    assert f"merged {wt} into {main} (3 events)" in p.stdout
    rows = stored("SELECT project, worktree, kind FROM events ORDER BY id")
    assert rows[:3] == [(str(main), str(wt), "tool")] * 3
    assert rows[-1] == (str(main), None, "maintenance")
    assert json.loads(cli("stats", "--json").stdout)["projects"] == 1
    data = json.loads(cli("doctor", "--json", "--no-latency").stdout)
    assert data["projects"]["merges"] == []


def test_a_database_from_before_gains_the_worktree_column_and_keeps_its_events(tmp_path,
                                                                              monkeypatch):
    path = tmp_path / "old.db"
    old_database(monkeypatch, path, 7)
    conn = store.connect(path)
    try:
        assert "008_event_worktree" in {r[0] for r in conn.execute(
            "SELECT name FROM schema_migrations")}
        assert conn.execute("SELECT project, worktree FROM events").fetchall() == [("/p", None)]
    finally:
        conn.close()


def test_a_merge_folds_like_a_rebuild_and_later_old_key_events_join_the_repository(repo):
    main, wt = repo
    with Memory.open() as mem:
        mem.record(old_events(main, wt))
        mem.sync()  # the per-worktree state, saved: this process folded the old key
        st = mem.state
        assert (FILE, str(wt), "src/a.py") in st.res_index
        with Memory.open() as other:  # another process (doctor --fix) merges
            out = other.merge_projects()
        assert [m["moved"] for m in out["merges"]] == [3]
        # a late event of the old key (a spool drained after the merge, an older hook)
        mem.record({"session": "s3", "cwd": str(wt), "project": str(wt), "tool": "Read",
                    "files": ["src/b.py"], "at": 1200.0})
        mem.sync()  # meets the merge: rebuilt
        st = mem.state
        assert not st.needs_rebuild
        files = {st.res_project[i] for i in range(st.n_res) if st.res_kind[i] == FILE}
        assert files == {str(main)}
        assert st.aliases == {str(wt): str(main)}
        a = st.res_index[(FILE, str(main), "src/a.py")]
        assert int(st.n[a]) == 4  # three edits in the worktree, one read in main
        with Memory.open() as fresh:
            fresh.rebuild()
            assert arrays_equal(fresh.state, st)
            assert fresh.state.res_index == st.res_index
            assert fresh.state.file_worktree == st.file_worktree
    with Memory.open() as again:  # the late event is proposed again, and moved once more
        assert [m["events"] for m in again.merge_projects()["merges"]] == [1]
        assert again.merge_projects(dry_run=True)["merges"] == []
        assert not again.state.needs_rebuild


def test_a_submodule_is_never_proposed_for_a_merge(tmp_path):
    lib = make_repo(tmp_path / "lib", files=("lib.py",))
    sup = make_repo(tmp_path / "super")
    git("submodule", "add", "-q", str(lib), "vendor/lib", cwd=sup)
    sub = sup / "vendor" / "lib"
    with Memory.open() as mem:
        mem.record([{"session": "s", "cwd": str(sub), "tool": "Read", "files": ["lib.py"]},
                    {"session": "s", "cwd": str(sup), "tool": "Read", "files": ["src/a.py"]}])
        assert mem.merge_projects(dry_run=True)["merges"] == []
