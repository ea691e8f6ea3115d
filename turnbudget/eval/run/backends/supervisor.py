"""Hand chunks of episodes to a fixed set of workers, and survive the workers.

The ``pool`` and ``ray`` backends share this loop; they differ only in what a
worker is (a forked process on a pipe, a Ray actor), which they describe as
`Workers`. Each worker holds at most one chunk. A worker that dies (killed,
its node lost) fails its chunk with kind ``worker_lost``; one that runs past
its chunk's deadline (``timeout`` seconds per episode it runs one after
another) is killed and fails its chunk with kind ``timeout``. Either way it is
replaced and the loop goes on; `run_with_retries` decides what to rerun.

Workers may start in the background (Ray actors waiting for a free CPU): the
loop runs on those that are up, and a worker that comes up later (`Workers.joined`)
takes chunks from then on, so nothing waits on a worker that may never start.
"""

from __future__ import annotations

import abc
import itertools
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from turnbudget.eval.run.backends import WorkersUnavailable
from turnbudget.eval.run.driver import EpisodeFailure

__all__ = ["Workers", "chunk_size", "supervise"]

Outcomes = list[Any]  # an outcome or an `EpisodeFailure` per job


class Workers(abc.ABC):
    """Worker slots, each running one chunk at a time."""

    #: The slots with a worker (a backend may start fewer than asked, e.g. on a full cluster).
    slots: list[int]

    @abc.abstractmethod
    def submit(self, slot: int, chunk: Sequence[Any]) -> None:
        """Start ``chunk`` on the worker in ``slot`` (which is idle)."""

    @abc.abstractmethod
    def wait(self, timeout: float | None) -> list[tuple[int, Outcomes | str]]:
        """Block until some busy slots finish (or ``timeout`` seconds pass); for each finished
        slot, its outcomes, or a message saying why its worker was lost."""

    @abc.abstractmethod
    def replace(self, slot: int) -> bool:
        """Kill the worker in ``slot`` (if it still runs) and start a fresh one there; True
        when it can take a chunk now, False when it is still starting (it comes back through
        `joined`) or could not be started (the slot is given up)."""

    def joined(self) -> list[int]:
        """The slots whose worker came up since the last call (none for workers that are up
        once started)."""
        return []

    @property
    def starting(self) -> bool:
        """Whether a worker is still starting (and may join)."""
        return False


def chunk_size(n_specs: int, workers: int, width: int, timeout: float | None) -> int:
    """Episodes per chunk: about eight chunks per worker, at most 16 episodes, never fewer
    than a `BatchAgent`'s ``width``; with a timeout, ``width`` exactly (one episode for a
    plain agent), so a hanging episode costs no other episode an attempt."""
    if timeout is not None:
        return width
    return max(width, min(16, max(1, n_specs // (workers * 8))))


def supervise(
    workers: Workers,
    specs: Sequence[Any],
    *,
    size: int,
    width: int = 1,
    timeout: float | None = None,
) -> Iterator[Outcomes]:
    """Run ``specs`` in chunks of ``size`` on ``workers``; yield each chunk's outcomes."""
    queue = _Chunks(specs, size)  # cut as workers take them: a plan makes its jobs when asked
    running: dict[int, tuple[Sequence[Any], float]] = {}
    idle = list(workers.slots)[::-1]
    while queue or running:
        idle.extend(s for s in workers.joined() if s not in idle and s not in running)
        if not running and not idle and not workers.starting:
            raise WorkersUnavailable(
                "Every worker was lost and none could be replaced; the finished episodes are "
                "kept: rerun the same call to resume"
            )
        while idle and queue:
            slot, chunk = idle.pop(), queue.popleft()
            workers.submit(slot, chunk)
            # A worker plays its chunk ``width`` episodes at a time.
            limit = math.inf if timeout is None else timeout * math.ceil(len(chunk) / width)
            running[slot] = (chunk, time.monotonic() + limit)
        deadline = min((d for _, d in running.values()), default=math.inf)
        wait = None if deadline == math.inf else max(0.0, deadline - time.monotonic())
        for slot, outcome in workers.wait(wait):
            chunk, _ = running.pop(slot)
            if isinstance(outcome, str):
                if workers.replace(slot):
                    idle.append(slot)
                yield [EpisodeFailure(spec, "worker_lost", outcome) for spec in chunk]
            else:
                idle.append(slot)
                yield outcome
        now = time.monotonic()
        for slot in [s for s, (_, d) in running.items() if d <= now]:
            chunk, _ = running.pop(slot)
            if workers.replace(slot):
                idle.append(slot)
            message = f"ran past the timeout of {timeout:g}s per episode; its worker was killed"
            yield [EpisodeFailure(spec, "timeout", message) for spec in chunk]


class _Chunks:
    """The chunks of ``size`` jobs of ``specs``, cut one at a time (true while any is left)."""

    def __init__(self, specs: Sequence[Any] | Iterable[Any], size: int):
        self._jobs = iter(specs)
        self._size = size
        self._next = list(itertools.islice(self._jobs, size))

    def __bool__(self) -> bool:
        return bool(self._next)

    def popleft(self) -> list[Any]:
        chunk, self._next = self._next, list(itertools.islice(self._jobs, self._size))
        return chunk
