"""The codes the engine's arrays hold, in one place (numpy + numba only; no numba import,
so ``brainbox.state`` and the hook side may read them without compiling anything).

- Resource kinds (``State.kind``, ``kernels.hebbian``, ``kernels.predict``): a file, a
  tool, an error fingerprint.
- Event kinds of an encoded batch (``brainbox.state.Encoded.ev_kind``, read by the replay
  loop): an event that touches nothing (skipped), a prompt, a tool call.
"""

FILE, TOOL, ERROR = 0, 1, 2
KIND_NAMES = {FILE: "file", TOOL: "tool", ERROR: "error"}
SKIP, PROMPT, TOOL_EVENT = 0, 1, 2
