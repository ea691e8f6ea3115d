"""Text observations in a shared-memory AsyncVectorEnv: a construction-time error, not stale strings."""

from __future__ import annotations

import gymnasium as gym
import pytest

import turnbudget
from turnbudget.envs.text_space import SHARED_MEMORY_MESSAGE, TextSpace


def _maze() -> gym.Env:
    return gym.make("turnbudget/Maze-Easy-v0")


def _stacked() -> gym.Env:
    return turnbudget.make("turnbudget/KeyQuest-Easy-v0", reveal="always", errors=0.1)


@pytest.mark.parametrize("make", [_maze, _stacked])
def test_shared_memory_is_refused_at_construction_with_the_fix_named(make):
    with pytest.raises(ValueError, match="shared_memory=False") as error:
        gym.vector.AsyncVectorEnv([make, make])  # Gymnasium's default: shared_memory=True
    assert SHARED_MEMORY_MESSAGE in str(error.value.__cause__)
    with pytest.raises(ValueError, match="shared_memory=False"):
        gym.make_vec("turnbudget/Maze-Easy-v0", num_envs=2, vectorization_mode="async")


@pytest.mark.parametrize("make", [_maze, _stacked])
def test_without_shared_memory_observations_are_the_real_ones(make):
    envs = gym.vector.AsyncVectorEnv([make, make], shared_memory=False)
    obs, _ = envs.reset(seed=[0, 1])
    single = make()
    expected = [single.reset(seed=s)[0] for s in (0, 1)]
    assert list(obs) == expected
    envs.close()


def test_the_spaces_are_still_gymnasium_text_spaces():
    env = _stacked()
    for space in (env.observation_space, env.action_space, env.unwrapped.observation_space):
        assert isinstance(space, gym.spaces.Text) and isinstance(space, TextSpace)
    assert env.observation_space.contains(env.reset(seed=0)[0])


def test_a_numeric_only_library_reading_the_shape_is_told_the_options():
    """SB3 read ``shape`` (None) and crashed with "'NoneType' object is not iterable" (issue 25)."""
    from turnbudget.envs.text_space import NUMERIC_MESSAGE

    space = gym.make("turnbudget/Maze-Easy-v0").observation_space
    assert space.shape is None  # Gymnasium's answer, for everyone else
    sb3 = {"__name__": "stable_baselines3.common.vec_env.util", "space": space}
    with pytest.raises(TypeError, match=r"discrete_actions=N .* text_features=D"):
        exec("space.shape", sb3)
    assert "make_vec_env" in NUMERIC_MESSAGE


@pytest.mark.rl
def test_sb3_handed_a_text_env_names_discrete_actions_and_text_features():
    sb3_contrib = pytest.importorskip("sb3_contrib")
    with pytest.raises(TypeError, match=r"discrete_actions=N .* text_features=D"):
        sb3_contrib.MaskablePPO("MlpPolicy", gym.make("turnbudget/Maze-Easy-v0"))
