"""`brainbox cache info` and `brainbox cache clear [--dry-run]`: the replay's input cache
(`brainbox.eval.cache`: the loaded tasks of each trajectory file, under
`$BRAINBOX_CACHE_DIR` or `$XDG_CACHE_HOME/brainbox/replay`). Clearing removes only the
files the cache wrote; a later replay parses its sources again and refills it.
"""

from __future__ import annotations

import click

from brainbox.cli.output import emit


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return str(n)


def register(cli) -> None:
    @cli.group("cache")
    def cache():
        """The replay's input cache (`brainbox replay --no-cache` bypasses it)."""

    @cache.command("info")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    def info(as_json):
        """Where the cache is, its entries (one per trajectory file) and its size."""
        from brainbox.eval import cache as C

        emit(C.info(), as_json, lambda d: click.echo(
            f"{d['folder']}: {d['entries']:,} entries of {d['sources']:,} source "
            f"snapshots, {_size(d['bytes'])}"))

    @cache.command("clear")
    @click.option("--dry-run", is_flag=True, help="Only say what would be removed.")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    def clear(dry_run, as_json):
        """Remove the replay's input cache."""
        from brainbox.eval import cache as C

        d = C.clear(dry_run=dry_run)
        d["dry_run"] = dry_run
        verb = "would remove" if dry_run else "removed"
        emit(d, as_json, lambda d: click.echo(
            f"{verb} {d['entries']:,} entries and {d['sources']:,} source snapshots "
            f"({_size(d['bytes'])}) from {d['folder']}"))
