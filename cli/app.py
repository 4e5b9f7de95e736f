"""The click app: every command but `record` and `hook` (see `entry.py`).

Conventions: every command takes `--json` (machine output on stdout, diagnostics on
stderr); a domain error prints one line on stderr and exits 1; usage errors exit 2.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time

import click

from brainbox import BrainboxError
from brainbox.cli.archive_cmd import as_of_option, open_as_of, parse_as_of
from brainbox.cli.output import emit


def _fail(msg: str) -> None:
    click.echo(f"brainbox: {msg}", err=True)
    sys.exit(1)


def domain_errors(fn):
    """Turn BrainboxError (and the storage error) into exit 1 with a one-line message."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from brainbox.store import StoreError

        try:
            return fn(*args, **kwargs)
        except (BrainboxError, StoreError) as exc:
            _fail(str(exc))

    return wrapper


def open_memory(ctx):
    from brainbox import jitmode

    # compiled kernels on a warm cache; on a cold one a small memory runs them as Python
    # while `brainbox warmup` fills the cache in the background (brainbox.jitmode)
    jitmode.prepare(ctx.obj.get("db"))
    from brainbox.memory import Memory

    mem = Memory.open(ctx.obj.get("db"))
    mem.source = "cli"  # provenance of what a command appends (pin, feedback, decay, ...)
    return mem


def parse_when(value: str | None, option: str = "--now") -> float | None:
    """An ISO 8601 time (or Unix seconds) given to `option`; a bad one is a usage error
    (exit 2) that names the option."""
    if value is None:
        return None
    from brainbox.events import EventError, parse_time

    try:
        return parse_time(value)
    except EventError:
        raise click.BadParameter(f"expected an ISO 8601 time such as 2026-12-01T09:30:00Z, "
                                 f"got {value!r}", param_hint=option) from None


def hoist_db(group: click.Group, args: list[str]) -> list[str]:
    """`brainbox CMD ... --db FILE` as `brainbox --db FILE CMD ...`, unless CMD has a `--db`
    of its own (`demo`): the database option works on either side of the subcommand."""
    i = 0
    while i < len(args) and args[i].startswith("-"):  # the group's own options
        i += 2 if args[i] == "--db" else 1
    if i >= len(args):
        return args
    cmd = group.commands.get(args[i])
    if cmd is None or any("--db" in p.opts for p in cmd.params):
        return args
    head, rest, moved = args[: i], [], []
    j = i + 1
    while j < len(args):
        a = args[j]
        if a == "--":
            rest.extend(args[j:])
            break
        if a == "--db" and j + 1 < len(args):
            moved += [a, args[j + 1]]
            j += 2
            continue
        if a.startswith("--db="):
            moved.append(a)
        else:
            rest.append(a)
        j += 1
    return head + moved + [args[i]] + rest


class _Cli(click.Group):
    def parse_args(self, ctx, args):
        return super().parse_args(ctx, hoist_db(self, list(args)))


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", type=click.Path(dir_okay=False), envvar="BRAINBOX_DB",
              help="Database file (default $BRAINBOX_HOME/brainbox.db); before or after "
                   "the command.")
@click.version_option(package_name="brainbox")
@click.pass_context
def cli(ctx, db):
    """brainbox: a local behavioral memory for coding agents.

    \b
    Example:
      brainbox demo
      brainbox recall "fix the login redirect" --cwd ~/src/app
    """
    ctx.ensure_object(dict)
    ctx.obj["db"] = db


@cli.command(add_help_option=False,
             context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.pass_context
def record(ctx):
    """Append events (one tool call, one prompt, or --jsonl FILE|-).

    Its options (argparse, see `brainbox record --help`) are parsed by `record_cmd`, which
    runs without click on the hook path; the group's `--db` is passed on.
    """
    from brainbox.cli.record_cmd import main

    sys.exit(main(ctx.args, db=ctx.obj.get("db")))


@cli.command()
@click.argument("query")
@click.option("--session", help="Session id: adds session evidence.")
@click.option("--cwd", type=click.Path(file_okay=False), help="Working folder (default: .).")
@click.option("--project", help="Project key (default: the repository of --cwd, every worktree one project; $BRAINBOX_PROJECT).")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="At most this many files.")
@as_of_option
@click.option("--source", "sources", multiple=True,
              type=click.Choice(["hook", "import", "mcp", "cli", "unknown"]),
              help="Only the evidence of events from this source (repeatable): the memory "
                   "folded from them alone.")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
@domain_errors
def recall(ctx, query, session, cwd, project, limit, as_of, sources, as_json):
    """Files most likely needed for QUERY, with their evidence.

    A running daemon (`brainbox serve --detach`) answers when it serves this database:
    no numpy import, no state load. Else the memory is loaded here (JSON `served_by`).
    With --source, the events of those sources are folded here (`brainbox.provenance`).

    \b
    Example:
      brainbox recall "login" --json
      brainbox recall "login" --source hook --source mcp
    """
    t0 = time.perf_counter()
    at = parse_as_of(as_of)
    if at is not None and sources:
        raise click.UsageError("--as-of and --source cannot be combined (yet)")
    found = None if at is not None or sources else _daemon(
        ctx, "recall", query=query, session=session, project=project,
        cwd=os.path.abspath(cwd or os.getcwd()), limit=limit)
    if isinstance(found, list):
        results, served_by = found, "daemon"
    else:
        with open_memory(ctx) if at is None else open_as_of(ctx, at) as mem:
            if sources:
                from brainbox import provenance

                mem = provenance.only(mem, sources)
            results = [r.as_dict() for r in mem.recall(query, session=session, cwd=cwd,
                                                         project=project, limit=limit)]
        served_by = "process"
    data = {"query": query, "results": results, "served_by": served_by,
            "elapsed_ms": round((time.perf_counter() - t0) * 1000, 3)}
    if at is not None:
        data["as_of"] = at
    if sources:
        data["sources"] = list(sources)

    def human(d):
        if not d["results"]:
            click.echo("nothing relevant")
        for r in d["results"]:
            chans = ", ".join(f"{c}#{k}" for c, k in r["channels"].items())
            via = f"  via {r['via']}" if r["via"] else ""
            click.echo(f"{r['confidence']:.2f}  {r['path']}  [{chans}]{via}")

    emit(data, as_json, human)


@cli.command()
@click.option("--session", help="Session id (default: none, the global tool prior).")
@click.option("--limit", type=click.IntRange(1, 50), default=3, show_default=True,
              help="How many tools.")
@as_of_option
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
@domain_errors
def predict(ctx, session, limit, as_of, as_json):
    """The next tools the session will most likely call (top 3).

    Scores are fused reciprocal-rank scores (the session's tool n-grams, then tool
    frequency): they order the tools, they are not probabilities. A running daemon
    answers when it serves this database.
    """
    at = parse_as_of(as_of)
    found = None if at is not None else _daemon(ctx, "predict", session=session, k=limit)
    if isinstance(found, list):
        tools, served_by = [(t["tool"], t["score"]) for t in found], "daemon"
    else:
        with open_memory(ctx) if at is None else open_as_of(ctx, at) as mem:
            tools, served_by = mem.predict_tools(session, k=limit), "process"
    data = {"session": session, "tools": [{"tool": t, "score": round(s, 6)} for t, s in tools],
            "served_by": served_by}
    if at is not None:
        data["as_of"] = at
    emit(data, as_json, lambda d: [click.echo(f"{t['score']:.4f}  {t['tool']}")
                                   for t in d["tools"]] or click.echo("no prediction"))


def _by_source(counts: dict) -> str:
    return ", ".join(f"{n} {s}" for s, n in counts.items())


def _daemon(ctx, op: str, **fields):
    """The warm daemon's answer to `op` for this command's database, or None (no daemon,
    another database, a timeout or an error: the caller then works in-process)."""
    from brainbox import paths
    from brainbox.cli import client

    db = ctx.obj.get("db")
    return client.call(op, timeout=5.0, db=os.path.abspath(db) if db else paths.db_path(),
                       **fields)


@cli.command()
@click.argument("path")
@click.option("--query", "-q", required=True, help="The query to explain against.")
@click.option("--session", help="Session id: adds session evidence.")
@click.option("--cwd", type=click.Path(file_okay=False), help="Working folder (default: .).")
@click.option("--project", help="Project key (default: the repository of --cwd, every worktree one project; $BRAINBOX_PROJECT).")
@as_of_option
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
@domain_errors
def explain(ctx, path, query, session, cwd, project, as_of, as_json):
    """Why PATH ranks where it does for a query: channels, ranks and edges.

    A running daemon answers when it serves this database (JSON `served_by`); else, or
    when it cannot (PATH not in memory: the error is then this process's), it is
    computed here.
    """
    at = parse_as_of(as_of)
    data = None if at is not None else _daemon(
        ctx, "explain", path=path, query=query, session=session, project=project,
        cwd=os.path.abspath(cwd or os.getcwd()))
    if isinstance(data, dict):
        data["served_by"] = "daemon"
    else:
        from brainbox import provenance  # where the evidence came from (issue 19)

        with open_memory(ctx) if at is None else open_as_of(ctx, at) as mem:
            data = mem.explain(path, query, session=session, cwd=cwd, project=project)
            provenance.explain_sources(mem, data, project, os.path.abspath(cwd or os.getcwd()))
        data["served_by"] = "process"
        if at is not None:
            data["as_of"] = at
    data["confidence"] = round(float(data["confidence"]), 4)

    def human(d):
        click.echo(f"{d['path']}: rank {d['rank']}, confidence {d['confidence']:.2f}")
        for c, r in d["channels"].items():
            click.echo(f"  {c}: rank {r}")
        if d["via"]:
            click.echo(f"  via {d['via']}")
        if d.get("provenance"):
            click.echo("  events: " + _by_source(d["provenance"]))
        for e in d["incoming"]:
            how = "structural: the code graph, nothing learned" if e.get("structural") \
                else e["kind"]
            src = f"; {_by_source(e['sources'])}" if e.get("sources") else ""
            click.echo(f"  <- {e['source']} ({how}, w={e['w']}{src})")
        if d.get("weights"):  # learned per project at a prompt (brainbox.learning)
            click.echo("  channel weights: " + ", ".join(f"{c} {w:g}"
                                                         for c, w in d["weights"].items()))

    emit(data, as_json, human)


@cli.command()
@as_of_option
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
@domain_errors
def stats(ctx, as_of, as_json):
    """Counts: events, resources by kind, associations, database size.

    Answered from SQL when the saved state covers the whole log (no numpy: starts in
    ~0.1 s), else by the warm daemon when one serves this database, else by loading and
    folding the state here (`storage/summary.py`).
    """
    from brainbox import paths, store

    path = os.path.abspath(ctx.obj.get("db") or paths.db_path())
    at = parse_as_of(as_of)
    conn = store.connect(path)
    try:
        counts = store.saved_counts(conn) if at is None else None
        size = store.db_bytes(conn)
        durations = store.tool_durations(conn)
    finally:
        conn.close()
    data = None
    if at is not None:
        with open_as_of(ctx, at) as mem:
            data = mem.stats()
    if counts is not None:
        from brainbox.kernels.codes import FILE, KIND_NAMES  # standard library only

        data = {"events": counts["events"],
                "resources": {n: counts["kinds"].get(k, 0) for k, n in KIND_NAMES.items()},
                "associations": counts["associations"], "sessions": counts["sessions"],
                "projects": counts["projects_by_kind"].get(FILE, 0),
                "watermark": counts["watermark"], "db_bytes": size, "db_path": path}
    if data is None:
        from brainbox.cli import client

        data = client.call("stats", timeout=5.0, db=path)  # answers for the whole log
    if data is None:
        with open_memory(ctx) as mem:
            data = mem.stats()
    data["durations"] = durations  # per tool: calls timed by the host, median ms

    def human(d):
        r = d["resources"]
        for label, value in (("events", d["events"]), ("files", r["file"]),
                             ("tools", r["tool"]), ("error fingerprints", r["error"]),
                             ("associations", d["associations"]),
                             ("sessions", d["sessions"]), ("projects", d["projects"])):
            click.echo(f"{label}: {value:,}")
        click.echo(f"database: {d['db_path']} ({d['db_bytes']:,} bytes)")
        if d["durations"]:
            click.echo("median tool duration: " + ", ".join(
                f"{t} {v['median_ms']:g} ms ({v['calls']})" for t, v in d["durations"].items()))

    emit(data, as_json, human)


@cli.command()
@click.option("--now", help="ISO 8601 time to decay to (default: now).")
@click.option("--dry-run", is_flag=True, help="Count what would be pruned; change nothing.")
@click.option("--yes", "--force", "force", is_flag=True,
              help="Prune even when more than half of the associations would go.")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
@domain_errors
def decay(ctx, now, dry_run, force, as_json):
    """Apply daily decay and prune weak associations (logged, so rebuild replays it).

    Each association decays from its last update (never from before this memory began,
    so importing old sessions loses nothing); one updated in the last 7 days is never
    pruned. A decay that would prune more than half of the associations needs --yes.
    """
    when = parse_when(now, "--now")
    with open_memory(ctx) as mem:
        data = mem.decay(when, dry_run=dry_run, force=force)
    if dry_run:
        emit(data, as_json, lambda d: click.echo(
            f"would prune {d['pruned']} of {d['associations']} associations "
            f"({d['remain']} would remain); nothing changed"))
        return
    emit(data, as_json, lambda d: click.echo(
        f"pruned {d['pruned']} associations; {d['associations']} remain"))


@cli.command()
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@domain_errors
def rebuild(ctx, as_json):
    """Recompute every matrix from the event log."""
    with open_memory(ctx) as mem:
        data = mem.rebuild()
    emit(data, as_json, lambda d: click.echo(f"rebuilt from {d['events']} events"))


@cli.command()
@click.argument("path", required=False)
@click.option("--recursive", "-r", is_flag=True,
              help="Allow a folder (. for the whole project) or a glob: every file under it.")
@click.option("--session", help="Forget every event of this session instead of a PATH.")
@click.option("--before", help="Forget every event older than this ISO time or duration "
              "(30d, 12h, 2w) instead of a PATH.")
@click.option("--yes", is_flag=True, help="With --session/--before: allow deleting every event.")
@click.option("--dry-run", is_flag=True, help="List what would be forgotten; delete nothing.")
@click.option("--cwd", type=click.Path(file_okay=False),
              help="Folder a relative PATH is taken from (default: .).")
@click.option("--project", help="Project root (default: the project that holds PATH).")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
@domain_errors
def forget(ctx, path, recursive, session, before, yes, dry_run, cwd, project, as_json):
    """Remove every event and association that mentions PATH, and its code index entries;
    or every event of a --session, or --before a time. No byte of it stays in the
    database file or its WAL; each deletion is recorded (ids only) for `brainbox audit`.

    PATH is a file in memory or in the code index; a folder or a glob needs --recursive. An absolute PATH is
    forgotten in its own project from any folder. Nothing in memory mentions PATH: exit 1.

    \b
    Example:
      brainbox forget src/secrets.py
      brainbox forget src/vendor --recursive --dry-run
      brainbox forget --session 5f2c... --dry-run
      brainbox forget --before 90d
    """
    from brainbox.forgetting import ForgetRefused, count

    if session is not None or before is not None:
        if path is not None:
            click.echo("brainbox: forget: give PATH, --session or --before, not several",
                       err=True)
            sys.exit(2)
        return _forget_events(ctx, session, before, yes, dry_run, as_json)
    try:
        if path is None:
            raise ForgetRefused("forget: give a PATH, --session S or --before T")
        if dry_run:
            data = _forget_dry_run(ctx, path, cwd, project)
        else:
            def announce(plan):
                if plan.kind in ("folder", "glob", "project"):
                    click.echo(f"forgetting {count(len(plan.files), 'file')}, "
                               f"{count(len(plan.event_ids), 'event')} under "
                               f"{plan.path or '.'} in {plan.project}", err=True)

            with open_memory(ctx) as mem:
                data = mem.forget(path, cwd=cwd, project=project, recursive=recursive,
                                  before=announce)
    except ForgetRefused as exc:
        click.echo(f"brainbox: {exc}", err=True)
        sys.exit(2)

    def human(d):
        if d.get("dry_run"):
            need = " (needs --recursive)" if d["kind"] in ("folder", "glob", "project") else ""
            click.echo(f"would forget {d['path'] or '.'} in {d['project']}: "
                       f"{count(len(d['files']), 'file')}, {count(d['events'], 'event')}, "
                       f"{count(d['indexed_files'], 'indexed file')} "
                       f"({count(d['indexed_chunks'], 'chunk')}){need}; nothing deleted")
            for f in d["files"]:
                click.echo(f"  {f['path']}  ({count(f['events'], 'event')})")
        else:
            click.echo(f"forgot {d['path'] or '.'}: "
                       f"{count(d['deleted_events'], 'event')} deleted, "
                       f"{count(d['indexed_files'], 'file')} "
                       f"({count(d['indexed_chunks'], 'chunk')}) dropped from the code index")

    emit(data, as_json, human)


def _forget_events(ctx, session, before, yes, dry_run, as_json) -> None:
    """`forget --session S` / `forget --before T` (`brainbox.retention`)."""
    from brainbox import retention

    try:
        if dry_run:  # from the event log alone (standard library only, like PATH's)
            from brainbox import store

            conn = store.connect(ctx.obj.get("db"))
            try:
                data = retention.counted(conn, session=session, before=before)
            finally:
                conn.close()
        else:
            with open_memory(ctx) as mem:
                data = retention.forget(mem, session=session, before=before, yes=yes)
    except retention.RetentionRefused as exc:
        click.echo(f"brainbox: {exc}", err=True)
        sys.exit(2)
    emit(data, as_json, lambda d: click.echo(
        f"would forget {d['events']} events: {d['what']}; nothing deleted" if d["dry_run"]
        else f"forgot {d['deleted_events']} events: {d['what']}"))


def _forget_dry_run(ctx, path, cwd, project) -> dict:
    """`forget --dry-run`: the plan from the event log alone (standard library only)."""
    from brainbox import store
    from brainbox.forgetting import plan

    conn = store.connect(ctx.obj.get("db"))
    try:
        return {"dry_run": True,
                **plan(conn, path, cwd=cwd, project=project, recursive=True).as_dict()}
    finally:
        conn.close()


@cli.command()
@click.option("--replay/--no-replay", default=True, show_default=True,
              help="Also the replay loop's kernels (brainbox replay).")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
def warmup(replay, as_json):
    """Load or compile every numba kernel into the cache (`install` starts this in the
    background). The first time compiles for about a minute; progress goes to stderr.

    \b
    Example:
      brainbox warmup
    """
    from brainbox import jitmode

    jitmode.force("numba")  # compiling is the point, cold cache or not
    from brainbox.warm import warmup as kernel_warmup

    extra = []
    if replay:
        from brainbox.eval.runner import warm_steps

        extra = warm_steps()
    click.echo(f"brainbox: warm-up into {jitmode.cache_dir()} ({jitmode.mode()} kernels)",
               err=True)
    report = jitmode.CompileReport() if jitmode.mode() == "numba" else None
    if report is None:
        data = kernel_warmup(extra)
    else:
        with report:
            data = kernel_warmup(extra, report=report)
    emit(data, as_json, lambda d: click.echo(
        f"kernels ready in {d['seconds']} s: {d['compiled'] or 0} compiled, the rest loaded "
        f"from {d['cache_dir']}" if d["mode"] == "numba" else
        "nothing to compile: kernels run as Python here (NUMBA_DISABLE_JIT)"))


@cli.command()
@click.option("--sessions", type=click.IntRange(1, 10_000), default=12, show_default=True,
              help="Synthetic agent sessions to record (40 events each).")
@click.option("--seed", type=int, default=7, show_default=True,
              help="Seed of the synthetic workload.")
@click.option("--db", "demo_db", type=click.Path(dir_okay=False),
              help="Keep the demo memory in this file (default: a temporary one).")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
def demo(sessions, seed, demo_db, as_json):
    """Record a seeded synthetic workload, then ask held-out sessions' own prompts and
    predict a next tool, marking what those sessions really did."""
    from brainbox.demo import run_demo

    data = run_demo(sessions=sessions, seed=seed, db=demo_db,
                    echo=None if as_json else click.echo,
                    note=lambda line: click.echo(line, err=True))
    if as_json:
        click.echo(json.dumps(data))


def _register_commands():
    """Commands that live in their own modules (replay, hooks, daemon, installers)."""
    from brainbox.cli import (
        agent_cmds,
        archive_cmd,
        cache_cmd,
        feedback_cmd,
        fit_cmd,
        index_cmd,
        pin_cmd,
        replay_cmd,
        search_cmd,
        trust_cmd,
    )

    replay_cmd.register(cli)
    cache_cmd.register(cli)
    fit_cmd.register(cli)
    index_cmd.register(cli)
    search_cmd.register(cli)
    pin_cmd.register(cli, domain_errors, open_memory)
    archive_cmd.register(cli, domain_errors)
    feedback_cmd.register(cli, domain_errors, open_memory)
    trust_cmd.register(cli, domain_errors, open_memory)
    agent_cmds.register(cli)


_register_commands()

__all__ = ["cli", "domain_errors", "emit", "hoist_db", "open_memory", "parse_when"]
