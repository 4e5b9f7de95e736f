"""A seeded synthetic workload: sessions of an agent over projects with recurring file
clusters, a tool grammar and errors. The demo, the benchmarks and `replay --synthetic`
use it at any scale.

Shape: each project has modules (clusters) of source files with a test file each. A
session works on one task: a prompt naming its module, a search, reads inside the module
(often the same files in the same order as last time), edits, a test run that fails
now and then with one of a few recurring errors, a fix and a passing rerun. A minority of
sessions wander into a second module. Standard library only (random.Random(seed)).

Two shapes: :func:`generate` spreads sessions uniformly over a few equal projects (the
engine benchmarks' one repository of 5,000 files); :func:`catalogue` is a catalogue of
thousands of repositories with heavy-tailed sizes (``replay --synthetic N --projects P``).
"""

from __future__ import annotations

import math
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


def session_events(r: random.Random, base: dict, modules: list[list[str]],
                   budget: int) -> list[dict]:
    """One session's records (at least ``budget`` of them; the caller keeps ``budget``),
    drawn from ``r``: a prompt naming a module, a search, then reads, edits and test runs
    inside it (``base``: the session, cwd and project fields of every record)."""
    # Zipf-like choice of module: a few modules get most of the work.
    mod = modules[min(int(r.paretovariate(1.2)) - 1, len(modules) - 1)]
    out = []
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
    return out


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
        base = {"session": session, "cwd": roots[p], "project": roots[p]}
        out = session_events(streams[p], base, layouts[p], budget)
        for ev in out[:budget]:
            t += 1.0
            ev["at"] = t
            produced += 1
            yield ev
        t += 3600.0 * rng.uniform(0.5, 30)


# The catalogue shape (`catalogue`): events per repository ~ lognormal(0, SIGMA), scaled to
# the total; at least MIN_EVENTS each; files per repository FILES_PER_SQRT * sqrt(events),
# clamped to [MIN_FILES, MAX_FILES]; sessions (trajectories) of lognormal length around
# SESSION_MEDIAN events, clamped to [SESSION_MIN, SESSION_MAX].
SIGMA = 1.5
MIN_EVENTS = 20
FILES_PER_SQRT, MIN_FILES, MAX_FILES = 4.0, 12, 5000
SESSION_MEDIAN, SESSION_SIGMA, SESSION_MIN, SESSION_MAX = 60.0, 0.6, 8, 600


def catalogue_sizes(events: int, projects: int, seed: int = 7) -> list[int]:
    """Events per repository of the catalogue: heavy-tailed, summing to ``events`` exactly,
    each at least MIN_EVENTS, a pure function of (events, projects, seed). Raises
    ValueError when ``events`` cannot give every repository MIN_EVENTS."""
    if projects < 1 or events < projects * MIN_EVENTS:
        raise ValueError(f"a catalogue of {projects} repositories needs at least "
                         f"{max(projects, 1) * MIN_EVENTS} events (got {events})")
    rng = random.Random(f"{seed}/catalogue")
    w = [rng.lognormvariate(0.0, SIGMA) for _ in range(projects)]
    spare = events - projects * MIN_EVENTS
    total = sum(w)
    share = [spare * x / total for x in w]
    sizes = [MIN_EVENTS + int(x) for x in share]
    # the remainder, one event each to the largest fractional parts (ties: lower index)
    left = events - sum(sizes)
    order = sorted(range(projects), key=lambda i: (int(share[i]) - share[i], i))
    for i in order[:left]:
        sizes[i] += 1
    return sizes


def catalogue_files(size: int) -> int:
    """Files of a repository with ``size`` events: grows as the square root of it."""
    return max(MIN_FILES, min(MAX_FILES, int(FILES_PER_SQRT * size ** 0.5)))


def catalogue(events: int, projects: int, seed: int = 7, start: float = 1_760_000_000.0,
              only: int | None = None):
    """Yield the raw records of a catalogue-shaped workload (the SWE-rebench shape: many
    repositories, a few large and most small), repository after repository.

    Shape: ``projects`` repositories, events per repository from :func:`catalogue_sizes`
    (lognormal, sigma SIGMA: with 2,000 repositories the largest 1% hold about a sixth
    of the events and the median one a third of the mean), files per repository
    :func:`catalogue_files` (4 sqrt(events): 12 at 9 events, 400 at 10,000, the cap of
    5,000 at about 1.6M); each repository's sessions (trajectories) of lognormal length,
    median SESSION_MEDIAN events, drawn with :func:`session_events` over its own
    :func:`project_layout`. Repository p draws only from ``Random(f"{seed}/repo{p}")``,
    so ``only=p`` yields exactly repository p's records of the whole stream at the cost
    of its own events (one series per worker task). Session ids ``s{p:05d}{k:06d}``: the
    number orders a repository's sessions and is unique across the catalogue."""
    sizes = catalogue_sizes(events, projects, seed)
    for p in (range(projects) if only is None else (only,)):
        rng = random.Random(f"{seed}/repo{p}")
        modules = project_layout(rng, catalogue_files(sizes[p]))
        root = f"/work/project{p}"
        t = start + 86_400.0 * p
        left, k = sizes[p], 0
        while left > 0:
            n = int(rng.lognormvariate(math.log(SESSION_MEDIAN), SESSION_SIGMA))
            budget = min(left, max(SESSION_MIN, min(SESSION_MAX, n)))
            base = {"session": f"s{p:05d}{k:06d}", "cwd": root, "project": root}
            k += 1
            for ev in session_events(rng, base, modules, budget)[:budget]:
                t += 1.0
                ev["at"] = t
                yield ev
            left -= budget
            t += 3600.0 * rng.uniform(0.5, 30)



def normalized(events: int = 2000, **kw) -> list[dict]:
    """The same workload as stored events (normalisation applied)."""
    from brainbox.events import normalize

    return [normalize(e) for e in generate(events, **kw)]
