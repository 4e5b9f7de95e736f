"""The code index, step 1 (issue 16, DESIGN §4.7): a project's files split into chunks.

`build(conn, root)` lists the project's files, reads each, and stores its chunks in the
brainbox database (`storage.codeindex`); `index_files(conn, root, paths)` does the same for
named files only (what the daemon calls for files edits made stale: `brainbox.reindex`);
`forget_files(conn, root, paths)` drops files for `forget`; `put_texts(conn, root, texts)`
indexes given texts, no file read (the replay's history-only index).

Files. In a git work tree: `git ls-files -z` run in `root` (tracked files; a tracked file
deleted from the work tree is counted `vanished`). Elsewhere: a walk of `root` that skips
`.git` and honours every `.gitignore` on the way down with git's rules (`pathspec`'s
GitIgnoreSpec: `*`, `?`, `[...]`, `**`, `!negation`, trailing `/` for folders, a leading or
inner `/` anchoring to the .gitignore's folder; a deeper file's verdict overrides a
shallower one's). Not supported: `.git/info/exclude`, `core.excludesFile`, and re-including
a file inside an ignored folder (git cannot either). Symlinked folders are not followed.

Skipped, each counted under its reason and named in one warning line:
- `too_large`: over `MAX_BYTES` = 1 MiB, the cutoff the snapshots in shared/data/repos
  were made with; in the sympy snapshot the largest file is 0.43 MiB (a generated
  benchmark), so no hand-written source is lost, while minified bundles and data dumps are.
- `binary`: a NUL byte in the first `BINARY_PROBE` = 8 KiB (git's own heuristic, the
  first 8,000 bytes, `buffer_is_binary`).
- `symlink_outside`: a symlink whose target is outside the project.
- `vanished`: listed, then gone before it was read (or a tracked file deleted).
- `unreadable`: no permission, or not a regular file (a FIFO, a submodule's folder).

Chunks. Python, JavaScript, TypeScript, TSX, Go, Rust and Java are parsed with tree-sitter
(the individual grammar wheels, no download) into functions, methods, classes and types,
each with its lines, kind and qualified symbol (`Class.method`); nested definitions are
chunks of their own inside their parent's lines. Lines outside every top-level definition
(imports, constants, script code) become `module` chunks, so every line of a file is in
some chunk. A file whose tree has an error node (a syntax error, or a language version the
grammar does not know), any other text file, and every file of a language whose grammar
wheel is missing (one warning line per language) is split into windows of `WINDOW` = 60
lines. 60: on the sympy snapshot the 22,106 tree-sitter definitions are 8 lines long at the
median, 51 at the 90th percentile and 80 at the 95th, so a window is about as long as a
long function.

Incremental: a file whose sha256 and chunker are those stored is `unchanged` and not
parsed; a stored file no longer listed is `removed`. tree-sitter is imported inside the
functions that parse (`import brainbox` and the hooks never load it: tests/test_codeindex.py).

Code graph: the tree a file was chunked from also gives its references (imports, bases,
calls; `brainbox.codegraph`), stored with its chunks; a run that stored or removed a file
ends by resolving every file's references again into the project's edges.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from dataclasses import dataclass, field

from brainbox.storage import codegraph as _graph_sql
from brainbox.storage import codeindex as _sql
from brainbox.storage.db import atomic, max_event_id, set_meta

MAX_BYTES = 1 << 20
BINARY_PROBE = 8192
WINDOW = 60
# Files per transaction. On the sympy snapshot 1 and 200 both took 4.1 s (WAL, synchronous
# NORMAL): the batch does not buy speed, it bounds what an interrupted run loses, and files
# are parsed before the write lock is taken, so a hook waits for inserts only.
BATCH = 200
# brainbox_meta key + root: the last event id logged before `build` listed the files, so
# every edit up to it is in what `build` read (`brainbox.reindex` skips those edits).
BUILT_KEY = "code_index_built_after_event:"
# Version 2 (migration 004): chunks carry full-text rows; a file chunked by version 1 has
# none, so its bytes are re-chunked on the next `brainbox index` (that builds the rows).
# Version 3 (migration 006): parsed files carry their code graph references.
TREE_SITTER = "tree-sitter/3"
LINES = "lines/2"
NO_GRAMMAR = "lines/2/no-grammar"  # windows only because the grammar was missing

# extension -> (language, grammar module, name of its language function)
LANGUAGES = {
    ".py": ("python", "tree_sitter_python", "language"),
    ".pyi": ("python", "tree_sitter_python", "language"),
    ".js": ("javascript", "tree_sitter_javascript", "language"),
    ".mjs": ("javascript", "tree_sitter_javascript", "language"),
    ".cjs": ("javascript", "tree_sitter_javascript", "language"),
    ".jsx": ("javascript", "tree_sitter_javascript", "language"),
    ".ts": ("typescript", "tree_sitter_typescript", "language_typescript"),
    ".mts": ("typescript", "tree_sitter_typescript", "language_typescript"),
    ".cts": ("typescript", "tree_sitter_typescript", "language_typescript"),
    ".tsx": ("tsx", "tree_sitter_typescript", "language_tsx"),
    ".go": ("go", "tree_sitter_go", "language"),
    ".rs": ("rust", "tree_sitter_rust", "language"),
    ".java": ("java", "tree_sitter_java", "language"),
}

_JS = {
    "function_declaration": "function", "generator_function_declaration": "function",
    "class_declaration": "class", "method_definition": "method",
}
_TS = dict(_JS, abstract_class_declaration="class", interface_declaration="type",
           enum_declaration="type", type_alias_declaration="type",
           function_signature="function")
# node type -> chunk kind, per language
KINDS = {
    "python": {"function_definition": "function", "class_definition": "class"},
    "javascript": _JS,
    "typescript": _TS,
    "tsx": _TS,
    "go": {"function_declaration": "function", "method_declaration": "method",
           "type_spec": "type"},
    "rust": {"function_item": "function", "struct_item": "type", "enum_item": "type",
             "trait_item": "type", "union_item": "type", "impl_item": "impl",
             "function_signature_item": "function",
             "mod_item": "module"},
    "java": {"class_declaration": "class", "interface_declaration": "type",
             "enum_declaration": "type", "record_declaration": "class",
             "annotation_type_declaration": "type", "method_declaration": "method",
             "constructor_declaration": "method"},
}
_CLASSY = {"class", "type", "impl"}  # a function directly inside one is a method


@dataclass
class Report:
    """What a run did. `skipped` maps a reason to a count; `warnings` holds one line each."""

    seen: int = 0
    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    parse_errors: int = 0  # indexed as windows of lines because the tree had an error
    graph_seconds: float = 0.0  # resolving the code graph's edges (0 when none changed)
    skipped: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def skip(self, reason: str, path: str, detail: str = "") -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        self.warnings.append(f"{path}: skipped ({reason}{': ' + detail if detail else ''})")


# --- listing --------------------------------------------------------------------------

def list_files(root: str) -> list[str]:
    """The project's files, relative to `root` with `/`: git's tracked files, else a walk
    that honours `.gitignore` (module docstring)."""
    tracked = _git_files(root)
    return sorted(tracked) if tracked is not None else _walk(root)


def _git_files(root: str, paths=()) -> set[str] | None:
    """git's tracked files under `root` (only those of `paths` when given, taken
    literally), or None outside a work tree."""
    cmd = ["git", "--literal-pathspecs", "-C", root, "ls-files", "-z"]
    try:
        proc = subprocess.run([*cmd, "--", *paths] if paths else cmd, capture_output=True,
                              timeout=120, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return {n for n in os.fsdecode(proc.stdout).split("\0") if n}


def _walk(root: str) -> list[str]:
    specs: list[tuple[str, object]] = []  # (folder relative to root, spec), shallow first
    out = []
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root).replace(os.sep, "/")
        rel = "" if rel == "." else rel
        specs = [(d, s) for d, s in specs if rel == d or rel.startswith(d + "/") or d == ""]
        if ".gitignore" in files:
            spec = _gitignore(root, rel)
            if spec is not None:
                specs.append((rel, spec))

        def ignored(name: str, is_dir: bool, _rel=rel, _specs=tuple(specs)) -> bool:
            return _ignored(_specs, f"{_rel}/{name}" if _rel else name, is_dir)

        dirs[:] = sorted(d for d in dirs if d != ".git" and not ignored(d, True))
        for name in files:
            if not ignored(name, False):
                out.append(f"{rel}/{name}" if rel else name)
    return sorted(out)


def _ignored(specs, path: str, is_dir: bool) -> bool:
    """Whether the .gitignore `specs` (`(folder, spec)`, shallow first) ignore `path`:
    the deepest verdict wins, as in git."""
    verdict = False
    for d, spec in specs:
        sub = path[len(d) + 1:] if d else path
        res = spec.check_file(sub + "/" if is_dir else sub)
        if res.include is not None:
            verdict = res.include
    return verdict


def _gitignore(root: str, folder: str):
    """The spec of `folder`'s .gitignore (relative to `root`), None without one."""
    import pathspec

    try:
        with open(os.path.join(root, folder, ".gitignore"), encoding="utf-8",
                  errors="replace") as fh:
            return pathspec.GitIgnoreSpec.from_lines(fh)
    except OSError:
        return None


def listed(root: str, paths) -> set[str]:
    """Those of `paths` (relative to `root`, with `/`) that `list_files` would list, found
    without listing the whole project: in a git work tree the tracked ones (`git ls-files`
    with literal pathspecs), elsewhere those no .gitignore on the way down ignores and no
    `.git` folder holds. For the daemon, which indexes a file an agent created only if
    `brainbox index` would have: never an ignored `.env`."""
    paths = sorted({p for p in paths if p and not os.path.isabs(p)
                    and ".." not in p.split("/")})
    if not paths:
        return set()
    tracked = _git_files(root, paths)
    if tracked is not None:
        return tracked & set(paths)
    specs: dict[str, object] = {}
    out = set()
    for path in paths:
        parts = path.split("/")
        if ".git" in parts[:-1]:
            continue
        chain, ok = [], True
        for depth in range(len(parts)):
            folder = "/".join(parts[:depth])
            if folder not in specs:
                specs[folder] = _gitignore(root, folder)
            if specs[folder] is not None:
                chain.append((folder, specs[folder]))
            if _ignored(chain, "/".join(parts[:depth + 1]), depth < len(parts) - 1):
                ok = False
                break
        if ok:
            out.add(path)
    return out


# --- chunking -------------------------------------------------------------------------

_parsers: dict[str, object] = {}
_missing: set[str] = set()


def parser_for(language: str, report: Report | None = None):
    """A tree-sitter parser for `language`, or None when its grammar wheel (or tree-sitter)
    is not installed: then one warning line (once per process) and the files become windows."""
    if language in _parsers:
        return _parsers[language]
    if language in _missing:
        return None
    module, fn = next((m, f) for lang, m, f in LANGUAGES.values() if lang == language)
    try:
        import importlib

        import tree_sitter

        grammar = importlib.import_module(module)
        parser = tree_sitter.Parser(tree_sitter.Language(getattr(grammar, fn)()))
    except (ImportError, AttributeError, ValueError) as exc:
        _missing.add(language)
        if report is not None:
            report.warnings.append(
                f"no tree-sitter grammar for {language} ({module.replace('_', '-')}: "
                f"{exc}): its files are split into windows of {WINDOW} lines")
        return None
    _parsers[language] = parser
    return parser


def _text(node) -> str:
    return node.text.decode("utf-8", "replace")


def _name(node, kind: str) -> str | None:
    n = node.child_by_field_name("name")
    if n is None and kind == "impl":  # impl [Trait for] Type
        n = node.child_by_field_name("type")
    if n is None:
        return None
    receiver = node.child_by_field_name("receiver") if node.type == "method_declaration" \
        else None
    if receiver is not None:  # Go: func (s *S[T]) M() is S.M
        for param in receiver.named_children:
            t = param.child_by_field_name("type")
            if t is not None:
                base = _text(t).lstrip("*").split("[")[0].strip()
                if base:
                    return f"{base}.{_text(n)}"
    return _text(n)


_JS_VALUES = "[(arrow_function) (function_expression) (generator_function_declaration)]"
_queries: dict[str, object] = {}


def _query(language: str, parser):
    """One query capturing every definition node of `language` (and, for JavaScript and
    TypeScript, `const f = () => ...` bindings): the walk runs in tree-sitter's C code.
    Visiting every node from Python instead made `brainbox index` on the sympy snapshot take
    11.6 s, against 6.5 s with the query, minutes apart on the same loaded machine.
    The code graph's patterns (`codegraph.QUERIES`: imports, bases, calls) are in the same
    query, as a walk costs whatever it captures: on sympy's Python files a query of the
    imports alone took 0.91 s, one of imports, bases and calls 1.16 s."""
    if language not in _queries:
        import tree_sitter

        from brainbox.codegraph import QUERIES

        src = " ".join(f"({t}) @def" for t in KINDS[language])
        if language in ("javascript", "typescript", "tsx"):
            src += (f" (variable_declarator name: (identifier) value: {_JS_VALUES}) @bind"
                    .replace("(generator_function_declaration)", "(generator_function)"))
        _queries[language] = tree_sitter.Query(parser.language, f"{src} {QUERIES[language]}")
    return _queries[language]


def tree_chunks(source: bytes, language: str, parser) -> list[tuple[int, int, str, str]] | None:
    """Definitions of a parsed file as `(start_line, end_line, kind, symbol)`, 1-based,
    outermost first; None when the tree has an error (the caller falls back to windows)."""
    return _parse(source, language, parser)[0]


def _parse(source: bytes, language: str, parser):
    """(`tree_chunks`, the query's captures, which hold the code graph's references too;
    None for both when the tree has an error)."""
    import tree_sitter

    tree = parser.parse(source)
    if tree.root_node.has_error:
        return None, None
    kinds = KINDS[language]
    found = tree_sitter.QueryCursor(_query(language, parser)).captures(tree.root_node)
    nodes = [(n, kinds.get(n.type)) for n in found.get("def", [])]
    nodes += [(n, "function") for n in found.get("bind", [])]
    # outermost first: by start, the longer first; a stack of open definitions names them
    nodes.sort(key=lambda x: (x[0].start_byte, -x[0].end_byte))
    out: list[tuple[int, int, str, str]] = []
    open_: list[tuple[int, str, str]] = []  # (end_byte, symbol, kind)
    for node, kind in nodes:
        while open_ and open_[-1][0] <= node.start_byte:
            open_.pop()
        name = _name(node, kind)
        if not name:
            continue
        outer, outer_kind = (open_[-1][1], open_[-1][2]) if open_ else ("", "")
        if kind == "function" and outer_kind in _CLASSY:
            kind = "method"
        start = node
        if node.parent is not None and node.parent.type == "decorated_definition":
            start = node.parent  # a Python decorator belongs to its definition
        symbol = f"{outer}.{name}" if outer else name
        out.append((start.start_point[0] + 1, node.end_point[0] + 1, kind, symbol))
        open_.append((node.end_byte, symbol, kind))
    return out, found


def _line_count(source: bytes) -> int:
    return source.count(b"\n") + (0 if not source or source.endswith(b"\n") else 1)


def windows(first: int, last: int, kind: str = "lines") -> list[tuple[int, int, str, None]]:
    """Lines `first..last` (1-based, inclusive) in windows of `WINDOW` lines."""
    return [(s, min(s + WINDOW - 1, last), kind, None) for s in range(first, last + 1, WINDOW)]


def _gaps(source: bytes, defs, n_lines: int) -> list[tuple[int, int, str, None]]:
    """`module` windows over the lines no top-level definition covers (blank runs dropped)."""
    covered = bytearray(n_lines + 2)
    for s, e, _k, _n in defs:
        covered[s:e + 1] = b"\x01" * (e - s + 1)
    lines = source.split(b"\n")
    out, start = [], None
    for i in range(1, n_lines + 2):
        free = i <= n_lines and not covered[i]
        if free and start is None:
            start = i
        elif not free and start is not None:
            a, b = start, i - 1
            while a <= b and not lines[a - 1].strip():
                a += 1
            while b >= a and not lines[b - 1].strip():
                b -= 1
            if a <= b:
                out.extend(windows(a, b, "module"))
            start = None
    return out


def chunk(path: str, source: bytes, report: Report | None = None):
    """(language or None, chunker, chunks) for one file's bytes."""
    return _chunk(path, source, report)[:3]


def _chunk(path: str, source: bytes, report: Report | None = None):
    """`chunk`, and the tree-sitter captures (None unless the chunks came from a tree),
    which the code graph reads its references from (`brainbox.codegraph`): one parse and
    one walk per file."""
    language = LANGUAGES.get(os.path.splitext(path)[1].lower(), (None,))[0]
    n_lines = _line_count(source)
    if language is not None:
        parser = parser_for(language, report)
        if parser is not None:
            defs, found = _parse(source, language, parser)
            if defs is not None:
                chunks = defs + _gaps(source, defs, n_lines)
                return (language, TREE_SITTER, sorted(chunks, key=lambda c: (c[0], -c[1])),
                        found)
            if report is not None:
                report.parse_errors += 1
                report.warnings.append(f"{path}: syntax error: split into windows of "
                                       f"{WINDOW} lines, no code graph edges from it")
        else:
            return language, NO_GRAMMAR, (windows(1, n_lines) if n_lines else []), None
    return language, LINES, (windows(1, n_lines) if n_lines else []), None


def _current(path: str, stored: str, report: Report) -> bool:
    """Whether a file chunked by `stored` (its bytes unchanged) needs no new chunking: the
    chunker is this version's, and a file windowed for want of a grammar is re-chunked
    once the grammar is installed."""
    if stored in (TREE_SITTER, LINES):
        return True
    if stored == NO_GRAMMAR:
        language = LANGUAGES.get(os.path.splitext(path)[1].lower(), (None,))[0]
        return language is None or parser_for(language, report) is None
    return False


def chunk_terms(path: str, source: bytes, chunks) -> list[tuple[str, str, str]]:
    """The full-text terms of each chunk, `(path, symbol, body)` as space-separated terms
    (`brainbox.text.path_tokens` and `tokens`, the one definition recall and learning use:
    snake_case and camelCase split, the whole identifier kept). A chunk's body is the lines
    it owns: those of its nested chunks (a class's methods) are theirs alone, so a class is
    found by its header, docstring and attributes, and each line is indexed once."""
    from brainbox.text import path_tokens, tokens

    lines = source.decode("utf-8", "replace").split("\n")
    owner = [-1] * (len(lines) + 2)
    for i, (s, e, _k, _n) in enumerate(chunks):  # outermost first: the innermost wins
        owner[s:e + 1] = [i] * (e - s + 1)
    body: list[list[str]] = [[] for _ in chunks]
    for n, line in enumerate(lines, start=1):
        if n < len(owner) and owner[n] >= 0:
            body[owner[n]].append(line)
    where = " ".join(path_tokens(path))
    out = []
    for (_s, _e, _k, symbol), own in zip(chunks, body, strict=True):
        text = "\n".join(own)
        out.append((where, " ".join(tokens(symbol)) if symbol else "",
                    " ".join(tokens(text, limit=len(text)))))
    return out


# --- reading and storing --------------------------------------------------------------

def _read(root: str, real_root: str, path: str, report: Report) -> bytes | None:
    full = os.path.join(root, path)
    try:
        # every path, not only a symlink itself: a folder on the way may be one (a path
        # handed to index_files through a symlinked folder)
        target = os.path.realpath(full)
        if os.path.commonpath([target, real_root]) != real_root:
            report.skip("symlink_outside", path, f"points to {target}")
            return None
        fd = os.open(full, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        report.skip("vanished", path)
        return None
    except OSError as exc:
        report.skip("unreadable", path, exc.strerror or str(exc))
        return None
    try:
        import stat

        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            report.skip("unreadable", path, "not a regular file")
            return None
        if st.st_size > MAX_BYTES:
            report.skip("too_large", path, f"{st.st_size:,} bytes > {MAX_BYTES:,}")
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        report.skip("unreadable", path, exc.strerror or str(exc))
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:  # grew after the stat
        report.skip("too_large", path, f"over {MAX_BYTES:,} bytes")
        return None
    if b"\0" in data[:BINARY_PROBE]:
        report.skip("binary", path)
        return None
    return data


def _index(conn, root: str, paths, report: Report, *, known, progress=None) -> None:
    from brainbox import codegraph

    real_root = os.path.realpath(root)
    pending, pending_refs = [], []

    def flush():
        with atomic(conn):
            for args in pending:
                _sql.put_file(conn, root, args[0], **args[1])
            for path, refs in pending_refs:
                _graph_sql.put_refs(conn, root, path, refs)
        pending.clear()
        pending_refs.clear()

    for i, path in enumerate(paths):
        report.seen += 1
        data = _read(root, real_root, path, report)
        if data is None:
            if path in known:
                with atomic(conn):
                    report.removed += _sql.remove_files(conn, root, [path])
            if progress:
                progress(i + 1, report)
            continue
        sha = "sha256:" + hashlib.sha256(data).hexdigest()
        if path in known and known[path][0] == sha and _current(path, known[path][1], report):
            report.unchanged += 1
            if progress:
                progress(i + 1, report)
            continue
        language, chunker, chunks, found = _chunk(path, data, report)
        refs = codegraph.references(path, found, chunks, data)
        if refs is not None:
            pending_refs.append((path, codegraph.dumps(refs)))
        pending.append((path, {"sha256": sha, "size": len(data), "language": language,
                               "chunker": chunker, "indexed_at": time.time(),
                               "chunks": chunks,
                               "terms": chunk_terms(path, data, chunks)}))
        report.indexed += 1
        if len(pending) >= BATCH:
            flush()
        if progress:
            progress(i + 1, report)
    if pending:
        flush()


def build(conn, root: str, *, progress=None) -> Report:
    """Index every file of the project at `root` (module docstring); drop files no longer
    listed. `progress(done, report)` is called after each file."""
    root = os.path.abspath(root)
    report = Report()
    seen = max_event_id(conn)  # edits logged after this may not be in what is read below
    paths = list_files(root)
    known = _sql.file_states(conn, root)
    _index(conn, root, paths, report, known=known, progress=progress)
    gone = sorted(set(known) - set(paths))
    with atomic(conn):
        if gone:
            report.removed += _sql.remove_files(conn, root, gone)
        set_meta(conn, BUILT_KEY + root, str(seen))
    _graph(conn, root, report)
    return report


def _graph(conn, root: str, report: Report) -> None:
    """Resolve the code graph's edges again when this run (or one cut short before it)
    stored or removed a file (`brainbox.codegraph`)."""
    from brainbox import codegraph

    report.graph_seconds = codegraph.update(conn, root) or 0.0


def index_files(conn, root: str, paths) -> Report:
    """Re-index the named files of the project at `root` (paths relative to it, or absolute
    inside it; others are ignored): changed ones are re-chunked, missing ones dropped from
    the index. The daemon calls it for files edits made stale (`brainbox.reindex`)."""
    root = os.path.abspath(root)
    rel = []
    for p in paths:
        p = os.path.relpath(os.path.abspath(os.path.join(root, p)), root)
        if not p.startswith(".." + os.sep) and p != "..":
            rel.append(p.replace(os.sep, "/"))
    report = Report()
    _index(conn, root, sorted(set(rel)), report, known=_sql.file_states(conn, root))
    _graph(conn, root, report)
    return report


def text_row(path: str, data: bytes) -> dict:
    """The stored row of one file's bytes (`storage.codeindex.put_file`'s keywords):
    chunked as `build` chunks a file read from disk, with its full-text terms and no code
    graph. A pure function of (path, bytes), so a caller may keep it (`put_texts`)."""
    language, chunker, chunks, _found = _chunk(path, data)
    return {"sha256": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data),
            "language": language, "chunker": chunker, "indexed_at": time.time(),
            "chunks": chunks, "terms": chunk_terms(path, data, chunks)}


def put_texts(conn, root: str, texts: dict, *, rows=None) -> int:
    """Index the given texts as files of `root` (paths relative to it), each as
    `text_row` makes it: nothing is read from disk (the replay's index of what earlier
    tasks showed, `brainbox.eval.seen`). A text replaces the file's earlier one. `rows`
    (path, bytes) -> row: the caller's memo of `text_row`, if any. Returns the count."""
    root = os.path.abspath(root)
    rows = {} if rows is None else rows
    todo = []
    for path in sorted(texts):
        data = texts[path].encode("utf-8", "replace") if isinstance(texts[path], str) \
            else bytes(texts[path])
        row = rows.get((path, data))
        if row is None:
            row = rows[(path, data)] = text_row(path, data)
        todo.append((path, row))
    with atomic(conn):
        for path, kw in todo:
            _sql.put_file(conn, root, path, **kw)
    return len(todo)


def indexed_paths(conn, root: str) -> set[str]:
    """The paths of every file indexed under `root`."""
    return set(_sql.file_states(conn, os.path.abspath(root)))


def totals(conn, root: str) -> dict[str, int]:
    """Files, chunks and bytes in the index of `root`."""
    return _sql.totals(conn, os.path.abspath(root))


def chunks_of(conn, root: str, path: str):
    """The stored chunks of one file: `(start_line, end_line, kind, symbol)` in line order."""
    return _sql.chunks_of(conn, os.path.abspath(root), path)


def forget_files(conn, root: str, paths) -> dict[str, int]:
    """Drop these files of `root` from the index for `forget`: their chunks, full-text
    rows and vectors (both stores), then merge the full-text segments so the deleted
    rows' terms are not left in the file (`storage.codeindex.optimize_fts`). Returns
    {files, chunks} dropped."""
    from brainbox.storage import vectors as _vec

    root = os.path.abspath(root)
    paths = sorted(set(paths))
    if not paths:
        return {"files": 0, "chunks": 0}
    with atomic(conn):
        ids = _sql.chunk_ids_of(conn, root, paths)
        _vec.delete(conn, ids)  # the vec0 rows too, when this connection has sqlite-vec
        files = _sql.remove_files(conn, root, paths)
        _sql.optimize_fts(conn)
    return {"files": files, "chunks": len(ids)}


def chunk_counts(conn, root: str) -> dict[str, int]:
    """{path: chunks} of every file indexed under `root`."""
    return _sql.file_chunk_counts(conn, os.path.abspath(root))
