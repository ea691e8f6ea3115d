"""Every reader of a game's ``distance_to_goal()`` takes its answer through one check
(`turnbudget.envs.core.check_distance`): an int >= 0, or None where no win is reachable."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest
from _wrapper_stub import STUB_ID

from turnbudget.wrappers import InjectErrors, ProcessReward, RecordStepOutcomes

READERS = {
    "RecordStepOutcomes": RecordStepOutcomes,
    "ProcessReward": ProcessReward,
    "InjectErrors-slip": lambda env: InjectErrors(env, rate=1.0, kinds=["slip"]),
    "InjectErrors-setback": lambda env: InjectErrors(env, rate=1.0, kinds=["setback"]),
    "InjectErrors-transient": lambda env: InjectErrors(env, rate=1.0, kinds=["transient"]),
}
NO_COUNTS = [float("inf"), float("nan"), -1, "3", 2.5]


def _stub() -> gym.Env:
    return gym.make(STUB_ID, length=50, turn_budget=40, trap=False)


@pytest.mark.parametrize("distance", NO_COUNTS)
@pytest.mark.parametrize("reader", sorted(READERS))
def test_an_oracle_distance_that_is_no_count_is_a_value_error_naming_the_game(reader, distance):
    """A custom game answering inf for "no win" (the documented answer is None) was int()'s
    OverflowError (the recorder, the injector) or a reward of -inf then NaN (ProcessReward),
    a NaN a ValueError naming nothing or a NaN reward, and "3" was taken as 3."""
    env = READERS[reader](_stub())
    game = env.unwrapped
    env.reset(seed=0)
    game.distance_to_goal = lambda: distance
    with pytest.raises(ValueError, match=r"Expect \w+\.distance_to_goal\(\) to return an int >= 0"):
        env.step("forward")
    if reader in ("RecordStepOutcomes", "ProcessReward"):  # (the injector reads it in a step)
        with pytest.raises(ValueError, match=r"distance_to_goal\(\) to return an int >= 0"):
            env.reset(seed=0)
    game.distance_to_goal = lambda: 4.0  # a whole float is a count: taken as 4
    env.reset(seed=0)
    _, reward, _, _, info = env.step("forward")
    assert math.isfinite(reward) and "valid_action" in info
