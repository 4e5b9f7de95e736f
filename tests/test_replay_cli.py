"""`brainbox replay` from the command line: outputs, exit codes, the manifest, and a
small slice of the real development data (skipped when ../shared/data is absent)."""

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from brainbox.cli.app import cli
from brainbox.eval.metrics import PROBES
from brainbox.eval.sources import manifest

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_synthetic_replay_writes_json_markdown_and_a_figure(tmp_path):
    out, md, fig = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.svg"
    r = invoke("replay", "--synthetic", "400", "--bootstrap", "50", "--no-progress",
               "--json-out", str(out), "--markdown", str(md), "--figure", str(fig))
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert data["schema"] == "brainbox.replay/2"
    assert data["settings"]["files"] == "both" and data["settings"]["views"] == ["repo", "all"]
    assert data["cohorts"] == data["views"]["repo"]["cohorts"] == data["views"]["all"]["cohorts"]
    assert data["ablations"] is None
    assert data["settings"]["synthetic"]["events"] == 400
    assert data["settings"]["methods"] == ["brainbox", "recency", "frequency", "bm25",
                                           "cosession", "random"]
    cohort = data["cohorts"]["synthetic"]
    assert set(cohort["coverage"]) == set(PROBES) == set(cohort["results"])
    assert data["timings"]["events"] == cohort["events"] > 0
    assert data["source_commit"]
    # calibration: every view, both contexts, the held-out error and the reliability bins
    for view in ("repo", "all"):
        cal = data["calibration"][view]
        assert cal["horizon"] == "the rest of the task" and "rows" not in cal
        assert set(cal["contexts"]) == {"prompt", "session"}
        assert cal["all"]["n"] == sum(c["n"] for c in cal["contexts"].values()) > 0
        assert 0 <= cal["all"]["ece"] <= 1
        assert sum(b["n"] for b in cal["all"]["bins"]) == cal["all"]["n"]
    text = md.read_text()
    assert "| Probe | Gold targets | Eligible | Probes | Scored |" in text
    assert text.index("## Repository files only") < text.index("## All files")
    assert "P3 next tool" in text
    assert "## Calibration" in text and "| View | Context | Predictions | ECE |" in text
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not fig.exists()
    else:
        assert fig.read_text().lstrip().startswith("<?xml")


def test_json_to_stdout_is_machine_output(tmp_path):
    r = CliRunner().invoke(cli, ["replay", "--synthetic", "300", "--bootstrap", "0",
                                 "--no-progress", "--json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["cohorts"]["synthetic"]["results"]["P3"]["diff"]["recency"]["ci"] is None


def test_json_is_a_flag_as_on_every_other_command_and_json_out_writes_a_file(tmp_path):
    out = tmp_path / "r.json"
    r = invoke("replay", "--synthetic", "300", "--bootstrap", "0", "--no-progress", "--json",
               "--json-out", str(out))
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == json.loads(out.read_text())


@pytest.mark.parametrize("value", ["-", "out.json"])
def test_the_old_json_path_form_says_what_to_write_instead(tmp_path, value, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["replay", "--synthetic", "300", "--no-progress", "--json",
                                 value])
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--json-out" in lines[0] and "replay:" not in r.stderr


@pytest.mark.parametrize("opt", ["--json-out", "--markdown", "--figure"])
def test_an_output_folder_that_does_not_exist_is_refused_before_the_replay_runs(tmp_path, opt):
    target = tmp_path / "nodir" / ("x.png" if opt == "--figure" else "x.out")
    r = CliRunner().invoke(cli, ["replay", "--synthetic", "2000", "--bootstrap", "0", opt,
                                 str(target)])
    assert r.exit_code == 1, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("brainbox: ") and "nodir" in lines[0]
    assert "replay:" not in r.stderr and "replayed" not in r.stderr  # nothing ran
    assert not (tmp_path / "nodir").exists()


def test_a_source_with_no_usable_task_exits_1_with_one_line(data_dir, tmp_path):
    src = data_dir / "transcripts" / "claude-code" / "spotter"
    if not src.is_dir():
        pytest.skip("spotter transcripts absent")
    md = tmp_path / "r.md"
    r = CliRunner().invoke(cli, ["replay", str(src), "--no-progress", "--markdown", str(md)])
    assert r.exit_code == 1, r.output
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("brainbox: no usable task") and "spotter" in last
    assert not md.exists() and r.stdout == ""


@pytest.mark.parametrize("what", ["file", "folder"])
def test_the_format_error_names_the_cli_spellings(tmp_path, what):
    (tmp_path / "x.txt").write_text("hello")
    src = tmp_path / "x.txt" if what == "file" else tmp_path
    r = CliRunner().invoke(cli, ["replay", str(src), "--no-progress"])
    assert r.exit_code == 1
    assert "--format" in r.stderr and "claude-code" in r.stderr and "mini-swe-agent" in r.stderr
    assert "claude_code" not in r.stderr and "format=" not in r.stderr


def test_ablations_replay_each_channel_removed_and_report_the_paired_difference(tmp_path):
    md = tmp_path / "r.md"
    r = invoke("replay", "--synthetic", "400", "--bootstrap", "50", "--no-progress",
               "--ablations", "--json", "--markdown", str(md))
    data = json.loads(r.stdout)
    from brainbox.recall import CHANNELS, plan

    # snippet (no code index) and the channels of weight 0 (associative) are not ablated
    used = plan().use.tolist()
    assert data["settings"]["ablations"] == [c for c, on in zip(CHANNELS, used, strict=True)
                                             if on]
    assert "recency" in data["settings"]["ablations"]  # 0 at a prompt, 30 in a session
    assert list(data["settings"]["ablations_skipped"]) == ["associative", "snippet"]
    assert set(data["ablations"]) == {"repo", "all"}
    res = data["cohorts"]["synthetic"]["results"]
    for channel in data["settings"]["ablations"]:
        by_probe = data["ablations"]["repo"][channel]
        # the ablated model is the one --ablate CHANNEL replays
        alone = json.loads(invoke("replay", "--synthetic", "400", "--bootstrap", "0",
                                  "--no-progress", "--files", "all", "--ablate", channel,
                                  "--json").stdout)["cohorts"]["synthetic"]["results"]
        for p in PROBES:
            e = by_probe[p]
            assert e["mrr"] == alone[p]["mrr"]["brainbox"]
            assert e["full"] == res[p]["mrr"]["brainbox"]
            assert e["diff"] == pytest.approx(e["mrr"] - e["full"])
            assert e["ci"][0] <= e["diff"] <= e["ci"][1]
    changed = [c for c in data["settings"]["ablations"]
               if any(data["ablations"]["all"][c][p]["diff"] != 0 for p in PROBES)]
    assert changed  # an ablation that changes nothing everywhere would prove nothing here
    text = md.read_text()
    tables = text[text.index("## Ablations"):text.index("## Timings")]
    assert "### Repository files only" in tables and "### All files" in tables
    assert "| full model |" in tables and "| − lexical |" in tables and "snippet" in tables
    # the full model and each ablated channel, once: the repo view reused the all view's
    assert data["timings"]["replays"] == 1 + len(data["settings"]["ablations"])


def test_a_channel_given_to_ablate_is_not_ablated_again():
    data = json.loads(invoke("replay", "--synthetic", "300", "--bootstrap", "0",
                             "--no-progress", "--ablate", "lexical", "--ablations",
                             "--json").stdout)
    assert "lexical" not in data["settings"]["ablations"]
    assert "lexical" in data["settings"]["ablations_skipped"]
    assert "lexical" not in data["ablations"]["repo"]


def test_ablation_is_recorded_and_a_bad_channel_is_a_usage_error():
    r = CliRunner().invoke(cli, ["replay", "--synthetic", "300", "--bootstrap", "0",
                                 "--no-progress", "--ablate", "lexical", "--json"])
    assert json.loads(r.stdout)["settings"]["ablate"] == ["lexical"]
    assert invoke("replay", "--synthetic", "10", "--ablate", "nope").exit_code == 2


@pytest.mark.parametrize("args", [[], ["--synthetic", "10", "--workers", "2",
                                       "--scheduler", "tcp://127.0.0.1:1"]])
def test_usage_errors_exit_2(args):
    assert invoke("replay", *args).exit_code == 2


def test_a_missing_source_exits_1_with_one_line(tmp_path):
    r = CliRunner().invoke(cli, ["replay", str(tmp_path / "nope"), "--no-progress"])
    assert r.exit_code == 1
    assert r.stderr.strip().startswith("brainbox: no such source")


def test_an_unrecognised_folder_exits_1(tmp_path):
    (tmp_path / "x.txt").write_text("hello")
    r = CliRunner().invoke(cli, ["replay", str(tmp_path), "--no-progress"])
    assert r.exit_code == 1


def test_manifest_lists_every_file_with_size_and_sha256(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.json").write_bytes(b"{}")
    (tmp_path / "b.txt").write_bytes(b"hello")
    m = manifest("src", tmp_path)
    assert [f["path"] for f in m["files"]] == ["a/x.json", "b.txt"]
    assert m["files"][1] == {"path": "b.txt", "size": 5,
                             "sha256": hashlib.sha256(b"hello").hexdigest()}


def test_replay_of_a_dev_data_slice(data_dir, tmp_path):
    src = data_dir / "trajectories" / "openhands-codeact-verified50"
    if not src.is_dir():
        pytest.skip("openhands source absent")
    out = tmp_path / "r.json"
    r = invoke("replay", str(src), "--max-tasks-per-repo", "6", "--bootstrap", "100",
               "--no-progress", "--json-out", str(out))
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    (name, cohort), = data["cohorts"].items()
    assert name == "openhands-codeact-verified50" and cohort["tasks"] == 6
    files = {f["path"] for f in data["inputs"][0]["files"]}
    assert "README.md" in files and any(p.startswith("llm_completions/") for p in files)
    cov = cohort["coverage"]
    assert cov["P1-edit"]["probes"] == 6
    assert cov["P2"]["gold"] == cov["P2"]["probes"] >= cov["P2"]["eligible"] == cov["P2"]["scored"]
    assert cov["P3"]["scored"] > 0
    assert [t["order"] for t in data["tasks"]] == sorted(t["order"] for t in data["tasks"])


@pytest.fixture(scope="module")
def openhands_views(tmp_path_factory):
    """The openhands source (22 tasks, files created in some) replayed with --files both,
    --files all and, for its six first tasks, both views with each engine."""
    src = DATA / "trajectories" / "openhands-codeact-verified50"
    if not src.is_dir():
        pytest.skip("openhands source absent")
    out = {}
    for key, args in (("both", []), ("all", ["--files", "all"]), ("repo", ["--files", "repo"]),
                      ("python", ["--engine", "python", "--max-tasks-per-repo", "6"]),
                      ("compiled", ["--max-tasks-per-repo", "6"])):
        path = tmp_path_factory.mktemp("oh") / f"{key}.json"
        r = invoke("replay", str(src), "--bootstrap", "100", "--no-progress", "--json-out",
                   str(path), *args)
        assert r.exit_code == 0, r.output
        out[key] = json.loads(path.read_text())
    return out


def test_files_all_gives_the_all_view_of_files_both(openhands_views):
    both, alone = openhands_views["both"], openhands_views["all"]
    assert alone["settings"]["views"] == ["all"] and list(alone["views"]) == ["all"]
    assert alone["cohorts"] == both["views"]["all"]["cohorts"]
    assert openhands_views["repo"]["cohorts"] == both["cohorts"] == both["views"]["repo"][
        "cohorts"]
    assert both["tasks"] == openhands_views["repo"]["tasks"]


def test_the_repo_view_scores_fewer_targets_than_the_all_view_on_real_data(openhands_views):
    both = openhands_views["both"]
    (repo,) = both["views"]["repo"]["cohorts"].values()
    (full,) = both["views"]["all"]["cohorts"].values()
    assert repo["coverage"]["P1-edit"]["gold"] < full["coverage"]["P1-edit"]["gold"]
    assert repo["coverage"]["P2"]["probes"] < full["coverage"]["P2"]["probes"]
    assert repo["coverage"]["P3"] == full["coverage"]["P3"]  # a view changes no tool call
    assert both["timings"]["replays"] == 2 and both["timings"]["reused"] == 0


def test_both_engines_give_the_same_views(openhands_views):
    py, fast = openhands_views["python"], openhands_views["compiled"]
    assert py["views"] == fast["views"]
    assert py["views"]["repo"] != py["views"]["all"]


def test_the_figure_has_a_column_per_view_the_headline_left_and_the_caption_clear():
    pytest.importorskip("matplotlib")
    from brainbox.eval import report

    names = ["claude", "mini", "openhands", "java", "all"]  # the dev set's five cohorts
    cohorts = {n: _cohort(4 + i, 1.0) for i, n in enumerate(names)}
    result = {"settings": {"k": {"files": 10, "tools": 3}, "views": ["repo", "all"]},
              "cohorts": cohorts,
              "views": {"repo": {"cohorts": cohorts}, "all": {"cohorts": cohorts}}}
    fig = report.draw(result)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert [t.split("\n")[:2] for t in titles] == [
        [view, n] for n in names for view in ("Repository files only", "All files")]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    caption = next(t for t in fig.texts if "Conditional MRR" in t.get_text())
    box = caption.get_window_extent(renderer)
    for ax in fig.axes:  # the caption is clear of every panel, its probe labels included
        assert not box.overlaps(ax.get_tightbbox(renderer))


def test_without_matplotlib_the_figure_is_skipped_with_a_note(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    fig = tmp_path / "f.png"
    r = CliRunner().invoke(cli, ["replay", "--synthetic", "200", "--bootstrap", "0",
                                 "--no-progress", "--json", "--figure", str(fig)])
    assert r.exit_code == 0
    assert not fig.exists()
    assert "matplotlib is not installed" in r.stderr
    json.loads(r.stdout)


def test_progress_goes_to_stderr_with_carriage_returns():
    r = CliRunner().invoke(cli, ["replay", "--synthetic", "300", "--bootstrap", "0",
                                 "--json"])
    assert r.exit_code == 0
    assert "\rreplay: " in r.stderr and "events/s" in r.stderr
    json.loads(r.stdout)


def _cohort(tasks, ci_high):
    """A cohort of the result document (runner.run's shape) with chosen values."""
    res, cov = {}, {}
    for i, p in enumerate(PROBES):
        mrr = {"brainbox": 0.55 + 0.05 * i, "cosession": 0.6, "recency": 0.3}
        ci = {m: [v - 0.2, min(ci_high, v + 0.45)] for m, v in mrr.items()}
        res[p] = {"n": 4 + i, "predictions": 4 + i, "mrr": mrr, "ci": ci,
                  "strongest": "cosession", "diff": {}}
        cov[p] = {"gold": 40, "eligible": 10 * (i + 1), "probes": 10, "scored": 4 + i}
    return {"series": 2, "tasks": tasks, "events": 900, "coverage": cov, "results": res}


def test_the_figure_is_print_sized_with_n_eligible_share_a_caption_and_unclipped_whiskers(
        tmp_path):
    pytest.importorskip("matplotlib")
    from PIL import Image

    from brainbox.eval import report

    result = {"settings": {"k": {"files": 10, "tools": 3}},
              "cohorts": {"openhands": _cohort(4, 1.0), "all": _cohort(9, 0.98)}}
    fig = report.draw(result)
    w, h = fig.get_size_inches()
    assert w >= 7 and h >= 4.5
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = " ".join(t.get_text() for t in fig.findobj(lambda o: hasattr(o, "get_text")))
    for i, p in enumerate(PROBES):
        assert f"n={4 + i}" in texts and f"{25 * (i + 1)}% eligible" in texts
    assert "conditional MRR" in texts and "eligible" in texts and "bootstrap" in texts
    legend = fig.legends[0].get_window_extent(renderer)
    for ax in fig.axes:
        assert ax.get_ylim()[1] >= 1.0  # the highest whisker reaches 1.0: not clipped
        for bar in ax.patches:
            assert not legend.overlaps(bar.get_window_extent(renderer)), "legend over a bar"
    written = report.figure(result, str(tmp_path / "f.png"))
    assert [p.rsplit("/", 1)[-1] for p in written] == ["f.png", "f.svg"]
    with Image.open(tmp_path / "f.png") as im:
        assert im.size[0] >= 1400 and im.size[1] >= 900
    assert (tmp_path / "f.svg").read_text().lstrip().startswith("<?xml")


def test_a_difference_that_rounds_to_zero_is_printed_without_a_minus_sign():
    from brainbox.eval import report

    c = _cohort(4, 1.0)
    c["results"]["P2"]["diff"] = {"cosession": {"diff": -0.0002, "ci": [-0.0004, 0.01]}}
    row = next(r for r in report.differences_table(c, ["brainbox", "cosession"]) if "P2" in r)
    assert "+0.000 [+0.000, +0.010]" in row and "−0.000" not in row
