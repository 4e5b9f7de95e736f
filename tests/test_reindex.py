"""Issue 16: edits in the event log keep the code index current (the daemon's background
step, `brainbox.reindex`, `cli.reindexer`), and `forget` clears a file from the index.

Real SQLite files; the hooks run as processes; one test runs a real daemon."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from brainbox import codeindex, codesearch, codevectors, reindex, store
from brainbox.memory import Memory

# A distinctive term of one file, searched in the database's bytes: letters only, so that
# no shorter term of the file is its prefix (FTS5 stores a term after its page's previous
# one as the suffix they do not share: `zx81qw` would be split into `zx`, `81`, `qw`).
SECRET = "qqsecretmarker"


def cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", *args],
                          capture_output=True, text=True, timeout=timeout)


def hook(repo: Path, tool: str, tool_input: dict, session="s1"):
    """A PostToolUse hook process, as the agent runs it."""
    p = {"session_id": session, "cwd": str(repo), "hook_event_name": "PostToolUse",
         "tool_name": tool, "tool_input": tool_input, "tool_response": {}}
    r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "hook", "claude",
                        "PostToolUse"], input=json.dumps(p), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and r.stdout == "", r.stderr


@pytest.fixture
def repo(tmp_path):
    """A project outside git (its files are listed by the .gitignore walk)."""
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "auth.py").write_text("def login(user):\n    return user\n")
    (root / "src" / "billing.py").write_text("def invoice(order):\n    return order\n")
    (root / "src" / "vault.py").write_text(f"def {SECRET}_unlock():\n    return 42\n")
    (root / ".gitignore").write_text(".env\n")
    return root


@pytest.fixture
def conn(brainbox_home):
    c = store.connect()
    yield c
    c.close()


def symbols(conn, root, query):
    return {(s.path, s.symbol) for s in codesearch.search(conn, str(root), query, 20,
                                                         embedder=None)}


# --------------------------------------------------------------------------- selection


def test_select_groups_files_per_project_once_in_first_edit_order():
    rows = [(1, "/a", ["x.py", "y.py"]), (2, "/b", ["z.py"]), (3, "/a", ["y.py", "w.py"]),
            (4, "/c", ["q.py"])]
    sel = reindex.select(rows, 0, lambda p: p != "/c", {})
    assert sel.files == {"/a": ["x.py", "y.py", "w.py"], "/b": ["z.py"]}
    assert sel.cursor == 4  # an event of a project without an index is passed over


def test_select_skips_edits_the_last_index_already_read():
    rows = [(5, "/a", ["old.py"]), (6, "/a", ["new.py"]), (7, "/b", ["b.py"])]
    sel = reindex.select(rows, 4, lambda p: True, {"/a": 5, "/b": 9})
    assert sel.files == {"/a": ["new.py"]} and sel.cursor == 7


def test_select_cuts_the_batch_before_the_event_that_would_pass_the_bound():
    rows = [(1, "/a", ["1.py", "2.py"]), (2, "/b", ["3.py", "4.py"]), (3, "/a", ["1.py"])]
    sel = reindex.select(rows, 0, lambda p: True, {}, max_files=3)
    assert sel.files == {"/a": ["1.py", "2.py"]} and sel.cursor == 1
    # an event alone over the bound is taken whole: the cursor always moves
    sel = reindex.select([(8, "/a", [f"{i}.py" for i in range(5)])], 7, lambda p: True, {},
                         max_files=3)
    assert sel.count() == 5 and sel.cursor == 8
    # a repeat of files already taken costs nothing against the bound
    sel = reindex.select([(1, "/a", ["1.py", "2.py"]), (2, "/a", ["2.py", "1.py"])], 0,
                         lambda p: True, {}, max_files=2)
    assert sel.files == {"/a": ["1.py", "2.py"]} and sel.cursor == 2


def test_select_asks_each_project_once_and_never_the_empty_one():
    asked = []
    rows = [(1, "", ["a.py"]), (2, "/a", ["a.py"]), (3, "/a", ["b.py"])]
    reindex.select(rows, 0, lambda p: asked.append(p) or True, {})
    assert asked == ["/a"]


# --------------------------------------------------------------------------- one tick


def test_a_tick_reindexes_an_edited_file_and_drops_a_deleted_one(repo, conn):
    codeindex.build(conn, str(repo))
    assert reindex.tick(conn) is None  # nothing edited yet
    (repo / "src" / "auth.py").write_text("def login(user):\n    return user\n\n"
                                          "def logout_everywhere(user):\n    return None\n")
    hook(repo, "Edit", {"file_path": str(repo / "src" / "auth.py")})
    (repo / "src" / "billing.py").unlink()
    hook(repo, "Bash", {"command": "rm src/billing.py"})
    assert not symbols(conn, repo, "logout_everywhere")
    assert reindex.stale(conn, str(repo)) == ["src/auth.py", "src/billing.py"]
    out = reindex.tick(conn)
    assert (out["indexed"], out["removed"], out["files"]) == (1, 1, 2)
    assert ("src/auth.py", "logout_everywhere") in symbols(conn, repo, "logout_everywhere")
    assert "src/billing.py" not in codeindex.indexed_paths(conn, str(repo))
    assert reindex.stale(conn, str(repo)) == []
    assert reindex.tick(conn) is None  # the cursor moved past them


def test_a_created_file_is_indexed_only_when_brainbox_index_would_list_it(repo, conn):
    codeindex.build(conn, str(repo))
    (repo / "src" / "fresh.py").write_text("def brand_new_helper():\n    pass\n")
    (repo / ".env").write_text("API_TOKEN=hunter2secret\n")
    hook(repo, "Write", {"file_path": str(repo / "src" / "fresh.py")})
    hook(repo, "Write", {"file_path": str(repo / ".env")})
    assert reindex.stale(conn, str(repo)) == ["src/fresh.py"]  # .env is ignored
    out = reindex.tick(conn)
    assert (out["indexed"], out["skipped"]) == (1, 1)
    assert codeindex.indexed_paths(conn, str(repo)) >= {"src/fresh.py"}
    assert ".env" not in codeindex.indexed_paths(conn, str(repo))
    assert not symbols(conn, repo, "hunter2secret")


def test_listed_follows_the_listing_rule_of_the_index(tmp_path):
    root = tmp_path / "p"
    (root / "build" / "sub").mkdir(parents=True)
    (root / "src").mkdir()
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "src" / ".gitignore").write_text("!keep.log\n")
    wanted = ["src/a.py", "src/x.log", "src/keep.log", "build/sub/b.py", "../out.py",
              "/abs.py", ".git/config"]
    assert codeindex.listed(str(root), wanted) == {"src/a.py", "src/keep.log"}
    git = tmp_path / "g"
    git.mkdir()
    subprocess.run(["git", "init", "-q", str(git)], check=True)
    (git / "t.py").write_text("x = 1\n")
    (git / "u.py").write_text("y = 1\n")
    (git / "[t].py").write_text("z = 1\n")  # a pathspec glob if it were not taken literally
    subprocess.run(["git", "-C", str(git), "add", "t.py"], check=True)
    assert codeindex.listed(str(git), ["t.py", "u.py", "[t].py"]) == {"t.py"}


def test_edits_before_brainbox_index_are_not_stale_and_not_reindexed(repo, conn):
    hook(repo, "Edit", {"file_path": str(repo / "src" / "auth.py")})
    codeindex.build(conn, str(repo))  # read the file after the edit
    assert reindex.stale(conn, str(repo)) == []
    out = reindex.tick(conn)
    assert out["files"] == 0 and out["projects"] == []


def test_a_project_without_a_code_index_is_left_alone(repo, conn):
    hook(repo, "Edit", {"file_path": str(repo / "src" / "auth.py")})
    out = reindex.tick(conn)
    assert out["files"] == 0 and not codesearch.indexed(conn, str(repo))


class FakeEmbedder:
    """A deterministic embedder: a unit vector from the text's hash."""

    id = "fake/1"
    dim = 8

    def embed(self, texts):
        rows = []
        for t in texts:
            h = hashlib.sha256(t.encode()).digest()
            v = np.frombuffer(h[:32], dtype=np.uint8).astype(np.float32)[:8] + 1.0
            rows.append(v / np.linalg.norm(v))
        return np.array(rows, dtype=np.float32).reshape(len(texts), self.dim)


def test_reindexing_drops_the_old_vectors_of_an_edited_file_and_keeps_the_others(
        repo, brainbox_home):
    conn = store.connect(prefer_vec=True)
    try:
        codeindex.build(conn, str(repo))
        codevectors.embed_index(conn, str(repo), FakeEmbedder())
        before = codevectors.vector_count(conn, str(repo))
        assert before == codeindex.totals(conn, str(repo))["chunks"]
        (repo / "src" / "auth.py").write_text("def login(user, token):\n    return token\n")
        hook(repo, "Edit", {"file_path": str(repo / "src" / "auth.py")})
        reindex.tick(conn)
        rows = conn.execute("SELECT f.path FROM code_vectors v JOIN code_chunks c ON "
                            "c.id = v.chunk_id JOIN code_files f ON f.id = c.file_id").fetchall()
        assert {r[0] for r in rows} == {".gitignore", "src/billing.py", "src/vault.py"}
        assert codevectors.has_vectors(conn, str(repo))  # the next index embeds the rest
        assert codevectors.embed_index(conn, str(repo), FakeEmbedder())["vectors"] == 1
        assert codevectors.vector_count(conn, str(repo)) == before
    finally:
        conn.close()


# --------------------------------------------------------------------------- the thread


def test_a_failing_tick_is_logged_and_the_thread_goes_on(brainbox_home, monkeypatch, capfd):
    from brainbox.cli.reindexer import Reindexer

    store.connect().close()
    calls = []

    def tick(conn, **kw):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("disk on fire")

    monkeypatch.setattr(reindex, "tick", tick)
    r = Reindexer(str(brainbox_home / "brainbox.db"), interval=0.05)
    r.start()
    try:
        deadline = time.monotonic() + 30
        while len(calls) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(calls) >= 3 and r._thread.is_alive()
    finally:
        r.stop()
    assert "re-index failed: RuntimeError: disk on fire" in capfd.readouterr().err


def test_a_reply_never_waits_for_a_tick_in_progress(repo, brainbox_home, monkeypatch):
    """The re-indexer holds neither the service's lock nor its connection: while a tick is
    stuck inside `index_files`, the service answers a suggest request."""
    from brainbox.cli.reindexer import Reindexer
    from brainbox.cli.service import Service

    conn = store.connect()
    codeindex.build(conn, str(repo))
    conn.close()
    hook(repo, "Edit", {"file_path": str(repo / "src" / "auth.py")})
    inside, release, done = threading.Event(), threading.Event(), threading.Event()
    real = codeindex.index_files

    def slow(conn, root, paths):
        inside.set()
        release.wait(60)
        done.set()
        return real(conn, root, paths)

    monkeypatch.setattr(codeindex, "index_files", slow)
    svc = Service()
    r = Reindexer(svc.db, interval=0.05)
    svc.on_folded = r.wake
    r.start()
    try:
        assert inside.wait(30)  # the tick is in the middle of re-indexing
        answer = svc.handle({"op": "suggest", "query": "login", "project": str(repo)})
        assert answer["ok"] and not done.is_set()  # answered with the tick still inside
    finally:
        release.set()
        r.stop()
        svc.close()


# --------------------------------------------------------------------------- a daemon


HEAVY = ("tree_sitter", "tree_sitter_python", "onnxruntime", "sqlite_vec", "sqlean",
         "numpy", "brainbox.codeindex", "brainbox.reindex")
RUN_HOOK = (
    "import sys\n"
    "from brainbox.cli.entry import main\n"
    "rc = main(['hook', 'claude', 'PostToolUse'])\n"
    f"heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
    "sys.stderr.write(repr(heavy))\n"
    "sys.exit(rc)\n"
)


def test_the_daemon_reindexes_an_edited_file_after_the_hook_returned(repo, brainbox_home,
                                                                     monkeypatch):
    import ast

    from brainbox.cli import client

    brainbox_home.mkdir(parents=True, exist_ok=True)
    r = cli("index", str(repo), "--json")
    assert r.returncode == 0, r.stderr
    monkeypatch.setenv("BRAINBOX_REINDEX_EVERY", "0.2")
    try:
        assert client.spawn(brainbox_home, force=True)
        deadline = time.monotonic() + 120
        while not client.status(brainbox_home)["running"]:
            assert time.monotonic() < deadline, "the daemon did not start"
            time.sleep(0.1)
        (repo / "src" / "billing.py").write_text("def invoice(order):\n    return order\n\n"
                                                 "def refund_partial(order):\n    pass\n")
        payload = {"session_id": "s1", "cwd": str(repo), "hook_event_name": "PostToolUse",
                   "tool_name": "Edit", "tool_response": {},
                   "tool_input": {"file_path": str(repo / "src" / "billing.py")}}
        h = subprocess.run([sys.executable, "-c", RUN_HOOK], input=json.dumps(payload),
                           capture_output=True, text=True, timeout=60)
        assert h.returncode == 0 and h.stdout == ""
        assert ast.literal_eval(h.stderr.strip().rsplit("\n", 1)[-1]) == []  # no indexing
        found = []
        while time.monotonic() < deadline and not found:
            s = cli("search", "refund_partial", "--cwd", str(repo), "--json")
            found = [x for x in json.loads(s.stdout) if x["symbol"] == "refund_partial"]
            time.sleep(0.2)
        assert found and found[0]["path"] == "src/billing.py"
        assert "edited since indexed" not in s.stderr
        log = (brainbox_home / client.LOG_NAME).read_text()
        assert "re-indexed 1 changed, 0 removed, 0 unchanged files of " + str(repo) in log
        assert client.status(brainbox_home)["running"]
    finally:
        client.stop(brainbox_home, wait=30)


def test_search_says_when_files_were_edited_since_indexed(repo, brainbox_home):
    assert cli("index", str(repo)).returncode == 0
    (repo / "src" / "auth.py").write_text("def login_changed():\n    pass\n")
    hook(repo, "Edit", {"file_path": str(repo / "src" / "auth.py")})
    r = cli("search", "login", "--cwd", str(repo), "--json")
    assert r.returncode == 0
    assert "1 file(s) edited since indexed, not searched as they are now (src/auth.py)" \
        in r.stderr
    assert cli("index", str(repo)).returncode == 0
    assert "edited since" not in cli("search", "login", "--cwd", str(repo)).stderr


# --------------------------------------------------------------------------- forget


def db_occurrences(home: Path, needle: bytes) -> int:
    """Occurrences of `needle` in the database file and its WAL."""
    return sum(Path(f"{home / 'brainbox.db'}{s}").read_bytes().count(needle)
               for s in ("", "-wal") if Path(f"{home / 'brainbox.db'}{s}").exists())


def test_forget_drops_the_file_from_the_code_index_and_the_database_bytes(repo,
                                                                         brainbox_home):
    vault = (repo / "src" / "vault.py").read_text()
    (repo / "src" / "vault.py").unlink()
    assert cli("index", str(repo)).returncode == 0
    # indexed by a later run: its terms are in a full-text segment of their own, and a
    # deleted row's terms stay in a later segment's delete markers until a merge
    (repo / "src" / "vault.py").write_text(vault)
    assert cli("index", str(repo)).returncode == 0
    hook(repo, "Read", {"file_path": str(repo / "src" / "vault.py")})
    r = cli("search", f"{SECRET}_unlock", "--cwd", str(repo), "--json")
    assert [x["path"] for x in json.loads(r.stdout)] == ["src/vault.py"]
    conn = store.connect()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    conn.close()
    assert db_occurrences(brainbox_home, SECRET.encode()) > 0
    dry = json.loads(cli("forget", "src/vault.py", "--cwd", str(repo), "--dry-run",
                         "--json").stdout)
    assert (dry["indexed_files"], dry["indexed_chunks"], dry["events"]) == (1, 1, 1)
    r = cli("forget", "src/vault.py", "--cwd", str(repo), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["indexed_files"], out["indexed_chunks"], out["deleted_events"]) == (1, 1, 1)
    r = cli("search", f"{SECRET}_unlock", "--cwd", str(repo), "--json")
    assert r.returncode == 0 and json.loads(r.stdout) == []
    assert db_occurrences(brainbox_home, SECRET.encode()) == 0
    assert db_occurrences(brainbox_home, SECRET[2:].encode()) == 0
    conn = store.connect()
    try:
        assert codeindex.indexed_paths(conn, str(repo)) == {".gitignore", "src/auth.py",
                                                            "src/billing.py"}
    finally:
        conn.close()


def test_forget_takes_a_file_only_the_code_index_holds(repo, brainbox_home):
    assert cli("index", str(repo)).returncode == 0
    r = cli("forget", "src/vault.py", "--cwd", str(repo), "--json")  # no event names it
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["indexed_files"] == 1
    assert cli("forget", "src/vault.py", "--cwd", str(repo)).returncode == 1  # gone now


def test_forget_a_glob_drops_its_indexed_files_and_their_vectors(repo, brainbox_home):
    mem = Memory.open(autosave=False)
    try:
        codeindex.build(mem.conn, str(repo))
        codevectors.embed_index(mem.conn, str(repo), FakeEmbedder())
        mem.record({"session": "s", "cwd": str(repo), "tool": "Read",
                    "files": ["src/auth.py"]})
        plan = mem.forget("src/[ab]*.py", project=str(repo), recursive=True)
        assert (plan["indexed_files"], plan["deleted_events"]) == (2, 1)
        assert codeindex.indexed_paths(mem.conn, str(repo)) == {".gitignore", "src/vault.py"}
        assert codevectors.vector_count(mem.conn, str(repo)) == 2
        assert mem.conn.execute("SELECT count(*) FROM code_vectors").fetchone()[0] == 2
        if mem.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'code_vec'").fetchone():
            assert mem.conn.execute("SELECT count(*) FROM code_vec").fetchone()[0] == 2
    finally:
        mem.close()
