"""Whole-process cost of the PreToolUse hook with a warm daemon, against `python -c pass`,
side by side in one run (issue 17: p50 <= 3x Python start-up).

A fresh BRAINBOX_HOME (0700) and a git repository; four past sessions edit src/core.py
and then src/helpers.py (the advice for an edit of core.py names helpers.py); a daemon is
started and waited for. Then RUNS rounds, each running `python -c pass` and the hook
process (an Edit of src/core.py, as Claude Code sends it) once, interleaved so that the
machine's load falls on both alike. Prints the medians, the ratio, and whether the
advice was printed.

    python benchmarks/measure_pretool.py [RUNS]   (default 25)
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main(runs: int = 25) -> int:
    from brainbox.cli import client

    base = tempfile.mkdtemp(prefix="bb-pre-")
    home = os.path.join(base, "home")
    os.mkdir(home, 0o700)
    repo = os.path.join(base, "repo")
    os.makedirs(os.path.join(repo, "src"))
    for f in ("core.py", "helpers.py", "other.py"):
        with open(os.path.join(repo, "src", f), "w") as fh:
            fh.write("x = 1\n")
    subprocess.run(["git", "init", "-q", repo], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(BRAINBOX_HOME=home, BRAINBOX_NO_BACKGROUND_WARMUP="1")
    cmd = [sys.executable, "-m", "brainbox.cli.entry"]
    for s in range(4):
        for f in ("src/core.py", "src/helpers.py"):
            path = os.path.join(repo, f)  # a relative --file is taken from the cwd
            subprocess.run(cmd + ["record", "--session", f"past{s}", "--cwd", repo, "--tool",
                                  "Edit", "--file", path], env=env, check=True,
                           stdout=subprocess.DEVNULL)
    payload = json.dumps({"session_id": "now", "cwd": repo, "hook_event_name": "PreToolUse",
                          "tool_name": "Edit", "tool_use_id": "t1",
                          "tool_input": {"file_path": os.path.join(repo, "src/core.py"),
                                         "old_string": "x", "new_string": "y"}})
    hook = cmd + ["hook", "claude", "PreToolUse"]
    os.environ["BRAINBOX_HOME"] = home
    client.spawn(home, force=True)
    deadline = time.monotonic() + 180
    while not client.status(home)["running"] and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        out = ""
        for _ in range(3):  # the daemon loads the memory on its first request
            out = subprocess.run(hook, input=payload, env=env, capture_output=True,
                                 text=True, timeout=120, check=True).stdout
        py, pre = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
            py.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            subprocess.run(hook, input=payload, env=env, capture_output=True, text=True,
                           timeout=120, check=True)
            pre.append(time.perf_counter() - t0)
    finally:
        client.stop(home, wait=10)
        shutil.rmtree(base, ignore_errors=True)
    b, p = statistics.median(py) * 1000, statistics.median(pre) * 1000
    load = os.getloadavg()[0]
    print(f"python -c pass p50 {b:.1f} ms; PreToolUse (warm daemon) p50 {p:.1f} ms; ratio "
          f"{p / b:.2f}x (runs={runs}, load {load:.1f}); advice printed: "
          f"{'src/helpers.py' in out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 25))
