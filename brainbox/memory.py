"""`Memory`: the engine's face over one SQLite file.

Recording appends normalised events to the log. Learning is lazy and incremental: the
first read (recall, predict, explain, stats) folds the events past the watermark into the
materialised state and saves it. `rebuild()` recomputes the state from the whole log; a
test asserts that incremental folding and rebuilding give identical matrices and recall.
"""

from __future__ import annotations

import os
import time

from brainbox import BrainboxError, learning, paths, retention, store
from brainbox.events import EventError, normalize, project_root, relative_path
from brainbox.identity import identify
from brainbox.recall import (
    Index,
    Params,
    Result,
    channel_weights,
    predict_tools,
    recall,
    uses_associative,
)
from brainbox.state import ERROR, FILE, KIND_NAMES, TOOL, State
from brainbox.storage import arrays as store_arrays
from brainbox.storage import db as dbmod
from brainbox.storage import queries

SNIPPET_DEPTH = 50  # the code index's best snippets recall's snippet channel ranks files by
START_FILES = 40  # files the SessionStart block may list (its budget decides how many do)
START_ERRORS = 3  # open errors it may list
START_PROCEDURES = 3  # live procedures it may list


class DecayRefused(BrainboxError):
    """A decay would prune more than half of the memory and was not forced."""


class Memory:
    def __init__(self, conn, *, autosave: bool = True, path: str | None = None):
        self.conn = conn
        self.path = path
        self.autosave = autosave
        self._state: State | None = None
        self._index: Index | None = None
        self._saved_resources = self._saved_watermark = 0
        self.source: str | None = None  # what this Memory appends came from (issue 19)

    # --- opening -----------------------------------------------------------------------

    @classmethod
    def open(cls, path=None, *, autosave: bool = True) -> Memory:
        try:
            conn = store.connect(path, prefer_vec=True)
        except store.StoreError as exc:
            raise BrainboxError(str(exc)) from exc
        return cls(conn, autosave=autosave, path=str(path or paths.db_path()))

    @classmethod
    def in_memory(cls) -> Memory:
        """A private in-memory database (replay); state is never persisted."""
        return cls(dbmod.connect(":memory:"), autosave=False, path=":memory:")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- state -------------------------------------------------------------------------

    @property
    def state(self) -> State:
        if self._state is None:
            arrays = store_arrays.load_arrays(self.conn)
            if "json" in arrays:
                resources = store_arrays.load_resources(self.conn)
                self._state = State.from_arrays(arrays, resources)
                self._saved_resources = len(resources)
                self._saved_watermark = self._state.watermark
            else:
                self._state = State()
            self._index = Index(self._state)
        return self._state

    @property
    def index(self) -> Index:
        _ = self.state  # loads the state, which builds the index
        return self._index

    def sync(self) -> int:
        """Fold events past the watermark; save when autosaving. Returns events folded."""
        st = self.state
        folded = learning.fold(st, dbmod.iter_events(self.conn, after=st.watermark))
        if st.needs_rebuild:  # a project merge met keys this state had folded
            return self.rebuild()["events"]
        if folded and self.autosave:
            self.save()
        return folded

    def save(self, *, replace: bool = False) -> None:
        st = self.state
        with dbmod.atomic(self.conn):
            stored = int(dbmod.get_meta(self.conn, "watermark", "0"))
            if stored > st.watermark:
                return  # another process saved a newer state; ours is a prefix of it
            replace = replace or stored < self._saved_watermark or self._saved_resources > st.n_res
            start = 0 if replace else self._saved_resources
            store_arrays.save_resources(self.conn, st.resource_rows(start), replace_all=replace)
            store_arrays.save_arrays(self.conn, st.to_arrays())
            dbmod.set_meta(self.conn, "watermark", str(st.watermark))
        self._saved_resources = st.n_res
        self._saved_watermark = st.watermark

    # --- writing -----------------------------------------------------------------------

    def record(self, event) -> int:
        """Normalise and append one raw record (or a list); returns the last event id."""
        events = event if isinstance(event, list) else [event]
        try:
            normed = [normalize(e) for e in events]
        except EventError as exc:
            raise BrainboxError(str(exc)) from exc
        return self.record_normalized(normed)

    def record_normalized(self, events: list[dict]) -> int:  # each stamped with its source
        return dbmod.append_events(self.conn, [{"source": self.source, **e} for e in events])

    def decay(self, now: float | None = None, *, dry_run: bool = False,
              force: bool = False) -> dict:
        """Apply maintenance decay up to `now` (a logged event, so rebuild replays it).

        The rule is `State.decay_plan`'s, with the floor at the database's birth. A decay
        that would prune more than half of the associations raises unless `force`;
        `dry_run` returns what would be pruned and writes nothing."""
        at = time.time() if now is None else float(now)
        self.sync()
        floor = queries.memory_birth(self.conn)
        before = int(self.state.n_edges[0])
        plan = self.state.decay_plan(at, floor)
        prune = before - int(plan.keep.sum())
        if dry_run:
            return {"dry_run": True, "pruned": prune, "associations": before,
                    "remain": before - prune, "now": at}
        if 2 * prune > before and not force:
            raise DecayRefused(
                f"decay would prune {prune} of {before} associations "
                f"({100 * prune // max(before, 1)}%); pass --yes to prune them, "
                f"or --dry-run to see")
        self.record_normalized([{
            "at": at, "session": "brainbox:maintenance", "project": "", "kind": "maintenance",
            "files": [], "meta": {"op": "decay", "floor": floor},
        }])
        self.sync()
        return {"pruned": before - int(self.state.n_edges[0]),
                "associations": int(self.state.n_edges[0])}

    def resolve(self, error: str, files: list[str], *, session: str = "brainbox:resolve",
                cwd: str | None = None, project: str | None = None) -> None:
        """Link an error to the files that fixed it strongly (DESIGN §4.6)."""
        from brainbox.fingerprint import fingerprint

        ev = normalize({"session": session, "cwd": cwd, "project": project, "kind": "feedback",
                        "files": files, "meta": {"op": "resolve", "error_fp": fingerprint(error)}})
        ev["meta"]["files"] = ev["files"]
        self.record_normalized([ev])

    def rebuild(self) -> dict:
        """Recompute the state from the whole log (from `consolidate`'s checkpoint on)."""
        dbmod.quick_check(self.conn)  # damaged pages: a one-line error before any write
        st = self._state = retention.base_state(self.conn)  # consolidate's checkpoint
        self._index = Index(self._state)
        self._saved_resources = 0
        self._saved_watermark = 0
        folded = learning.fold(st, dbmod.iter_events(self.conn, after=st.watermark))
        if self.autosave:
            with dbmod.atomic(self.conn):
                dbmod.set_meta(self.conn, "watermark", "0")
                self.save(replace=True)
        return {"events": folded}

    def forget(self, path: str, *, cwd: str | None = None, project: str | None = None,
               recursive: bool = False, before=None) -> dict:
        """Delete every event that mentions `path`, and its code index entries (chunks,
        full-text rows, vectors), then rebuild: no recall or search returns it.

        What goes is `forgetting.plan`'s (it refuses an empty path, and a folder or a glob
        unless `recursive`); `before(plan)` is called before anything is deleted."""
        from brainbox import forgetting

        dbmod.quick_check(self.conn)  # damaged pages: a one-line error before any write
        plan = forgetting.plan(self.conn, path, cwd=cwd, project=project, recursive=recursive)
        if before is not None:
            before(plan)
        deleted = queries.delete_events(self.conn, plan.event_ids)
        from brainbox import codeindex

        dropped = codeindex.forget_files(self.conn, plan.project, plan.indexed)
        self.rebuild()
        dbmod.scrub(self.conn)  # no copy of the forgotten text left in the file or its WAL
        out = plan.as_dict()
        del out["events"]
        return {**out, "deleted_events": deleted, "indexed_files": dropped["files"],
                "indexed_chunks": dropped["chunks"]}

    def merge_projects(self, *, dry_run: bool = False) -> dict:
        """Merge the stored keys that are linked worktrees of a repository into it
        (`brainbox.projectmerge`), then rebuild; `dry_run` lists them and writes nothing.
        Returns {dry_run, merges: [{from, into, events[, event, moved]}]}."""
        from brainbox import projectmerge

        found = projectmerge.proposals(self.conn)
        if dry_run or not found:
            return {"dry_run": dry_run, "merges": [m.as_dict() for m in found]}
        dbmod.quick_check(self.conn)  # damaged pages: a one-line error before any write
        done = projectmerge.apply(self.conn, found)
        self.rebuild()
        return {"dry_run": False, "merges": done}

    # --- reading -----------------------------------------------------------------------

    def _project(self, project, cwd):
        if project is not None:
            return project
        return project_root(cwd or os.getcwd())

    @staticmethod
    def _roots(project, cwd) -> tuple[str, str]:
        """(project key, the root its paths are relative to): a project named is both;
        else `cwd`'s repository and worktree root (`brainbox.identity`)."""
        if project is not None:
            return project, project
        return identify(cwd or os.getcwd())

    def file_key(self, path: str, project: str | None, cwd: str | None) -> tuple[str, str]:
        """(project, project-relative path) of a file named as a user names it: an
        absolute path belongs to its own project (the stored one that holds it, else its
        repository, relative to its worktree); a relative one is project-relative, else
        relative to `cwd`'s worktree root."""
        from brainbox import forgetting

        here = os.path.abspath(cwd or os.getcwd())
        if os.path.isabs(path) and project is None:
            try:
                project, rel, _ = forgetting.resolve(self.conn, path, here, None)
            except BrainboxError:
                return self._project(None, cwd), path
            return project, rel
        project, root = self._roots(project, here)
        st = self.state
        known = {st.res_key[r] for r in st.proj_files.get(project, ())}
        if os.path.isabs(path) or path not in known:
            rel = relative_path(path, here, root)
            if rel is not None and rel in known:
                return project, rel
        return project, path

    def recall(self, query: str, *, session: str | None = None, project: str | None = None,
               cwd: str | None = None, limit: int = 10, now: float | None = None,
               params: Params | None = None, code: bool = True) -> list[Result]:
        """Recall's ranking of the project's files for `query`. `code`: when the project
        has a code index (`brainbox index`), its best snippets rank files in the snippet
        channel (each file by its best snippet, keyword search, SNIPPET_DEPTH deep), a
        file of the index memory never saw is a candidate too (`recall.code_ranking`), and
        each result names its best snippet. The relevance floor holds for all (at a
        prompt the snippet channel weighs `recall.SNIPPET_PROMPT`, so its first place
        alone is above it)."""
        self.sync()
        project = self._project(project, cwd)
        best = self._snippets(query or "", project) if code else {}
        results = recall(self.index, query or "", project=project, session=session,
                         limit=limit, now=now, params=params,
                         snippets={p: sc for p, (sc, _) in best.items()} or None,
                         structure=self._structure(project, params) if code else None)
        for r in results:
            if r.path in best:
                r.snippet = best[r.path][1]
        return results

    def _prior(self, project: str | None):
        """The code graph's `P` over the files memory knows of `project`
        (`brainbox.structure.prior`); None without an index or an edge between them."""
        from brainbox import codesearch, structure

        if not project or not codesearch.indexed(self.conn, project):
            return None
        return structure.prior(self.conn, self.state, project)

    def _structure(self, project: str | None, params: Params | None = None, P=None):
        """The effective graph W-else-P (`brainbox.structure`) of the project when recall
        spreads (the associative channel in use) and its code graph links files memory
        knows; else None."""
        if not project or not uses_associative(params):
            return None
        from brainbox import structure

        P = self._prior(project) if P is None else P
        return None if P is None else structure.effective(self.state, P)

    def _snippets(self, query: str, project: str | None) -> dict:
        """{path: (score, "path:start-end kind symbol")} of the code index's files for
        `query`, best first, each with its best snippet (`codesearch.files`: keyword and
        symbol rankings, SNIPPET_DEPTH deep; empty without an index). No vectors: recall
        serves the prompt hook, which loads no embedding model."""
        from brainbox import codesearch

        if not project or not query.strip() or not codesearch.indexed(self.conn, project):
            return {}
        return codesearch.snippet_files(self.conn, project, query, SNIPPET_DEPTH)

    def search(self, query: str, *, project: str | None = None, cwd: str | None = None,
               limit: int = 10) -> list[dict]:
        """The code index's best snippets for `query` (`brainbox search`, MCP `search`).
        Raises BrainboxError (one line) when the project has no code index."""
        from brainbox import codesearch

        project = self._project(project, cwd)
        if not project or not codesearch.indexed(self.conn, project):
            raise BrainboxError(f"{project} has no code index; run `brainbox index "
                                f"{project}` first")
        return [sn.as_dict() for sn in codesearch.search(self.conn, project, query, limit)]

    def predict_tools(self, session: str | None = None, k: int = 3) -> list[tuple[str, float]]:
        self.sync()
        return predict_tools(self.state, session, k=k)

    def explain(self, path: str, query: str, *, session: str | None = None,
                project: str | None = None, cwd: str | None = None) -> dict:
        self.sync()
        st = self.state
        project, path = self.file_key(path, project, cwd)
        rid = st.res_index.get((FILE, project, path))
        if rid is None:
            raise BrainboxError(f"{path} is not in memory for project {project}")
        from brainbox import structure

        params = Params(min_probability=0.0)
        P = self._prior(project)
        results = recall(self.index, query or "", project=project, session=session,
                         limit=10**9, params=params,
                         structure=self._structure(project, params, P))
        hit = next((r for r in results if r.path == path), None)
        W = st.matrices()["W"]
        col = W[:, [rid]].tocoo()
        # learned associations, and the code graph's edges nothing learned replaces
        incoming = sorted(
            [(st.res_key[int(r)], KIND_NAMES[int(st.kind[r])], float(v), False)
             for r, v in zip(col.row, col.data)]
            + [(st.res_key[r], "file", v, True) for r, v in structure.incoming(P, W, rid)],
            key=lambda x: (-x[2], x[0]),
        )[:10]
        rank = next((i for i, r in enumerate(results, 1) if r.path == path), None)
        return {
            "path": path, "query": query, "rank": rank,
            "confidence": hit.confidence if hit else 0.0,
            "channels": hit.channels if hit else {}, "via": hit.via if hit else None,
            "access_count": int(st.n[rid]), "reinforcement": float(st.m[rid]),
            "last_access": float(st.last[rid]),
            "incoming": [{"source": s, "kind": k, "w": round(v, 4), "structural": st_}
                         for s, k, v, st_ in incoming],
            "weights": channel_weights(self.index, query or "", project=project,
                                       session=session),
        }

    def stats(self) -> dict:
        self.sync()
        st = self.state
        by_kind = {"file": 0, "tool": 0, "error": 0}
        for k in st.res_kind:
            by_kind[KIND_NAMES[k]] += 1
        return {
            "events": dbmod.count_events(self.conn),
            "resources": by_kind,
            "associations": int(st.n_edges[0]),
            "sessions": len(st.sess_index),
            "projects": len({p for p, k in zip(st.res_project, st.res_kind) if k == FILE}),
            "watermark": st.watermark,
            "db_bytes": dbmod.db_bytes(self.conn) if self.path != ":memory:" else 0,
            "db_path": self.path,
        }

    def count_events(self) -> int:
        """Events in the log (the daemon compares it with what it folded: a drop means
        `forget` deleted some, and the state is reloaded)."""
        return dbmod.count_events(self.conn)

    # --- answers for the hooks, the daemon and MCP -------------------------------------

    def suggest(self, query: str, *, project: str, session: str | None = None,
                limit: int = 5, worktree: str | None = None, params=None) -> list[dict]:
        """The prompt hook's list: recall's best `limit` files that still exist under the
        asking worktree's root (`worktree`, else the project root; recall is asked for
        4 x `limit`), each with its rank among those kept, a few words of evidence
        (`why`), the file it was reached from (`via`), its confidence and channel ranks
        (`channels`); never a file `feedback --never` excludes. Files whose shown
        confidence ties keep the asking worktree's first (`prefer_worktree`)."""
        root = worktree or project
        items = []
        hits = self.recall(query, project=project, session=session, limit=4 * limit, params=params)
        for r in self.prefer_worktree(hits, project, worktree):
            if not _on_disk(root, r.path) or r.path in self.state.corrections.excluded(project):
                continue
            src = r.via_edge[0] if r.via_edge else None
            item = {"path": r.path, "rank": len(items) + 1, "why": evidence(r),
                    "via": src, "confidence": round(r.confidence, 4), "channels": dict(r.channels)}
            if r.snippet:  # with a code index: its best snippet
                item["snippet"] = r.snippet
            items.append(item)
            if len(items) >= limit:
                break
        return items

    def inject_decision(self, query: str, *, project: str, session: str | None,
                        items: list[dict], chars: list[int] | None = None) -> dict:
        """How many of `items` (recall's list, non-empty; `chars`: the block's length for 0..n
        of them) to show (`brainbox.injection`): {"ctx", "arm", "model", "show"}."""
        from brainbox import injection as inj
        from brainbox.recall import session_context

        policy, conf = self.state.policy, [float(it.get("confidence") or 0) for it in items]
        in_sess = session_context(self.index, project, session) == "session"
        ctx = inj.context(conf[0], query, in_session=in_sess,
                          decisions=policy.decisions.get(project, 0), prompt_index=int(in_sess))
        exp = inj.expected(policy.corrected(project, conf), chars or [])
        a, model = policy.choose(project, ctx, len(items), exp), inj.model_arm(exp, len(items))
        return {"ctx": ctx, "arm": inj.NAMES[a], "model": inj.NAMES[model],
                "show": min(inj.ARMS[a], len(items))}

    def prefer_worktree(self, results: list, project: str, worktree: str | None) -> list:
        """`results` (recall's order for `project`) with, among those whose confidence
        shows the same (4 decimals, as the hook prints it), the files last touched in
        `worktree` first.

        The worktree is a sub-scope of the repository's one memory (issue 17): a tie-break
        and no more, since nothing measured says how much a worktree should outweigh the
        evidence, and a bonus would reorder what the calibration was fitted on. Files last
        touched in the project's own root have no worktree recorded (`worktree` None or
        the project root prefers those)."""
        st = self.state
        if len(results) < 2 or not st.file_worktree:
            return results
        mine = worktree if worktree and worktree != project else None

        def elsewhere(r) -> bool:
            rid = st.res_index.get((FILE, project, r.path))
            return rid is not None and st.file_worktree.get(rid) != mine

        order = sorted(range(len(results)),
                       key=lambda i: (-round(results[i].confidence, 4), elsewhere(results[i]), i))
        return [results[i] for i in order]

    def session_start(self, project: str, session: str | None = None,
                      k: int = 40, worktree: str | None = None) -> list[dict]:
        """The project's most likely files with no query, those of the best `k` that
        still exist under the project root: session evidence when the session has
        touched files (recall's recency/recurrence channels), else access count and
        recency fused by reciprocal rank with recall's weights and constant (frequency
        `LAMBDA["frequency"]`, recency `LAMBDA["recency"]`, k = `RRF_K`); ties by id."""
        root = worktree or project  # the asking worktree's files (issue 17)
        return [it for it in self._start_ranking(project, session, k)
                if _on_disk(root, it["path"])]

    def _start_ranking(self, project: str, session: str | None, k: int) -> list[dict]:
        import numpy as np

        from brainbox.recall import LAMBDA, RRF_K

        if session:  # a list to start from, not an answer: no relevance floor
            hits = self.recall("", project=project, session=session, limit=k,
                               params=Params(min_probability=0.0))
            if hits:
                return [{"path": r.path, "why": evidence(r)} for r in hits]
        st = self.state
        files = np.asarray(st.proj_files.get(project, ()), np.int64)  # ascending ids
        if files.size == 0:
            return []
        n = st.n[files].astype(np.float64)
        last = st.last[files]
        r_n = np.empty(files.size)
        r_n[np.lexsort((files, -n))] = np.arange(1, files.size + 1)
        r_t = np.empty(files.size)
        r_t[np.lexsort((files, -last))] = np.arange(1, files.size + 1)
        score = LAMBDA["frequency"] / (RRF_K + r_n) + LAMBDA["recency"] / (RRF_K + r_t)
        order = np.lexsort((files, -score))[:k]
        return [{"path": st.res_key[int(files[i])], "why": f"used {int(n[i])}x"}
                for i in order.tolist()]

    def start_block(self, project: str, session: str | None = None,
                    worktree: str | None = None) -> dict:
        """What the SessionStart block lists, in its order (`cli.service.format_start`
        lays it out within the budget): the project's pins (pin order), its most likely
        files (`session_start`, pinned files left out), its open errors (newest failure
        first, `brainbox.openerrors`) and its live procedures. Every list is a function of
        the log (and of which files exist): no clock, no counter, no session id."""
        self.sync()
        st = self.state
        excluded = st.corrections.excluded(project)  # `feedback --never`: not even pinned
        pins = [p for p in st.pins.of(project) if p["kind"] != "file" or p["value"] not in excluded]
        pinned = {p["value"] for p in pins if p["kind"] == "file"}
        files = [it for it in self.session_start(project, session, START_FILES, worktree)
                 if it["path"] not in pinned and it["path"] not in excluded]
        return {"pins": pins, "files": files,
                "errors": st.open_errors.newest(project, START_ERRORS),
                "procedures": self.live_procedures(project)}

    def live_procedures(self, project: str, k: int = START_PROCEDURES) -> list[dict]:
        """The project's live procedures (DESIGN §4.9, `brainbox.procedures`), at most `k`,
        error fixes first (most helpful net first), then workflows: each the procedure
        with its quotation in "text" (an observation from past sessions, quoted)."""
        from brainbox.procedures import quote

        live = [p for p in self.state.procedures.of(project) if not p["retired"]]
        return [{**p, "text": quote(p)} for p in live[:k]]

    def procedures(self, project: str | None = None, cwd: str | None = None) -> list[dict]:
        """Every procedure of the project, live and retired, with its counts
        (`Procedures.of`: error fixes, then workflows), each with its quotation."""
        from brainbox.procedures import quote

        self.sync()
        project = user_project(project, cwd) or self._project(None, cwd)
        return [{**p, "project": project, "text": quote(p)}
                for p in self.state.procedures.of(project)]

    def procedure_for(self, project, fingerprint, session=None, tool=None) -> dict | None:
        """The live error-fix procedure of an error just seen (its fingerprint) in `project`,
        quoted in "text", or None; of a failed call of `tool` in `session` (`after_failure`)."""
        from brainbox.procedures import quote

        self.sync()
        p = self.state.procedures.after_failure(project, fingerprint or "", session, tool)
        return None if p is None else {**p, "text": quote(p)}

    # --- pins (brainbox.pins) -----------------------------------------------------------

    def pin(self, path: str | None = None, *, text: str | None = None,
            project: str | None = None, cwd: str | None = None) -> dict:
        """Pin a file (project-relative, like every file resource) or a note to the top of
        the project's SessionStart block. Returns the pin, with `pinned` False when it was
        pinned already (nothing is written then). PinError (one line) on bad input."""
        from brainbox import pins

        ev = self._pin_event(path, text, project, cwd, "pin")
        kind, value = pins.subject(ev, path)
        self.sync()
        found = self.state.pins.find(ev["project"], kind, value)
        if found is not None:
            return {**found[1], "project": ev["project"], "pinned": False}
        self.record_normalized([ev])
        self.sync()
        _, pin = self.state.pins.find(ev["project"], kind, value)
        return {**pin, "project": ev["project"], "pinned": True}

    def unpin(self, path: str | None = None, *, text: str | None = None,
              pin_id: int | None = None, project: str | None = None,
              cwd: str | None = None) -> dict:
        """Remove a pin named by its file, its text or its id (an id in any project when
        `project` is not given). PinError when nothing such is pinned."""
        from brainbox import pins

        self.sync()
        if pin_id is not None:
            if path is not None or text is not None:
                raise pins.PinError("unpin takes one of PATH, --text or --id")
            found = self.state.pins.find(user_project(project, cwd), pin_id=int(pin_id))
            what = f"id {pin_id}"
        else:
            ev = self._pin_event(path, text, project, cwd, "unpin")
            kind, value = pins.subject(ev, path)
            found = self.state.pins.find(ev["project"], kind, value)
            what = value
        if found is None:
            raise pins.PinError(f"nothing pinned matches {what}")
        where, pin = found
        raw = {"session": pins.SESSION, "project": where, "cwd": where,
               "kind": "maintenance", "meta": {"op": "unpin", "id": pin["id"]}}
        if pin["kind"] == "file":  # `forget` of the file deletes its unpin with its pin
            raw["files"] = [os.path.join(where, pin["value"])]
        self.record_normalized([normalize(raw)])
        self.sync()
        return {**pin, "project": where, "unpinned": True}

    def pins(self, project: str | None = None, cwd: str | None = None) -> list[dict]:
        """The project's pins in pin order (the order the SessionStart block lists them)."""
        self.sync()
        project = user_project(project, cwd) or self._project(None, cwd)
        return [{**p, "project": project} for p in self.state.pins.of(project)]

    def _pin_event(self, path, text, project, cwd, op) -> dict:
        from brainbox import pins

        here = os.path.abspath(cwd or os.getcwd())
        project = user_project(project, here)
        if project is None and path is not None and os.path.isabs(path):
            here = os.path.dirname(path)  # its own project (and worktree), from anywhere
        elif project is not None and path is not None and not os.path.isabs(path) and not (
                here + "/").startswith(project.rstrip("/") + "/"):
            here = project  # a relative PATH with --project from elsewhere
        raw = pins.record(path, text, project=project, cwd=here, op=op)
        try:
            return normalize(raw)
        except EventError as exc:
            raise pins.PinError(str(exc)) from exc

    def advise(self, event: dict, *, files: int = 3, errors: int = 2) -> dict:
        """What memory observed about a tool call about to run (the PreToolUse advice,
        `brainbox.advice`): `event` is the call as a normalised tool event. For an edit,
        per file (at most two): the files expected next (`advice.next_edits`, at most
        `files`) and the errors that followed edits of it (at most `errors`); for a run,
        the command's last fix and open failure. Lists are empty when nothing clears the
        floors; no clock or counter of the call is in it."""
        from brainbox import advice, corrections

        self.sync()
        st = self.state
        project = event.get("project") or ""
        out = {"edits": [], "command": None}
        excluded, sess = st.corrections.excluded(project), event.get("session")  # --never
        if event.get("action") == "edit" and not event.get("error_fp"):
            for path in list(dict.fromkeys(event.get("files") or ()))[:2]:
                co = advice.next_edits(st, project, path, sess, k=files + len(excluded))
                errs = st.advice.errors_after(project, path, k=errors)
                if co or errs:
                    out["edits"].append({"path": path, "errors": errs,
                                         "co_edits": [{"path": p, "weight": w}
                                                      for p, w, _ in co]})
        elif event.get("action") == "run" and event.get("tool"):
            key = advice.command_key(event["tool"], event.get("files"))
            known = st.advice.command(project, key)
            if known is not None:
                fix = known["fix"]
                procs = st.procedures.fixes.get(project, {})
                if fix is not None and fix["fingerprint"] in procs:
                    # the fix is a procedure: quoted when live, not at all when retired
                    from brainbox.procedures import quote

                    proc = next(p for p in st.procedures.of(project)
                                if p.get("fingerprint") == fix["fingerprint"])
                    known["procedure"] = {**proc, "text": quote(proc)}
                out["command"] = {"tool": event["tool"], "files": sorted(event.get("files") or ()),
                                  **known}
        return corrections.advice_without(out, excluded, files)

    def fix_files(self, fingerprint: str, project: str, k: int = 5) -> list[dict]:
        """The files of `project` an error (by its fingerprint) is most strongly linked
        to, strongest first (ties by path): the files that fixed it before."""
        self.sync()
        st = self.state
        eid = st.res_index.get((ERROR, "", fingerprint))
        if eid is None:
            return []
        w = st.graph()
        lo, hi = int(w.indptr[eid]), int(w.indptr[eid + 1])
        out = []
        for col, weight in zip(w.indices[lo:hi].tolist(), w.data[lo:hi].tolist()):
            if st.res_kind[col] == FILE and st.res_project[col] == project:
                out.append({"path": st.res_key[col], "weight": round(float(weight), 4)})
        out.sort(key=lambda x: (-x["weight"], x["path"]))
        return out[:k]


def user_project(project: str | None, cwd: str | None) -> str | None:
    """A project named by the user, as events store it (absolute, normalised)."""
    if project is None:
        return None
    return os.path.normpath(os.path.join(os.path.abspath(cwd or os.getcwd()), project))


def _on_disk(project: str, path: str) -> bool:
    """Never suggest a file that is gone: it must exist under the root (the asking
    worktree's, else the project's) now."""
    if not project or not path or path.startswith("/") or ".." in path.split("/"):
        return False
    return os.path.isfile(os.path.join(project, path))


def evidence(result: Result) -> str:
    """A few words of evidence for one recall result, from its channels and via edge."""
    ch = result.channels or {}
    if result.via_edge:
        return f"linked from {result.via_edge[0]}"
    if "lexical" in ch:
        return "matches query"
    if "snippet" in ch and result.snippet:
        return "code matches query: " + result.snippet.split(" ", 1)[-1]
    if "recurrence" in ch:
        return "used with recent files"
    if ch.get("recency", 99) <= 3:
        return "used recently"
    if ch.get("frequency", 99) <= 5:
        return "used often"
    return "related"


__all__ = ["ERROR", "FILE", "TOOL", "Memory", "Params", "Result"]
