"""Issue 16, Deliver 5: the replay's history-only snippet channel. The loaders record the
text tool results showed (``shown``), the normaliser makes its paths relative and redacts
it, the replay indexes what earlier tasks showed (``brainbox.eval.seen``), and both engines
rank recall's snippet channel over it, with no foresight."""

import json
from collections import defaultdict

import pytest
from click.testing import CliRunner

from brainbox.cli.app import cli
from brainbox.eval import views as V
from brainbox.eval.compiled import replay_series_fast
from brainbox.eval.loaders.base import Task
from brainbox.eval.loaders.shown import numbered, shell_views, window_view
from brainbox.eval.replay import normalized, replay_series
from brainbox.eval.seen import SeenIndex
from brainbox.events import EventError, normalize
from brainbox.state import State
from tests.records import real_tasks

SOURCES = ["claude-code-swebench-lite", "mini-swe-agent-gemini3-verified",
           "openhands-codeact-verified50", "sweagent-java-multiswebench"]


# --- what a shell step's output shows ------------------------------------------------

@pytest.mark.parametrize("command, output, want", [
    ("cat a.py", "x = 1\ny = 2\n", ("/p/a.py", 1, "x = 1\ny = 2", True)),
    ("cd sub && sed -n '10,12p' b.py", "j\nk\nl\n", ("/p/sub/b.py", 10, "j\nk\nl", False)),
    ("sed -n 7p b.py", "g\n", ("/p/b.py", 7, "g", False)),
    ("nl -ba c.py | sed -n '20,21p'", "    20\tdef f():\n    21\t    pass\n",
     ("/p/c.py", 20, "def f():\n    pass", False)),
    ("cat -n c.py", "     1\ta\n     2\tb\n", ("/p/c.py", 1, "a\nb", True)),
    ("nl c.py", "     1\ta\n       \n     2\tb\n", ("/p/c.py", 1, "a\n\nb", True)),
    ("head -n 2 d.py", "a\nb\n", ("/p/d.py", 1, "a\nb", False)),
    ("tail -n +5 d.py", "e\nf\n", ("/p/d.py", 5, "e\nf", False)),
    ("cat d.py | sed -n '3,4p'", "c\nd\n", ("/p/d.py", 3, "c\nd", False)),
])
def test_a_plain_view_of_one_file_shows_its_lines(command, output, want):
    assert shell_views(command, output, "/p") == [want]


@pytest.mark.parametrize("command", [
    "grep -n def a.py", "cat a.py b.py", "cat a.py > b.py", "tail -n 20 a.py",
    "cat a.py | grep x", "sed -i 's/a/b/' a.py", "cat $F", "python a.py", "head -c 10 a.py",
    "sed -n '1,5p;9p' a.py", "nl a.py | head -n 5",
])
def test_anything_else_shows_nothing(command):
    assert shell_views(command, "some output\n", "/p") == []


def test_numbered_listings_lose_their_numbers_and_stop_where_the_run_breaks():
    text = "header\n     4→a\n     5→b\n<system-reminder>\n     9→z"
    from brainbox.eval.loaders.shown import ARROW

    assert numbered(text, ARROW) == (4, "a\nb")
    assert numbered("no numbers") is None
    obs = "[File: /r/A.java (3 lines total)]\n1:x\n2:y\n3:z\n"
    assert window_view(obs) == ("/r/A.java", 1, "x\ny\nz", True)
    assert window_view("[File: /r/A.java (9 lines total)]\n(3 more lines above)\n4:d\n") == \
        ("/r/A.java", 4, "d", False)


# --- the normalised event ------------------------------------------------------------

def test_shown_paths_become_relative_and_the_text_is_redacted():
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    ev = normalize({"session": "s", "cwd": "/p", "project": "/p", "tool": "Read",
                    "files": ["/p/a.py"],
                    "shown": {"/p/a.py": [3, f"TOKEN = '{token}'\nx = 1", True],
                              "/elsewhere/b.py": [1, "y", False], "/p/c.py": "whole text",
                              "/p/d.py": [0, "bad start", False]}})
    assert set(ev["shown"]) == {"a.py", "c.py"}
    start, text, whole = ev["shown"]["a.py"]
    assert (start, whole) == (3, True) and token not in text and "x = 1" in text
    assert ev["shown"]["c.py"] == [1, "whole text", False]
    assert "shown" not in normalize({"session": "s", "cwd": "/p", "tool": "Read"})
    with pytest.raises(EventError):
        normalize({"session": "s", "cwd": "/p", "tool": "Read", "shown": ["a.py"]})


# --- the loaders, on real slices ----------------------------------------------------

@pytest.mark.parametrize("source", SOURCES)
def test_every_loader_records_what_its_results_showed(data_dir, source):
    tasks = sorted(real_tasks(data_dir, source), key=lambda t: (t.repo, t.order))[:20]
    views = 0
    for task in tasks:
        for raw, ev in zip(task.events, normalized(task)[0], strict=True):
            assert "shown" in raw  # every raw event carries every key
            for rel, (start, text, whole) in (ev.get("shown") or {}).items():
                views += 1
                assert start >= 1 and text and not rel.startswith("/")
                if whole:
                    assert start == 1
                # no line-number prefix is left (cat -n, nl, Read's arrow, SWE-agent's)
                first = text.split("\n", 1)[0]
                assert not numbered(first) and not first.startswith(f"{start}:")
                assert "→" not in first[:8]
    assert views >= 10, views


def test_claude_code_read_is_the_structured_content(data_dir):
    path = data_dir / "trajectories" / "claude-code-swebench-lite"
    if not path.exists():
        pytest.skip("claude-code-swebench-lite is absent")
    from brainbox.eval.loaders import claude_code as cc

    session = min((path / "sessions").glob("*.jsonl"))
    reads = [it for it in cc.iter_transcript(session) if it["type"] == "tool"
             and it["tool_name"] == "Read" and isinstance(it["tool_response"], dict)
             and "testbed" in str(it["tool_input"].get("file_path"))]
    task = cc.load_session(session)
    shown = [ev["shown"] for ev in task.events if ev["tool"] == "Read" and ev["shown"]]
    assert reads and len(shown) == len(reads)
    for it, sh in zip(reads, shown, strict=True):
        (start, text, _whole), = sh.values()
        assert text == it["tool_response"]["file"]["content"]
        assert start == it["tool_response"]["file"]["startLine"]


# --- the seen index and the replay -------------------------------------------------

def test_the_latest_view_of_a_line_wins_and_a_whole_view_replaces_the_file():
    seen = SeenIndex()
    ev = {"project": "/p", "shown": {"a.py": [1, "a\nb\nc\nd", True]}}
    seen.add([ev, {"project": "/p", "shown": {"a.py": [2, "B", False]}}])
    assert seen.lines[("/p", "a.py")] == ["a", "B", "c", "d"]
    seen.add([{"project": "/p", "shown": {"a.py": [6, "f", False]}}])
    assert seen.lines[("/p", "a.py")] == ["a", "B", "c", "d", "", "f"]
    seen.add([{"project": "/p", "shown": {"a.py": [1, "x", True]}}])
    assert seen.lines[("/p", "a.py")] == ["x"]


BODY = "def frobnicate_widget(w):\n    return w.knob * 2\n"


def _ev(tool, path, at, shown=None, fact=None):
    return {"session": "s", "cwd": "/p", "project": "/p", "tool": tool,
            "files": [f"/p/{path}"], "at": at, "kind": "tool",
            "action": fact or ("edit" if tool == "Edit" else "read"),
            "shown": {f"/p/{path}": [1, shown, True]} if shown else None}


def _tasks():
    """Three tasks: the first touches both files, the second is the first to show
    gadget.py's text (which defines frobnicate_widget), the third asks about it."""
    mk = lambda i, desc, evs: Task(id=f"o__r-{i}", repo="o/r", order=i, description=desc,
                                   events=[{**e, "session": f"s{i}"} for e in evs],
                                   gold_read=set(), gold_edit={"lib/gadget.py"},
                                   source="test", path="", project="/p")
    first = [_ev("Read", "lib/gadget.py", 1), _ev("Read", "lib/other.py", 2),
             _ev("Edit", "lib/other.py", 3), _ev("Read", "lib/other.py", 4),
             _ev("Read", "lib/other.py", 5)]
    second = [_ev("Read", "lib/gadget.py", 1, shown=BODY), _ev("Edit", "lib/gadget.py", 2)]
    third = [_ev("Read", "lib/other.py", 1), _ev("Edit", "lib/gadget.py", 2)]
    return [mk(1, "rename the settings loader", first), mk(2, "clean up lint warnings", second),
            mk(3, "the `frobnicate_widget` helper should triple the knob", third)]


def test_no_task_ranks_with_text_from_itself_or_a_later_task(monkeypatch):
    got = []
    real = SeenIndex.snippets

    def spy(self, root, query, state):
        out = real(self, root, query, state)
        got.append(out)
        return out

    monkeypatch.setattr(SeenIndex, "snippets", spy)
    full = replay_series(_tasks(), series="t", seen=True)
    # task 2 shows gadget.py: its own view is not in its index; task 3 ranks it first
    assert got[0] is None and got[1] is None
    assert list(got[2]) == ["lib/gadget.py"]
    ablated = replay_series(_tasks(), series="t", seen=True, ablate=("snippet",))
    assert full["tasks"][:2] == ablated["tasks"][:2]  # nothing to rank before task 3
    rr = lambda r, t: r["tasks"][t]["probes"]["P1-edit"]["rr"][0]
    assert rr(full, 2) == 1.0 and rr(ablated, 2) < 1.0  # the channel put gadget.py first


def test_compiled_and_reference_agree_with_the_channel():
    for ablate in ((), ("snippet",)):
        want = replay_series(_tasks(), series="t", seen=True, ablate=ablate)
        got = replay_series_fast(_tasks(), series="t", seen=True, ablate=ablate)
        assert got["tasks"] == want["tasks"]
        assert got["calibration"] == want["calibration"]
        assert got["openings"] == want["openings"]


def test_real_series_agree_with_the_channel_and_it_changes_them(data_dir):
    tasks = real_tasks(data_dir, "claude-code-swebench-lite")
    by_repo = defaultdict(list)
    for t in tasks:
        by_repo[t.repo].append(t)
    series = V.repo_view(sorted(by_repo["sympy/sympy"], key=lambda t: t.order)[:15])
    want = replay_series(series, series="cc:sympy", seen=True)
    got = replay_series_fast(series, series="cc:sympy", seen=True)
    assert got["tasks"] == want["tasks"] and got["openings"] == want["openings"]
    assert got["calibration"] == want["calibration"]
    ablated = replay_series_fast(series, series="cc:sympy", seen=True, ablate=("snippet",))
    assert ablated["tasks"] != want["tasks"]


def test_the_repo_view_drops_the_text_of_agent_files():
    ev = _ev("Read", "lib/gadget.py", 1, shown=BODY)
    ev["shown"]["/p/repro.py"] = [1, "print(1)", True]
    t = Task(id="o__r-1", repo="o/r", order=1, description="", events=[ev], gold_read=set(),
             gold_edit=set(), source="test", path="", project="/p", created={"repro.py"})
    (out,) = V.repo_view([t])
    assert set(out.events[0]["shown"]) == {"/p/lib/gadget.py"}


def test_the_seen_index_knows_only_files_memory_knows():
    seen = SeenIndex()
    seen.add([{"project": "/p", "shown": {"lib/gadget.py": [1, BODY, True]}}])
    st = State()
    assert seen.snippets("/p", "frobnicate_widget()", st) is None  # memory knows no file
    st.fold([normalize(_ev("Read", "lib/gadget.py", 1))])
    assert list(seen.snippets("/p", "frobnicate_widget()", st)) == ["lib/gadget.py"]
    assert seen.snippets("/q", "frobnicate_widget()", st) is None  # another project
    seen.close()


# --- the ablation ---------------------------------------------------------------------

def test_ablations_measure_the_snippet_channel(tmp_path):
    """A source whose results showed text gets the snippet ablation; the synthetic workload
    skips it (tests/test_replay_cli.py)."""
    folder = tmp_path / "trajs"
    for task in _tasks():
        d = folder / task.id
        d.mkdir(parents=True)
        msgs = [{"role": "system", "content": "x"},
                {"role": "user", "content": f"<pr_description>{task.description}"
                                            "</pr_description>"}]
        for ev in task.events:
            path = ev["files"][0].removeprefix("/p/")
            cmd = f"cat {path}" if ev["tool"] == "Read" else f"sed -i 's/a/b/' {path}"
            msgs.append({"role": "assistant", "content": f"```bash\n{cmd}\n```"})
            out = BODY if ev["shown"] else ""
            msgs.append({"role": "user", "content":
                         f"<returncode>0</returncode><output>\n{out}</output>"})
        (d / f"{task.id}.traj.json").write_text(json.dumps(
            {"instance_id": task.id, "messages": msgs, "info": {},
             "trajectory_format": "mini-swe-agent-1"}))
    args = ["replay", str(folder), "--format", "mini-swe-agent", "--ablations",
            "--bootstrap", "0", "--no-progress", "--files", "all", "--json"]
    r = CliRunner().invoke(cli, [*args, "--seen-snippets"], catch_exceptions=False)
    data = json.loads(r.stdout)
    assert data["settings"]["seen_snippets"] is True
    assert "snippet" in data["settings"]["ablations"]
    assert "snippet" not in data["settings"]["ablations_skipped"]
    assert "snippet" in data["ablations"]["all"]
    # off by default: the channel is not built, so there is nothing to ablate
    off = json.loads(CliRunner().invoke(cli, args, catch_exceptions=False).stdout)
    assert off["settings"]["seen_snippets"] is False
    assert "snippet" in off["settings"]["ablations_skipped"]
    assert off["cohorts"] != data["cohorts"]


def test_put_texts_indexes_text_with_no_file_on_disk(tmp_path):
    from brainbox import codeindex, codesearch
    from brainbox.store import connect

    conn = connect(tmp_path / "x.db")
    memo = {}
    root = str(tmp_path / "nowhere")
    assert codeindex.put_texts(conn, root, {"lib/gadget.py": BODY}, rows=memo) == 1
    hits = codesearch.files(conn, root, "frobnicate_widget()")
    assert [h.path for h in hits] == ["lib/gadget.py"]
    assert hits[0].snippet.symbol == "frobnicate_widget" and hits[0].snippet.start_line == 1
    (row,) = memo.values()
    codeindex.put_texts(conn, root, {"lib/gadget.py": BODY}, rows=memo)  # the memo's row
    assert list(memo.values()) == [row] and codeindex.totals(conn, root)["files"] == 1


def test_without_the_channel_the_replay_does_not_normalise_shown_text():
    task = _tasks()[1]
    assert any("shown" in raw for raw in task.events)
    with_text, _ = normalized(task)
    without, _ = normalized(task, shown=False)
    assert any("shown" in ev for ev in with_text)
    assert not any("shown" in ev for ev in without)
    assert [{k: v for k, v in ev.items() if k != "shown"} for ev in with_text] == without
    assert any("shown" in raw for raw in task.events)  # the task itself is left as it was
