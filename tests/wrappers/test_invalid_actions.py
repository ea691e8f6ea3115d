"""A non-string action is a TypeError that leaves every wrapper and the game as they were."""

from __future__ import annotations

import pickle

import gymnasium as gym
import pytest

import turnbudget
from turnbudget.wrappers import InjectErrors, RecordStepOutcomes, TurnBudget
from turnbudget.wrappers._common import find_wrapper

BAD_ACTIONS = [None, 3, 2.5, b"look", ["look"], {"cmd": "look"}]
IDS = ["turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0"]


def _stack(env_id: str, kind: str) -> gym.Env:
    return turnbudget.make(
        env_id,
        budget_mix=[12],
        errors={"schedule": {1: kind, 2: kind, 3: kind}},
        record=True,
        process_reward=True,
        reveal="always",
    )


def _play(env: gym.Env, actions: list[str]) -> list:
    return [env.step(a) for a in actions]


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("kind", ["slip", "setback", "transient"])
@pytest.mark.parametrize("bad", BAD_ACTIONS, ids=repr)
def test_non_string_actions_change_nothing_through_the_full_stack(env_id, kind, bad):
    env, twin = _stack(env_id, kind), _stack(env_id, kind)
    env.reset(seed=3)
    twin.reset(seed=3)
    game = pickle.dumps(env.unwrapped)
    injector = find_wrapper(env, InjectErrors)
    with pytest.raises(TypeError, match="str"):
        env.step(bad)
    assert injector._turn == 0  # the schedule did not move
    assert find_wrapper(env, TurnBudget).turns_used == 0
    assert find_wrapper(env, RecordStepOutcomes)._tracker._turn == 0
    assert pickle.dumps(env.unwrapped) == game  # no slip or setback reached the game
    actions = ["look", "go north", "look"]
    played, expected = _play(env, actions), _play(twin, actions)
    assert [r[-1].get("injected_error") for r in played] == [
        r[-1].get("injected_error") for r in expected
    ]
    assert [r[0] for r in played] == [r[0] for r in expected]
    assert played[0][-1]["injected_error"]["turn"] == 1
    assert played[-1][-1]["turns_used"] == 3


def test_the_gymnasium_make_path_checks_too():
    env = InjectErrors(gym.make("turnbudget/Maze-Easy-v0"), schedule={1: "transient"})
    env.reset(seed=0)
    with pytest.raises(TypeError):
        env.step(None)
    _, _, _, _, info = env.step("look")
    assert info["injected_error"]["turn"] == 1 and info["turns_used"] == 1
