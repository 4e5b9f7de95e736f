"""Tokenisation shared by learning (context terms), lexical recall and the BM25 baseline.

Terms are lowercase word pieces: identifiers are split on `_`, `-`, `.`, `/` and on
camelCase boundaries, and the whole identifier is kept too when it was split
(`LoginForm` -> `loginform`, `login`, `form`). Stop words, pure numbers and one-letter
pieces are dropped. Standard library only.
"""

from __future__ import annotations

import functools
import re

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")

STOP = frozenset(
    """a an and are as at be but by can could did do does doing done for from had has have
    how i if in into is it its itself just let me my no not now of on or our out over please
    should so some such than that the their them then there these they this those through to
    too under up us very was we were what when where which while who why will with would you
    your yours get got make made use used using want need also only any all each both more
    most other same new one two via py txt md""".split()
)

def _pieces(word: str) -> list[str]:
    parts = _CAMEL.findall(word)
    out = [p.lower() for p in parts]
    if len(parts) > 1:
        out.append(word.lower())
    return out


def tokens(text: str | None, limit: int = 20_000) -> list[str]:
    """Terms of free text (a prompt, a grep pattern), in order, with repeats (a new list).

    The last texts' terms are remembered (:func:`_terms`): a replay tokenises each task's
    description five or six times and the same arguments again and again (tokenising was
    a third of the development set's replay time)."""
    if not text:
        return []
    text = text[:limit]
    if len(text) > _MEMO_CHARS:  # a whole source file (the code index): not kept
        return list(_terms.__wrapped__(text))
    return list(_terms(text))


_MEMO_CHARS = 20_000  # the longest text remembered: 256 of them, about 5 MB at most


@functools.lru_cache(maxsize=256)
def _terms(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for ident in _IDENT.findall(text):
        for w in _WORD.findall(ident):
            for t in _pieces(w):
                if len(t) > 1 and t not in STOP and not t.isdigit():
                    out.append(t)
        if ("_" in ident or "-" in ident) and len(ident) > 2:
            whole = ident.lower().strip("_-")
            if whole and whole not in STOP and whole not in out[-4:]:
                out.append(whole)
    return tuple(out)


def path_tokens(path: str) -> list[str]:
    """Terms of a project-relative path: every directory and the file name, split."""
    out = []
    for seg in re.split(r"[/\\]", path):
        if not seg:
            continue
        stem = seg.rsplit(".", 1)[0] if "." in seg[1:] else seg
        out.extend(tokens(stem))
    return out
