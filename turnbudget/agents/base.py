"""The agent protocol: what the evaluation engine drives.

An agent is reset once per episode with that episode's seed and then maps
``(observation, info)`` to a text command, one turn at a time (`Agent`).
Agents that answer many episodes at once (an LLM behind a server) implement
`BatchAgent` instead: the engine keeps several episodes in flight and asks for
all their next commands in one call. `AsyncAgent` is the coroutine form of
`Agent`; `AsyncBatch` turns it into a `BatchAgent` whose requests run
concurrently.

Two class attributes tell the engine what an agent needs:

- ``needs_oracle``: the engine adds ``info["oracle_actions"]`` (the env's
  ``optimal_actions()``, every action starting a shortest plan) before each
  call. Agents never get the env object, so they stay picklable and work the
  same in any worker or behind a batch.
- ``budget_aware``: the agent's behaviour depends on the turn budget, so
  Pass@(K,T) must be measured by rerunning each T (``mode="auto"`` does). Only
  such agents, or runs where the budget is revealed, receive the budget keys
  (``turn_budget``, ``turns_used``, ``turns_left``) in ``info``: a hidden
  budget is hidden from the agent, though the env's own ``info`` keeps them.

What was executed. The command the env ran is not always the agent's: an
injected slip replaces it, and probes force a prefix of turns. Agents that
keep a history (an LLM's chat transcript) must record what was executed:

- On every call after the first turn of an episode, ``info["executed_action"]``
  (`EXECUTED_KEY`) holds the command the env executed on the previous turn:
  the agent's own command, unless a slip replaced it or the engine forced it.
- On a forced turn (a teacher-forced prefix, or a slip the engine plays for
  the agent), the engine does not ask for a command; it calls the *optional*
  method ``observe(observation, info, executed_action) -> None`` on an
  `Agent` (``observe_batch(episode_ids, observations, infos,
  executed_actions)`` on a `BatchAgent`, ``observe_async(...)`` on an
  `AsyncAgent`, which `AsyncBatch` forwards): the engine played
  ``executed_action`` for the agent in the state ``observation`` shows.
  Agents without the method are treated as memoryless and simply skip those
  turns.

Determinism: the engine derives each episode's agent seed from the episode's
identity (env, task seed, repeat), never from execution order, so results do
not depend on the number of workers. Agents must draw only from generators
seeded in ``reset``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from turnbudget._checks import check_positive_int

__all__ = [
    "BUDGET_KEYS",
    "EXECUTED_KEY",
    "ORACLE_KEY",
    "Agent",
    "AsyncAgent",
    "AsyncBatch",
    "BatchAgent",
    "agent_flags",
    "observe",
    "observe_batch",
]

#: The info key under which the engine hands the oracle's actions to agents with ``needs_oracle``.
ORACLE_KEY = "oracle_actions"
#: The info key holding the command the env executed on the previous turn.
EXECUTED_KEY = "executed_action"
#: The info keys that reveal the turn budget (passed to an agent only when it may see them).
BUDGET_KEYS = ("turn_budget", "turns_used", "turns_left", "sampled_turn_budget")


@runtime_checkable
class Agent(Protocol):
    """One episode at a time: ``reset(seed)`` then ``act(observation, info)`` per turn."""

    def reset(self, seed: int) -> None: ...

    def act(self, observation: str, info: Mapping[str, Any]) -> str: ...


@runtime_checkable
class BatchAgent(Protocol):
    """Many episodes at once, each known by an ``episode_id`` string.

    ``act_batch`` receives the episodes waiting for a command and returns one
    command per episode, in the same order. ``end_episode`` lets the agent
    drop its state for an episode.
    """

    max_batch_size: int

    def reset_episode(self, episode_id: str, seed: int) -> None: ...

    def act_batch(
        self,
        episode_ids: Sequence[str],
        observations: Sequence[str],
        infos: Sequence[Mapping[str, Any]],
    ) -> list[str]: ...

    def end_episode(self, episode_id: str) -> None: ...


@runtime_checkable
class AsyncAgent(Protocol):
    """The coroutine form of `Agent`, for agents that wait on I/O."""

    async def reset_async(self, seed: int) -> None: ...

    async def act_async(self, observation: str, info: Mapping[str, Any]) -> str: ...


class AsyncBatch:
    """Run one `AsyncAgent` per episode concurrently, exposed as a `BatchAgent`.

    All coroutines run on one event loop per process, kept for the object's
    life, so async clients created by the agents (an ``AsyncOpenAI`` client,
    say) stay bound to a live loop. The loop is not pickled: a copy sent to a
    worker process starts its own.

    Args:
        factory: builds a fresh `AsyncAgent` for each episode (picklable if the
            engine uses worker processes).
        max_batch_size: most episodes in flight at once.
    """

    def __init__(self, factory: Any, max_batch_size: int = 16):
        if not callable(factory):
            raise TypeError(f"Expect `factory` to be callable, got {factory!r}")
        self.factory = factory
        self.max_batch_size = check_positive_int(max_batch_size, "max_batch_size")
        probe = factory()
        self.needs_oracle = bool(getattr(probe, "needs_oracle", False))
        self.budget_aware = bool(getattr(probe, "budget_aware", False))
        self._agents: dict[str, Any] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_loop": None, "_agents": {}}

    def _run(self, coroutine: Any) -> Any:
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coroutine)

    def close(self) -> None:
        """Close the event loop (a later call opens a new one)."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.close()

    def __repr__(self) -> str:
        name = getattr(self.factory, "__qualname__", None) or repr(self.factory)
        return f"AsyncBatch({name}, max_batch_size={self.max_batch_size})"

    def reset_episode(self, episode_id: str, seed: int) -> None:
        agent = self.factory()
        self._run(agent.reset_async(seed))
        self._agents[episode_id] = agent

    def act_batch(
        self,
        episode_ids: Sequence[str],
        observations: Sequence[str],
        infos: Sequence[Mapping[str, Any]],
    ) -> list[str]:
        async def gather() -> list[str]:
            return list(
                await asyncio.gather(
                    *(
                        self._agents[e].act_async(o, i)
                        for e, o, i in zip(episode_ids, observations, infos, strict=True)
                    )
                )
            )

        return self._run(gather())

    def observe_batch(
        self,
        episode_ids: Sequence[str],
        observations: Sequence[str],
        infos: Sequence[Mapping[str, Any]],
        executed_actions: Sequence[str],
    ) -> None:
        """Forward forced turns to the episodes' agents that define ``observe_async``."""

        async def gather() -> None:
            await asyncio.gather(
                *(
                    self._agents[e].observe_async(o, i, a)
                    for e, o, i, a in zip(
                        episode_ids, observations, infos, executed_actions, strict=True
                    )
                    if hasattr(self._agents[e], "observe_async")
                )
            )

        self._run(gather())

    def end_episode(self, episode_id: str) -> None:
        self._agents.pop(episode_id, None)


def observe(agent: object, observation: str, info: Mapping[str, Any], executed: str) -> None:
    """Tell an `Agent` about a forced turn, if it listens (``observe`` is optional)."""
    method = getattr(agent, "observe", None)
    if method is not None:
        method(observation, info, executed)


def observe_batch(
    agent: object,
    episode_ids: Sequence[str],
    observations: Sequence[str],
    infos: Sequence[Mapping[str, Any]],
    executed_actions: Sequence[str],
) -> None:
    """Tell a `BatchAgent` about forced turns, if it listens (``observe_batch`` is optional)."""
    method = getattr(agent, "observe_batch", None)
    if method is not None and episode_ids:
        method(episode_ids, observations, infos, executed_actions)


def agent_flags(agent: object) -> tuple[bool, bool]:
    """``(needs_oracle, budget_aware)`` of an agent (False when not declared)."""
    return bool(getattr(agent, "needs_oracle", False)), bool(getattr(agent, "budget_aware", False))
