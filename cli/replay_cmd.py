"""`brainbox replay`: the paper's replay evaluation from the command line.

Machine output (JSON) and the Markdown report go where ``--json`` / ``--markdown`` say
(``-`` is stdout); with neither, the Markdown report goes to stdout. Progress and
diagnostics go to stderr. A bad source or setting exits 1, a usage error 2.
"""

from __future__ import annotations

import json
import sys

import click

FORMATS = ("auto", "claude-code", "mini-swe-agent", "swe-agent", "openhands", "nebius")


def _write(path: str, text: str) -> None:
    if path == "-":
        click.echo(text, nl=not text.endswith("\n"))
    else:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)


class _Channels(click.Choice):
    """``click.Choice`` over ``brainbox.recall.CHANNELS``, read only when the choices are
    needed (``--ablate`` given, or ``replay --help``): importing brainbox.recall loads
    numpy, scipy and numba (0.6 s idle, 12 s at load 17 in the newcomer trial), and every
    command, ``--version`` included, registers this one."""

    def __init__(self) -> None:
        self.case_sensitive = True

    @property
    def choices(self):
        from brainbox.recall import CHANNELS

        return CHANNELS


def register(cli) -> None:
    @cli.command("replay")
    @click.argument("sources", nargs=-1, type=click.Path(exists=False))
    @click.option("--format", "fmt", type=click.Choice(FORMATS), default="auto", show_default=True,
                  help="Trajectory format of every SOURCE.")
    @click.option("--repos", type=click.IntRange(min=1), help="Keep the N largest repositories.")
    @click.option("--max-tasks-per-repo", type=click.IntRange(min=1),
                  help="Keep each repository's N earliest tasks (by PR number).")
    @click.option("--split", type=click.Choice(("dev", "test", "all")), default="all",
                  show_default=True, help="Alternate repositories by size: dev, test, dev, ...")
    @click.option("--seed", type=int, default=42, show_default=True)
    @click.option("--bootstrap", type=click.IntRange(min=0), default=1000, show_default=True,
                  help="Bootstrap resamples of whole trajectories (0: no intervals).")
    @click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
                  help="Local worker processes (series run in parallel).")
    @click.option("--scheduler", metavar="tcp://HOST:PORT",
                  help="Run series on a Dask cluster (needs the 'dask' extra).")
    @click.option("--ablate", multiple=True, type=_Channels(),
                  help="Remove a recall channel from fusion (repeatable).")
    @click.option("--synthetic", type=click.IntRange(min=1), metavar="EVENTS",
                  help="Replay the engine's synthetic workload of about EVENTS events.")
    @click.option("--synthetic-projects", type=click.IntRange(min=1), default=1,
                  show_default=True, help="Projects (series) of the synthetic workload.")
    @click.option("--synthetic-seed", type=int, default=7, show_default=True,
                  help="Seed of the synthetic workload generator.")
    @click.option("--json", "json_out", metavar="OUT", help="Write the result JSON (- = stdout).")
    @click.option("--markdown", "md_out", metavar="OUT", help="Write the Markdown report.")
    @click.option("--figure", "fig_out", metavar="OUT.png|.svg", help="Write the MRR figure.")
    @click.option("--no-progress", is_flag=True, help="No progress line on stderr.")
    @click.option("--engine", type=click.Choice(("compiled", "python")), default="compiled",
                  show_default=True,
                  help="The compiled per-task replay loop, or the Python reference loop "
                       "(identical results, slower; for checking).")
    def replay(sources, fmt, repos, max_tasks_per_repo, split, seed, bootstrap, workers,
               scheduler, ablate, synthetic, synthetic_projects, synthetic_seed, json_out, md_out,
               fig_out, no_progress, engine):
        """Replay agent trajectories without foresight and score brainbox against five
        baselines (paper §4-§5): coverage, MRR per probe, paired bootstrap intervals.

        \b
        Examples:
          brainbox replay data/trajectories --workers 2 --json out.json --figure fig.png
          brainbox replay runs/ --format swe-agent --repos 5 --split test
          brainbox replay --synthetic 100000 --no-progress --json -
        """
        from brainbox.eval import report
        from brainbox.eval.runner import run

        from brainbox import BrainboxError

        if not sources and not synthetic:
            raise click.UsageError("give at least one SOURCE or --synthetic EVENTS")
        if scheduler and workers != 1:
            raise click.UsageError("--workers and --scheduler exclude each other")
        if fig_out and not fig_out.lower().endswith((".png", ".svg", ".pdf")):
            raise click.UsageError("--figure must end in .png, .svg or .pdf")
        try:
            result = run(sources, fmt=fmt, repos=repos, max_tasks_per_repo=max_tasks_per_repo,
                         split=split, seed=seed, bootstrap=bootstrap, workers=workers,
                         scheduler=scheduler, ablate=ablate, synthetic=synthetic,
                         synthetic_projects=synthetic_projects, synthetic_seed=synthetic_seed,
                         progress=not no_progress, engine=engine,
                         log=lambda m: click.echo(m, err=True))
        except BrainboxError as exc:
            click.echo(f"brainbox: {exc}", err=True)
            sys.exit(1)
        md = report.markdown(result)
        if json_out:
            _write(json_out, json.dumps(result, ensure_ascii=False, indent=1) + "\n")
        if md_out:
            _write(md_out, md)
        if not json_out and not md_out:
            _write("-", md)
        if fig_out and not report.figure(result, fig_out):
            click.echo("brainbox: matplotlib is not installed (pip install 'brainbox[plot]'); "
                       "no figure written", err=True)
        tm = result["timings"]
        click.echo(f"replayed {tm['events']:,} events in {tm['replay_s']:.1f} s "
                   f"({tm['events_per_s'] or 0:,.0f} events/s)", err=True)
