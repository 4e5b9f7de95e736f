"""A seeded synthetic workload: sessions of an agent over projects with recurring file
clusters, a tool grammar and errors. The demo, the benchmarks and `replay --synthetic`
use it at any scale.

Shape: each project has modules (clusters) of source files with a test file each. A
session works on one task: a prompt naming its module, a search, reads inside the module
(often the same files in the same order as last time), edits, a test run that fails
now and then with one of a few recurring errors, a fix and a passing rerun. A minority of
sessions wander into a second module. Standard library only (random.Random(seed)).
"""

from __future__ import annotations

import random

WORDS = (
    "auth login session token user account billing invoice payment order cart search index "
    "query cache store config router handler view model schema migrate report export "
    "import parser lexer render template email notify queue worker scheduler upload image "
    "storage client server api graph metrics logging audit admin profile settings"
).split()
ERRORS = (
    (
        "Traceback (most recent call last):\n  File \"x.py\", line 3, in f\n"
        "AttributeError: 'NoneType' object has no attribute 'id'"
    ),
    "E   AssertionError: assert 200 == 302\nFAILED tests/test_x.py::test_y - AssertionError",
    "ModuleNotFoundError: No module named 'yaml'",
    "KeyError: 'user_id'",
    "TypeError: f() missing 1 required positional argument: 'request'",
)


def project_layout(rng: random.Random, n_files: int) -> list[list[str]]:
    """Modules of files: [[src/auth/login.py, src/auth/session.py, ..., tests/test_auth.py]]."""
    modules = []
    words = WORDS[:]
    rng.shuffle(words)
    i = 0
    while sum(len(m) for m in modules) < n_files:
        mod = words[i % len(words)] + ("" if i < len(words) else str(i // len(words)))
        i += 1
        k = rng.randint(3, 7)
        names = rng.sample(WORDS, k)
        files = [f"src/{mod}/{n}.py" for n in names] + [f"tests/test_{mod}.py"]
        modules.append(files)
    return modules


def generate(events: int = 2000, files: int = 60, sessions: int | None = None,
             projects: int = 1, seed: int = 7, start: float = 1_760_000_000.0,
             only: int | None = None):
    """Yield raw record dicts (the `record --jsonl` schema), about `events` of them.

    With several projects, each session's project, length and the pause after it come from
    the main random stream and its content from its project's own stream, so ``only``
    (yield just project ``only``'s records, exactly those the whole stream holds) skips
    the other sessions without drawing them: one series of a many-project workload costs
    its own events. One project uses one stream throughout."""
    rng = random.Random(seed)
    layouts = [project_layout(rng, files) for _ in range(projects)]
    roots = [f"/work/project{p}" for p in range(projects)]
    streams = [rng] if projects == 1 else [random.Random(f"{seed}/{p}") for p in range(projects)]
    per_session = max(8, events // sessions) if sessions else 60
    t = start
    produced = 0
    s = 0
    while produced < events:
        p = rng.randrange(projects)
        session = f"s{s:06d}"
        s += 1
        budget = min(per_session, events - produced)
        if only is not None and p != only:
            for _ in range(budget):  # the same sums as yielding them
                t += 1.0
            produced += budget
            t += 3600.0 * rng.uniform(0.5, 30)
            continue
        r = streams[p]
        root, modules = roots[p], layouts[p]
        # Zipf-like choice of module: a few modules get most of the work.
        mod = modules[min(int(r.paretovariate(1.2)) - 1, len(modules) - 1)]
        out = []
        base = {"session": session, "cwd": root, "project": root}
        name = mod[0].split("/")[1]
        out.append({**base, "kind": "prompt",
                    "prompt": f"fix the {name} {r.choice(WORDS)} bug in {name}"})
        out.append({**base, "tool": "Grep", "args": name, "files": mod[:2], "action": "search"})
        work = mod[:-1]
        while len(out) < budget:
            step = r.random()
            if step < 0.45:
                f = work[min(int(r.expovariate(0.8)), len(work) - 1)]
                out.append({**base, "tool": "Read", "files": [f], "action": "read"})
            elif step < 0.7:
                f = work[min(int(r.expovariate(1.0)), len(work) - 1)]
                out.append({**base, "tool": "Edit", "files": [f], "action": "edit"})
            elif step < 0.9:
                failed = r.random() < 0.3
                ev = {**base, "tool": "Bash:pytest", "command": f"pytest {mod[-1]}",
                      "files": [mod[-1]], "action": "run", "exit_code": 1 if failed else 0}
                if failed:
                    ev["error"] = r.choice(ERRORS)
                out.append(ev)
            elif step < 0.95:
                other = r.choice(modules)
                out.append({**base, "tool": "Read", "files": [r.choice(other)],
                            "action": "read"})
            else:
                out.append({**base, "tool": "TodoWrite", "action": "plan"})
        for ev in out[:budget]:
            t += 1.0
            ev["at"] = t
            produced += 1
            yield ev
        t += 3600.0 * rng.uniform(0.5, 30)


def normalized(events: int = 2000, **kw) -> list[dict]:
    """The same workload as stored events (normalisation applied)."""
    from brainbox.events import normalize

    return [normalize(e) for e in generate(events, **kw)]
