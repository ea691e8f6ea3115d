"""The core contract: the Oracle protocol, get_oracle, one observation limit."""

from __future__ import annotations

import gymnasium as gym
import pytest

from turnbudget.envs import Oracle, get_oracle
from turnbudget.envs.core import MAX_OBSERVATION_LENGTH
from turnbudget.wrappers import InjectErrors, ProcessReward


def test_get_oracle_finds_the_game_under_wrappers_and_explains_what_is_missing():
    env = gym.make("turnbudget/KeyQuest-Easy-v0")
    assert get_oracle(env) is env.unwrapped and isinstance(env.unwrapped, Oracle)
    with pytest.raises(TypeError, match=r"needs the oracle method\(s\) `optimal_actions\(\)`"):
        get_oracle(gym.make("CartPole-v1"))
    # the wrappers check through it
    with pytest.raises(TypeError, match=r"ProcessReward needs the oracle method\(s\)"):
        ProcessReward(gym.make("CartPole-v1"))
    with pytest.raises(TypeError, match=r"InjectErrors needs the oracle method\(s\)"):
        InjectErrors(gym.make("CartPole-v1"), rate=0.1)


def test_one_observation_limit_for_every_family():
    env = gym.make("turnbudget/Maze-Easy-v0")
    assert env.observation_space.max_length == MAX_OBSERVATION_LENGTH == 8192
