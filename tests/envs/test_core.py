"""The core contract: the World view of native games, the Oracle protocol, get_oracle."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from _support import native_env_ids

from turnbudget.envs import Oracle, World, get_oracle
from turnbudget.envs.core import MAX_OBSERVATION_LENGTH, Outcome, TextEnv
from turnbudget.wrappers import InjectErrors, ProcessReward


@pytest.mark.parametrize("env_id", native_env_ids())
def test_the_world_plays_exactly_like_the_gymnasium_env(env_id):
    env = gym.make(env_id).unwrapped
    world = gym.make(env_id).unwrapped.world()
    assert isinstance(world, World) and isinstance(env, TextEnv)
    _, info = env.reset(seed=5)
    world.reset(np.random.default_rng(5))  # reset(seed=5) seeds np_random the same way
    assert world.goal == info["goal"]
    rng = np.random.default_rng(0)
    for _ in range(40):
        assert world.admissible_actions() == info["admissible_actions"]
        assert world.distance_to_goal() == env.distance_to_goal()
        assert world.progress() == info["progress"]
        choices = ["dance", *info["admissible_actions"]]
        action = choices[int(rng.integers(len(choices)))]
        obs, _, terminated, _, info = env.step(action)
        outcome = world.apply(action)
        assert isinstance(outcome, Outcome) and outcome.valid == info["valid_action"]
        assert obs.startswith(outcome.feedback)
        assert (world.won, world.lost) == (info["won"], info["lost"])
        if terminated:
            assert not world.apply("look").valid
            break


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
