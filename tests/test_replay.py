"""The replay protocol (DESIGN §5): no foresight, a frozen universe, the simulated clock,
and the bookkeeping of coverage. Tasks are built by hand or taken from the synthetic
workload, so these tests need no data."""

import itertools

import pytest

import brainbox.eval.replay as R
from brainbox.eval.loaders import Task
from brainbox.eval.replay import METHODS, T0, replay_series
from brainbox.eval.sources import select, synthetic_spec, synthetic_tasks
from brainbox.events import normalize


def ev(tool, *files, args=None, session="s"):
    return {"session": session, "cwd": "/r", "project": "/r", "tool": tool, "kind": "tool",
            "files": [f"/r/{f}" for f in files], "args": args, "at": None}


def task(n, events, read=(), edit=(), desc="fix the login view"):
    for e in events:
        e["session"] = f"t{n}"
    return Task(id=f"o__r-{n}", repo="o/r", order=n, description=desc, events=events,
                gold_read=set(read), gold_edit=set(edit), source="test", path="", project="/r")


def small_series():
    return [
        task(1, [ev("Grep", "src/login.py", args="login"), ev("Read", "src/login.py"),
                 ev("Edit", "src/view.py"), ev("Bash:pytest", "tests/test_login.py")],
             read={"src/login.py", "tests/test_login.py"}, edit={"src/view.py"}),
        task(2, [ev("Read", "src/login.py"), ev("Read", "src/new.py"), ev("Edit", "src/view.py"),
                 ev("TodoWrite")],
             read={"src/login.py", "src/new.py"}, edit={"src/view.py"}),
        task(3, [ev("Read", "src/other.py"), ev("Edit", "src/third.py")],
             read={"src/other.py"}, edit={"src/third.py"}),
    ]


def probes(result, i):
    return result["tasks"][i]["probes"]


def test_the_first_task_of_a_series_has_nothing_eligible():
    r = replay_series(small_series())
    for p, rec in probes(r, 0).items():
        assert rec["eligible"] == 0 and rec["scored"] == 0, p
    assert probes(r, 0)["P3"]["probes"] == 4
    assert probes(r, 0)["P2"]["probes"] == 4


def test_a_task_whose_files_appear_nowhere_earlier_has_no_eligible_file_gold():
    r = replay_series(small_series())
    p = probes(r, 2)
    assert p["P1-edit"] == {**p["P1-edit"], "gold": 1, "eligible": 0, "probes": 1, "scored": 0}
    assert p["P1-read"]["eligible"] == 0 and p["P1-read"]["scored"] == 0
    assert p["P2"]["probes"] == 2 and p["P2"]["eligible"] == 0 and p["P2"]["scored"] == 0
    assert all(x == 0.0 for x in p["P2"]["rr"])
    # Its tools were seen before, so P3 is scored.
    assert p["P3"]["eligible"] == 2 and p["P3"]["scored"] == 2


def test_coverage_counts_of_a_hand_made_series():
    p = probes(replay_series(small_series()), 1)
    # P1: gold summed over the task, eligible = seen in task 1.
    assert (p["P1-edit"]["gold"], p["P1-edit"]["eligible"], p["P1-edit"]["scored"]) == (1, 1, 1)
    assert (p["P1-read"]["gold"], p["P1-read"]["eligible"], p["P1-read"]["scored"]) == (2, 1, 1)
    # P2: 3 events name files; src/new.py is new, so 2 are eligible.
    assert (p["P2"]["probes"], p["P2"]["eligible"], p["P2"]["scored"]) == (3, 2, 2)
    # P3: TodoWrite is new to the universe.
    assert (p["P3"]["probes"], p["P3"]["eligible"], p["P3"]["scored"]) == (4, 3, 3)


def first_seen(tasks):
    """Resource -> index of the first task whose events name it (from the inputs)."""
    seen = {}
    for i, t in enumerate(tasks):
        for raw in t.events:
            e = normalize(raw)
            seen.setdefault(("tool", e["tool"]), i)
            for f in e["files"]:
                seen.setdefault(("file", (e["project"], f)), i)
    return seen


@pytest.mark.parametrize("make", [small_series,
                                  lambda: list(synthetic_tasks(synthetic_spec(900, seed=3)))[:6]])
def test_the_universe_of_task_t_holds_exactly_what_earlier_tasks_touched(make):
    tasks = make()
    universes = {}

    def trace(kind, **kw):
        if kind == "universe":
            universes[kw["task"]] = kw

    replay_series(tasks, trace=trace)
    seen = first_seen(tasks)
    assert len(universes) == len(tasks)
    for t, u in universes.items():
        assert u["files"] == {k for (kind, k), i in seen.items() if kind == "file" and i < t}
        assert u["tools"] == {k for (kind, k), i in seen.items() if kind == "tool" and i < t}
        assert not any(seen[("file", f)] >= t for f in u["files"])


def collect(tasks, **kw):
    out = {}

    def trace(kind, **info):
        if kind == "rank":
            out[(info["task"], info["step"], info["probe"])] = (info["rankings"],
                                                               sorted(info["gold"]))
    result = replay_series(tasks, trace=trace, **kw)
    return out, result


@pytest.mark.parametrize("k", [0, 5, 40])
def test_changing_events_after_step_k_changes_no_prediction_at_or_before_k(k):
    base = list(synthetic_tasks(synthetic_spec(700, seed=5)))[:4]
    last = base[-1]
    changed = [t for t in base[:-1]] + [Task(
        id=last.id, repo=last.repo, order=last.order, description=last.description,
        events=[dict(e) for e in last.events[: k + 1]]
        + [{**e, "tool": "Bash:ls", "files": list(reversed(e.get("files") or []))[:1]}
           for e in reversed(last.events[k + 1:])],
        gold_read=last.gold_read, gold_edit=last.gold_edit, source=last.source, path="",
        project=last.project)]
    a, _ = collect([Task(**{**t.__dict__, "events": [dict(e) for e in t.events]}) for t in base])
    b, _ = collect(changed)
    t_last = len(base) - 1
    keep = [key for key in a if key[0] < t_last or key[1] <= k]
    assert keep and any(key[0] == t_last for key in keep)
    for key in keep:
        assert b[key] == a[key], key
    assert any(b.get(key) != a[key] for key in a if key not in keep)


def test_later_tasks_do_not_change_earlier_task_records():
    tasks = list(synthetic_tasks(synthetic_spec(900, seed=9)))
    full = replay_series(tasks)["tasks"]
    head = replay_series(tasks[:3])["tasks"]
    assert full[:3] == head


def test_the_clock_advances_one_second_per_event_and_predictions_see_now(monkeypatch):
    folded, calls = [], []

    class Spy(R.State):
        def fold(self, events):
            folded.extend((e["kind"], e["at"]) for e in events)
            return super().fold(events)

    name = "rank" if R.rank_ids is not None else "recall"
    real = getattr(R, name)

    def spy(index, query, **kw):
        calls.append(kw)
        return real(index, query, **kw)

    monkeypatch.setattr(R, "State", Spy)
    monkeypatch.setattr(R, name, spy)
    replay_series(small_series(), ablate=["lexical"])
    times = [at for _, at in folded]
    assert times[0] == T0
    steps = [b - a for a, b in itertools.pairwise(times)]
    assert set(steps) == {1.0, 2.0}  # 1 s per event, +1 s between tasks
    assert [k for k, _ in folded].count("prompt") == 3
    p1 = [c for c in calls if c["session"] is None]
    assert p1 and all(c["limit"] == 10 for c in p1)
    assert all(c["now"] in times for c in calls)
    assert all(c["params"].ablate == frozenset({"lexical"}) for c in calls)
    p2 = [c for c in calls if c["session"] is not None]
    assert p2 and all(c["session"] == "t2" for c in p2)
    # task 2 reaches src/new.py (new) before its last P2, so recall is asked for 10 + 1.
    assert [c["limit"] for c in p2] == [10, 11]


def test_rank_ids_and_recall_give_the_same_rankings(monkeypatch):
    tasks = list(synthetic_tasks(synthetic_spec(700, seed=8)))[:4]
    fast, _ = collect([Task(**{**t.__dict__, "events": [dict(e) for e in t.events]})
                       for t in tasks])
    monkeypatch.setattr(R, "rank_ids", None)
    slow, _ = collect(tasks)
    assert fast == slow and len(fast) > 50


def test_every_ranking_holds_only_universe_members_and_respects_k():
    def trace(kind, **info):
        if kind == "universe":
            state["n"] = (len(info["files"]), len(info["tools"]))
        elif kind == "rank":
            nf, nt = state["n"]
            limit, k = (nt, 3) if info["probe"] == "P3" else (nf, 10)
            for ranking in info["rankings"]:
                assert len(ranking) <= k and len(set(ranking)) == len(ranking)
                assert all(0 <= i < limit for i in ranking)
            state["ranked"] += 1

    state = {"ranked": 0}
    replay_series(list(synthetic_tasks(synthetic_spec(800, seed=2))), trace=trace)
    assert state["ranked"] > 100


def test_same_inputs_give_identical_records():
    tasks = list(synthetic_tasks(synthetic_spec(600, seed=4)))
    a = replay_series(tasks, seed=1)
    b = replay_series(tasks, seed=1)
    assert a["tasks"] == b["tasks"]
    c = replay_series(tasks, seed=2)
    rnd = METHODS.index("random")
    assert [t["probes"]["P3"]["rr"][rnd] for t in a["tasks"]] != \
           [t["probes"]["P3"]["rr"][rnd] for t in c["tasks"]]
    assert [t["probes"]["P3"]["rr"][0] for t in a["tasks"]] == \
           [t["probes"]["P3"]["rr"][0] for t in c["tasks"]]


def test_synthetic_tasks_are_sessions_in_order_with_the_prompt_as_description():
    spec = synthetic_spec(1200, projects=2, seed=1)
    all_tasks = list(synthetic_tasks(spec))
    by_project = [list(synthetic_tasks(spec, p)) for p in range(2)]
    assert len(all_tasks) == sum(len(x) for x in by_project)
    for p, ts in enumerate(by_project):
        assert all(t.repo == f"/work/project{p}" for t in ts)
        assert [t.order for t in ts] == sorted(t.order for t in ts)
        assert all(t.description.startswith("fix the") for t in ts)
        assert all(e.get("kind") != "prompt" for t in ts for e in t.events)
        assert all(t.gold_edit or t.gold_read for t in ts)


@pytest.mark.parametrize("projects,seed", [(1, 3), (3, 7), (5, 11)])
def test_one_project_of_the_workload_is_that_project_of_the_whole_stream(projects, seed):
    """``generate(only=p)`` (one synthetic series) yields exactly project p's records of the
    whole stream, times included: skipping the other sessions draws the same numbers."""
    from brainbox.workload import generate

    kw = {"events": 4000, "files": 70, "sessions": 50, "projects": projects, "seed": seed}
    whole = list(generate(**kw))
    assert len(whole) == 4000
    for p in range(projects):
        mine = [e for e in whole if e["project"] == f"/work/project{p}"]
        assert mine and list(generate(**kw, only=p)) == mine


def test_selection_ranks_repositories_alternates_splits_and_keeps_the_earliest_tasks():
    def t(repo, n):
        return Task(id=f"{repo}-{n}", repo=repo, order=n, description="", events=[],
                    gold_read=set(), gold_edit=set(), source="x", path="")

    tasks = ([t("a", n) for n in (5, 3, 9, 1)] + [t("b", n) for n in (2, 8, 4)]
             + [t("c", n) for n in (7, 6)] + [t("d", 1)] + [t("a", 3)])  # a duplicate id
    assert [(r, [x.order for x in ts]) for r, ts in select(tasks)] == [
        ("a", [1, 3, 5, 9]), ("b", [2, 4, 8]), ("c", [6, 7]), ("d", [1])]
    assert [r for r, _ in select(tasks, split="dev")] == ["a", "c"]
    assert [r for r, _ in select(tasks, split="test")] == ["b", "d"]
    assert [r for r, _ in select(tasks, repos=3, split="test")] == ["b"]
    assert [[x.order for x in ts] for _, ts in select(tasks, repos=1, max_tasks_per_repo=2)] \
        == [[1, 3]]
