"""Whole-process cost of `brainbox record` against `python -c pass`, measured in one run.

Usage: python benchmarks/measure_record.py [RUNS]   (default 25; prints medians)
Bytecode caching is switched on for the runs (a pip install compiles .pyc files;
PYTHONDONTWRITEBYTECODE=1 in the environment would make every run recompile).
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def median_ms(cmd, env, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main(runs=25):
    home = tempfile.mkdtemp(prefix="bb-rec-")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["BRAINBOX_HOME"] = home
    exe = shutil.which("brainbox") or sys.executable
    rec = [exe] if exe != sys.executable else [sys.executable, "-m", "brainbox.cli.entry"]
    rec += ["record", "--session", "s", "--cwd", home, "--tool", "Read", "--file", "src/a.py"]
    subprocess.run(rec, env=env, check=True, stdout=subprocess.DEVNULL)  # create db, pyc
    base = median_ms([sys.executable, "-c", "pass"], env, runs)
    r = median_ms(rec, env, runs)
    base2 = median_ms([sys.executable, "-c", "pass"], env, runs)
    b = statistics.median([base, base2])
    print(f"python -c pass p50 {b:.1f} ms; brainbox record p50 {r:.1f} ms; ratio {r / b:.2f}x "
          f"(runs={runs})")
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 25)
