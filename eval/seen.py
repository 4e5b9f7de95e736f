"""The replay's history-only code index: what earlier tasks' tool results showed (issue 16,
Deliver 5: "without ``--repos``, the snippet channel is built only from file contents that
earlier tasks' tool results showed").

Per series, :class:`SeenIndex` keeps each file's lines as the events' ``shown`` views gave
them (:mod:`brainbox.eval.loaders.shown`: first line, text, whole), the latest view of a
line winning (a view of the whole file replaces every line, and ends the file where it
ends); lines no view showed are blank. Before each task (:meth:`SeenIndex.snippets`), the
files changed by the tasks before it are (re-)indexed into an in-memory brainbox database
with the code index's own chunking and full-text rows (``codeindex.put_texts``), and the
task's description is ranked over it as recall's snippet channel ranks a project's index
(``codesearch.files``: BM25 over chunks and the symbol ranking, fused by RRF, each file by
its best snippet, ``memory.SNIPPET_DEPTH`` deep). Only files memory knows at that point
are kept (the kernel's snippet channel ranks known files; a shown file is one an event
touched, so it is known unless the view dropped it). **No foresight**: a task's own views
join the index only after the task (:meth:`SeenIndex.add`, called once the task was
replayed), so no task ranks with text from itself or a later task.

Both replay engines call it the same way with the same state (``replay.replay_series``
passes the result to recall's ``snippets=``; ``compiled.replay_series_fast`` turns it into
the task's snippet arrays), so their records stay identical (tests/test_replay_fast.py).
"""

from __future__ import annotations

from brainbox.state import FILE

# (path, bytes) -> its chunked row (codeindex.text_row), kept across the series' replays in
# this process: the views and ablations of a series index the same texts. Bounded: emptied
# when it holds more than MEMO_BYTES of text.
_ROWS: dict = {}
_ROW_BYTES = [0]
MEMO_BYTES = 64 << 20


class SeenIndex:
    """What earlier tasks of one series showed of each file (module docstring)."""

    def __init__(self):
        self.lines: dict[tuple[str, str], list[str]] = {}
        self.dirty: set[tuple[str, str]] = set()
        self.conn = None
        self.views = 0

    def add(self, events) -> None:
        """Take the ``shown`` views of a replayed task's normalised events, in order."""
        for ev in events:
            shown = ev.get("shown")
            if not shown:
                continue
            root = ev["project"]
            for path, (start, text, whole) in shown.items():
                key = (root, path)
                new = text.split("\n")
                old = [] if whole else self.lines.get(key, [])
                lo = start - 1
                if len(old) < lo:
                    old = old + [""] * (lo - len(old))
                self.lines[key] = old[:lo] + new + old[lo + len(new):]
                self.dirty.add(key)
                self.views += 1

    def _flush(self) -> None:
        if not self.dirty:
            return
        from brainbox import codeindex
        from brainbox.store import connect

        if self.conn is None:
            self.conn = connect(":memory:")
        by_root: dict[str, dict] = {}
        for root, path in self.dirty:
            by_root.setdefault(root, {})[path] = "\n".join(self.lines[(root, path)])
        if _ROW_BYTES[0] > MEMO_BYTES:
            _ROWS.clear()
            _ROW_BYTES[0] = 0
        n = len(_ROWS)
        for root, texts in sorted(by_root.items()):
            codeindex.put_texts(self.conn, root, texts, rows=_ROWS)
            if len(_ROWS) > n:
                _ROW_BYTES[0] += sum(len(t) for t in texts.values())
                n = len(_ROWS)
        self.dirty.clear()

    def snippets(self, root: str, query: str, state) -> dict | None:
        """{path: score} of the files of ``root`` memory (``state``) knows, best first, for
        ``query`` over what earlier tasks showed; None when nothing ranks."""
        if not any(r == root for r, _ in self.lines):
            return None
        from brainbox import codesearch
        from brainbox.memory import SNIPPET_DEPTH

        self._flush()
        known = state.res_index
        out = {h.path: float(h.score)
               for h in codesearch.files(self.conn, root, query or "", SNIPPET_DEPTH)
               if (FILE, root, h.path) in known}
        return out or None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def has_shown(tasks) -> bool:
    """Whether any event of ``tasks`` carries shown text (raw or normalised)."""
    return any(ev.get("shown") for t in tasks for ev in t.events)
