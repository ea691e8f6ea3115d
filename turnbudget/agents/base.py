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
  such agents receive the budget keys (``turn_budget``, ``turns_used``,
  ``turns_left``) in ``info`` on every turn; others get them only on the
  turns the budget is revealed to them: a hidden budget is hidden from the
  agent, though the env's own ``info`` keeps them.

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

Start-up: the engine calls an agent's *optional* method ``ready() -> None``
when a worker's driver is built and again before each episode (a batch
agent's: before each turn), outside the episode's clock on the local backend.
An agent that needs a process, a server or a model loaded can start it there,
or start it again after it died (a sealed agent starts its process there), so
it must cost nothing once the agent is ready. An exception from it when the
driver is built ends the run (on the local backend, with the agent's own
traceback; on a pool or Ray worker, one line says the worker failed to start
and why); one before an episode fails that episode, as an exception from
``act`` does. An attribute named ``ready`` that is not callable is the agent's
own state, never called.

Determinism: the engine derives each episode's agent seed from the episode's
identity (env, task seed, repeat), never from execution order, so results do
not depend on the number of workers. Agents must draw only from generators
seeded in ``reset``.
"""

from __future__ import annotations

import asyncio
import copy
import functools
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from turnbudget._checks import agent_flag, brief, check_batch_size, is_int, is_listlike

__all__ = [
    "BUDGET_KEYS",
    "EXECUTED_KEY",
    "ORACLE_KEY",
    "Agent",
    "AsyncAgent",
    "AsyncBatch",
    "BatchAgent",
    "admissible_commands",
    "agent_flags",
    "in_flight",
    "observe",
    "observe_batch",
    "preflight",
]

#: The info key under which the engine hands the oracle's actions to agents with ``needs_oracle``.
ORACLE_KEY = "oracle_actions"
#: The info key holding the command the env executed on the previous turn.
EXECUTED_KEY = "executed_action"
#: The info keys that reveal the turn budget (passed to an agent only when it may see them);
#: ``rounds_used`` is the team budget's (`turnbudget.multiagent`).
BUDGET_KEYS = ("turn_budget", "turns_used", "turns_left", "sampled_turn_budget", "rounds_used")


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
    drop its state for an episode. An id is opaque (no budget, env id or task
    seed in it) and unique among the agent's episodes in flight; it may come
    back for a later episode after ``end_episode`` (the same task at another
    budget).
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

    Per-episode agents that report on their decisions (``step_note()``, as
    `ChatAgent` does) are reported through ``step_notes``; forced turns reach
    their ``observe_async`` (or ``observe``) through ``observe_batch``.

    Args:
        factory: builds a fresh `AsyncAgent` for each episode (picklable if the
            engine uses worker processes).
        max_batch_size: most episodes in flight at once.
        concurrency: most requests running at once (default: ``max_batch_size``);
            a call with more episodes queues the rest.
    """

    def __init__(self, factory: Any, max_batch_size: int = 16, concurrency: int | None = None):
        if not callable(factory):
            raise TypeError(f"Expect `factory` to be callable, got {factory!r}")
        self.factory = factory
        self.max_batch_size = check_batch_size(max_batch_size, "max_batch_size")
        self.concurrency = (
            self.max_batch_size
            if concurrency is None
            else check_batch_size(concurrency, "concurrency")
        )
        probe = factory()
        self.needs_oracle = agent_flag(probe, "needs_oracle", "factory()")
        self.budget_aware = agent_flag(probe, "budget_aware", "factory()")
        self._agents: dict[str, Any] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_loop": None, "_agents": {}}

    @property
    def name(self) -> str:
        """The name of the agent whose ``spawn`` is the factory, else ``async-batch``."""
        return str(getattr(getattr(self.factory, "__self__", None), "name", None) or "async-batch")

    def _run(self, coroutine: Any) -> Any:
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        try:
            return self._loop.run_until_complete(coroutine)
        except BaseException:
            # An episode's timeout or Ctrl-C (a signal's handler raises in the loop) left this
            # call's requests pending: they read on, more than `concurrency` at once, and
            # resumed in later calls. Cancelled here, as `asyncio.run` does at its end.
            self._cancel_pending()
            raise

    def _cancel_pending(self) -> None:
        assert self._loop is not None
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        if pending:
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))

    def close(self) -> None:
        """Close the event loop (a later call opens a new one). When ``factory`` is a bound
        method of an object with ``aclose()`` (`ChatAgent.spawn`), that is awaited first, so
        shared clients close on the loop they ran on."""
        if self._loop is not None and not self._loop.is_closed():
            closer = getattr(getattr(self.factory, "__self__", None), "aclose", None)
            try:
                if callable(closer):
                    self._loop.run_until_complete(closer())
            finally:
                self._loop.close()

    def __repr__(self) -> str:
        name = getattr(self.factory, "__qualname__", None) or repr(self.factory)
        return (
            f"AsyncBatch({name}, max_batch_size={self.max_batch_size}, "
            f"concurrency={self.concurrency})"
        )

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
        calls = [
            self._agents[e].act_async(o, i)
            for e, o, i in zip(episode_ids, observations, infos, strict=True)
        ]
        return self._run(self._gather(calls))

    async def _gather(self, calls: list[Any]) -> list[Any]:
        """Await ``calls`` at most ``concurrency`` at a time; all finish before any error is
        raised, so no request is left pending on the loop."""
        limit = asyncio.Semaphore(self.concurrency)

        async def bounded(call: Any) -> Any:
            async with limit:
                return await call

        results = await asyncio.gather(*(bounded(c) for c in calls), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return list(results)

    def step_notes(self, episode_ids: Sequence[str]) -> list[Mapping[str, Any] | None]:
        """Each episode agent's ``step_note()`` about its last decision (None when it has none)."""
        notes = []
        for e in episode_ids:
            note = getattr(self._agents[e], "step_note", None)
            notes.append(note() if callable(note) else None)
        return notes

    def observe_batch(
        self,
        episode_ids: Sequence[str],
        observations: Sequence[str],
        infos: Sequence[Mapping[str, Any]],
        executed_actions: Sequence[str],
    ) -> None:
        """Tell each episode's agent about a turn played for it (a forced command)."""

        async def observe(agent: Any, o: str, i: Mapping[str, Any], a: str) -> None:
            if hasattr(agent, "observe_async"):
                await agent.observe_async(o, i, a)
            elif hasattr(agent, "observe"):
                agent.observe(o, i, a)

        calls = [
            observe(self._agents[e], o, i, a)
            for e, o, i, a in zip(episode_ids, observations, infos, executed_actions, strict=True)
        ]
        self._run(self._gather(calls))

    def end_episode(self, episode_id: str) -> None:
        self._agents.pop(episode_id, None)


def in_flight(agent: Any, concurrency: int | None = None) -> Any:
    """The form an engine drives ``agent`` in: an `AsyncAgent` (an LLM agent) becomes an
    `AsyncBatch` with ``concurrency`` episodes in flight (default: the agent's own
    ``concurrency``, else its ``default_concurrency``); 1 keeps its blocking ``act``.
    Other agents are returned as they are.

    The per-episode copies come from the agent's ``spawn()`` when it has one (sharing
    its clients), else from a deep copy.

    Example:
        >>> from turnbudget.agents.baselines import RandomAgent
        >>> in_flight(RandomAgent())
        RandomAgent()
    """
    if concurrency is not None:
        check_batch_size(concurrency, "concurrency")
    if hasattr(agent, "act_batch"):
        if concurrency is not None:
            raise ValueError(
                f"`concurrency` applies to async agents; {type(agent).__name__} is a batch agent "
                "(set its max_batch_size instead)"
            )
        return agent
    if not hasattr(agent, "act_async"):
        if concurrency not in (None, 1):
            raise ValueError(
                f"`concurrency` needs an async agent (act_async), e.g. ChatAgent; "
                f"{type(agent).__name__} has none"
            )
        return agent
    width = (
        concurrency
        or _declared_width(agent, "concurrency")
        or _declared_width(agent, "default_concurrency")
        or 1
    )
    if width == 1 and hasattr(agent, "act"):
        return agent
    factory = getattr(agent, "spawn", None) or functools.partial(copy.deepcopy, agent)
    return AsyncBatch(factory, max_batch_size=width)


def _declared_width(agent: Any, name: str) -> int | None:
    """The episodes in flight ``agent`` declares in its attribute ``name`` (None or 0: none),
    checked as `check_batch_size` checks one (``int()`` of it took 2.5 as 2 and said only
    "invalid literal for int()" of "many")."""
    value = getattr(agent, name, None)
    if value is None or (is_int(value) and value == 0):
        return None
    return check_batch_size(value, f"agent.{name}")


def exact_number(value: float) -> str:
    """``value`` as short as ``:g`` writes it when that reads back as the same number, else
    in full: an agent's repr names it in a run (``OracleAgent(epsilon=0.333333)`` stood for
    0.3333333 and 0.33333349 alike, and the second resumed the first's run).

    Example:
        >>> exact_number(0.3), exact_number(0.0), exact_number(0.3333333)
        ('0.3', '0', '0.3333333')
    """
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


def admissible_commands(info: Any, key: str = "admissible_actions") -> list[str]:
    """``info[key]`` (``"admissible_actions"``, or another list of commands such as
    ``"oracle_actions"``) as a new list (empty when absent or None), for an agent's ``act``:
    an info that is no mapping, or commands that are no list of str, is a TypeError naming it
    (``act(obs, None)`` raised AttributeError from inside, and a str of commands was played
    one character at a time).

    Example:
        >>> admissible_commands({"admissible_actions": ("look", "go north")})
        ['look', 'go north']
    """
    try:
        commands = info.get(key)
    except AttributeError:
        raise TypeError(
            f"Expect `info` to be the env's info, a mapping, got {brief(info)}"
        ) from None
    if type(commands) is list:
        # The env's own, on every turn: its items checked by one join, in C (the general check
        # below, a generator over the items, cost the random agent ~7,000 instructions a turn)
        try:
            "".join(commands)
        except TypeError:
            raise TypeError(
                f"Expect info[{key!r}] to hold commands (str) only, got {brief(commands)}"
            ) from None
        return commands.copy()
    if commands is None:
        return []
    if not is_listlike(commands):  # (a str, bytes or a mapping is no list of commands)
        raise TypeError(
            f"Expect info[{key!r}] to be a list of commands (str), got {brief(commands)}"
        )
    commands = list(commands)
    if not all(isinstance(command, str) for command in commands):
        raise TypeError(f"Expect info[{key!r}] to hold commands (str) only, got {brief(commands)}")
    return commands


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


def preflight(agent: object) -> None:
    """Let ``agent`` refuse to start, once, before its first episode.

    An agent may define ``preflight()``: it raises when the agent cannot play at
    all (`turnbudget.agents.llm.ChatAgent` asks its server for ``/models``, so a
    server that is down fails in seconds, not after every episode's retries).
    The evaluator calls it; agents without one start as they are.
    """
    check = getattr(agent, "preflight", None)
    if callable(check):
        check()


def agent_flags(agent: object) -> tuple[bool, bool]:
    """``(needs_oracle, budget_aware)`` of an agent (False when not declared; TypeError when
    not a bool, `agent_flag`)."""
    return agent_flag(agent, "needs_oracle"), agent_flag(agent, "budget_aware")
