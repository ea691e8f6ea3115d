"""A reset refused for a bad argument, by any wrapper of the stack: the next step is a clear
ResetNeeded, nothing was drawn, and the env still works."""

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


# Every wrapper that reads a reset argument is the outermost one in one of these stacks.
STACKS = {
    "plain": {},
    "budget_mix": {"budget_mix": [6, 9, 12]},
    "errors": {"errors": 0.3},
    "record": {"record": True},
    "full": {
        "budget_mix": "uniform:5-12", "errors": {"rate": 0.3, "kinds": ["slip", "setback"]},
        "record": True, "process_reward": True, "reveal": "final=3", "discrete_actions": 8,
        "text_features": 16,
    },
}  # fmt: skip
BAD_RESETS = [
    ({"options": {"turn_budget": -1}}, "turn_budget"),
    ({"options": {"turn_budget": True}}, "turn_budget"),
    ({"options": {"repeat": -1}}, "repeat"),
    ({"options": {"repeat": 1.5}}, "repeat"),
    ({"options": "turn_budget=5"}, "options"),
    ({"options": ["repeat"]}, "options"),
    ({"seed": -1}, "seed"),
    ({"seed": "1"}, "seed"),
]


def _play(env, action, turns: int) -> list:
    """What ``turns`` steps return (observations as their repr, so arrays compare)."""
    out = []
    for _ in range(turns):
        obs, reward, terminated, truncated, info = env.step(action)
        out.append((repr(obs), reward, terminated, truncated))
    return out


@pytest.mark.parametrize("bad, name", BAD_RESETS, ids=[f"{n}-{k!r}" for k, n in BAD_RESETS])
@pytest.mark.parametrize("stack", list(STACKS))
def test_a_reset_refused_by_any_wrapper_ends_the_episode_and_draws_nothing(stack, bad, name):
    options = STACKS[stack]
    action = 0 if "discrete_actions" in options else "look"
    env = turnbudget.make("turnbudget/KeyQuest-Easy-v0", **options)
    twin = turnbudget.make("turnbudget/KeyQuest-Easy-v0", **options)
    for e in (env, twin):
        e.reset(seed=3, options={"repeat": 0})
        _play(e, action, 2)
    with pytest.raises(ValueError, match=f"Expect .*`{name}`"):
        env.reset(**{"seed": 4, **bad})
    with pytest.raises(gym.error.ResetNeeded, match="refused"):
        env.step(action)  # (the old episode used to go on here)
    # The refused reset drew nothing: a reset without a seed continues every stream as if
    # it had never been called (the budget mix, the errors, the records).
    assert repr(env.reset()) == repr(twin.reset())
    assert _play(env, action, 6) == _play(twin, action, 6)
    if "record" in options:
        assert env.get_wrapper_attr("records") == twin.get_wrapper_attr("records")
        assert env.get_wrapper_attr("n_abandoned") == 1
