"""The evaluation's env stack and the probes' copies carry no call-check layers (issue 26):
each is one more call per step, and every fresh copy of the passive checker checks its
first step again. Records stay what they were (the main job's logs compare byte for byte)."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker

import turnbudget
from turnbudget.agents import RandomAgent
from turnbudget.envs.native.maze import Maze
from turnbudget.eval.probes.plan import TaskStarts
from turnbudget.eval.run.episodes import build_env
from turnbudget.eval.run.plan import make_config
from turnbudget.wrappers.stack import drop_checks
from turnbudget.wrappers.turn_budget import TurnBudget

MAZE = "turnbudget/Maze-Easy-v0"


def layers(env: gym.Env) -> list[type]:
    found = [type(env)]
    while isinstance(env, gym.Wrapper):
        env = env.env
        found.append(type(env))
    return found


def test_the_evaluation_stack_has_no_check_layers():
    config = make_config(
        [MAZE], RandomAgent(), ks=[1], ts=[8], n=1, tasks=1, mode="truncate", reveal=None,
        errors=0.1, seed=0, label=None, record_steps=True,
    )  # fmt: skip
    env = build_env(MAZE, config, lambda record: None)
    assert not any(issubclass(t, (OrderEnforcing, PassiveEnvChecker)) for t in layers(env))
    assert [t.__name__ for t in layers(env)] == [
        "RecordStepOutcomes", "InjectErrors", "TurnBudget", "Maze"
    ]  # fmt: skip


def test_drop_checks_keeps_every_other_layer_and_the_episode():
    checked = turnbudget.make(MAZE, errors=0.2, record=True)
    bare = drop_checks(turnbudget.make(MAZE, errors=0.2, record=True))
    kept = [t for t in layers(checked) if not issubclass(t, (OrderEnforcing, PassiveEnvChecker))]
    assert kept == layers(bare)
    for env in (checked, bare):
        env.reset(seed=3, options={"turn_budget": 12})
        for _ in range(12):
            if env.step("look")[2]:
                break
    assert checked.records == bare.records


def test_drop_checks_on_a_check_layer_outermost():
    env = OrderEnforcing(PassiveEnvChecker(gym.make(MAZE).unwrapped))
    assert type(drop_checks(env)) is Maze


@pytest.mark.parametrize("task_seed", [0, 5])
def test_probe_copies_copy_the_game_not_the_stack(task_seed):
    starts = TaskStarts()
    try:
        env, _, info = starts.fresh(MAZE, task_seed, budget=7)
        assert layers(env) == [TurnBudget, Maze]  # a new budget on a copy of the game
        assert info["turn_budget"] == env.turn_budget == 7 and env.turns_used == 0
        again, _, _ = starts.fresh(MAZE, task_seed, budget=3)
        assert again.unwrapped is not env.unwrapped  # each probe plays on its own copy
        env.step("look")
        assert again.turns_used == 0
        # The copy plays as the task's own fresh reset would.
        fresh = gym.make(MAZE)
        fresh.reset(seed=task_seed, options={"turn_budget": 3})
        action = again.unwrapped.optimal_actions()[0]
        assert again.step(action)[:4] == fresh.step(action)[:4]
    finally:
        starts.close()
