"""`brainbox replay`: the replay evaluation of DESIGN §5 from the command line.

``--json`` is a flag, as on every other command: the JSON report on stdout. Files are
written where ``--json-out`` / ``--markdown`` / ``--figure`` say (``-`` is stdout for the
first two); with no output named, the Markdown report goes to stdout. (``--json PATH``
is gone: an option that takes a value only sometimes would swallow the first SOURCE,
``replay --json data/``.) Every output's folder is checked before the replay runs, so
a typo costs seconds, not the whole replay. Progress and diagnostics go to stderr. A
bad source or setting, an output folder that does not exist, or sources with no usable
task exit 1 with one line; a usage error exits 2.

``--files both`` (the default) replays the repository-files view and the all-files view
(``brainbox.eval.views``) and reports both, the repository view as the headline;
``--ablations`` adds the replays without each channel. Both only add replays: the
replay loops are the same.
"""

from __future__ import annotations

import json
import os
import sys

import click

FORMATS = ("auto", "claude-code", "mini-swe-agent", "swe-agent", "openhands", "nebius")


def _fail(msg: str) -> None:
    click.echo(f"brainbox: {msg}", err=True)
    sys.exit(1)


def _check_output(opt: str, path: str | None) -> None:
    """One line and exit 1 unless PATH can be written (its folder exists, is writable)."""
    if not path or path == "-":
        return
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        _fail(f"{opt} {path}: is a folder; name a file")
    if not os.path.isdir(folder):
        _fail(f"{opt} {path}: the folder {folder} does not exist (create it first)")
    if not os.access(folder, os.W_OK | os.X_OK):
        _fail(f"{opt} {path}: the folder {folder} is not writable")


def _cli_message(msg: str) -> str:
    """The loaders speak to Python callers (``format=`` and underscore names); say it the
    way the command line spells it."""
    if "pass format=" in msg:
        msg = msg.split("; pass format=")[0] + "; pass --format"
    if msg.endswith("pass --format"):
        msg += " " + "|".join(FORMATS[1:])
    return msg


def _write(path: str, text: str) -> None:
    if path == "-":
        click.echo(text, nl=not text.endswith("\n"))
    else:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)


def _repos(value: str | None) -> tuple[int | None, str | None]:
    """``--repos N|DIR`` as (N largest repositories, snapshot folder): a folder that
    exists is snapshots, a whole number >= 1 is N; anything else exits 2 with one line."""
    if value is None:
        return None, None
    if os.path.isdir(value):
        return None, value
    if value.isdigit() and int(value) >= 1:
        return int(value), None
    raise click.BadParameter(f"{value!r} is neither a number of repositories (1 or more) "
                             "nor a folder of source snapshots", param_hint="'--repos'")


class _Recall(click.Choice):
    """``click.Choice`` over a name of ``brainbox.recall`` (``CHANNELS``, the keys of
    ``FUSION``), read only when the choices are needed (the option given, or ``replay
    --help``): importing brainbox.recall loads numpy, scipy and numba (0.6 s idle, 12 s at
    load 17 in the newcomer trial), and every command, ``--version`` included, registers
    this one."""

    def __init__(self, name: str) -> None:
        self.case_sensitive = True
        self.names = name

    @property
    def choices(self):
        from brainbox import recall

        return tuple(getattr(recall, self.names))


def _procedures(sources, fmt: str, seed: int, bootstrap: int, as_json: bool,
                json_out: str | None) -> None:
    """`replay --procedures`: the procedures' evaluation (`brainbox.eval.procedures_eval`)
    as text, or JSON (`--json`, `--json-out`, every task's row included)."""
    from brainbox import BrainboxError
    from brainbox.eval.procedures_eval import evaluate, text

    if not sources:
        raise click.UsageError("--procedures replays trajectory SOURCEs")
    _check_output("--json-out", json_out)
    try:
        result = evaluate(sources, fmt, seed=seed, resamples=max(1, bootstrap))
    except BrainboxError as exc:
        _fail(_cli_message(str(exc)))
    if not result["pooled"]["tasks"]:
        _fail(f"no usable task in {', '.join(sources)}: nothing replayed")
    doc = json.dumps(result, ensure_ascii=False, indent=1) + "\n"
    if json_out:
        _write(json_out, doc)
    _write("-", doc if as_json else text(result) + "\n")


def register(cli) -> None:
    @cli.command("replay")
    @click.argument("sources", nargs=-1, type=click.Path(exists=False))
    @click.option("--format", "fmt", type=click.Choice(FORMATS), default="auto", show_default=True,
                  help="Trajectory format of every SOURCE.")
    @click.option("--repos", "repos_opt", metavar="N|DIR",
                  help="N: keep the N largest repositories. DIR: a folder of source "
                       "snapshots laid out like ../shared/data/repos/; also score "
                       "localization over every file of each snapshot (tasks at or after "
                       "it) against BM25 over files and a repository map.")
    @click.option("--max-tasks-per-repo", type=click.IntRange(min=1),
                  help="Keep each repository's N earliest tasks (by PR number).")
    @click.option("--split", type=click.Choice(("dev", "test", "all")), default="all",
                  show_default=True, help="Alternate repositories by size: dev, test, dev, ...")
    @click.option("--seed", type=int, default=42, show_default=True,
                  help="Seed of the random baseline and the bootstrap resamples.")
    @click.option("--bootstrap", type=click.IntRange(min=0), default=1000, show_default=True,
                  help="Bootstrap resamples of whole trajectories (0: no intervals).")
    @click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
                  help="Local worker processes (series run in parallel).")
    @click.option("--scheduler", metavar="tcp://HOST:PORT|local:N",
                  help="Run series on a Dask cluster (needs the 'dask' extra): the scheduler "
                       "at tcp://HOST:PORT, or local:N, a LocalCluster of N single-threaded "
                       "worker processes started for the run.")
    @click.option("--ablate", multiple=True, type=_Recall("CHANNELS"),
                  help="Remove a recall channel from fusion (repeatable).")
    @click.option("--synthetic", type=click.IntRange(min=1), metavar="EVENTS",
                  help="Replay the engine's synthetic workload of about EVENTS events.")
    @click.option("--projects", "--synthetic-projects", "synthetic_projects",
                  type=click.IntRange(min=1), default=1, show_default=True,
                  help="Repositories (series) of the synthetic workload. More than one: a "
                       "catalogue (brainbox.workload.catalogue): events per repository "
                       "lognormal (sigma 1.5, at least 20), files 4 sqrt(events) (12 to "
                       "5,000), sessions of about 60 events (lognormal, 8 to 600).")
    @click.option("--synthetic-shape", type=click.Choice(("catalogue", "uniform")),
                  default="catalogue", show_default=True,
                  help="uniform: --projects equal repositories of a file per 200 events "
                       "each, sessions spread over them (the engine benchmarks' shape).")
    @click.option("--synthetic-seed", type=int, default=7, show_default=True,
                  help="Seed of the synthetic workload generator.")
    @click.option("--json", "as_json", is_flag=True,
                  help="Print the result JSON on stdout (instead of the Markdown report).")
    @click.option("--json-out", "json_out", metavar="PATH",
                  help="Write the result JSON to PATH (- = stdout).")
    @click.option("--markdown", "md_out", metavar="PATH",
                  help="Write the Markdown report to PATH (- = stdout).")
    @click.option("--figure", "fig_out", metavar="PATH.png|.svg|.pdf",
                  help="Write the MRR figure (a .png gets a .svg beside it).")
    @click.option("--files", "files", type=click.Choice(("both", "repo", "all")), default="both",
                  show_default=True,
                  help="Files scored: repo (the repository's only: a file the agent created "
                       "is neither gold nor a candidate), all, or both views (the headline "
                       "is repo).")
    @click.option("--ablations", is_flag=True,
                  help="Also replay without each recall channel in turn; one table per "
                       "view: probe x ablation, difference and paired interval.")
    @click.option("--fusion", type=_Recall("FUSION"), default="learned",
                  show_default=True,
                  help="Recall's channel weights: learned (chosen, at a prompt times each "
                       "project's gains learned online), fitted (as learned, prompt weights "
                       "from the prior's logistic fit), chosen (on the development set: the "
                       "associative channel at 0) or fixed (the paper's).")
    @click.option("--seen-snippets", is_flag=True,
                  help="Rank recall's snippet channel over a code index of what earlier "
                       "tasks' tool results showed (Read results, cat / sed -n output). Off "
                       "by default: not tuned, it lowers P2 and all-files P1-edit.")
    @click.option("--policy", "policy", is_flag=True,
                  help="Evaluate the injection policy instead: every arm's reward at every "
                       "prompt, the policy's, the best arm in hindsight, the silent share; "
                       "--figure draws the regret over time.")
    @click.option("--procedures", is_flag=True,
                  help="Evaluate the mined error-fix procedures instead (brainbox.eval."
                       "procedures_eval): per repository in PR order, how often a task hits "
                       "an error with a live procedure, and the procedure's files against the "
                       "files then edited (precision, recall) beside the most edited files.")
    @click.option("--no-progress", is_flag=True, help="No progress line on stderr.")
    @click.option("--no-cache", is_flag=True,
                  help="Parse every source, neither reading nor writing the input cache "
                       "(`brainbox cache info`).")
    @click.option("--engine", type=click.Choice(("compiled", "python")), default="compiled",
                  show_default=True,
                  help="The compiled per-task replay loop, or the Python reference loop "
                       "(identical results, slower; for checking).")
    def replay(sources, fmt, repos_opt, max_tasks_per_repo, split, seed, bootstrap, workers,
               scheduler, ablate, synthetic, synthetic_projects, synthetic_shape, synthetic_seed,
               as_json, json_out,
               md_out, fig_out, files, ablations, fusion, seen_snippets, policy, procedures,
               no_progress, no_cache, engine):
        """Replay agent trajectories without foresight and score brainbox against five
        baselines (DESIGN §5): coverage, MRR per probe, paired bootstrap intervals.

        \b
        Examples:
          brainbox replay ../shared/data/trajectories --workers 2 --json-out out.json \\
              --markdown out.md --figure out.png
          brainbox replay runs/ --format swe-agent --repos 5 --split test
          brainbox replay ../shared/data/trajectories --files both --ablations
          brainbox replay ../shared/data/trajectories/claude-code-swebench-lite \\
              --repos ../shared/data/repos
          brainbox replay --synthetic 100000 --no-progress --json
          brainbox replay --synthetic 4000000 --projects 2000 --scheduler local:2
          brainbox replay ../shared/data/trajectories --policy --figure regret.png
        """
        from brainbox import BrainboxError
        from brainbox.eval import report
        from brainbox.eval.runner import run

        if procedures:
            return _procedures(sources, fmt, seed, bootstrap, as_json, json_out)
        if not sources and not synthetic:
            raise click.UsageError("give at least one SOURCE or --synthetic EVENTS")
        repos, snapshots = _repos(repos_opt)
        if scheduler and workers != 1:
            raise click.UsageError("--workers and --scheduler exclude each other")
        if fig_out and not fig_out.lower().endswith((".png", ".svg", ".pdf")):
            raise click.UsageError("--figure must end in .png, .svg or .pdf")
        for opt, path in (("--json-out", json_out), ("--markdown", md_out), ("--figure", fig_out)):
            _check_output(opt, path)
        for src in sources:  # `--json OUT`, the old form, leaves OUT as a source
            if as_json and not os.path.exists(src) and (src == "-" or src.endswith(".json")):
                _fail(f"no such source: {src} (--json takes no value: it prints the JSON on "
                      f"stdout; write a file with --json-out {src})")
        if policy:
            if not sources:
                raise click.UsageError("--policy needs at least one SOURCE")
            return _policy(sources, fmt, seed, as_json, json_out, md_out, fig_out, no_progress)
        try:
            result = run(sources, fmt=fmt, repos=repos, max_tasks_per_repo=max_tasks_per_repo,
                         split=split, seed=seed, bootstrap=bootstrap, workers=workers,
                         scheduler=scheduler, ablate=ablate, synthetic=synthetic,
                         synthetic_projects=synthetic_projects, synthetic_seed=synthetic_seed,
                         synthetic_shape=synthetic_shape,
                         progress=not no_progress, engine=engine, files=files,
                         ablations=ablations, fusion=fusion, snapshots=snapshots,
                         seen_snippets=seen_snippets, cache=not no_cache,
                         log=lambda m: click.echo(m, err=True))
        except BrainboxError as exc:
            _fail(_cli_message(str(exc)))
        if not result["tasks"]:
            where = ", ".join(sources) if sources else "the synthetic workload"
            _fail(f"no usable task in {where}: nothing replayed, no report written "
                  "(see the warnings above; is it a trajectory source?)")
        _emit(result, report.markdown(result), report.figure, as_json, json_out, md_out, fig_out)
        tm = result["timings"]
        warm = tm.get("compile_s") or 0.0
        runs = tm.get("replays", 0)
        click.echo(f"replayed {tm['events']:,} events"
                   + (f" ({runs} series replays: views and ablations)"
                      if runs > len(result["series"]) else "")
                   + f" in {tm['replay_s']:.1f} s"
                   + (f", {warm:.1f} s of it loading or compiling kernels" if warm >= 0.05
                      else "")
                   + f" ({tm['events_per_s'] or 0:,.0f} events/s"
                   + (" without it)" if warm >= 0.05 else ")"), err=True)


def _policy(sources, fmt, seed, as_json, json_out, md_out, fig_out, no_progress) -> None:
    """``brainbox replay --policy``: ``brainbox.eval.policy`` with the prompt hook's block."""
    from brainbox import BrainboxError
    from brainbox.cli.service import format_suggestions
    from brainbox.eval import policy as evalpolicy

    def block(items):
        return format_suggestions(items, [], 10**6)[0]

    log = None if no_progress else (lambda m: click.echo(m, err=True))
    try:
        result = evalpolicy.evaluate(sources, block, fmt=fmt, seed=seed, log=log)
    except BrainboxError as exc:
        _fail(_cli_message(str(exc)))
    if not result["pooled"].get("prompts"):
        _fail(f"no usable task in {', '.join(sources)}: nothing replayed, no report written")
    _emit(result, evalpolicy.markdown(result), evalpolicy.figure, as_json, json_out, md_out,
          fig_out)


def _emit(result, md, figure, as_json, json_out, md_out, fig_out) -> None:
    """The report: JSON on stdout (`--json`) and/or in `--json-out`, the Markdown in
    `--markdown` (on stdout when nothing else is asked), the figure in `--figure`."""
    text = json.dumps(result, ensure_ascii=False, indent=1) + "\n"
    if as_json:
        _write("-", text)
    if json_out:
        _write(json_out, text)
    if md_out:
        _write(md_out, md)
    if not as_json and not json_out and not md_out:
        _write("-", md)
    if fig_out and not figure(result, fig_out):
        click.echo("brainbox: matplotlib is not installed (pip install 'brainbox[plot]'); "
                   "no figure written", err=True)
