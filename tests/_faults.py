"""Agents that fail on purpose, for the fault tests of every backend.

Each wraps a real `OracleAgent` and misbehaves only on the episodes whose
agent seed is in ``seeds`` (the seeds come from `turnbudget.eval.run.plan.agent_seed`),
so every other episode is exactly the oracle's and can be compared with a
clean run. They live in a module of their own so Ray can be told to pickle it
by value (its workers cannot import the test suite).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from turnbudget.agents import OracleAgent
from turnbudget.eval.run.plan import agent_seed


def seeds_of(seed: int, episodes: Iterable[tuple[str, int, int]]) -> frozenset[int]:
    """The agent seeds of ``(env_id, task_seed, rep)`` episodes under base seed ``seed``."""
    return frozenset(agent_seed(seed, env, task, rep) for env, task, rep in episodes)


class _Faulty(OracleAgent):
    """The oracle, with a fault on chosen episodes (subclasses say which)."""

    def __init__(self, epsilon: float, seeds: Iterable[int]):
        super().__init__(epsilon)
        self.seeds = frozenset(seeds)
        self.current: int | None = None

    def reset(self, seed: int | None = None) -> None:
        self.current = seed
        super().reset(seed)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seeds={sorted(self.seeds)})"


class RaisingAgent(_Faulty):
    """Raises on its first command of the chosen episodes."""

    name = "raising"

    def act(self, observation: str, info: Any) -> str:
        if self.current in self.seeds:
            raise RuntimeError(f"agent bug on the episode with seed {self.current}")
        return super().act(observation, info)


class ExitingAgent(_Faulty):
    """Calls ``sys.exit(3)`` (or raises ``interrupt``, e.g. KeyboardInterrupt) on its first
    command of the chosen episodes."""

    name = "exiting"

    def __init__(self, epsilon: float, seeds: Iterable[int], interrupt: type | None = None):
        super().__init__(epsilon, seeds)
        self.interrupt = interrupt

    def act(self, observation: str, info: Any) -> str:
        if self.current in self.seeds:
            if self.interrupt is not None:
                raise self.interrupt()
            sys.exit(3)
        return super().act(observation, info)


class HangingAgent(_Faulty):
    """Never answers on the chosen episodes (sleeps, as an agent stuck on a server would)."""

    name = "hanging"

    def act(self, observation: str, info: Any) -> str:
        if self.current in self.seeds:
            time.sleep(3600)
        return super().act(observation, info)


class SlowPidAgent(OracleAgent):
    """The oracle, slowed down per command, writing its process id to ``pid_dir`` (one file
    per process) when it starts playing, so a test can find the worker and kill it."""

    name = "slow-pid"

    def __init__(self, epsilon: float, pid_dir: str, delay: float = 0.01):
        super().__init__(epsilon)
        self.pid_dir = pid_dir
        self.delay = delay

    def act(self, observation: str, info: Any) -> str:
        marker = Path(self.pid_dir) / str(os.getpid())
        if not marker.exists():
            marker.write_text("")
        time.sleep(self.delay)
        return super().act(observation, info)

    def __repr__(self) -> str:
        return "SlowPidAgent()"


def kill_first_worker(pid_dir: Path, deadline: float = 60.0) -> int:
    """Wait for a worker to write its pid, SIGKILL it, and return the pid."""
    import signal

    end = time.monotonic() + deadline
    while time.monotonic() < end:
        pids = [int(p.name) for p in pid_dir.iterdir() if int(p.name) != os.getpid()]
        if pids:
            os.kill(pids[0], signal.SIGKILL)
            return pids[0]
        time.sleep(0.005)
    raise TimeoutError("no worker wrote its pid")


class CountingOracle(OracleAgent):
    """The oracle, leaving a file in ``trace_dir`` each time a copy of it is unpickled
    (to check how often an engine ships the agent)."""

    name = "counting"

    def __init__(self, epsilon: float, trace_dir: str):
        super().__init__(epsilon)
        self.trace_dir = trace_dir

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        import uuid

        (Path(self.trace_dir) / f"{os.getpid()}-{uuid.uuid4().hex}").write_text("")


class BatchRaisingAgent:
    """A `BatchAgent` of oracles whose ``act_batch`` raises while a chosen episode is in it
    (taking its batch mates down with it, as a failed batched LLM request would)."""

    name = "batch-raising"
    needs_oracle = True
    budget_aware = False

    def __init__(self, epsilon: float, seeds: Iterable[int], max_batch_size: int = 4):
        self.epsilon = epsilon
        self.seeds = frozenset(seeds)
        self.max_batch_size = max_batch_size
        self._agents: dict[str, tuple[int, OracleAgent]] = {}

    def __repr__(self) -> str:
        return f"BatchRaisingAgent(seeds={sorted(self.seeds)})"

    def reset_episode(self, episode_id: str, seed: int) -> None:
        agent = OracleAgent(self.epsilon)
        agent.reset(seed)
        self._agents[episode_id] = (seed, agent)

    def act_batch(self, episode_ids: Any, observations: Any, infos: Any) -> list[str]:
        if any(self._agents[e][0] in self.seeds for e in episode_ids):
            raise RuntimeError("batched request failed")
        return [
            self._agents[e][1].act(o, i)
            for e, o, i in zip(episode_ids, observations, infos, strict=True)
        ]

    def end_episode(self, episode_id: str) -> None:
        self._agents.pop(episode_id, None)


class UnshippableAgent(OracleAgent):
    """An oracle that cannot be rebuilt in another process (its code is missing there)."""

    def __setstate__(self, state: dict[str, Any]) -> None:
        raise ImportError("No module named 'my_private_agents'")


class BatchHangingAgent(BatchRaisingAgent):
    """A `BatchAgent` of oracles whose ``act_batch`` never answers while a chosen episode
    is in it (a batched request stuck on a server)."""

    name = "batch-hanging"

    def __repr__(self) -> str:
        return f"BatchHangingAgent(seeds={sorted(self.seeds)})"

    def act_batch(self, episode_ids: Any, observations: Any, infos: Any) -> list[str]:
        if any(self._agents[e][0] in self.seeds for e in episode_ids):
            time.sleep(3600)
        return super().act_batch(episode_ids, observations, infos)
