"""eval/loaders/base.py's read_json: the one reader of a whole-file JSON trajectory or log."""

import warnings

import pytest

from brainbox.eval.loaders import mini_swe_agent, swe_agent
from brainbox.eval.loaders.base import TrajectoryWarning, read_json


def test_a_json_file_is_read_without_a_warning(tmp_path):
    p = tmp_path / "t.json"
    p.write_text('{"messages": [1, 2]}', encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrajectoryWarning)
        assert read_json(p) == {"messages": [1, 2]}


def test_bad_json_warns_with_the_file_and_line_and_gives_none(tmp_path):
    p = tmp_path / "t.traj.json"
    p.write_text('{\n  "messages": [\n  oops\n}', encoding="utf-8")
    with pytest.warns(TrajectoryWarning, match=r"t\.traj\.json:3: unreadable trajectory "
                                               r"\(JSONDecodeError: .*\); task skipped"):
        assert read_json(p) is None


def test_a_missing_file_warns_with_what_it_is(tmp_path):
    p = tmp_path / "gone.json"
    with pytest.warns(TrajectoryWarning, match=r"gone\.json: unreadable LLM log "
                                               r"\(FileNotFoundError: .*\); task skipped"):
        assert read_json(p, "LLM log") is None


def test_undecodable_bytes_are_unreadable(tmp_path):
    p = tmp_path / "t.traj"
    p.write_bytes(b'{"a": "\xff"}')
    with pytest.warns(TrajectoryWarning, match=r"unreadable trajectory \(UnicodeDecodeError"):
        assert read_json(p) is None


@pytest.mark.parametrize("load_file,name", [(mini_swe_agent.load_file, "x__y-1.traj.json"),
                                            (swe_agent.load_file, "x__y-1.traj")])
def test_the_loaders_skip_an_unreadable_trajectory_with_one_warning(tmp_path, load_file, name):
    p = tmp_path / name
    p.write_text("not json", encoding="utf-8")
    with pytest.warns(TrajectoryWarning, match="unreadable trajectory") as got:
        assert load_file(p) is None
    assert len(got) == 1

