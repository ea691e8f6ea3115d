"""Classic-RL adapter for a team: each agent's ``info`` as fixed-shape NumPy values."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from turnbudget.multiagent.wrappers._common import (
    find_team_wrapper,
    require_parallel,
    require_single_team,
)
from turnbudget.multiagent.wrappers.inject_team_errors import InjectTeamErrors
from turnbudget.multiagent.wrappers.reveal_team_budget import RevealTeamBudget
from turnbudget.multiagent.wrappers.team_discrete_actions import TeamDiscreteActions
from turnbudget.multiagent.wrappers.team_turn_budget import TeamTurnBudget
from turnbudget.wrappers.numeric_info import numeric_fields, to_numeric

__all__ = ["TeamNumericInfo"]


class TeamNumericInfo(BaseParallelWrapper):
    """`NumericInfo` for every agent: the same keys, dtypes and shapes, on every reset and step.

    SuperSuit's vector envs and the replay buffers behind them stack each
    agent's ``info``: a list of strings or a plain ``bool`` breaks them. Each
    agent's ``info`` keeps exactly the keys of `info_space` (the keys of
    `turnbudget.wrappers.numeric_info.numeric_fields` for the team wrappers
    present: ``won``, ``lost``, ``valid_action``, ``progress``, ``turn_budget``,
    ``turns_used``, ``turns_left``; ``sampled_turn_budget`` with a BudgetMix,
    ``injected_error_kind`` with `InjectTeamErrors`, ``budget_visible`` with
    `RevealTeamBudget`, ``action_mask`` with `TeamDiscreteActions`). Put it outermost.

    Args:
        env: A team stack with a `TeamTurnBudget` (what `turnbudget.multiagent.make_team` builds).

    Example:
        >>> from turnbudget.multiagent import vault_v0
        >>> env = TeamNumericInfo(vault_v0.parallel_env())
        >>> _, infos = env.reset(seed=0)
        >>> env.info_space.contains(infos["runner"]), infos["runner"]["turns_left"].dtype
        (True, dtype('int64'))
    """

    def __init__(self, env: ParallelEnv):
        super().__init__(env)
        require_parallel(env, TeamNumericInfo)
        require_single_team(env, TeamNumericInfo)
        budget = find_team_wrapper(env, TeamTurnBudget)
        if budget is None:
            raise ValueError("TeamNumericInfo needs a TeamTurnBudget inside the env it wraps")
        actions = find_team_wrapper(env, TeamDiscreteActions)
        self._fields = numeric_fields(
            sampled=budget.budget_mix is not None,
            errors=find_team_wrapper(env, InjectTeamErrors) is not None,
            reveal=find_team_wrapper(env, RevealTeamBudget) is not None,
            max_actions=None if actions is None else actions.max_actions,
            mask_dtype=np.int8,
        )
        #: What every agent's ``info`` holds: one space per key.
        self.info_space = spaces.Dict({key: space for key, (space, _) in self._fields.items()})
        self._sampled: dict[str, Any] = {}

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        observations, infos = self.env.reset(seed=seed, options=options)
        self._sampled = {agent: info.get("sampled_turn_budget") for agent, info in infos.items()}
        return observations, self._numeric(infos)

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        return observations, rewards, terminations, truncations, self._numeric(infos)

    def _numeric(self, infos: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {
            agent: to_numeric(self._fields, info, self._sampled.get(agent))
            for agent, info in infos.items()
        }
