"""``spec.max_episode_steps`` says the turn budget, for the Gymnasium wrappers that read it,
and brings back no second limit (issue 25)."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.wrappers import TimeAwareObservation, TimeLimit

import turnbudget  # noqa: F401  (registers the ids)

MAZE = "turnbudget/Maze-Easy-v0"


def _limits(env: gym.Env) -> list[str]:
    names = []
    while isinstance(env, gym.Wrapper):
        if isinstance(env, TimeLimit) or type(env).__name__ == "TurnBudget":
            names.append(type(env).__name__)
        env = env.env
    return names


def test_spec_max_episode_steps_is_the_turn_budget():
    assert gym.make(MAZE).spec.max_episode_steps == 30  # the id's default budget
    env = gym.make(MAZE, turn_budget=7, reveal="always")
    assert env.spec.max_episode_steps == 7
    assert gym.make(MAZE, max_episode_steps=5).spec.max_episode_steps == 5
    assert gym.make(MAZE, budget_mix=[5, 9]).spec.max_episode_steps is None  # it varies
    again = gym.make(env.spec)  # Gymnasium adds a TimeLimit from the spec: it is taken over
    assert _limits(again) == ["TurnBudget"] and again.spec.max_episode_steps == 7
    assert again.reset(seed=0)[1]["turn_budget"] == 7


def test_time_aware_observation_on_a_budgeted_env():
    env = TimeAwareObservation(gym.make(MAZE, turn_budget=7, text_features=64), flatten=False)
    obs, _ = env.reset(seed=0)
    assert obs["time"] == 0 and obs["obs"].shape == (64,)
    for turn in range(1, 8):
        obs, _, terminated, truncated, info = env.step("look")
        assert obs["time"] == turn
    assert truncated and not terminated and info["turns_left"] == 0
    normalized = TimeAwareObservation(gym.make(MAZE, turn_budget=4), normalize_time=True)
    assert normalized.max_timesteps == 4


def test_set_turn_budget_changes_the_whole_stack_and_its_spec():
    """`TurnBudget.set_default_turn_budget` reached through the stack changed the budget
    played but not the stack's spec: it still said 30, and ``gym.make(env.spec)`` rebuilt a
    30-turn env."""
    from turnbudget.wrappers import set_turn_budget

    for kwargs in ({}, {"errors": 0.2}, {"reveal": "always", "record": True}):
        env = set_turn_budget(gym.make("turnbudget/Maze-Easy-v0", **kwargs), 11)
        assert env.reset(seed=0)[1]["turn_budget"] == 11
        assert env.spec.max_episode_steps == env.spec.kwargs["turn_budget"] == 11
        assert gym.make(env.spec).reset(seed=0)[1]["turn_budget"] == 11
        again = gym.make(env.spec, turn_budget=20)
        assert again.reset(seed=0)[1]["turn_budget"] == again.spec.max_episode_steps == 20
    with pytest.raises(ValueError, match="budget_mix draws each episode's budget"):
        set_turn_budget(gym.make("turnbudget/Maze-Easy-v0", budget_mix="uniform:5-9"), 4)
    with pytest.raises(ValueError, match="Expect an env with a TurnBudget"):
        set_turn_budget(gym.make("turnbudget/Maze-Easy-v0").unwrapped, 4)
