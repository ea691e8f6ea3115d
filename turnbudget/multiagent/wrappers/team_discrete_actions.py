"""Classic-RL adapter for a team: each agent acts by index over its admissible commands, with a mask."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from turnbudget.envs.core import INFO_ADMISSIBLE_ACTIONS
from turnbudget.multiagent.base import agent_entry
from turnbudget.multiagent.wrappers._common import (
    find_team_wrapper,
    require_parallel,
    require_single_team,
)
from turnbudget.wrappers.discrete_actions import CommandSlots

__all__ = ["TeamDiscreteActions"]


class TeamDiscreteActions(BaseParallelWrapper):
    """`DiscreteActions` for every agent: ``Discrete(max_actions)`` over its admissible commands.

    Agent a's index i plays the i-th of a's admissible commands in
    alphabetical order; indices past them are masked, and playing one anyway
    sends a non-command (that agent's turn is spent with
    ``valid_action=False``; the others' are not touched). Each agent's
    ``info["action_mask"]`` (a bool array) and ``info["action_commands"]``
    come with every reset and step; ``action_mask(agent)`` returns the mask.
    Masks are ``int8`` (1 = playable), PettingZoo's convention: they go
    straight into ``env.action_space(agent).sample(mask)``.
    An index that is not a whole number in ``[0, max_actions)`` is refused
    with ``ValueError`` before anything changes, as `DiscreteActions` refuses it.

    Args:
        env: A team env with ``Text`` actions and ``info["admissible_actions"]`` per agent.
        max_actions: N, the size of every agent's ``Discrete`` space (a positive int, at
            most `turnbudget.wrappers.discrete_actions.MAX_ACTIONS`).

    Example:
        >>> from turnbudget.multiagent import vault_v0
        >>> env = TeamDiscreteActions(vault_v0.parallel_env(), max_actions=8)
        >>> _, infos = env.reset(seed=0)
        >>> infos["runner"]["action_commands"] == sorted(infos["runner"]["admissible_actions"])
        True
        >>> _, _, _, _, infos = env.step({"operator": 0, "runner": 0})
        >>> infos["runner"]["valid_action"], env.action_space("runner")
        (True, Discrete(8))
    """

    def __init__(self, env: ParallelEnv, max_actions: int = 16):
        super().__init__(env)
        require_parallel(env, TeamDiscreteActions)
        self._slots = {agent: CommandSlots(max_actions) for agent in env.possible_agents}
        for agent in env.possible_agents:
            if not isinstance(env.action_space(agent), spaces.Text):
                raise ValueError(
                    f"TeamDiscreteActions needs Text actions, got {env.action_space(agent)} "
                    f"for {agent!r}"
                )
        require_single_team(env, TeamDiscreteActions)
        from turnbudget.multiagent.wrappers.team_numeric_info import TeamNumericInfo

        if find_team_wrapper(env, TeamNumericInfo) is not None:  # (a KeyError at reset)
            raise ValueError(
                "TeamDiscreteActions reads info['admissible_actions'], which TeamNumericInfo "
                "drops: put TeamNumericInfo outside TeamDiscreteActions (make_team(..., "
                "discrete_actions=N, info='numeric') stacks them in order)"
            )
        self.max_actions = next(iter(self._slots.values())).max_actions
        # Built once: PettingZoo requires the same space object on every call.
        self._spaces = {a: spaces.Discrete(self.max_actions) for a in env.possible_agents}

    def action_space(self, agent: str) -> spaces.Space:
        return agent_entry(self._spaces, agent)

    def action_mask(self, agent: str) -> np.ndarray:
        """Which of ``agent``'s indices play an admissible command now."""
        return agent_entry(self._slots, agent).mask.astype(np.int8)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        observations, infos = self.env.reset(seed=seed, options=options)
        return observations, self._update(infos)

    def check_agent_action(self, agent: str, index: Any) -> None:
        """Refuse (``ValueError``) an index that is not a whole number in ``[0, max_actions)``,
        as `step` would: the AEC form asks at the step of the agent who gave it."""
        slots = agent_entry(self._slots, agent)
        try:
            slots.command(index)
        except ValueError as exc:
            raise ValueError(f"Agent {agent!r}: {exc}") from None

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        live = self.env.agents
        self.unwrapped.check_actions(actions, live)  # a mapping of live agents
        if not live:
            return self.env.step(actions)
        commands = {agent: self._slots[agent].command(index) for agent, index in actions.items()}
        observations, rewards, terminations, truncations, infos = self.env.step(commands)
        return observations, rewards, terminations, truncations, self._update(infos)

    def _update(self, infos: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for agent, info in infos.items():
            slots = self._slots[agent]
            slots.update(info[INFO_ADMISSIBLE_ACTIONS])
            for key in ("action_mask", "action_commands"):
                assert key not in info, f"info[{key!r}] set twice"
            info["action_mask"] = slots.mask.astype(np.int8)
            info["action_commands"] = list(slots.commands)
        return infos
