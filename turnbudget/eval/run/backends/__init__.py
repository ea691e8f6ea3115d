"""Backends: where and how the planned episodes run.

A backend is given the agents, the run's configuration and the jobs still to
run, and yields their outcomes; it decides nothing about *what* runs (the
plan) nor what is written (the front door: `evaluate`, `probe`,
`evaluate_team`). Every backend plays jobs through the episode driver
(`turnbudget.eval.run.driver.Driver`), so results never depend on the backend,
its worker count or the order in which episodes finish.

Built in: ``local`` (this process), ``pool`` (a local process pool) and
``ray`` (a Ray cluster, or a local Ray instance for the run; the ``ray`` extra). A new
backend is one module with a `Backend` subclass, listed in `BUILTIN_BACKENDS`
(or added at run time with `register_backend`)::

    class MyBackend(Backend):
        name = "mine"

        def start(self, agent, config, *, serialize, runner):
            ...  # start workers; each builds runner(agent, config, serialize)
            # (a local worker process also calls turnbudget.eval.run.lock.exit_with_parent())

        def run(self, jobs):
            ...  # yield lists of outcomes / EpisodeFailure, in any order, each job once

        def close(self):
            ...  # stop the workers; called even when run() was interrupted

        def check_available(self):  # optional
            ...  # raise ImportError (what to install) unless it can run here: asked
            # before a run writes or deletes anything

Runner hook: a worker plays its chunks through ``runner(agent, config,
serialize).run(chunk)`` (or ``.stream(chunk, timeout=...)`` in this process),
and closes it when it stops (`close_runner`: the envs it made end with it);
``runner`` is a `Driver` factory bound to the run's kind
(``functools.partial(Driver, kind=...)``, which `turnbudget.eval.run.jobs.run_jobs`
builds; `evaluation_runner` by default). A job has an ``episode_id`` and sorts in a fixed order.

Faults: a backend reports an episode it could not finish as an
`EpisodeFailure` (the agent or env raised, the worker running it died, it
ran past ``timeout`` seconds) instead of raising; `run_with_retries` runs
those again, up to ``retries`` more times each, and then yields a
*failed-to-run* record for each one still failing (`failed_record`), which
the analysis keeps apart from the agent's own failures.

Example:
    >>> sorted(list_backends())[:3]
    ['local', 'pool', 'ray']
    >>> make_backend("pool", workers=2)
    PoolBackend(workers=2)
"""

from __future__ import annotations

import abc
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

from turnbudget._checks import brief, check_positive_int, is_real, load_object
from turnbudget.eval.run.driver import EpisodeFailure
from turnbudget.eval.run.episodes import evaluation_runner

__all__ = [
    "ABORT_AFTER",
    "BUILTIN_BACKENDS",
    "KEPT_ON_ABORT",
    "MAX_LOCAL_WORKERS",
    "MAX_TIMEOUT",
    "WORKER_START_SECONDS",
    "Backend",
    "EvaluationAborted",
    "RunnerFactory",
    "WorkersUnavailable",
    "check_timeout",
    "check_workers",
    "close_runner",
    "failed_record",
    "list_backends",
    "make_backend",
    "named",
    "ready_deadline",
    "register_backend",
    "resolve_backend",
    "run_with_retries",
]

logger = logging.getLogger(__name__)


#: The most workers a backend starts on this machine: the ``pool``'s processes, the actors of
#: a Ray instance started for the run. A fixed number, not a multiple of ``os.cpu_count()``,
#: so that a command accepted on one machine is accepted on every one (results never depend
#: on the worker count). It is far past what one machine gains (an LLM agent keeps many
#: requests in flight per worker: ``concurrency``); it stops a slip (``--workers 100000``)
#: from forking processes until the machine gives out.
MAX_LOCAL_WORKERS = 256
#: The longest episode timeout, in seconds (about 115 days): the clocks that enforce it
#: (``signal.setitimer``, a pool's ``poll``) overflow past about 9.2e9 s, which failed every
#: episode (local) or the run with a traceback (pool); None is no limit.
MAX_TIMEOUT = 10**7


#: Builds a worker's runner from ``(agent, config, serialize)``; its ``run(chunk)`` returns
#: one outcome (a result or an `EpisodeFailure`) per work item, in order. Must be picklable.
RunnerFactory = Callable[..., Any]


class Backend(abc.ABC):
    """Runs planned episodes and yields their results.

    Use it as a context manager around `start`::

        with backend.start(agent, config, serialize=True):
            for results in backend.run(specs):
                ...

    Args:
        workers: how many episodes' worth of parallel workers to use (its
            meaning is the backend's: processes for ``pool``, actors for
            ``ray``; ``local`` accepts 1 only).
        timeout: seconds one episode may run (a `BatchAgent`'s batch: seconds
            per episode it holds), None for no limit. An episode past it is
            stopped (its worker killed and replaced) and reported as an
            `EpisodeFailure` of kind ``timeout``.
    """

    name: ClassVar[str] = ""
    #: The most ``workers`` the backend accepts (None: no limit of its own).
    max_workers: ClassVar[int | None] = None

    def __init__(self, workers: int = 1, *, timeout: float | None = None):
        self.workers = check_workers(workers, self.max_workers, self.name)
        self.timeout = check_timeout(timeout)

    @abc.abstractmethod
    def start(
        self, agent: Any, config: Any, *, serialize: bool, runner: RunnerFactory = evaluation_runner
    ) -> Backend:
        """Get ready to run episodes of ``agent`` under ``config``; return ``self``.

        ``serialize`` asks for outcomes ready to send between processes (step records
        as JSON lines: see `EvaluationEpisodes`).
        ``runner`` is what each worker builds from ``(agent, config, serialize)``
        to run its chunks (the runner hook; see the module doc).
        """

    @abc.abstractmethod
    def run(self, specs: Sequence[Any]) -> Iterator[list[Any]]:
        """Yield the outcomes of ``specs`` in chunks, in any order, each episode exactly once:
        its result, or an `EpisodeFailure` when it could not be run to its end."""

    def check_available(self) -> None:  # noqa: B027  (optional hook: nothing to check by default)
        """Raise (ImportError, with what to install) unless the backend can run here: asked by
        `resolve_backend`, before a run writes or deletes anything (with ``overwrite``, the
        run before it)."""

    def close(self) -> None:  # noqa: B027  (optional hook: nothing to release by default)
        """Release what `start` acquired; safe to call twice, and after an interrupted `run`."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(workers={self.workers})"


#: Seconds a worker may take to build its runner (its envs, ...), beside its agents' own start
#: and ``ready()`` (`ready_deadline`).
WORKER_START_SECONDS = 60.0


def ready_deadline(agent: Any) -> float:
    """Seconds a worker (a pool's process, once started; a Ray actor, once up) may take to
    have its runner ready: each of ``agent``'s agents may take `sealed.START_SECONDS` to start
    (sealed) and `sealed.READY_SECONDS` in ``ready()``, one after another (a team's seats, a
    comparison's agents), and the worker `WORKER_START_SECONDS` of its own. Read when the
    workers start (an agent whose ``ready()`` hung in a worker stalled the whole run)."""
    from turnbudget.eval.run import sealed

    agents = len(getattr(agent, "agents", (agent,)))
    return agents * (sealed.START_SECONDS + sealed.READY_SECONDS) + WORKER_START_SECONDS


def named(agent: Any) -> str:
    """The agent's name, or its agents' (an `AgentSet`), for an error message."""
    from turnbudget.eval.run.plan import agent_name

    return ", ".join(repr(agent_name(one)) for one in getattr(agent, "agents", (agent,)))


def close_runner(runner: Any) -> None:
    """Close a worker's runner (a `Driver` closes the envs its kind made), if it has ``close``."""
    close = getattr(runner, "close", None)
    if close is not None:
        close()


def check_workers(workers: Any, limit: int | None = None, backend: str = "") -> int:
    """A positive int, at most ``limit`` (the backend's `Backend.max_workers`), or ValueError.

    Example:
        >>> check_workers(300, MAX_LOCAL_WORKERS, "pool")
        Traceback (most recent call last):
        ...
        ValueError: Expect `workers` to be at most 256 for the pool backend (processes on this machine), got 300
    """
    workers = check_positive_int(workers, "workers")
    if limit is not None and workers > limit:
        where = f" for the {backend} backend" if backend else ""
        raise ValueError(
            f"Expect `workers` to be at most {limit}{where} (processes on this machine), "
            f"got {brief(workers)}"
        )
    return workers


def check_timeout(timeout: Any) -> float | None:
    """None, or a positive number of seconds up to `MAX_TIMEOUT`."""
    if timeout is None:
        return None
    try:
        seconds = float(timeout) if is_real(timeout) else math.nan
    except OverflowError:  # (an int past float's range)
        seconds = math.inf
    if not 0 < seconds <= MAX_TIMEOUT:
        raise ValueError(
            f"Expect `timeout` to be a positive number of seconds, at most {MAX_TIMEOUT:,} "
            f"(None: no limit), got {brief(timeout)}"
        )
    return seconds


def failed_record(failure: EpisodeFailure, attempts: int) -> dict[str, Any]:
    """The episode record of an episode that failed to run ``attempts`` times.

    It carries the episode's identity and ``failed_to_run: True`` but no
    outcome (no ``success``, no turns): the analysis counts it apart from the
    agent's failures and leaves it out of every estimate.
    """
    spec = failure.spec
    return {
        "record": "episode",
        "episode_id": spec.episode_id,
        "env_id": spec.env_id,
        "seed": spec.task_seed,
        "rep": spec.rep,
        "turn_budget": spec.turn_budget,
        "agent_seed": spec.agent_seed,
        "failed_to_run": True,
        "failure": failure.kind,
        "error": failure.error,
        "attempts": attempts,
    }


#: First attempts failing in a row, with no episode finishing between them, from more than
#: one task, that stop a run: something is broken for every episode (a server down, an env
#: that cannot be built), and retrying all of them would only burn time.
ABORT_AFTER = 25


class EvaluationAborted(RuntimeError):
    """Too many episodes in a row failed to run; the finished ones are kept (rerun to resume)."""


#: How `EvaluationAborted`'s message ends: what a rerun does (a run that keeps nothing
#: until it ends, a probe run, says otherwise).
KEPT_ON_ABORT = "Finished episodes are kept; fix the cause and rerun the same command to resume."


class WorkersUnavailable(RuntimeError):
    """A backend has no worker to run episodes on: it could not start them (Ray could not
    start or be reached, a worker failed to start) or lost every one. The message says what
    failed and what to do; the finished episodes are kept (rerun to resume)."""


def run_with_retries(
    backend: Backend,
    specs: Sequence[Any],
    retries: int = 2,
    *,
    on_failure: Callable[[EpisodeFailure, int], Any] | None = None,
) -> Iterator[list[Any]]:
    """Run ``specs`` on a started ``backend``; rerun failures up to ``retries`` more times.

    Yields lists of ``(episode record, step records)``; an episode that failed
    on every attempt is yielded last, as its `failed_record` with no steps. A
    rerun episode is the same episode (same env seed, same agent seed), so
    retries change no result, only whether one exists. Raises
    `EvaluationAborted` when `ABORT_AFTER` first attempts in a row fail, from more than one
    task (the episodes of one chunk whose worker was lost count once).
    ``on_failure(failure, attempts)`` builds what is yielded for an item that
    failed every attempt (default: ``(failed_record(...), [])``).
    """
    if not (isinstance(retries, int) and not isinstance(retries, bool) and retries >= 0):
        raise ValueError(f"Expect `retries` to be a non-negative int, got {retries!r}")
    todo: Sequence[Any] = specs  # (not listed: a plan makes its jobs when asked for)
    streak = 0
    streak_tasks: set[Any] = set()  # the tasks the failures in a row came from
    for attempt in range(1, retries + 2):
        failed: list[EpisodeFailure] = []
        for outcomes in backend.run(todo):
            done = [o for o in outcomes if not isinstance(o, EpisodeFailure)]
            lost = False  # (a chunk's lost worker is one fault: 16 episodes of it counted as
            for o in outcomes:  # 16, and two crashing episodes stopped every rerun)
                if not isinstance(o, EpisodeFailure):
                    streak = 0
                    streak_tasks.clear()
                    continue
                logger.warning(
                    "episode %s failed to run (attempt %d of %d): %s: %s",
                    o.spec.episode_id, attempt, retries + 1, o.kind, o.error,
                )  # fmt: skip
                failed.append(o)
                streak += attempt == 1 and not (lost and o.kind == "worker_lost")
                lost = lost or o.kind == "worker_lost"
                if attempt == 1:
                    streak_tasks.add(_task_key(o.spec))
                # (one task that always fails is the agent's or the task's, not a broken run:
                # its n x |T| episodes in a row stopped the run, and every resume)
                if streak >= ABORT_AFTER and len(streak_tasks) > 1:
                    raise EvaluationAborted(
                        f"{streak} episodes in a row failed to run, the last with {o.kind}: "
                        f"{o.error}. {KEPT_ON_ABORT}"
                    )
            if done:
                yield done
        if not failed:
            return
        todo = sorted(f.spec for f in failed)
    if on_failure is None:
        on_failure = lambda f, attempts: (failed_record(f, attempts), [])  # noqa: E731
    yield [on_failure(f, retries + 1) for f in sorted(failed, key=lambda f: f.spec)]


def _task_key(job: Any) -> Any:
    """The task a job plays (env id, task seed), else the job itself."""
    spec = getattr(job, "spec", job)
    key = (getattr(spec, "env_id", None), getattr(spec, "task_seed", None))
    return job if key == (None, None) else key


#: name -> ``"module:Class"``, imported only when the backend is used.
BUILTIN_BACKENDS: dict[str, str] = {
    "local": "turnbudget.eval.run.backends.local:LocalBackend",
    "pool": "turnbudget.eval.run.backends.pool:PoolBackend",
    "ray": "turnbudget.eval.run.backends.ray:RayBackend",
}

_REGISTRY: dict[str, type[Backend] | str] = dict(BUILTIN_BACKENDS)


def register_backend(name: str, backend: type[Backend] | str) -> None:
    """Make ``name`` usable as ``evaluate(backend=name)`` and ``turnbudget eval --backend``.

    Args:
        name: the backend's name.
        backend: a `Backend` subclass, or ``"module:Class"`` to import on first use.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"Expect `name` to be a non-empty str, got {name!r}")
    _REGISTRY[name] = backend


def list_backends() -> list[str]:
    """The registered backend names."""
    return list(_REGISTRY)


def make_backend(name: str, workers: int = 1, **options: Any) -> Backend:
    """Build the backend registered as ``name`` with ``workers`` workers.

    ``options`` go to its constructor: ``timeout`` for every backend, and the
    backend's own (``address=`` for ``ray``).
    """
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"Unknown backend {brief(name)}; expect one of {list_backends()}")
    cls = _REGISTRY[name]
    if isinstance(cls, str):
        cls = load_object(cls, what=f"backend {name!r}")
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise TypeError(f"Backend {name!r} is {cls!r}, not a Backend subclass")
    return cls(workers, **options)


def resolve_backend(
    backend: str | Backend | None,
    workers: int = 1,
    options: dict[str, Any] | None = None,
    timeout: float | None = None,
) -> Backend:
    """The backend a run plays on: ``backend`` itself (a ``timeout`` given here replaces
    its own), or the one registered under that name (default: ``local`` for one worker,
    else ``pool``) built with ``workers``, ``timeout`` and ``options``; checked to be able to
    run here (`Backend.check_available`: ``ray`` without Ray failed after ``overwrite`` had
    deleted the run before)."""
    timeout = check_timeout(timeout)
    if isinstance(backend, Backend):
        if timeout is not None:
            backend.timeout = timeout
        backend.check_available()
        return backend
    check_positive_int(workers, "workers")
    for own in ("workers", "timeout"):  # (else a TypeError: "got multiple values for ...")
        if own in (options or {}):
            raise ValueError(
                f"Expect `{own}` as an argument of its own, not in `backend_options` "
                f"(got backend_options={brief(options)})"
            )
    if backend is not None and not isinstance(backend, str):  # (a list: "unhashable type")
        raise TypeError(
            f"Expect `backend` to be a backend's name (one of {list_backends()}), a Backend "
            f"or None, got {brief(backend)}"
        )
    name = backend if backend is not None else ("local" if workers == 1 else "pool")
    made = make_backend(name, workers, timeout=timeout, **(options or {}))
    made.check_available()
    return made
