"""The code graph (issue 16): import, call and inheritance edges between a project's indexed
files, read from the chunker's parse, resolved against the whole file set, kept right by
incremental runs; the prior matrix P over them. No numba kernel is compiled here."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest
from click.testing import CliRunner

from brainbox import codegraph, codeindex, store
from tests.test_codeindex import build_with_old_schema, write


@pytest.fixture
def conn(tmp_path):
    c = store.connect(tmp_path / "b.db")
    yield c
    c.close()


def graph(conn, root, files=None) -> set[tuple[str, str, str]]:
    """Write `files` under `root`, index it, and return its edges without weights."""
    if files:
        write(root, files)
    codeindex.build(conn, str(root))
    return {(s, d, k) for s, d, k, _w in codegraph.edges(conn, str(root))}


def imports(edges) -> set[tuple[str, str]]:
    return {(s, d) for s, d, k in edges if k == "import"}


# --- Python resolution --------------------------------------------------------------------

def test_python_absolute_relative_package_and_submodule_imports(conn, tmp_path):
    edges = graph(conn, tmp_path, {
        "pkg/__init__.py": "",
        "pkg/util.py": "X = 1\n",
        "pkg/sub/__init__.py": "from .. import util\n",  # relative, up from the package
        "pkg/sub/leaf.py": "from . import sibling\nfrom ..util import X\n",
        "pkg/sub/sibling.py": "import pkg.util\nimport pkg\n",
        "app.py": "from pkg.sub import leaf\nfrom pkg import sub\nimport json\n",
    })
    assert imports(edges) == {
        ("pkg/sub/__init__.py", "pkg/util.py"),
        ("pkg/sub/leaf.py", "pkg/sub/sibling.py"),      # from . import x: a submodule
        ("pkg/sub/leaf.py", "pkg/util.py"),              # from ..a import b: a name in a
        ("pkg/sub/sibling.py", "pkg/util.py"),           # import a.b: a/b.py only
        ("pkg/sub/sibling.py", "pkg/__init__.py"),       # import a: a/__init__.py
        ("app.py", "pkg/sub/leaf.py"),                   # from a.b import c, c a module
        ("app.py", "pkg/sub/__init__.py"),               # from a import b, b a package
    }


def test_python_src_layout_and_a_scripts_own_folder(conn, tmp_path):
    edges = graph(conn, tmp_path, {
        "src/mylib/__init__.py": "",
        "src/mylib/core.py": "def f():\n    pass\n",
        "tests/test_core.py": "from mylib.core import f\nimport helpers\n",
        "tests/helpers.py": "",
        "lib/other.py": "",
        "tools/run.py": "import other\nimport missing.module\n",
    })
    assert imports(edges) == {("tests/test_core.py", "src/mylib/core.py"),
                              ("tests/test_core.py", "tests/helpers.py"),
                              ("tools/run.py", "lib/other.py")}


def test_a_relative_import_above_the_project_and_unknown_modules_give_no_edge(conn, tmp_path):
    edges = graph(conn, tmp_path, {"a.py": "from ... import x\nfrom .. import y\nimport os\n",
                                   "os.txt": "not python\n"})
    assert edges == set()


# --- the other languages' imports -----------------------------------------------------------

def test_javascript_relative_imports_with_extensions_index_and_require(conn, tmp_path):
    edges = graph(conn, tmp_path, {
        "web/app.js": ("import React from 'react';\nimport {f} from './util';\n"
                       "import * as w from '../lib/widgets';\nconst cfg = require('./config');\n"
                       "export {g} from './reexport.js';\nimport('./lazy.mjs');\n"),
        "web/util.js": "export function f() {}\n",
        "lib/widgets/index.jsx": "export const W = () => 1;\n",
        "web/config.cjs": "module.exports = {};\n",
        "web/reexport.js": "export function g() {}\n",
        "web/lazy.mjs": "export default 1;\n",
    })
    assert imports(edges) == {("web/app.js", "web/util.js"),
                              ("web/app.js", "lib/widgets/index.jsx"),
                              ("web/app.js", "web/config.cjs"),
                              ("web/app.js", "web/reexport.js"),
                              ("web/app.js", "web/lazy.mjs")}


def test_typescript_imports_resolve_ts_files_also_from_js_specifiers(conn, tmp_path):
    edges = graph(conn, tmp_path, {
        "src/main.ts": ("import {Model} from './model.js';\nimport type {T} from './types';\n"
                        "import {View} from './ui';\n"),
        "src/model.ts": "export class Model {}\n",
        "src/types.d.ts": "export type T = number;\n",
        "src/ui/index.tsx": "export const View = () => <div/>;\n",
    })
    assert imports(edges) == {("src/main.ts", "src/model.ts"), ("src/main.ts", "src/types.d.ts"),
                              ("src/main.ts", "src/ui/index.tsx")}


def test_go_imports_reach_every_non_test_file_of_the_package_folder(conn, tmp_path):
    edges = graph(conn, tmp_path, {
        "go.mod": "module example.com/proj\n\ngo 1.22\n",
        "cmd/tool/main.go": ('package main\n\nimport (\n\t"fmt"\n\t"example.com/proj/pkg/store"\n'
                             '\tu "example.com/proj/internal/util"\n)\n\nfunc main() {}\n'),
        "pkg/store/store.go": "package store\n\nfunc Open() {}\n",
        "pkg/store/cache.go": "package store\n",
        "pkg/store/store_test.go": "package store\n",
        "internal/util/util.go": "package util\n",
    })
    assert imports(edges) == {("cmd/tool/main.go", "pkg/store/store.go"),
                              ("cmd/tool/main.go", "pkg/store/cache.go"),
                              ("cmd/tool/main.go", "internal/util/util.go")}


def test_go_without_go_mod_matches_a_suffix_of_two_elements_not_one(conn, tmp_path):
    edges = graph(conn, tmp_path, {
        "main.go": 'package main\n\nimport (\n\t"github.com/x/proj/pkg/fmt"\n\t"errors"\n)\n',
        "pkg/fmt/fmt.go": "package fmt\n",
        "errors/errors.go": "package errors\n",  # the standard library's name, one element
    })
    assert imports(edges) == {("main.go", "pkg/fmt/fmt.go")}


def test_rust_mod_declarations_and_use_crate_paths(conn, tmp_path):
    edges = graph(conn, tmp_path, {
        "src/lib.rs": "mod parser;\nmod net;\nmod inline { }\nuse crate::net::http::get;\n",
        "src/parser.rs": "mod lexer;\nuse super::net;\nuse std::io;\n",
        "src/parser/lexer.rs": "use crate::parser::{self, Token as T};\n",
        "src/net/mod.rs": "pub mod http;\n",
        "src/net/http.rs": "pub fn get() {}\n",
    })
    assert imports(edges) == {
        ("src/lib.rs", "src/parser.rs"), ("src/lib.rs", "src/net/mod.rs"),
        ("src/lib.rs", "src/net/http.rs"),              # use crate::a::b::item
        ("src/parser.rs", "src/parser/lexer.rs"),       # a.rs owns a/
        ("src/parser.rs", "src/net/mod.rs"),            # use super::x
        ("src/parser/lexer.rs", "src/parser.rs"),       # use crate::a::{self, ..}
        ("src/net/mod.rs", "src/net/http.rs"),
    }


def test_java_imports_static_and_wildcard(conn, tmp_path):
    base = "src/main/java/com/acme/"
    edges = graph(conn, tmp_path, {
        base + "app/Main.java": ("package com.acme.app;\nimport com.acme.model.User;\n"
                                 "import static com.acme.util.Strings.trim;\n"
                                 "import com.acme.io.*;\nimport java.util.List;\n"
                                 "class Main {}\n"),
        base + "model/User.java": "package com.acme.model;\npublic class User {}\n",
        base + "util/Strings.java": "package com.acme.util;\npublic class Strings {}\n",
        base + "io/Reader.java": "package com.acme.io;\npublic class Reader {}\n",
        base + "io/Writer.java": "package com.acme.io;\npublic class Writer {}\n",
    })
    main = base + "app/Main.java"
    assert imports(edges) == {(main, base + "model/User.java"), (main, base + "util/Strings.java"),
                              (main, base + "io/Reader.java"), (main, base + "io/Writer.java")}


# --- inheritance and calls -----------------------------------------------------------------

def test_python_bases_bare_dotted_and_through_a_package_reexport(conn, tmp_path):
    edges = graph(conn, tmp_path, {
        "core/__init__.py": "from .basic import Basic\n",
        "core/basic.py": "class Basic:\n    pass\n",
        "core/expr.py": "from core import Basic\n\nclass Expr(Basic):\n    pass\n",
        "shapes.py": ("import core.expr as ce\nfrom core import basic\n\n"
                      "class Shape(ce.Expr):\n    pass\n\nclass Dot(basic.Basic, object):\n"
                      "    pass\n\nclass Local:\n    pass\n\nclass Mine(Local):\n    pass\n"),
    })
    inherit = {(s, d) for s, d, k in edges if k == "inherit"}
    assert inherit == {("core/expr.py", "core/basic.py"), ("shapes.py", "core/expr.py"),
                       ("shapes.py", "core/basic.py")}


def test_an_unimported_base_resolves_to_its_only_definer_and_ambiguity_gives_none(conn,
                                                                                  tmp_path):
    edges = graph(conn, tmp_path, {
        "a/model.py": "class Model:\n    pass\n\nclass Node:\n    pass\n",
        "b/tree.py": "class Node:\n    pass\n",
        "c/user.py": "class User(Model):\n    pass\n\nclass Leaf(Node):\n    pass\n",
        "b/leaf.py": "class Leaf(Node):\n    pass\n",  # same folder wins the tie
    })
    assert {(s, d) for s, d, k in edges if k == "inherit"} == {
        ("c/user.py", "a/model.py"), ("b/leaf.py", "b/tree.py")}


def test_js_ts_and_java_inheritance(conn, tmp_path):
    edges = graph(conn, tmp_path, {
        "ui/base.js": "export default class Base {}\n",
        "ui/button.js": "import Base from './base';\nclass Button extends Base {}\n",
        "ts/shape.ts": "export class Shape {}\nexport interface Drawable {}\n",
        "ts/circle.ts": ("import {Shape, Drawable} from './shape';\n"
                         "class Circle extends Shape implements Drawable {}\n"),
        "j/p/Animal.java": "package p;\npublic class Animal {}\n",
        "j/p/Pet.java": "package p;\npublic interface Pet {}\n",
        "j/p/Dog.java": "package p;\npublic class Dog extends Animal implements Pet {}\n",
    })
    assert {(s, d) for s, d, k in edges if k == "inherit"} == {
        ("ui/button.js", "ui/base.js"), ("ts/circle.ts", "ts/shape.ts"),
        ("j/p/Dog.java", "j/p/Animal.java"), ("j/p/Dog.java", "j/p/Pet.java")}


def test_python_calls_through_from_imports_module_imports_and_star_imports(conn, tmp_path):
    write(tmp_path, {
        "m.py": "def f():\n    pass\n\ndef g():\n    pass\n\ndef h():\n    pass\n\nclass C:\n"
                "    pass\n",
        "one.py": "from m import f\n\nf()\n",
        "two.py": "import m\n\nm.f()\nm.g()\nm.f()\n",
        "many.py": "from m import f, g as gg\nimport m as mm\n\nf(); gg(); mm.h(); mm.C()\n",
        "star.py": "from m import *\n\ndef local():\n    pass\n\nf()\nlocal()\nunknown()\n",
        "self.py": "def f():\n    pass\n\nf()\n",
    })
    codeindex.build(conn, str(tmp_path))
    calls = {(s, d): w for s, d, k, w in codegraph.edges(conn, str(tmp_path)) if k == "call"}
    assert calls == {("one.py", "m.py"): 0.25, ("two.py", "m.py"): 0.3,
                     ("many.py", "m.py"): 0.35, ("star.py", "m.py"): 0.25}


def test_a_call_through_a_package_reexport_reaches_the_defining_file(conn, tmp_path):
    edges = graph(conn, tmp_path, {
        "pkg/__init__.py": "from .api import *\n",
        "pkg/api.py": "from .impl import run\nfrom .far import far\n",
        "pkg/impl.py": "def run():\n    pass\n",
        "pkg/far.py": "from .farther import far\n",
        "pkg/farther.py": "from .farthest import far\n",
        "pkg/farthest.py": "def far():\n    pass\n",
        "r.py": "import pkg\n\npkg.run()\npkg.far()\n",
    })
    # pkg -> api (star) -> impl: 2 hops; far needs 4, over REEXPORT_DEPTH = 3
    assert {(s, d) for s, d, k in edges if k == "call"} == {("r.py", "pkg/impl.py")}


def test_a_later_import_rebinds_a_name_as_python_runs_them(conn, tmp_path):
    write(tmp_path, {"x.py": "def f():\n    pass\n", "y.py": "def f():\n    pass\n",
                     "a.py": "from y import f\nimport x as f\n\nf.f()\n",
                     "b.py": "import x as f\nfrom y import f\n\nf()\n"})
    codeindex.build(conn, str(tmp_path))
    calls = {(s, d) for s, d, k, _w in codegraph.edges(conn, str(tmp_path)) if k == "call"}
    assert calls == {("a.py", "x.py"), ("b.py", "y.py")}


def test_js_calls_through_named_and_namespace_imports(conn, tmp_path):
    edges = graph(conn, tmp_path, {
        "a.js": "export function run() {}\nexport function stop() {}\n",
        "b.js": "import {run} from './a';\nimport * as A from './a';\nrun(); A.stop();\n",
        "c.js": "const {run} = require('./a');\nrun();\n",
    })
    assert {(s, d) for s, d, k in edges if k == "call"} == {("b.js", "a.js"), ("c.js", "a.js")}


def test_call_weight_grows_with_distinct_names_and_is_capped():
    assert [codegraph.call_weight(n) for n in (1, 2, 3, 10)] == [0.25, 0.3, 0.35, 0.35]
    assert all(0.2 < codegraph.call_weight(n) <= 0.35 for n in range(1, 50))


def test_no_self_edges_and_no_edge_to_a_file_that_is_not_indexed(conn, tmp_path):
    edges = graph(conn, tmp_path, {
        ".gitignore": "gen/\n",
        "pkg/__init__.py": "from pkg import x\nfrom . import gen\nimport pkg\n",
        "pkg/x.py": "import pkg.x\n",
        "gen/mod.py": "def f():\n    pass\n",
        "use.py": "from gen.mod import f\nf()\n",
    })
    assert edges == {("pkg/__init__.py", "pkg/x.py", "import")}


def test_one_edge_per_pair_and_kind(conn, tmp_path):
    edges = graph(conn, tmp_path, {"m.py": "def f():\n    pass\n",
                                   "a.py": "import m\nimport m\nfrom m import f\n"
                                           "def g():\n    from m import f\n    f()\n"})
    found = [e[:3] for e in codegraph.edges(conn, str(tmp_path))]
    assert sorted(found) == sorted(edges) == [("a.py", "m.py", "call"),
                                              ("a.py", "m.py", "import")]


# --- incremental runs ---------------------------------------------------------------------

PROJECT = {
    "pkg/__init__.py": "from .core import Base, helper\n",
    "pkg/core.py": "class Base:\n    pass\n\ndef helper():\n    pass\n",
    "pkg/shapes.py": "from pkg import Base, helper\n\nclass Shape(Base):\n    pass\n\nhelper()\n",
    "app.py": "import pkg.shapes\nfrom pkg.extra import more\n\nmore()\n",
    "web/a.js": "import {b} from './b';\nb();\n",
    "web/b.js": "export function b() {}\n",
}


def full_edges(tmp_path, root) -> list:
    fresh = store.connect(tmp_path / f"fresh{len(list(tmp_path.glob('fresh*')))}.db")
    try:
        codeindex.build(fresh, str(root))
        return codegraph.edges(fresh, str(root))
    finally:
        fresh.close()


def test_incremental_runs_give_the_edges_of_a_full_build_after_add_change_delete(conn,
                                                                                 tmp_path):
    root = tmp_path / "proj"
    write(root, PROJECT)
    codeindex.build(conn, str(root))
    before = codegraph.edges(conn, str(root))
    assert before == full_edges(tmp_path, root)
    assert [e for e in before if e[0] == "app.py"] == [  # pkg.extra is absent: no edge
        ("app.py", "pkg/shapes.py", "import", 0.2)]

    write(root, {"pkg/extra.py": "def more():\n    pass\n"})  # add: app.py now points to it
    codeindex.build(conn, str(root))
    added = codegraph.edges(conn, str(root))
    assert ("app.py", "pkg/extra.py", "import", 0.2) in added
    assert ("app.py", "pkg/extra.py", "call", 0.25) in added
    assert added == full_edges(tmp_path, root)

    write(root, {"pkg/core.py": "def helper():\n    pass\n"})  # change: Base moves away
    write(root, {"pkg/base.py": "class Base:\n    pass\n"})
    codeindex.build(conn, str(root))
    changed = codegraph.edges(conn, str(root))
    assert changed == full_edges(tmp_path, root)
    write(root, {"pkg/core.py": "def helper():\n    pass\n\ndef other():\n    pass\n",
                 "pkg/__init__.py": "from .core import helper, other\nfrom .base import Base\n",
                 "use.py": "from pkg import helper, other\n\nhelper()\nother()\n"})
    codeindex.build(conn, str(root))
    assert ("use.py", "pkg/core.py", "call", 0.3) in codegraph.edges(conn, str(root))
    # a weight moves with neither end changed: the package takes `other` from elsewhere
    write(root, {"pkg/__init__.py": "from .core import helper\nfrom .base import Base\n"
                                    "from .more import other\n",
                 "pkg/more.py": "def other():\n    pass\n"})
    codeindex.build(conn, str(root))
    changed = codegraph.edges(conn, str(root))
    assert ("use.py", "pkg/core.py", "call", 0.25) in changed
    assert ("pkg/shapes.py", "pkg/base.py", "inherit", 0.3) in changed
    assert ("pkg/shapes.py", "pkg/core.py", "inherit", 0.3) not in changed
    assert changed == full_edges(tmp_path, root)

    (root / "pkg/extra.py").unlink()  # delete: the edges to it go
    (root / "web/b.js").unlink()
    report = codeindex.build(conn, str(root))
    assert report.removed == 2
    deleted = codegraph.edges(conn, str(root))
    assert not [e for e in deleted if "pkg/extra.py" in e or "web/b.js" in e]
    assert deleted == full_edges(tmp_path, root)


def test_index_files_resolves_the_edges_of_the_files_pointing_to_a_named_one(conn, tmp_path):
    root = tmp_path / "proj"
    write(root, PROJECT)
    codeindex.build(conn, str(root))
    write(root, {"pkg/extra.py": "def more():\n    pass\n"})
    codeindex.index_files(conn, str(root), ["pkg/extra.py"])
    assert codegraph.edges(conn, str(root)) == full_edges(tmp_path, root)
    (root / "web/b.js").unlink()
    codeindex.index_files(conn, str(root), ["web/b.js"])
    assert codegraph.edges(conn, str(root)) == full_edges(tmp_path, root)


def test_an_unchanged_run_does_not_resolve_and_a_cut_short_run_is_resolved_next(
        conn, tmp_path, monkeypatch):
    root = tmp_path / "proj"
    write(root, PROJECT)
    assert codeindex.build(conn, str(root)).graph_seconds > 0
    assert codeindex.build(conn, str(root)).graph_seconds == 0.0  # nothing changed
    write(root, {"pkg/extra.py": "def more():\n    pass\n"})

    def crash(*_a):
        raise KeyboardInterrupt

    monkeypatch.setattr(codegraph, "rebuild", crash)
    with pytest.raises(KeyboardInterrupt):
        codeindex.build(conn, str(root))
    monkeypatch.undo()
    # the file is stored; the edges from and to it were dropped, the project marked stale
    assert not [e for e in codegraph.edges(conn, str(root)) if "pkg/extra.py" in e[:2]]
    again = codeindex.build(conn, str(root))
    assert again.indexed == 0 and again.graph_seconds > 0
    assert codegraph.edges(conn, str(root)) == full_edges(tmp_path, root)


def test_removing_a_file_drops_its_edges_in_the_same_transaction(conn, tmp_path):
    from brainbox.storage import codeindex as sql
    from brainbox.storage.db import atomic

    root = tmp_path / "proj"
    write(root, PROJECT)
    codeindex.build(conn, str(root))
    with atomic(conn):
        sql.remove_files(conn, str(root), ["pkg/core.py"])
    assert not [e for e in codegraph.edges(conn, str(root)) if "pkg/core.py" in e[:2]]
    assert [e for e in codegraph.edges(conn, str(root)) if e[0] == "web/a.js"]


def test_a_file_that_fails_to_parse_is_counted_and_the_rest_gets_edges(conn, tmp_path):
    root = tmp_path / "proj"
    write(root, {**PROJECT, "broken.py": "import pkg.core\ndef f(:\n    pass\n",
                 "uses_broken.py": "import broken\n"})
    report = codeindex.build(conn, str(root))
    assert report.parse_errors == 1
    assert [w for w in report.warnings if w.startswith("broken.py:")] == [
        "broken.py: syntax error: split into windows of 60 lines, no code graph edges from it"]
    edges = codegraph.edges(conn, str(root))
    assert not [e for e in edges if e[0] == "broken.py"]
    assert ("uses_broken.py", "broken.py", "import", 0.2) in edges  # edges to it resolve
    assert ("pkg/shapes.py", "pkg/core.py", "inherit", 0.3) in edges


def test_an_old_database_gets_references_and_edges_on_the_next_index(tmp_path, monkeypatch):
    from brainbox.storage import db

    root = tmp_path / "proj"
    write(root, PROJECT)
    path = tmp_path / "old.db"
    monkeypatch.setattr(codeindex, "TREE_SITTER", "tree-sitter/2")
    first = build_with_old_schema(monkeypatch, path, root, 5)
    conn = store.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == db.SCHEMA_VERSION >= 6
    again = codeindex.build(conn, str(root))
    assert again.indexed == first.indexed  # re-chunked: the chunker version moved
    assert codegraph.edges(conn, str(root)) == full_edges(tmp_path, root) != []
    conn.close()


# --- the API for recall, the command, the cold path ----------------------------------------

def test_prior_matrix_takes_the_largest_weight_over_kinds_and_only_the_given_paths(
        conn, tmp_path):
    import numpy as np

    root = tmp_path / "proj"
    write(root, PROJECT)
    codeindex.build(conn, str(root))
    paths = ["pkg/shapes.py", "pkg/__init__.py", "pkg/core.py", "nowhere.py"]
    P = codegraph.prior_matrix(conn, str(root), paths)
    assert P.shape == (4, 4) and P.dtype == np.float32 and P.has_sorted_indices
    want = np.zeros((4, 4), dtype=np.float32)
    want[0, 1] = 0.2                # shapes -> __init__: import
    want[0, 2] = 0.3                # shapes -> core: inherit 0.3 and call 0.25
    want[1, 2] = 0.2                # __init__ -> core: import (a re-export calls nothing)
    np.testing.assert_array_equal(P.toarray(), want)
    S = codegraph.prior_matrix(conn, str(root), paths, symmetric=True)
    np.testing.assert_array_equal(S.toarray(), np.maximum(want, want.T))
    assert codegraph.prior_matrix(conn, str(root), []).shape == (0, 0)
    with pytest.raises(ValueError, match="repeat"):
        codegraph.prior_matrix(conn, str(root), ["a.py", "a.py"])


def test_the_index_command_reports_edges_by_kind(tmp_path):
    from brainbox.cli.app import cli

    root = tmp_path / "proj"
    write(root, PROJECT)
    res = CliRunner().invoke(cli, ["index", str(root), "--json", "--no-progress"],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    db = sqlite3.connect(tmp_path / "bbhome" / "brainbox.db")
    by_kind = dict(db.execute("SELECT kind, count(*) FROM code_edges GROUP BY kind"))
    assert out["edges"] == {"count": sum(by_kind.values()),
                            "by_kind": {"call": by_kind["call"], "import": by_kind["import"],
                                        "inherit": by_kind["inherit"]}}
    text = CliRunner().invoke(cli, ["index", str(root), "--no-progress"],
                              catch_exceptions=False).stdout
    assert f"code graph: {out['edges']['count']} edges (call {by_kind['call']}" in text


def test_importing_the_code_graph_loads_neither_tree_sitter_nor_scipy():
    code = ("import sys, brainbox.codegraph, brainbox.codeindex; "
            "print(sorted(m for m in ('tree_sitter', 'scipy', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
