"""Record every agent's steps and episode summary (memory, JSONL file or callback)."""

from __future__ import annotations

import copy
import itertools
import os
from collections.abc import Callable
from typing import Any

from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from turnbudget._checks import check_bool
from turnbudget.multiagent.wrappers._common import (
    find_team_wrapper,
    require_parallel,
    require_single_team,
)
from turnbudget.multiagent.wrappers.team_turn_budget import begin_team_reset
from turnbudget.records import OutcomeRecord, RecordSink
from turnbudget.wrappers.record_step_outcomes import (
    EpisodeTracker,
    check_env_index,
    check_episode_id,
)

__all__ = ["RecordTeamOutcomes"]


def _applied_error(info: Any) -> bool:
    event = info.get("injected_error") if isinstance(info, dict) else None
    return bool(event) and event.get("applied", True)


def _own_after(world: Any, agent: str, actions: dict[str, Any], playing: list[str]) -> int | None:
    """Where ``agent``'s command took its distance in the round ``world`` (a copy of the world
    before it) played: its distance after the round with the best the other agents in play
    could have answered (their admissible commands; None: its command loses whatever they do).
    A partner's detour raised the distance of the agent beside it (an operator who waited was
    given the runner's error), and one mistake counted as two."""
    action = actions.get(agent)
    mine = world.parse(agent, action) if isinstance(action, str) else None
    others = [r for r in world.roles if r != agent]
    options = [world.admissible(r) if r in playing else [None] for r in others]
    best: int | None = None
    for answer in itertools.product(*options):
        trial = copy.deepcopy(world)
        trial.play_round({agent: mine, **dict(zip(others, answer, strict=True))})
        distance = 0 if trial.won(agent) else trial.distance_to_goal(agent)
        if distance is not None and (best is None or distance < best):
            best = int(distance)
    return best


class RecordTeamOutcomes(BaseParallelWrapper):
    """`RecordStepOutcomes` for a team: one record stream per agent, one delivery per episode.

    Each agent's steps and episode summary follow `StepRecord` and
    `EpisodeRecord`, judged against the game's per-agent oracle
    (``optimal_actions(agent)`` before the round, ``distance_to_goal(agent)``
    after it). On a round whose distance rose, an agent whose command was not
    optimal, and met no injected error of its own, is judged by where its own command took the
    distance, with the best its partners could have answered on a copy of the
    world (``command_effect``, ``error_self``, ``wasted``): a partner's detour
    is not its error, though the rise is one the team recovers from
    (``errors_opened``). Two fields are added: ``agent`` and ``team_episode_id``
    (the episode's id; each agent's ``episode_id`` is ``f"{team_episode_id}#{agent}"``).
    When the episode ends for every agent, all its records go out together
    (one write to the JSONL file), so a killed process never leaves half an
    episode. An episode abandoned by an early reset or ``close()`` is
    dropped and counted in ``n_abandoned``.

    Args:
        env: The team env to record (wrap it outside `InjectTeamErrors`).
        path: A JSONL file to append to.
        callback: Called with each record.
        memory: Keep records in ``records``; default: only when there is no other sink.
        record_steps: Record steps (else only episode summaries).
        oracle: Query the oracle (False: distances and optimality are None).
        env_index: An index that goes into the records (a vector of team envs).
        fsync: fsync the file after each episode.

    Example:
        >>> from turnbudget.multiagent import vault_v0
        >>> env = RecordTeamOutcomes(vault_v0.parallel_env(turn_budget=2))
        >>> _ = env.reset(seed=0)
        >>> while env.agents:
        ...     _ = env.step({a: "wait" for a in env.agents})
        >>> sorted((r["agent"], r["record"]) for r in env.records if r["record"] == "episode")
        [('operator', 'episode'), ('runner', 'episode')]
    """

    def __init__(
        self,
        env: ParallelEnv,
        path: str | os.PathLike[str] | None = None,
        callback: Callable[[OutcomeRecord], Any] | None = None,
        memory: bool | None = None,
        record_steps: bool = True,
        oracle: bool = True,
        env_index: int | None = None,
        fsync: bool = True,
    ):
        super().__init__(env)
        require_parallel(env, RecordTeamOutcomes)
        env_index = check_env_index(env_index)
        oracle = check_bool(oracle, "oracle")
        record_steps = check_bool(record_steps, "record_steps")
        game = env.unwrapped
        if oracle and not all(
            callable(getattr(game, m, None)) for m in ("optimal_actions", "distance_to_goal")
        ):
            raise TypeError(
                f"RecordTeamOutcomes needs optimal_actions and distance_to_goal on "
                f"{type(game).__name__} (pass oracle=False)"
            )
        require_single_team(env, RecordTeamOutcomes)
        if oracle:
            # The oracle's optimal actions are commands: below, TeamDiscreteActions turned them
            # into indices, and the records held '1' for 'go south'.
            for agent in env.possible_agents:
                if not isinstance(env.action_space(agent), spaces.Text):
                    raise ValueError(
                        "RecordTeamOutcomes judges the agents' commands against the oracle's: "
                        f"it needs Text actions, got {env.action_space(agent)} for {agent!r} "
                        "(put TeamDiscreteActions outside it: make_team(..., record=..., "
                        "discrete_actions=N) stacks them in order)"
                    )
        from turnbudget.multiagent.wrappers.inject_team_errors import InjectTeamErrors
        from turnbudget.multiagent.wrappers.team_numeric_info import TeamNumericInfo

        numeric = find_team_wrapper(env, TeamNumericInfo)
        if numeric is not None and find_team_wrapper(numeric, InjectTeamErrors) is not None:
            # (the records then counted no injected error, and a setback as the agent's own)
            raise ValueError(
                "RecordTeamOutcomes reads info['injected_error'], which TeamNumericInfo drops: "
                "put TeamNumericInfo outside RecordTeamOutcomes (make_team(..., errors=..., "
                "record=..., info='numeric') stacks them in order)"
            )
        self.sink = RecordSink(path, callback, memory, fsync)
        self.oracle = oracle
        self.env_id = f"turnbudget/{game.metadata['name']}"
        self.env_index = env_index
        self.trackers = {
            agent: EpisodeTracker(self.env_id, env_index, record_steps, oracle=oracle)
            for agent in env.possible_agents
        }
        self.n_abandoned = 0
        self._episode_index = -1
        self._team_episode_id = ""

    @property
    def records(self) -> list[OutcomeRecord]:
        """The records kept in memory."""
        return self.sink.records

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        options = begin_team_reset(self.env, seed, options)
        episode_id = check_episode_id(options.get("episode_id"))  # (before the game resets)
        self._abandon()
        observations, infos = self.env.reset(seed=seed, options=options)
        self._episode_index += 1
        seed = None if seed is None else int(seed)
        if episode_id is None:
            where = "" if self.env_index is None else f"{self.env_index}/"
            episode_id = f"{self.env_id}/{where}{seed}/{self._episode_index}"
        self._team_episode_id = str(episode_id)
        for agent, tracker in self.trackers.items():
            budget = infos.get(agent, {}).get("turn_budget")
            tracker.start(
                seed, f"{episode_id}#{agent}", self._episode_index,
                None if budget is None else int(budget), self._distance(agent),
            )  # fmt: skip
        return observations, infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        actions = self.unwrapped.check_actions(actions, self.agents)
        acting = [a for a in self.agents if self.trackers[a].in_progress]
        if not acting:
            return self.env.step(actions)
        optimal_now = {a: self._optimal_actions(a, actions.get(a)) for a in acting}
        # The world before the round, when a command in it is not optimal: the distance may
        # rise by the others' commands, and only its own rise is that agent's error.
        doubted = [
            a for a in acting
            if optimal_now[a] is not None
            and not (isinstance(actions.get(a), str) and actions.get(a) in optimal_now[a])
        ]  # fmt: skip
        world = self.env.unwrapped.world
        before = (
            (copy.deepcopy(world), {a: self._distance(a) for a in doubted}, list(self.agents))
            if doubted and len(world.roles) > 1
            else None
        )
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        for agent in acting:
            after = self._distance(agent)
            own: dict[str, Any] = {}
            # (a partner's injected error is not this agent's: only its own error makes the
            # command it gave not the one the round played)
            if before is not None and agent in doubted and not _applied_error(infos.get(agent)):
                start, distances, playing = before
                if after is None or (distances[agent] is not None and after > distances[agent]):
                    own["own_after"] = _own_after(start, agent, actions, playing)
            self.trackers[agent].step(
                actions.get(agent), optimal_now[agent], after,
                rewards.get(agent, 0.0), terminations.get(agent, False),
                truncations.get(agent, False), infos.get(agent, {}), **own,
            )  # fmt: skip
        if not self.agents:
            records: list[OutcomeRecord] = []
            for agent, tracker in self.trackers.items():
                if tracker.in_progress:
                    for record in tracker.finish():
                        records.append(
                            {**record, "agent": agent, "team_episode_id": self._team_episode_id}
                        )  # type: ignore[typeddict-unknown-key]
            self.sink.deliver(records)
        return observations, rewards, terminations, truncations, infos

    def close(self) -> None:
        self._abandon()
        super().close()

    def _abandon(self) -> None:
        if any(t.in_progress for t in self.trackers.values()):
            self.n_abandoned += 1
            for tracker in self.trackers.values():
                tracker.abandon()

    def _distance(self, agent: str) -> int | None:
        if not self.oracle:
            return None
        distance = self.env.unwrapped.distance_to_goal(agent)
        return None if distance is None else int(distance)

    def _optimal_actions(self, agent: str, action: Any) -> list[str] | None:
        """The optimal commands of ``agent``'s state now, with ``action`` among them when it is
        another spelling of one ("N" for "go north": optimal on any round, an error's too)."""
        if not self.oracle:
            return None
        game = self.env.unwrapped
        optimal = list(game.optimal_actions(agent))
        if (
            isinstance(action, str)
            and action not in optimal
            and game.world.parse(agent, str.__str__(action)) in optimal
        ):
            optimal.append(action)
        return optimal
