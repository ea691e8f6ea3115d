"""A step before the first reset is Gymnasium's ``ResetNeeded`` in every stack, never a crash
inside the game from a wrapper that asked it something first (`RecordStepOutcomes` records
nothing before a reset, and `ProcessReward` asks after the env's step: only `InjectErrors`
asked the game first)."""

from __future__ import annotations

import gymnasium as gym
import pytest
from _support import native_env_ids
from _wrapper_stub import LineWorld

import turnbudget
from turnbudget.wrappers import InjectErrors, TurnBudget

STACKS = {
    "slip": {"errors": {"rate": 1.0, "kinds": ["slip"]}},
    "transient": {"errors": {"rate": 1.0, "kinds": ["transient"]}},
    "setback": {"errors": {"rate": 1.0, "kinds": ["setback"]}},
    "full": {
        "budget_mix": [5, 9], "errors": 1.0, "record": True, "process_reward": True,
        "reveal": "always", "discrete_actions": 16,
    },
}  # fmt: skip


@pytest.mark.parametrize("stack", list(STACKS))
@pytest.mark.parametrize("env_id", native_env_ids())
def test_a_step_before_reset_is_reset_needed(env_id, stack):
    env = turnbudget.make(env_id, **STACKS[stack])
    action = 0 if "discrete_actions" in STACKS[stack] else "look"
    with pytest.raises(gym.error.ResetNeeded, match="reset"):
        env.step(action)
    _, info = env.reset(seed=0)  # and the env still works
    _, _, _, _, info = env.step(action)
    assert info["turns_used"] == 1


@pytest.mark.parametrize("kind", ["slip", "transient", "setback"])
def test_inject_errors_checks_before_asking_the_game_anything(kind):
    """Without gym.make's order checks, on the bare game: nothing is asked of the oracle or
    done to the game before the first reset, and the message is Gymnasium's."""
    asked = []

    class Watched(LineWorld):
        def distance_to_goal(self):
            asked.append("distance_to_goal")
            return super().distance_to_goal()

    env = InjectErrors(TurnBudget(Watched(), 5), rate=1.0, kinds=[kind])
    with pytest.raises(gym.error.ResetNeeded, match=r"Cannot call env.step\(\) before"):
        env.step("forward")
    assert asked == []
    env.reset(seed=0)
    env.step("forward")
    assert asked


def test_a_refused_reset_stops_errors_before_they_touch_the_game():
    env = InjectErrors(TurnBudget(LineWorld(length=20), 9), rate=1.0, kinds=["setback"])
    env.reset(seed=0)
    env.step("forward")
    game = env.unwrapped
    where = game.pos
    with pytest.raises(ValueError, match="repeat"):
        env.reset(seed=1, options={"repeat": -1})
    with pytest.raises(gym.error.ResetNeeded, match="refused"):
        env.step("forward")
    assert game.pos == where  # no setback (or anything else) was played
