"""The ``local`` backend: every episode in this process, one after another."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence
from typing import Any

from turnbudget.eval.run.backends import Backend, RunnerFactory, close_runner
from turnbudget.eval.run.driver import alarm, can_interrupt
from turnbudget.eval.run.episodes import evaluation_runner

__all__ = ["LocalBackend"]

logger = logging.getLogger(__name__)


class LocalBackend(Backend):
    """Runs episodes in the calling process (``workers`` must be 1).

    Each episode's records are handed over as soon as it ends (so a run that
    fails midway keeps what finished); a `BatchAgent` keeps ``max_batch_size``
    episodes in flight, starting the next one whenever one ends. A
    ``timeout`` stops env steps that can be stopped (TextWorld's interpreter
    runs in a process it kills, in any thread) and interrupts everything else
    with `EpisodeTimeout` (a SIGALRM, so only where the run is driven from the
    main thread of a POSIX process; an agent blocked inside C code that
    retries on signals cannot be interrupted here: use the ``pool`` backend,
    which kills the worker). For a batch agent each episode has its own
    deadline; when one passes, the episodes then in flight are replayed one at
    a time, so only the slow one fails.
    """

    name = "local"

    def __init__(self, workers: int = 1, *, timeout: float | None = None):
        super().__init__(workers, timeout=timeout)
        if self.workers != 1:
            raise ValueError(
                f"The local backend runs in one process: expect `workers`=1, got {workers!r} "
                "(use the pool backend for more)"
            )
        self._runner: Any = None
        self._chunk = 1

    def start(
        self, agent: Any, config: Any, *, serialize: bool, runner: RunnerFactory = evaluation_runner
    ) -> LocalBackend:
        self._runner = runner(agent, config, serialize)
        self._chunk = max(1, int(getattr(agent, "max_batch_size", 1)))
        return self

    def _limit(self) -> float | None:
        if self.timeout is not None and not can_interrupt():
            logger.warning(
                "the local backend interrupts agents only from the main thread on POSIX; "
                "here its timeout stops env steps that can be stopped (TextWorld's "
                "interpreter) and nothing else (the pool backend enforces it anywhere)"
            )
        return self.timeout

    def run(self, specs: Sequence[Any]) -> Iterator[list[Any]]:
        if self._runner is None:
            raise RuntimeError("LocalBackend.run() before start()")
        limit = self._limit()
        if hasattr(self._runner, "stream"):  # the Driver: each episode as it ends
            for _, outcome in self._runner.stream(specs, timeout=limit):
                yield [outcome]
            return
        for i in range(0, len(specs), self._chunk):  # any other runner hook: chunk by chunk
            chunk = specs[i : i + self._chunk]
            seconds = None if limit is None else limit * math.ceil(len(chunk) / self._chunk)
            with alarm(seconds):
                yield self._runner.run(chunk)

    def close(self) -> None:
        runner, self._runner = self._runner, None
        close_runner(runner)
