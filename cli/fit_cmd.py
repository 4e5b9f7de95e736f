"""``brainbox fit``: fit recall's calibration on trajectories (``brainbox.confidence``).

It replays the sources (as ``brainbox replay``, every file view, the relevance floor off so
that what is fitted does not depend on the map being replaced), fits one isotonic map per
context on every prediction, and writes the calibration file: by default the one recall
reads, shipped in the package (``brainbox/calibration.json``). The development set's file
is reproduced by ``brainbox fit ../shared/data/trajectories/*/ --workers 2``.
"""

from __future__ import annotations

import json
import os

import click


def register(cli) -> None:
    @cli.command("fit")
    @click.argument("sources", nargs=-1, required=True, type=click.Path(exists=False))
    @click.option("--out", "out", metavar="PATH",
                  help="Write the calibration here (default: the file recall reads).")
    @click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
                  help="Local worker processes.")
    @click.option("--dry-run", is_flag=True,
                  help="Fit and print the summary; write nothing.")
    @click.option("--no-progress", is_flag=True, help="No progress line on stderr.")
    def fit(sources, out, workers, dry_run, no_progress):
        """Fit recall's confidence calibration (probability that the session then touches a
        recalled file) on agent trajectories, leave-one-repository-out error included.

        \b
        Example:
          brainbox fit ../shared/data/trajectories/*/ --workers 2
        """
        from brainbox import BrainboxError, confidence
        from brainbox.eval.calibration import FIT_VIEW, fit_document
        from brainbox.eval.runner import run

        try:
            result = run(sources, workers=workers, files=FIT_VIEW, bootstrap=0,
                         min_probability=0.0, calibration_rows=True,
                         progress=not no_progress, log=lambda m: click.echo(m, err=True))
        except BrainboxError as exc:
            raise click.ClickException(str(exc)) from None
        if not result["tasks"]:
            raise click.ClickException("no usable task in the sources: nothing fitted, "
                                       "nothing written")
        doc = fit_document(result)
        for name, c in doc["contexts"].items():
            ece = c["ece_leave_one_repository_out"]
            click.echo(f"{name}: {c['n']:,} predictions, touched {c['rate'] or 0:.3f}, "
                       f"{len(c['x'])} breakpoints, held-out ECE "
                       f"{'-' if ece is None else f'{ece:.3f}'}", err=True)
        if dry_run:
            click.echo("dry run: nothing written", err=True)
            return
        path = out or str(confidence.FILE)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1)
            fh.write("\n")
        os.replace(tmp, path)
        click.echo(f"wrote {path}", err=True)
