"""Agent integration commands, registered on the click app by `register(cli)`:
`hook` (help only: `entry.py` runs hooks without click), `serve`, `install`, `uninstall`,
`doctor`, `mcp` and `import`.

Installed hook commands name brainbox by an absolute path when one can be found (the
`brainbox` script next to this Python, else on PATH), so the agent's environment need not
have brainbox on its PATH; `--command` overrides it. Without any script the command is
`<python> -m brainbox.cli.entry`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from brainbox.cli.output import emit


def default_command() -> str:
    import shlex  # here, not at module level: `shutil` pulls in bz2, lzma and zlib, and
    import shutil  # every command (`--help` too) imports this module to register its own

    here = Path(sys.executable).with_name("brainbox")
    if here.exists() and os.access(here, os.X_OK):
        return shlex.quote(str(here))
    found = shutil.which("brainbox")
    if found:
        return shlex.quote(os.path.abspath(found))
    return f"{shlex.quote(sys.executable)} -m brainbox.cli.entry"


def _agents(claude: bool, codex: bool, both_default: bool) -> list[str]:
    picked = [a for a, on in (("claude", claude), ("codex", codex)) if on]
    if not picked and both_default:
        picked = ["claude", "codex"]
    return picked


def _target(agent: str, user: bool, project: str | None) -> Path:
    from brainbox.cli import install as inst

    if agent == "claude":
        return inst.claude_settings_path(user=project is None, project=project)
    return inst.codex_config_path(user=project is None, project=project)


def _each(agents, user: bool, project: str | None, claude_fn, codex_fn, **kw) -> list[dict]:
    """`claude_fn` or `codex_fn` on each agent's settings file; a ValueError (a file brainbox
    will not edit) ends the command with its one line, exit 1."""
    out = []
    for agent in agents:
        fn = claude_fn if agent == "claude" else codex_fn
        try:
            out.append(fn(_target(agent, user, project), **kw))
        except ValueError as exc:
            click.echo(f"brainbox: {exc}", err=True)
            sys.exit(1)
    return out


def _settings_options(fn):
    """`--claude`, `--codex`, `--user`, `--project DIR`: whose settings (install, uninstall)."""
    for option in reversed((
        click.option("--claude", is_flag=True, help="Claude Code (settings.json hooks)."),
        click.option("--codex", is_flag=True, help="Codex CLI (config.toml hooks)."),
        click.option("--user", is_flag=True, help="The user's settings (the default)."),
        click.option("--project", "project_dir", type=click.Path(file_okay=False),
                     help="A project's settings (DIR/.claude/settings.json)."),
    )):
        fn = option(fn)
    return fn


def register(cli) -> None:
    @cli.command(context_settings={"ignore_unknown_options": True})
    @click.argument("agent", type=click.Choice(["claude", "codex"]))
    @click.argument("event")
    def hook(agent, event):
        """Run one agent hook: read the agent's JSON payload on stdin.

        \b
        EVENT: PostToolUse, PostToolUseFailure, UserPromptSubmit, SessionStart, Stop,
        SessionEnd. Always exits 0; failures go to $BRAINBOX_HOME/hook-errors.log.
        Installed by `brainbox install`; not meant to be run by hand.
        """
        from brainbox.cli.hooks import main

        sys.exit(main([agent, event]))

    @cli.command()
    @click.option("--status", "show_status", is_flag=True, help="Is a daemon running?")
    @click.option("--stop", "do_stop", is_flag=True, help="Stop the running daemon.")
    @click.option("--detach", is_flag=True, help="Start it in the background and return.")
    @click.option("--idle", type=float, default=None,
                  help="Exit after this many idle seconds (default $BRAINBOX_DAEMON_IDLE "
                       "or 1800).")
    @click.option("--json", "as_json", is_flag=True, help="JSON output.")
    def serve(show_status, do_stop, detach, idle, as_json):
        """The resident daemon: keeps the memory warm for the prompt hooks.

        \b
        Example:
          brainbox serve --detach
          brainbox serve --status --json
        """
        from brainbox.cli import client

        picked = [f for f, on in (("--status", show_status), ("--stop", do_stop),
                                  ("--detach", detach)) if on]
        if len(picked) > 1:
            raise click.UsageError(f"{' and '.join(picked)} exclude each other")
        if show_status:
            data = client.status()
            emit(data, as_json, lambda d: click.echo(
                f"running, pid {d['pid']}, socket {d['socket']}" if d["running"]
                else ("starting" if d.get("starting") else "not running")))
            return
        if do_stop:
            data = client.stop()
            emit(data, as_json, lambda d: click.echo(
                "stopped" if d["stopped"] else ("not running" if not d["was_running"]
                                                else "could not stop it")))
            return
        if detach:
            started = client.spawn(force=True)
            data = {"started": started, **client.status()}
            emit(data, as_json, lambda d: click.echo(
                "starting in the background" if d["started"] else "already running"))
            return
        from brainbox.cli import daemon

        rc = daemon.serve(idle=idle)
        if rc == 3:  # another daemon serves this home: not an error
            click.echo("brainbox: a daemon already serves this BRAINBOX_HOME", err=True)
            sys.exit(0)
        sys.exit(rc)  # 1: refused to start (an unsafe socket folder, a damaged store)

    @cli.command()
    @_settings_options
    @click.option("--command", "command", help="How hooks call brainbox (default: its path).")
    @click.option("--json", "as_json", is_flag=True,
                  help="JSON output: a list, one object per agent.")
    def install(claude, codex, user, project_dir, command, as_json):
        """Register brainbox's hooks with Claude Code and/or Codex.

        \b
        Example:
          brainbox install --claude --user
          brainbox install --codex
        """
        from brainbox.cli import install as inst

        agents = _agents(claude, codex, False)
        if not agents:
            raise click.UsageError("choose --claude and/or --codex")
        if user and project_dir:
            raise click.UsageError("--user and --project exclude each other")
        command = command or default_command()
        out = _each(agents, user, project_dir, inst.install_claude, inst.install_codex,
                    command=command)
        __import__("brainbox.jitmode").jitmode.spawn_background()  # fill the numba cache meanwhile
        _report(out, as_json, "installed")

    @cli.command()
    @_settings_options
    @click.option("--json", "as_json", is_flag=True,
                  help="JSON output: a list, one object per agent.")
    def uninstall(claude, codex, user, project_dir, as_json):
        """Remove exactly brainbox's hooks (both agents unless one is named)."""
        from brainbox.cli import install as inst

        if user and project_dir:
            raise click.UsageError("--user and --project exclude each other")
        out = _each(_agents(claude, codex, True), user, project_dir, inst.uninstall_claude,
                    inst.uninstall_codex)
        _report(out, as_json, "removed")

    @cli.command()
    @click.option("--json", "as_json", is_flag=True, help="JSON output.")
    @click.option("--no-latency", is_flag=True, help="Skip the test record subprocess.")
    @click.option("--stale-days", type=click.FloatRange(min=0, min_open=True), default=None,
                  help="A registered hook that has not run for this many days is a problem "
                       "(default 7, or BRAINBOX_DOCTOR_STALE_DAYS / doctor_stale_days).")
    @click.option("--fix", "do_fix", is_flag=True,
                  help="Merge old per-worktree projects into their repository first.")
    @click.option("--dry-run", is_flag=True, help="With --fix: list the merges, write nothing.")
    def doctor(as_json, no_latency, stale_days, do_fix, dry_run):
        """Check hooks (and each one's last success and failure), database, daemon, recent
        hook errors and record latency; exit 1 on a problem.

        \b
        Examples:
          brainbox doctor --json --stale-days 3
          brainbox doctor --fix --dry-run   # which worktree memories would merge
        """
        from brainbox import BrainboxError, store
        from brainbox.cli.doctor import fix, human, run_doctor

        if dry_run and not do_fix:
            raise click.UsageError("--dry-run goes with --fix")
        fixed = None
        if do_fix:
            try:
                fixed = fix(dry_run)
            except (BrainboxError, store.StoreError) as exc:
                raise click.ClickException(str(exc)) from None
        data = run_doctor(latency=not no_latency, days=stale_days)
        if fixed is not None:
            data["fixed"] = fixed
        emit(data, as_json, lambda d: click.echo(human(d)))
        sys.exit(0 if data["ok"] else 1)

    @cli.command()
    def mcp():
        """Serve brainbox's verbs over MCP (stdio). Needs `pip install 'brainbox[mcp]'`."""
        from brainbox.cli.mcp_server import MissingSDK, run

        try:
            run()
        except MissingSDK as exc:
            click.echo(f"brainbox: {exc}", err=True)
            sys.exit(1)

    @cli.command("import")
    @click.argument("agent", type=click.Choice(["claude", "codex"]))
    @click.argument("path", required=False, type=click.Path())
    @click.option("--project", help="Only sessions whose working folder is inside P "
                                    "(and store them under P).")
    @click.option("--since", help="Only sessions newer than this: 30d, 12h, 2w or a date.")
    @click.option("--json", "as_json", is_flag=True, help="JSON output.")
    @click.pass_context
    def import_cmd(ctx, agent, path, project, since, as_json):
        """Import past sessions (incremental: a second run imports only what is new).

        \b
        Example:
          brainbox import claude                     # ~/.claude/projects
          brainbox import codex ~/.codex/sessions --since 30d
        """
        from brainbox.cli.transcripts import import_report, import_sessions, parse_since
        from brainbox.store import StoreError, connect

        try:
            cutoff = parse_since(since)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--since") from None
        try:
            conn = connect(ctx.obj.get("db"))
        except StoreError as exc:
            click.echo(f"brainbox: {exc}", err=True)
            sys.exit(1)
        try:
            data = import_sessions(agent, path, project=project, since=cutoff, conn=conn)
        finally:
            conn.close()
        line, problem, code = import_report(data)
        if problem:
            click.echo(problem, err=True)
        emit(data, as_json, lambda d: click.echo(line))
        if code:
            sys.exit(code)


def _report(results: list[dict], as_json: bool, verb: str) -> None:
    if as_json:  # always a list, one object per agent: one shape for one agent or two
        click.echo(json.dumps(results))
        return
    for r in results:
        what = r["added"] + r["updated"] if verb == "installed" else r["removed"]
        state = f"{verb} {', '.join(what)}" if r["changed"] else "nothing to change"
        click.echo(f"{r['agent']}: {r['path']}: {state}")
        for w in r.get("warnings") or ():
            click.echo(f"  warning: {w}", err=True)
        for n in r.get("notes") or ():
            click.echo(f"  note: {n}")
