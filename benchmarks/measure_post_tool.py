"""Whole-process cost of the PostToolUse hook against `python -c pass` (issue 20: at most
1.5x with a warm daemon), and where its time goes.

    python benchmarks/measure_post_tool.py [--runs 25] [--main DIR] [--breakdown 15]

A fresh BRAINBOX_HOME (0700) and a git repository; a few events recorded; a daemon
started and waited for. Then `--runs` rounds, each running once, interleaved so that the
machine's load falls on all alike: `python -c pass`, the hook with no daemon (direct:
map, redact, commit here), and the hook with the warm daemon (the raw payload handed
over, acknowledged once committed). `--main DIR` adds the same hook from another tree (an
export of main: `git -C /work/main archive main | tar -x -C DIR`), imported through a
PYTHONPATH package folder built from it, with and without the daemon. Medians, ratios to
`python -c pass`, and the events stored (each hook run stores one event, never two).

`--breakdown N` times the direct path's phases in N fresh processes (medians): the
hook's own imports, the mapping's imports (hookmap, recorder, events, redact, the store,
sqlite3), mapping + normalising + redacting one payload, opening the database, and one
commit with `synchronous` NORMAL and FULL (WAL).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PHASES = r"""
import io, json, os, sys, time
t0 = time.perf_counter()
from brainbox.cli import hooks, handler, spool
t1 = time.perf_counter()
from brainbox.cli import hookmap
from brainbox import recorder, store
t2 = time.perf_counter()
payload = json.loads(sys.argv[1])
events, _ = spool.to_events("claude", payload, "PostToolUse", None)
t3 = time.perf_counter()
conn = store.connect()
t4 = time.perf_counter()
recorder.append(spool.stamp([dict(events[0])]), conn)
t5 = time.perf_counter()
took = {}
for mode in ("NORMAL", "FULL") * 3:
    conn.execute(f"PRAGMA synchronous = {mode}")
    a = time.perf_counter()
    recorder.append(spool.stamp([dict(events[0])]), conn)
    took.setdefault(mode, []).append(time.perf_counter() - a)
print(json.dumps({"hook imports": t1 - t0, "mapping imports": t2 - t1, "map+redact": t3 - t2,
                  "connect": t4 - t3, "first commit": t5 - t4,
                  "commit NORMAL": min(took["NORMAL"]), "commit FULL": min(took["FULL"])}))
"""


def _package_dir(tree: str) -> str:
    """A folder holding `brainbox/` as installed (package-dir of pyproject) from `tree`."""
    pkg = os.path.join(tempfile.mkdtemp(prefix="bb-pkg-"), "brainbox")
    shutil.copytree(os.path.join(tree, "brainbox"), pkg)
    for sub in ("cli", "storage", "kernels", "eval"):
        if os.path.isdir(os.path.join(tree, sub)):
            shutil.copytree(os.path.join(tree, sub), os.path.join(pkg, sub))
    return os.path.dirname(pkg)


def _count(home: str) -> int:
    import sqlite3

    from brainbox import paths

    conn = sqlite3.connect(paths.db_path())
    try:
        return conn.execute("SELECT count(*) FROM events").fetchone()[0]
    finally:
        conn.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=25)
    ap.add_argument("--main", default=None, help="another tree to time side by side")
    ap.add_argument("--breakdown", type=int, default=0)
    args = ap.parse_args(argv)
    from brainbox.cli import client

    base = tempfile.mkdtemp(prefix="bb-post-")
    os.chdir(base)  # `python -m` puts the cwd first on sys.path: a checkout's brainbox/ wins
    home = os.path.join(base, "home")
    os.mkdir(home, 0o700)
    repo = os.path.join(base, "repo")
    os.makedirs(os.path.join(repo, "src"))
    with open(os.path.join(repo, "src", "core.py"), "w") as fh:
        fh.write("x = 1\n")
    subprocess.run(["git", "init", "-q", repo], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(BRAINBOX_HOME=home, BRAINBOX_NO_BACKGROUND_WARMUP="1")
    cmd = [sys.executable, "-m", "brainbox.cli.entry"]
    payload = json.dumps({"session_id": "now", "cwd": repo, "hook_event_name": "PostToolUse",
                          "tool_name": "Read", "tool_use_id": "t1",
                          "tool_input": {"file_path": os.path.join(repo, "src/core.py")},
                          "tool_response": {"content": "x = 1\n"}})
    hook = cmd + ["hook", "claude", "PostToolUse"]
    variants = {"direct": (hook, env), "daemon": (hook, env)}
    if args.main:
        env_main = dict(env, PYTHONPATH=_package_dir(args.main))
        variants["main direct"] = (hook, env_main)
        variants["main daemon"] = (hook, env_main)
    subprocess.run(cmd + ["record", "--session", "past", "--cwd", repo, "--tool", "Read",
                          "--file", os.path.join(repo, "src/core.py")], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    os.environ["BRAINBOX_HOME"] = home
    times: dict[str, list[float]] = {"python -c pass": [], **{k: [] for k in variants}}
    stored: dict[str, int] = {k: 0 for k in variants}
    try:
        if args.breakdown:
            rows = [json.loads(subprocess.run([sys.executable, "-c", PHASES, payload], env=env,
                                              check=True, capture_output=True,
                                              text=True).stdout)
                    for _ in range(args.breakdown)]
            print("direct path, medians of", args.breakdown, "fresh processes (ms):")
            for k in rows[0]:
                print(f"  {k:16s} {statistics.median(r[k] for r in rows) * 1000:7.2f}")
        for name in variants:  # warm the .pyc files
            subprocess.run(variants[name][0], input=payload, env=variants[name][1],
                           capture_output=True, text=True, timeout=120, check=True)
        client.spawn(home, force=True)
        deadline = time.monotonic() + 180
        while not client.status(home)["running"] and time.monotonic() < deadline:
            time.sleep(0.2)
        for _ in range(3):  # the daemon opens the memory on its first request
            subprocess.run(hook, input=payload, env=env, capture_output=True, text=True,
                           timeout=120, check=True)
        for _ in range(args.runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
            times["python -c pass"].append(time.perf_counter() - t0)
            for name, (argv_, env_) in variants.items():
                with_daemon = name.endswith("daemon")
                if not with_daemon:
                    env_ = dict(env_, BRAINBOX_DAEMON="off")
                n0 = _count(home)
                t0 = time.perf_counter()
                subprocess.run(argv_, input=payload, env=env_, capture_output=True,
                               text=True, timeout=120, check=True)
                times[name].append(time.perf_counter() - t0)
                stored[name] += _count(home) - n0
    finally:
        client.stop(home, wait=10)
        shutil.rmtree(base, ignore_errors=True)
    b = statistics.median(times["python -c pass"]) * 1000
    print(f"runs={args.runs}, load {os.getloadavg()[0]:.1f}; python -c pass p50 {b:.1f} ms")
    for name in variants:
        p = statistics.median(times[name]) * 1000
        print(f"  PostToolUse {name:12s} p50 {p:6.1f} ms  {p / b:.2f}x  "
              f"(stored {stored[name]} events in {args.runs} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
