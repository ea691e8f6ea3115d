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
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

__all__ = ["main", "patch_save_state"]


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
        return LlamaState(
            input_ids=self.input_ids.copy(),
            scores=self.scores[:0].copy(),  # never read: see load_state
            n_tokens=self.n_tokens,
            llama_state=ctypes.string_at(buffer, written),
            llama_state_size=written,
            seed=self._seed,
        )

    def load_state(self: Any, state: LlamaState) -> None:
        if self._logits_all:
            return original_load(self, state)
        self.input_ids = state.input_ids.copy()
        self.n_tokens = state.n_tokens
        self._requires_eval = True
        self._seed = state.seed
        size = state.llama_state_size
        buffer = (ctypes.c_uint8 * size).from_buffer_copy(state.llama_state)
        if llama_cpp.llama_state_set_data(self._ctx.ctx, buffer, size) != size:
            raise RuntimeError("Failed to set llama state data")

    Llama.save_state, Llama.load_state = save_state, load_state


def main() -> None:
    patch_save_state()
    from llama_cpp.server.__main__ import main as serve

    sys.argv[0] = "turnbudget.agents.llama_server"
    serve()


if __name__ == "__main__":
    main()
