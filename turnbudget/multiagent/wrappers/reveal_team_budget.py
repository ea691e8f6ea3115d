"""Team budget visibility: hidden, shown every round, or shown in the last k rounds."""

from __future__ import annotations

from typing import Any

from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from turnbudget.multiagent.base import TEXT_KEY, agent_entry
from turnbudget.multiagent.wrappers._common import (
    find_team_wrapper,
    require_parallel,
    require_single_team,
)
from turnbudget.multiagent.wrappers.team_turn_budget import TeamTurnBudget
from turnbudget.wrappers.reveal_budget import (
    budget_visible,
    check_reveal,
    template_shows_budget,
    widen_text_space,
)

__all__ = ["RevealTeamBudget"]


class RevealTeamBudget(BaseParallelWrapper):
    """Show every agent the team's budget in its observation text, as `RevealBudget` does.

    ``mode`` is ``"never"``, ``"always"``, ``"final"`` or ``"final=k"`` (the
    last k rounds); ``template`` is formatted with that agent's
    ``turns_left``, ``turns_used`` and ``turn_budget`` from the
    `TeamTurnBudget` inside. Each agent's ``info["budget_visible"]`` tells
    whether its observation showed the budget (never with a template that shows no
    turns left nor budget, such as ``"[round {turns_used}]"``).

    Args:
        env: A team env that contains a `TeamTurnBudget`.
        mode: ``"never"``, ``"always"``, ``"final"`` or ``"final=k"``.
        final_turns: k for the ``"final"`` mode (a positive int).
        template: A ``str.format`` template.

    Example:
        >>> from turnbudget.multiagent import vault_v0
        >>> env = RevealTeamBudget(vault_v0.parallel_env(turn_budget=5), mode="final=2")
        >>> observations, infos = env.reset(seed=0)
        >>> infos["runner"]["budget_visible"]
        False
        >>> for _ in range(3):
        ...     observations, *_ = env.step({a: "wait" for a in env.agents})
        >>> observations["runner"]["text"].splitlines()[-1]
        '[2 rounds left]'
    """

    def __init__(
        self,
        env: ParallelEnv,
        mode: str = "always",
        final_turns: int | None = None,
        template: str = "\n[{turns_left} rounds left]",
    ):
        super().__init__(env)
        require_parallel(env, RevealTeamBudget)
        name, final_turns, wide = check_reveal(mode, final_turns, template)
        require_single_team(env, RevealTeamBudget)
        if find_team_wrapper(env, TeamTurnBudget) is None:
            raise ValueError("RevealTeamBudget needs a TeamTurnBudget inside the env it wraps")
        self.mode, self.final_turns, self.template = name, final_turns, template
        # (a template with no budget in it shows none, as in `RevealBudget`)
        self._shows_budget = template_shows_budget(template)
        self._spaces = {}
        for agent in env.possible_agents:
            space = env.observation_space(agent)
            if not isinstance(space, spaces.Dict) or not isinstance(space[TEXT_KEY], spaces.Text):
                raise ValueError(
                    f"RevealTeamBudget needs Dict observations with a Text {TEXT_KEY!r}"
                )
            if name != "never":
                space = spaces.Dict(
                    {**space.spaces, TEXT_KEY: widen_text_space(space[TEXT_KEY], wide)}
                )
            self._spaces[agent] = space

    def observation_space(self, agent: str) -> spaces.Space:
        return agent_entry(self._spaces, agent)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        observations, infos = self.env.reset(seed=seed, options=options)
        return self._reveal(observations, infos), infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        return self._reveal(observations, infos), rewards, terminations, truncations, infos

    def _reveal(self, observations: dict[str, Any], infos: dict[str, dict[str, Any]]) -> dict:
        for agent, obs in observations.items():
            info = infos[agent]
            visible = budget_visible(self.mode, self.final_turns, info["turns_left"])
            assert "budget_visible" not in info, "info['budget_visible'] set twice"
            info["budget_visible"] = visible and self._shows_budget
            if visible:
                suffix = self.template.format(
                    turns_left=info["turns_left"], turns_used=info["turns_used"],
                    turn_budget=info["turn_budget"],
                )  # fmt: skip
                observations[agent] = {**obs, TEXT_KEY: obs[TEXT_KEY] + suffix}
        return observations
