"""brainbox.kernels.replay: the evaluator's compiled code (DESIGN §5), apart from the
engine's kernels (numpy + numba only, no I/O, like the rest of ``brainbox.kernels``).

- ``loop``: the replay's per-event loop for one task (``replay_task``);
- ``tasklists``: what the loop keeps from one recall to the next within a task
  (``TaskLists``), so that ``kernels.rank.rank_lexed`` does not scan every file;
- ``baselines``: the heuristic baselines the engine is scored against, compiled.

Nothing here is exported by ``brainbox.kernels``: a recall never imports this package
(``brainbox.eval`` does, through the compiled replay's driver).
"""
