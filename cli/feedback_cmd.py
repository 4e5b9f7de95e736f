"""`brainbox log` and `brainbox feedback` (`brainbox.corrections`): what
the prompt hook injected, when, why and what became of it, and the user's verdict on a
file it injects. The suggestions not yet scored are read from the session files
(`handler.peek_pending`), without claiming them. Bad input is one line on stderr, exit 1,
and nothing written.
"""

from __future__ import annotations

import time

import click

from brainbox.cli.archive_cmd import as_of_option, open_as_of, parse_as_of
from brainbox.cli.output import emit


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at)) if at else "?"


def _why(r: dict) -> str:
    parts = [f"rank {r['rank']}"]
    if r.get("confidence") is not None:
        parts.append(f"confidence {float(r['confidence']):.2f}")
    if r.get("via"):
        parts.append(f"via {r['via']} -> {r['path']}")
    if r.get("channels"):
        parts.append("channels " + ", ".join(f"{c} #{n}" for c, n in
                                              sorted(r["channels"].items(), key=lambda x: x[1])))
    return "; ".join(parts)


def log_line(r: dict) -> str:
    """One row of `brainbox log`: when, session, outcome, the file, why (or the procedure
    quoted)."""
    if r.get("kind") == "quotation":
        return (f"{_when(r['at'])}  {str(r.get('session') or '?')[:12]:<12}  quoted   "
                f"procedure {r.get('fingerprint')}: `{r.get('command')}` after edits of "
                f"{', '.join(r.get('files') or ()) or '?'}")
    return (f"{_when(r['at'])}  {str(r.get('session') or '?')[:12]:<12}  {r['outcome']:<7}  "
            f"{r['path']}  ({_why(r)})")


def register(cli, domain_errors, open_memory) -> None:
    """Add `log` and `feedback` to `cli`, with `app`'s error wrapper and memory opener."""
    project_opt = click.option("--project", help="Project root (default: the repository of ., every worktree one project).")
    json_opt = click.option("--json", "as_json", is_flag=True, help="JSON output.")

    @cli.command(name="log")
    @click.option("--session", help="Only this session's injections.")
    @click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True,
                  help="At most this many rows.")
    @click.option("--excluded", is_flag=True,
                  help="List the files `feedback --never` excludes instead.")
    @project_opt
    @as_of_option
    @json_opt
    @click.pass_context
    @domain_errors
    def log_cmd(ctx, session, limit, excluded, project, as_of, as_json):
        """What memory injected into prompts, newest first: when, why (channels, the
        association it came by, confidence), and what became of it (read, edited,
        ignored, or pending until the session's Stop), and the procedures quoted after a
        failed command.

        \b
        Example:
          brainbox log --limit 20
          brainbox log --excluded
        """
        from brainbox import corrections
        from brainbox.cli.handler import peek_pending

        at = parse_as_of(as_of)
        with open_memory(ctx) if at is None else open_as_of(ctx, at) as mem:
            if excluded:
                data = corrections.exclusions(mem, project)
            elif at is not None:  # scored by T, else pending at T (brainbox.asof)
                from brainbox.asof import injection_log

                data = injection_log(mem, peek_pending(session), session=session, limit=limit)
            else:
                data = corrections.injection_log(mem, peek_pending(session), session=session,
                                                 limit=limit)

        def human(rows):
            if not rows:
                click.echo("no exclusions" if excluded else "nothing injected yet")
            for r in rows:
                click.echo(f"{r['path']}  (excluded {_when(r['at'])}, in {r['project']})"
                           if excluded else log_line(r))

        emit(data, as_json, human)

    @cli.command()
    @click.argument("path")
    @click.option("--useful", "verdict", flag_value="useful",
                  help="It helped: reset its ignore streak; the channels that ranked it gain "
                  "credit.")
    @click.option("--wrong", "verdict", flag_value="wrong",
                  help="It should not have been shown: weaken the association that produced it; "
                  "the channels that ranked it lose credit.")
    @click.option("--never", "verdict", flag_value="never",
                  help="Never inject it in this project (until --undo).")
    @click.option("--undo", is_flag=True, help="Undo a --never.")
    @click.option("--query", help="The prompt it was shown for (a label for learning).")
    @project_opt
    @json_opt
    @click.pass_context
    @domain_errors
    def feedback(ctx, path, verdict, undo, query, project, as_json):
        """Tell memory what a file it injects is worth: --useful, --wrong or --never
        (and --undo, of a --never).

        \b
        Example:
          brainbox feedback src/legacy/old.py --never
          brainbox feedback src/legacy/old.py --undo
        """
        from brainbox.cli.handler import peek_pending
        from brainbox.corrections import FeedbackError, feedback

        if undo and verdict not in (None, "never"):
            raise FeedbackError("--undo undoes a --never; it takes no other flag")
        if undo:
            verdict = "undo"
        if verdict is None:
            raise FeedbackError("feedback takes one of --useful, --wrong, --never or --undo")
        with open_memory(ctx) as mem:
            data = feedback(mem, path, verdict, query=query, project=project,
                            pending=peek_pending() if verdict in ("useful", "wrong") else ())

        def human(d):
            what = {"useful": "marked useful", "wrong": "marked wrong",
                    "never": "excluded from injection", "undo": "no longer excluded"}
            head = what[d["verdict"]] if d["changed"] else "already excluded"
            tail = f" (weakened {d['via']} -> {d['path']})" if d.get("via") else ""
            click.echo(f"{d['path']}: {head} in {d['project']}{tail}")

        emit(data, as_json, human)
