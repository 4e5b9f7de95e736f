"""The code graph's tables (issue 16, DESIGN §3 and §4.7): each file's raw references and
the edges resolved from them.

Schema (migration 006, `storage.db`):
- `code_refs(file_id, refs)`: one row per indexed file that has references, `refs` a JSON
  object (`brainbox.codegraph` writes and reads it; storage does not look inside). Deleted
  with its file (ON DELETE CASCADE), so a re-indexed file's row is the new one.
- `code_edges(root, src, dst, kind, weight)`: one row per (root, src, dst, kind), paths
  relative to `root` as in `code_files`. Resolution depends on the whole file set, so the
  edges are derived data: `replace_edges` writes all of a project's at once.
- `code_graph_dirty(root)`: projects whose edges may be stale. A trigger on `code_files`
  (insert and delete, so also `put_file`'s replace) adds the root and deletes the edges
  from and to that path; `replace_edges` clears it in the same transaction. An index run
  cut short therefore leaves its project marked, and the next run resolves it.

Standard library only, like the rest of `storage`.
"""

from __future__ import annotations


def put_refs(conn, root: str, path: str, refs: str) -> None:
    """Store the JSON references of an indexed file (after `codeindex.put_file`, in the
    same transaction)."""
    conn.execute(
        "INSERT OR REPLACE INTO code_refs(file_id, refs) "
        "SELECT id, ? FROM code_files WHERE root = ? AND path = ?", (refs, root, path))


def all_refs(conn, root: str) -> dict[str, str | None]:
    """{path: JSON references or None} for every indexed file of `root`."""
    return dict(conn.execute(
        "SELECT f.path, r.refs FROM code_files f LEFT JOIN code_refs r ON r.file_id = f.id "
        "WHERE f.root = ?", (root,)))


def is_dirty(conn, root: str) -> bool:
    """Whether files of `root` were stored or removed since its edges were resolved."""
    return conn.execute("SELECT 1 FROM code_graph_dirty WHERE root = ?",
                        (root,)).fetchone() is not None


def replace_edges(conn, root: str, edges) -> None:
    """Make `edges` `(src, dst, kind, weight)` the edges of `root` and mark it resolved.
    Only the rows that differ are written: after one file changed on the sympy snapshot,
    rewriting all 12,650 rows took 72-88 ms. The caller holds the transaction (`atomic`)."""
    new = {(s, d, k): w for s, d, k, w in edges}
    old = {(s, d, k): w for s, d, k, w in conn.execute(
        "SELECT src, dst, kind, weight FROM code_edges WHERE root = ?", (root,))}
    conn.executemany("DELETE FROM code_edges WHERE root = ? AND src = ? AND dst = ? AND kind = ?",
                     [(root, *key) for key in old.keys() - new.keys()])
    conn.executemany(
        "INSERT OR REPLACE INTO code_edges(root, src, dst, kind, weight) VALUES (?, ?, ?, ?, ?)",
        [(root, *key, w) for key, w in new.items() if old.get(key) != w])
    conn.execute("DELETE FROM code_graph_dirty WHERE root = ?", (root,))


def edges(conn, root: str) -> list[tuple[str, str, str, float]]:
    """The edges of `root` as `(src, dst, kind, weight)`, sorted."""
    return [tuple(r) for r in conn.execute(
        "SELECT src, dst, kind, weight FROM code_edges WHERE root = ? "
        "ORDER BY src, dst, kind", (root,))]


def edge_counts(conn, root: str) -> dict[str, int]:
    """{kind: number of edges} of `root`."""
    return dict(conn.execute(
        "SELECT kind, count(*) FROM code_edges WHERE root = ? GROUP BY kind ORDER BY kind",
        (root,)))
