"""The reliability trial's concurrency scenario: real PostToolUse hook processes, many at once.

Run: `python benchmarks/stress_hooks.py [--streams 8] [--per-stream 250] [--burners 0]
[--transcripts DIR] [--json]`

Payloads are the hook payloads Claude Code would have sent for the real transcripts in
`../shared/data/transcripts/claude-code/` (`../shared/tools/transcript_to_hooks.py --root`,
which moves each session's folder under a temporary project and creates the files the
tools named), PostToolUse only, cycled to `streams x per-stream` payloads, each with a
`tool_use_id` of its own so every stored event can be told apart. Each stream runs its
payloads one after the other as whole `brainbox hook claude PostToolUse` processes (the
installed script when there is one, else `python -m brainbox.cli.entry`), with the
payload on stdin; the streams run at once (threads, each waiting on its own process).
No daemon (`BRAINBOX_DAEMON=off`), a fresh `BRAINBOX_HOME`. `--burners N` runs N
`while 1: pass` processes beside it (the trial's loaded machine).

Printed: stored (distinct ids in the log when the last hook exits), expected, duplicates
(rows beyond one per id), spool left (files waiting then), stored after draining that
spool (what the next hook would add), hook exits that were not 0 or printed something,
the log's "timeout" and "event lost" entries, and the wall time. The trial, at c7303d9:
1,984/2,000 stored, 116 s, 784 timeouts (16 events lost, silently). Target: 2,000/2,000,
0 duplicates. Numbers are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
TRANSCRIPTS = SHARED / "data" / "transcripts" / "claude-code"
TO_HOOKS = SHARED / "tools" / "transcript_to_hooks.py"


def hook_command() -> list[str]:
    script = shutil.which("brainbox") or str(Path(sys.executable).parent / "brainbox")
    if os.access(script, os.X_OK):
        return [script, "hook", "claude", "PostToolUse"]
    return [sys.executable, "-m", "brainbox.cli.entry", "hook", "claude", "PostToolUse"]


def load_payloads(transcripts: Path, root: Path, n: int) -> list[bytes]:
    """`n` PostToolUse payloads from the transcripts, each with a distinct tool_use_id."""
    files = sorted(str(p) for p in transcripts.rglob("*.jsonl"))
    if not files:
        raise SystemExit(f"no transcripts under {transcripts}")
    out = subprocess.run([sys.executable, str(TO_HOOKS), "--root", str(root), *files],
                         capture_output=True, text=True, check=True).stdout
    base = [json.loads(line)["payload"] for line in out.splitlines()
            if line.strip() and json.loads(line)["event"] == "PostToolUse"]
    if not base:
        raise SystemExit("the transcripts hold no tool calls")
    return [json.dumps(dict(base[i % len(base)], tool_use_id=f"stress-{i}")).encode()
            for i in range(n)]


def count(db: Path) -> tuple[int, int]:
    """(distinct stress ids, rows with a stress id) in the log."""
    if not db.exists():
        return 0, 0
    conn = sqlite3.connect(db, timeout=30)
    try:
        rows = conn.execute("SELECT json_extract(meta, '$.tool_use_id') FROM events "
                            "WHERE json_extract(meta, '$.tool_use_id') LIKE 'stress-%'"
                            ).fetchall()
    finally:
        conn.close()
    return len({r[0] for r in rows}), len(rows)


def run(streams: int, per_stream: int, burners: int, transcripts: Path) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="bb-stress-"))
    home = tmp / "bbhome"
    env = dict(os.environ, HOME=str(tmp), BRAINBOX_HOME=str(home), BRAINBOX_DAEMON="off")
    env.pop("BRAINBOX_DB", None)
    payloads = load_payloads(transcripts, tmp / "proj", streams * per_stream)
    cmd = hook_command()
    subprocess.run(cmd, input=b"{}", env=env, capture_output=True, timeout=60,
                   check=False)  # create the DB
    bad = []

    def stream(w: int) -> None:
        for data in payloads[w::streams]:
            r = subprocess.run(cmd, input=data, env=env, capture_output=True, timeout=120,
                               check=False)
            if r.returncode != 0 or r.stdout or r.stderr:
                bad.append((r.returncode, r.stdout[:200], r.stderr[-500:]))

    burn = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(burners)]
    try:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(streams) as pool:
            list(pool.map(stream, range(streams)))
        wall = time.perf_counter() - t0
    finally:
        for p in burn:
            p.kill()
            p.wait()
    db = home / "brainbox.db"
    stored, rows = count(db)
    spool = home / "spool"
    left = len([p for p in spool.iterdir() if p.name.endswith(".jsonl")]) if spool.is_dir() else 0
    log = home / "hook-errors.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    # what the next hook would drain
    drain = ("import sys; from brainbox.cli import spool; from brainbox import store as db; "
             "c = db.connect(); print(spool.drain_spool(c))")
    subprocess.run([sys.executable, "-c", drain], env=env, capture_output=True, timeout=300,
                   check=False)
    after, rows_after = count(db)
    result = {"streams": streams, "per_stream": per_stream, "burners": burners,
              "expected": len(payloads), "stored": stored, "duplicates": rows - stored,
              "spool_left": left, "stored_after_drain": after,
              "duplicates_after_drain": rows_after - after, "bad_exits": len(bad),
              "timeouts_logged": text.count("timeout after"),
              "lost_logged": text.count("event lost"), "wall_s": round(wall, 1),
              "home": str(home)}
    if bad:
        result["first_bad"] = repr(bad[0])
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--per-stream", type=int, default=250)
    ap.add_argument("--burners", type=int, default=0, help="CPU burner processes beside it")
    ap.add_argument("--transcripts", type=Path, default=TRANSCRIPTS)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.streams < 1 or args.per_stream < 1 or args.burners < 0:
        ap.error("--streams and --per-stream must be >= 1, --burners >= 0")
    res = run(args.streams, args.per_stream, args.burners, args.transcripts)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(f"stored {res['stored']} / expected {res['expected']}, duplicates "
              f"{res['duplicates']}, spool left {res['spool_left']} file(s), stored after "
              f"draining it {res['stored_after_drain']} (duplicates "
              f"{res['duplicates_after_drain']}), wall {res['wall_s']} s; "
              f"{res['streams']} streams x {res['per_stream']}, {res['burners']} burners; "
              f"bad exits {res['bad_exits']}, log: {res['timeouts_logged']} timeouts, "
              f"{res['lost_logged']} 'event lost'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
