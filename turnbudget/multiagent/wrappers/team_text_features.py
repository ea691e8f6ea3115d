"""Classic-RL adapter for a team: each agent's text observation as a fixed-length float vector."""

from __future__ import annotations

from typing import Any

from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from turnbudget.envs.core import INFO_ADMISSIBLE_ACTIONS, INFO_GOAL
from turnbudget.multiagent.base import TEXT_KEY, agent_entry
from turnbudget.multiagent.wrappers._common import (
    find_team_wrapper,
    require_parallel,
    require_single_team,
)
from turnbudget.wrappers.text_features import TextEncoder

__all__ = ["TeamTextFeatures"]


class TeamTextFeatures(BaseParallelWrapper):
    """`TextFeatures` for every agent: its ``{"text": ...}`` observation as hashed n-gram features.

    Each agent's observation becomes a ``Box(0, FEATURE_HIGH)`` float32
    vector: its text's block, then its goal's (``info["goal"]`` at reset) if
    ``include_goal``, then its admissible commands' if ``include_admissible``
    (`turnbudget.wrappers.text_features.TextEncoder`, the same features as
    the single-agent wrapper). The text stays in ``info["text_observation"]``.

    Args:
        env: A team env with ``Dict`` observations holding a ``Text`` ``"text"``.
        size: The vector's length, split evenly between the blocks (as `TextFeatures`).
        ngrams: Longest n-gram.
        include_goal: Add the goal block.
        include_admissible: Add the admissible-commands block.
        block_dim: Buckets per block (give ``size`` or ``block_dim``, not both).

    Example:
        >>> from turnbudget.multiagent import race_v0
        >>> env = TeamTextFeatures(race_v0.parallel_env(), size=64)
        >>> observations, infos = env.reset(seed=0)
        >>> observations["player_0"].shape, env.observation_space("player_0").contains(
        ...     observations["player_0"])
        ((64,), True)
    """

    def __init__(
        self,
        env: ParallelEnv,
        size: int | None = None,
        ngrams: int = 2,
        include_goal: bool = True,
        include_admissible: bool = False,
        *,
        block_dim: int | None = None,
    ):
        super().__init__(env)
        require_parallel(env, TeamTextFeatures)
        self._encoders = {
            agent: TextEncoder(size, ngrams, include_goal, include_admissible, block_dim=block_dim)
            for agent in env.possible_agents
        }
        for agent in env.possible_agents:
            space = env.observation_space(agent)
            if not isinstance(space, spaces.Dict) or not isinstance(
                space.spaces.get(TEXT_KEY), spaces.Text
            ):
                raise ValueError(
                    f"TeamTextFeatures needs Dict observations with a Text {TEXT_KEY!r}, "
                    f"got {space} for {agent!r}"
                )
        require_single_team(env, TeamTextFeatures)
        from turnbudget.multiagent.wrappers.team_numeric_info import TeamNumericInfo

        if (include_goal or include_admissible) and find_team_wrapper(
            env, TeamNumericInfo
        ) is not None:  # (the goal's and the commands' blocks were all zeros, silently)
            raise ValueError(
                "TeamTextFeatures reads info['goal'] and info['admissible_actions'], which "
                "TeamNumericInfo drops: put TeamNumericInfo outside TeamTextFeatures "
                "(make_team(..., text_features=N, info='numeric') stacks them in order)"
            )

    def observation_space(self, agent: str) -> spaces.Space:
        return agent_entry(self._encoders, agent).space

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        observations, infos = self.env.reset(seed=seed, options=options)
        for agent, info in infos.items():
            self._encoders[agent].set_goal(str(info.get(INFO_GOAL, "")))
        return self._features(observations, infos), infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        return self._features(observations, infos), rewards, terminations, truncations, infos

    def _features(self, observations: dict[str, Any], infos: dict[str, dict[str, Any]]) -> dict:
        features = {}
        for agent, obs in observations.items():
            info = infos[agent]
            text = obs[TEXT_KEY]
            features[agent] = self._encoders[agent].encode(
                text, info.get(INFO_ADMISSIBLE_ACTIONS, ())
            )
            assert "text_observation" not in info, "info['text_observation'] set twice"
            info["text_observation"] = text
        return features
