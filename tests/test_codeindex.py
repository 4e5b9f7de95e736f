"""The code index, step 1 (issue 16): files listed, chunked by tree-sitter, stored, kept up
to date by content hash; bad input skipped with a counted reason; no tree-sitter on the
cold paths. No numba kernel is compiled here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from brainbox import codeindex, store
from tests.records import old_database


@pytest.fixture
def conn(tmp_path):
    c = store.connect(tmp_path / "b.db")
    yield c
    c.close()


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, body in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            p.write_bytes(body)
        else:
            p.write_text(body)
    return root


def build_with_old_schema(monkeypatch, path, root, migrations: int):
    """Index `root` into a new database at `path` as brainbox did when it had only the first
    `migrations` migrations (the caller patches whatever else that version did otherwise,
    and before 006 there was no code graph), then undo every patch; that build's report."""
    from brainbox import codegraph
    from brainbox.storage import db

    monkeypatch.setattr(db, "MIGRATIONS", db.MIGRATIONS[:migrations])
    monkeypatch.setattr(db, "SCHEMA_VERSION", migrations)
    if migrations < 6:
        monkeypatch.setattr(codegraph, "references", lambda *a: None)
        monkeypatch.setattr(codeindex, "_graph", lambda *a: None)
    old = store.connect(path)
    try:
        return codeindex.build(old, str(root))
    finally:
        old.close()
        monkeypatch.undo()


def symbols(path: str, source: str):
    language, chunker, chunks = codeindex.chunk(path, source.encode())
    return language, chunker, [(s, e, k, n) for s, e, k, n in chunks if k != "module"]


# --- each language with its grammar wheel -------------------------------------------

def test_python_functions_classes_methods_with_decorators_and_lines():
    src = ("import os\n\n@cache\ndef f(x):\n    return x\n\nclass A(B):\n"
           "    def m(self):\n        def inner():\n            pass\n\nX = 1\n")
    language, chunker, chunks = codeindex.chunk("pkg/a.py", src.encode())
    assert (language, chunker) == ("python", codeindex.TREE_SITTER)
    assert chunks == [(1, 1, "module", None), (3, 5, "function", "f"),
                      (7, 10, "class", "A"), (8, 10, "method", "A.m"),
                      (9, 10, "function", "A.m.inner"), (12, 12, "module", None)]


def test_javascript_functions_classes_methods_and_arrow_bindings():
    src = ("import x from 'y';\nfunction f() {}\nclass A {\n  m() { return 1; }\n}\n"
           "const g = () => 2;\nlet h = function () {};\nconst n = 3;\n")
    assert symbols("web/a.js", src) == ("javascript", codeindex.TREE_SITTER, [
        (2, 2, "function", "f"), (3, 5, "class", "A"), (4, 4, "method", "A.m"),
        (6, 6, "function", "g"), (7, 7, "function", "h")])


def test_typescript_interfaces_types_classes_and_functions():
    src = ("interface I { x: number }\nexport class A {\n  m(): void {}\n}\n"
           "export function f(a: number): number { return a; }\ntype T = string;\n")
    assert symbols("src/a.ts", src) == ("typescript", codeindex.TREE_SITTER, [
        (1, 1, "type", "I"), (2, 4, "class", "A"), (3, 3, "method", "A.m"),
        (5, 5, "function", "f"), (6, 6, "type", "T")])


def test_tsx_is_parsed_with_the_tsx_grammar():
    src = "export const C = () => <div>hi</div>;\nfunction D() {\n  return <span/>;\n}\n"
    assert symbols("ui/C.tsx", src) == ("tsx", codeindex.TREE_SITTER, [
        (1, 1, "function", "C"), (2, 4, "function", "D")])
    # the TypeScript grammar alone cannot read JSX: the same text as .ts is a syntax error
    assert codeindex.chunk("ui/C.ts", src.encode())[1] == codeindex.LINES


def test_go_types_functions_and_methods_named_by_receiver():
    src = ("package main\n\ntype S struct {\n\tX int\n}\n\n"
           "func (s *S) M() int { return s.X }\n\nfunc F() {}\n")
    assert symbols("cmd/main.go", src) == ("go", codeindex.TREE_SITTER, [
        (3, 5, "type", "S"), (7, 7, "method", "S.M"), (9, 9, "function", "F")])


def test_rust_structs_impls_traits_and_functions():
    src = ("struct S { x: i32 }\nimpl S {\n    fn m(&self) -> i32 { self.x }\n}\n"
           "trait T { fn t(&self); }\nfn f() {}\n")
    assert symbols("src/lib.rs", src) == ("rust", codeindex.TREE_SITTER, [
        (1, 1, "type", "S"), (2, 4, "impl", "S"), (3, 3, "method", "S.m"),
        (5, 5, "type", "T"), (5, 5, "method", "T.t"), (6, 6, "function", "f")])


def test_java_classes_constructors_methods_and_nested_interfaces():
    src = ("package p;\npublic class A {\n  public A() {}\n  void m() {}\n"
           "  interface I { void n(); }\n}\n")
    assert symbols("src/A.java", src) == ("java", codeindex.TREE_SITTER, [
        (2, 6, "class", "A"), (3, 3, "method", "A.A"), (4, 4, "method", "A.m"),
        (5, 5, "type", "A.I"), (5, 5, "method", "A.I.n")])


# --- windows and fallbacks ----------------------------------------------------------

def test_a_text_file_is_split_into_windows_of_60_lines():
    text = "".join(f"line {i}\n" for i in range(1, 131))
    assert codeindex.chunk("docs/notes.rst", text.encode()) == (None, codeindex.LINES, [
        (1, 60, "lines", None), (61, 120, "lines", None), (121, 130, "lines", None)])
    assert codeindex.chunk("empty.txt", b"") == (None, codeindex.LINES, [])


def test_a_syntax_error_falls_back_to_windows_and_is_counted():
    report = codeindex.Report()
    language, chunker, chunks = codeindex.chunk("bad.py", b"def f(:\n  pass\n", report)
    assert (language, chunker, chunks) == ("python", codeindex.LINES, [(1, 2, "lines", None)])
    assert report.parse_errors == 1 and "bad.py: syntax error" in report.warnings[0]


def test_module_level_lines_outside_definitions_are_module_chunks_without_blank_edges():
    src = "\n\nimport os\n\n\ndef f():\n    pass\n\n\nX = 1\nY = 2\n\n"
    _, _, chunks = codeindex.chunk("m.py", src.encode())
    assert chunks == [(3, 3, "module", None), (6, 7, "function", "f"),
                      (10, 11, "module", None)]


def test_a_missing_grammar_wheel_gives_one_line_and_windows(monkeypatch):
    monkeypatch.setitem(sys.modules, "tree_sitter_rust", None)  # import fails
    monkeypatch.setattr(codeindex, "_parsers", {})
    monkeypatch.setattr(codeindex, "_missing", set())
    report = codeindex.Report()
    for name in ("a.rs", "b.rs"):
        _, chunker, chunks = codeindex.chunk(name, b"fn f() {}\n", report)
        assert (chunker, chunks) == (codeindex.NO_GRAMMAR, [(1, 1, "lines", None)])
    [line] = report.warnings
    assert "no tree-sitter grammar for rust" in line and "tree-sitter-rust" in line
    assert "\n" not in line
    assert codeindex.chunk("a.py", b"def f():\n    pass\n")[1] == codeindex.TREE_SITTER


def test_files_windowed_for_want_of_a_grammar_are_rechunked_once_it_is_installed(
        conn, tmp_path, monkeypatch):
    root = write(tmp_path / "proj", {"lib.rs": "fn f() {}\n", "a.py": "x = 1\n"})
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "tree_sitter_rust", None)
        m.setattr(codeindex, "_parsers", {})
        m.setattr(codeindex, "_missing", set())
        first = codeindex.build(conn, str(root))
        assert first.indexed == 2
        assert codeindex.chunks_of(conn, str(root), "lib.rs") == [(1, 1, "lines", None)]
        again = codeindex.build(conn, str(root))  # still missing: nothing to redo
        assert (again.indexed, again.unchanged) == (0, 2)
    monkeypatch.setattr(codeindex, "_parsers", {})
    monkeypatch.setattr(codeindex, "_missing", set())
    now = codeindex.build(conn, str(root))
    assert (now.indexed, now.unchanged) == (1, 1)
    assert codeindex.chunks_of(conn, str(root), "lib.rs") == [(1, 1, "function", "f")]


# --- listing ------------------------------------------------------------------------

def test_outside_git_the_walk_honours_nested_gitignores_and_skips_dot_git(tmp_path):
    root = write(tmp_path / "p", {
        ".gitignore": "*.log\n!keep.log\nbuild/\n/top.txt\n",
        "a.py": "x = 1\n", "debug.log": "x", "keep.log": "x", "top.txt": "x",
        "sub/top.txt": "x", "build/out.py": "x", "sub/build/deep.py": "x",
        "sub/.gitignore": "secret.*\n", "sub/secret.py": "x", "sub/ok.py": "x",
        "other/secret.py": "x", ".git/config": "x",
    })
    assert codeindex.list_files(str(root)) == [
        ".gitignore", "a.py", "keep.log", "other/secret.py", "sub/.gitignore", "sub/ok.py",
        "sub/top.txt"]


def test_in_a_git_work_tree_only_tracked_files_are_listed(tmp_path):
    root = write(tmp_path / "g", {"a.py": "x = 1\n", "b.py": "y = 2\n", "untracked.py": "z"})
    git = ["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "a.py", "b.py"], check=True)
    assert codeindex.list_files(str(root)) == ["a.py", "b.py"]


# --- building, incrementally --------------------------------------------------------

def project(tmp_path) -> Path:
    return write(tmp_path / "proj", {
        "src/app.py": "def main():\n    return 1\n",
        "src/util.py": "class U:\n    def go(self):\n        pass\n",
        "web/a.js": "function f() {}\n",
        "README.md": "# proj\n\ntext\n",
    })


def test_build_stores_every_file_and_its_chunks(conn, tmp_path):
    root = project(tmp_path)
    report = codeindex.build(conn, str(root))
    assert (report.seen, report.indexed, report.unchanged, report.removed) == (4, 4, 0, 0)
    assert codeindex.chunks_of(conn, str(root), "src/util.py") == [
        (1, 3, "class", "U"), (2, 3, "method", "U.go")]
    assert codeindex.chunks_of(conn, str(root), "README.md") == [(1, 3, "lines", None)]
    t = codeindex.totals(conn, str(root))
    assert t["files"] == 4 and t["chunks"] == 5
    assert t["bytes"] == sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def test_a_second_run_rechunks_only_the_changed_file_and_drops_a_deleted_one(conn, tmp_path):
    root = project(tmp_path)
    codeindex.build(conn, str(root))
    again = codeindex.build(conn, str(root))
    assert (again.indexed, again.unchanged, again.removed) == (0, 4, 0)
    (root / "src/app.py").write_text("def main():\n    return 2\n\ndef extra():\n    pass\n")
    (root / "web/a.js").unlink()
    (root / "README.md").touch()  # a new mtime, the same bytes: unchanged
    third = codeindex.build(conn, str(root))
    assert (third.seen, third.indexed, third.unchanged, third.removed) == (3, 1, 2, 1)
    assert [c[3] for c in codeindex.chunks_of(conn, str(root), "src/app.py")] == [
        "main", "extra"]
    assert codeindex.chunks_of(conn, str(root), "web/a.js") == []
    assert codeindex.totals(conn, str(root))["files"] == 3


def test_a_new_chunker_version_rechunks_unchanged_bytes(conn, tmp_path, monkeypatch):
    root = project(tmp_path)
    codeindex.build(conn, str(root))
    monkeypatch.setattr(codeindex, "TREE_SITTER", codeindex.TREE_SITTER + ".next")
    report = codeindex.build(conn, str(root))
    assert (report.indexed, report.unchanged) == (3, 1)  # the three source files


def test_index_files_reindexes_named_files_and_drops_missing_ones(conn, tmp_path):
    root = project(tmp_path)
    codeindex.build(conn, str(root))
    (root / "src/util.py").write_text("def v():\n    pass\n")
    (root / "src/app.py").unlink()
    report = codeindex.index_files(conn, str(root), [
        "src/util.py", str(root / "src/app.py"), "../outside.py", "README.md"])
    assert (report.seen, report.indexed, report.unchanged, report.removed) == (3, 1, 1, 1)
    assert codeindex.chunks_of(conn, str(root), "src/util.py") == [(1, 2, "function", "v")]
    assert codeindex.totals(conn, str(root))["files"] == 3


def test_two_projects_share_a_database_without_mixing(conn, tmp_path):
    a = write(tmp_path / "a", {"x.py": "def a():\n    pass\n"})
    b = write(tmp_path / "b", {"x.py": "def b():\n    pass\n", "y.txt": "y\n"})
    codeindex.build(conn, str(a))
    codeindex.build(conn, str(b))
    assert codeindex.build(conn, str(a)).removed == 0
    assert codeindex.chunks_of(conn, str(a), "x.py") == [(1, 2, "function", "a")]
    assert codeindex.totals(conn, str(b))["files"] == 2


# --- bad input ----------------------------------------------------------------------

def test_bad_input_is_skipped_with_a_counted_reason_and_the_rest_is_indexed(
        conn, tmp_path, monkeypatch):
    outside = write(tmp_path / "outside", {"secret.py": "TOKEN = 1\n"})
    root = write(tmp_path / "proj", {
        "good.py": "def ok():\n    pass\n",
        "broken.py": "def f(:\n",
        "blob.bin": b"\x89PNG\r\n\x1a\n\x00\x00binary",
        "late-nul.txt": b"a" * codeindex.BINARY_PROBE + b"\x00",  # NUL past the probe
        "huge.txt": b"x\n" * (codeindex.MAX_BYTES // 2 + 1),
        "gone.py": "def g():\n    pass\n",
    })
    (root / "leak.py").symlink_to(outside / "secret.py")
    (root / "inner.py").symlink_to(root / "good.py")  # inside the project: indexed
    real_read = codeindex._read

    def racing_read(r, real_root, path, report):
        if path == "gone.py":  # deleted between listing and reading
            os.unlink(os.path.join(r, path))
        return real_read(r, real_root, path, report)

    monkeypatch.setattr(codeindex, "_read", racing_read)
    report = codeindex.build(conn, str(root))
    assert report.skipped == {"binary": 1, "symlink_outside": 1, "too_large": 1,
                              "vanished": 1}
    assert report.parse_errors == 1
    assert report.indexed == 4  # good.py, broken.py (as windows), late-nul.txt, inner.py
    warned = "\n".join(report.warnings)
    for name in ("blob.bin", "leak.py", "huge.txt", "gone.py", "broken.py"):
        assert name in warned
    assert "TOKEN" not in warned
    assert codeindex.chunks_of(conn, str(root), "good.py") == [(1, 2, "function", "ok")]
    assert codeindex.chunks_of(conn, str(root), "leak.py") == []


def test_a_path_through_a_symlinked_folder_out_of_the_project_is_not_read(conn, tmp_path):
    outside = write(tmp_path / "outside", {"secret.py": "def leak():\n    pass\n"})
    root = write(tmp_path / "proj", {"a.py": "x = 1\n"})
    (root / "vendor").symlink_to(outside, target_is_directory=True)
    assert codeindex.list_files(str(root)) == ["a.py"]  # the walk does not follow it
    report = codeindex.index_files(conn, str(root), ["vendor/secret.py", "a.py"])
    assert report.skipped == {"symlink_outside": 1} and report.indexed == 1
    assert codeindex.totals(conn, str(root))["files"] == 1


def test_a_fifo_is_skipped_without_blocking(conn, tmp_path):
    root = write(tmp_path / "proj", {"a.py": "x = 1\n"})
    os.mkfifo(root / "pipe.txt")
    report = codeindex.build(conn, str(root))
    assert report.skipped == {"unreadable": 1} and report.indexed == 1


def test_a_file_that_was_indexed_and_became_binary_is_dropped(conn, tmp_path):
    root = write(tmp_path / "proj", {"a.txt": "text\n"})
    codeindex.build(conn, str(root))
    (root / "a.txt").write_bytes(b"\x00\x01")
    report = codeindex.build(conn, str(root))
    assert report.skipped == {"binary": 1} and report.removed == 1
    assert codeindex.totals(conn, str(root))["files"] == 0


# --- the database -------------------------------------------------------------------

def test_an_old_database_upgrades_to_the_code_index_and_keeps_its_events(tmp_path,
                                                                          monkeypatch):
    from brainbox.storage import db

    path = tmp_path / "old.db"
    old_database(monkeypatch, path, 2)
    conn = store.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == db.SCHEMA_VERSION >= 3
    assert store.count_events(conn) == 1
    root = write(tmp_path / "proj", {"a.py": "def a():\n    pass\n"})
    assert codeindex.build(conn, str(root)).indexed == 1


# --- the command line ---------------------------------------------------------------

def test_the_index_command_prints_json_counts_and_writes_a_private_database(tmp_path):
    from brainbox.cli.app import cli

    root = project(tmp_path)
    (root / "blob.bin").write_bytes(b"\x00" * 10)
    db = tmp_path / "home" / "b.db"
    db.parent.mkdir(mode=0o700)
    r = CliRunner().invoke(cli, ["--db", str(db), "index", str(root), "--json",
                                 "--no-progress"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert {k: out[k] for k in ("files", "chunks", "indexed", "unchanged", "removed",
                                "skipped")} == {"files": 4, "chunks": 5, "indexed": 4,
                                                "unchanged": 0, "removed": 0,
                                                "skipped": {"binary": 1}}
    assert out["bytes"] > 0 and out["seconds"] >= 0
    assert "blob.bin: skipped (binary)" in r.stderr and "\r" not in r.stderr
    assert oct(db.stat().st_mode & 0o777) == "0o600"
    again = CliRunner().invoke(cli, ["index", str(root), "--db", str(db), "--json",
                                     "--no-progress"], catch_exceptions=False)
    assert json.loads(again.stdout)["unchanged"] == 4


def test_the_index_command_shows_progress_on_stderr_and_a_summary_on_stdout(tmp_path,
                                                                            monkeypatch):
    from brainbox.cli import index_cmd
    from brainbox.cli.app import cli

    root = project(tmp_path)
    db = str(tmp_path / "b.db")
    quick = CliRunner().invoke(cli, ["--db", db, "index", str(root)], catch_exceptions=False)
    assert quick.exit_code == 0 and quick.stderr == ""  # a short run: no progress line
    assert "4 files, 5 chunks" in quick.stdout and "skipped: none" in quick.stdout
    monkeypatch.setattr(index_cmd, "PROGRESS_EVERY", 0.0)  # as if every file were slow
    r = CliRunner().invoke(cli, ["--db", db, "index", str(root)], catch_exceptions=False)
    assert r.exit_code == 0
    lines = r.stderr.split("\r")
    assert lines[0] == "" and len(lines) == 5 and lines[-1].endswith("\n")
    assert lines[-1].startswith("index: 4 files, 0 indexed, 4 unchanged")
    assert "\r" not in r.stdout and "unchanged 4" in r.stdout


def test_the_index_command_refuses_a_missing_directory(tmp_path):
    from brainbox.cli.app import cli

    r = CliRunner().invoke(cli, ["index", str(tmp_path / "nope")])
    assert r.exit_code == 2


# --- cold start ---------------------------------------------------------------------

PARSING = ("tree_sitter", "tree_sitter_python", "tree_sitter_javascript",
           "tree_sitter_typescript", "tree_sitter_go", "tree_sitter_rust",
           "tree_sitter_java", "pathspec")


def imported(code: str, stdin: str = "") -> set[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], input=stdin,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {line.rsplit("|", 1)[-1].strip().split(".")[0]
            for line in proc.stderr.splitlines() if line.startswith("import time:")}


def test_import_brainbox_and_the_record_hook_import_no_tree_sitter(tmp_path):
    assert not imported("import brainbox") & set(PARSING)
    repo = write(tmp_path / "repo", {".git/HEAD": "x", "a.py": "x = 1\n"})
    payload = json.dumps({"session_id": "s", "cwd": str(repo), "hook_event_name":
                          "PostToolUse", "tool_name": "Edit",
                          "tool_input": {"file_path": str(repo / "a.py")},
                          "tool_response": {}})
    hook = ("import sys\nfrom brainbox.cli.entry import main\n"
            "sys.exit(main(['hook', 'claude', 'PostToolUse']))\n")
    assert not imported(hook, payload) & set(PARSING)
    # the probe sees these imports when they happen
    assert "tree_sitter" in imported(
        "from brainbox import codeindex\ncodeindex.chunk('a.py', b'def f():\\n  pass\\n')")


# --- a real repository ---------------------------------------------------------------

def test_thirty_files_of_the_sympy_snapshot(conn, sympy_core):
    root = sympy_core(30)
    report = codeindex.build(conn, str(root))
    assert report.seen == 30 and report.indexed == 30 and not report.skipped
    t = codeindex.totals(conn, str(root))
    assert t["files"] == 30 and t["chunks"] > 300
    basic = [c for c in codeindex.chunks_of(conn, str(root), "sympy/core/basic.py")
             if c[3] and c[3].startswith("Basic.")]
    assert any(c[3] == "Basic.subs" and c[2] == "method" for c in basic)
