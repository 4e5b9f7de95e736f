"""The code graph (issue 16, DESIGN §3 and §4.7): import, call and inheritance edges between
a project's indexed files, the structural prior `P` of recall.

Two steps, so that an incremental index is right:
1. `references(path, found, chunks, source)`: while a file is indexed, from the captures
   of the chunker's own query, which holds `QUERIES` (one parse and one walk of the tree
   per file; figures in the README), its raw references as a JSON-ready dict:
   what it imports, the base names of its classes, the dotted names it calls, and the
   names it defines at top level (from the chunks). Stored per file (`storage.codegraph`).
2. `rebuild(conn, root)`: after an index run that stored or removed a file, every file's
   references are resolved again against the whole file set (dict look-ups, no parsing)
   and the project's edges replaced. A file added, changed or removed thus changes the
   edges of the files that point to it too: incremental equals full by construction
   (tests/test_codegraph.py checks it).

Resolution, per language:
- Python: `import a.b` and `from a.b import c` resolve `a.b` to `a/b.py`, `a/b.pyi` or
  `a/b/__init__.py`, tried under the project's root, then `PY_ROOTS` (`src/`, `lib/`), then
  the importing file's own folder (a script's folder is on its `sys.path`). `from a.b import
  c` is an edge to the submodule `a/b/c.py` when there is one, else to `a.b`; relative
  imports count their dots up from the file's package. `import a.b.c` is an edge to `c`
  only, not to the packages on the way (their `__init__` binds names for calls).
- JavaScript/TypeScript: relative specifiers (`./x`, `../y`) of `import`, `export ... from`,
  `import()` and `require()`: the path itself, then with each of `JS_EXTS`, then
  `index.*` in that folder; a `.js` specifier also tries `.ts`/`.tsx` (TypeScript's ESM
  style). Bare specifiers (packages) are not the project's.
- Go: an import path under a module of the project (a `go.mod`'s `module` line, its
  folder) names that folder; otherwise the longest suffix of two or more elements that is
  a folder with Go files (one element alone, `fmt`, would match too much). Go imports a
  package, not a file: the edges go to every non-test `.go` file of the folder.
- Rust: `mod x;` is `x.rs` or `x/mod.rs` in the module's folder (`lib.rs`, `main.rs`,
  `mod.rs` own their folder, `a.rs` owns `a/`), then beside the file; `use crate::a::b`,
  `use super::..`, `use self::..` best effort: the longest prefix that is a module file,
  `crate` being the nearest folder up with `lib.rs` or `main.rs`. External crates: none.
- Java: `import a.b.C;` is a file ending in `a/b/C.java`; a static import drops the
  member; `a.b.*` is every `.java` file of the folders ending in `a/b`.
- Inheritance (Python `class A(B)`, `class A(mod.B)`, JS/TS `extends` and `implements`,
  Java `extends`/`implements`): a base bound by an import resolves like a call (below);
  else the files defining that name: those the source imports, else those in its folder
  (Java's package), else the only one in the project; ambiguous names give no edge.
- Calls (Python and JavaScript/TypeScript): a call `f()` or `m.f()` whose first names
  are bound by an import (`from m import f`, `import m`, `import * as m`, `{f} from`,
  `const m = require()`), or an unbound name a star import (`from m import *`) defines.
  The edge goes to the file that defines `f` at top level: the imported file, or, when it
  only re-exports `f` (a package's `__init__`), the file its own imports take `f` from,
  up to `REEXPORT_DEPTH` hops.

Weights (DESIGN §4.7): import `IMPORT` = 0.2, inherit `INHERIT` = 0.3, call
`min(CALL_MAX, CALL_BASE + CALL_STEP * n)` = 0.25, 0.30, 0.35 for n = 1, 2, >= 3 distinct
names called from src into dst. Why: a single call says little more than the import it
rides on, so it sits just above 0.2; a few distinct names mark a file that is used, not
only mentioned, and 3 reach the design's cap 0.35 (on sympy the median call edge has 1
name and the 75th percentile 2, README). One edge per (src, dst, kind); no self edges;
both ends indexed files of the project. `prior_matrix` takes, per pair, the largest weight
over kinds: the kinds are evidence of one relation, not independent ones to add.

Go, Rust and Java calls are not resolved (their imports and bases are). A file whose tree
has an error (windows of lines, counted and warned by the chunker) has no references, so
no edges from it; edges to it still resolve.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import time

from brainbox.storage import codegraph as _sql
from brainbox.storage.db import atomic

IMPORT = 0.2
INHERIT = 0.3
CALL_BASE = 0.2
CALL_STEP = 0.05
CALL_MAX = 0.35
KINDS = ("call", "import", "inherit")
PY_ROOTS = ("", "src", "lib")
PY_FILES = (".py", ".pyi", "/__init__.py", "/__init__.pyi")
JS_EXTS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
RUST_OWNERS = ("lib.rs", "main.rs", "mod.rs")
REEXPORT_DEPTH = 3
# top-level chunk kinds whose symbol a call or a base can name
DEF_KINDS = ("function", "class", "type")

_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_JAVA_IMPORT = re.compile(r"import\s+(static\s+)?([\w.]+?)(\.\*)?\s*;")
_GO_MODULE = re.compile(rb"^\s*module\s+\"?([^\s\"]+)", re.MULTILINE)

# tree-sitter patterns per language, joined to the chunker's query (`codeindex._query`);
# its own capture names are `def` and `bind`
QUERIES = {
    "python": """(import_statement) @import (import_from_statement) @from
                 (class_definition superclasses: (argument_list) @bases)
                 (call function: [(identifier) (attribute)] @call)""",
    "javascript": """(import_statement) @import (export_statement source: (string)) @export
                     (call_expression function: [(identifier) (import)]
                        arguments: (arguments . (string))) @require
                     (class_heritage) @bases
                     (call_expression function: [(identifier) (member_expression)] @call)""",
    "go": "(import_spec path: (_) @path)",
    "rust": "(mod_item) @mod (use_declaration argument: (_) @use)",
    "java": """(import_declaration) @import (superclass) @bases (super_interfaces) @bases
               (extends_interfaces) @bases""",
}
QUERIES["typescript"] = QUERIES["tsx"] = QUERIES["javascript"] + \
    " (extends_type_clause) @bases"


# --- step 1: a file's references --------------------------------------------------------

def _text(node) -> str:
    return node.text.decode("utf-8", "replace")


def references(path: str, found, chunks, source: bytes) -> dict | None:
    """The raw references of one file from `found`, the captures of the chunker's query
    (`codeindex._query`, which holds `QUERIES`; None when the file was not parsed: then
    only a `go.mod` has any), or None when it has none."""
    if found is None:
        if posixpath.basename(path) == "go.mod":
            m = _GO_MODULE.search(source)
            return {"gomod": m.group(1).decode("utf-8", "replace")} if m else None
        return None
    out: dict = {"defs": sorted({s for _a, _b, k, s in chunks
                                 if s and k in DEF_KINDS and "." not in s})}
    _EXTRACT[_language(path)](found, out)
    return out


def _ordered(found, *names) -> list:
    """The nodes captured under `names`, in the file's order: a later import rebinds a
    name, and the order of a joined query's captures is not the file's."""
    return sorted((n for name in names for n in found.get(name, ())),
                  key=lambda n: n.start_byte)


def _dotted(nodes) -> list[str]:
    return sorted({t for t in (_text(n) for n in nodes) if _DOTTED.fullmatch(t)})


def _python(found, out: dict) -> None:
    imports = []  # [level, module, name or None ("*" for a star), alias or None]
    for node in _ordered(found, "import", "from"):
        if node.type == "import_statement":
            names = node.children_by_field_name("name")
            imports += [[0, _text(n.child_by_field_name("name")), None,
                         _text(n.child_by_field_name("alias"))] if n.type == "aliased_import"
                        else [0, _text(n), None, None] for n in names]
            continue
        module = node.child_by_field_name("module_name")
        level, mod = 0, _text(module)
        if module.type == "relative_import":
            prefix = next((c for c in module.children if c.type == "import_prefix"), None)
            level = len(_text(prefix)) if prefix is not None else 0
            dotted = next((c for c in module.children if c.type == "dotted_name"), None)
            mod = _text(dotted) if dotted is not None else ""
        names = node.children_by_field_name("name")
        if any(c.type == "wildcard_import" for c in node.children):
            imports.append([level, mod, "*", None])
        for name in names:
            if name.type == "aliased_import":
                imports.append([level, mod, _text(name.child_by_field_name("name")),
                                _text(name.child_by_field_name("alias"))])
            else:
                imports.append([level, mod, _text(name), None])
    out["imports"] = imports
    bases = [c for n in found.get("bases", []) for c in n.named_children
             if c.type in ("identifier", "attribute")]
    out["bases"] = _dotted(bases)
    out["calls"] = _dotted(found.get("call", []))


def _js_string(node) -> str | None:
    frag = next((c for c in node.named_children if c.type == "string_fragment"), None)
    return _text(frag) if frag is not None else None


def _js(found, out: dict) -> None:
    imports = []  # [specifier, [[local name, imported member or None], ...]]
    for node in _ordered(found, "import", "export"):
        source = node.child_by_field_name("source")
        spec = _js_string(source) if source is not None else None
        if spec is None:
            continue
        binds = []
        clause = next((c for c in node.named_children if c.type == "import_clause"), None)
        for c in clause.named_children if clause is not None else ():
            if c.type == "identifier":
                binds.append([_text(c), "default"])
            elif c.type == "namespace_import":
                binds += [[_text(i), None] for i in c.named_children if i.type == "identifier"]
            elif c.type == "named_imports":
                for s in c.named_children:
                    name, alias = s.child_by_field_name("name"), s.child_by_field_name("alias")
                    if name is not None:
                        binds.append([_text(alias if alias is not None else name), _text(name)])
        clause = next((c for c in node.named_children if c.type == "export_clause"), None)
        for c in clause.named_children if clause is not None else ():  # re-exports
            name, alias = c.child_by_field_name("name"), c.child_by_field_name("alias")
            if name is not None:
                binds.append([_text(alias if alias is not None else name), _text(name)])
        if node.type == "export_statement" and clause is None and any(
                c.type == "*" for c in node.children):
            binds.append(["*", "*"])  # export * from './x'
        imports.append([spec, binds])
    for node in _ordered(found, "require"):
        fn = node.child_by_field_name("function")
        if fn.type == "identifier" and _text(fn) != "require":
            continue
        spec = _js_string(node.child_by_field_name("arguments").named_children[0])
        if spec is None:
            continue
        binds = []
        parent = node.parent
        target = parent.child_by_field_name("name") if parent is not None and \
            parent.type == "variable_declarator" else None
        if target is not None and target.type == "identifier":
            binds.append([_text(target), None])
        elif target is not None and target.type == "object_pattern":
            binds += [[_text(p), _text(p)] for p in target.named_children
                      if p.type == "shorthand_property_identifier_pattern"]
        imports.append([spec, binds])
    out["imports"] = imports
    out["bases"] = _dotted(_type_names(found.get("bases", [])))
    out["calls"] = _dotted(found.get("call", []))


_TYPE_NAMES = {"identifier", "type_identifier", "member_expression", "nested_type_identifier",
               "scoped_type_identifier"}
_TYPE_LISTS = {"extends_clause", "implements_clause", "extends_type_clause", "type_list",
               "class_heritage", "superclass", "super_interfaces", "extends_interfaces"}


def _type_names(nodes) -> list:
    """The name nodes of base classes and interfaces under heritage clauses (a generic's
    own name, not its type arguments)."""
    out = []
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if node.type in _TYPE_NAMES:
            out.append(node)
        elif node.type == "generic_type" and node.named_children:
            stack.append(node.named_children[0])
        elif node.type in _TYPE_LISTS:
            stack.extend(node.named_children)
    return out


def _go(found, out: dict) -> None:
    out["imports"] = sorted({_text(n).strip("\"`") for n in found.get("path", [])})


def _rust(found, out: dict) -> None:
    imports = [["mod", _text(n.child_by_field_name("name"))] for n in _ordered(found, "mod")
               if n.child_by_field_name("body") is None
               and n.child_by_field_name("name") is not None]
    for node in _ordered(found, "use"):
        text = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", _text(node)))
        imports += [["use", p] for p in _expand_use(text)]
    out["imports"] = imports


def _expand_use(text: str) -> list[str]:
    """`crate::a::{b, c::d, self, *}` (aliases and spaces already cut) -> `crate::a::b`,
    `crate::a::c::d`, `crate::a`, `crate::a`."""
    brace = text.find("{")
    if brace < 0:
        for tail in ("::*", "::self"):
            text = text.removesuffix(tail)
        return [text] if text else []
    prefix, inner = text[:brace], text[brace + 1:text.rfind("}")]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return [p for part in parts if part for p in _expand_use(prefix + part)]


def _java(found, out: dict) -> None:
    imports = []  # [dotted name, static, wildcard]
    for node in _ordered(found, "import"):
        m = _JAVA_IMPORT.search(_text(node))
        if m:
            imports.append([m.group(2), bool(m.group(1)), bool(m.group(3))])
    out["imports"] = imports
    out["bases"] = _dotted(_type_names(found.get("bases", [])))


_EXTRACT = {"python": _python, "js": _js, "go": _go, "rust": _rust, "java": _java}


# --- step 2: resolution over the whole file set ------------------------------------------

class _Project:
    """The indexed files of one project and look-ups over them, built once per resolution."""

    def __init__(self, paths, refs: dict[str, dict]):
        self.paths = set(paths)
        self.refs = refs
        self.defs = {p: set(r.get("defs", ())) for p, r in refs.items()}
        self.definers: dict[str, list[str]] = {}
        for p in sorted(self.defs):
            for name in self.defs[p]:
                self.definers.setdefault(name, []).append(p)
        self.dirs: dict[str, list[str]] = {}  # folder -> its files
        for p in sorted(self.paths):
            self.dirs.setdefault(posixpath.dirname(p), []).append(p)
        self.go_mods = sorted(((r["gomod"], posixpath.dirname(p)) for p, r in refs.items()
                               if "gomod" in r), key=lambda m: -len(m[0]))
        self.java: dict[str, list[str]] = {}  # "C.java" -> files
        for p in sorted(self.paths):
            if p.endswith(".java"):
                self.java.setdefault(posixpath.basename(p), []).append(p)
        self._links: dict[str, tuple] = {}
        self._modules: dict[tuple, str | None] = {}
        self._definers: dict[tuple, str | None] = {}

    # -- per file: (import targets, {bound name: (file, member or None)}, star files)
    def links(self, src: str) -> tuple[set, dict, list]:
        if src not in self._links:
            r = self.refs.get(src, {})
            lang = _language(src)
            targets, binds, stars = set(), {}, []
            resolve = {"python": self._python, "js": self._js, "go": self._go,
                       "rust": self._rust, "java": self._java}.get(lang)
            for rec in r.get("imports", ()) if resolve else ():
                resolve(src, rec, targets, binds, stars)
            targets.discard(src)
            self._links[src] = (targets, binds, stars)
        return self._links[src]

    def _py_module(self, dotted: str, bases) -> str | None:
        key = (dotted, bases)
        if key not in self._modules:  # sympy's files import the same modules again and again
            rel = dotted.replace(".", "/")
            self._modules[key] = next(
                (stem + suffix for stem in (f"{b}/{rel}" if b and rel else b or rel
                                            for b in bases)
                 for suffix in (PY_FILES if rel else PY_FILES[2:])
                 if stem + suffix in self.paths), None)
        return self._modules[key]

    def _python(self, src, rec, targets, binds, stars) -> None:
        level, mod, name, alias = rec
        if level:
            pkg = posixpath.dirname(src)
            for _ in range(level - 1):
                if not pkg:
                    return  # above the project
                pkg = posixpath.dirname(pkg)
            bases = (pkg,)
        else:
            bases = (*PY_ROOTS, posixpath.dirname(src))
        if name is None:  # import a.b [as x]
            f = self._py_module(mod, bases)
            if f is None:
                return
            targets.add(f)
            if alias:
                binds[alias] = (f, None)
                return
            parts = mod.split(".")
            for k in range(1, len(parts) + 1):
                g = f if k == len(parts) else self._py_module(".".join(parts[:k]), bases)
                if g is not None:
                    binds[".".join(parts[:k])] = (g, None)
            return
        f = self._py_module(mod, bases)
        if name == "*":
            if f is not None:
                targets.add(f)
                stars.append(f)
            return
        sub = self._py_module(f"{mod}.{name}" if mod else name, bases)
        if sub is not None:
            targets.add(sub)
            binds[alias or name] = (sub, None)
        elif f is not None:
            targets.add(f)
            binds[alias or name] = (f, name)

    def _js(self, src, rec, targets, binds, stars) -> None:
        spec, names = rec
        f = self._js_file(src, spec)
        if f is None:
            return
        targets.add(f)
        for local, member in names:
            if local == "*":
                stars.append(f)
            else:
                binds[local] = (f, member)

    def _js_file(self, src: str, spec: str) -> str | None:
        if not spec.startswith(("./", "../")):
            return None
        base = posixpath.normpath(posixpath.join(posixpath.dirname(src), spec))
        if base.startswith("../") or base == "..":
            return None
        stems = [base]
        stem, ext = posixpath.splitext(base)
        if ext in (".js", ".jsx", ".mjs", ".cjs"):
            stems.append(stem)  # './x.js' written for x.ts
        for cand in [base] + [s + e for s in stems for e in JS_EXTS] + \
                [posixpath.join(base, "index" + e) for e in JS_EXTS]:
            if cand in self.paths:
                return cand
        return None

    def _go(self, src, path, targets, binds, stars) -> None:
        folder = None
        for module, where in self.go_mods:
            if path == module or path.startswith(module + "/"):
                folder = posixpath.normpath(posixpath.join(where, path[len(module) + 1:]))
                folder = "" if folder == "." else folder
                break
        if folder is None:
            parts = path.split("/")
            folder = next((s for s in ("/".join(parts[k:]) for k in range(len(parts) - 1))
                           if self._go_files(s)), None)
        for f in self._go_files(folder) if folder is not None else ():
            targets.add(f)

    def _go_files(self, folder: str) -> list[str]:
        return [p for p in self.dirs.get(folder, ())
                if p.endswith(".go") and not p.endswith("_test.go")]

    def _rust(self, src, rec, targets, binds, stars) -> None:
        how, path = rec
        folder = posixpath.dirname(src)
        own = folder if posixpath.basename(src) in RUST_OWNERS else \
            posixpath.join(folder, posixpath.splitext(posixpath.basename(src))[0])
        if how == "mod":
            for base in (own, folder):
                f = self._rust_module(base, [path])
                if f is not None:
                    targets.add(f)
                    return
            return
        parts = path.split("::")
        if parts[0] == "crate":
            base = folder
            while base and not any(posixpath.join(base, o) in self.paths
                                   for o in RUST_OWNERS[:2]):
                base = posixpath.dirname(base)
            if not any(posixpath.join(base, o) in self.paths for o in RUST_OWNERS[:2]):
                base = folder
        elif parts[0] == "self":
            base = own
        elif parts[0] == "super":
            base = posixpath.dirname(own)
            while len(parts) > 1 and parts[1] == "super":
                base, parts = posixpath.dirname(base), parts[1:]
        else:
            return  # an external crate (or a 2015-style path): not resolved
        for k in range(len(parts) - 1, 0, -1):
            f = self._rust_module(base, parts[1:k + 1])
            if f is not None:
                targets.add(f)
                return

    def _rust_module(self, base: str, parts: list[str]) -> str | None:
        stem = posixpath.join(base, *parts) if base else posixpath.join(*parts)
        for cand in (stem + ".rs", stem + "/mod.rs"):
            if cand in self.paths:
                return cand
        return None

    def _java(self, src, rec, targets, binds, stars) -> None:
        dotted, static, wildcard = rec
        parts = dotted.split(".")
        if wildcard and not static:
            suffix = "/".join(parts)
            for folder, files in self.dirs.items():
                if folder == suffix or folder.endswith("/" + suffix):
                    targets.update(p for p in files if p.endswith(".java"))
            return
        if static:
            parts = parts[:-1] if not wildcard else parts
        suffix = "/".join(parts) + ".java"
        found = [p for p in self.java.get(parts[-1] + ".java", ())
                 if p == suffix or p.endswith("/" + suffix)]
        targets.update(found)
        if found and not static:
            binds[parts[-1]] = (found[0], parts[-1])

    # -- names
    def definer(self, f: str, name: str, depth: int = 0) -> str | None:
        """The file defining `name` as seen from module `f`: `f` itself, else where `f`'s
        imports take it from (re-exports), up to `REEXPORT_DEPTH` hops."""
        if name in self.defs.get(f, ()):
            return f
        if depth >= REEXPORT_DEPTH:
            return None
        key = (f, name, depth)
        if key not in self._definers:
            self._definers[key] = None
            _t, binds, stars = self.links(f)
            bound = binds.get(name)
            if bound is not None:
                found = self.definer(bound[0], bound[1], depth + 1) if bound[1] else None
            else:
                found = next((d for d in (self.definer(s, name, depth + 1) for s in stars)
                              if d is not None), None)
            self._definers[key] = found
        return self._definers[key]

    def named(self, src: str, dotted: str) -> tuple[str | None, str] | None:
        """(defining file or None, name) of a called or base `dotted` name of `src` that
        an import binds; None when no import binds it."""
        parts = dotted.split(".")
        _t, binds, stars = self.links(src)
        for k in range(len(parts), 0, -1):
            bound = binds.get(".".join(parts[:k]))
            if bound is None:
                continue
            f, member = bound
            if member is None:
                if k == len(parts):
                    return None  # the module itself
                member = parts[k]
            return self.definer(f, member, 1), member
        if stars and parts[0] not in self.defs.get(src, ()):
            for s in stars:
                d = self.definer(s, parts[0], 1)
                if d is not None:
                    return d, parts[0]
        return None

    def base(self, src: str, dotted: str) -> str | None:
        """The file defining base class `dotted` of a class in `src` (module docstring)."""
        name = dotted.rsplit(".", 1)[-1]
        if "." not in dotted and name in self.defs.get(src, ()):
            return None  # defined beside its subclass
        hit = self.named(src, dotted)
        if hit is not None and hit[0] is not None:
            return hit[0]
        cands = [p for p in self.definers.get(name, ()) if p != src]
        targets = self.links(src)[0]
        folder = posixpath.dirname(src)
        for tier in ([p for p in cands if p in targets],
                     [p for p in cands if posixpath.dirname(p) == folder], cands):
            if tier:
                return tier[0] if len(tier) == 1 else None
        return None


def _language(path: str) -> str | None:
    ext = posixpath.splitext(path)[1].lower()
    if ext in (".py", ".pyi"):
        return "python"
    if ext in (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx"):
        return "js"
    return {".go": "go", ".rs": "rust", ".java": "java"}.get(ext)


def call_weight(n: int) -> float:
    """The weight of a call edge with `n` distinct called names (module docstring)."""
    return round(min(CALL_MAX, CALL_BASE + CALL_STEP * n), 6)


def resolve(refs: dict[str, dict], paths) -> list[tuple[str, str, str, float]]:
    """Every edge `(src, dst, kind, weight)` of a project whose indexed files are `paths`
    and whose files' references are `refs` ({path: references()}), sorted."""
    project = _Project(paths, refs)
    out = []
    for src in sorted(refs):
        targets, _b, _s = project.links(src)
        out += [(src, dst, "import", IMPORT) for dst in targets]
        bases = {project.base(src, b) for b in refs[src].get("bases", ())}
        out += [(src, dst, "inherit", INHERIT) for dst in bases if dst and dst != src]
        called: dict[str, set] = {}
        for name in refs[src].get("calls", ()):
            hit = project.named(src, name)
            if hit is not None and hit[0] is not None and hit[0] != src:
                called.setdefault(hit[0], set()).add(hit[1])
        out += [(src, dst, "call", call_weight(len(names))) for dst, names in called.items()]
    return sorted(out)


# --- storage and the API for recall -----------------------------------------------------

def dumps(refs: dict) -> str:
    """References as stored (compact JSON)."""
    return json.dumps(refs, separators=(",", ":"))


def rebuild(conn, root: str) -> int:
    """Resolve the references of every indexed file of `root` again and replace its
    edges; how many there are."""
    root = os.path.abspath(root)
    raw = _sql.all_refs(conn, root)
    refs = {p: json.loads(r) for p, r in raw.items() if r}
    found = resolve(refs, raw)
    with atomic(conn):
        _sql.replace_edges(conn, root, found)
    return len(found)


def update(conn, root: str) -> float | None:
    """`rebuild` when files of `root` were stored or removed since its edges were made;
    the seconds it took, or None when the edges were current."""
    root = os.path.abspath(root)
    if not _sql.is_dirty(conn, root):
        return None
    t0 = time.perf_counter()
    rebuild(conn, root)
    return time.perf_counter() - t0


def edges(conn, root: str) -> list[tuple[str, str, str, float]]:
    """The project's edges `(src_path, dst_path, kind, weight)`, sorted."""
    return _sql.edges(conn, os.path.abspath(root))


def counts(conn, root: str) -> dict:
    """{"count": edges, "by_kind": {kind: edges}} of the project (every kind listed)."""
    by = _sql.edge_counts(conn, os.path.abspath(root))
    by_kind = {k: by.get(k, 0) for k in KINDS}
    return {"count": sum(by_kind.values()), "by_kind": by_kind}


def prior_matrix(conn, root: str, paths, *, symmetric: bool = False):
    """The structural prior `P` (DESIGN §3) over `paths` (relative to `root`, no
    repeats): a float32 `scipy.sparse.csr_array` n x n, `P[i, j]` the largest weight over
    kinds of the edges from `paths[i]` to `paths[j]` (0 without one), indices sorted.
    With `symmetric`, `P[i, j] = P[j, i]` = the larger of the two directions (an import
    tells about both files). Edges to files not in `paths` are left out."""
    import numpy as np
    from scipy import sparse

    paths = list(paths)
    where = {p: i for i, p in enumerate(paths)}
    if len(where) != len(paths):
        raise ValueError("prior_matrix: paths repeat")
    best: dict[tuple[int, int], float] = {}
    for src, dst, _kind, weight in edges(conn, root):
        i, j = where.get(src), where.get(dst)
        if i is None or j is None:
            continue
        for key in ((i, j), (j, i)) if symmetric else ((i, j),):
            if weight > best.get(key, 0.0):
                best[key] = weight
    n = len(paths)
    rows = np.fromiter((k[0] for k in best), dtype=np.int32, count=len(best))
    cols = np.fromiter((k[1] for k in best), dtype=np.int32, count=len(best))
    data = np.fromiter(best.values(), dtype=np.float32, count=len(best))
    out = sparse.csr_array((data, (rows, cols)), shape=(n, n), dtype=np.float32)
    out.sort_indices()
    return out
