"""`brainbox record`: append events to the log. Standard library only (argparse).

Usage:
  brainbox record --session S --cwd DIR --tool NAME [--file PATH]... [--error TEXT]
                  [--exit-code N] [--at ISO8601] [--command CMD] [--args TEXT] [--json]
  brainbox record --prompt TEXT --session S --cwd DIR [--json]
  brainbox record --jsonl FILE|- [--json]

Exit codes: 0 stored; 1 a domain error (bad event, unusable database) - with `--jsonl`,
the good lines are stored and every bad line is reported on stderr by number, then the
command exits 1; 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import sys


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="brainbox record", description=__doc__.split("\n\n")[0])
    p.add_argument("--session")
    p.add_argument("--cwd")
    p.add_argument("--project")
    p.add_argument("--tool")
    p.add_argument("--file", dest="files", action="append", default=[])
    p.add_argument("--error")
    p.add_argument("--exit-code", type=int)
    p.add_argument("--at")
    p.add_argument("--command")
    p.add_argument("--args")
    p.add_argument("--action")
    p.add_argument("--prompt")
    p.add_argument("--jsonl", metavar="FILE")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)  # exits 2 on usage errors
    from brainbox import recorder
    from brainbox.events import EventError, normalize
    from brainbox.storage.db import StoreError

    rejected: list[tuple[int, str]] = []
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
            "session": args.session, "cwd": args.cwd, "project": args.project,
            "tool": args.tool, "files": args.files, "error": args.error,
            "exit_code": args.exit_code, "at": args.at, "prompt": args.prompt,
            "command": args.command, "args": args.args, "action": args.action,
        }
        try:
            events = [normalize(raw)]
        except EventError as exc:
            print(f"brainbox: {exc}", file=sys.stderr)
            return 1
    try:
        last_id = recorder.append(events)
    except StoreError as exc:
        print(f"brainbox: {exc}", file=sys.stderr)
        return 1
    for line, msg in rejected:
        print(f"brainbox: line {line}: {msg}", file=sys.stderr)
    if args.json:
        print(json.dumps({
            "recorded": len(events), "last_id": last_id,
            "rejected": [{"line": n, "error": m} for n, m in rejected],
        }))
    else:
        print(f"recorded {len(events)} event{'s' if len(events) != 1 else ''}"
              + (f", rejected {len(rejected)}" if rejected else ""))
    return 1 if rejected else 0
