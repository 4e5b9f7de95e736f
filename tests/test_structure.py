"""The shape of the tree (issue "One fact in one place"), checked by walking it with ast.

- No import cycle between modules: imports inside functions count, since they are how a
  cycle hides (cli/hooks.py and cli/daemon.py imported each other that way).
- No `cli` module imports `brainbox.storage`: the command line goes through the engine.
- No module imports another module's private (`_name`) names.
- No module of the packages is over 700 lines.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"brainbox": "brainbox", "kernels": "brainbox.kernels",
            "storage": "brainbox.storage", "cli": "brainbox.cli", "eval": "brainbox.eval"}
MAX_LINES = 700


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the five packages."""
    out = {}
    for folder, dotted in PACKAGES.items():
        for f in sorted((root / folder).rglob("*.py")):
            parts = f.relative_to(root / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join((dotted, *parts))] = f
    return out


def imports(name: str, path: Path, known: dict) -> list[tuple[str, list[str]]]:
    """(imported module, names taken from it) for each import statement of a module."""
    is_pkg = path.name == "__init__.py"
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_pkg else 0)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names = [a.name for a in node.names]
            subs = [n for n in names if f"{mod}.{n}" in known]  # `from pkg import module`
            out += [(f"{mod}.{n}", []) for n in subs]
            out.append((mod, [n for n in names if n not in subs]))
    return out


def graph(root: Path = ROOT) -> dict[str, set]:
    known = modules(root)
    g = {}
    for name, path in known.items():
        g[name] = {m for m, _ in imports(name, path, known) if m in known and m != name}
    return g


def cycles(g: dict[str, set]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def _parent_packages(g: dict[str, set]) -> dict[str, set]:
    """Drop the edge a package's __init__ has to its own submodules (re-exports), which
    importing any submodule runs first and is not a dependency between modules."""
    return {v: {w for w in ws if not w.startswith(v + ".")} for v, ws in g.items()}


def test_no_import_cycles():
    assert cycles(_parent_packages(graph())) == []


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import(tmp_path):
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "a.py").write_text("from brainbox.cli import b\n")
    (tmp_path / "cli" / "b.py").write_text("def f():\n    from brainbox.cli.a import x\n")
    assert cycles(graph(tmp_path)) == [["brainbox.cli.a", "brainbox.cli.b"]]


def test_cli_goes_through_the_engine_not_the_store():
    known = modules()
    bad = [(name, m) for name, path in known.items() if name.startswith("brainbox.cli")
           for m, _ in imports(name, path, known)
           if m == "brainbox.storage" or m.startswith("brainbox.storage.")]
    assert bad == []


def test_no_module_imports_private_names_of_another():
    known = modules()
    bad = []
    for name, path in known.items():
        for mod, names in imports(name, path, known):
            if mod.startswith("brainbox") and mod != name:
                bad += [f"{name}: from {mod} import {n}" for n in names
                        if n.startswith("_") and not n.startswith("__")]
    assert bad == []


@pytest.mark.parametrize("folder", sorted(PACKAGES))
def test_no_module_is_over_700_lines(folder):
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / folder).rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}
