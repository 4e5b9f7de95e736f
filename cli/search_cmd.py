"""``brainbox search QUERY``: search over the code index (``brainbox.codesearch``).

The project is the repository of ``--cwd`` (``brainbox.identity``, as ``recall``
finds it); its index is the one ``brainbox index`` built in the same database (of the
repository's folder, else, in a linked worktree, of that worktree alone). ``--json``
prints a list of snippets (``[]`` when nothing matches, exit 0). Without an index for the
project: one line on stderr naming ``brainbox index``, exit 1. The keyword and vector
rankings are fused when the index has vectors and the model is available; otherwise the
search is keyword-only, one line on stderr says why, and each JSON snippet carries
``keyword_only`` (true, else false). When files of the project were edited since the
index read them (``brainbox.reindex.stale``: no daemon re-indexed them yet), one line on
stderr says how many, names the first ``STALE_NAMED`` and how to catch up; the results are
unchanged.
"""

from __future__ import annotations

import os

import click

from brainbox.cli.output import emit

STALE_NAMED = 3  # stale files named in the stderr line


def register(cli) -> None:
    @cli.command("search")
    @click.argument("query")
    @click.option("--cwd", type=click.Path(file_okay=False),
                  help="Working folder; the project is its git root (default: .).")
    @click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True,
                  help="At most this many snippets.")
    @click.option("--json", "as_json", is_flag=True, help="Print the snippets as JSON.")
    @click.pass_context
    def search(ctx, query, cwd, limit, as_json):
        """Code snippets (functions, classes, windows of lines) of the project that match
        QUERY: BM25 over the code index fused with embedding kNN when it has vectors.

        \b
        Example:
          brainbox index ~/src/app && brainbox search "login redirect" --cwd ~/src/app
        """
        from brainbox import codesearch, reindex, store
        from brainbox.identity import identify

        root, worktree = identify(os.path.abspath(cwd or os.getcwd()))
        try:
            conn = store.connect(ctx.obj.get("db"), prefer_vec=True)
        except store.StoreError as exc:
            raise click.ClickException(str(exc)) from None
        try:
            if worktree != root and not codesearch.indexed(conn, root) and \
                    codesearch.indexed(conn, worktree):
                root = worktree  # the index `brainbox index` built of this worktree alone
            if not codesearch.indexed(conn, root):
                click.echo(f"brainbox search: {root} has no code index; run "
                           f"`brainbox index {root}` first", err=True)
                ctx.exit(1)
            found = codesearch.search(conn, root, query, limit)
            stale = reindex.stale(conn, root)
        finally:
            conn.close()
        if stale:
            click.echo(f"brainbox search: {len(stale)} file(s) edited since indexed, not "
                       f"searched as they are now ({', '.join(stale[:STALE_NAMED])}"
                       f"{', ...' if len(stale) > STALE_NAMED else ''}): the daemon "
                       f"re-indexes them (`brainbox serve`), or run `brainbox index {root}`",
                       err=True)
        if found.keyword_only:
            click.echo(f"brainbox search: keyword only: {found.note}", err=True)
        data = [{**s.as_dict(), "keyword_only": found.keyword_only} for s in found]

        def human(rows):
            if not rows:
                click.echo("no match")
            for r in rows:
                what = f"{r['kind']} {r['symbol']}" if r["symbol"] else r["kind"]
                click.echo(f"{r['score']:8.3f}  {r['path']}:{r['start_line']}-"
                           f"{r['end_line']}  {what}")

        emit(data, as_json, human)
