"""brainbox.events.normalize / brainbox.recorder: secrets in every stored field (file paths
too, as stable keys) and per-event validation, so one bad value never costs the good ones
(reliability report D5, D6)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brainbox import recorder
from brainbox.events import EventError, normalize
from brainbox.redact import redact_path

GHP = "ghp_S907mcrT8q9AuRohFIHo61F8L1NCovbFyNnH"
GHP2 = "ghp_Zq81mcrT8q9AuRohFIHo61F8L1NCovbAbCdE"
INT64_MAX = 2**63 - 1


def bb(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "brainbox.cli.entry", *args], input=stdin,
                          capture_output=True, text=True, check=False,
                          env={**os.environ, "BRAINBOX_DAEMON": "off"})


def rows(brainbox_home, sql):
    conn = sqlite3.connect(brainbox_home / "brainbox.db")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.fixture
def proj(tmp_path):
    p = tmp_path / "proj"
    (p / ".git").mkdir(parents=True)
    return p


# ------------------------------------------------------------------ secrets in file paths


def test_a_secret_path_segment_is_redacted_and_stays_a_stable_key():
    a = redact_path(f"keys/{GHP}.txt")
    assert GHP not in a and GHP[4:16] not in a
    assert a.startswith("keys/REDACTED-") and a.endswith(".txt")
    assert redact_path(f"keys/{GHP}.txt") == a  # the same secret path, the same key
    assert redact_path(f"keys/{GHP2}.txt") != a  # another secret, another key
    assert redact_path(a) == a
    assert redact_path("env/DB_PASSWORD=hunter2").startswith("env/DB_PASSWORD=REDACTED-")
    assert redact_path("src/auth/token_store.py") == "src/auth/token_store.py"
    assert redact_path("config/api_keys.example") == "config/api_keys.example"


@pytest.mark.parametrize("path", [
    f"keys/{GHP}.txt", "notes/--password=hunter2.txt", "env/AccountKey=abc123def456==",
    "notes/mysql -u root -pHunter2", "notes/curl -u bob:Hunter2", "q/x?api_key=abcdefgh",
    'cfg/{"password": "hunter2"}', "env/DB_PASSWORD=hunter2",
    "notes/curl -H 'Authorization: Bearer abc.def.ghi123' x.log",
    "notes/psql postgres://admin:hunter2@db:5432/app", "notes/Cookie: session=abc123",
    "k/-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx4Ubd2dbN1Vhy0Jp4Yp1kQ\n-----END RSA PRIVATE KEY-----",
    "hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
])
def test_path_redaction_is_idempotent(path):
    once = redact_path(path)
    assert "REDACTED-" in once
    assert redact_path(once) == once


_PIECES = [
    f"keys/{GHP}.txt", "curl -H 'Authorization: Bearer abc.def.ghi123' x", "/", "a/",
    "https://u:pw1234@h/x", "aws configure set aws_access_key_id AKIACRG7DOHXID6D9LFR",
    "--password=hunter2", "DB_PASSWORD=x", "REDACTED-", "[REDACTED]", " ", "=", ":",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx4Ubd2dbN1Vhy0Jp4Yp1kQ\n",
]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=12)), max_size=6)
       .map("".join))
def test_any_path_is_a_fixed_point_after_one_redaction(path):
    once = redact_path(path)
    assert redact_path(once) == once


def test_a_secret_across_segments_is_redacted():
    path = "hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
    out = redact_path(path)
    assert "XXXXXXXXXXXXXXXXXXXXXXXX" not in out and "REDACTED-" in out
    assert redact_path(path) == out


def test_record_file_path_with_a_token_is_stored_redacted(proj, brainbox_home):
    """Report D5: `record --file $P/keys/ghp_....txt` stored the token in events.files."""
    for _ in range(2):
        r = bb("record", "--session", "s", "--cwd", str(proj), "--tool", "Read",
               "--file", f"{proj}/keys/{GHP}.txt")
        assert r.returncode == 0, r.stderr
    files = [json.loads(f) for (f,) in rows(brainbox_home, "select files from events")]
    assert len(files) == 2 and files[0] == files[1]  # stable: learning still sees one file
    (path,) = files[0]
    assert path.startswith("keys/REDACTED-") and GHP not in path


def test_a_redacted_path_can_be_named_back_in_a_shell_and_forgotten(proj, brainbox_home):
    """The marker has no glob or shell character: `forget` takes `[...]` as a glob (and
    zsh refuses an unmatched one), so `keys/[REDACTED-x].txt` could not be forgotten."""
    r = bb("record", "--session", "s", "--cwd", str(proj), "--tool", "Read",
           "--file", f"{proj}/keys/{GHP}.txt")
    assert r.returncode == 0, r.stderr
    (stored,) = json.loads(rows(brainbox_home, "select files from events")[0][0])
    assert not set(stored) & set("[]*?{}$'\" ' ;&|<>()`"), stored
    assert bb("rebuild").returncode == 0
    for name in (f"{proj}/keys/{GHP}.txt", stored):  # the real path, or the stored one
        r = bb("forget", name, "--cwd", str(proj), "--dry-run")
        assert r.returncode == 0, r.stderr
        assert "1 event" in r.stdout


def test_strings_in_meta_are_redacted(proj):
    ev = normalize({"session": "s", "cwd": str(proj), "tool": "Read",
                    "meta": {"tool_use_id": f"export GITHUB_TOKEN={GHP}",
                             "nested": [{"x": f"Bearer {GHP}"}], "n": 3}})
    assert GHP not in json.dumps(ev["meta"])
    assert ev["meta"]["n"] == 3


# --------------------------------------------------------------- per-event validation


@pytest.mark.parametrize("code", [2**63, 2**64, 10**30])
def test_an_exit_code_outside_int64_is_clamped(proj, code):
    ev = normalize({"session": "s", "cwd": str(proj), "tool": "Bash", "exit_code": code})
    assert ev["exit_code"] == INT64_MAX
    ev = normalize({"session": "s", "cwd": str(proj), "tool": "Bash", "exit_code": -code})
    assert ev["exit_code"] == -(2**63)


@pytest.mark.parametrize(
    "at", [float("nan"), float("inf"), float("-inf"), 10**400, "1e999", "nan", 1.7e12, -5.0,
           "0001-01-01T00:00:00Z"],
    ids=["nan", "inf", "-inf", "int-10^400", "str-1e999", "str-nan", "milliseconds", "negative",
         "year-1"],
)
def test_a_non_finite_or_absurd_time_is_rejected_with_a_reason(proj, at):
    with pytest.raises(EventError, match="'at'"):
        normalize({"session": "s", "cwd": str(proj), "tool": "Read", "at": at})


def test_a_non_finite_exit_code_is_rejected_with_a_reason(proj):
    with pytest.raises(EventError, match="exit_code"):
        normalize({"session": "s", "cwd": str(proj), "tool": "Bash", "exit_code": float("inf")})


def nested(depth):
    v = "x"
    for _ in range(depth):
        v = [v]
    return v


def test_absurd_nesting_is_rejected_per_event_not_raised(proj):
    good = {"session": "g", "cwd": str(proj), "tool": "Read"}
    raws = [good, {**good, "meta": {"a": nested(5000)}}, {**good, "files": [nested(5000)]},
            {**good, "command": nested(5000)}, good]
    events, bad = recorder.normalize_many(raws)
    assert len(events) == 2
    assert [i for i, _ in bad] == [2, 3, 4]
    assert all("nested" in msg for _, msg in bad)


def test_normalize_many_keeps_the_good_and_gives_the_reasons(proj):
    good = {"session": "g", "cwd": str(proj), "tool": "Read"}
    events, bad = recorder.normalize_many(
        [good, {**good, "at": float("nan")}, {**good, "exit_code": 10**30}, {"cwd": "/"}]
    )
    assert [e["exit_code"] for e in events] == [None, INT64_MAX]
    assert [(i, "'at'" in m) for i, m in bad[:1]] == [(2, True)]
    assert bad[1][0] == 4 and "session" in bad[1][1]


def test_record_jsonl_keeps_every_good_line(proj, brainbox_home, tmp_path):
    """Report D6: the m.jsonl reproduction gave a traceback and stored none of the lines."""
    m = tmp_path / "m.jsonl"
    m.write_text(
        f'{{"session":"g1","cwd":"{proj}","tool":"Read"}}\n'
        f'{{"session":"s","cwd":"{proj}","tool":"Bash","exit_code":{10**30}}}\n'
    )
    r = bb("record", "--jsonl", str(m))
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert rows(brainbox_home, "select count(*) from events where session='g1'") == [(1,)]
    assert rows(brainbox_home, "select exit_code from events where session='s'") == [(INT64_MAX,)]


def test_record_jsonl_rejects_bad_lines_by_number_and_stores_the_rest(proj, brainbox_home,
                                                                      tmp_path):
    good = json.dumps({"session": "g1", "cwd": str(proj), "tool": "Read"})
    m = tmp_path / "m.jsonl"
    head = f'{{"session":"s","cwd":"{proj}","tool":"Read",'
    m.write_text("\n".join([
        good,
        head + '"at":NaN}',
        head + '"at":1e999}',
        head + '"meta":{"a":' + "[" * 100_000 + "}}",
        head + '"meta":' + "[" * 3000 + '"x"' + "]" * 3000 + "}",
        head + '"meta":{"a":' + "[" * 500 + '"x"' + "]" * 500 + "}}",
        good,
    ]) + "\n")
    r = bb("record", "--jsonl", str(m))
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert [ln.split(":")[1].strip() for ln in lines] == ["line 2", "line 3", "line 4", "line 5", "line 6"]
    assert rows(brainbox_home, "select count(*) from events where session='g1'") == [(2,)]
    assert rows(brainbox_home, "select count(*) from events where session='s'") == [(0,)]
