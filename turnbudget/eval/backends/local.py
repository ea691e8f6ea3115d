"""The ``local`` backend: every episode in this process, one after another."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from turnbudget.eval.backends import Backend
from turnbudget.eval.plan import EpisodeSpec, EvalConfig
from turnbudget.eval.runner import EpisodeResult, EpisodeRunner

__all__ = ["LocalBackend"]


class LocalBackend(Backend):
    """Runs episodes in the calling process (``workers`` must be 1).

    Each episode's records are handed over as soon as it ends (so a run that
    fails midway keeps what finished); a `BatchAgent` keeps ``max_batch_size``
    episodes in flight, starting the next one whenever one ends.
    """

    name = "local"

    def __init__(self, workers: int = 1):
        super().__init__(workers)
        if self.workers != 1:
            raise ValueError(
                f"The local backend runs in one process: expect `workers`=1, got {workers!r} "
                "(use the pool backend for more)"
            )
        self._runner: EpisodeRunner | None = None

    def start(self, agent: Any, config: EvalConfig, *, serialize: bool) -> LocalBackend:
        self._runner = EpisodeRunner(agent, config, serialize=serialize)
        return self

    def run(self, specs: Sequence[EpisodeSpec]) -> Iterator[list[EpisodeResult]]:
        if self._runner is None:
            raise RuntimeError("LocalBackend.run() before start()")
        for _, result in self._runner.stream(specs):
            yield [result]

    def close(self) -> None:
        self._runner = None
