"""Compare two replay JSON results, timings and provenance aside (a refactor's check).

    python benchmarks/compare_replay.py before.json after.json

Prints up to 20 differing keys and their count; exits 1 when there is any. Issue 14 ("one
fact in one place") held the whole development set's replay JSON fixed this way, compiled,
``--engine python``, with ablations and on the synthetic workload.
"""

import json
import sys

IGNORED = ("timings", "source_commit", "source_dirty")


def load(path: str) -> dict:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    for key in IGNORED:
        data.pop(key, None)
    data.get("settings", {}).pop("engine", None)
    return data


def diff(a, b, path: str = ""):
    """(key path, left, right) for every leaf that differs."""
    if type(a) is not type(b):
        yield path, a, b
    elif isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                yield f"{path}.{k}", a.get(k), b.get(k)
            else:
                yield from diff(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        if len(a) != len(b):
            yield f"{path}.len", len(a), len(b)
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            yield from diff(x, y, f"{path}[{i}]")
    elif a != b:
        yield path, a, b


def main(argv: list[str]) -> int:
    found = list(diff(load(argv[0]), load(argv[1])))
    for row in found[:20]:
        print(row)
    print("differences:", len(found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
