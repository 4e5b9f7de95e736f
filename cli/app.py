"""The click app: every command but `record` and `hook` (see `entry.py`).

Conventions: every command takes `--json` (machine output on stdout, diagnostics on
stderr); a domain error prints one line on stderr and exits 1; usage errors exit 2.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import sys
import time

import click

from brainbox import BrainboxError


def _fail(msg: str) -> None:
    click.echo(f"brainbox: {msg}", err=True)
    sys.exit(1)


def domain_errors(fn):
    """Turn BrainboxError (and the storage error) into exit 1 with a one-line message."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from brainbox.storage.db import StoreError

        try:
            return fn(*args, **kwargs)
        except (BrainboxError, StoreError) as exc:
            _fail(str(exc))

    return wrapper


def emit(data, as_json: bool, human) -> None:
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False))
    else:
        human(data)


def open_memory(ctx):
    from brainbox.memory import Memory

    return Memory.open(ctx.obj.get("db"))


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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", type=click.Path(dir_okay=False), envvar="BRAINBOX_DB",
              help="Database file (default $BRAINBOX_HOME/brainbox.db).")
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


@cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.pass_context
def record(ctx):
    """Append events (one tool call, one prompt, or --jsonl FILE|-).

    \b
    Example:
      brainbox record --session s1 --cwd . --tool Read --file src/app.py
    """
    from brainbox.cli.record_cmd import main

    sys.exit(main(ctx.args))


@cli.command()
@click.argument("query")
@click.option("--session", help="Session id: adds session evidence.")
@click.option("--cwd", type=click.Path(file_okay=False), help="Working folder (default: .).")
@click.option("--project", help="Project root (default: git root of --cwd).")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
@domain_errors
def recall(ctx, query, session, cwd, project, limit, as_json):
    """Files most likely needed for QUERY, with their evidence.

    \b
    Example:
      brainbox recall "login" --json
    """
    t0 = time.perf_counter()
    with open_memory(ctx) as mem:
        results = mem.recall(query, session=session, cwd=cwd, project=project, limit=limit)
    data = {"query": query, "results": [r.as_dict() for r in results],
            "elapsed_ms": round((time.perf_counter() - t0) * 1000, 3)}

    def human(d):
        if not d["results"]:
            click.echo("nothing relevant")
        for r in d["results"]:
            chans = ", ".join(f"{c}#{k}" for c, k in r["channels"].items())
            via = f"  via {r['via']}" if r["via"] else ""
            click.echo(f"{r['confidence']:.2f}  {r['path']}  [{chans}]{via}")

    emit(data, as_json, human)


@cli.command()
@click.option("--session", help="Session id.")
@click.option("--limit", type=click.IntRange(1, 50), default=3, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@domain_errors
def predict(ctx, session, limit, as_json):
    """The next tools the session will most likely call (top 3)."""
    with open_memory(ctx) as mem:
        tools = mem.predict_tools(session, k=limit)
    data = {"session": session, "tools": [{"tool": t, "score": round(s, 6)} for t, s in tools]}
    emit(data, as_json, lambda d: [click.echo(f"{t['score']:.4f}  {t['tool']}")
                                   for t in d["tools"]] or click.echo("no prediction"))


@cli.command()
@click.argument("path")
@click.option("--query", "-q", required=True, help="The query to explain against.")
@click.option("--session")
@click.option("--cwd", type=click.Path(file_okay=False))
@click.option("--project")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@domain_errors
def explain(ctx, path, query, session, cwd, project, as_json):
    """Why PATH ranks where it does for a query: channels, ranks and edges."""
    with open_memory(ctx) as mem:
        data = mem.explain(path, query, session=session, cwd=cwd, project=project)

    def human(d):
        click.echo(f"{d['path']}: rank {d['rank']}, confidence {d['confidence']:.2f}")
        for c, r in d["channels"].items():
            click.echo(f"  {c}: rank {r}")
        if d["via"]:
            click.echo(f"  via {d['via']}")
        for e in d["incoming"]:
            click.echo(f"  <- {e['source']} ({e['kind']}, w={e['w']})")

    emit(data, as_json, human)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
@domain_errors
def stats(ctx, as_json):
    """Counts: events, resources by kind, associations, database size.

    Answered from SQL when the saved state covers the whole log (no numpy: starts in
    ~0.1 s), else by the warm daemon when one serves this database, else by loading and
    folding the state here (`storage/summary.py`).
    """
    from brainbox.storage import db as dbmod
    from brainbox.storage.summary import saved_counts

    path = os.path.abspath(ctx.obj.get("db") or dbmod.default_db_path())
    conn = dbmod.connect(path)
    try:
        counts = saved_counts(conn)
        size = dbmod.db_bytes(conn)
    finally:
        conn.close()
    data = None
    if counts is not None:
        names = {0: "file", 1: "tool", 2: "error"}  # = brainbox.state.KIND_NAMES (test_startup)
        data = {"events": counts["events"],
                "resources": {n: counts["kinds"].get(k, 0) for k, n in names.items()},
                "associations": counts["associations"], "sessions": counts["sessions"],
                "projects": counts["projects_by_kind"].get(0, 0),
                "watermark": counts["watermark"], "db_bytes": size, "db_path": path}
    if data is None:
        from brainbox.cli import daemon

        data = daemon.call("stats", timeout=5.0, db=path)
    if data is None:
        with open_memory(ctx) as mem:
            data = mem.stats()

    def human(d):
        r = d["resources"]
        for label, value in (("events", d["events"]), ("files", r["file"]),
                             ("tools", r["tool"]), ("error fingerprints", r["error"]),
                             ("associations", d["associations"]),
                             ("sessions", d["sessions"]), ("projects", d["projects"])):
            click.echo(f"{label}: {value:,}")
        click.echo(f"database: {d['db_path']} ({d['db_bytes']:,} bytes)")

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
@click.argument("path")
@click.option("--cwd", type=click.Path(file_okay=False))
@click.option("--project")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@domain_errors
def forget(ctx, path, cwd, project, as_json):
    """Remove every event and association that mentions PATH."""
    with open_memory(ctx) as mem:
        data = mem.forget(path, cwd=cwd, project=project)
    emit(data, as_json, lambda d: click.echo(
        f"forgot {d['path']}: {d['deleted_events']} events deleted"))


@cli.command()
@click.option("--json", "as_json", is_flag=True)
def warmup(as_json):
    """Load or compile every numba kernel (fills the cache after install)."""
    from brainbox.warm import warmup as kernel_warmup

    t0 = time.perf_counter()
    names = kernel_warmup()
    data = {"kernels": names, "seconds": round(time.perf_counter() - t0, 3),
            "cache_dir": os.environ.get("NUMBA_CACHE_DIR")}
    emit(data, as_json, lambda d: click.echo(
        f"{len(d['kernels'])} kernels ready in {d['seconds']} s"))


@cli.command()
@click.option("--sessions", type=click.IntRange(1, 10_000), default=12, show_default=True)
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--db", "demo_db", type=click.Path(dir_okay=False),
              help="Keep the demo memory in this file (default: a temporary one).")
@click.option("--json", "as_json", is_flag=True)
def demo(sessions, seed, demo_db, as_json):
    """Record a seeded synthetic workload, then show recall and next-tool predictions."""
    from brainbox.demo import run_demo

    data = run_demo(sessions=sessions, seed=seed, db=demo_db, echo=None if as_json else click.echo)
    if as_json:
        click.echo(json.dumps(data))


def _register_optional():
    """Commands that live in their own modules (replay, hooks, daemon, installers)."""
    import importlib

    for mod in ("replay_cmd", "agent_cmds"):
        try:
            m = importlib.import_module(f"brainbox.cli.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"brainbox.cli.{mod}":
                raise
            continue
        m.register(cli)


_register_optional()

__all__ = ["cli", "emit", "domain_errors", "open_memory", "parse_when", "_dt"]
