"""``python -m turnbudget.agents.llama_server ARGS``: ``llama_cpp.server`` whose prompt cache
keeps no logits (what `LocalServer` runs; the same arguments as ``llama_cpp.server``).

llama-cpp-python's RAM prompt cache stores ``Llama.save_state()``, which copies
the logits of every evaluated token (up to ``n_batch`` rows of the 262k-token
vocabulary, 1 MiB a row for Gemma) beside the model's context, and counts only
the context against ``--cache_size``: each entry holds 100-500 MiB the cap does
not see, and ``load_state`` writes and scans all ``n_batch`` rows; the copies
cost more than the prefix they save. Without ``logits_all`` those logits are
never read (sampling reads the context's own, and a restored state is evaluated
again from its last token), so here a saved state keeps none of them: an entry
is its context (a few MiB), the cap holds, and episodes in flight each resume
from their own prompt.

Each prompt is also evaluated as the in-process model does (`local_llm.BLOCK`):
whole aligned blocks, then the tail, reusing only whole blocks, so an answer
depends on its request alone, not on what the server answered before.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from typing import Any

from turnbudget.agents.local_llm import BLOCKS_ATTRIBUTE, evaluate_in_blocks

__all__ = ["exit_with_parent", "main", "patch_evaluation", "patch_save_state"]


def exit_with_parent(poll_seconds: float = 0.5) -> None:
    """End this process once the process that started it is gone (its parent changes).

    `LocalServer` starts the server in a session of its own (so that `LocalServer.stop`
    ends all of it), where no terminal's hangup reaches it: without this, a ``serve-local``
    or an evaluation killed with SIGKILL would leave the server running, holding its port
    and a GiB of memory.
    """
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_seconds)
        os._exit(1)

    threading.Thread(target=watch, name="turnbudget-exit-with-parent", daemon=True).start()


def patch_evaluation() -> None:
    """Make ``Llama.generate`` evaluate its prompt in aligned blocks first (see the module
    docstring): llama-cpp-python's own prefix match then finds the blocks and evaluates
    the tail in one batch."""
    from llama_cpp import Llama

    original_generate = Llama.generate

    def generate(self: Any, tokens: Any, *args: Any, **kwargs: Any) -> Any:
        tokens = list(tokens)
        if tokens:
            evaluate_in_blocks(self, tokens)
        yield from original_generate(self, tokens, *args, **kwargs)

    Llama.generate = generate


def patch_save_state() -> None:
    """Make ``Llama.save_state``/``load_state`` skip the logits when ``logits_all`` is off."""
    import llama_cpp
    from llama_cpp import Llama, LlamaState

    original_save, original_load = Llama.save_state, Llama.load_state

    def save_state(self: Any) -> LlamaState:
        if self._logits_all:
            return original_save(self)
        size = llama_cpp.llama_state_get_size(self._ctx.ctx)
        buffer = (ctypes.c_uint8 * size)()
        written = int(llama_cpp.llama_state_get_data(self._ctx.ctx, buffer, size))
        state = LlamaState(
            input_ids=self.input_ids.copy(),
            scores=self.scores[:0].copy(),  # never read: see load_state
            n_tokens=self.n_tokens,
            llama_state=ctypes.string_at(buffer, written),
            llama_state_size=written,
            seed=self._seed,
        )
        state.blocks = getattr(self, BLOCKS_ATTRIBUTE, 0)  # how much of it may be reused
        return state

    def load_state(self: Any, state: LlamaState) -> None:
        if self._logits_all:
            return original_load(self, state)
        self.input_ids = state.input_ids.copy()
        self.n_tokens = state.n_tokens
        self._requires_eval = True
        self._seed = state.seed
        setattr(self, BLOCKS_ATTRIBUTE, getattr(state, "blocks", 0))
        size = state.llama_state_size
        buffer = (ctypes.c_uint8 * size).from_buffer_copy(state.llama_state)
        if llama_cpp.llama_state_set_data(self._ctx.ctx, buffer, size) != size:
            raise RuntimeError("Failed to set llama state data")

    Llama.save_state, Llama.load_state = save_state, load_state


def main() -> None:
    exit_with_parent()
    patch_save_state()
    patch_evaluation()
    from llama_cpp.server.__main__ import main as serve

    sys.argv[0] = "turnbudget.agents.llama_server"
    serve()


if __name__ == "__main__":
    main()
