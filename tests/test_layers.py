"""The layering of DESIGN §2, checked by walking imports with ast."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RULES = {
    "kernels": lambda m: m.split(".")[0] in ("numpy", "numba") or m.startswith("brainbox.kernels")
    or not m.startswith(("brainbox", "scipy", "sqlite", "click")),
    "storage": lambda m: not m.startswith("brainbox") or m.startswith("brainbox.storage"),
    "brainbox": lambda m: not m.startswith(("brainbox.cli", "brainbox.eval")),
}


def imports(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name
        elif isinstance(node, ast.ImportFrom) and not node.level:
            yield node.module or ""


def violations(folder: str):
    rule = RULES[folder]
    bad = []
    for f in (ROOT / folder).rglob("*.py"):
        for m in imports(f):
            if m.split(".")[0] in ("kernels", "storage", "cli", "eval") or not rule(m):
                bad.append((f.relative_to(ROOT).as_posix(), m))
    return bad


@pytest.mark.parametrize("folder", sorted(RULES))
def test_imports_flow_one_way(folder):
    assert violations(folder) == []


def test_the_checker_catches_a_violation(tmp_path, monkeypatch):
    (tmp_path / "storage").mkdir()
    (tmp_path / "storage" / "bad.py").write_text("from brainbox.recall import recall\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert violations("storage") == [("storage/bad.py", "brainbox.recall")]


def test_shared_layer_checker_agrees():
    script = ROOT.parent / "shared" / "tools" / "check_layers.py"
    if not script.exists():
        pytest.skip("../shared/tools is absent")
    p = subprocess.run([sys.executable, str(script), str(ROOT)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
