"""pyproject's package list: every package folder of the checkout is installed.

The packages are listed by hand (``[tool.setuptools] packages``, with ``package-dir``
mapping ``brainbox.kernels`` to ``kernels/`` and so on), so a new sub-package that is not
listed works in an editable checkout and is missing from a wheel (kernels/replay/ and
eval/reference/ were, when they were made).
"""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _config():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_folder_is_listed_and_every_listed_package_exists():
    cfg = _config()
    mapped = cfg["package-dir"]
    listed = set(cfg["packages"])
    found = set()
    for name, folder in mapped.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([name, *rel.parts]))
    assert found - listed == set(), "package folders pyproject does not install"
    def folder(package):
        top = max((t for t in mapped if package == t or package.startswith(t + ".")), key=len)
        return ROOT / mapped[top] / Path(*package[len(top):].split(".")[1:])

    missing = {n for n in listed if not (folder(n) / "__init__.py").is_file()}
    assert missing == set(), "listed packages without a folder"
