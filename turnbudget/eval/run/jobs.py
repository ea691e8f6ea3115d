"""Playing a run's planned jobs: on a backend, with retries, into a run directory or memory.

`run_jobs` is what every front door (`evaluate`, `evaluate_team`, `probe`)
calls to play its jobs through the episode driver; `play_planned` adds what
the two that keep run directories share: preparing (or resuming) the
directory, writing each finished episode's records as it comes, and reading
the complete run back.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import operator
import os
import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from turnbudget.eval.run.backends import Backend, run_with_retries
from turnbudget.eval.run.driver import Driver, EpisodeFailure
from turnbudget.records import (
    EPISODES_FILE,
    EpisodeLog,
    LogWriter,
    RunPlan,
    prepare_run_dir,
    repair_logs,
)

__all__ = ["Played", "Remaining", "play_planned", "run_jobs"]


def run_jobs(
    backend: Backend,
    agent: Any,
    config: Any,
    jobs: Sequence[Any],
    *,
    kind: Any,
    serialize: bool,
    retries: int,
    sink: Callable[[list[Any]], Any],
    on_failure: Callable[[EpisodeFailure, int], Any] | None = None,
    progress: bool = False,
    total: int | None = None,
    desc: str = "",
    unit: str = "ep",
) -> None:
    """Play ``jobs`` of ``kind`` (a `Kind` class) on ``backend``, with `run_with_retries`,
    handing each list of outcomes to ``sink`` as it comes; ``progress`` shows a bar on
    stderr over ``total`` jobs (default: ``len(jobs)``; more when some were resumed)."""
    from tqdm.auto import tqdm

    total = len(jobs) if total is None else total
    # (no stderr, as under `2>&-` or pythonw: the bar's first write failed the run, which
    # then ended with exit 1 and not a word)
    shown = progress and sys.stderr is not None
    with tqdm(
        total=total, initial=total - len(jobs), desc=desc, unit=unit, disable=not shown,
        dynamic_ncols=True, leave=True,
    ) as bar:  # fmt: skip
        if not jobs:  # (a fully resumed run shows its finished bar)
            return
        runner = functools.partial(Driver, kind=kind)
        with backend.start(agent, config, serialize=serialize, runner=runner):
            for outcomes in run_with_retries(backend, jobs, retries, on_failure=on_failure):
                sink(outcomes)
                bar.update(len(outcomes))


@dataclass
class Played:
    """What `play_planned` gives back: every episode record of the run (resumed ones too),
    sorted by episode id (with a run directory, an `EpisodeLog` that reads its log when
    first used); the other records (steps, team members') when there is no run directory;
    how many episodes this call ran; the run directory."""

    episodes: Sequence[dict[str, Any]]
    records: list[dict[str, Any]] = field(default_factory=list)
    n_run: int = 0
    out: Path | None = None

    def stream(self) -> Iterator[dict[str, Any]]:
        """The episode records one at a time, none held (from the log when there is one)."""
        if isinstance(self.episodes, EpisodeLog):
            return self.episodes.stream()
        return iter(self.episodes)


class Remaining(Sequence[Any]):
    """The jobs of ``specs`` whose ``episode_id`` is not in ``done``, in order, as a sequence
    that holds only the positions of the done ones (a resumed run of millions of
    episodes does not list the rest)."""

    def __init__(self, specs: Sequence[Any], done: Collection[str]):
        self._specs = specs
        self._holes = [i for i, s in enumerate(specs) if s.episode_id in done]  # sorted
        self._size = len(specs) - len(self._holes)

    def __len__(self) -> int:
        return self._size

    def _position(self, j: int) -> int:
        """Where the ``j``-th remaining job sits in ``specs``: the least ``i`` with ``j + 1``
        jobs not done among the first ``i + 1``."""
        low, high = j, j + len(self._holes)
        while low < high:
            mid = (low + high) // 2
            if mid + 1 - bisect.bisect_right(self._holes, mid) >= j + 1:
                high = mid
            else:
                low = mid + 1
        return low

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._size)
            if step != 1:
                return [self[j] for j in range(start, stop, step)]
            return list(itertools.islice(self._walk(start), max(0, stop - start)))
        j = operator.index(index)
        if j < 0:
            j += self._size
        if not 0 <= j < self._size:
            raise IndexError(f"job {index} of {self._size}")
        return self._specs[self._position(j)]

    def _walk(self, j: int) -> Iterator[Any]:
        """The remaining jobs from the ``j``-th on."""
        if j >= self._size:
            return
        holes, first = self._holes, self._position(j)
        k = bisect.bisect_right(holes, first)
        for i in range(first, len(self._specs)):
            if k < len(holes) and holes[k] == i:
                k += 1
                continue
            yield self._specs[i]

    def __iter__(self) -> Iterator[Any]:
        return self._walk(0)


def play_planned(
    backend: Backend,
    agent: Any,
    config: Any,
    specs: Sequence[Any],
    *,
    kind: Any,
    plan: RunPlan,
    out: str | os.PathLike[str] | None,
    overwrite: bool,
    check_config: Callable[[dict[str, Any]], Any],
    retries: int,
    progress: bool,
    desc: str,
    on_episode: Callable[[dict[str, Any]], Any] | None = None,
) -> Played:
    """Play the episodes ``specs`` of ``kind`` (each outcome is ``(episode record, other
    records)``), into the run directory ``out`` when given: ``run.json`` holds
    ``config.to_dict()`` (an existing run there must have the same, checked by
    ``check_config``; ``overwrite`` starts afresh), the episodes it already holds are
    skipped (resume), and each finished episode is appended as it comes.
    ``on_episode`` is called with each episode record this call plays, once, after it
    is written (not with the resumed ones: ``Played.n_run`` tells whether there were any)."""
    out_path = Path(out) if out is not None else None
    done: set[str] = set()
    if out_path is not None:
        prepare_run_dir(out_path, config.to_dict(), overwrite, check_config)
        done = repair_logs(out_path, plan)
    todo = Remaining(specs, done) if done else specs
    episodes: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    writer = LogWriter(out_path) if out_path is not None else None

    def sink(outcomes: list[tuple[dict[str, Any], Any]]) -> None:
        for episode, others in outcomes:
            if writer is not None:
                writer.write(episode, others)
            else:
                episodes.append(episode)
                records.extend(others)  # dicts when not serialising
            if on_episode is not None:
                on_episode(episode)

    try:
        run_jobs(
            backend, agent, config, todo, kind=kind, serialize=writer is not None,
            retries=retries, sink=sink, progress=progress, total=len(specs), desc=desc,
        )  # fmt: skip
    finally:
        if writer is not None:
            writer.close()
    if out_path is not None:  # (read when used: a summary streams it)
        return Played(EpisodeLog(out_path / EPISODES_FILE, plan), [], len(todo), out_path)
    episodes.sort(key=lambda e: e["episode_id"])
    return Played(episodes, records, len(todo), out_path)
