"""Keyword search over the code index (issue 16): BM25 over chunks in FTS5, kept in step
with the index, hostile queries escaped, an index built before migration 004 upgraded on
the next `brainbox index`, the `brainbox search` command. No numba kernel is compiled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from brainbox import codeindex, codesearch, store
from tests.test_codeindex import build_with_old_schema


@pytest.fixture
def conn(tmp_path):
    c = store.connect(tmp_path / "b.db")
    yield c
    c.close()


def write(root: Path, files: dict[str, str]) -> Path:
    for name, body in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)
    return root


# filler files so that a term in a few chunks has a positive BM25 idf (FTS5 floors the idf
# of a term found in over half the rows at 1e-6, and every test query would tie)
FILLER = {f"lib/mod{i}.py": f"def helper_{i}(value):\n    return value + {i}\n\n"
          f"class Widget{i}:\n    def render(self):\n        return 'widget {i}'\n"
          for i in range(12)}


def project(tmp_path) -> Path:
    return write(tmp_path / "proj", {
        **FILLER,
        "src/billing.py": "def compute_total(items):\n    '''Sum of the prices.'''\n"
                          "    return sum(i.price for i in items)\n\n"
                          "class Invoice:\n    '''An invoice with its lines.'''\n"
                          "    def lines(self):\n        return []\n",
        "src/report.py": "from src.billing import compute_total\n\n"
                         "def monthly_report(items):\n    return compute_total(items)\n",
        "src/auth/login_form.py": "def show():\n    return 'please sign in'\n",
        "docs/notes.md": "Totals are computed by the billing module.\n",
    })


def paths(found):
    return [(s.path, s.symbol) for s in found]


# --- ranking ------------------------------------------------------------------------

def test_the_chunk_that_defines_the_queried_function_ranks_first(conn, tmp_path):
    root = project(tmp_path)
    codeindex.build(conn, str(root))
    for query in ("compute_total", "computeTotal", "where is compute total defined?"):
        found = codesearch.search(conn, str(root), query, 5)
        assert (found[0].path, found[0].symbol, found[0].kind) == (
            "src/billing.py", "compute_total", "function"), query
        assert (found[0].start_line, found[0].end_line) == (1, 3)
        # the callers follow it
        assert ("src/report.py", "monthly_report") in paths(found)
        assert [s.score for s in found] == sorted((s.score for s in found), reverse=True)
        assert found[0].score > found[-1].score


def test_a_symbol_match_finds_a_class_by_its_name_and_not_its_methods_lines(conn, tmp_path):
    root = project(tmp_path)
    codeindex.build(conn, str(root))
    found = codesearch.search(conn, str(root), "Invoice", 10)
    assert paths(found)[0] == ("src/billing.py", "Invoice")
    # the class's own lines are its header and docstring: its method is a chunk of its own
    assert found[0].kind == "class"
    d = found[0].as_dict()
    assert set(d) == {"path", "start_line", "end_line", "kind", "symbol", "score", "channels"}
    assert d["channels"] == ["keyword"]


def test_a_path_match_finds_the_file_named_by_the_query(conn, tmp_path):
    root = project(tmp_path)
    codeindex.build(conn, str(root))
    found = codesearch.search(conn, str(root), "login form", 3)
    assert paths(found)[0] == ("src/auth/login_form.py", "show")  # no body word matches
    assert codesearch.search(conn, str(root), "auth", 3)[0].path == "src/auth/login_form.py"


def test_limit_and_no_match(conn, tmp_path):
    root = project(tmp_path)
    codeindex.build(conn, str(root))
    assert len(codesearch.search(conn, str(root), "widget render value", 4)) == 4
    assert codesearch.search(conn, str(root), "zebra", 10) == []
    assert codesearch.search(conn, str(root), "the of and", 10) == []  # stop words only


@pytest.mark.parametrize("query", [
    'foo(bar) "x', "NEAR", "-", '"', "*", "compute_total*", "AND OR NOT", "path:billing",
    "NEAR(compute total, 2)", "^compute", "a' OR 1=1 --", "{path body}: x", "",
    "compute_total -billing", "\x00\u00e9\U0001F600", "x" * 5000])
def test_hostile_queries_never_reach_fts5_syntax(conn, tmp_path, query):
    root = project(tmp_path)
    codeindex.build(conn, str(root))
    found = codesearch.search(conn, str(root), query, 10)
    assert isinstance(found, list)
    if "compute" in query:
        assert found and found[0].symbol == "compute_total"
    if query == "NEAR":  # a plain word, searched as a word
        assert codesearch.match_expression(query) == '"near"'
    if query == "AND OR NOT":  # stop words of brainbox.text: no term at all
        assert found == [] and codesearch.match_expression(query) is None


def test_the_match_expression_quotes_every_term():
    assert codesearch.match_expression('foo(bar) "x') == '"foo" OR "bar"'
    assert codesearch.match_expression("NEAR loadUser") == (
        '"near" OR "load" OR "user" OR "loaduser"')
    assert codesearch.match_expression("parse_args parse") == (
        '"parse" OR "args" OR "parse_args"')  # each term once
    assert codesearch.match_expression("- * ()") is None


def test_terms_in_most_chunks_are_left_out_unless_all_are(conn, tmp_path, monkeypatch):
    root = project(tmp_path)
    codeindex.build(conn, str(root))
    terms = codesearch.query_terms("value compute_total zebra")
    assert terms == ["value", "compute", "total", "compute_total", "zebra"]
    # a small index keeps every indexed term (COMMON_MIN), and drops the absent one
    assert codesearch.select_terms(conn, terms) == terms[:4]
    monkeypatch.setattr(codesearch, "COMMON_MIN", 0)
    monkeypatch.setattr(codesearch, "COMMON", 0.2)  # "value": 12 of the 43 chunks
    assert codesearch.select_terms(conn, terms) == terms[1:4]
    found = codesearch.search(conn, str(root), "value compute_total", 5)
    assert found[0].symbol == "compute_total"
    # only common terms: the rarest are kept, so the query still finds something
    monkeypatch.setattr(codesearch, "RAREST", 1)
    assert codesearch.select_terms(conn, ["value", "widget"]) == ["value"]
    assert codesearch.search(conn, str(root), "value", 5)


# --- kept in step with the index ----------------------------------------------------

def test_a_rechunked_file_loses_its_old_snippets_and_a_deleted_file_all(conn, tmp_path):
    from brainbox.storage import codeindex as sql

    root = project(tmp_path)
    codeindex.build(conn, str(root))
    rows = sql.fts_rows(conn, str(root))
    assert rows == codeindex.totals(conn, str(root))["chunks"]
    (root / "src/billing.py").write_text("def grand_sum(items):\n    return 0\n")
    (root / "src/report.py").unlink()
    codeindex.build(conn, str(root))
    assert codesearch.search(conn, str(root), "grand_sum", 5)[0].symbol == "grand_sum"
    assert not [s for s in codesearch.search(conn, str(root), "compute_total invoice", 50)
                if s.path in ("src/billing.py", "src/report.py")]
    assert sql.fts_rows(conn, str(root)) == codeindex.totals(conn, str(root))["chunks"]
    # no orphan rows anywhere in the table
    (n,) = conn.execute("SELECT count(*) FROM code_fts WHERE rowid NOT IN "
                        "(SELECT id FROM code_chunks)").fetchone()
    assert n == 0
    # index_files (the daemon's path) too
    (root / "src/billing.py").unlink()
    codeindex.index_files(conn, str(root), ["src/billing.py"])
    assert codesearch.search(conn, str(root), "grand_sum", 5) == []


def test_two_projects_in_one_database_search_apart(conn, tmp_path):
    a = write(tmp_path / "a", {**FILLER, "x.py": "def alphaish():\n    pass\n"})
    b = write(tmp_path / "b", {**FILLER, "x.py": "def betaish():\n    pass\n"})
    codeindex.build(conn, str(a))
    codeindex.build(conn, str(b))
    assert codesearch.search(conn, str(a), "betaish", 5) == []
    assert codesearch.search(conn, str(b), "betaish", 5)[0].path == "x.py"


def test_a_database_indexed_before_migration_4_gets_its_rows_on_the_next_index(
        tmp_path, monkeypatch):
    from brainbox.storage import db

    root = project(tmp_path)
    path = tmp_path / "old.db"
    monkeypatch.setattr(codeindex, "TREE_SITTER", "tree-sitter/1")
    monkeypatch.setattr(codeindex, "LINES", "lines/1")
    monkeypatch.setattr(codeindex, "chunk_terms", lambda *a: None)  # 003 had no FTS
    first = build_with_old_schema(monkeypatch, path, root, 3)
    conn = store.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == db.SCHEMA_VERSION >= 4
    assert codesearch.indexed(conn, str(root))
    assert codesearch.keyword_rows(conn, str(root), "compute_total", 5) == []  # no rows yet
    again = codeindex.build(conn, str(root))
    assert again.indexed == first.indexed and again.unchanged == 0
    assert codesearch.search(conn, str(root), "compute_total", 5)[0].symbol == "compute_total"
    third = codeindex.build(conn, str(root))
    assert third.indexed == 0 and third.unchanged == first.indexed
    conn.close()


# --- the command line ---------------------------------------------------------------

def test_the_search_command_json_text_and_no_index(tmp_path):
    from brainbox.cli.app import cli

    root = project(tmp_path)
    (root / ".git").mkdir()
    db = str(tmp_path / "b.db")
    r = CliRunner().invoke(cli, ["--db", db, "search", "compute_total", "--cwd", str(root)])
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "run `brainbox index" in r.stderr
    assert CliRunner().invoke(cli, ["--db", db, "index", str(root),
                                    "--no-progress"]).exit_code == 0
    r = CliRunner().invoke(cli, ["search", "compute_total", "--db", db, "--cwd",
                                 str(root / "src"), "--json", "--limit", "2"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert len(out) == 2 and out[0] == {
        "path": "src/billing.py", "start_line": 1, "end_line": 3, "kind": "function",
        "symbol": "compute_total", "score": out[0]["score"],
        "channels": ["keyword", "symbol"], "keyword_only": True}
    assert r.stderr.count("\n") == 1 and "keyword only: no vectors" in r.stderr
    assert out[0]["score"] > out[1]["score"]
    none = CliRunner().invoke(cli, ["--db", db, "search", 'zebra(" NEAR -', "--cwd",
                                    str(root), "--json"])
    assert none.exit_code == 0 and json.loads(none.stdout) == []
    text = CliRunner().invoke(cli, ["--db", db, "search", "compute_total", "--cwd", str(root)])
    assert text.exit_code == 0
    assert "src/billing.py:1-3  function compute_total" in text.stdout.splitlines()[0]


# --- a real repository ---------------------------------------------------------------

def test_forty_files_of_the_sympy_snapshot(conn, sympy_core):
    root = sympy_core(40)
    codeindex.build(conn, str(root))
    found = codesearch.search(conn, str(root), "xreplace", 5)
    assert (found[0].path, found[0].symbol) == ("sympy/core/basic.py", "Basic.xreplace")
    found = codesearch.search(conn, str(root), "SympifyError", 5)
    assert (found[0].path, found[0].symbol, found[0].kind) == (
        "sympy/core/sympify.py", "SympifyError", "class")
    found = codesearch.search(conn, str(root), "Mod modulo", 5)  # a symbol and a path
    assert (found[0].path, found[0].symbol) == ("sympy/core/mod.py", "Mod")
    found = codesearch.search(conn, str(root), "global evaluate flag", 5)
    assert found[0].path == "sympy/core/evaluate.py"
    found = codesearch.search(conn, str(root), "core function", 10)
    assert found and all(s.path.startswith("sympy/core/") for s in found)


# --- the symbol ranking and the files of recall's snippet channel --------------------------

def test_names_mentioned_as_code():
    names, dotted = codesearch.code_names(
        "Calling `render` on a Widget fails: helper_3(x) returns None, and "
        "sympy.physics.units.util breaks parseQuantity. Fix the value\n"
        "    >>> total(items)\n```\nInvoice.lines()\n```")
    assert set(names) == {"render", "helper_3", "util", "parseQuantity", "total", "lines",
                          "items"}  # of a dotted name, its last part
    assert dotted == ["sympy.physics.units.util", "Invoice.lines"]
    # plain words are not names: "Calling", "Widget", "fails", "Fix", "value"
    assert codesearch.code_names("Fix the value of the Widget") == ([], [])
    assert codesearch.code_names("") == ([], [])
    assert codesearch.code_names("`ab` x_y") == (["x_y"], [])  # shorter than 3: not a name


def test_a_file_that_defines_a_named_function_outranks_prose_that_repeats_it(conn, tmp_path):
    root = write(tmp_path / "proj", {
        **FILLER,
        "src/billing.py": "def compute_total(items):\n    return sum(items)\n",
        "docs/billing.md": "compute_total compute total: compute_total sums the total. "
                           "Call compute_total to compute the total.\n",
        "src/report.py": "from src.billing import compute_total\n\n"
                         "def monthly(items):\n    return compute_total(items)\n",
    })
    codeindex.build(conn, str(root))
    query = "compute_total() returns the wrong total"
    assert codesearch.keyword_rows(conn, str(root), query, 1)[0][0] == "docs/billing.md"
    assert codesearch.search(conn, str(root), query, 1)[0].path == "src/billing.py"
    ranked = codesearch.symbol_files(conn, str(root), query)
    assert [p for p, _s, _c in ranked] == ["src/billing.py"]  # defines it; report only calls
    assert ranked[0][2][:5] == ("src/billing.py", 1, 2, "function", "compute_total")
    hits = codesearch.files(conn, str(root), query)
    assert hits[0].path == "src/billing.py" and hits[0].channels == ("keyword", "symbol")
    assert hits[0].snippet.symbol == "compute_total"
    assert {h.path for h in hits} >= {"docs/billing.md", "src/report.py"}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_rarer_names_weigh_more_and_modules_and_paths_count(conn, tmp_path):
    import math

    root = write(tmp_path / "proj", {
        **FILLER,  # twelve files define `render` (Widget<i>.render)
        "pkg/solo.py": "def only_here():\n    pass\n",
        "pkg/sub/mod.py": "x = 1\n",
        "pkg/sub/__init__.py": "",
        "src/pkg2/core.py": "y = 2\n",
    })
    codeindex.build(conn, str(root))
    n = 16
    got = {p: s for p, s, _c in codesearch.symbol_files(
        conn, str(root), "`render` and only_here() and pkg.sub.mod and pkg2.core.thing "
                         "and lib/mod3.py")}
    assert got["pkg/solo.py"] == pytest.approx(math.log(n / 1), abs=1e-5)
    assert got["lib/mod0.py"] == pytest.approx(math.log(n / 12), abs=1e-5)
    assert got["pkg/sub/mod.py"] == pytest.approx(math.log(n), abs=1e-5)
    assert got["src/pkg2/core.py"] == pytest.approx(math.log(n), abs=1e-5)  # under src/
    assert got["lib/mod3.py"] == pytest.approx(math.log(n / 12) + math.log(n), abs=1e-5)
    assert "pkg/sub/__init__.py" not in got  # the longest prefix that is a file
    assert codesearch.symbol_files(conn, str(root), "nothing named here") == []


def test_a_database_from_before_migration_7_finds_names_without_reindexing(tmp_path,
                                                                           monkeypatch):
    root = project(tmp_path)
    path = tmp_path / "old.db"
    build_with_old_schema(monkeypatch, path, root, 6)
    c = store.connect(path)
    try:
        ranked = codesearch.symbol_files(c, str(root), "Invoice.lines() is empty")
        assert [p for p, _s, _c in ranked] == ["src/billing.py"]
        assert ranked[0][2][4] == "Invoice.lines"
    finally:
        c.close()
