"""One hook event, handled: map, record, answer (`handle`). The hook process calls it, and
so does the daemon for a handed-over event (`service.Service.op_hook`), with the service
on the guard in place of the socket; this module imports neither of them.

- `PostToolUse` / `PostToolUseFailure`: map the payload (`hookmap.payload_to_records`),
  normalise and append through `brainbox.recorder`. A failed call whose error has a live
  procedure (DESIGN §4.9) is answered with its quotation (`service.op_procedure`) as
  `hookSpecificOutput.additionalContext`, when a daemon answers; else nothing. It asks
  before recording, so the quotation's event (`procedures.quotation`) is appended in the
  same batch as the call: the outcome counts are those of what was printed.
- `UserPromptSubmit`: record the prompt (our injected block stripped by hookmap), then
  ask the daemon for a compact list (`path — why` lines plus `next tool: X`) and print it
  as `hookSpecificOutput.additionalContext`, or print nothing when nothing is relevant.
  What was suggested is remembered per session (`$BRAINBOX_HOME/sessions/<id>.jsonl`,
  one line appended per prompt: rewriting a file costs 1-4 ms on ext4, which starts
  writeback on a truncate or a rename over an existing file) for scoring at Stop.
- `SessionStart`: record it and print the project's one block (`service.format_start`:
  pins, most likely files, open errors, live procedures), at most `session_start_chars`
  characters (default 1,200). It names no session, time or count of sessions: two
  sessions of an unchanged memory get the same bytes, which keeps the host's prompt cache.
- `PreToolUse` (an Edit/Write/MultiEdit or a shell command about to run): not recorded
  (its PostToolUse records the call: one event per call), only answered: memory's advice
  on the call (`service.op_advise`: co-edited files and errors after edits of the file,
  or the command's last fix and open failure), as observations, at most `ADVICE_CHARS`
  characters, never a permission decision; nothing when nothing clears the floors.
- `Stop` / `SessionEnd`: record it, score the session's pending suggestions against the
  tool events that followed them, append ONE `feedback` event (`brainbox.feedback`, the
  DESIGN §4.8 reward), and fold (the daemon's `sync`, else in-process). A turn without
  suggestions only records: Stop fires after every answer, and an in-process fold costs
  the kernels' import; the next reader folds lazily anyway.

Where answers come from: inside the daemon, its service (`guard.service`); in a hook
process, the daemon (`client.request`), else an in-process service made by `guard.local`
(the hook process sets it: without a daemon, or with `daemon: off`, a prompt answers
in-process within the budget, then starts a daemon detached, after answering, so the two
do not compete for the CPU; if the budget runs out it degrades to recording only).

Standard library only at import: the hook process imports this module on every event.
"""

from __future__ import annotations

import json
import os
import time

from brainbox import paths
from brainbox.cli import client, hookconf, spool
from brainbox.cli.hooklog import log_failure, safe


def handle(agent, event, payload, guard, at: float | None = None) -> str | None:
    """Map, record and answer one hook (in the hook process, or in the daemon for a
    handed-over one, where `at` is the hook's time and `guard.service` the daemon's
    service): the line the hook prints, or None."""
    if event == "PreToolUse":
        return _on_pre_tool(agent, payload, guard, at)
    events, bad = spool.to_events(agent, payload, event, at)
    for _, msg in bad:
        log_failure(agent, event, f"event rejected: {msg}")
    if not events:
        return None
    ev = events[0]
    kind = ev["kind"]
    line = None
    if kind == "tool" and ev.get("error_fp") and event != "PostToolBatch":
        # asked first: the quotation joins the batch (a batch's failures were answered by
        # their PostToolUseFailure)
        line, quoted = _on_failure(event, ev, guard)
        events = events + quoted
    last_id = record(events, guard, batch=event == "PostToolBatch")
    if kind == "tool":
        return line
    if kind == "prompt":
        return _on_prompt(ev, last_id, guard)
    if kind == "session_start":
        return _on_start(ev, guard)
    if kind == "session_end":
        _on_stop(ev, guard)
    return None


def settings(guard) -> dict:
    """The guard's answer settings, resolved once (`hookconf.settings`)."""
    if guard.settings is None:
        guard.settings = hookconf.settings()
    return guard.settings


def record(events: list[dict], guard, batch: bool = False) -> int | None:
    """Append normalised events within the budget; spool them when that fails. A
    `batch` (PostToolBatch) leaves out the calls whose PostToolUse recorded them already
    (the same session and tool-use id, `store.new_calls`): PostToolUse fires for each call
    as it completes, the batch after all of them, so with both installed each call is
    stored once; a later PostToolUse is not checked (it never comes after its batch)."""

    from brainbox import recorder

    guard.pending = spool.stamp(events, guard.uid)
    conn = guard.conn  # the daemon's own connection, else one opened here
    own = conn is None
    try:
        if own:
            conn = connect(guard)
        else:
            wait_ms = int(max(0.02, guard.remaining() - 0.03) * 1000)
            conn.execute(f"PRAGMA busy_timeout = {wait_ms}")
        with guard.lock:  # the watchdog must not spool what is being committed
            if batch:
                from brainbox import store

                events = store.new_calls(conn, events)
                guard.pending = events
            last = recorder.append(events, conn, retries=2) if events else None
            guard.committed = True
        guard.durable()  # a `record` handoff's receipt: only now (DESIGN §7, `client`)
        if guard.remaining() > 0.05 and os.path.isdir(spool.spool_dir()):
            spool.drain_spool(conn, guard.lock, until=guard.deadline - 0.05)
        return last
    except Exception as exc:  # noqa: BLE001 - locked, corrupt, newer schema, disk full
        # under the lock, so a watchdog whose deadline comes meanwhile waits (up to
        # WATCHDOG_LOCK_WAIT) and says "as logged before": one loss, one "event lost" line
        # (CI under load logged this event twice when the deadline fell in log_failure)
        with guard.lock:
            kept = guard.spool_uncommitted()
            kept = "event spooled" if kept == "spooled" else kept
            log_failure(*guard.who, f"{kept}: {type(exc).__name__}: {exc}", exc)
            guard.reported = True
        if kept == "event spooled":
            guard.durable()
        return None
    finally:
        if own and conn is not None:
            safe(conn.close)
        elif not own:
            from brainbox import store

            safe(conn.execute, f"PRAGMA busy_timeout = {store.BUSY_TIMEOUT_MS}")


def connect(guard):
    """Open the database with a busy timeout of the time left. Opening is retried
    briefly: while several processes create or checkpoint a new database at once, the
    read-only pre-check can see it half-made (a transient `StoreError`)."""
    from brainbox import store

    for attempt in range(6):
        try:
            conn = store.connect()
            wait_ms = int(max(0.02, guard.remaining() - 0.03) * 1000)
            conn.execute(f"PRAGMA busy_timeout = {wait_ms}")
            return conn
        except store.StoreError:
            if attempt == 5 or guard.remaining() < 0.06:
                raise
            time.sleep(0.01 * (attempt + 1))
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------- answers


def _on_prompt(ev: dict, last_id, guard) -> str | None:
    conf = settings(guard)
    if not conf["inject"] or not ev.get("prompt"):
        return None
    max_chars = conf["inject_chars"]
    req = {"op": "suggest", "query": ev["prompt"], "session": ev["session"],
           "project": ev["project"], "worktree": ev.get("worktree"), "limit": 5,
           "max_chars": max_chars}
    if conf.get("inject_fusion"):  # recall's fusion for the prompt's list (`hookconf`)
        req["fusion"] = conf["inject_fusion"]
    result = ask(req, guard)
    if not result:
        return None
    batch = {
        "after_id": last_id or 0, "at": ev["at"], "project": ev["project"],
        "session": ev["session"], "chars": len(result.get("text") or ""),
        "items": [{"path": it["path"], "rank": it["rank"], "via": it.get("via"),
                   "confidence": it.get("confidence"), "channels": it.get("channels") or {}}
                  for it in result.get("items") or ()] if result.get("text") else [],
    }
    decision = result.get("decision")
    if isinstance(decision, dict):  # the injection policy's (brainbox.injection)
        batch.update({k: decision.get(k)
                      for k in ("ctx", "arm", "model", "offered", "offered_confidence",
                                "chars_by_k")})
    if batch["items"] or decision:
        remember(ev["session"], batch)
    if not result.get("text"):
        return None
    return json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                              "additionalContext": result["text"]}},
                      ensure_ascii=False)


def _on_start(ev: dict, guard) -> str | None:
    conf = settings(guard)
    if not conf["inject"]:
        return None
    req = {"op": "start", "session": ev["session"], "project": ev["project"],
           "worktree": ev.get("worktree"), "max_chars": max(1, conf["session_start_chars"])}
    result = ask(req, guard)
    if not result or not result.get("text"):
        return None
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart",
                                              "additionalContext": result["text"]}},
                      ensure_ascii=False)


def _on_pre_tool(agent, payload, guard, at) -> str | None:
    """PreToolUse: the call mapped as its PostToolUse would be (not recorded: the
    PostToolUse records it, once), and memory's advice on it, or None. An edit or a run
    only; without a daemon, nothing (the engine's import would cost the budget), and a
    daemon is started for the next call."""
    conf = settings(guard)
    if not conf["inject"]:
        return None
    events, _ = spool.to_events(agent, payload, "PostToolUse", at)
    ev = events[0] if events else None
    if ev is None or ev["kind"] != "tool" or ev.get("action") not in ("edit", "run"):
        return None
    req = {"op": "advise", "max_chars": hookconf.ADVICE_CHARS,
           "event": {k: ev.get(k) for k in ("tool", "action", "files", "project", "session")}}
    result = ask(req, guard)
    if not result or not result.get("text"):
        return None
    return json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                              "additionalContext": result["text"]}},
                      ensure_ascii=False)


def _on_failure(event, ev: dict, guard) -> tuple[str | None, list[dict]]:
    """A tool call that failed (not recorded yet): the quotation of the live procedure of
    its error as this failure leaves it (`service.op_procedure`), as the hook's
    additionalContext, or None; and the event that logs the quotation (`procedures.
    quotation`), to record with the call in one batch, or none. As for PreToolUse, only a
    daemon answers within a tool hook's budget."""
    if not settings(guard)["inject"]:
        return None, []
    req = {"op": "procedure", "project": ev["project"], "fingerprint": ev["error_fp"],
           "session": ev["session"], "tool": ev.get("tool"),
           "max_chars": hookconf.ADVICE_CHARS}
    result = ask(req, guard, reserve=RECORD_RESERVE)
    if not result or not result.get("text"):
        return None, []
    from brainbox.procedures import quotation
    from brainbox.recorder import normalize_many

    quoted, bad = normalize_many([quotation(ev, result["procedure"])])
    for _, msg in bad:
        log_failure(*guard.who, f"quotation not logged: {msg}")
    return json.dumps({"hookSpecificOutput": {"hookEventName": event,
                                              "additionalContext": result["text"]}},
                      ensure_ascii=False), quoted


RECORD_RESERVE = 0.1  # s of a failed call's budget kept for recording it after asking


def ask(req: dict, guard, reserve: float = 0.05) -> dict | None:
    """The daemon's answer; without one, start it and answer in-process (if time allows).
    `reserve`: the seconds of the budget the daemon's answer must leave."""
    if guard.service is not None:  # running inside the daemon
        answer = guard.service.handle(dict(req, db=guard.service.db))
        return answer.get("result") if answer and answer.get("ok") else None

    if guard.daemon_state == "absent":  # the handoff found no daemon a moment ago
        guard.spawn_daemon = True
    elif hookconf.enabled("daemon") and guard.daemon_state != "timeout":
        req = dict(req, db=paths.db_path())
        answer = client.request(req, timeout=max(0.01, guard.remaining() - reserve))
        if answer is not None:
            if answer.get("ok"):
                return answer.get("result")
        else:
            guard.spawn_daemon = True  # started once this hook has answered (or given up)
    if guard.remaining() < 0.3 or guard.local is None:
        return None
    service = guard.local()
    try:
        answer = service.handle(dict(req, db=service.db))
    finally:
        safe(service.close)
    return answer.get("result") if answer.get("ok") else None


# --------------------------------------------------------------------------- feedback


PENDING_BATCHES = 50  # per session, the newest kept
PENDING_MAX_BYTES = 256 << 10  # past this the pending file is cut to its newest batches


def session_file(session: str) -> str:
    """`sessions/<id>.jsonl`: the id itself when it is a plain name (Claude's and Codex's
    are UUIDs), else a hash of it (hashlib costs ~5 ms of import on the prompt path). The
    same name with `.json` is the previous format (one object), still read at Stop."""
    if 0 < len(session) <= 80 and session.replace("-", "").replace("_", "").isalnum() \
            and session.isascii():
        name = session
    else:
        import hashlib

        name = "h-" + hashlib.sha1(session.encode("utf-8", "replace")).hexdigest()[:24]
    return os.path.join(paths.home(), "sessions", f"{name}.jsonl")


def remember(session: str, batch: dict) -> None:
    """Append one prompt's suggestions to the session's pending file (one write)."""
    path = session_file(session)
    line = (json.dumps(batch, ensure_ascii=False) + "\n").encode("utf-8", "replace")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    try:
        fd = os.open(path, flags, 0o600)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, flags, 0o600)
    try:
        os.write(fd, line)
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if size > PENDING_MAX_BYTES:
        _trim_pending(path)


def _trim_pending(path: str) -> None:
    """Keep the newest PENDING_BATCHES lines (rare: a long session with no Stop)."""
    with open(path, "rb") as fh:
        lines = fh.read().splitlines(keepends=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as fh:
        fh.writelines(ln for ln in lines[-PENDING_BATCHES:] if ln.endswith(b"\n"))
    os.replace(tmp, path)


def _read_pending(path: str, legacy: bool) -> list:
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    if legacy:  # the previous format, `.json`: {"session", "batches": [...]}
        try:
            data = json.loads(text)
        except ValueError:
            return []
        batches = data.get("batches") if isinstance(data, dict) else None
        return batches if isinstance(batches, list) else []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line torn by a crash
    return out


def peek_pending(session: str | None = None) -> list[dict]:
    """Every session's pending suggestions (or `session`'s), read without claiming them
    (`brainbox log`): each batch with its `session` (the file's name when an older batch
    has none)."""
    folder = os.path.join(paths.home(), "sessions")
    if session is not None:
        names = [os.path.basename(session_file(session))]
    else:
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".jsonl"))
        except OSError:
            return []
    out = []
    for name in names:
        try:
            batches = _read_pending(os.path.join(folder, name), legacy=False)
        except OSError:
            continue
        for b in batches:
            if isinstance(b, dict) and b.get("items"):
                out.append(dict(b, session=b.get("session") or session or name[:-6]))
    return out


def take_pending(session: str) -> list[dict]:
    """Claim (rename) and read the session's pending suggestions; [] when none."""
    path = session_file(session)
    batches: list = []
    for name in (path[:-1], path):  # the previous `.json`, then `.jsonl`
        claimed = f"{name}.scoring.{os.getpid()}"
        try:
            os.rename(name, claimed)
        except OSError:
            continue
        try:
            batches.extend(_read_pending(claimed, legacy=name != path))
        except OSError:
            pass
        finally:
            safe(os.unlink, claimed)
    return [b for b in batches[-PENDING_BATCHES:]
            if isinstance(b, dict) and (b.get("items") or b.get("ctx"))]


def _on_stop(ev: dict, guard) -> None:
    from brainbox import store
    from brainbox.events import normalize
    from brainbox.feedback import decisions, score

    batches = take_pending(ev["session"])
    if batches:
        conn = guard.conn or store.connect()
        try:
            start = min(int(b.get("after_id") or 0) for b in batches)
            events = store.session_events(conn, ev["session"], after=start)
        finally:
            if conn is not guard.conn:
                conn.close()
        by_project: dict[str, list[dict]] = {}
        for b in batches:
            by_project.setdefault(b.get("project") or ev["project"], []).append(b)
        feedback = []
        for project, group in by_project.items():
            items, reward = score(group, events)
            feedback.append(dict(normalize({
                "session": ev["session"], "cwd": project, "project": project,
                "kind": "feedback", "at": ev["at"],
                "meta": {"op": "feedback", "items": items, "reward": reward,
                         "suggestions": len(group), "decisions": decisions(group, events)},
            }), source="hook"))
        record(feedback, guard)
        fold(guard)


def fold(guard) -> None:
    """Fold the log forward: through the daemon when one runs, else in-process."""
    if guard.service is not None:  # running inside the daemon
        guard.service.handle({"op": "sync"})
        return

    if hookconf.enabled("daemon") and guard.daemon_state not in ("absent", "timeout"):
        answer = client.request({"op": "sync", "db": paths.db_path()},
                                timeout=max(0.01, guard.remaining() - 0.05))
        if answer is not None and answer.get("ok"):
            return
    if guard.remaining() < 0.3 or guard.local is None:
        return
    service = guard.local()
    try:
        service.op_sync({})
    finally:
        safe(service.close)
