"""What changed in the hosts (issue 17, item 6): Claude Code's `duration_ms`, sub-agents'
`agent_id`/`agent_type` and their own co-access windows, and `PostToolBatch`, driven by
real hook processes on payloads from a real transcript."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from brainbox.cli import hookmap, hooks, install, spool
from brainbox.cli.app import cli
from brainbox.memory import Memory
from brainbox.state import FILE
from tests.records import hook_process, stored_events

SPOTTER = Path(__file__).resolve().parents[2] / "shared" / "data" / "transcripts" / \
    "claude-code" / "spotter"
TO_HOOKS = Path(__file__).resolve().parents[2] / "shared" / "tools" / "transcript_to_hooks.py"
MAIN = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
AGENT = {"agent_id": "a881341", "agent_type": "general-purpose"}
FILE_TOOLS = ("Read", "Edit", "Write")


@pytest.fixture
def real_payloads(tmp_path):
    """PostToolUse payloads Claude Code would have sent for the spotter transcript, moved
    under tmp_path (every file they name exists there), that name one file each."""
    if not (SPOTTER / f"{MAIN}.jsonl").is_file() or not TO_HOOKS.is_file():
        pytest.skip("../shared/data/transcripts or ../shared/tools is absent")
    root = tmp_path / "spotter"
    (root / ".git").mkdir(parents=True)
    out = subprocess.run([sys.executable, str(TO_HOOKS), "--root", str(root),
                          str(SPOTTER / f"{MAIN}.jsonl")], capture_output=True, text=True,
                         check=True).stdout
    items = [json.loads(line) for line in out.splitlines()]
    return [i["payload"] for i in items if i["event"] == "PostToolUse"
            and i["payload"]["tool_name"] in FILE_TOOLS
            and str(i["payload"]["tool_input"].get("file_path", "")).startswith(str(root))]


def hook_env(**extra):
    return dict(os.environ, BRAINBOX_HOOK_BUDGET_TOOL="10", BRAINBOX_DAEMON="off", **extra)


def file_of(p) -> str:
    return p["tool_input"]["file_path"]


# ------------------------------------------------------------------- duration_ms, agent


def test_duration_and_agent_fields_are_kept_bounded(real_payloads):
    p = dict(real_payloads[0], duration_ms=1234, **AGENT)
    (rec,) = hookmap.payload_to_records("claude", p, "PostToolUse")
    assert rec["meta"]["duration_ms"] == 1234
    assert (rec["meta"]["agent_id"], rec["meta"]["agent_type"]) == tuple(AGENT.values())
    for bad in (-1, True, 1 << 41, "12", 1.5e30, float("nan")):
        (rec,) = hookmap.payload_to_records("claude", dict(p, duration_ms=bad), "PostToolUse")
        assert "duration_ms" not in rec["meta"]
    (rec,) = hookmap.payload_to_records("claude", dict(p, duration_ms=12.7), "PostToolUse")
    assert rec["meta"]["duration_ms"] == 12
    (rec,) = hookmap.payload_to_records("claude", real_payloads[0], "PostToolUse")
    assert "agent_id" not in rec["meta"] and "duration_ms" not in rec["meta"]


def test_stats_gives_each_tools_median_duration_from_real_hooks(real_payloads, brainbox_home):
    env = hook_env()
    reads = [p for p in real_payloads if p["tool_name"] == "Read"][:3]
    for p, ms in zip(reads, (10, 30, 500), strict=True):
        assert hook_process("PostToolUse", dict(p, duration_ms=ms), env) == ""
    assert [e["meta"]["duration_ms"] for e in stored_events("tool")] == [10, 30, 500]
    r = CliRunner().invoke(cli, ["stats", "--json"], catch_exceptions=False)
    assert json.loads(r.output)["durations"] == {"Read": {"calls": 3, "median_ms": 30}}
    r = CliRunner().invoke(cli, ["stats"], catch_exceptions=False)
    assert "median tool duration: Read 30 ms (3)" in r.output


# ------------------------------------------------------------------- sub-agent windows


def split_streams(payloads, n=8):
    """Two interleaved streams of real calls on disjoint files: the main agent's and a
    sub-agent's (the same payloads with `agent_id`/`agent_type` added)."""
    files = list(dict.fromkeys(file_of(p) for p in payloads))[:6]
    mine, theirs = set(files[0::2]), set(files[1::2])
    main = [p for p in payloads if file_of(p) in mine][:n]
    sub = [dict(p, **AGENT) for p in payloads if file_of(p) in theirs][:n]
    assert len(main) >= 4 and len(sub) >= 4
    mixed = [p for pair in zip(main, sub) for p in pair]
    return mixed, mine, theirs


def file_edges(mem):
    mem.sync()
    st = mem.state
    W = st.matrices()["W"].tocoo()
    return {(st.res_key[int(a)], st.res_key[int(b)]) for a, b in zip(W.row, W.col)
            if st.res_kind[int(a)] == FILE and st.res_kind[int(b)] == FILE}


def rel(root: Path, paths) -> set[str]:
    return {os.path.relpath(p, root) for p in paths}


def test_a_sub_agents_calls_learn_in_their_own_window(real_payloads, brainbox_home, tmp_path):
    mixed, mine, theirs = split_streams(real_payloads)
    root = tmp_path / "spotter"
    env = hook_env()
    half = len(mixed) // 2
    for p in mixed[:half]:
        assert hook_process("PostToolUse", p, env) == ""
    with Memory.open() as mem:
        mem.sync()  # the first half folded and saved: the rest folds incrementally
    for p in mixed[half:]:
        assert hook_process("PostToolUse", p, env) == ""
    evs = stored_events("tool")
    assert len(evs) == len(mixed)
    assert sum(1 for e in evs if (e["meta"] or {}).get("agent_id") == "a881341") == half
    assert {e["session"] for e in evs} == {mixed[0]["session_id"]}  # one session
    a, b = rel(root, mine), rel(root, theirs)
    with Memory.open() as mem:
        mem.sync()  # the saved first half, then the rest
        edges = file_edges(mem)
        assert any(x in a and y in a for x, y in edges)  # each agent learnt its own
        assert any(x in b and y in b for x, y in edges)
        assert not [(x, y) for x, y in edges if (x in a) != (y in a)]  # and nothing across
        # the sub-agent's window is the session's `<session>/<agent_id>` row, as
        # `brainbox import` names a sub-agent's transcript
        assert f"{mixed[0]['session_id']}/a881341" in mem.state.sess_index
        inc = mem.state.to_arrays()
        mem.rebuild()
        again = mem.state.to_arrays()
    assert inc.keys() == again.keys()
    diff = [k for k in inc if not np.array_equal(inc[k], again[k])]
    if "json" in diff:
        x, y = json.loads(bytes(inc["json"])), json.loads(bytes(again["json"]))
        diff += [(k, x[k], y[k]) for k in x if x[k] != y[k]]
    assert not diff


def test_without_agent_ids_the_same_interleaving_links_across(real_payloads, tmp_path):
    """The control: the streams of the test above, in one window, form edges across."""
    mixed, mine, _ = split_streams(real_payloads)
    plain = [{k: v for k, v in p.items() if k not in AGENT} for p in mixed]
    events = [e for p in plain for e in spool.to_events("claude", p, "PostToolUse", None)[0]]
    with Memory.open(tmp_path / "control.db") as mem:
        mem.record_normalized(events)
        a = rel(tmp_path / "spotter", mine)
        assert [(x, y) for x, y in file_edges(mem) if (x in a) != (y in a)]


# ------------------------------------------------------------------- PostToolBatch


def batch_of(payloads, key="tool_calls", response="tool_response"):
    env = {k: v for k, v in payloads[0].items()
           if k in ("session_id", "transcript_path", "cwd", "permission_mode")}
    calls = [{"tool_name": p["tool_name"], "tool_input": p["tool_input"],
              "tool_use_id": p["tool_use_id"], response: p["tool_response"]} for p in payloads]
    return dict(env, hook_event_name="PostToolBatch", **{key: calls})


def stored_calls():
    return [(e["tool"], e["files"], (e["meta"] or {}).get("tool_use_id"),
             (e["meta"] or {}).get("batch")) for e in stored_events("tool")]


def test_a_batch_is_one_record_per_call_in_a_canonical_order(real_payloads):
    calls = real_payloads[:4]
    a = hookmap.payload_to_records("claude", batch_of(calls), "PostToolBatch")
    b = hookmap.payload_to_records("claude", batch_of(calls[::-1], "tool_results",
                                                      "tool_result"), "PostToolBatch")
    assert a == b and len(a) == 4
    assert [r["meta"]["tool_use_id"] for r in a] == sorted(p["tool_use_id"] for p in calls)
    assert all(r["meta"]["batch"] == 4 and r["meta"]["event"] == "PostToolBatch" for r in a)
    one = hookmap.payload_to_records("claude", calls[0], "PostToolUse")[0]
    mine = next(r for r in a if r["meta"]["tool_use_id"] == calls[0]["tool_use_id"])
    assert {k: v for k, v in mine.items() if k != "meta"} == \
        {k: v for k, v in one.items() if k != "meta"}
    # a call that failed in the batch maps as its PostToolUseFailure would
    failed = batch_of(calls[:1])
    failed["tool_calls"][0]["error_message"] = "Exit code 2\nboom"
    (rec,) = hookmap.payload_to_records("claude", failed, "PostToolBatch")
    assert rec["error"].startswith("Exit code 2") and rec["exit_code"] == 2
    for junk in ({"tool_calls": "x"}, {"tool_calls": [1, None, {}]}, {}):
        assert hookmap.payload_to_records("claude", dict(junk), "PostToolBatch") == []


def test_a_batch_and_its_calls_post_tool_use_are_stored_once(real_payloads, brainbox_home):
    env = hook_env()
    calls = real_payloads[:3]
    for p in calls[:2]:  # PostToolUse fired for two of the calls, then the batch
        assert hook_process("PostToolUse", p, env) == ""
    assert hook_process("PostToolBatch", batch_of(calls), env) == ""
    got = stored_calls()
    assert [g[2] for g in got] == [p["tool_use_id"] for p in calls[:2]] + \
        [calls[2]["tool_use_id"]]
    assert [g[3] for g in got] == [None, None, 3]
    assert hook_process("PostToolBatch", batch_of(calls), env) == ""  # the same batch again
    assert stored_calls() == got
    # calls of another session with the same ids are other calls
    other = [dict(p, session_id="other") for p in calls]
    assert hook_process("PostToolBatch", batch_of(other), env) == ""
    assert len(stored_calls()) == 6


def test_a_batch_folds_the_same_whatever_order_the_host_lists_it(real_payloads, tmp_path):
    calls = real_payloads[:5]
    out = []
    for order in (calls, calls[::-1], calls[2:] + calls[:2]):
        events, bad = spool.to_events("claude", batch_of(order), "PostToolBatch", 1000.0)
        assert not bad
        with Memory.open(tmp_path / f"b{len(out)}.db") as mem:
            mem.record_normalized(events)
            out.append(mem.state.matrices()["W"].toarray().tolist())
    assert out[0] == out[1] == out[2]


def test_post_tool_batch_is_installed_for_claude_and_runs_in_process(tmp_path, brainbox_home,
                                                                     monkeypatch,
                                                                     real_payloads):
    assert "PostToolBatch" in install.CLAUDE_EVENTS
    assert "PostToolBatch" not in install.CODEX_EVENTS
    settings = tmp_path / "settings.json"
    install.install_claude(settings)
    entry = json.loads(settings.read_text())["hooks"]["PostToolBatch"]
    assert "matcher" not in entry[0]
    assert entry[0]["hooks"][0]["command"].endswith("PostToolBatch")
    monkeypatch.setattr(hooks, "HARD_EXIT", False)
    monkeypatch.setenv("BRAINBOX_DAEMON", "off")
    out = io.StringIO()
    data = json.dumps(batch_of(real_payloads[:2])).encode()
    assert hooks.main(["claude", "PostToolBatch"], stdin=io.BytesIO(data), stdout=out) == 0
    assert out.getvalue() == "" and len(stored_events("tool")) == 2
    assert all(e["source"] == "hook" for e in stored_events("tool"))
