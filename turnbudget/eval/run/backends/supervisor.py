"""Hand chunks of episodes to a fixed set of workers, and survive the workers.

The ``pool`` and ``ray`` backends share this loop; they differ only in what a
worker is (a forked process on a pipe, a Ray actor), which they describe as
`Workers`. Each worker holds at most one chunk. A worker that dies (killed,
its node lost) fails its chunk with kind ``worker_lost``; one that runs past
its chunk's deadline (``timeout`` seconds per episode it runs one after
another) is killed and fails its chunk with kind ``timeout``. A worker that
sends each outcome as its episode ends (`Workers.salvage`: the ``pool``'s) fails
only what it had not finished, and where it plays in order only the episode it
was playing: the rest of the chunk never started and goes back to be run. Either
way it is replaced and the loop goes on; `run_with_retries` decides what to rerun.

Workers may start in the background (Ray actors waiting for a free CPU): the
loop runs on those that are up, and a worker that comes up later (`Workers.joined`)
takes chunks from then on, so nothing waits on a worker that may never start.
"""

from __future__ import annotations

import abc
import collections
import itertools
import math
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from turnbudget.eval.run.backends import WorkersUnavailable
from turnbudget.eval.run.driver import EpisodeFailure

__all__ = ["Workers", "chunk_size", "supervise"]

Outcomes = list[Any]  # an outcome or an `EpisodeFailure` per job


class Workers(abc.ABC):
    """Worker slots, each running one chunk at a time (and holding up to `depth`)."""

    #: Chunks a worker holds at once, run in the order submitted (more than one: the next
    #: is queued before the previous returns, so no round trip leaves the worker idle).
    depth: int = 1

    #: The slots with a worker (a backend may start fewer than asked, e.g. on a full cluster).
    slots: list[int]

    @abc.abstractmethod
    def submit(self, slot: int, chunk: Sequence[Any]) -> None:
        """Hand ``chunk`` to the worker in ``slot`` (which holds fewer than `depth`); it runs
        after those it holds."""

    @abc.abstractmethod
    def wait(self, timeout: float | None) -> list[tuple[int, Outcomes | str]]:
        """Block until some busy slots finish (or ``timeout`` seconds pass); for each finished
        slot, its outcomes, or a message saying why its worker was lost."""

    @abc.abstractmethod
    def replace(self, slot: int) -> bool:
        """Kill the worker in ``slot`` (if it still runs) and start a fresh one there; True
        when it can take a chunk now, False when it is still starting (it comes back through
        `joined`) or could not be started (the slot is given up)."""

    def salvage(self, slot: int) -> tuple[dict[int, Any], int | None]:
        """What the worker in ``slot``, about to be lost, sent of the chunk it was running:
        its outcomes so far by position in the chunk, and the position of the episode it was
        playing when its outcomes come in order (those after it never started), else None.
        By default nothing: a chunk comes back whole or not at all."""
        return {}, None

    def joined(self) -> list[int]:
        """The slots whose worker came up since the last call (none for workers that are up
        once started)."""
        return []

    @property
    def starting(self) -> bool:
        """Whether a worker is still starting (and may join)."""
        return False


def units(specs: Sequence[Any], width: int) -> int:
    """What `supervise` cuts ``specs`` into chunks of: jobs, or for a batch agent (``width``
    above 1) agent episodes (`chain_key`: a task's budgets in rerun mode are one)."""
    return len(specs) if width <= 1 else len(set(map(chain_key, specs)))


def chunk_size(n_specs: int, workers: int, width: int, timeout: float | None) -> int:
    """Units (`units`) per chunk: about eight chunks per worker, at most 16, never fewer
    than a `BatchAgent`'s ``width``; with a timeout, ``width`` exactly (one episode for a
    plain agent), so a hanging episode costs no other episode an attempt."""
    if timeout is not None:
        return width
    return max(width, min(16, max(1, n_specs // (workers * 8))))


class _Held:
    """A chunk handed out: its jobs, how many workers hold a copy, whether it is done."""

    __slots__ = ("copies", "done", "specs")

    def __init__(self, specs: list[Any]):
        self.specs, self.copies, self.done = specs, 0, False


def supervise(
    workers: Workers,
    specs: Sequence[Any],
    *,
    size: int,
    width: int = 1,
    timeout: float | None = None,
) -> Iterator[Outcomes]:
    """Run ``specs`` in chunks of ``size`` on ``workers``; yield each chunk's outcomes.

    A worker holds up to ``workers.depth`` chunks (run in the order given); a chunk's
    deadline runs from when the one before it on the worker returned. Once no chunk is
    left to hand out, an idle worker also takes a copy of a chunk queued behind another
    worker's (which may be stuck): the first copy to come back counts, once.
    """
    depth = max(1, int(getattr(workers, "depth", 1)))
    # (cut as workers take them: a plan makes its jobs when asked; for a batch agent, ``size``
    # agent episodes, each with all its budgets)
    queue = _Chunks(specs, size, by_chain=width > 1)
    running: dict[int, deque[tuple[_Held, float]]] = {}  # slot -> its chunks, in order
    idle = list(workers.slots)[::-1]  # (the slots holding no chunk)

    def limit(held: _Held) -> float:
        return math.inf if timeout is None else timeout * _rounds(held.specs, width)

    def submit(slot: int, held: _Held, deadline: float) -> None:
        workers.submit(slot, held.specs)
        held.copies += 1
        running.setdefault(slot, deque()).append((held, deadline))

    def lose(slot: int, kind: str, message: str) -> Outcomes | None:
        """Take the worker in ``slot`` out: its chunks queued there and held nowhere else go
        back first. The chunk it was running, if no copy runs elsewhere, ends: what the
        worker finished of it counts, the episode it was playing fails with ``kind`` (every
        one not finished, where the worker cannot say which it was playing), and those it
        never started go back too; returns those outcomes (None when nothing ends)."""
        salvage = getattr(workers, "salvage", None)  # (optional: a `Workers` has it)
        finished, playing = salvage(slot) if salvage is not None else ({}, None)
        entries = [held for held, _ in running.pop(slot, ())]
        for held in entries:
            held.copies -= 1
        queue.put_back([h.specs for h in entries[1:] if not h.done and not h.copies])
        for held in entries[1:]:
            held.done = held.done or not held.copies  # (put back: a new chunk now)
        if workers.replace(slot):
            idle.append(slot)
        if not entries or entries[0].done or entries[0].copies:
            return None
        held = entries[0]
        held.done = True
        if playing is not None and playing + 1 < len(held.specs):
            queue.put_back([held.specs[playing + 1 :]])
        end = len(held.specs) if playing is None else playing + 1
        unfinished = [spec for i, spec in enumerate(held.specs[:end]) if i not in finished]
        if playing is None and len(unfinished) > 1:
            # A batch agent's chunk cannot say which episode hung or crashed it: each
            # unfinished one goes back as a chunk of its own, so only the culprit fails
            # (the whole chunk failed, and its retry batched the innocent with it again).
            queue.put_back([[spec] for spec in unfinished])
            return [finished[i] for i in sorted(finished)] or None
        return [
            finished[i] if i in finished else EpisodeFailure(spec, kind, message)
            for i, spec in enumerate(held.specs[:end])
        ]

    while queue or running:
        idle.extend(s for s in workers.joined() if s not in idle and s not in running)
        if not running and not idle and not workers.starting:
            raise WorkersUnavailable(
                "Every worker was lost and none could be replaced; the finished episodes are "
                "kept: rerun the same call to resume"
            )
        while idle and queue:
            held = _Held(queue.popleft())
            submit(idle.pop(), held, time.monotonic() + limit(held))
        for slot in list(running):  # the next chunk queued before the previous returns
            while len(running[slot]) < depth and queue:
                submit(slot, _Held(queue.popleft()), math.inf)  # (its clock starts with it)
        while idle and not queue:  # the tail: copy a chunk waiting behind another's
            waiting = [
                h for q in running.values() for h, _ in list(q)[1:] if not h.done and h.copies == 1
            ]
            if not waiting:
                break
            submit(idle.pop(), waiting[0], time.monotonic() + limit(waiting[0]))
        deadline = min((q[0][1] for q in running.values()), default=math.inf)
        wait = None if deadline == math.inf else max(0.0, deadline - time.monotonic())
        for slot, outcome in workers.wait(wait):
            if slot not in running:  # (a chunk of a worker lost in this same wait)
                continue
            if isinstance(outcome, str):
                ended = lose(slot, "worker_lost", outcome)
                if ended:
                    yield ended
                continue
            held, _ = running[slot].popleft()
            held.copies -= 1
            if running[slot]:  # the next chunk has started: its clock runs from now
                nxt, _ = running[slot].popleft()
                running[slot].appendleft((nxt, time.monotonic() + limit(nxt)))
            else:
                del running[slot]
                idle.append(slot)
            if not held.done:  # (a copy's second result is dropped)
                held.done = True
                yield outcome
        now = time.monotonic()
        for slot in [s for s, q in running.items() if q[0][1] <= now]:
            message = f"ran past the timeout of {timeout:g}s per episode; its worker was killed"
            ended = lose(slot, "timeout", message)
            if ended:
                yield ended


def chain_key(job: Any) -> Any:
    """The agent episode ``job`` plays in: an evaluation's jobs of one (env, task, repeat) at
    several budgets share a batch agent's episode id, and the driver plays them one after
    another; any other job is its own."""
    try:
        return (job.env_id, job.task_seed, job.rep)
    except AttributeError:
        return ("job", id(job))


def _rounds(jobs: Sequence[Any], width: int) -> int:
    """How many episode times a worker may take over ``jobs`` played ``width`` at a time, the
    jobs of one `chain_key` one after another: every round either plays ``width`` jobs or
    moves every chain left, the longest among them (a timeout of ceil(len / width) killed a
    batch agent's last budget of a task in rerun mode, which had run 1.2 s of a 4 s timeout)."""
    if width <= 1:
        return len(jobs)
    chains = collections.Counter(map(chain_key, jobs))
    longest = max(chains.values(), default=0)
    if len(chains) <= width:  # (every chain in flight at once: its longest decides)
        return longest
    return min(len(jobs), longest + math.ceil(len(jobs) / width))


class _Chunks:
    """The chunks of ``size`` jobs of ``specs``, cut one at a time (true while any is left);
    ``by_chain``: of ``size`` agent episodes (`chain_key`), each whole, so that a batch agent
    plays ``size`` episodes at once (cut by jobs, in rerun mode with 4 budgets a chunk held 2
    episodes of a batch of 8)."""

    def __init__(self, specs: Sequence[Any] | Iterable[Any], size: int, by_chain: bool = False):
        self._jobs = iter(specs)
        self._size = size
        self._by_chain = by_chain
        self._ahead: Any = None  # (the first job of the next chunk, read to end this one)
        self._next = self._cut()
        self._back: deque[list[Any]] = deque()

    def _cut(self) -> list[Any]:
        if not self._by_chain:
            return list(itertools.islice(self._jobs, self._size))
        chunk, keys = [], set()
        if self._ahead is not None:
            chunk, keys, self._ahead = [self._ahead], {chain_key(self._ahead)}, None
        for job in self._jobs:
            key = chain_key(job)
            if key not in keys and len(keys) == self._size:
                self._ahead = job
                break
            chunk.append(job)
            keys.add(key)
        return chunk

    def __bool__(self) -> bool:
        return bool(self._back) or bool(self._next)

    def popleft(self) -> list[Any]:
        if self._back:
            return self._back.popleft()
        chunk, self._next = self._next, self._cut()
        return chunk

    def put_back(self, chunks: Sequence[Sequence[Any]]) -> None:
        """Chunks handed out but never started: they go first."""
        self._back.extendleft(reversed([list(c) for c in chunks]))
