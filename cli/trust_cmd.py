"""`brainbox audit` (the event log's hash chain, `storage.chain` through `brainbox.store`)
and `brainbox consolidate --keep 30d` (`brainbox.retention`). `audit` is standard library
only and streams the log; it exits 1 when the chain is broken, naming the first bad id."""

from __future__ import annotations

import sys

import click

from brainbox.cli.output import emit


def register(cli, domain_errors, open_memory) -> None:
    """Add `audit` and `consolidate` to `cli`."""

    @cli.command()
    @click.option("--json", "as_json", is_flag=True, help="JSON output.")
    @click.pass_context
    @domain_errors
    def audit(ctx, as_json):
        """Verify the event log's hash chain: every event hashed onto the one before it,
        and every deletion brainbox made (forget, consolidate) recorded. Reports ok, or
        the first bad id and whether it was edited, deleted, inserted or moved to another
        id outside brainbox (e.g. with the sqlite3 shell). Exit 1 when broken.

        \b
        Example:
          brainbox audit
        """
        from brainbox import store

        conn = store.connect(ctx.obj.get("db"))
        try:
            data = store.audit(conn)
        finally:
            conn.close()

        def human(d):
            if d["ok"]:
                click.echo(f"ok: {d['events']:,} events chained; head {d['head'][:16]}")
            else:
                click.echo(f"broken at event {d['bad_id']}: {d['problem']} ({d['detail']}); "
                           f"{d['events']:,} events before it verified")

        emit(data, as_json, human)
        if not data["ok"]:
            sys.exit(1)

    @cli.command()
    @click.option("--keep", required=True, help="Keep the raw events of this window, e.g. 30d "
                  "(also h, w, m, s); older ones are folded into a checkpoint and dropped.")
    @click.option("--dry-run", is_flag=True, help="Count what would be dropped; change nothing.")
    @click.option("--json", "as_json", is_flag=True, help="JSON output.")
    @click.pass_context
    @domain_errors
    def consolidate(ctx, keep, dry_run, as_json):
        """Drop raw events older than --keep, keeping what memory learned from them: the
        folded state as of the last dropped event becomes a checkpoint that rebuild starts
        from (recall, predict and stats are unchanged). Recorded in the log, so `audit`
        stays ok. Only when you ask: nothing consolidates by itself.

        \b
        Example:
          brainbox consolidate --keep 30d --dry-run
        """
        from brainbox import retention

        try:
            with open_memory(ctx) as mem:
                data = retention.consolidate(mem, keep, dry_run=dry_run)
        except retention.RetentionRefused as exc:
            click.echo(f"brainbox: {exc}", err=True)
            sys.exit(2)

        def human(d):
            verb = "would fold" if d["dry_run"] else "folded"
            tail = "; nothing changed" if d["dry_run"] else ""
            click.echo(f"{verb} {d['events']:,} events (ids up to {d['upto']}) older than "
                       f"{d['keep']} into the checkpoint{tail}")

        emit(data, as_json, human)
