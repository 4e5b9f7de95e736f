"""`brainbox feedback --useful | --wrong` as a label for the learned fusion (issue 18 item
3, `brainbox.labels`): through the real CLI on a real database, a --wrong on an injected
file lowers the learned gain of a channel that ranked it, a --useful raises it, and
rebuild() reproduces the credit exactly."""

from __future__ import annotations

import json

import pytest

from brainbox.labels import credit_row
from brainbox.learning import gains_of
from brainbox.memory import Memory
from tests.records import git_repo, stored_events
from tests.test_corrections import FILES, invoke, prompt, run, teach

pytestmark = pytest.mark.usefixtures("hooks_inprocess")


@pytest.fixture
def repo(tmp_path):
    return git_repo(tmp_path / "repo", FILES)


def gains(repo) -> dict:
    with Memory.open() as mem:
        mem.sync()
        return gains_of(mem.state, str(repo))


def credit(mem, repo) -> list:
    c = mem.state.credit.get(str(repo))
    return [] if c is None else c.tolist()


def shown(repo) -> list[dict]:
    """The log's rows for one prompt injected after a taught memory (learned fusion)."""
    teach(repo)
    run("UserPromptSubmit", prompt(repo, "fix the auth login session"))
    rows = json.loads(invoke("log", "--json").output)
    assert rows and all(r["outcome"] == "pending" for r in rows)
    return rows


def top_channel(row: dict) -> str:
    """The channel that ranked the row's file best."""
    return min(row["channels"].items(), key=lambda kv: (kv[1], kv[0]))[0]


def test_wrong_lowers_and_useful_raises_the_gain_of_the_channel_that_ranked_it(repo):
    rows = shown(repo)
    a = rows[0]
    b = min(rows[1:], key=lambda r: min(r["channels"].values()))
    g0 = gains(repo)
    ch = top_channel(a)
    out = json.loads(invoke("feedback", str(repo / a["path"]), "--wrong", "--json").output)
    assert out["changed"]
    ev = stored_events("feedback")[-1]
    assert ev["meta"]["channels"] == a["channels"]  # the label is in the event
    g1 = gains(repo)
    assert g1[ch] < g0[ch]
    for c in g0:  # a channel that did not rank it loses at most the extra credited file
        if c not in a["channels"]:
            assert g1[c] <= g0[c]
    ch = top_channel(b)
    assert b["channels"][ch] <= 2  # credit 21/22 or more: above any channel's mean credit
    invoke("feedback", str(repo / b["path"]), "--useful")
    g2 = gains(repo)
    assert g2[ch] > g1[ch]
    # once per injection: a second --useful resets the streak again but credits nothing
    with Memory.open() as mem:
        mem.sync()
        kept = credit(mem, repo)
    invoke("feedback", str(repo / b["path"]), "--useful")
    assert "channels" not in stored_events("feedback")[-1]["meta"]
    with Memory.open() as mem:
        mem.sync()
        assert credit(mem, repo) == kept
        board = mem.state.corrections.to_json()
        mem.rebuild()
        assert credit(mem, repo) == kept  # rebuild equals the incremental fold
        assert mem.state.corrections.to_json() == board
    assert gains(repo) == g2


def test_a_file_never_injected_is_no_label(repo):
    teach(repo, sessions=2)
    g0 = gains(repo)
    invoke("feedback", str(repo / "src/auth/login.py"), "--wrong")
    invoke("feedback", str(repo / "src/auth/tokens.py"), "--useful")
    assert gains(repo) == g0
    assert all("channels" not in e["meta"] for e in stored_events("feedback"))


def test_the_credit_row_is_the_opening_credit_rule():
    row = credit_row({"lexical": 1, "associative": 3, "frequency": 21, "nope": 1})
    assert row[0] == 1.0 and row[1] == pytest.approx(21.0 / 23.0) and row[3] == 0.0
