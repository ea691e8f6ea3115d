"""The ``ray`` backend: episodes in chunks over Ray actors, on a cluster or a local instance.

Needs the ``ray`` extra (Ray core only). Each worker is an actor that holds
one episode driver (`Driver`); the agent is put in the object store once
(``ray.put``) and deserialised once per actor. Chunks go to idle actors one
at a time (the same `supervise` loop as the ``pool`` backend), so a dead
actor (its process killed, its node lost) or one past the timeout costs only
its chunk, which comes back as `EpisodeFailure` and is rerun by
`run_with_retries`; the actor is replaced.

Where it runs:

- ``address=None`` (and no ``RAY_ADDRESS`` in the environment): a new local
  Ray instance is started for the run (``workers`` CPUs, no dashboard, a small
  object store) and shut down after it; on Linux `ray_reaper` stops whatever
  is left of it when the driver ends, even by SIGKILL (Ray ties its head
  processes to the driver, but not the raylet's agents);
- ``address="auto"``, ``"ray://host:10001"`` or ``"host:6379"``: an existing
  cluster, which is left running. Every node needs turnbudget (and the
  agent's code) installed, and the TextWorld games: a cache directory shared
  by all nodes (``TURNBUDGET_TEXTWORLD_CACHE``) or ``turnbudget textworld pregen`` run on
  each node first;
- Ray already initialised by the caller: used as it is, and left running.

Start-up is paid once per attach: with an ``address`` (or ``RAY_ADDRESS``), the
first run connects and later runs in the process use that connection. With
``keep_workers=True``, on Ray the caller keeps (attached, or initialised
beforehand), the actors outlive the run too and the next run reuses them (each
takes its agent and configuration through ``configure``); kept actors hold a
CPU each while they wait, so they are opt-in, and `release_workers` kills them.
Chunks are pipelined: each actor holds two, the next queued before the previous
returns.

Failing to start or reach Ray, or to start any actor, raises `WorkersUnavailable`
with what failed and what to do (the CLI prints it as one line). An actor starts in
two stages, each with its own limit: the actor comes up (`START_TIMEOUT`: a cluster
without a free CPU keeps it pending), then builds its runner, which starts the agent
and calls its ``ready()`` (`ready_deadline`: `turnbudget.eval.run.sealed.READY_SECONDS`
and the rest, as a pool's worker has); an agent not ready by then is `AgentNotReady`,
naming it.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import pickle
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from turnbudget.eval.run.backends import (
    MAX_LOCAL_WORKERS,
    MAX_TIMEOUT,
    Backend,
    RunnerFactory,
    WorkersUnavailable,
    check_workers,
    close_runner,
    named,
    ready_deadline,
)
from turnbudget.eval.run.backends.supervisor import Workers, chunk_size, supervise, units
from turnbudget.eval.run.driver import AgentNotReady, describe, interrupts_ignored
from turnbudget.eval.run.episodes import evaluation_runner

__all__ = ["OBJECT_STORE_BYTES", "START_TIMEOUT", "RayBackend", "import_ray", "release_workers"]

logger = logging.getLogger(__name__)

#: The object store of a local instance: results are small and fetched at once.
OBJECT_STORE_BYTES = 200 * 1024**2

#: Seconds an actor may take to come up (a cluster without a free CPU keeps it pending): the
#: run fails when none is up by then, and goes on without one that is not. Its agent's start
#: and ``ready()`` come after, within `ready_deadline` (they counted here, and a ready() slower
#: than this, within READY_SECONDS, was given up as a cluster without a free CPU).
START_TIMEOUT = 120.0


def import_ray() -> Any:
    """Import Ray, or say how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError(
            "The ray backend needs Ray: pip install -e '.[ray]' in the turnbudget checkout"
        ) from exc
    if not callable(getattr(ray, "init", None)):
        # A folder named ray on the path imports as an empty package: Ray's own session
        # folder, /tmp/ray, under `python -m turnbudget` run in /tmp (an AttributeError later).
        found = ", ".join(map(str, getattr(ray, "__path__", []))) or getattr(ray, "__file__", "?")
        raise ImportError(
            f"The ray backend needs Ray, but `import ray` found {found}, which is not Ray (a "
            "folder named ray in the working directory?): run from another folder, or pip "
            "install -e '.[ray]' in the turnbudget checkout"
        )
    return ray


class _Runner:
    """The actor's class: one runner (a run's `Driver`) at a time. An actor outlives a run
    where Ray is the caller's (a cluster attached to, an instance started beforehand): the
    next run hands it its runner with `configure`, so it pays no actor start."""

    def __init__(self) -> None:
        # (Ctrl-C is the evaluator's, as in a pool's worker: a KeyboardInterrupt an agent
        # raises here ends its episode, where it cancelled the task and cost the actor)
        interrupts_ignored()
        self.runner: Any = None

    def configure(
        self, agent: Any, config: Any, serialize: bool, make_runner: RunnerFactory
    ) -> int:
        """Build the run's runner (after ending the previous one); return the process id."""
        self.end()
        self.runner = make_runner(agent, config, serialize)
        return os.getpid()

    def pid(self) -> int:
        return os.getpid()

    def run(self, chunk: Sequence[Any]) -> list[Any]:
        return self.runner.run(chunk)

    def end(self) -> None:
        """Close the run's runner (its envs) and forget it."""
        runner, self.runner = self.runner, None
        close_runner(runner)


#: Idle actors kept between runs, per Ray job (one ``ray.init`` connection): a run on Ray
#: the caller keeps running takes them instead of starting its own.
_IDLE: dict[str, list[Any]] = {}


def release_workers() -> int:
    """Kill the actors kept between runs (each holds a CPU of the cluster while it waits);
    return how many. The next run starts its own again."""
    ray = import_ray()
    idle = [actor for actors in _IDLE.values() for actor in actors]
    _IDLE.clear()
    if ray.is_initialized():
        for actor in idle:
            with contextlib.suppress(Exception):  # (one gone already)
                ray.kill(actor, no_restart=True)
    return len(idle)


def _job(ray: Any) -> str:
    """This connection to Ray (job ids restart at 1 on a new instance; node ids do not)."""
    context = ray.get_runtime_context()
    return f"{context.get_node_id()}/{context.get_job_id()}"


class _Actors(Workers):
    """``size`` actors of one remote class; the agent's object ref is shared by all.

    The run begins once as many actors are ready as the cluster has CPUs (all of
    them, unless more were asked for than it has); the others join whenever they
    are, as does a replaced actor, so nothing waits on an actor that may never
    start (more workers than CPUs, or a busy cluster: the run goes on with those
    up after `START_TIMEOUT`). An actor starts in two stages: it comes up (its
    ``pid``; given up after `START_TIMEOUT`), then builds its runner (``configure``:
    the agent's start and ``ready()``; given up after ``ready_seconds``, and the run
    with it while it starts: `AgentNotReady`). A kept actor only builds its runner.
    """

    #: Chunks each actor holds: the next is queued before the previous returns, so an
    #: actor never idles through a round trip (Ray runs an actor's calls in order).
    depth = 2

    def __init__(
        self, ray: Any, size: int, agent_ref: Any, config: Any, serialize: bool,
        make_runner: RunnerFactory, idle: list[Any] | None = None, *,
        agent_names: str = "", ready_seconds: float = math.inf,
    ):  # fmt: skip
        self._ray = ray
        self._names, self._ready_seconds = agent_names, ready_seconds
        self._cls = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(_Runner)
        self._args = (agent_ref, config, serialize, make_runner)
        self._idle = idle if idle is not None else []  # actors of an earlier run, to reuse
        self._reused: set[int] = set()  # slots holding one (it may have died since)
        self.actors: list[Any] = [None] * size
        self.slots: list[int] = []
        self._calls: dict[Any, int] = {}
        # a starting actor's call (``pid``: up; ``configure``: ready) -> (slot, give-up time)
        self._starting: dict[Any, tuple[int, float]] = {}
        self._joined: list[int] = []
        self._configuring: set[Any] = set()  # the calls of `_starting` that are ``configure``
        for slot in range(size):
            self._start(slot)
        need = min(size, max(1, int(ray.cluster_resources().get("CPU", 1))))
        error = None
        while len(self.slots) < need and self._starting and error is None:
            ready = self._wait_starting()
            error = self._settle(ready, warn=False)
        self._joined.clear()  # these are `slots` from the start
        if error is not None:  # an actor that cannot be built: every other one fails alike
            self.close()
            raise error
        if not self.slots:
            self.close()
            raise WorkersUnavailable(
                f"No Ray worker started within {START_TIMEOUT:g}s: the cluster has no free "
                "CPU (free one, or ask for fewer workers)"
            )

    def _start(self, slot: int) -> None:
        while self._idle:  # an actor of an earlier run (one lost since is passed over)
            actor = self._idle.pop()
            try:
                self.actors[slot] = actor
                self._configure(slot)
            except Exception:  # (Ray refuses a call to an actor it knows to be gone)
                logger.debug("an idle Ray worker is gone", exc_info=True)
                continue
            self._reused.add(slot)
            return
        self.actors[slot] = self._cls.remote()
        self._reused.discard(slot)
        self._starting[self.actors[slot].pid.remote()] = (slot, time.monotonic() + START_TIMEOUT)

    def _configure(self, slot: int) -> None:
        """The second stage of the actor's start, once it is up: its runner, within
        ``ready_seconds``."""
        call = self.actors[slot].configure.remote(*self._args)
        self._configuring.add(call)
        self._starting[call] = (slot, time.monotonic() + self._ready_seconds)

    def _wait_starting(self) -> list[Any]:
        """The starting actors' calls that have returned, waiting until one has (at most
        until the first of them is given up)."""
        refs = list(self._starting)
        first = min(deadline for _, deadline in self._starting.values())
        ready, _ = self._ray.wait(refs, num_returns=1, timeout=_seconds_until(first))
        if ready:  # (every call already returned, not just the first)
            ready, _ = self._ray.wait(refs, num_returns=len(refs), timeout=0)
        return ready

    def _settle(self, ready: Sequence[Any], warn: bool = True) -> BaseException | None:
        """Move on the starting actors whose call is in ``ready``: one up builds its runner,
        one whose runner is built joins (one that failed to is dropped, with a warning if
        ``warn``); give up those past their stage's limit. Return the error that stops a run
        still starting: the agent could not be built or made ready."""
        ray, error = self._ray, None
        for ref in ready:
            slot, _ = self._starting.pop(ref)
            configured = ref in self._configuring
            self._configuring.discard(ref)
            try:
                ray.get(ref)
            except ray.exceptions.RayError as exc:
                # An actor of an earlier run, lost since: a new one. Not when the call itself
                # raised (the agent's start or ready() did): a new actor would run it again.
                if slot in self._reused and not isinstance(exc, ray.exceptions.RayTaskError):
                    ray.kill(self.actors[slot], no_restart=True)
                    self._start(slot)
                    continue
                error = self._start_error(exc, configured)
                self._drop(slot, f"failed to start ({describe(_cause(exc))})", warn)
            else:
                if configured:
                    self.slots.append(slot)
                    self._joined.append(slot)
                else:
                    self._configure(slot)
        now = time.monotonic()
        for ref, (slot, deadline) in list(self._starting.items()):
            if deadline <= now:
                del self._starting[ref]
                if ref in self._configuring:
                    self._configuring.discard(ref)
                    error = AgentNotReady(
                        f"The agent {self._names} did not become ready in a Ray worker in "
                        f"{self._ready_seconds:g}s: its start or its ready() hung "
                        "(READY_SECONDS in turnbudget.eval.run.sealed: raise it there for a "
                        "slow start)"
                    )
                    self._drop(slot, f"did not become ready in {self._ready_seconds:g}s", True)
                else:
                    why = f"did not start within {START_TIMEOUT:g}s (no free CPU)"
                    self._drop(slot, why, True)
        return error

    def _start_error(self, exc: BaseException, configured: bool) -> BaseException:
        """What stops a run whose actor failed to start with ``exc`` (``configured``: in its
        runner's build, the agent's start): the agent's own `AgentNotReady` (its ready() past
        READY_SECONDS, in the actor), as it is; anything else as `WorkersUnavailable`, saying
        what the agent raised (Ray's own message led with its traceback, and the cut to one
        line left the error out)."""
        cause = _cause(exc)
        if isinstance(cause, AgentNotReady):
            return AgentNotReady(str(cause))
        what = describe(cause)
        if configured:
            what = f"the agent {self._names} could not be made ready in it ({what})"
        if cause is exc or isinstance(cause, ImportError):
            what += " (is turnbudget, and the agent's code, installed on every node?)"
        return WorkersUnavailable(f"A Ray worker failed to start: {what}")

    def _drop(self, slot: int, why: str, warn: bool) -> None:
        self._ray.kill(self.actors[slot], no_restart=True)
        if warn:
            logger.warning("a Ray worker %s; running on %d", why, len(self.slots))

    def pids(self) -> list[int]:
        """The process id of each live actor (for diagnostics)."""
        return list(self._ray.get([self.actors[s].pid.remote() for s in self.slots]))

    def submit(self, slot: int, chunk: Sequence[Any]) -> None:
        self._calls[self.actors[slot].run.remote(list(chunk))] = slot  # (in submission order)

    def wait(self, timeout: float | None) -> list[tuple[int, Any]]:
        ray = self._ray
        refs = [*self._calls, *self._starting]
        if self._starting:  # wake up to give up an actor that does not start
            first = min(deadline for _, deadline in self._starting.values())
            limit = _seconds_until(first)
            timeout = limit if timeout is None else min(timeout, limit)
        if not refs:
            return []
        ready, _ = ray.wait(refs, num_returns=1, timeout=timeout)
        if ready:  # take every call already finished, not just the first
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        self._settle([ref for ref in ready if ref in self._starting])
        finished = []
        done = set(ready)
        for ref in [r for r in self._calls if r in done]:  # an actor's chunks in their order
            slot = self._calls.pop(ref)
            try:
                outcome: Any = ray.get(ref)
            except ray.exceptions.RayError as exc:  # the actor died, its node was lost, ...
                outcome = f"its Ray worker was lost: {describe(exc)}"
            finished.append((slot, outcome))
        return finished

    def joined(self) -> list[int]:
        joined, self._joined = self._joined, []
        return joined

    @property
    def starting(self) -> bool:
        return bool(self._starting)

    def replace(self, slot: int) -> bool:
        for ref, s in list(self._calls.items()):
            if s == slot:
                del self._calls[ref]
        self._ray.kill(self.actors[slot], no_restart=True)
        self.slots.remove(slot)
        self._start(slot)  # it joins once up; a cluster with no free CPU left goes on without
        return False

    def close(self, keep: list[Any] | None = None) -> None:
        """Kill the actors; with ``keep``, end the run on those up and idle and put them
        there instead (the next run reuses them)."""
        busy = set(self._calls.values()) | {slot for slot, _ in self._starting.values()}
        ending = []
        for slot, actor in enumerate(self.actors):
            if actor is None:
                continue
            if keep is not None and slot in self.slots and slot not in busy:
                ending.append((actor, actor.end.remote()))
            else:
                self._ray.kill(actor, no_restart=True)
        for actor, ref in ending:
            try:
                self._ray.get(ref, timeout=START_TIMEOUT)
            except Exception:  # (a lost actor, an env that fails to close: it is dropped)
                logger.debug("ending a Ray worker's run failed", exc_info=True)
                self._ray.kill(actor, no_restart=True)
            else:
                keep.append(actor)  # type: ignore[union-attr]
        for actor in self._idle:  # (more idle actors than this run wanted)
            if keep is not None:
                keep.append(actor)
            else:
                self._ray.kill(actor, no_restart=True)
        self.actors, self._idle = [], []
        self._calls.clear()
        self._starting.clear()
        self._configuring.clear()


class RayBackend(Backend):
    """Runs episodes on ``workers`` Ray actors (one CPU each).

    Args:
        workers: actors (at most the cluster's free CPUs run at once; at most
            `MAX_LOCAL_WORKERS` on a local instance started for the run).
        timeout: seconds per episode (see `Backend`); an actor past it is killed.
        address: the cluster to join (``"auto"``, ``"ray://host:10001"``, ...);
            None starts a local instance for the run (unless ``RAY_ADDRESS`` is set).
        init_kwargs: more arguments for ``ray.init`` (``runtime_env``, ...).
        keep_workers: on a Ray the caller keeps (an ``address``, or initialised
            beforehand), leave the actors up when the run ends, for the next run in
            this process to reuse (no actor start); each holds a CPU while it waits
            (`release_workers` kills them). A local instance started for the run
            always goes with its actors.

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
        keep_workers: bool = False,
    ):
        super().__init__(workers, timeout=timeout)
        if not isinstance(keep_workers, bool):
            raise ValueError(f"Expect `keep_workers` to be true or false, got {keep_workers!r}")
        self.keep_workers = keep_workers
        if address is not None and not (isinstance(address, str) and address):
            raise ValueError(f"Expect `address` to be a non-empty str or None, got {address!r}")
        self.address = address
        self.init_kwargs = dict(init_kwargs or {})
        self._ray: Any = None
        self._owns_ray = False
        self._reaper: subprocess.Popen[bytes] | None = None
        self._actors: _Actors | None = None
        self._width = 1

    def __repr__(self) -> str:
        return f"RayBackend(workers={self.workers}, address={self.address!r})"

    def check_available(self) -> None:
        import_ray()  # (Ray itself, not a folder named ray: or an ImportError saying what to do)

    def _init(self) -> Any:
        ray = import_ray()
        if ray.is_initialized():
            return ray
        address = self.address or os.environ.get("RAY_ADDRESS")
        if address:  # attached once: later runs in this process use the same connection
            kwargs: dict[str, Any] = dict(address=address, log_to_driver=False)
        else:  # its actors are processes on this machine: as many as a pool may start
            check_workers(self.workers, MAX_LOCAL_WORKERS, self.name)
            kwargs = dict(
                address="local",  # a new instance, even where `ray start` left one running
                num_cpus=self.workers,
                include_dashboard=False,
                log_to_driver=False,
                object_store_memory=OBJECT_STORE_BYTES,
            )
        kwargs.update(self.init_kwargs)
        started = time.time()
        try:
            context = ray.init(**kwargs)
        except Exception as exc:  # Ray raises many kinds here (timeouts, ConnectionError, ...)
            with contextlib.suppress(Exception):
                ray.shutdown()  # what a failed start left behind
            raise WorkersUnavailable(_init_failure(kwargs["address"], exc)) from exc
        except BaseException:  # Ctrl-C while it starts: no reaper watches its processes yet,
            if kwargs["address"] == "local":  # and the raylet's agents outlived a shutdown
                with contextlib.suppress(Exception):
                    _reap_interrupted_start(ray, started)
            raise
        if kwargs["address"] == "local":  # started for this run: shut down after it
            self._owns_ray = True
            self._reaper = _start_reaper(ray, context)
        return ray

    def start(
        self, agent: Any, config: Any, *, serialize: bool, runner: RunnerFactory = evaluation_runner
    ) -> RayBackend:
        self._ray = self._init()
        self._width = max(1, int(getattr(agent, "max_batch_size", 1)))
        idle = None if self._owns_ray else _IDLE.pop(_job(self._ray), None)
        try:
            agent_ref = self._put(agent)  # shipped once; each actor deserialises it once
            self._actors = _Actors(
                self._ray, self.workers, agent_ref, config, serialize, runner, idle,
                agent_names=named(agent), ready_seconds=ready_deadline(agent),
            )  # fmt: skip
        except BaseException:
            self.close()
            raise
        return self

    def _put(self, agent: Any) -> Any:
        """``agent`` in Ray's object store; a ValueError that says so for one that cannot be
        pickled (Ray's own error was a page of traceback and a serializability report)."""
        try:
            return self._ray.put(agent)
        except (TypeError, pickle.PicklingError) as exc:
            cause = exc.__cause__ or exc
            raise ValueError(
                f"The agent {type(agent).__name__} cannot be pickled for Ray's workers "
                f"({type(cause).__name__}: {str(cause)[:200]}): make it picklable, or give "
                "its spec and run it sealed (--sealed: each worker builds it from the spec)"
            ) from None

    def pids(self) -> list[int]:
        """The process id of each worker actor (empty before `start`)."""
        return self._actors.pids() if self._actors is not None else []

    def run(self, specs: Sequence[Any]) -> Iterator[list[Any]]:
        if self._actors is None:
            raise RuntimeError("RayBackend.run() before start()")
        size = chunk_size(units(specs, self._width), self.workers, self._width, self.timeout)
        yield from supervise(
            self._actors, specs, size=size, width=self._width, timeout=self.timeout
        )

    def close(self) -> None:
        if self._actors is not None:
            # On Ray the caller keeps (attached, or initialised beforehand), the actors
            # wait for the next run; an instance started for this run goes with them.
            keep = None
            if self.keep_workers and not self._owns_ray and self._ray.is_initialized():
                keep = _IDLE.setdefault(_job(self._ray), [])
            self._actors.close(keep)
            self._actors = None
        if self._owns_ray and self._ray is not None:
            self._ray.shutdown()
        self._owns_ray = False
        if self._reaper is not None:  # it stops what the shutdown left, then exits
            self._reaper.stdin.close()
            try:
                self._reaper.wait(30)
            except subprocess.TimeoutExpired:
                self._reaper.kill()
                self._reaper.wait()
            self._reaper = None


def _cause(exc: BaseException) -> BaseException:
    """What the actor's code raised, where Ray's error wraps it (``RayTaskError.cause``)."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


def _seconds_until(deadline: float) -> float:
    """Seconds left until ``deadline`` (``time.monotonic``), for ``ray.wait``: at least 0, at
    most `MAX_TIMEOUT` (a deadline at infinity waits that long)."""
    return min(max(0.0, deadline - time.monotonic()), MAX_TIMEOUT)


def _init_failure(address: str, exc: BaseException) -> str:
    """What failed in ``ray.init`` and what to do about it, in one line."""
    if address != "local":
        return (
            f"Could not connect to the Ray cluster at {address!r}: {describe(exc)}. Check that "
            "it is running and reachable (`ray status`), or pass no address to start a local "
            "Ray instance for the run."
        )
    return (
        f"Could not start a local Ray instance: {describe(exc)}. Its start-up can time out on "
        "a busy machine: retry, or start one once (`ray start --head`) and pass "
        "address='auto' (--ray-address auto) so that runs join it."
    )


def _reap_interrupted_start(ray: Any, started: float) -> None:
    """Shut down a local instance whose ``ray.init`` was interrupted, and kill what is left of
    it now: its session is the one Ray's node names, else the newest begun since ``started``
    (Linux: elsewhere a shutdown only)."""
    import glob

    from turnbudget.eval.run.backends.ray_reaper import reap

    node = getattr(getattr(ray, "_private", None), "worker", None)
    session_dir = getattr(getattr(node, "_global_node", None), "session_dir", None)
    ray.shutdown()
    if not os.path.isdir("/proc/self/fd"):
        return
    if session_dir is None:
        temp = os.path.join(os.environ.get("RAY_TMPDIR", "/tmp"), "ray")
        begun = [
            d
            for d in glob.glob(os.path.join(temp, "session_2*"))
            if os.path.getmtime(d) >= started - 1
        ]
        session_dir = max(begun, key=os.path.getmtime, default=None)
    if session_dir is not None:
        reap(session_dir, os.path.dirname(ray.__file__), {os.getpid()})


def _start_reaper(ray: Any, context: Any) -> subprocess.Popen[bytes] | None:
    """Start `turnbudget.eval.run.backends.ray_reaper` for the local instance just started (Linux:
    elsewhere None), so its processes go with this process even when it is SIGKILLed."""
    session_dir = getattr(context, "address_info", {}).get("session_dir")
    if not (session_dir and os.path.isdir("/proc/self/fd")):
        return None
    script = os.path.join(os.path.dirname(__file__), "ray_reaper.py")
    return subprocess.Popen(
        [sys.executable, script, session_dir, os.path.dirname(ray.__file__)],
        stdin=subprocess.PIPE,  # its end closes when this process ends, however it ends
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a signal to this process's group leaves it alone
    )
