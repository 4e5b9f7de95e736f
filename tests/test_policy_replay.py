"""`brainbox replay --policy` (issue 18, Deliver 5): the injection policy evaluated offline
on real trajectories, every arm's reward at every prompt (brainbox.eval.policy)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from brainbox import injection as inj

SOURCE = (Path(__file__).resolve().parents[2] / "shared" / "data" / "trajectories"
          / "openhands-codeact-verified50")
needs_data = pytest.mark.skipif(not SOURCE.is_dir(), reason="../shared/data is absent")


def _block(items):
    return "header\n" + "".join(f"- {it['path']}\n" for it in items)


@needs_data
def test_each_prompts_policy_reward_is_its_chosen_arms_and_every_arm_is_scored():
    from brainbox.eval.policy import series_rows, summary
    from brainbox.eval.sources import load_source

    tasks, _ = load_source(SOURCE)
    repo = min({t.repo for t in tasks})
    rows = series_rows(sorted((t for t in tasks if t.repo == repo),
                              key=lambda t: (t.order, t.id)), _block)
    assert rows and any(r["available"] for r in rows)
    for r in rows:
        assert len(r["arms"]) == len(inj.ARMS) and all(x is not None for x in r["arms"])
        if r["available"]:
            assert r["policy"] == r["arms"][inj.NAMES.index(r["arm"])]
            assert r["arms"][0] == 0.0  # silence earns nothing and costs nothing
        else:
            assert r["arm"] == "none" and r["policy"] == 0.0
    s = summary(rows)
    best = s["arms"][s["best_arm"]]
    assert best == max(s["arms"].values())
    assert s["regret"][-1] == pytest.approx((best - s["policy"]) * len(rows), abs=1e-5)
    for n in inj.NAMES:
        d, (lo, hi) = s["diff"][n]
        assert d == pytest.approx(s["policy"] - s["arms"][n])
        assert lo <= d + 1e-9 and d - 1e-9 <= hi
    assert s["silent_share"] >= s["nothing_to_show_share"]


@needs_data
def test_the_replay_command_reports_the_policy_per_source_and_draws_the_regret(tmp_path):
    from brainbox.cli.app import cli

    fig = tmp_path / "regret.png"
    r = CliRunner().invoke(cli, ["replay", str(SOURCE), "--policy", "--no-progress", "--json",
                                 "--figure", str(fig), "--markdown", str(tmp_path / "p.md")])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    (label,) = out["sources"]
    assert out["pooled"]["prompts"] == out["sources"][label]["prompts"] > 0
    assert len(out["pooled"]["regret"]) == out["pooled"]["prompts"]
    md = (tmp_path / "p.md").read_text()
    assert "Injection policy" in md and label in md and "TOP5" in md
    pytest.importorskip("matplotlib")
    assert fig.stat().st_size > 0


def test_policy_needs_a_source():
    from brainbox.cli.app import cli

    r = CliRunner().invoke(cli, ["replay", "--policy", "--synthetic", "100"])
    assert r.exit_code == 2 and "--policy needs at least one SOURCE" in r.output
