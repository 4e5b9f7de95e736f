"""Procedures (DESIGN §4.9, issue 18 item 4): what past sessions did that worked, mined
deterministically from the log and quoted to later sessions as observations.

Two kinds, both folded event by event (`State.encode` calls :meth:`Procedures.observe`
for every tool event, right after `Advice.observe`), saved with the state; folding in any
batches and `rebuild()` give the same, since nothing waits for a session's end (a Stop
is recorded after every answer, so "the end" is not a moment the log marks reliably).

**Error-fix procedures**, keyed by (project, error fingerprint). The miner is
`brainbox.advice`'s fix: a command (its tool key and target files, `advice.command_key`:
the same program and target) fails with a fingerprint, the project edits files, and the
same command then passes (exit code 0 or none, no error). `Advice.observe` returns that
fix; here it becomes (or renews) the procedure of its fingerprint: the command, the
files edited in between, how many times it was seen. An error nothing identifies
(`fingerprint.UNKNOWN_FINGERPRINT`, ``GENERIC_ERROR|unknown``) keys no procedure: it
would be quoted after every unrecognised failure (on the shared Claude Code transcripts
all 3 fixes mined before this rule were of it, two of them `git` and `mix` runs with no
target, the failing and the passing run different subcommands).

**Outcomes.** A live procedure is *shown* to a session when the PostToolUse(Failure)
hook quotes it after one of the session's tool calls failed with its fingerprint: the
hook asks before recording the call (`Procedures.after_failure`, the procedure as that
failure leaves it) and appends the quotation event (`quotation`: a `feedback` event,
`meta.op` "quoted", of the session, naming the fingerprint) in the same batch as the tool
event, so no extra commit; folding it (`quoted`) opens the exposure. A failure nobody
quoted (no daemon, injection off, the hook out of time) shows nothing, so the counts are
exactly those of what was printed. (Before the quotation events, a logged failure counted
as shown; a log from then replays with fewer outcomes.) From then on, in that session:
- an edit of one of the procedure's files marks it *followed*;
- a passing run of the procedure's program (its tool key) counts it **helpful** and
  closes the exposure;
- a run of its program failing with the same fingerprint *after it was followed* counts
  it **harmful** (the error recurred after following it) and closes the exposure; the
  failure itself shows it again when it is still live (a new exposure, not followed).
A run that fails before anything was followed counts nothing. Exposures stay open until
closed (at most `MAX_SESSIONS` sessions, the oldest dropped).

**Retirement.** A procedure is retired once ``harmful >= RETIRE_HARMFUL`` (2) and
``harmful > helpful``: it kept failing more often than it helped. A retired procedure is
listed (with its counts) but never quoted nor shown. A later fix of its fingerprint with
other files revives it as a new procedure (counts reset); one with the same files leaves
it retired. A live procedure's fix seen again with other files takes those (the latest
fix), its counts kept.

**Workflows**, per project: a session's *steps* are its successful edits (one step per
file, ``edit <path>``) and runs (``run <tool key>``, pass or fail), in order, a step equal
to the previous one collapsed; reads and searches are not steps. A workflow is
`WORKFLOW_LEN` (3) consecutive steps with at least one edit, and it is listed once it
occurred in at least `WORKFLOW_SESSIONS` (3) distinct sessions of the project (counted
up to `MAX_GRAM_SESSIONS` sessions). Bounds: `MAX_GRAMS` candidate sequences per project
(the least recently seen dropped), `MAX_PER_PROJECT` error-fix procedures per project.

Standard library only.
"""

from __future__ import annotations

from brainbox.fingerprint import UNKNOWN_FINGERPRINT

RETIRE_HARMFUL = 2
MAX_PER_PROJECT = 64
MAX_SESSIONS = 256
MAX_FILES = 20
WORKFLOW_LEN = 3
WORKFLOW_SESSIONS = 3
MAX_GRAM_SESSIONS = 32
MAX_GRAMS = 512


def _put(d: dict, key, value, limit: int) -> None:
    d.pop(key, None)
    d[key] = value
    while len(d) > limit:
        del d[next(iter(d))]


def command_text(tool: str, target) -> str:
    """A command as the agent would type it, near enough: `Bash:pytest` and its target
    files give `pytest tests/test_x.py`."""
    prog = tool.split(":", 1)[1] if tool.startswith("Bash:") else tool
    return " ".join([prog, *target])


class Procedures:
    def __init__(self):
        # project -> {fp: [tool, [target], [files], seen, helpful, harmful, retired]}
        self.fixes: dict[str, dict[str, list]] = {}
        self.exposed: dict[str, list] = {}  # session -> [project, {fp: followed}]
        self.steps: dict[str, list] = {}  # session -> [project, [last steps]]
        self.grams: dict[str, dict[str, list]] = {}  # project -> {"a\tb\tc": [sessions]}

    # --- folding ------------------------------------------------------------------------

    def observe(self, session: str, project: str, tool: str, action, files, error_fp,
                exit_code, fix) -> None:
        """One tool event (module docstring); `fix` is what `Advice.observe` returned for
        it: (command key's tool, target files, fingerprint, edited files) or None."""
        files = list(files or ())
        if action == "edit" and not error_fp:
            self._steps(session, project, [f"edit {f}" for f in files])
        elif action == "run":
            self._steps(session, project, [f"run {tool}"])
        self._outcomes(session, project, tool, action, files, error_fp, exit_code)
        if fix is not None and fix[2] != UNKNOWN_FINGERPRINT:
            self._learn(project, *fix)

    def quoted(self, session: str, project: str, error_fp) -> None:
        """A quotation event (a hook quoted the live procedure of `error_fp` to `session`,
        `quotation`): the procedure is shown there, its exposure opened (not followed)."""
        proc = self.fixes.get(project, {}).get(error_fp or "")
        if proc is None or proc[6]:
            return
        exp = self.exposed.get(session)
        if exp is None or exp[0] != project:
            exp = [project, {}]
        if error_fp not in exp[1]:
            exp[1][error_fp] = False
        _put(self.exposed, session, exp, MAX_SESSIONS)

    def _outcomes(self, session, project, tool, action, files, error_fp, exit_code) -> None:
        exp = self.exposed.get(session)
        if exp is None or exp[0] != project:
            return
        procs = self.fixes.get(project, {})
        for fp in list(exp[1]):
            proc = procs.get(fp)
            if proc is None or proc[6]:
                del exp[1][fp]
                continue
            if action == "edit" and not error_fp:
                if set(files) & set(proc[2]):
                    exp[1][fp] = True
            elif action == "run" and tool == proc[0]:
                if not error_fp and exit_code in (None, 0):
                    proc[4] += 1
                    del exp[1][fp]
                elif error_fp == fp and exp[1][fp]:
                    proc[5] += 1
                    if proc[5] >= RETIRE_HARMFUL and proc[5] > proc[4]:
                        proc[6] = True
                    del exp[1][fp]
        if not exp[1]:
            del self.exposed[session]

    def _learn(self, project, tool, target, fp, edited) -> None:
        procs = self.fixes.setdefault(project, {})
        edited = list(edited)[:MAX_FILES]
        old = procs.get(fp)
        if old is None or (old[6] and sorted(old[2]) != sorted(edited)):
            proc = [tool, list(target), edited, 1, 0, 0, False]
        else:
            proc = old
            proc[3] += 1
            if not proc[6]:
                proc[0], proc[1], proc[2] = tool, list(target), edited
        _put(procs, fp, proc, MAX_PER_PROJECT)

    def _steps(self, session, project, new) -> None:
        row = self.steps.get(session)
        if row is None or row[0] != project:
            row = [project, []]
        grams = self.grams.setdefault(project, {})
        for step in new:
            last = row[1]
            if last and last[-1] == step:
                continue
            last.append(step)
            del last[:-WORKFLOW_LEN]
            if len(last) == WORKFLOW_LEN and any(s.startswith("edit ") for s in last):
                key = "\t".join(last)
                sessions = grams.get(key) or []
                if session not in sessions and len(sessions) < MAX_GRAM_SESSIONS:
                    sessions = [*sessions, session]
                _put(grams, key, sessions, MAX_GRAMS)
        _put(self.steps, session, row, MAX_SESSIONS)

    # --- reading ------------------------------------------------------------------------

    def of(self, project: str) -> list[dict]:
        """The project's procedures, live and retired: error fixes (most helpful net
        first, then most seen, ties by fingerprint) then workflows (most sessions first,
        ties by steps)."""
        out = [_as_dict(fp, p) for fp, p in self.fixes.get(project, {}).items()]
        out.sort(key=lambda d: (d["retired"], -(d["helpful"] - d["harmful"]), -d["seen"],
                                d["fingerprint"]))
        flows = [{"kind": "workflow", "steps": key.split("\t"), "sessions": len(s),
                  "retired": False}
                 for key, s in self.grams.get(project, {}).items()
                 if len(s) >= WORKFLOW_SESSIONS]
        flows.sort(key=lambda d: (-d["sessions"], d["steps"]))
        return out + flows

    def live(self, project: str, fingerprint: str) -> dict | None:
        """The live error-fix procedure of `fingerprint` in `project`, or None."""
        p = self.fixes.get(project, {}).get(fingerprint)
        return None if p is None or p[6] else _as_dict(fingerprint, p)

    def after_failure(self, project: str, fingerprint: str, session: str | None = None,
                      tool: str | None = None) -> dict | None:
        """The live procedure of `fingerprint` as it will stand once a failed call of `tool`
        in `session` with that error, not yet folded, is (the hook asks before it records
        the call, to log the quotation in the same batch): a followed exposure's failure
        counts it harmful, and may retire it (then None). `live` without a session."""
        p = self.fixes.get(project, {}).get(fingerprint)
        if p is None or p[6]:
            return None
        exp = self.exposed.get(session) if session else None
        if exp is not None and exp[0] == project and exp[1].get(fingerprint) and tool == p[0]:
            harmful = p[5] + 1
            if harmful >= RETIRE_HARMFUL and harmful > p[4]:
                return None
            return _as_dict(fingerprint, [*p[:5], harmful, p[6]])
        return _as_dict(fingerprint, p)

    # --- persistence --------------------------------------------------------------------

    def to_json(self) -> dict:
        return {"fixes": self.fixes, "exposed": [[s, *e] for s, e in self.exposed.items()],
                "steps": [[s, *r] for s, r in self.steps.items()], "grams": self.grams}

    @classmethod
    def from_json(cls, data) -> Procedures:
        out = cls()
        data = data or {}
        out.fixes = {p: {fp: [e[0], list(e[1]), list(e[2]), int(e[3]), int(e[4]), int(e[5]),
                              bool(e[6])] for fp, e in v.items()}
                     for p, v in (data.get("fixes") or {}).items()}
        out.exposed = {s: [p, {fp: bool(f) for fp, f in e.items()}]
                       for s, p, e in data.get("exposed") or ()}
        out.steps = {s: [p, list(st)] for s, p, st in data.get("steps") or ()}
        out.grams = {p: {k: list(s) for k, s in v.items()}
                     for p, v in (data.get("grams") or {}).items()}
        return out


def _as_dict(fp: str, p: list) -> dict:
    return {"kind": "error_fix", "fingerprint": fp, "tool": p[0], "target": list(p[1]),
            "files": list(p[2]), "command": command_text(p[0], p[1]), "seen": p[3],
            "helpful": p[4], "harmful": p[5], "retired": p[6]}


def quotation(ev: dict, p: dict) -> dict:
    """The event that logs the quotation of procedure `p` after the failed tool event `ev`
    (a raw record, to normalise): a `feedback` event of `ev`'s session, `meta.op`
    "quoted", naming the procedure by its fingerprint, with its command and files."""
    return {"session": ev["session"], "project": ev["project"], "cwd": ev.get("cwd"),
            "at": ev.get("at"), "kind": "feedback",
            "meta": {"op": "quoted", "fingerprint": p["fingerprint"], "tool": p["tool"],
                     "command": p["command"], "files": list(p["files"])}}


def quote(p: dict) -> str:
    """One procedure as a quoted observation from a past session (never an instruction)."""
    if p["kind"] == "workflow":
        return (f"in {p['sessions']} earlier sessions the agent did, in order: "
                + " → ".join(p["steps"]))
    return (f"in an earlier session, after {p['fingerprint']}, `{p['command']}` passed after "
            f"edits of {', '.join(p['files'])} (since: helped {p['helpful']}, "
            f"misled {p['harmful']})")
