"""Whole-process cost of the PostToolUse record hook with the hash chain against another
version of brainbox (e.g. main, before the chain), side by side and interleaved.

Usage: python benchmarks/measure_chain.py OTHER_PYTHONPATH [RUNS] [EVENTS]
OTHER_PYTHONPATH holds the other version as an importable `brainbox` package (main's
`brainbox/` with `storage`, `cli`, `kernels`, `eval` copied inside it). Each version gets
its own home, filled with EVENTS events (default 2,000) by its own hook, then RUNS
(default 25) hook processes of each run alternately (this version, the other, ...); the
processes start in /tmp so the working folder's sources do not shadow either version.
Prints the medians and the ratio.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def payload(repo, i):
    return json.dumps({"session_id": f"s{i % 7}", "cwd": repo, "hook_event_name": "PostToolUse",
                       "tool_name": "Read", "tool_input": {"file_path": f"{repo}/src/f{i % 300}.py"},
                       "tool_response": {}}).encode()


def main(other, runs=25, events=2000):
    hook = [sys.executable, "-m", "brainbox.cli.entry", "hook", "claude", "PostToolUse"]
    envs = {}
    for name, pp in (("chain", None), ("other", other)):
        home = tempfile.mkdtemp(prefix=f"bb-chain-{name}-")
        repo = os.path.join(home, "repo")
        os.makedirs(os.path.join(repo, ".git"))
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",
                                                              "PYTHONPATH")}
        env["BRAINBOX_HOME"] = home
        if pp:
            env["PYTHONPATH"] = pp
        envs[name] = (env, repo)
        subprocess.run(hook, input=payload(repo, 0), env=env, cwd="/tmp", check=True)
        code = ("import sys, time; from brainbox.storage import db; c = db.connect(sys.argv[1]);"
                "db.append_events(c, [{'at': time.time() - 86400 + i, 'session': f's{i % 50}',"
                "'project': sys.argv[2], 'kind': 'tool', 'tool': 'Read', 'action': 'read',"
                "'files': [f'src/f{i % 300}.py']} for i in range(int(sys.argv[3]))])")
        subprocess.run([sys.executable, "-c", code, os.path.join(home, "brainbox.db"), repo,
                        str(events)], env=env, cwd="/tmp", check=True)
    times = {"chain": [], "other": []}
    for i in range(runs):
        for name in ("chain", "other") if i % 2 == 0 else ("other", "chain"):
            env, repo = envs[name]
            t0 = time.perf_counter()
            subprocess.run(hook, input=payload(repo, i + 1), env=env, cwd="/tmp", check=True,
                           stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - t0)
    count = ("import sqlite3, sys; print(sqlite3.connect(sys.argv[1])"
             ".execute('SELECT count(*) FROM events').fetchone()[0])")
    for name, (env, _) in envs.items():  # both recorded every call
        n = subprocess.run([sys.executable, "-c", count,
                            os.path.join(env["BRAINBOX_HOME"], "brainbox.db")],
                           capture_output=True, text=True, check=True).stdout.strip()
        print(f"{name}: {n} events stored")
    a = statistics.median(times["chain"]) * 1000
    b = statistics.median(times["other"]) * 1000
    print(f"PostToolUse hook p50: with the chain {a:.1f} ms, other {b:.1f} ms, "
          f"ratio {a / b:.3f} (runs={runs} each, interleaved; {events} events stored)")


if __name__ == "__main__":
    main(sys.argv[1], *(int(x) for x in sys.argv[2:4]))
