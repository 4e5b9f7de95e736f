"""`brainbox demo`: record a seeded synthetic workload and show what memory learned."""

from __future__ import annotations

import os
import tempfile
import time


def run_demo(sessions: int = 12, seed: int = 7, db: str | None = None, echo=None) -> dict:
    from brainbox.memory import Memory
    from brainbox.workload import generate, project_layout

    say = echo or (lambda *_: None)
    tmp = None
    if db is None:
        tmp = tempfile.TemporaryDirectory(prefix="brainbox-demo-")
        db = os.path.join(tmp.name, "brainbox.db")
    events = list(generate(events=sessions * 40, files=40, sessions=sessions, seed=seed))
    root = events[0]["project"]
    t0 = time.perf_counter()
    with Memory.open(db) as mem:
        mem.record(events)
        record_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        mem.sync()
        fold_s = time.perf_counter() - t1
        stats = mem.stats()
        say(f"Recorded {stats['events']} events from {sessions} synthetic agent sessions "
            f"into {db}")
        say(f"  learned {stats['resources']['file']} files, {stats['resources']['tool']} tools, "
            f"{stats['resources']['error']} error fingerprints and "
            f"{stats['associations']} associations "
            f"(record {record_s * 1000:.0f} ms, fold {fold_s * 1000:.0f} ms)")
        import random

        modules = project_layout(random.Random(seed), 40)
        words = [m[0].split("/")[1] for m in modules[:3]]
        queries = [f"fix the {w} bug" for w in words] + ["quantum entanglement of teapots"]
        recalls = []
        for q in queries:
            t2 = time.perf_counter()
            res = mem.recall(q, project=root, limit=5)
            ms = (time.perf_counter() - t2) * 1000
            say(f"\nrecall {q!r}  ({ms:.1f} ms)")
            if not res:
                say("  nothing relevant (the floor: no lexical match, no session evidence)")
            for r in res:
                via = f"  via {r.via}" if r.via else ""
                say(f"  {r.confidence:.2f}  {r.path}{via}")
            recalls.append({"query": q, "results": [r.as_dict() for r in res]})
        last_session = events[-1]["session"]
        tools = mem.predict_tools(last_session)
        say(f"\nnext tool for session {last_session} after "
            f"{[e.get('tool') for e in events if e['session'] == last_session][-3:]}:")
        for t, s in tools:
            say(f"  {s:.4f}  {t}")
    if tmp is not None:
        tmp.cleanup()
    say("\nEverything stayed in one local SQLite file; no language model was called.")
    return {"stats": stats, "recalls": recalls,
            "predict": [{"tool": t, "score": s} for t, s in tools]}
