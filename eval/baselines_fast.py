"""The replay's baselines on the compiled kernels (:mod:`brainbox.kernels.replay.baselines`).

:class:`CompiledBaselines` has exactly the API and the rankings of
:class:`brainbox.eval.baselines.Baselines` (the reference): it maps strings to dense ids
(terms with :func:`brainbox.text.tokens` / :func:`~brainbox.text.path_tokens` exactly as the
reference does, sessions in first-seen order), grows the kernel state when a kernel reports
a capacity short, and calls the kernels; the random baseline is the reference's
:class:`~brainbox.eval.baselines.RandomRanks`. It is the parity harness of the kernels and a
drop-in replacement for ``Baselines`` in :func:`brainbox.eval.replay.replay_series`.

:func:`replay_calls` yields the calls ``replay_series`` makes on its baselines for a list of
tasks (with rankings before every tool event, a superset of the replay's), so any baselines
object can be driven the same way (tests, benchmarks).
"""

from __future__ import annotations

import posixpath

import numpy as np
from brainbox.eval.baselines import METHODS, RandomRanks, prompt_terms
from brainbox.kernels.replay import baselines as K

from brainbox.text import path_tokens, tokens

__all__ = ["METHODS", "CompiledBaselines", "replay_calls", "run_calls"]

_EMPTY = np.zeros(0, np.int64)
_NOFILES = np.zeros(0, np.bool_)
_PTR0 = np.zeros(1, np.int64)


class CompiledBaselines:
    """All file and tool baselines of one repository series, on the compiled kernels.

    Same constructor and methods as :class:`brainbox.eval.baselines.Baselines`.
    ``self.state`` is the kernel state; ``self.vocab`` / ``self.sessions`` the id maps.
    """

    def __init__(self, seed: int, series: str, k_files: int = 10, k_tools: int = 3):
        self.k_files, self.k_tools = k_files, k_tools
        self.state = K.new_state()
        self.vocab: dict[str, int] = {}
        self.sessions: dict[str, int] = {}
        self.f_rand = RandomRanks(seed, series, 0)
        self.t_rand = RandomRanks(seed, series, 1)
        self._fout = np.empty((4, max(k_files, 1)), np.int64)
        self._tout = np.empty((4, max(k_tools, 1)), np.int64)
        self._query = None
        self._qtoks: list[str] = []

    # -- ids
    def _ids(self, toks) -> np.ndarray:
        if not toks:
            return _EMPTY
        v = self.vocab
        get = v.get
        out = []
        for t in toks:
            i = get(t)
            if i is None:
                i = v[t] = len(v)
            out.append(i)
        return np.array(out, np.int64)

    def _sid(self, session: str) -> int:
        i = self.sessions.get(session)
        if i is None:
            i = self.sessions[session] = len(self.sessions)
        return i

    def _run(self, fn, *args) -> None:
        """Call kernel ``fn(state, *args)``, growing the state while it reports a need."""
        st = fn(self.state, *args)
        while st:
            self.state = K.grow_for_status(self.state, st)
            st = fn(self.state, *args)

    def random_top_all(self, tools: bool, n_universe: int) -> np.ndarray:
        """``RandomRanks.top_all`` of the file (or tool) random baseline for the current
        task, drawn by the kernel (``random_top_all``); rows with too few distinct draws
        take the reference's exact fallback."""
        rr = self.t_rand if tools else self.f_rand
        out = np.empty((rr.steps + 1, rr.k), np.int64)
        bad = K.random_top_all(np.uint64(rr.key), rr.k + rr.EXTRA, n_universe, out)
        for step in bad.tolist():
            r = rr.top(step, n_universe)
            out[step, : len(r)] = r
        return out

    # -- the Baselines API
    def begin_task(self, task_id: str, query: str, steps: int, n_files: int,
                   n_tools: int) -> None:
        self._query = query
        self._qtoks = tokens(query)
        q = self._ids(list(dict.fromkeys(self._qtoks)))
        self._run(K.begin_task, q, n_files, n_tools)
        self.f_rand.begin_task(task_id, steps, self.k_files, n_files)
        self.t_rand.begin_task(task_id, steps, self.k_tools, n_tools)

    def prompt(self, session: str, text: str | None) -> None:
        self._run(K.prompt, *self.prompt_args(session, text))

    def prompt_args(self, session: str, text: str | None) -> tuple[int, np.ndarray]:
        """``prompt``'s (session row, term ids) for a prompt (registers both)."""
        toks = self._qtoks if text == self._query else None
        return self._sid(session), self._ids(prompt_terms(text, toks))

    def tool_event(self, session: str, tool: int, tool_name: str, new_tool: bool,
                   files: list[tuple[int, bool, str]], args: str | None) -> None:
        """Record one tool call: ``files`` are (id, first seen now, path) triples."""
        arg = self._ids(tokens(args)) if args else _EMPTY
        name = self._ids(tokens(tool_name)) if new_tool else _EMPTY
        if files:
            fids = np.array([f for f, _, _ in files], np.int64)
            fnew = np.array([bool(n) for _, n, _ in files], np.bool_)
            ptr = [0]
            pts: list[str] = []
            for _, new, path in files:
                if new:
                    pts.extend(path_tokens(path))
                ptr.append(len(pts))
            ptr = np.array(ptr, np.int64)
            pterms = self._ids(pts)
        else:
            fids, fnew, ptr, pterms = _EMPTY, _NOFILES, _PTR0, _EMPTY
        self._run(K.tool_event, self._sid(session), int(tool), bool(new_tool), name, fids,
                  fnew, ptr, pterms, arg)

    def end_task(self) -> None:
        self._run(K.end_task)

    def rank_files(self, n_universe: int, step: int) -> list[list[int]]:
        """Rankings in :data:`METHODS` order."""
        out = self._fout
        lens = K.rank_files(self.state, n_universe, self.k_files, out)
        res = [out[r, : lens[r]].tolist() for r in range(4)]
        res.append(self.f_rand.top(step, n_universe))
        return res

    def rank_tools(self, n_universe: int, step: int) -> list[list[int]]:
        out = self._tout
        lens = K.rank_tools(self.state, n_universe, self.k_tools, out)
        res = [out[r, : lens[r]].tolist() for r in range(4)]
        res.append(self.t_rand.top(step, n_universe))
        return res


def replay_calls(tasks):
    """The baselines calls of :func:`brainbox.eval.replay.replay_series` on ``tasks`` (in
    order), as ``(method name, args)`` pairs: ``begin_task``, a P1 ``rank_files``, the
    description's ``prompt``, then per event ``rank_tools`` and (when it names files)
    ``rank_files`` before every tool event, and the event (``tool_event`` or ``prompt``);
    finally ``end_task``. Ids come from registries as in the replay; every ranking uses
    the task's frozen universe. The replay ranks only when a probe is eligible; this
    ranks at every tool event."""
    from brainbox.eval.probes import Registry
    from brainbox.eval.replay import normalized, prompt_event

    files, tools = Registry(), Registry()
    for ti, task in enumerate(tasks):
        events, _ = normalized(task)
        nf, nt = len(files), len(tools)
        root = events[0]["project"] if events else posixpath.normpath(task.project or "/")
        session = events[0]["session"] if events else task.id
        desc = task.description or ""
        yield "begin_task", (task.id, desc, len(events), nf, nt)
        yield "rank_files", (nf, 0)
        yield "prompt", (session, prompt_event(session, root, desc)["prompt"])
        for step, ev in enumerate(events):
            if ev["kind"] == "tool" and ev["tool"]:
                yield "rank_tools", (nt, step + 1)
                if ev["files"]:
                    yield "rank_files", (nf, step + 1)
                tid, new_tool = tools.add(ev["tool"], ti)
                proj = ev["project"]
                triples = [(*files.add((proj, f), ti), f) for f in ev["files"]]
                yield "tool_event", (ev["session"], tid, ev["tool"], new_tool, triples,
                                     ev["args"])
            elif ev["kind"] == "prompt":
                yield "prompt", (ev["session"], ev["prompt"])
        yield "end_task", ()


def run_calls(base, calls) -> list:
    """Apply ``calls`` (from :func:`replay_calls`) to ``base``; the rankings, in order."""
    out = []
    for name, args in calls:
        r = getattr(base, name)(*args)
        if r is not None:
            out.append(r)
    return out
