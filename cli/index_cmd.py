"""``brainbox index [DIR]``: build the code index of a project (``brainbox.codeindex``).

The index lives in the brainbox database (the one ``--db`` or ``BRAINBOX_DB`` names, else
the home's), opened through ``brainbox.store`` like every command. Warnings (skipped files,
syntax errors, a missing grammar) go to stderr, one line each, the first ``MAX_WARNINGS``
of them and a count of the rest; the progress line is a ``\\r`` line on stderr.

With ``--embed``, the chunks without a vector are then embedded (``brainbox.codevectors``)
with the configured model (``brainbox.embed``); without a model, one line on stderr says
why and the keyword index stands. Embedding is opt-in: on the sympy snapshot (24,434
chunks, 2 cores) it took 1,007 s against 10.5 s for the keyword index, and the vectors did
not find more gold files than keywords on 20 sympy tasks (10 of 20 fused, 11 keyword-only).
Once a project has vectors, later runs embed what changed whether or not ``--embed`` is
given, so the vectors never go stale. ``--json`` adds ``vectors`` (chunks of the project
with a vector), ``embedded`` (made by this run) and ``embed_seconds``.

``edges`` is the project's code graph after the run (``brainbox.codegraph``): ``count``
and ``by_kind`` (``call``, ``import``, ``inherit``, every kind listed).
"""

from __future__ import annotations

import json
import os
import sys
import time

import click

MAX_WARNINGS = 20
PROGRESS_EVERY = 0.25  # seconds: the first line too, so a short run prints none


def register(cli) -> None:
    @cli.command("index")
    @click.argument("directory", required=False, default=".",
                    type=click.Path(exists=True, file_okay=False))
    @click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
    @click.option("--no-progress", is_flag=True, help="No progress line on stderr.")
    @click.option("--embed", is_flag=True,
                  help="Also embed the chunks for vector search (slow: minutes for a large "
                       "project; later runs embed only what changed).")
    @click.pass_context
    def index(ctx, directory, as_json, no_progress, embed):
        """Index a project's files into chunks (functions, classes, methods; windows of
        lines for other text), incrementally by content hash.

        \b
        Example:
          brainbox index ~/src/myproject --json
        """
        from brainbox import codeindex, store

        root = os.path.abspath(directory)
        try:
            conn = store.connect(ctx.obj.get("db"), prefer_vec=True)
        except store.StoreError as exc:
            raise click.ClickException(str(exc)) from None
        t0 = time.perf_counter()
        last = [t0]
        shown = [False]
        show = not no_progress

        def progress(done, report):
            now = time.perf_counter()
            if now - last[0] >= PROGRESS_EVERY:
                last[0] = now
                shown[0] = True
                click.echo(f"\rindex: {done:,} files, {report.indexed:,} indexed, "
                           f"{report.unchanged:,} unchanged, {now - t0:.1f} s ",
                           err=True, nl=False)

        try:
            from brainbox import codegraph, codevectors

            embed = embed or codevectors.has_vectors(conn, root)  # keep them current
            report = codeindex.build(conn, root, progress=progress if show else None)
            if shown[0]:
                click.echo("", err=True)
                shown[0] = False
            vectors = _embed(conn, root, show, embed, shown)
            totals = codeindex.totals(conn, root)
            edges = codegraph.counts(conn, root)
        except store.StoreError as exc:
            raise click.ClickException(str(exc)) from None
        finally:
            if shown[0]:
                click.echo("", err=True)
        seconds = time.perf_counter() - t0
        conn.close()
        for line in report.warnings[:MAX_WARNINGS]:
            click.echo(f"brainbox index: {line}", err=True)
        if len(report.warnings) > MAX_WARNINGS:
            click.echo(f"brainbox index: ... and {len(report.warnings) - MAX_WARNINGS} more "
                       f"warnings", err=True)
        out = {**totals, "seconds": round(seconds, 3), "root": root, "seen": report.seen,
               "indexed": report.indexed, "unchanged": report.unchanged,
               "removed": report.removed, "parse_errors": report.parse_errors,
               "skipped": dict(sorted(report.skipped.items())), "edges": edges, **vectors}
        if as_json:
            click.echo(json.dumps(out))
            return
        skipped = ", ".join(f"{k} {v}" for k, v in out["skipped"].items()) or "none"
        click.echo(f"{root}: {out['files']:,} files, {out['chunks']:,} chunks, "
                   f"{out['bytes']:,} bytes in {seconds:.1f} s")
        click.echo(f"seen {report.seen:,}, indexed {report.indexed:,}, unchanged "
                   f"{report.unchanged:,}, removed {report.removed:,}, syntax errors "
                   f"{report.parse_errors:,}; skipped: {skipped}")
        kinds = ", ".join(f"{k} {v:,}" for k, v in edges["by_kind"].items())
        click.echo(f"code graph: {edges['count']:,} edges ({kinds})")
        click.echo(f"vectors {out['vectors']:,} ({out['embedded']:,} embedded in "
                   f"{out['embed_seconds']:.1f} s)")
        sys.stdout.flush()


def _embed(conn, root: str, show: bool, asked: bool, shown: list) -> dict:
    """Embed the chunks without a vector when ``asked``; {vectors, embedded,
    embed_seconds}."""
    from brainbox import codevectors

    out = {"embedded": 0, "embed_seconds": 0.0}
    if asked:
        from brainbox import embed

        t0 = time.perf_counter()
        embedder, why = embed.try_load()
        if embedder is None:
            click.echo(f"brainbox index: no embeddings ({why}); the keyword index is built",
                       err=True)
        else:
            last = [time.perf_counter()]  # the model's loading is not the embedding's

            def progress(done, total):
                now = time.perf_counter()
                if show and (now - last[0] >= PROGRESS_EVERY or (done == total and shown[0])):
                    last[0] = now
                    shown[0] = True
                    click.echo(f"\rembed: {done:,} of {total:,} chunks, {now - t0:.1f} s ",
                               err=True, nl=False)

            made = codevectors.embed_index(conn, root, embedder, progress=progress)
            out = {"embedded": made["vectors"],
                   "embed_seconds": round(time.perf_counter() - t0, 3)}
    return {"vectors": codevectors.vector_count(conn, root), **out}
