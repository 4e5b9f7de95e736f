"""``brainbox fit``: fit recall's fusion prior and calibration on trajectories.

Two replays of the sources (as ``brainbox replay``, the fit view, the relevance floor off
so that what is fitted does not depend on the map being replaced):

1. the opening rankings (what each channel ranked, and what the session then touched; the
   same whatever the weights) give the fusion prior (``brainbox.learning``, ``brainbox.prior``,
   ``brainbox.eval.fusion_fit``): fitted on every repository and leaving each out;
2. replayed again with recall's default fusion and that prior (each repository with the
   prior that left it out), every prediction gives one isotonic map per context
   (``brainbox.confidence``).

It writes both files: by default the ones recall reads, shipped in the package
(``brainbox/fusion_prior.json``, ``brainbox/calibration.json``). The development set's
files are reproduced by ``brainbox fit ../shared/data/trajectories/*/ --workers 2``.
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
    @click.option("--prior-out", "prior_out", metavar="PATH",
                  help="Write the fusion prior here (default: the file recall reads).")
    @click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
                  help="Local worker processes.")
    @click.option("--dry-run", is_flag=True,
                  help="Fit and print the summary; write nothing.")
    @click.option("--no-progress", is_flag=True, help="No progress line on stderr.")
    def fit(sources, out, prior_out, workers, dry_run, no_progress):
        """Fit recall's fusion prior (the weights a new project starts from) and its
        confidence calibration (probability that the session then touches a recalled file)
        on agent trajectories, leave-one-repository-out.

        \b
        Example:
          brainbox fit ../shared/data/trajectories/*/ --workers 2
        """
        import tempfile

        from brainbox import BrainboxError, confidence
        from brainbox import prior as fusion_prior
        from brainbox.eval import fusion_fit
        from brainbox.eval.calibration import FIT_VIEW, fit_document
        from brainbox.eval.runner import run
        from brainbox.recall import FUSION, Params

        def replay(fusion):
            try:
                return run(sources, workers=workers, files=FIT_VIEW, bootstrap=0,
                           min_probability=0.0, calibration_rows=True, fusion=fusion,
                           progress=not no_progress, log=lambda m: click.echo(m, err=True))
            except BrainboxError as exc:
                raise click.ClickException(str(exc)) from None

        first = replay("chosen")  # the openings do not depend on the weights
        if not first["tasks"]:
            raise click.ClickException("no usable task in the sources: nothing fitted, "
                                       "nothing written")
        by_repo = first["calibration"][FIT_VIEW]["openings"]
        scale = sum(FUSION["chosen"].values())
        prior = fusion_fit.fit_document(by_repo, scale, sources=[str(s) for s in sources])
        a = prior["all"]
        click.echo(f"fusion prior: {a['n_openings']:,} openings, {a['n_rows']:,} ranked "
                   f"files, {a['n_credited']:,} credited; weights "
                   + ", ".join(f"{c} {w:.2f}" for c, w in a["lam"].items() if w), err=True)
        fd, tmp_prior = tempfile.mkstemp(suffix=".json", prefix="brainbox-prior-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(prior, fh, indent=1)
                fh.write("\n")
            os.environ["BRAINBOX_FUSION_PRIOR"] = tmp_prior  # the workers replay with it
            result = replay(Params().fusion)
        finally:
            os.environ.pop("BRAINBOX_FUSION_PRIOR", None)
            os.unlink(tmp_prior)
        doc = fit_document(result)
        for name, c in doc["contexts"].items():
            ece = c["ece_leave_one_repository_out"]
            click.echo(f"{name}: {c['n']:,} predictions, touched {c['rate'] or 0:.3f}, "
                       f"{len(c['x'])} breakpoints, held-out ECE "
                       f"{'-' if ece is None else f'{ece:.3f}'}", err=True)
        if dry_run:
            click.echo("dry run: nothing written", err=True)
            return
        for what, path in ((prior, prior_out or str(fusion_prior.PRIOR_FILE)),
                           (doc, out or str(confidence.FILE))):
            tmp = f"{path}.tmp{os.getpid()}"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(what, fh, indent=1)
                fh.write("\n")
            os.replace(tmp, path)
            click.echo(f"wrote {path}", err=True)
