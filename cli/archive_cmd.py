"""`brainbox export`, `brainbox restore` (`brainbox.archive`) and the `--as-of T` option of
recall, predict, explain, stats and log (`brainbox.asof`).

T (and export's `--since`) is an ISO 8601 date or time (UTC when it names no zone), Unix
seconds, or a span ago: `90m`, `2h`, `3d`, `2w` (`transcripts.parse_since`). A bad T is a
usage error (exit 2) naming the option; a T before the first event is one line, exit 1.
"""

from __future__ import annotations

import os
import sys

import click

from brainbox.cli.output import emit

AS_OF_HELP = ("Answer as memory would have at this time: ISO 8601 (UTC unless a zone is "
              "given), or ago: 2h, 3d, 2w. From the events at or before it; writes nothing.")


def as_of_option(fn):
    return click.option("--as-of", "as_of", metavar="T", help=AS_OF_HELP)(fn)


def parse_as_of(value: str | None, option: str = "--as-of") -> float | None:
    """A time given to `option` as Unix seconds; a bad one is a usage error (exit 2)."""
    if value is None:
        return None
    from brainbox.cli.transcripts import parse_since

    try:
        at = parse_since(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None
    if at is None:
        raise click.BadParameter("expected 2h, 3d, 2w or a date, got an empty value",
                                 param_hint=option)
    return at


def open_as_of(ctx, at: float):
    """The database's memory as of `at` (read-only; BrainboxError when `at` is before its
    first event)."""
    from brainbox import jitmode

    jitmode.prepare(ctx.obj.get("db"))
    from brainbox.asof import AsOf

    return AsOf.open(ctx.obj.get("db"), at)


def register(cli, domain_errors) -> None:
    """Add `export` and `restore` to `cli`."""

    @cli.command(name="export")
    @click.option("--project", help="Only this project's events (a folder; default: all).")
    @click.option("--since", metavar="T", help="Only events at or after T (a date, or 2h, 3d, 2w ago).")
    @click.option("-o", "--output", "output", required=True, metavar="FILE",
                  help="The file to write (0600, atomically), or - for stdout.")
    @click.option("--json", "as_json", is_flag=True, help="The manifest as JSON (on stderr with -o -).")
    @click.pass_context
    @domain_errors
    def export_cmd(ctx, project, since, output, as_json):
        """Write the event log as JSONL: a manifest line (counts, first and last id, the
        hash chain head, the sha256 of the event lines), then one event per line with
        every stored column, redacted as it was stored.

        \b
        Example:
          brainbox export -o brainbox-events.jsonl
          brainbox export --project ~/src/app --since 30d -o - | gzip > app.jsonl.gz
        """
        from brainbox import archive, store

        cutoff = parse_as_of(since, "--since")
        project = None if project is None else os.path.normpath(os.path.abspath(project))
        conn = store.connect(ctx.obj.get("db"))
        try:
            if output == "-":
                out = sys.stdout.buffer
                manifest = archive.export(conn, out.write, project=project,
                                          since=cutoff)
                out.flush()
            else:
                manifest = archive.export_file(conn, output, project=project,
                                               since=cutoff)
        finally:
            conn.close()
        data = {**manifest, "file": None if output == "-" else os.path.abspath(output)}
        if output == "-":
            click.echo(f"brainbox: exported {manifest['events']} events", err=True)
            return
        emit(data, as_json, lambda d: click.echo(
            f"exported {d['events']} events (ids {d['first_id']}..{d['last_id']}) to "
            f"{d['file']}"))

    @cli.command()
    @click.argument("file", type=click.Path(dir_okay=False))
    @click.option("--merge", is_flag=True,
                  help="Into a database with events: add those whose uid it lacks (new ids).")
    @click.option("--dry-run", is_flag=True, help="Check the file and count; write nothing.")
    @click.option("--json", "as_json", is_flag=True, help="JSON output.")
    @click.pass_context
    @domain_errors
    def restore(ctx, file, merge, dry_run, as_json):
        """Restore an export into an empty database (ids and uids kept), or add its new
        events with --merge; then rebuild the state. The whole file is checked first
        (manifest, every line, schema, sha256): a broken file changes nothing.

        \b
        Example:
          brainbox --db new.db restore brainbox-events.jsonl
          brainbox restore laptop.jsonl --merge --dry-run
        """
        from brainbox import archive, jitmode, paths

        db = os.path.abspath(ctx.obj.get("db") or paths.db_path())
        jitmode.prepare(db)  # the rebuild's kernels: compiled on a warm cache (open_memory's rule)
        data = archive.restore(db, file, merge=merge, dry_run=dry_run)

        def human(d):
            if d["dry_run"]:
                click.echo(f"would restore {d['restored']} of {d['events']} events "
                           f"({d['skipped']} present already) into {db}; nothing written")
            else:
                click.echo(f"restored {d['restored']} of {d['events']} events "
                           f"({d['skipped']} present already) into {db}; state rebuilt "
                           f"from {d['folded']} events")

        emit(data, as_json, human)
