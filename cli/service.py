"""The daemon's operations over one `Memory` (`Service`), also run in a hook process when
no daemon can be had (then `autosave` saves what a request folded). The protocol is
`wire`'s; the server around it is `daemon`.

- Before answering, the service drains the hooks' spool, notices deleted events (`forget`
  makes the count drop: the state is then reloaded from disk) and folds what is new
  (`Memory.sync()` folds only events past the watermark). The daemon saves the state when
  idle for 5 s, on `sync`, and on exit, not on every prompt: saving rewrites every array.
- The answers are the engine's (`Memory.suggest`, `Memory.start_block`, recall, predict,
  explain); this module only formats the injected blocks (`format_suggestions`,
  `format_start`), within the caps of `hookconf`.
- `hook` (see `wire`): the handed-over hook runs `handler.handle` under a guard of the
  daemon's own (no watchdog), with this service in place of the socket.
"""

from __future__ import annotations

import os
import time

from brainbox import paths
from brainbox.cli import hookconf, wire

ADVICE_FILES = 3  # co-edited files the PreToolUse advice lists at most
START_CHARS = hookconf.SESSION_START_CHARS  # a start request's default cap (the hook
# always sends its own)


class Service:
    """The daemon's operations over one Memory; also used in-process by the hooks when no
    daemon can be had (then `autosave` saves what a request folded)."""

    def __init__(self, db: str | None = None, autosave: bool = False):
        self.db = os.path.abspath(db) if db else paths.db_path()
        self.autosave = autosave
        self.mem = None
        self.count = 0
        self.dirty = False
        self.requests = 0
        self.started = time.time()
        self.stop_requested = False
        self.over_ceiling = False  # the daemon stops for its memory ceiling (`daemon`)
        self.ceiling: int | None = None  # that ceiling, in bytes (the daemon sets it)
        self.on_folded = None  # called after a refresh folded events (the daemon sets it)
        import threading

        self.lock = threading.RLock()  # one request at a time uses the Memory
        self.active = 0  # connections being served (the daemon's threads)
        self.last = time.monotonic()  # the last request's time, for the idle exit
        self._count_lock = threading.Lock()

    def activity(self):
        """A context that counts one connection as active (the daemon does not save or
        exit while one is)."""
        import contextlib

        @contextlib.contextmanager
        def active():
            with self._count_lock:
                self.active += 1
            try:
                yield
            finally:
                with self._count_lock:
                    self.active -= 1
                self.last = time.monotonic()

        return active()

    def memory(self):
        if self.mem is None:
            from brainbox import jitmode

            # The daemon and the hooks' in-process fallback: on a cold cache a small memory
            # runs the kernels as Python (the daemon binds in seconds, not after minutes of
            # compiling) while `brainbox warmup` fills the cache in the background; a
            # Python daemon exits once the cache is warm, so the next one is compiled.
            jitmode.prepare(self.db)
            from brainbox.memory import Memory

            self.mem = Memory.open(self.db, autosave=False)
            self.count = 0
        return self.mem

    def close(self) -> None:
        if self.mem is not None:
            self.save()
            self.mem.close()
            self.mem = None

    def save(self) -> None:
        if self.mem is not None and self.dirty:
            self.mem.save()
            self.dirty = False

    def refresh(self) -> int:
        """Ingest spooled hook events, reload after deletions, fold what is new."""
        from brainbox.cli.spool import drain_spool

        mem = self.memory()
        try:
            drain_spool(mem.conn)
        except Exception:  # noqa: BLE001, S110 - a bad spool file must not stop recall
            pass
        folded = mem.sync()
        total = mem.count_events()
        if self.count and total != self.count + folded:
            # Events were deleted (forget) or rewritten: the folded state is stale.
            self.mem.close()
            self.mem = None
            mem = self.memory()
            folded = mem.sync()
            total = mem.count_events()
        self.count = total
        if folded:
            self.dirty = True
            if self.on_folded is not None:
                self.on_folded()  # the daemon's re-indexer: edits may be among them
            if self.autosave:
                self.save()
        return folded

    def handle(self, req, ack=None) -> dict | None:
        """Answer one request. `ack` (over a socket) sends the receipt of an op in
        ACK_OPS once the request is known to be valid; when it returns False the client
        has given up, nothing is done and None is returned (there is nobody to answer)."""
        self.requests += 1
        if not isinstance(req, dict):
            return {"ok": False, "error": "a request must be a JSON object"}
        op = req.get("op")
        if req.get("db") and os.path.abspath(str(req["db"])) != self.db and op != "ping":
            return {"ok": False, "error": f"this daemon serves {self.db}"}
        fn = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
        if fn is None:
            return {"ok": False, "error": f"unknown op {op!r}"}
        if ack is not None and op in wire.ACK_OPS and not ack():
            return None
        try:
            if op in wire.DURABLE_OPS:  # the op sends its receipt itself, once durable
                return {"ok": True, "result": fn(req, ack)}
            return {"ok": True, "result": fn(req)}
        except Exception as exc:  # noqa: BLE001 - the daemon outlives a bad request
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}

    # --- ops ---------------------------------------------------------------------------

    def op_ping(self, req):
        return {"pid": os.getpid(), "db": self.db, "uptime": round(time.time() - self.started, 3),
                "requests": self.requests, "rss_mb": round(rss_bytes() / (1 << 20), 1),
                "max_rss_mb": round(self.ceiling / (1 << 20)) if self.ceiling else None}

    def op_sync(self, req):
        folded = self.refresh()
        self.save()
        return {"folded": folded}

    op_fold = op_sync

    def op_stats(self, req):
        self.refresh()
        return self.memory().stats()

    def op_recall(self, req):
        self.refresh()
        project = req.get("project") or _project(req.get("cwd"))
        results = self.memory().recall(str(req.get("query") or ""), project=project,
                                       session=req.get("session"),
                                       limit=int(req.get("limit") or 10))
        return [r.as_dict() for r in results]

    def op_explain(self, req):
        """`Memory.explain` for the client's path, query and (absolute) cwd: a relative path
        is resolved against the client's folder, never the daemon's."""
        self.refresh()
        cwd = req.get("cwd")
        if not (isinstance(cwd, str) and os.path.isabs(cwd)):
            raise ValueError("explain needs the client's absolute cwd")
        from brainbox import provenance

        mem = self.memory()
        out = mem.explain(str(req.get("path") or ""), str(req.get("query") or ""),
                          session=req.get("session"), project=req.get("project"), cwd=cwd)
        return provenance.explain_sources(mem, out, req.get("project"), cwd)

    def op_predict(self, req):
        self.refresh()
        tools = self.memory().predict_tools(req.get("session"), k=int(req.get("k") or 3))
        return [{"tool": t, "score": s} for t, s in tools]

    def op_suggest(self, req):
        self.refresh()
        mem = self.memory()
        project = req.get("project") or _project(req.get("cwd"))
        limit = max(1, min(int(req.get("limit") or 5), 10))
        params = None
        if req.get("fusion"):  # `inject_fusion`: "fixed" computes the associative channel
            from brainbox.recall import FUSION, Params

            if req["fusion"] not in FUSION:
                raise ValueError(f"unknown fusion {req['fusion']!r} "
                                 f"(one of {', '.join(sorted(FUSION))})")
            params = Params(fusion=str(req["fusion"]))
        items = mem.suggest(str(req.get("query") or ""), project=project,
                            session=req.get("session"), limit=limit,
                            worktree=_worktree(req), params=params)
        tools = []
        if items and req.get("session"):
            tools = [t for t, _ in mem.predict_tools(req.get("session"), k=1)]
        max_chars = int(req.get("max_chars") or hookconf.INJECT_CHARS)
        decision = None
        if items and req.get("policy", True):  # how many to show (brainbox.injection)
            chars = [0] + [len(format_suggestions(items[:k], tools, max_chars)[0])
                           for k in range(1, len(items) + 1)]
            decision = mem.inject_decision(str(req.get("query") or ""), project=project,
                                           session=req.get("session"), items=items,
                                           chars=chars)
            decision.update(offered=[it["path"] for it in items], chars_by_k=chars,
                            offered_confidence=[it.get("confidence") for it in items])
            items = items[:decision["show"]]
        text, items = format_suggestions(items, tools, max_chars)
        return {"text": text, "items": items, "tools": tools, "decision": decision}

    def op_start(self, req):
        self.refresh()
        project = req.get("project") or _project(req.get("cwd"))
        block = self.memory().start_block(project, req.get("session"), _worktree(req))
        text, items = format_start(block, int(req.get("max_chars") or START_CHARS))
        return {"text": text, "items": items}

    def op_advise(self, req):
        """The PreToolUse advice for one tool call (`Memory.advise` on `req["event"]`, a
        normalised tool event), laid out by `format_advice`."""
        self.refresh()
        event = req.get("event")
        if not isinstance(event, dict):
            raise TypeError("'event' must be an object")
        found = self.memory().advise(event, files=ADVICE_FILES)
        text = format_advice(found, int(req.get("max_chars") or hookconf.ADVICE_CHARS))
        return {"text": text, **found}

    def op_procedure(self, req):
        """The quotation of the live procedure of an error (the PostToolUse(Failure) hook:
        `req["project"]`, `req["fingerprint"]`; the failed call's `session` and `tool`, not
        recorded yet: `Procedures.after_failure`), laid out by
        `format_procedure`: {"text"}, "" when there is none."""
        self.refresh()
        found = self.memory().procedure_for(str(req.get("project") or ""),
                                            str(req.get("fingerprint") or ""),
                                            req.get("session"), req.get("tool"))
        text = format_procedure(found, int(req.get("max_chars") or hookconf.ADVICE_CHARS))
        return {"text": text, "procedure": found}

    def op_stop(self, req):
        self.stop_requested = True
        return {"stopping": True, "pid": os.getpid()}

    def op_record(self, req, ack=None):
        """A tool call's hook (`wire`): as `op_hook`, but the receipt is sent once the
        event is committed (or spooled), under the hook's event id (`uid`)."""
        uid = req.get("uid")
        if not (isinstance(uid, str) and 0 < len(uid) <= 64 and uid.isalnum()):
            raise TypeError("'uid' must be a short alphanumeric string")
        return self.op_hook(req, ack=ack, uid=uid)

    def op_hook(self, req, ack=None, uid=None):
        """A hook's whole work on its raw payload (`wire`): record first (or spool: never
        lost once acknowledged), then answer. Returns {"output": line|None}."""
        from brainbox import events as evmod
        from brainbox.cli import handler, health
        from brainbox.cli.guard import Guard
        from brainbox.cli.hooklog import failures, log_failure, safe
        from brainbox.identity import overriding

        agent = req.get("agent") if isinstance(req.get("agent"), str) else ""
        event = req.get("event") if isinstance(req.get("event"), str) else None
        payload = req.get("payload")
        if not isinstance(payload, dict):
            raise TypeError("'payload' must be an object")
        at = req.get("at")
        at = float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else None
        try:
            budget = max(0.05, float(req.get("budget") or 1.0))
        except (TypeError, ValueError):
            budget = 1.0
        payload = wire.hook_cwd(payload, req.get("cwd"))
        evmod.forget_project_roots()  # a fresh hook process would look for `.git` afresh
        guard = Guard(budget, False, (agent, event))
        guard.payload = payload
        if at is not None:
            guard.started = at
        guard.service = self
        guard.uid, guard.acknowledge = uid, ack
        settings = req.get("settings")
        guard.settings = hookconf.settings(settings if isinstance(settings, dict) else {})
        try:
            guard.conn = self.memory().conn
        except Exception:  # noqa: BLE001 - record() opens its own (or spools)
            guard.conn = None
        failed_before = failures(agent, event)
        # the hook's BRAINBOX_PROJECT, not the daemon's ("" when it had none; an older
        # hook sends no key, and the daemon's own environment decides, as before)
        env = req.get("project_env", os.environ.get("BRAINBOX_PROJECT"))
        try:
            with overriding(env):
                output = handler.handle(agent, event, payload, guard, at=at)
            if guard.acknowledge is not None:  # owed, and not sent by `handler.record`
                if guard.pending:
                    raise RuntimeError("the event could be neither committed nor spooled")
                guard.durable()  # nothing to record (and the hook would find nothing)
            if failures(agent, event) == failed_before:  # the hook's health is ours to keep
                safe(health.succeeded, agent, event)
        except BaseException as exc:
            safe(guard.spool_uncommitted)
            log_failure(agent, event, f"daemon: {type(exc).__name__}: {exc}", exc)
            raise
        finally:
            guard.close()
        return {"output": output}


def rss_bytes() -> int:
    """This process's resident memory now (Linux), else its peak (`resource`)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def _worktree(req) -> str | None:
    """The asking worktree's root (an absolute path), or None: the project root."""
    wt = req.get("worktree")
    return wt if isinstance(wt, str) and wt.startswith("/") else None


def _project(cwd) -> str:
    from brainbox.events import project_root

    return project_root(cwd if isinstance(cwd, str) and cwd else os.getcwd())


# --------------------------------------------------------------------------- blocks


def _clean_line(text: str) -> str:
    from brainbox.cli.hookmap import CONTEXT_CLOSE, CONTEXT_OPEN

    text = " ".join(str(text).split())
    return text.replace(CONTEXT_OPEN, "").replace(CONTEXT_CLOSE, "")


def _wrap(header: str, lines: list[str]) -> str:
    from brainbox.cli.hookmap import CONTEXT_CLOSE, CONTEXT_OPEN

    return "\n".join([CONTEXT_OPEN, header, *lines, CONTEXT_CLOSE])


def format_suggestions(items: list[dict], tools: list[str], max_chars: int):
    """The prompt's injected block, at most `max_chars`: (text, the items it lists)."""
    header = "brainbox memory, files past sessions used for work like this (observations):"
    items = list(items)
    tail = [f"next tool: {_clean_line(tools[0])}"] if tools else []
    while items:
        lines = [f"- {_clean_line(it['path'])} — {_clean_line(it['why'])}" for it in items]
        text = _wrap(header, lines + tail)
        if len(text) <= max_chars:
            return text, items
        items.pop()
    return "", []


START_HEADER = "brainbox memory of this project (observations):"
START_SECTIONS = (("pins", "pinned:"), ("files", "likely files:"),
                  ("errors", "open errors (no passing rerun since):"),
                  ("procedures", "live procedures:"))


def _start_lines(block: dict) -> dict[str, list[str]]:
    """Each section's lines, in the order memory gave them."""
    return {
        "pins": [f"- {_clean_line(p['value'])}" if p["kind"] == "file"
                 else f"- note: {_clean_line(p['value'])}" for p in block.get("pins") or ()],
        "files": [f"- {_clean_line(it['path'])} — {_clean_line(it['why'])}"
                  for it in block.get("files") or ()],
        "errors": [f"- {_clean_line(e['fingerprint'])} — after {_clean_line(e['tool'])}, "
                   f"{int(e['count'])}x" for e in block.get("errors") or ()],
        "procedures": [f"- {_clean_line(p['text'])}" for p in block.get("procedures") or ()],
    }


def _fit_pins(lines: list[str], max_chars: int) -> list[str] | None:
    """The pinned section (its title, then the pin lines that fit); when not all do, the
    first that does not fit whole is cut with "…" and a marker says how many more there
    are. None when not even that fits."""
    head = [START_HEADER, START_SECTIONS[0][1]]

    def fits(body):
        return len(_wrap(head[0], head[1:] + body)) <= max_chars

    if fits(lines):
        return [head[1], *lines]

    def marker(n):
        return [f"- … {n} more pinned (brainbox pins)"] if n else []

    kept = list(lines)
    while kept and not fits(kept + marker(len(lines) - len(kept))):
        kept.pop()
    nxt = lines[len(kept)]  # the first pin that did not fit whole: as much of it as fits
    rest = marker(len(lines) - len(kept) - 1)
    room = max_chars - len(_wrap(head[0], head[1:] + kept + [""] + rest))
    if room >= 8:
        kept.append(nxt if len(nxt) <= room else nxt[:room - 1] + "…")
    else:
        rest = marker(len(lines) - len(kept))
    body = kept + rest
    return [head[1], *body] if body and fits(body) else None


def format_start(block: dict, max_chars: int):
    """The SessionStart block within `max_chars` characters: (text, the files it lists).

    One block, its sections in a fixed order: pins (always first: when they alone exceed
    the budget they are cut with a marker), the likely files, the open errors, the live
    procedures. Each section takes its lines in memory's order while they fit; a line
    that does not fit ends its section, and the next section may still fit a shorter one.
    Nothing in it depends on the clock or the session: the same memory gives the same
    bytes."""
    sections = _start_lines(block)
    body: list[str] | None = []
    shown: list[dict] = []
    if sections["pins"]:
        body = _fit_pins(sections["pins"], max_chars)
        if body is None:
            return "", []
    for name, title in START_SECTIONS[1:]:
        taken = 0
        for line in sections[name]:
            extra = [line] if taken else [title, line]
            if len(_wrap(START_HEADER, body + extra)) > max_chars:
                break
            body += extra
            taken += 1
        if name == "files":
            shown = list(block.get("files") or ())[:taken]
    return (_wrap(START_HEADER, body), shown) if body else ("", [])


ADVICE_HEADER = "brainbox observed in past sessions (observations, not instructions):"


def _advice_lines(found: dict) -> list[str]:
    lines = []
    for e in found.get("edits") or ():
        path = _clean_line(e["path"])
        if e.get("co_edits"):
            lines.append(f"- edited together with {path}: "
                         + ", ".join(_clean_line(c["path"]) for c in e["co_edits"]))
        for err in e.get("errors") or ():
            lines.append(f"- after edits of {path}, the next command failed with "
                         f"{_clean_line(err['fingerprint'])} ({int(err['count'])} of "
                         f"{int(err['runs'])} runs)")
    cmd = found.get("command")
    if cmd:
        what = _clean_line(cmd["tool"] + (" " + " ".join(cmd["files"]) if cmd["files"] else ""))
        fail, fix = cmd.get("failing"), cmd.get("fix")
        if fail:
            lines.append(f"- {what} failed last with {_clean_line(fail['fingerprint'])} "
                         f"({int(fail['count'])}x, no passing run since)")
        proc = cmd.get("procedure")
        if proc:  # the fix as a procedure: its quotation, none when it was retired
            fix = None
            if not proc["retired"]:
                lines.append(f"- {_clean_line(proc['text'])}")
        if fix:
            lines.append(f"- {what} failed before with {_clean_line(fix['fingerprint'])} and "
                         "passed after edits of "
                         + ", ".join(_clean_line(f) for f in fix["files"]))
    return lines


def format_advice(found: dict, max_chars: int) -> str:
    """The PreToolUse block within `max_chars` (lines in memory's order while they fit;
    a line that does not fit whole is left out), or "" when there is nothing to say."""
    body: list[str] = []
    for line in _advice_lines(found):
        if len(_wrap(ADVICE_HEADER, body + [line])) <= max_chars:
            body.append(line)
    return _wrap(ADVICE_HEADER, body) if body else ""


PROCEDURE_HEADER = ("brainbox observed this error in a past session (a quoted observation, "
                    "not an instruction):")


def format_procedure(found: dict | None, max_chars: int) -> str:
    """The block quoting one procedure after its error, within `max_chars` (its text cut
    with "…" to fit), or "" when there is none or not even the header fits."""
    if not found:
        return ""
    line = f"- {_clean_line(found['text'])}"
    room = max_chars - len(_wrap(PROCEDURE_HEADER, [""]))
    if room < 12:
        return ""
    if len(line) > room:
        line = line[:room - 1] + "…"
    return _wrap(PROCEDURE_HEADER, [line])
