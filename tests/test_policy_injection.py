"""The injection policy (issue 18, item 1; `brainbox.injection`): its context and rewards,
its choice (warm-up, UCB, silence when showing costs more than it earns), and its state
folded from feedback events, so that `rebuild()` reproduces it; and the prompt hook's
decision carried to the feedback event through real hook processes."""

from __future__ import annotations

import json

import pytest

from brainbox import injection as inj
from brainbox.memory import Memory


def test_context_bands_kinds_familiarity_and_depth():
    assert inj.context(0.1, "add a flag", in_session=False, decisions=0,
                       prompt_index=0) == "low|task|new|first"
    assert inj.context(0.3, "why does it fail?", in_session=False, decisions=10,
                       prompt_index=0) == "mid|session|known|first"  # deictic "it"
    assert inj.context(0.7, "Why does parsing fail", in_session=False, decisions=3,
                       prompt_index=0) == "high|question|new|first"
    assert inj.context(0.7, "x " * 1000, in_session=False, decisions=3,
                       prompt_index=0).split("|")[1] == "long"
    assert inj.context(0.7, "add tests", in_session=True, decisions=3,
                       prompt_index=1) == "high|session|new|later"


def test_rewards_are_the_design_formula_per_arm():
    used = [(True, False), (False, False), (True, True)]
    chars = [0, 100, 180, 260]
    r = inj.rewards(used, chars, available=3)
    cost = [2.0 * (c / 4.0) / 1000.0 for c in chars]
    assert r[0] == 0.0
    assert r[1] == pytest.approx(1.0 - cost[1])
    assert r[2] == pytest.approx(1.0 + 1.5 / 3 - cost[3])  # TOP3 shows all three
    assert r[3] == r[2]  # TOP5 shows the same three items
    # only the first item shown: arms beyond it are not revealed
    assert inj.rewards(used[:1], chars[:2], available=3) == [0.0, r[1], None, None]


def test_the_model_arm_is_the_largest_expected_reward_of_the_calibrated_confidences():
    chars = [0, 100, 180, 260, 340, 420]
    exp = inj.expected([0.9, 0.5, 0.4, 0.1, 0.05], chars)
    cost = [2.0 * (c / 4.0) / 1000.0 for c in chars]
    assert exp[0] == 0.0
    assert exp[1] == pytest.approx(0.9 - cost[1])
    assert exp[2] == pytest.approx(0.9 + 0.5 / 2 + 0.4 / 3 - cost[3])
    assert exp[3] == pytest.approx(0.9 + 0.25 + 0.4 / 3 + 0.1 / 4 + 0.05 / 5 - cost[5])
    assert inj.model_arm(exp, 5) == 2  # items 4 and 5 do not pay for their characters
    assert inj.model_arm(inj.expected([0.9, 0.5, 0.4, 0.5, 0.4], chars), 5) == 3  # they do
    low = inj.expected([0.05, 0.01, 0.01], chars[:4])
    assert inj.model_arm(low, 3) == 1  # nothing pays for itself: the first (silence is learned)
    assert inj.model_arm(None, 5) == 3 and inj.model_arm(None, 2) == 2  # no model: TOP5
    assert inj.expected([0.5], []) == [] and inj.model_arm([], 4) == 3


def test_the_policy_leaves_the_models_arm_only_on_confident_paired_evidence():
    ctx = "mid|task|new|first"
    exp = [0.0, 0.3, 0.5, 0.6]  # the model says TOP5
    p = inj.Policy()
    assert p.choose("/p", ctx, 5, exp) == 3
    for _ in range(inj.MIN_PAIRS - 1):  # TOP1 earns more every time, but not yet often
        p.update("/p", ctx, [0.0, 0.9, 0.7, 0.5], model=3)
    assert p.choose("/p", ctx, 5, exp) == 3
    p.update("/p", ctx, [0.0, 0.9, 0.7, 0.5], model="TOP5")  # by name, as the log has it
    assert p.choose("/p", ctx, 5, exp) == 1
    q = inj.Policy()  # nothing shown is ever used: only the cost remains
    for _ in range(inj.MIN_PAIRS):
        q.update("/q", ctx, [0.0, -0.05, -0.12, -0.2], model=3)
    assert q.choose("/q", ctx, 5, exp) == 0  # SILENT
    noisy = inj.Policy()  # TOP3 ahead on average, but by less than its noise
    for i in range(4 * inj.MIN_PAIRS):
        noisy.update("/n", ctx, [0.0, 0.2, 0.5 + (0.3 if i % 2 else -0.28), 0.5], model=3)
    assert noisy.choose("/n", ctx, 5, exp) == 3
    # an arm whose list equals a smaller arm's (2 items available) is never chosen
    assert inj.Policy().choose("/r", ctx, 2, exp) == 2
    assert inj.Policy.from_json(json.loads(json.dumps(p.to_json()))).to_json() == p.to_json()
    # a state saved before the paired sums: [n, sum] per arm still loads
    old = inj.Policy.from_json({"cells": {"/p": {ctx: [[3, 0.5]] * 4}}, "decisions": {}})
    assert old.cells["/p"][ctx][1] == [3, 0.5, 0, 0.0, 0.0]


def test_a_young_context_backs_off_to_the_projects_pooled_statistics():
    p = inj.Policy()
    for _ in range(inj.MIN_PAIRS):
        p.update("/p", "high|task|new|first", [0.0, 1.0, 0.4, 0.3])
    assert p.choose("/p", "low|question|new|first", 5) == 1  # from the pooled cell
    assert p.choose("/other", "high|task|new|first", 5) == 3  # another project: the model


def _feedback(mem, project, session, at, ctx, rewards):
    mem.record({"session": session, "cwd": project, "project": project, "kind": "feedback",
                "at": at, "meta": {"op": "feedback", "items": [], "reward": 0.0,
                                   "suggestions": 1,
                                   "decisions": [{"ctx": ctx, "arm": "TOP5",
                                                  "rewards": rewards}]}})


def test_the_policy_is_folded_from_feedback_events_and_rebuilt_exactly(tmp_path):
    mem = Memory.open(tmp_path / "m.db")
    root = str(tmp_path / "repo")
    for i in range(7):
        _feedback(mem, root, f"s{i}", 1_000_000.0 + i, "mid|task|new|first",
                  [0.0, 0.2 + i / 10, None if i % 2 else 0.1, None])
    mem.sync()
    before = mem.state.policy.to_json()
    assert before["decisions"] == {root: 7}
    cell = before["cells"][root]["mid|task|new|first"]
    assert cell[0][0] == 7 and cell[2][0] == 4 and cell[3][0] == 0
    mem.rebuild()
    assert mem.state.policy.to_json() == before
    mem.close()
    again = Memory.open(tmp_path / "m.db")  # and after a save and a reload
    assert again.state.policy.to_json() == before
    again.close()


def test_a_prompt_hooks_decision_reaches_the_feedback_event_and_the_policy(tmp_path,
                                                                            brainbox_home):
    """Real hook processes: the prompt hook shows the policy's arm (no history yet: the
    model's, from the calibrated confidences) and remembers recall's whole list; Stop scores every arm from what the session then
    touched, in the feedback event; the folded policy counts it, and a rebuild agrees."""
    import os
    import time

    from tests.records import git_repo, hook_process

    files = ("src/auth/login.py", "src/auth/session.py", "tests/test_auth.py")
    repo = git_repo(tmp_path / "repo", files)
    t0 = time.time() - 86400
    with Memory.open() as mem:
        for s in range(3):
            for i, (tool, f) in enumerate((("Read", "src/auth/login.py"),
                                           ("Edit", "src/auth/session.py"))):
                mem.record({"session": f"past{s}", "cwd": str(repo), "tool": tool,
                            "files": [f], "at": t0 + 3600 * s + 10 * i})
    env = dict(os.environ, BRAINBOX_HOOK_BUDGET_PROMPT="30", BRAINBOX_HOOK_BUDGET_TOOL="30",
               BRAINBOX_DAEMON="off")
    base = {"session_id": "now-1", "cwd": str(repo), "transcript_path": "/tmp/now-1.jsonl"}
    out = hook_process("UserPromptSubmit", dict(base, hook_event_name="UserPromptSubmit",
                                                prompt="fix the login redirect in auth"), env)
    assert "src/auth/login.py" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    hook_process("PostToolUse", dict(base, hook_event_name="PostToolUse", tool_name="Edit",
                                     tool_input={"file_path": str(repo / "src/auth/login.py")},
                                     tool_response={"success": True}), env)
    hook_process("Stop", dict(base, hook_event_name="Stop"), env)
    with Memory.open() as mem:
        fb = [e for e in mem.conn.execute(
            "SELECT meta FROM events WHERE kind = 'feedback'").fetchall()]
        assert len(fb) == 1
        (decision,) = json.loads(fb[0][0])["decisions"]
        assert decision["arm"] == decision["model"] and decision["model"] in inj.NAMES
        assert decision["ctx"].endswith("|new|first")
        r = decision["rewards"]
        assert r[0] == 0.0 and all(x is not None for x in r)
        assert r[1] > 1.0  # login.py, first, was edited: 1.5 minus the block's cost
        policy = mem.state.policy.to_json()
        assert policy["decisions"] == {str(repo): 1}
        cell = policy["cells"][str(repo)][decision["ctx"]]
        assert [a[2] for a in cell] == [1, 1, 1, 1]  # paired with the model's arm
        assert cell[inj.NAMES.index(decision["model"])][3] == 0.0
        # the offered items' confidences and uses reach the project's recalibration
        assert len(decision["confidences"]) == len(decision["used"]) >= 1
        assert decision["used"][0] is True  # login.py was edited
        pred, used = policy["calib"][str(repo)]
        assert used == sum(decision["used"]) and pred == pytest.approx(
            sum(decision["confidences"]))
        mem.rebuild()
        assert mem.state.policy.to_json() == policy


def test_a_project_whose_agent_leaves_the_offered_files_alone_is_recalibrated_down():
    """`Policy.corrected`: without history recall's confidences stand; each scored decision
    whose offered files went unused lowers them, by (used + k) / (predicted + k), until
    the model's arm shows fewer items; another project keeps its own."""
    pol = inj.Policy()
    conf, chars = [0.6, 0.3, 0.25, 0.2, 0.18], [0, 160, 250, 340, 380, 420]
    assert pol.corrected("a", conf) == conf
    assert inj.model_arm(inj.expected(conf, chars), 5) == 3  # TOP5 on trust
    arms = []
    for _ in range(12):
        pol.observe("a", conf, [False] * 5)
        arms.append(inj.model_arm(inj.expected(pol.corrected("a", conf), chars), 5))
    k, pred = inj.PRIOR_HITS, 12 * sum(conf)
    assert pol.corrected("a", conf) == pytest.approx([c * k / (pred + k) for c in conf])
    assert arms[-1] < 3 and arms == sorted(arms, reverse=True)
    assert pol.corrected("b", conf) == conf
    pol.observe("b", conf, [True] * 5)  # used more than predicted: raised
    assert all(x > c for x, c in zip(pol.corrected("b", conf), conf))
    pol.observe("b", conf, [True])  # a malformed observation is ignored
    assert inj.Policy.from_json(pol.to_json()).to_json() == pol.to_json()
