"""`brainbox demo`: record a seeded synthetic workload and show what memory learned.

Choices:
- The recall queries are the workload's own: the last three sessions are held out, and
  each is asked its opening prompt before it is recorded (so the memory has only what
  came before), and every suggestion is marked with whether that session then opened the
  file. This is the replay's P1 probe in miniature, and a reader can check it by eye.
  Hand-picked module queries ("fix the cache bug") were dropped: in the seeded workload
  (12 sessions, seed 7) no session works on the cache module (its files are read 4 times,
  by sessions wandering off their own module), and its prompts' filler words ("fix the ...
  bug in ...") are in every file's context, so no src/cache/ file reached the top 5 and
  the demo looked broken while the ranking was doing what it does on that data.
- The next tool is predicted halfway through the last held-out session and compared with
  the tool that session called next.
- Scores are explained where they are printed: a file's confidence is the calibrated
  probability that the session then touches it (brainbox.confidence, fitted on the
  development replay); tool scores order results and are not probabilities.
- A temporary database is never named (it is deleted before the reader could open it);
  `--db FILE` keeps the memory in FILE and names it.
- One line on stderr says when the kernels are not in the numba cache yet (the first
  run compiles them, or runs their Python versions: `brainbox.jitmode`).
"""

from __future__ import annotations

import itertools
import os
import tempfile
import time

HELD_OUT = 3
NONSENSE = "quantum entanglement of teapots"


def _kernel_note() -> str | None:
    """One line for stderr when the kernels are not cached yet, else None."""
    from brainbox import jitmode

    if jitmode.is_warm("engine"):
        return None
    if jitmode.choose() == "python":
        return ("brainbox demo: first run: the numba kernels are not compiled yet, so this "
                "run uses their Python versions (same results); `brainbox warmup` compiles "
                "them once, in about a minute")
    return ("brainbox demo: first run: compiling the numba kernels (about a minute, once; "
            "`brainbox warmup` does it ahead of time)")


def run_demo(sessions: int = 12, seed: int = 7, db: str | None = None, echo=None,
             note=None) -> dict:
    """Run the demo; `echo` gets the report's lines (stdout), `note` the stderr line."""
    say = echo or (lambda *_: None)
    line = _kernel_note()
    if line and note:
        note(line)

    from brainbox.memory import Memory
    from brainbox.workload import generate

    tmp = None
    if db is None:
        tmp = tempfile.TemporaryDirectory(prefix="brainbox-demo-")
        path = os.path.join(tmp.name, "brainbox.db")
    else:
        path = db
    events = list(generate(events=sessions * 40, files=40, sessions=sessions, seed=seed))
    by_session = [list(g) for _, g in itertools.groupby(events, key=lambda e: e["session"])]
    held = by_session[-HELD_OUT:] if len(by_session) > HELD_OUT else by_session[-1:]
    learned = [e for s in by_session[: len(by_session) - len(held)] for e in s]
    root = events[0]["project"]
    try:
        with Memory.open(path) as mem:
            data = _run(mem, say, learned, held, root, sessions, kept=db)
    finally:
        if tmp is not None:
            tmp.cleanup()
    where = (f"the database {db} (kept)" if db is not None
             else "a temporary database, deleted now (keep one with --db FILE)")
    say(f"\nEverything stayed in one local SQLite file, {where}; no language model was "
        "called.")
    return data


def _run(mem, say, learned, held, root, sessions, kept) -> dict:
    t0 = time.perf_counter()
    mem.record(learned)
    record_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    mem.sync()
    fold_s = time.perf_counter() - t1
    stats = mem.stats()
    say(f"Recorded {stats['events']} events from {sessions - len(held)} synthetic agent "
        f"sessions into " + (f"{kept} (kept)" if kept else "a temporary database"))
    say(f"  learned {stats['resources']['file']} files, {stats['resources']['tool']} tools, "
        f"{stats['resources']['error']} error fingerprints and "
        f"{stats['associations']} associations "
        f"(record {record_s * 1000:.0f} ms, fold {fold_s * 1000:.0f} ms)")
    say(f"\n{len(held)} more sessions are held out. Each is asked its own first prompt "
        "before it is recorded; * marks a file that session then opened.")
    say("confidence: the probability that the session then opens the file, from the ranks "
        "of every channel that found it (lexical match, frequency, recency, ...), calibrated "
        "on real agent sessions (brainbox fit).")
    recalls = []
    for i, evs in enumerate(held):
        prompt = evs[0].get("prompt") or ""
        opened = sorted({f for e in evs for f in e.get("files") or ()})
        t2 = time.perf_counter()
        res = mem.recall(prompt, project=root, limit=5)
        ms = (time.perf_counter() - t2) * 1000
        hits = sum(r.path in opened for r in res)
        say(f"\nrecall {prompt!r}  ({ms:.1f} ms): {hits} of {len(res)} suggestions opened "
            f"(the session opened {len(opened)} files)")
        if not res:
            say("  nothing relevant")
        for r in res:
            via = f"  via {r.via}" if r.via else ""
            say(f"  {'*' if r.path in opened else ' '} {r.confidence:.2f}  {r.path}{via}")
        recalls.append({"query": prompt, "session": evs[0]["session"], "opened": opened,
                        "results": [{**r.as_dict(), "opened": r.path in opened} for r in res]})
        if i < len(held) - 1:
            mem.record(evs)
    last = held[-1]
    half = max(2, len(last) // 2)
    mem.record(last[:half])
    actual = next((e["tool"] for e in last[half:] if e.get("tool")), None)
    tools = mem.predict_tools(last[0]["session"], k=3)
    before = [e.get("tool") for e in last[:half] if e.get("tool")][-3:]
    say(f"\nnext tool for session {last[0]['session']} after {before}: it called "
        f"{actual} next")
    for t, s in tools:
        say(f"  {'*' if t == actual else ' '} {s:.4f}  {t}")
    say("  (fused rank scores of the session's tool sequences and tool frequency: an "
        "order, not a probability)")
    mem.record(last[half:])
    res = mem.recall(NONSENSE, project=root, limit=5)
    say(f"\nrecall {NONSENSE!r}: " + ("nothing relevant (no lexical match, no session "
                                       "evidence: brainbox stays quiet)" if not res
                                       else f"{len(res)} results"))
    recalls.append({"query": NONSENSE, "results": [r.as_dict() for r in res]})
    return {"stats": mem.stats(), "recalls": recalls,
            "predict": [{"tool": t, "score": s} for t, s in tools],
            "next_tool": {"session": last[0]["session"], "after": before, "actual": actual,
                          "predicted": [{"tool": t, "score": round(s, 6)} for t, s in tools],
                          "hit": actual in [t for t, _ in tools]}}
