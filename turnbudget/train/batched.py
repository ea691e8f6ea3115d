"""The learner's features built for all its sub-envs at once.

`HistoryFeatures` on every sub-env featurises one observation at a time: about 20
small NumPy calls a step per env, whose fixed cost dominated the training env side
(issue 26). In the learner's vector env each sub-env's stack ends instead in
`TurnInputs`, which hands up what the features are made from (a `Turn`), and one
`BatchEncoder` (inside the vector env wrapper of `batched_vec_env`) turns the turns of
all sub-envs into the vectors: one count and one lookup for the text blocks, one
array per feature group. The encoders are `TextEncoder` and `FeatureEncoder`, the
ones `TextFeatures`, `HistoryFeatures` and `PolicyAgent` use (their ``encode`` is
``encode_batch`` of one): the vectors are those of the per-env stack, bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from turnbudget.wrappers._common import find_wrapper
from turnbudget.wrappers.discrete_actions import DiscreteActions
from turnbudget.wrappers.history_features import FeatureEncoder, FeatureEpisode, executed_command
from turnbudget.wrappers.text_features import TextEncoder

__all__ = ["TURN_KEY", "BatchEncoder", "Turn", "TurnInputs", "batched_vec_env"]

#: The info key under which `TurnInputs` hands up its `Turn`.
TURN_KEY = "turn_inputs"
_NO_OBSERVATION = np.zeros(0, dtype=np.float32)
_NO_OBSERVATION.flags.writeable = False


@dataclass(frozen=True)
class Turn:
    """What one sub-env's turn gives the features: the text observation (with the budget
    `RevealBudget` shows), the slot commands, the admissible commands, the budget numbers,
    and either the episode's goal (at reset) or the command executed (at a step)."""

    text: str
    commands: Sequence[str]
    admissible: Sequence[str]
    turns_left: int | None
    turn_budget: int | None
    goal: str | None = None
    executed: str | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> Turn:
        return self  # immutable, and SB3's vector envs deep-copy every info of every step


class TurnInputs(gym.Wrapper):
    """End a training stack that stops at `DiscreteActions` (text info) in place of
    `TextFeatures` and `HistoryFeatures`: the observation is an empty vector and
    ``info[TURN_KEY]`` the `Turn` a `BatchEncoder` makes the features from."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._discrete = find_wrapper(env, DiscreteActions)
        if self._discrete is None or not isinstance(env.observation_space, spaces.Text):
            raise ValueError("TurnInputs wraps a text stack ending in DiscreteActions")
        self.observation_space = spaces.Box(0.0, 1.0, shape=(0,), dtype=np.float32)
        self._commands: Sequence[str] = ()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        return _NO_OBSERVATION, self._hand_up(obs, info, goal=str(info.get("goal", "")))

    def step(self, action: Any):
        # (as HistoryFeatures.step)
        command = self._discrete.action(action) if self._commands else ""
        obs, reward, terminated, truncated, info = self.env.step(action)
        info = self._hand_up(obs, info, executed=executed_command(command, info))
        return _NO_OBSERVATION, reward, terminated, truncated, info

    def _hand_up(self, obs: str, info: dict[str, Any], **kwargs: str) -> dict[str, Any]:
        self._commands = info["action_commands"]
        assert TURN_KEY not in info, f"info[{TURN_KEY!r}] set twice"
        info[TURN_KEY] = Turn(
            obs,
            self._commands,
            info.get("admissible_actions", ()),
            info.get("turns_left"),
            info.get("turn_budget"),
            **kwargs,
        )
        return info


class BatchEncoder:
    """The features of `HistoryFeatures` (after `TextFeatures`' blocks) for ``n_envs``
    sub-envs, from their `Turn` s, a batch at a time.

    Args:
        encoding: `HistoryFeatures.spec_dict` of the per-env stack (what `PolicyAgent`
            rebuilds the same features from).
        n_envs: The sub-envs.
    """

    def __init__(self, encoding: Mapping[str, Any], n_envs: int):
        spec = encoding["text_features"]
        self.text = TextEncoder(
            ngrams=spec["ngrams"],
            include_goal=spec["include_goal"],
            include_admissible=spec["include_admissible"],
            block_dim=spec["dim"],
        )
        self.history = FeatureEncoder(
            encoding["max_actions"],
            encoding["history"],
            encoding["command_dim"],
            encoding["budget"],
        )
        size = self.text.space.shape[0] + self.history.size()
        #: The vectors' space (`HistoryFeatures.observation_space`).
        self.space = spaces.Box(-np.inf, np.inf, shape=(size,), dtype=np.float32)
        self._goals: list[np.ndarray] = [np.zeros(0, dtype=np.float32)] * n_envs
        self._episodes: list[FeatureEpisode | None] = [None] * n_envs

    def encode(self, envs: Iterable[int], turns: Sequence[Turn]) -> np.ndarray:
        """The vectors (rows) of these sub-envs' turns: a turn with a goal starts an episode,
        one without plays on the sub-env's episode with its executed command."""
        envs = list(envs)
        episodes = []
        for env, turn in zip(envs, turns, strict=True):
            episode = self._episodes[env]
            if turn.goal is not None:
                if self.text.include_goal:
                    self._goals[env] = self.text.hash(turn.goal)
                episode = self._episodes[env] = self.history.episode(turn.goal)
            elif episode is None:
                raise ValueError(f"Sub-env {env} played a turn before its first reset")
            else:
                episode.record(str(turn.executed))
            episodes.append(episode)
        texts = [turn.text for turn in turns]
        base = self.text.encode_batch(
            texts, [self._goals[env] for env in envs], [turn.admissible for turn in turns]
        )
        extra = self.history.encode_batch(
            episodes,
            texts,
            [turn.commands for turn in turns],
            [turn.turns_left for turn in turns],
            [turn.turn_budget for turn in turns],
        )
        return np.concatenate([base, extra], axis=1)


def _turns(infos: Iterable[dict[str, Any]]) -> list[Turn]:
    return [info.pop(TURN_KEY) for info in infos]


def batched_vec_env(venv: Any, encoder: BatchEncoder) -> Any:
    """Wrap an SB3 VecEnv of `TurnInputs` stacks: its observations are ``encoder``'s vectors
    (``terminal_observation`` too), and the `Turn` s leave the infos. Needs SB3."""
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class BatchedFeatures(VecEnvWrapper):
        def reset(self) -> np.ndarray:
            self.venv.reset()
            return encoder.encode(range(self.num_envs), _turns(self.venv.reset_infos))

        def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
            _, rewards, dones, infos = self.venv.step_wait()
            obs = encoder.encode(range(self.num_envs), _turns(infos))
            done = np.flatnonzero(dones)
            if len(done):  # the sub-envs reset: their turns are in reset_infos
                for env in done:
                    infos[env]["terminal_observation"] = obs[env].copy()
                obs[done] = encoder.encode(done, _turns(self.venv.reset_infos[env] for env in done))
            return obs, rewards, dones, infos

    return BatchedFeatures(venv, observation_space=encoder.space)
