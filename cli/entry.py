"""The `brainbox` console entry point: a standard-library dispatcher.

`brainbox record` and `brainbox hook ...` run in a fresh process per tool call, so they
never import click, numpy or numba (whole-process cost is a product metric, DESIGN §8:
`import click` alone adds 35-65 ms). `brainbox --version` is answered here too, from
`brainbox.__version__` (the package's one version: pyproject reads it), without click or
`importlib.metadata` (with both it took 3.0x `python -c pass` on a loaded machine, load 12;
`importlib.metadata` alone imported `email`, `zipfile`, `csv`, 56 ms there). Every other
command goes to the click app.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--version"]:
        from brainbox import __version__

        sys.stdout.write(f"brainbox, version {__version__}\n")  # click's version_option form
        return 0
    if argv and argv[0] == "record" and "--help" not in argv and "-h" not in argv:
        from brainbox.cli.record_cmd import main as record_main

        return record_main(argv[1:])
    if argv and argv[0] == "hook" and "--help" not in argv:
        from brainbox.cli.hooks import main as hook_main

        return hook_main(argv[1:])
    from brainbox.cli.app import cli

    return cli.main(args=argv, prog_name="brainbox", standalone_mode=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
