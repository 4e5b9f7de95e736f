"""`brainbox record`: append events to the log. Standard library only (argparse).

Usage:
  brainbox record --session S --cwd DIR --tool NAME [--file PATH]... [--error TEXT]
                  [--exit-code N] [--at ISO8601] [--command CMD] [--args TEXT] [--json]
  brainbox record --prompt TEXT --session S --cwd DIR [--json]
  brainbox record --jsonl FILE|- [--json]

Relative `--cwd`, `--project` and `--file` are taken from the folder brainbox runs in (the
README's `--cwd . --file src/auth/login.py` used to store no file: the relative cwd put
every file outside the project). `--db` here or before `record` picks the database (it was
ignored before `record`). A bad `--at` is a usage error like any bad option.

Exit codes: 0 stored; 1 a domain error (bad event, unusable database) - with `--jsonl`,
the good lines are stored and every bad line is reported on stderr by number, then the
command exits 1; 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="brainbox record",
        description="Append events to the memory's log: one tool call, one prompt, or "
                    "--jsonl FILE|- (exit 0 stored, 1 a bad event or database, 2 usage).",
        epilog="A relative --cwd, --project or --file is taken from the folder brainbox "
               "runs in. Example: brainbox record --session s1 --cwd . --tool Read "
               "--file src/app.py")
    p.add_argument("--session", help="session id (required unless --jsonl)")
    p.add_argument("--cwd", help="the agent's working folder (default: this folder)")
    p.add_argument("--project", help="project root (default: the repository of --cwd; $BRAINBOX_PROJECT)")
    p.add_argument("--tool", help="tool name: Read, Edit, Bash:pytest, mcp__server__tool...")
    p.add_argument("--file", dest="files", action="append", default=[], metavar="PATH",
                   help="a file the tool touched (repeat for several)")
    p.add_argument("--error", help="error text the tool produced")
    p.add_argument("--exit-code", type=int, help="the tool's exit status")
    p.add_argument("--at", metavar="ISO8601", help="event time (default: now)")
    p.add_argument("--command", help="the shell command run (secrets are redacted)")
    p.add_argument("--args", help="tool arguments as text (e.g. a grep pattern)")
    p.add_argument("--action", choices=("read", "edit", "search", "run", "plan", "other"),
                   help="what the tool did (default: from the tool name)")
    p.add_argument("--prompt", help="a user prompt instead of a tool call")
    p.add_argument("--jsonl", metavar="FILE", help="one raw record per line; - for stdin")
    p.add_argument("--db", metavar="FILE",
                   help="database file (default $BRAINBOX_DB, else $BRAINBOX_HOME/brainbox.db)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def _absolute(path: str | None) -> str | None:
    """`path` from the folder brainbox runs in (the README's `--cwd .`)."""
    if not path:
        return path
    return os.path.abspath(os.path.expanduser(path))


def main(argv: list[str], db: str | None = None) -> int:
    """Run `brainbox record` with `argv`; `db` is the group's `--db` (ours wins)."""
    parser = _parser()
    args = parser.parse_args(argv)  # exits 2 on usage errors
    from brainbox import recorder, store
    from brainbox.events import EventError, normalize, parse_time, relative_path

    if args.at is not None:
        try:
            parse_time(args.at)
        except EventError:
            parser.error(f"argument --at: expected an ISO 8601 time such as "
                         f"2026-12-01T09:30:00Z, got {args.at!r}")

    rejected: list[tuple[int, str]] = []
    dropped: list[str] = []
    if args.jsonl:
        if args.jsonl == "-":
            events, rejected = recorder.parse_jsonl(sys.stdin)
        else:
            try:
                with open(args.jsonl, "rb") as fh:
                    events, rejected = recorder.parse_jsonl(fh)
            except OSError as exc:
                print(f"brainbox: cannot read {args.jsonl}: {exc.strerror}", file=sys.stderr)
                return 1
    else:
        if not args.session:
            print("brainbox record: --session is required (or --jsonl)", file=sys.stderr)
            return 2
        if not args.tool and args.prompt is None:
            print("brainbox record: give --tool or --prompt", file=sys.stderr)
            return 2
        raw = {
            "session": args.session, "cwd": _absolute(args.cwd) or os.getcwd(),
            "project": _absolute(args.project),
            "tool": args.tool, "files": [_absolute(f) for f in args.files], "error": args.error,
            "exit_code": args.exit_code, "at": args.at, "prompt": args.prompt,
            "command": args.command, "args": args.args, "action": args.action,
        }
        try:
            events = [normalize(raw)]
        except EventError as exc:
            print(f"brainbox: {exc}", file=sys.stderr)
            return 1
        root = events[0].get("worktree") or events[0]["project"]
        dropped = [f for f in raw["files"] if relative_path(f, raw["cwd"], root) is None]
        for f in dropped:  # recorded without it: say so (it was silent)
            print(f"brainbox: --file {f} is outside the project {root}: not recorded (a "
                  "relative --file is taken from the folder brainbox runs in)", file=sys.stderr)
    for e in events:
        e["source"] = "cli"  # provenance (issue 19)
    try:
        conn = store.connect(args.db or db) if (args.db or db) else None
        try:
            last_id = recorder.append(events, conn)
        finally:
            if conn is not None:
                conn.close()
    except store.StoreError as exc:
        print(f"brainbox: {exc}", file=sys.stderr)
        return 1
    for line, msg in rejected:
        print(f"brainbox: line {line}: {msg}", file=sys.stderr)
    if args.json:
        print(json.dumps({
            "recorded": len(events), "last_id": last_id,
            "rejected": [{"line": n, "error": m} for n, m in rejected],
            "dropped_files": dropped,
        }))
    else:
        print(f"recorded {len(events)} event{'s' if len(events) != 1 else ''}"
              + (f", rejected {len(rejected)}" if rejected else ""))
    return 1 if rejected else 0
