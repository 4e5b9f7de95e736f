"""Hook payloads to raw records, totality: any payload, mutated or random, maps without
raising to records that are well formed (split from tests/test_hookmap.py)."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brainbox.cli.hookmap import CONTEXT_CLOSE, CONTEXT_OPEN, payload_to_records
from tests.records import check_record, fixture_payloads

# ------------------------------------------------------------------ totality (fuzz)

JUNK_TEXT = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=5),
    st.sampled_from(
        [
            "",
            " ",
            "\x00",
            "Exit code 3",
            "Exit code -99999999999",
            CONTEXT_OPEN,
            CONTEXT_CLOSE,
            "*** Update File: \udc80.py",
            "{",
            "[1]",
            '{"command": 1}',
            "mcp__a__b",
            "Bash",
            "apply_patch",
            "Read",
            "Grep",
        ]
    ),
)
LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), JUNK_TEXT)
VALUE = st.recursive(
    LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(JUNK_TEXT, inner, max_size=4)
    ),
    max_leaves=12,
)
FIELDS = [
    "session_id",
    "cwd",
    "hook_event_name",
    "tool_name",
    "tool_input",
    "tool_response",
    "prompt",
    "source",
    "reason",
    "error",
    "is_interrupt",
    "transcript_path",
    "turn_id",
    "type",
    "input-messages",
    "thread-id",
    "tool_use_id",
    "error_message",
    "duration_ms",
    "agent_id",
    "agent_type",
    "tool_calls",
    "tool_results",
]
EVENTS = st.sampled_from(
    [
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "SessionStart",
        "SessionEnd",
        "Stop",
        "PreToolUse",
        "PostToolBatch",
        "",
    ]
)
TOOLS = st.sampled_from(
    [
        "Read",
        "Edit",
        "Write",
        "MultiEdit",
        "NotebookEdit",
        "Grep",
        "Glob",
        "Bash",
        "TodoWrite",
        "apply_patch",
        "mcp__s__t",
        "Task",
        "LS",
    ]
)
PAYLOAD = st.one_of(
    VALUE,
    st.fixed_dictionaries({}, optional={k: VALUE for k in FIELDS}),
    st.fixed_dictionaries(
        {"hook_event_name": EVENTS, "tool_name": st.one_of(TOOLS, VALUE)},
        optional={
            "tool_input": st.one_of(
                VALUE,
                st.dictionaries(
                    st.sampled_from(["file_path", "path", "pattern", "command", "notebook_path"]),
                    VALUE,
                ),
            ),
            "tool_response": VALUE,
            "session_id": VALUE,
            "cwd": VALUE,
            "error": VALUE,
            "prompt": VALUE,
            "type": st.just("agent-turn-complete"),
            "input-messages": VALUE,
            "duration_ms": VALUE,
            "agent_id": VALUE,
        },
    ),
    # a PostToolBatch: a list of calls shaped like PostToolUse payloads, or junk
    st.fixed_dictionaries(
        {"hook_event_name": st.just("PostToolBatch"),
         "tool_calls": st.one_of(VALUE, st.lists(st.one_of(VALUE, st.fixed_dictionaries(
             {"tool_name": st.one_of(TOOLS, VALUE)},
             optional={"tool_input": VALUE, "tool_use_id": VALUE, "tool_response": VALUE,
                       "tool_result": VALUE, "error_message": VALUE, "duration_ms": VALUE})),
             max_size=5))},
        optional={"session_id": VALUE, "cwd": VALUE, "agent_id": VALUE},
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    agent=st.one_of(st.sampled_from(["claude", "codex"]), VALUE),
    payload=PAYLOAD,
    event=st.one_of(st.none(), EVENTS, VALUE),
)
def test_any_payload_maps_without_raising(agent, payload, event):
    records = payload_to_records(agent, payload, event=event)
    assert isinstance(records, list)
    for rec in records:
        check_record(rec)
        meta = rec.get("meta") or {}
        if "duration_ms" in meta:
            assert type(meta["duration_ms"]) is int and 0 <= meta["duration_ms"] < 1 << 40
        for key in ("agent_id", "agent_type"):
            assert key not in meta or (isinstance(meta[key], str) and meta[key])


def test_mutated_batches_of_real_payloads_never_raise():
    rng = random.Random(17)
    seeds = [p for p in fixture_payloads() if isinstance(p, dict) and p.get("tool_name")]
    assert seeds
    for _ in range(500):
        calls = [_mutate(rng.choice(seeds), rng) for _ in range(rng.randint(0, 6))]
        payload = {"hook_event_name": "PostToolBatch", "session_id": "s", "cwd": "/r",
                   rng.choice(["tool_calls", "tool_results"]): calls}
        records = payload_to_records("claude", payload, "PostToolBatch")
        assert len(records) <= len(calls)
        for rec in records:
            check_record(rec)
            assert rec["meta"]["batch"] == len(records)


def _mutate(value, rng: random.Random, depth=0):
    junk = [
        None,
        0,
        -1,
        2**70,
        1.5,
        True,
        "",
        "\udcff\x00",
        "x" * rng.randint(0, 50000),
        [],
        {},
        ["a", 1],
        {"k": None},
        "\ufffe" * 3,
        b"\xff".decode("latin-1"),
    ]
    if depth > 4 or rng.random() < 0.15:
        return rng.choice(junk)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            r = rng.random()
            if r < 0.1:
                continue  # drop the field
            out[k] = _mutate(v, rng, depth + 1) if r < 0.5 else v
        return out
    if isinstance(value, list):
        return [_mutate(v, rng, depth + 1) for v in value[:5]]
    if isinstance(value, str) and value and rng.random() < 0.5:
        i = rng.randrange(len(value))
        return value[:i] + rng.choice(["\udc80", "\x00", CONTEXT_OPEN, "\n" * 3]) + value[i:]
    return value


def _random_payload(rng: random.Random) -> dict:
    payload = {}
    for key in rng.sample(FIELDS, rng.randint(0, len(FIELDS))):
        payload[key] = _mutate(None, rng, depth=5)
    if rng.random() < 0.7:
        payload["hook_event_name"] = rng.choice(
            ["PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "SessionStart", "Stop"]
        )
        payload["tool_name"] = rng.choice(
            [
                "Read",
                "Edit",
                "Bash",
                "Grep",
                "Glob",
                "apply_patch",
                "mcp__a__b",
                "NotebookEdit",
                "TodoWrite",
            ]
        )
    return payload


def test_thousands_of_mutated_and_random_payloads_never_raise():
    rng = random.Random(20260514)
    seeds = fixture_payloads()
    for i in range(6000):
        payload = _mutate(rng.choice(seeds), rng) if i % 2 else _random_payload(rng)
        for rec in payload_to_records(rng.choice(["claude", "codex", None]), payload):
            check_record(rec)


