"""A reset refused for a bad option: the next step is a clear ResetNeeded, and the env still works."""

from __future__ import annotations

import gymnasium as gym
import pytest

import turnbudget


@pytest.mark.parametrize("bad", [-1, 0, "x", 2.5])
def test_a_refused_first_reset_leaves_a_usable_env(bad):
    env = gym.make("turnbudget/Maze-Easy-v0")
    with pytest.raises(ValueError, match="turn_budget"):
        env.reset(seed=0, options={"turn_budget": bad})
    with pytest.raises(gym.error.ResetNeeded, match="refused"):
        env.step("look")
    _, info = env.reset(seed=0)
    _, _, _, _, info = env.step("look")  # Gymnasium's checker used to raise TypeError here
    assert info["turns_used"] == 1


def test_a_refused_reset_mid_run_needs_a_new_reset():
    env = turnbudget.make("turnbudget/KeyQuest-Easy-v0", record=True, errors=0.2)
    env.reset(seed=0)
    env.step("look")
    with pytest.raises(ValueError, match="turn_budget"):
        env.reset(seed=1, options={"turn_budget": -5})
    with pytest.raises(gym.error.ResetNeeded, match="refused"):
        env.step("look")
    env.reset(seed=1, options={"turn_budget": 5})
    _, _, _, _, info = env.step("look")
    assert info["turns_used"] == 1 and info["turn_budget"] == 5


def test_the_checker_still_checks_and_the_spec_remakes_the_same_stack():
    env = gym.make("turnbudget/Maze-Easy-v0")
    assert "PassiveEnvChecker" in str(env)
    again = gym.make(env.spec)
    assert str(again).count("PassiveEnvChecker") == 1
    again.reset(seed=0)
    again.step("look")
