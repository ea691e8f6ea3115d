"""The stack as a table (`LAYERS`): read and checked once per build, built in one pass."""

from __future__ import annotations

import gc

import gymnasium as gym
import pytest
from _wrapper_stub import LineWorld
from gymnasium.envs.registration import WrapperSpec
from gymnasium.wrappers import TimeLimit

import turnbudget
from turnbudget import registration
from turnbudget.wrappers.stack import (
    LAYERS,
    STACK_ENTRY_POINT,
    STACK_OPTIONS,
    STACK_ORDER,
    absorb_time_limit,
    plan_stack,
)

MAZE = "turnbudget/Maze-Easy-v0"


def chain(env: gym.Env) -> list[str]:
    names = []
    while isinstance(env, gym.Wrapper):
        names.append(type(env).__name__)
        env = env.env
    return names


def test_the_order_and_the_options_come_from_the_table():
    assert ("TurnBudget", *(layer.name for layer in LAYERS)) == STACK_ORDER
    assert set(STACK_OPTIONS) == {keyword for layer in LAYERS for keyword in layer.keywords}
    assert STACK_OPTIONS == ("budget_mix", "errors", "record", "process_reward", "reveal",
                             "discrete_actions", "text_features", "info", "env_index")  # fmt: skip
    plan = plan_stack(budget_mix=[4], errors=0.1, record=True, process_reward=True,
                      reveal="always", discrete_actions=4, text_features=8)  # fmt: skip
    assert [layer.name for layer, _ in plan.layers] == list(STACK_ORDER[1:])


def test_plan_stack_refuses_an_unknown_option():
    with pytest.raises(TypeError, match="unexpected keyword argument 'reveals'"):
        plan_stack(reveals="always")


class CountingMix:
    """A BudgetMix callable that counts its calls (each reading of the options test-draws it)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, rng) -> int:
        self.calls += 1
        return 6


@pytest.mark.parametrize(
    "door",
    [
        lambda mix: turnbudget.make(MAZE, budget_mix=mix, reveal="always", record=True),
        lambda mix: gym.make(MAZE, budget_mix=mix, reveal="always", record=True),
        lambda mix: turnbudget.make(gym.make(MAZE), budget_mix=mix, reveal="always"),
        lambda mix: gym.make_vec(MAZE, num_envs=1, budget_mix=mix, text_features=8),
    ],
    ids=["turnbudget.make", "gym.make", "make(env)", "gym.make_vec"],
)
def test_every_door_reads_the_options_once(door):
    mix = CountingMix()
    env = door(mix)
    assert mix.calls == 1  # one test draw: the options were read and checked once
    env.reset(seed=0)
    assert mix.calls == 2  # and one draw per episode
    env.close()


def test_the_checked_plan_is_handed_over_and_nothing_stays_behind():
    env = gym.make(MAZE, reveal="always")
    assert len(registration._PLANS) == 0  # budget_stack took it
    gc.collect()
    with pytest.raises(ValueError, match="max_episode_steps"):
        gym.make(MAZE, budget_mix=[3], max_episode_steps=4)  # refused after the game was built
    gc.collect()
    assert len(registration._PLANS) == 0  # the refused game's plan went with it
    assert chain(env)[0] == "RevealBudget"


def test_absorbing_a_time_limit_keeps_the_wrappers_under_it():
    """It drops the TimeLimit only (it used to return the TurnBudget, dropping what was on it)."""
    stack = turnbudget.make(MAZE, reveal="always", record=True)
    env = absorb_time_limit(TimeLimit(stack, 5))
    assert env is stack and chain(env)[:3] == ["RevealBudget", "RecordStepOutcomes", "TurnBudget"]
    obs, info = env.reset(seed=0)
    assert info["turn_budget"] == 5 and obs.endswith("[5 turns left]")
    made = turnbudget.make(TimeLimit(turnbudget.make(MAZE, reveal="always"), 4), errors=0.1)
    assert chain(made)[:3] == ["InjectErrors", "RevealBudget", "TurnBudget"]


def test_the_registered_wrapper_plans_itself_under_another_entry_point():
    """An id of one's own with the stack's registered wrapper: nothing was planned for its
    game, so `budget_stack` reads the options from the spec itself."""
    env_id = "turnbudget-test/OwnEntryPoint-v0"
    gym.register(
        env_id, entry_point=lambda **options: LineWorld(), kwargs={"turn_budget": 5},
        disable_env_checker=True,
        additional_wrappers=(WrapperSpec("TurnBudgetStack", STACK_ENTRY_POINT, {}),),
    )  # fmt: skip
    try:
        env = gym.make(env_id, reveal="always", record=True)
    finally:
        del gym.registry[env_id]
    assert chain(env)[:3] == ["RevealBudget", "RecordStepOutcomes", "TurnBudget"]
    obs, info = env.reset(seed=0)
    assert info["turn_budget"] == 5 and obs.endswith("[5 turns left]")
