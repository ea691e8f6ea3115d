"""Evaluation backends: where and how the planned episodes run.

A backend is given the agent, the `EvalConfig` and the episodes still to run,
and yields their results; it decides nothing about *what* runs (that is
`turnbudget.eval.plan`) and nothing about what is written (that is
`evaluate`). Every backend plays episodes through
`turnbudget.eval.runner.EpisodeRunner`, so results never depend on the
backend, its worker count or the order in which episodes finish.

Built in: ``local`` (this process) and ``pool`` (a local process pool). A new
backend is one module with a `Backend` subclass, listed in `BUILTIN_BACKENDS`
(or added at run time with `register_backend`)::

    class MyBackend(Backend):
        name = "mine"

        def start(self, agent, config, *, serialize):
            ...  # start workers; each builds EpisodeRunner(agent, config, serialize)
            # (a local worker process also calls turnbudget.eval.lock.exit_with_parent())

        def run(self, specs):
            ...  # yield lists of EpisodeResult, in any order, covering every spec

        def close(self):
            ...  # stop the workers; called even when run() was interrupted

Example:
    >>> sorted(list_backends())[:2]
    ['local', 'pool']
    >>> make_backend("pool", workers=2)
    PoolBackend(workers=2)
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from turnbudget._checks import check_positive_int, load_object
from turnbudget.eval.plan import EpisodeSpec, EvalConfig
from turnbudget.eval.runner import EpisodeResult

__all__ = [
    "BUILTIN_BACKENDS",
    "Backend",
    "list_backends",
    "make_backend",
    "register_backend",
]


class Backend(abc.ABC):
    """Runs planned episodes and yields their results.

    Use it as a context manager around `start`::

        with backend.start(agent, config, serialize=True):
            for results in backend.run(specs):
                ...

    Args:
        workers: how many episodes' worth of parallel workers to use (its
            meaning is the backend's: processes for ``pool``; ``local`` accepts 1 only).
    """

    name: ClassVar[str] = ""

    def __init__(self, workers: int = 1):
        self.workers = check_positive_int(workers, "workers")

    @abc.abstractmethod
    def start(self, agent: Any, config: EvalConfig, *, serialize: bool) -> Backend:
        """Get ready to run episodes of ``agent`` under ``config``; return ``self``.

        ``serialize`` asks for step records as JSON lines (see `EpisodeRunner`).
        """

    @abc.abstractmethod
    def run(self, specs: Sequence[EpisodeSpec]) -> Iterator[list[EpisodeResult]]:
        """Yield the results of ``specs`` in chunks, in any order, each episode exactly once."""

    def close(self) -> None:  # noqa: B027  (optional hook: nothing to release by default)
        """Release what `start` acquired; safe to call twice, and after an interrupted `run`."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(workers={self.workers})"


#: name -> ``"module:Class"``, imported only when the backend is used.
BUILTIN_BACKENDS: dict[str, str] = {
    "local": "turnbudget.eval.backends.local:LocalBackend",
    "pool": "turnbudget.eval.backends.pool:PoolBackend",
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


def make_backend(name: str, workers: int = 1) -> Backend:
    """Build the backend registered as ``name`` with ``workers`` workers."""
    if name not in _REGISTRY:
        raise ValueError(f"Unknown backend {name!r}; expect one of {list_backends()}")
    cls = _REGISTRY[name]
    if isinstance(cls, str):
        cls = load_object(cls, what=f"backend {name!r}")
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise TypeError(f"Backend {name!r} is {cls!r}, not a Backend subclass")
    return cls(workers)
