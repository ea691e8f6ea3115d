"""The ``ray`` backend: episodes in chunks over Ray actors, on a cluster or a local instance.

Needs the ``ray`` extra (Ray core only). Each worker is an actor that holds
one episode driver (`Driver`); the agent is put in the object store once
(``ray.put``) and deserialised once per actor. Chunks go to idle actors one
at a time (the same `supervise` loop as the ``pool`` backend), so a dead
actor (its process killed, its node lost) or one past the timeout costs only
its chunk, which comes back as `EpisodeFailure` and is rerun by
`run_with_retries`; the actor is replaced.

Where it runs:

- ``address=None`` (and no ``RAY_ADDRESS`` in the environment): a local Ray
  instance is started for the run (``workers`` CPUs, no dashboard, a small
  object store) and shut down after it;
- ``address="auto"``, ``"ray://host:10001"`` or ``"host:6379"``: an existing
  cluster, which is left running. Every node needs turnbudget (and the
  agent's code) installed, and the TextWorld games: a cache directory shared
  by all nodes (``TURNBUDGET_TEXTWORLD_CACHE``) or ``turnbudget textworld pregen`` run on
  each node first;
- Ray already initialised by the caller: used as it is, and left running.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any

from turnbudget.eval.run.backends import Backend, RunnerFactory
from turnbudget.eval.run.backends.supervisor import Workers, chunk_size, supervise
from turnbudget.eval.run.driver import describe
from turnbudget.eval.run.episodes import evaluation_runner

__all__ = ["OBJECT_STORE_BYTES", "START_TIMEOUT", "RayBackend", "import_ray"]

logger = logging.getLogger(__name__)

#: The object store of a local instance: results are small and fetched at once.
OBJECT_STORE_BYTES = 200 * 1024**2

#: Seconds to wait for an actor to start (a cluster without a free CPU keeps it pending).
START_TIMEOUT = 120.0


def import_ray() -> Any:
    """Import Ray, or say how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError("The ray backend needs Ray: pip install 'turnbudget[ray]'") from exc
    return ray


class _Runner:
    """The actor's class: one runner (the run's `Driver`) for its life."""

    def __init__(self, agent: Any, config: Any, serialize: bool, make_runner: RunnerFactory):
        self.runner = make_runner(agent, config, serialize)

    def pid(self) -> int:
        return os.getpid()

    def run(self, chunk: Sequence[Any]) -> list[Any]:
        return self.runner.run(chunk)


class _Actors(Workers):
    """``size`` actors of one remote class; the agent's object ref is shared by all."""

    def __init__(
        self, ray: Any, size: int, agent_ref: Any, config: Any, serialize: bool,
        make_runner: RunnerFactory,
    ):  # fmt: skip
        self._ray = ray
        # A fresh remote class per run: its pickled definition carries no state of another.
        self._cls = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(_Runner)
        self._args = (agent_ref, config, serialize, make_runner)
        self.actors: list[Any] = [self._cls.remote(*self._args) for _ in range(size)]
        self._calls: dict[Any, int] = {}
        self.slots, error = self._ready(range(size))
        if error is not None or not self.slots:
            self.close()
        if error is not None:  # an actor that cannot be built: every other one fails alike
            raise RuntimeError(
                f"A Ray worker failed to start: {error} (is turnbudget, and the agent's "
                "code, installed on every node?)"
            )
        if not self.slots:
            raise RuntimeError(
                f"No Ray worker started within {START_TIMEOUT:g}s: the cluster has no free CPU"
            )
        if len(self.slots) < size:
            logger.warning(
                "only %d of %d Ray workers started within %gs (too few free CPUs); "
                "running on those", len(self.slots), size, START_TIMEOUT,
            )  # fmt: skip

    def _ready(self, slots: Any) -> tuple[list[int], str | None]:
        """The slots whose actor answers within `START_TIMEOUT` (the others are killed),
        and the error of one that failed to build, if any."""
        ray = self._ray
        refs = {self.actors[s].pid.remote(): s for s in slots}
        done, pending = ray.wait(list(refs), num_returns=len(refs), timeout=START_TIMEOUT)
        ready, error = [], None
        for ref in done:
            try:
                ray.get(ref)
                ready.append(refs[ref])
            except ray.exceptions.RayError as exc:
                error = describe(exc)
        for ref in pending:
            ray.kill(self.actors[refs[ref]], no_restart=True)
        return sorted(ready), error

    def pids(self) -> list[int]:
        """The process id of each live actor (for diagnostics)."""
        return list(self._ray.get([self.actors[s].pid.remote() for s in self.slots]))

    def submit(self, slot: int, chunk: Sequence[Any]) -> None:
        self._calls[self.actors[slot].run.remote(list(chunk))] = slot

    def wait(self, timeout: float | None) -> list[tuple[int, Any]]:
        ray = self._ray
        ready, _ = ray.wait(list(self._calls), num_returns=1, timeout=timeout)
        if ready:  # take every call already finished, not just the first
            ready, _ = ray.wait(list(self._calls), num_returns=len(self._calls), timeout=0)
        finished = []
        for ref in ready:
            slot = self._calls.pop(ref)
            try:
                outcome: Any = ray.get(ref)
            except ray.exceptions.RayError as exc:  # the actor died, its node was lost, ...
                outcome = f"its Ray worker was lost: {describe(exc)}"
            finished.append((slot, outcome))
        return finished

    def replace(self, slot: int) -> bool:
        for ref, s in list(self._calls.items()):
            if s == slot:
                del self._calls[ref]
        self._ray.kill(self.actors[slot], no_restart=True)
        self.actors[slot] = self._cls.remote(*self._args)
        ready, error = self._ready([slot])
        if not ready:  # its node is gone and no other has a free CPU: go on without it
            self.slots.remove(slot)
            logger.warning("a Ray worker could not be replaced (%s); one fewer worker",
                           error or "no free CPU")  # fmt: skip
        return bool(ready)

    def close(self) -> None:
        for actor in self.actors:
            self._ray.kill(actor, no_restart=True)
        self.actors = []
        self._calls.clear()


class RayBackend(Backend):
    """Runs episodes on ``workers`` Ray actors (one CPU each).

    Args:
        workers: actors (at most the cluster's free CPUs run at once).
        timeout: seconds per episode (see `Backend`); an actor past it is killed.
        address: the cluster to join (``"auto"``, ``"ray://host:10001"``, ...);
            None starts a local instance for the run (unless ``RAY_ADDRESS`` is set).
        init_kwargs: more arguments for ``ray.init`` (``runtime_env``, ...).

    Example:
        >>> RayBackend(workers=4, address="auto")
        RayBackend(workers=4, address='auto')
    """

    name = "ray"

    def __init__(
        self,
        workers: int = 1,
        *,
        timeout: float | None = None,
        address: str | None = None,
        init_kwargs: dict[str, Any] | None = None,
    ):
        super().__init__(workers, timeout=timeout)
        if address is not None and not (isinstance(address, str) and address):
            raise ValueError(f"Expect `address` to be a non-empty str or None, got {address!r}")
        self.address = address
        self.init_kwargs = dict(init_kwargs or {})
        self._ray: Any = None
        self._owns_ray = False
        self._actors: _Actors | None = None
        self._width = 1

    def __repr__(self) -> str:
        return f"RayBackend(workers={self.workers}, address={self.address!r})"

    def _init(self) -> Any:
        ray = import_ray()
        if ray.is_initialized():
            return ray
        address = self.address or os.environ.get("RAY_ADDRESS")
        if address:
            ray.init(address=address, log_to_driver=False, **self.init_kwargs)
        else:
            kwargs = dict(
                num_cpus=self.workers,
                include_dashboard=False,
                log_to_driver=False,
                object_store_memory=OBJECT_STORE_BYTES,
            )
            ray.init(**{**kwargs, **self.init_kwargs})
        self._owns_ray = True
        return ray

    def start(
        self, agent: Any, config: Any, *, serialize: bool, runner: RunnerFactory = evaluation_runner
    ) -> RayBackend:
        self._ray = self._init()
        self._width = max(1, int(getattr(agent, "max_batch_size", 1)))
        try:
            agent_ref = self._ray.put(agent)  # shipped once; each actor deserialises it once
            self._actors = _Actors(self._ray, self.workers, agent_ref, config, serialize, runner)
        except BaseException:
            self.close()
            raise
        return self

    def pids(self) -> list[int]:
        """The process id of each worker actor (empty before `start`)."""
        return self._actors.pids() if self._actors is not None else []

    def run(self, specs: Sequence[Any]) -> Iterator[list[Any]]:
        if self._actors is None:
            raise RuntimeError("RayBackend.run() before start()")
        size = chunk_size(len(specs), self.workers, self._width, self.timeout)
        yield from supervise(
            self._actors, specs, size=size, width=self._width, timeout=self.timeout
        )

    def close(self) -> None:
        if self._actors is not None:
            self._actors.close()
            self._actors = None
        if self._owns_ray and self._ray is not None:
            self._ray.shutdown()
        self._owns_ray = False
