"""The user's corrections of what was injected (issue 18 item 3): `brainbox feedback PATH
--useful | --wrong | --never | --undo`, and the injection log `brainbox log` lists.

Choices:
- Event-sourced, like the pins: a correction is a `feedback` event (session `SESSION`,
  `meta.op` "correction", `meta.verdict` one of VERDICTS, `files` the one file,
  `meta.query` the query it is about when given, a label for the learned fusion), folded
  by `State._special` into `State.corrections` (a `Board`) and saved with the state;
  `rebuild()` replays it. No migration. `forget PATH` deletes a file's corrections with
  everything else that names it.
- `useful` resets the file's ignore streak (as a suggestion used). `wrong` is an ignored
  suggestion, and a suggestion is penalised once: the streak grows by one and the
  association that produced the file's latest injection (`meta.via`, found by
  `feedback` in the log and written in the event, so the fold needs no lookup) is
  weakened by the anti-recall rule `w <- max(0.1, w * 0.9^streak)`. An injection is the
  file's showing in one session (the Stop hook scores a session's showings of a file as
  one item), named by the session (`meta.injection`). A second `wrong` of the same
  injection is refused; a `wrong` while it is pending spares it the ignored penalty when
  the Stop hook scores it; a `wrong` of an injection already scored as ignored is kept
  as a label (`meta.penalised` false) and weakens nothing more.
- Both `useful` and `wrong` are labels for the learned fusion (`brainbox.learning.label`):
  the event carries the channels that ranked the file in its latest injection (`meta.
  channels`, from the log, so the fold needs no lookup); `useful` credits them as a file
  the session touched, `wrong` takes the same credit away. Once per injection and verdict
  (`Board.useful`, `Board.wronged`): a repeated `useful` carries no channels.
- `never` excludes the file from injection in its project (the prompt's list, the
  SessionStart block, pins included, and the PreToolUse advice) until `undo`; recall
  itself (`brainbox recall`, MCP `recall`) still ranks it: a query asks, an injection
  is unasked.
"""

from __future__ import annotations

from brainbox import BrainboxError

SESSION = "brainbox:feedback"
VERDICTS = ("useful", "wrong", "never", "undo")


class FeedbackError(BrainboxError):
    """Input `brainbox feedback` refuses: one line, nothing written."""


def outcome(item: dict) -> str:
    """What became of one scored suggestion: edited, read or ignored."""
    if item.get("edited"):
        return "edited"
    return "read" if item.get("used") else "ignored"


def entries(scored: list[dict], pending: list[dict], session: str | None = None,
            limit: int | None = None) -> list[dict]:
    """The injection log, newest first: one row per file a `feedback` event scored
    (`scored`, those events) and per file of a batch still pending (`pending`, the
    session files' batches, each with its `session`). A row (`kind` "injection"): when it
    was shown (`at`), `session`, `project`, `path`, `rank`, why (`channels`, `via`,
    `confidence`), and its `outcome` (read, edited, ignored, pending); `injection` names
    the showing (its session). The procedures quoted after a failure are rows too (`kind`
    "quotation", `outcome` "quoted", `path` "", with the procedure's `fingerprint`,
    `command` and `files`)."""
    rows = []
    for ev in scored:
        meta = ev.get("meta") or {}
        if session and ev.get("session") != session:
            continue
        if meta.get("op") == "quoted":
            rows.append(_quoted_row(ev, meta))
        if meta.get("op") != "feedback":
            continue
        for it in meta.get("items") or ():
            rows.append(_row(it, ev.get("session"), ev.get("project"),
                             float(it.get("at") or ev.get("at") or 0.0), outcome(it)))
    for b in pending:
        if session and b.get("session") != session:
            continue
        for it in b.get("items") or ():
            rows.append(_row(it, b.get("session"), b.get("project"), float(b.get("at") or 0),
                             "pending"))
    rows.sort(key=lambda r: (-r["at"], r["rank"], r["path"]))
    return rows[:limit] if limit else rows


def _row(it: dict, session, project, at: float, what: str) -> dict:
    return {"kind": "injection", "at": at, "session": session, "project": project,
            "path": it.get("path"), "rank": int(it.get("rank") or 0),
            "channels": dict(it.get("channels") or {}), "via": it.get("via"),
            "confidence": it.get("confidence"), "outcome": what, "injection": session}


def _quoted_row(ev: dict, meta: dict) -> dict:
    """A procedure the PostToolUse(Failure) hook quoted (`procedures.quotation`): when, to
    which session, which procedure (its fingerprint, command and files)."""
    return {"kind": "quotation", "at": float(ev.get("at") or 0.0),
            "session": ev.get("session"), "project": ev.get("project"), "path": "",
            "rank": 0, "channels": {}, "via": None, "confidence": None, "outcome": "quoted",
            "injection": ev.get("session"), "fingerprint": meta.get("fingerprint"),
            "command": meta.get("command"), "files": list(meta.get("files") or ())}


class Board:
    """Each project's exclusions and the injections marked wrong, folded from
    correction events (`apply`)."""

    def __init__(self):
        self.excluded_by: dict[str, dict[str, dict]] = {}  # project -> path -> {id, at}
        self.wronged: set[str] = set()  # "project\0path\0injection"
        self.useful: set[str] = set()  # the same, of the injections labelled useful

    def apply(self, ev: dict, at_id: int) -> None:
        meta = ev.get("meta") or {}
        files = ev.get("files") or []
        if not files:
            return
        project, path, verdict = ev["project"], files[0], meta.get("verdict")
        if verdict == "never":
            self.excluded_by.setdefault(project, {}).setdefault(
                path, {"id": int(ev.get("id", at_id)), "at": float(ev["at"])})
        elif verdict == "undo":
            kept = self.excluded_by.get(project, {})
            kept.pop(path, None)
            if not kept:
                self.excluded_by.pop(project, None)
        elif verdict == "wrong":
            self.wronged.add(wrong_key(project, path, meta.get("injection")))
        elif verdict == "useful" and meta.get("channels"):
            self.useful.add(wrong_key(project, path, meta.get("injection")))

    def excluded(self, project: str) -> dict[str, dict]:
        return self.excluded_by.get(project, {})

    def listing(self, project: str | None = None) -> list[dict]:
        """The exclusions of `project` (every project when None), in exclusion order."""
        out = []
        for where in ([project] if project is not None else sorted(self.excluded_by)):
            for path, x in self.excluded_by.get(where, {}).items():
                out.append({"project": where, "path": path, **x})
        return sorted(out, key=lambda x: x["id"])

    def to_json(self) -> dict:
        return {"excluded": {p: v for p, v in sorted(self.excluded_by.items())},
                "wronged": sorted(self.wronged), "useful": sorted(self.useful)}

    @classmethod
    def from_json(cls, data) -> Board:
        board = cls()
        data = data or {}
        board.excluded_by = {p: {k: dict(v) for k, v in xs.items()}
                             for p, xs in (data.get("excluded") or {}).items()}
        board.wronged = set(data.get("wronged") or ())
        board.useful = set(data.get("useful") or ())
        return board


def advice_without(found: dict, excluded, co_edits: int) -> dict:
    """The PreToolUse advice (`Memory.advise`) with no word of an excluded file: no advice
    on editing one, none in a co-edit list (at most `co_edits` kept), none in a command's
    fix (no fix when none is left; no command advice when nothing is left to say)."""
    if not excluded:
        return found
    edits = []
    for e in found["edits"]:
        co = [c for c in e["co_edits"] if c["path"] not in excluded][:co_edits]
        if e["path"] not in excluded and (co or e["errors"]):
            edits.append(dict(e, co_edits=co))
    known = found["command"]
    if known is not None and known.get("fix"):
        fix = dict(known["fix"], files=[f for f in known["fix"].get("files") or ()
                                        if f not in excluded])
        known = dict(known, fix=fix if fix["files"] else None)
        if not fix["files"]:  # the procedure quoted is that fix
            known.pop("procedure", None)
    if known is not None and not (known.get("fix") or known.get("failing")):
        known = None
    return dict(found, edits=edits, command=known)


def wrong_key(project: str, path: str, injection) -> str:
    return f"{project}\0{path}\0{injection}"


# --- the verbs over a Memory (`brainbox log`, `brainbox feedback`, MCP) -----------------


def injection_log(mem, pending: list[dict] = (), *, session: str | None = None,
                  limit: int | None = None) -> list[dict]:
    """What the prompt hook injected, newest first, with why and what became of it
    (`entries`): the scored suggestions of `mem`'s feedback events and the `pending`
    batches (the session files' suggestions not yet scored)."""
    from brainbox.storage import db

    return entries(db.feedback_events(mem.conn, session), list(pending), session=session,
                   limit=limit)


def exclusions(mem, project: str | None = None, cwd: str | None = None) -> list[dict]:
    """The files `feedback --never` excludes from injection: of the project named, else
    of every project."""
    mem.sync()
    return mem.state.corrections.listing(_named(project, cwd))


def feedback(mem, path: str, verdict: str, *, query: str | None = None,
             project: str | None = None, cwd: str | None = None,
             pending: list[dict] = ()) -> dict:
    """Record the user's verdict on a file memory injects: useful, wrong, never (exclude
    it from injection in its project) or undo (of a never). The file must be one memory
    knows in the project. A `wrong` names the association that produced the file's
    latest injection (in the log, or `pending`) and penalises a suggestion once (module
    docstring). FeedbackError (one line, nothing written) on bad input."""
    import os

    from brainbox.events import normalize
    from brainbox.kernels.codes import FILE

    if verdict not in VERDICTS:
        raise FeedbackError(f"feedback takes one of {', '.join('--' + v for v in VERDICTS)}")
    if not path or not path.strip():
        raise FeedbackError("feedback: the path is empty")
    mem.sync()
    project, rel = mem.file_key(path, _named(project, cwd), cwd)
    if (FILE, project, rel) not in mem.state.res_index:
        raise FeedbackError(f"{path} is not a file memory knows in {project}")
    board = mem.state.corrections
    meta: dict = {"op": "correction", "verdict": verdict}
    if query:
        meta["query"] = " ".join(str(query).split())[:500]
    out = {"project": project, "path": rel, "verdict": verdict}
    if verdict == "undo" and rel not in board.excluded(project):
        raise FeedbackError(f"{rel} is not excluded in {project}")
    if verdict == "never" and rel in board.excluded(project):
        return {**out, "changed": False, **board.excluded(project)[rel]}
    if verdict in ("useful", "wrong"):
        shown = [r for r in injection_log(mem, pending)
                 if r["project"] == project and r["path"] == rel]
        meta["injection"] = shown[0]["injection"] if shown else None
        key = wrong_key(project, rel, meta["injection"])
        if verdict == "wrong" and key in board.wronged:
            raise FeedbackError(f"{rel} is marked wrong already for its latest injection")
        if shown and shown[0]["channels"] and key not in (
                board.wronged if verdict == "wrong" else board.useful):
            meta["channels"] = dict(shown[0]["channels"])  # the label (brainbox.learning)
    if verdict == "wrong":
        if shown and shown[0]["outcome"] == "ignored":  # penalised when it was scored
            meta["penalised"] = False
        meta["via"] = shown[0]["via"] if shown and meta.get("penalised", True) else None
        out["via"] = meta["via"]
    ev = normalize({"session": SESSION, "project": project, "cwd": project,
                    "kind": "feedback", "files": [os.path.join(project, rel)], "meta": meta})
    out["id"] = mem.record_normalized([ev])
    mem.sync()
    return {**out, "changed": True}


def _named(project: str | None, cwd: str | None) -> str | None:
    """A project named by the user, as events store it (absolute, normalised)."""
    import os

    if project is None:
        return None
    return os.path.normpath(os.path.join(os.path.abspath(cwd or os.getcwd()), project))
