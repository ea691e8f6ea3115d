"""The ``pool`` backend: episodes in chunks over a local process pool."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
from collections.abc import Iterator, Sequence
from typing import Any

from turnbudget.eval.backends import Backend
from turnbudget.eval.lock import exit_with_parent
from turnbudget.eval.plan import EpisodeSpec, EvalConfig
from turnbudget.eval.runner import EpisodeResult, EpisodeRunner

__all__ = ["PoolBackend"]

# Each worker process holds one runner (its envs are reused across chunks).
_WORKER: EpisodeRunner | None = None


def _init_worker(agent: Any, config: EvalConfig, serialize: bool) -> None:
    global _WORKER
    exit_with_parent()  # no orphaned workers when the evaluator is killed
    _WORKER = EpisodeRunner(agent, config, serialize)


def _ready() -> None:
    """A no-op task: submitting it makes the executor start its workers."""


def _run_chunk(specs: Sequence[EpisodeSpec]) -> list[EpisodeResult]:
    assert _WORKER is not None, "worker not initialised"
    return _WORKER.run(specs)


class PoolBackend(Backend):
    """Runs episodes on ``workers`` processes (forked where the platform allows).

    The agent is sent to each worker once, so it must be picklable. Chunks are
    small enough to balance the load (about eight per worker, at most 16
    episodes) and never smaller than a `BatchAgent`'s ``max_batch_size``.
    """

    name = "pool"

    def __init__(self, workers: int = 1):
        super().__init__(workers)
        self._pool: cf.ProcessPoolExecutor | None = None
        self._width = 1

    def start(self, agent: Any, config: EvalConfig, *, serialize: bool) -> PoolBackend:
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        self._width = int(getattr(agent, "max_batch_size", 1))
        self._pool = cf.ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context(method),
            initializer=_init_worker,
            initargs=(agent, config, serialize),
        )
        # Fork the workers now, before the caller starts threads (a progress bar's monitor).
        self._pool.submit(_ready).result()
        return self

    def run(self, specs: Sequence[EpisodeSpec]) -> Iterator[list[EpisodeResult]]:
        if self._pool is None:
            raise RuntimeError("PoolBackend.run() before start()")
        size = max(self._width, min(16, max(1, len(specs) // (self.workers * 8))))
        futures = [
            self._pool.submit(_run_chunk, specs[i : i + size]) for i in range(0, len(specs), size)
        ]
        try:
            for future in cf.as_completed(futures):
                yield future.result()
        finally:  # interrupted (an error, or the consumer stopped): drop what has not started
            for future in futures:
                future.cancel()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
