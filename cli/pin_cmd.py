"""`brainbox pin`, `unpin` and `pins` (`brainbox.pins`, `Memory.pin`): files and notes that
open every SessionStart block of their project, never decay, and live in the event log
(`rebuild` keeps them). A file is project-relative, as every file resource is; a note's
text is redacted before it is stored. Bad input is one line on stderr, exit 1.

`brainbox procedures` lists what else that block may quote: the project's procedures
mined from the log (`brainbox.procedures`), live and retired, with their counts.
"""

from __future__ import annotations

import click

from brainbox.cli.output import emit


def _what(p: dict) -> str:
    return p["value"] if p["kind"] == "file" else f"note: {p['value']}"


def _procedure_line(p: dict) -> str:
    state = "retired" if p["retired"] else "live"
    if p["kind"] == "error_fix":
        counts = f"seen {p['seen']}, helped {p['helpful']}, misled {p['harmful']}"
    else:
        counts = f"{p['sessions']} sessions"
    return f"{state:<8} {p['kind']:<9} {counts}: {p['text']}"


def _listing(memory, fetch, as_json: bool, empty: str, line) -> None:
    """A listing command's output: `fetch(memory)`'s rows as JSON, or one `line(row)`
    each (`empty` when there are none)."""
    with memory as mem:
        data = fetch(mem)

    def human(rows):
        if not rows:
            click.echo(empty)
        for row in rows:
            click.echo(line(row))

    emit(data, as_json, human)


def register(cli, domain_errors, open_memory) -> None:
    """Add the four commands to `cli`, with `app`'s error wrapper and memory opener
    (passed in: importing `app` from here would be a cycle)."""
    project_opt = click.option("--project", help="Project root (default: the repository of ., every worktree one project).")
    json_opt = click.option("--json", "as_json", is_flag=True, help="JSON output.")

    @cli.command()
    @click.argument("path", required=False)
    @click.option("--text", help="Pin a note instead of a file.")
    @project_opt
    @json_opt
    @click.pass_context
    @domain_errors
    def pin(ctx, path, text, project, as_json):
        """Pin PATH (a file of the project) or --text TEXT to the top of every SessionStart
        block of the project.

        \b
        Example:
          brainbox pin src/auth/login.py
          brainbox pin --text "run make lint before committing"
        """
        with open_memory(ctx) as mem:
            data = mem.pin(path, text=text, project=project)
        emit(data, as_json, lambda d: click.echo(
            f"{'pinned' if d['pinned'] else 'already pinned'} {_what(d)} (id {d['id']}) "
            f"in {d['project']}"))

    @cli.command()
    @click.argument("path", required=False)
    @click.option("--text", help="The note to unpin.")
    @click.option("--id", "pin_id", type=int, help="The pin's id (`brainbox pins`).")
    @project_opt
    @json_opt
    @click.pass_context
    @domain_errors
    def unpin(ctx, path, text, pin_id, project, as_json):
        """Remove a pin, named by PATH, --text TEXT or --id N.

        \b
        Example:
          brainbox unpin src/auth/login.py
          brainbox unpin --id 42
        """
        with open_memory(ctx) as mem:
            data = mem.unpin(path, text=text, pin_id=pin_id, project=project)
        emit(data, as_json, lambda d: click.echo(
            f"unpinned {_what(d)} (id {d['id']}) in {d['project']}"))

    @cli.command()
    @project_opt
    @json_opt
    @click.pass_context
    @domain_errors
    def pins(ctx, project, as_json):
        """The project's pins, in the order the SessionStart block lists them.

        \b
        Example:
          brainbox pins --json
        """
        _listing(open_memory(ctx), lambda mem: mem.pins(project), as_json, "no pins",
                 lambda p: f"{p['id']:>6}  {_what(p)}")

    @cli.command()
    @project_opt
    @json_opt
    @click.pass_context
    @domain_errors
    def procedures(ctx, project, as_json):
        """The project's procedures mined from past sessions (error fixes and workflows
        repeated in 3+ sessions), live and retired, with how often each helped or misled.

        \b
        Example:
          brainbox procedures --json
        """
        _listing(open_memory(ctx), lambda mem: mem.procedures(project), as_json,
                 "no procedures", _procedure_line)
