"""The injection log and its corrections (issue 18 item 3): `brainbox log`, `brainbox
feedback PATH --useful | --wrong | --never | --undo` (`brainbox.corrections`),
event-sourced and replayed by rebuild."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from brainbox.cli import hooks
from brainbox.cli.app import cli
from brainbox.memory import Memory
from brainbox.state import FILE
from tests.records import git_repo, hook_process, running_daemon, stored_events

SHARED = Path(__file__).resolve().parents[2] / "shared"
SPOTTER = SHARED / "data" / "transcripts" / "claude-code" / "spotter"
TO_HOOKS = SHARED / "tools" / "transcript_to_hooks.py"
FILES = ("src/auth/login.py", "src/auth/session.py", "src/auth/tokens.py",
         "tests/test_auth.py")


@pytest.fixture
def inprocess(hooks_inprocess):
    """Hooks run in this process (conftest's `hooks_inprocess`)."""
    yield


@pytest.fixture
def repo(tmp_path):
    return git_repo(tmp_path / "repo", FILES)


def run(event, payload):
    out = io.StringIO()
    assert hooks.main(["claude", event], stdin=io.BytesIO(json.dumps(payload).encode()),
                      stdout=out) == 0
    return out.getvalue()


def tool(repo, name, path, session="s1"):
    return {"session_id": session, "cwd": str(repo), "hook_event_name": "PostToolUse",
            "tool_name": name, "tool_input": {"file_path": str(repo / path)},
            "tool_response": {}}


def prompt(repo, text, session="s1"):
    return {"session_id": session, "cwd": str(repo), "hook_event_name": "UserPromptSubmit",
            "prompt": text}


def stop(repo, session="s1"):
    return {"session_id": session, "cwd": str(repo), "hook_event_name": "Stop"}


def named(out: str) -> list[str]:
    """The files an injected block names."""
    if not out:
        return []
    ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    return [ln[2:].split(" — ")[0] for ln in ctx.splitlines() if ln.startswith("- ")]


def teach(repo, sessions=4):
    for s in range(sessions):
        for name, path in (("Read", "src/auth/login.py"), ("Edit", "src/auth/session.py"),
                           ("Read", "src/auth/tokens.py")):
            run("PostToolUse", tool(repo, name, path, session=f"past{s}"))


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def edges() -> dict:
    """Every association's weight, by (source path, target path)."""
    with Memory.open() as mem:
        st = mem.state
        mem.sync()
        ne = int(st.n_edges[0])
        return {(st.res_key[int(a)], st.res_key[int(b)]): float(w) for a, b, w in
                zip(st.esrc[:ne], st.edst[:ne], st.ew[:ne])}


def snapshot(mem) -> tuple:
    st = mem.state
    ne = int(st.n_edges[0])
    return (st.corrections.to_json(), st.streak[:st.n_res].tolist(),
            sorted(zip(st.esrc[:ne].tolist(), st.edst[:ne].tolist(), st.ew[:ne].tolist())))


# --------------------------------------------------------------------------- the log


def test_log_lists_each_injection_with_why_then_its_outcome(inprocess, repo, monkeypatch):
    monkeypatch.setenv("BRAINBOX_INJECT_FUSION", "fixed")  # the associative channel: a via
    teach(repo)
    shown = named(run("UserPromptSubmit", prompt(repo, "fix the auth login session")))
    assert "src/auth/login.py" in shown and "src/auth/session.py" in shown
    r = invoke("log", "--json")
    rows = json.loads(r.output)
    assert [x["path"] for x in sorted(rows, key=lambda x: x["rank"])] == shown
    assert {x["outcome"] for x in rows} == {"pending"}
    for x in rows:
        assert x["session"] == "s1" and x["project"] == str(repo) and x["at"] > 0
        assert x["channels"] and 0 < x["confidence"] <= 1  # why it was shown
    assert any(x["via"] for x in rows)  # some came by an association
    run("PostToolUse", tool(repo, "Edit", "src/auth/login.py"))
    run("PostToolUse", tool(repo, "Read", "src/auth/tokens.py"))
    run("Stop", stop(repo))
    after = {x["path"]: x for x in json.loads(invoke("log", "--json").output)}
    assert set(after) == set(shown)
    assert after["src/auth/login.py"]["outcome"] == "edited"
    if "src/auth/tokens.py" in after:
        assert after["src/auth/tokens.py"]["outcome"] == "read"
    assert after["src/auth/session.py"]["outcome"] == "ignored"
    for p in shown:  # why survives the scoring
        before = next(x for x in rows if x["path"] == p)
        assert {k: after[p][k] for k in ("channels", "via", "confidence", "rank", "at")} == \
            {k: before[k] for k in ("channels", "via", "confidence", "rank", "at")}
    # newest first, limited, by session, and in words
    run("UserPromptSubmit", prompt(repo, "login tokens again", session="s2"))
    rows = json.loads(invoke("log", "--json", "--limit", "2").output)
    assert len(rows) == 2 and {x["session"] for x in rows} == {"s2"}
    assert {x["session"] for x in json.loads(
        invoke("log", "--json", "--session", "s1").output)} == {"s1"}
    text = invoke("log", "--session", "s1").output
    assert "edited" in text and "ignored" in text and "confidence" in text


# --------------------------------------------------------------------------- corrections


def test_never_excludes_a_file_from_every_injection_until_undone(inprocess, repo):
    teach(repo)
    assert "src/auth/tokens.py" in named(run("UserPromptSubmit", prompt(repo, "auth login")))
    before = stored_events()
    r = invoke("feedback", str(repo / "src/auth/tokens.py"), "--never", "--json")
    out = json.loads(r.output)
    assert out["changed"] and out["path"] == "src/auth/tokens.py"
    assert out["project"] == str(repo)
    [ev] = stored_events()[len(before):]
    assert ev["kind"] == "feedback" and ev["meta"]["op"] == "correction"
    assert ev["files"] == ["src/auth/tokens.py"]
    # the prompt's list, the SessionStart block (pinned or not) and the advice
    invoke("pin", str(repo / "src/auth/tokens.py"))
    shown = named(run("UserPromptSubmit", prompt(repo, "auth login tokens", session="s2")))
    assert shown and "src/auth/tokens.py" not in shown
    start = run("SessionStart", {"session_id": "s3", "cwd": str(repo),
                                 "hook_event_name": "SessionStart", "source": "startup"})
    assert "src/auth/login.py" in start and "tokens.py" not in start
    edit = dict(tool(repo, "Edit", "src/auth/login.py", session="s3"),
                hook_event_name="PreToolUse")
    with Memory.open() as mem:
        advice = mem.advise({"tool": "Edit", "action": "edit", "project": str(repo),
                             "files": ["src/auth/session.py"]})
    assert advice["edits"] and all(c["path"] != "src/auth/tokens.py"
                                   for e in advice["edits"] for c in e["co_edits"])
    assert "tokens.py" not in run("PreToolUse", edit)
    # listed, kept by rebuild, idempotent, then undone
    listed = json.loads(invoke("log", "--excluded", "--json").output)
    assert [(x["project"], x["path"]) for x in listed] == [(str(repo), "src/auth/tokens.py")]
    assert "src/auth/tokens.py" in invoke("log", "--excluded").output
    with Memory.open() as mem:
        mem.sync()
        kept = snapshot(mem)
        mem.rebuild()
        assert snapshot(mem) == kept
    n = len(stored_events())
    again = json.loads(invoke("feedback", str(repo / "src/auth/tokens.py"), "--never",
                              "--json").output)
    assert not again["changed"] and len(stored_events()) == n
    invoke("feedback", str(repo / "src/auth/tokens.py"), "--undo")
    assert "src/auth/tokens.py" in named(run("UserPromptSubmit",
                                             prompt(repo, "auth login tokens", session="s4")))
    assert json.loads(invoke("log", "--excluded", "--json").output) == []


def shown_by_an_edge(repo, monkeypatch) -> tuple[dict, tuple]:
    """A memory taught, one prompt injected with the paper's fusion: the log's first row
    that came by an association, and that association."""
    monkeypatch.setenv("BRAINBOX_INJECT_FUSION", "fixed")
    teach(repo)
    run("UserPromptSubmit", prompt(repo, "fix the auth login session"))
    row = next(x for x in json.loads(invoke("log", "--json").output) if x["via"])
    return row, (row["via"], row["path"])


def test_wrong_weakens_the_producing_edge_once_and_useful_resets_the_streak(inprocess, repo,
                                                                             monkeypatch):
    row, edge = shown_by_an_edge(repo, monkeypatch)
    w0 = edges()
    out = json.loads(invoke("feedback", str(repo / row["path"]), "--wrong", "--json",
                            "--query", "fix the auth login session").output)
    assert out["via"] == row["via"]
    w1 = edges()
    assert {k for k in w0 if w0[k] != w1[k]} == {edge}
    assert w1[edge] == pytest.approx(max(0.1, w0[edge] * 0.9), rel=1e-6)
    ev = stored_events("feedback")[-1]
    assert ev["meta"]["query"] == "fix the auth login session"
    # once per injection: a second --wrong is refused and writes nothing
    n = len(stored_events())
    r = CliRunner().invoke(cli, ["feedback", str(repo / row["path"]), "--wrong"])
    assert r.exit_code == 1 and "already" in r.output and len(stored_events()) == n
    with Memory.open() as mem:
        mem.sync()
        fid = mem.state.res_index[(FILE, str(repo), row["path"])]
        assert int(mem.state.streak[fid]) == 1
    invoke("feedback", str(repo / row["path"]), "--useful")
    with Memory.open() as mem:
        mem.sync()
        assert int(mem.state.streak[fid]) == 0
        kept = snapshot(mem)
        mem.rebuild()
        assert snapshot(mem) == kept
    assert edges() == {**w1}


def test_a_suggestion_is_penalised_once_whether_wrong_or_ignored(inprocess, repo,
                                                                 monkeypatch):
    row, edge = shown_by_an_edge(repo, monkeypatch)
    invoke("feedback", str(repo / row["path"]), "--wrong")  # while pending
    w1 = edges()
    run("Stop", stop(repo))  # scored ignored: already penalised, nothing moves
    assert next(x for x in json.loads(invoke("log", "--json").output)
                if x["path"] == row["path"])["outcome"] == "ignored"
    assert edges() == w1
    # shown and ignored in another session, then marked wrong: a label, no second penalty
    run("UserPromptSubmit", prompt(repo, "fix the auth login session", session="s2"))
    run("Stop", stop(repo, session="s2"))
    w2 = edges()
    assert w2[edge] < w1[edge]  # the ignored showing weakened it
    out = json.loads(invoke("feedback", str(repo / row["path"]), "--wrong", "--json").output)
    assert out["changed"] and out["via"] is None
    assert stored_events("feedback")[-1]["meta"]["penalised"] is False
    assert edges() == w2
    with Memory.open() as mem:
        mem.sync()
        kept = snapshot(mem)
        mem.rebuild()
        assert snapshot(mem) == kept


@pytest.mark.parametrize("args,message", [
    (["feedback", "src/nope.py", "--never"], "not a file memory knows"),
    (["feedback", "src/auth/login.py"], "one of --useful"),
    (["feedback", "src/auth/login.py", "--wrong", "--undo"], "--undo undoes a --never"),
    (["feedback", "src/auth/login.py", "--undo"], "is not excluded"),
    (["feedback", "", "--never"], "the path is empty"),
])
def test_bad_feedback_is_one_line_and_writes_nothing(inprocess, repo, args, message,
                                                     monkeypatch):
    teach(repo, sessions=1)
    monkeypatch.chdir(repo)
    n = len(stored_events())
    r = CliRunner().invoke(cli, args)
    assert r.exit_code != 0 and message in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1
    assert len(stored_events()) == n


# --------------------------------------------------------------------------- acceptance


def transcript_payloads(name: str, root: Path) -> list[dict]:
    """The hook payloads of a real transcript moved under `root` (its files created),
    by the shared checking tool."""
    r = subprocess.run([sys.executable, str(TO_HOOKS), "--root", str(root),
                        str(SPOTTER / f"{name}.jsonl")], capture_output=True, text=True,
                       check=True, timeout=120)
    return [json.loads(line) for line in r.stdout.splitlines()]


def drive(items, env, session=None) -> list[tuple[dict, str]]:
    """Each payload through a real hook process (its session id replaced when given)."""
    out = []
    for it in items:
        payload = dict(it["payload"], session_id=session) if session else it["payload"]
        out.append((payload, hook_process(it["event"], payload, env)))
    return out


@pytest.mark.slow
def test_real_transcripts_through_hook_processes_log_weaken_exclude_rebuild(
        tmp_path, brainbox_home, warm):
    if not SPOTTER.is_dir() or not TO_HOOKS.is_file():
        pytest.skip("../shared/data/transcripts or transcript_to_hooks.py is absent")
    root = tmp_path / "spotter"
    (root / ".git").mkdir(parents=True)
    teach_items = transcript_payloads("ae4a77f8-aedd-4bc1-888f-c94edc91af04", root)
    work_items = transcript_payloads("258c7280-ae70-4798-800f-63464d01a85d", root)
    # the paper's fusion: the associative channel is computed, so suggestions name the
    # association that produced them (recall's default weighs it 0: no via, no edge)
    env = dict(os.environ, BRAINBOX_HOOK_BUDGET_TOOL="10", BRAINBOX_HOOK_BUDGET_PROMPT="30",
               BRAINBOX_INJECT_FUSION="fixed")
    end = {"cwd": str(root), "hook_event_name": "Stop"}
    brainbox_home.mkdir(parents=True, exist_ok=True)
    with running_daemon(brainbox_home):
        drive(teach_items, env)
        hook_process("Stop", dict(end, session_id="taught"), env)
        outputs = drive(work_items, env, session="work")
        shown = [(p, named(o)) for p, o in outputs if p["hook_event_name"] == "UserPromptSubmit"]
        injected = {f for _, names in shown for f in names}
        assert injected, "the taught memory injects nothing into the later session"
        pending = json.loads(invoke("log", "--json", "--session", "work").output)
        assert {x["outcome"] for x in pending} == {"pending"}
        assert sorted(x["path"] for x in pending) == sorted(f for _, n in shown for f in n)
        before = edges()
        hook_process("Stop", dict(end, session_id="work"), env)
        after = edges()
        rows = json.loads(invoke("log", "--json", "--session", "work").output)
        # each injection, with the outcome the Stop hook scored for it
        assert {x["path"] for x in rows} == injected
        for x in rows:
            assert x["outcome"] in ("read", "edited", "ignored") and x["channels"]
        [fb] = [e for e in stored_events("feedback") if e["session"] == "work"]
        for it in fb["meta"]["items"]:
            row = next(x for x in rows if x["path"] == it["path"])
            assert row["outcome"] == ("ignored" if not it["used"]
                                      else "edited" if it["edited"] else "read")
        # an ignored suggestion weakens exactly its producing edge, and nothing else moves
        def weakened(fb, before, after):
            ignored = {(it["via"], it["path"]) for it in fb["meta"]["items"]
                       if not it["used"] and it["via"]}
            assert {k for k in after if before.get(k) != after[k]} <= ignored
            with Memory.open() as mem:
                mem.sync()
                st = mem.state
                for src, dst in ignored:
                    streak = int(st.streak[st.res_index[(FILE, str(root), dst)]])
                    assert after[(src, dst)] == pytest.approx(
                        max(0.1, before[(src, dst)] * 0.9 ** streak), rel=1e-6)
            return ignored

        weakened(fb, before, after)
        # a session that ignores what it is shown: the prompt of the transcript that
        # recall answers along an association, then Stop
        probe = next(it for it in work_items if it["event"] == "UserPromptSubmit"
                     and it["payload"]["prompt"].startswith("This session is being continued"))
        before = edges()
        [(_, out)] = drive([probe], env, session="probe")
        assert named(out)
        hook_process("Stop", dict(end, session_id="probe"), env)
        after = edges()
        [fb] = [e for e in stored_events("feedback") if e["session"] == "probe"]
        assert {x["outcome"] for x in json.loads(
            invoke("log", "--json", "--session", "probe").output)} == {"ignored"}
        ignored = weakened(fb, before, after)
        assert ignored, fb["meta"]["items"]
        assert {k for k in after if before.get(k) != after[k]} == ignored
        assert all(after[k] < before[k] for k in ignored if before[k] > 0.1)
        # --never: a file the prompt injects (in a fresh session, as "again" is) is not
        # injected again in that project
        [(_, out)] = drive([probe], env, session="control")
        target = named(out)[0]
        r = subprocess.run([sys.executable, "-m", "brainbox.cli.entry", "feedback", target,
                            "--never", "--project", str(root)], capture_output=True,
                           text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        prompts = [it for it in work_items if it["event"] == "UserPromptSubmit"]
        again = drive(prompts, env, session="again")
        assert any(named(o) for _, o in again)
        assert all(target not in named(o) for _, o in again)
        start = hook_process("SessionStart", {"session_id": "again", "cwd": str(root),
                                              "hook_event_name": "SessionStart"}, env)
        assert f"- {target} " not in start
    # rebuild reproduces the exclusions, the streaks and every weight
    with Memory.open() as mem:
        mem.sync()
        kept = snapshot(mem)
        assert mem.state.corrections.listing()[0]["path"] == target
        mem.rebuild()
        assert snapshot(mem) == kept
