"""Agents for the sealed-agent tests: one that cheats when it can, and ones that speak every
part of the agent protocol.

They live in a module of their own (on the tests' ``pythonpath``) so a sealed agent's
process, which gets the evaluator's ``sys.path``, can import them by name.
"""

from __future__ import annotations

import gc
import inspect
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from turnbudget.agents import OracleAgent, RandomAgent


def _game_in(value: Any) -> Any:
    """The game behind an env an episode program holds (a generator suspended at its
    yield, its ``env`` local; through ``yield from`` too), else None."""
    while inspect.isgenerator(value):
        frame = value.gi_frame
        env = frame.f_locals.get("env") if frame is not None else None
        game = getattr(env, "unwrapped", None)
        if callable(getattr(game, "optimal_actions", None)):
            return game
        value = value.gi_yieldfrom
    return None


def find_game() -> Any:
    """The game of the episode this agent is playing, found by walking the caller's frames."""
    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            game = _game_in(value)
            if game is not None:
                return game
        frame = frame.f_back
    return None


def live_envs() -> int:
    """How many turn-budgeted envs are alive in this process (importing the env's module)."""
    from turnbudget.wrappers.turn_budget import TurnBudget

    return sum(issubclass(type(o), TurnBudget) for o in gc.get_objects())


class SnoopingAgent:
    """Plays the env's own oracle when it can reach the env (its caller's frames), else plays
    exactly as `RandomAgent` with the same seed. Its notes say what it found: ``found``
    (the game, through the frames) and ``envs`` (live `TurnBudget` envs, through ``gc``)."""

    name = "snooping"

    def __init__(self) -> None:
        self.random = RandomAgent()
        self.note: dict[str, Any] = {}

    def __repr__(self) -> str:
        return "SnoopingAgent()"

    def reset(self, seed: int) -> None:
        self.random.reset(seed)

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        game = find_game()
        self.note = {"found": game is not None, "envs": live_envs(), "pid": os.getpid()}
        action = self.random.act(observation, info)  # (the same draws either way)
        return sorted(game.optimal_actions())[0] if game is not None else action

    def step_note(self) -> dict[str, Any]:
        return self.note


class NotingOracle(OracleAgent):
    """The oracle, noting each decision (with a NumPy number, as real agents do) and every
    forced turn it hears of (``observe``)."""

    def __init__(self, epsilon: float) -> None:
        super().__init__(epsilon)
        self.heard = 0
        self.decisions = 0

    def reset(self, seed: int) -> None:
        super().reset(seed)
        self.heard = self.decisions = 0

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        self.decisions += 1
        return super().act(observation, info)

    def observe(self, observation: str, info: Mapping[str, Any], executed: str) -> None:
        self.heard += 1

    def step_note(self) -> dict[str, Any]:
        import numpy as np

        return {"decisions": self.decisions, "heard": self.heard, "p": np.float64(0.5)}


class BatchNotingOracle:
    """A `BatchAgent` of `NotingOracle` per episode, with ``step_notes`` and ``observe_batch``."""

    name = "batch-noting"
    needs_oracle = True
    budget_aware = False

    def __init__(self, epsilon: float, max_batch_size: int = 3) -> None:
        self.epsilon = epsilon
        self.max_batch_size = max_batch_size
        self.agents: dict[str, NotingOracle] = {}

    def __repr__(self) -> str:
        return f"BatchNotingOracle({self.epsilon})"

    def reset_episode(self, episode_id: str, seed: int) -> None:
        self.agents[episode_id] = agent = NotingOracle(self.epsilon)
        agent.reset(seed)

    def act_batch(
        self, episode_ids: Sequence[str], observations: Sequence[str], infos: Sequence[Any]
    ) -> list[str]:
        return [
            self.agents[e].act(o, i)
            for e, o, i in zip(episode_ids, observations, infos, strict=True)
        ]

    def step_notes(self, episode_ids: Sequence[str]) -> list[dict[str, Any]]:
        return [self.agents[e].step_note() for e in episode_ids]

    def observe_batch(
        self, episode_ids: Sequence[str], observations: Any, infos: Any, executed: Any
    ) -> None:
        for e, o, i, a in zip(episode_ids, observations, infos, executed, strict=True):
            self.agents[e].observe(o, i, a)

    def end_episode(self, episode_id: str) -> None:
        self.agents.pop(episode_id, None)


class AsyncNotingOracle(NotingOracle):
    """The coroutine form of `NotingOracle` (``in_flight`` drives it through `AsyncBatch`)."""

    name = "async-noting"
    default_concurrency = 3

    def __repr__(self) -> str:
        return f"AsyncNotingOracle({self.epsilon})"

    async def reset_async(self, seed: int) -> None:
        self.reset(seed)

    async def act_async(self, observation: str, info: Mapping[str, Any]) -> str:
        return self.act(observation, info)

    async def observe_async(self, observation: str, info: Any, executed: str) -> None:
        self.observe(observation, info, executed)


class DyingOracle(OracleAgent):
    """The oracle, whose process ends at once (``os._exit(7)``, no cleanup) on its first
    command of the chosen episodes: a crash the agent cannot report."""

    name = "dying"

    def __init__(self, epsilon: float, seeds: Iterable[int]) -> None:
        super().__init__(epsilon)
        self.seeds = frozenset(seeds)
        self.current: int | None = None

    def __repr__(self) -> str:
        return f"DyingOracle(seeds={sorted(self.seeds)})"

    def reset(self, seed: int) -> None:
        self.current = seed
        super().reset(seed)

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        if self.current in self.seeds:
            os._exit(7)
        return super().act(observation, info)


class UnsendableOracle(OracleAgent):
    """The oracle, whose commands on the chosen episodes cannot be sent back (a set, not JSON)."""

    name = "unsendable"

    def __init__(self, epsilon: float, seeds: Iterable[int]) -> None:
        super().__init__(epsilon)
        self.seeds = frozenset(seeds)
        self.current: int | None = None

    def reset(self, seed: int) -> None:
        self.current = seed
        super().reset(seed)

    def act(self, observation: str, info: Mapping[str, Any]) -> Any:
        if self.current in self.seeds:
            return {"north"}
        return super().act(observation, info)


class UrlDigestAgent:
    """An agent built from a ``base_url`` option (it plays ``look``), named by a digest of the
    URL it got: a test tells from its sealed profile that the child got the URL whole."""

    def __init__(self, *, base_url: str):
        import hashlib

        self.name = "url-" + hashlib.sha256(base_url.encode()).hexdigest()[:12]

    def reset(self, seed: int) -> None:
        pass

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        return "look"


#: A key of the shape providers give (never a real one), for `KeyInNotesAgent`.
NOTED_KEY = "sk-proj-N0t3dK3yAbCdEf0123456789"


class KeyInNotesAgent(RandomAgent):
    """A random agent whose step notes hold its own API key, in a value, a key and a list."""

    def step_note(self) -> dict[str, Any]:
        return {"raw": f"called with {NOTED_KEY}", NOTED_KEY: 1, "calls": [[NOTED_KEY]]}


class LoadsInReady(OracleAgent):
    """An oracle whose "model" is loaded by its ``ready()`` (as the agents guide suggests),
    counting the calls in the process it plays in: it cannot play without them."""

    name = "loads-in-ready"

    def __init__(self) -> None:
        super().__init__()
        self.model: str | None = None
        self.readied = 0

    def ready(self) -> None:
        self.readied += 1
        if self.model is None:
            self.model = "loaded"

    def reset(self, seed: int) -> None:
        if self.model is None:
            raise RuntimeError("ready() was never called: no model")
        super().reset(seed)

    def step_note(self) -> dict[str, int]:
        return {"readied": self.readied}


class BatchWidthOracle(BatchNotingOracle):
    """`BatchNotingOracle` whose step notes say how many episodes each batch held."""

    name = "batch-width"

    def __repr__(self) -> str:
        return f"BatchWidthOracle({self.epsilon}, {self.max_batch_size})"

    def step_notes(self, episode_ids: Sequence[str]) -> list[dict[str, Any]]:
        return [{"batch": len(episode_ids)} for _ in episode_ids]
