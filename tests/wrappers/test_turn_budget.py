"""TurnBudget against a stub env with injected step/reset, and inside vector envs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st

from turnbudget.wrappers import TurnBudget


class StubEnv(gym.Env):
    """Counts turns; ``win_at`` decides the turn on which the game is won."""

    observation_space = spaces.Text(max_length=32)
    action_space = spaces.Text(max_length=32)

    def __init__(self, win_at: Callable[[int], bool] = lambda turn: False):
        self.win_at = win_at
        self.turn = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.turn = 0
        return "start", {"admissible_actions": ["wait"]}

    def step(self, action):
        self.turn += 1
        won = self.win_at(self.turn)
        return f"turn{self.turn}", float(won), won, False, {"won": won}


def run_episode(env: gym.Env, options: dict[str, Any] | None = None, max_steps: int = 1000):
    _, info = env.reset(seed=0, options=options)
    history = []
    for _ in range(max_steps):
        _, reward, terminated, truncated, info = env.step("wait")
        history.append((terminated, truncated, info["turns_used"], info["turns_left"]))
        if terminated or truncated:
            break
    return history, info


def test_truncates_exactly_at_the_budget():
    history, info = run_episode(TurnBudget(StubEnv(), turn_budget=5))
    assert len(history) == 5
    assert [h[1] for h in history] == [False] * 4 + [True]
    assert not any(h[0] for h in history)
    assert [h[3] for h in history] == [4, 3, 2, 1, 0]
    assert info == {"won": False, "turn_budget": 5, "turns_used": 5, "turns_left": 0}


def test_win_on_the_last_budgeted_turn_is_terminated_not_truncated():
    history, info = run_episode(TurnBudget(StubEnv(win_at=lambda t: t == 5), turn_budget=5))
    assert history[-1][:2] == (True, False)
    assert info["won"] and info["turns_left"] == 0


def test_per_episode_override_then_back_to_default():
    env = TurnBudget(StubEnv(), turn_budget=5)
    history, info = run_episode(env, options={"turn_budget": 2})
    assert len(history) == 2 and info["turn_budget"] == 2
    history, info = run_episode(env)
    assert len(history) == 5 and info["turn_budget"] == 5


def test_reset_info_reports_the_budget():
    env = TurnBudget(StubEnv(), turn_budget=9)
    _, info = env.reset(options={"turn_budget": 4})
    assert (info["turn_budget"], info["turns_used"], info["turns_left"]) == (4, 0, 4)


def test_double_wrapping_is_refused():
    """Two budgets played to the tighter one while info told the agent the outer one's (turns
    left on its last turn): a TurnBudget is the stack's only turn limit."""
    with pytest.raises(ValueError, match="got one with a TurnBudget of 3 turns"):
        TurnBudget(TurnBudget(StubEnv(), turn_budget=3), turn_budget=10)


@pytest.mark.parametrize("bad", [0, -1, 2.5, "5", None, True])
def test_bad_budgets_are_rejected_clearly(bad):
    with pytest.raises(ValueError, match="Expect `turn_budget` to be a positive int"):
        TurnBudget(StubEnv(), turn_budget=bad)
    env = TurnBudget(StubEnv(), turn_budget=3)
    if bad is not None:
        with pytest.raises(ValueError, match="positive int"):
            env.reset(options={"turn_budget": bad})


@pytest.mark.parametrize("seed", [2**64, 10**5000], ids=["2**64", "10**5000"])
def test_a_seed_past_64_bits_is_refused_before_any_layer_resets(seed):
    """Any seed >= 0 was taken: a recorder then wrote a seed of 4,301 digits into its episode
    id with str(), whose ValueError ("Exceeds the limit (4300 digits) for integer string
    conversion") came after the game had reset. The team games refused it already."""
    import turnbudget
    from turnbudget._checks import MAX_SEED

    env = turnbudget.make("turnbudget/Maze-Easy-v0", errors=0.5, record=True, budget_mix=[3])
    with pytest.raises(ValueError, match=r"Expect `seed` to be at most 18,446,744,073,709,551,615"):
        env.reset(seed=seed)
    assert env.get_wrapper_attr("records") == []
    env.reset(seed=MAX_SEED)  # the largest seed plays
    env.step("look")


def test_numpy_integer_budget_is_accepted():
    assert TurnBudget(StubEnv(), turn_budget=np.int64(4)).default_turn_budget == 4


@settings(max_examples=200, deadline=None)
@given(budget=st.integers(1, 40), win_turn=st.one_of(st.none(), st.integers(1, 60)))
def test_property_never_both_flags_and_never_past_the_budget(budget, win_turn):
    env = TurnBudget(StubEnv(win_at=lambda t: t == win_turn), turn_budget=budget)
    history, _ = run_episode(env)
    assert len(history) <= budget
    assert not any(terminated and truncated for terminated, truncated, *_ in history)
    terminated, truncated = history[-1][:2]
    if win_turn is not None and win_turn <= budget:
        assert terminated and not truncated and len(history) == win_turn
    else:
        assert truncated and not terminated and len(history) == budget


@pytest.mark.parametrize("vector", ["sync", "async"])
def test_works_inside_vector_envs(vector):
    env_fns = [lambda: gym.make("turnbudget/Maze-Easy-v0", turn_budget=4)] * 2
    if vector == "sync":
        envs = gym.vector.SyncVectorEnv(env_fns)
    else:
        envs = gym.vector.AsyncVectorEnv(env_fns, shared_memory=False)
    try:
        _, infos = envs.reset(seed=[1, 2], options={"turn_budget": 3})
        assert list(infos["turn_budget"]) == [3, 3]
        observations = set()
        for turn in range(1, 4):
            obs, _, terminated, truncated, infos = envs.step(["look", "look"])
            observations.update(obs)
            assert list(infos["turns_used"]) == [turn, turn]
        assert list(truncated) == [True, True] and not terminated.any()
        # next-step autoreset: the new episode runs on the default budget
        _, _, _, _, infos = envs.step(["look", "look"])
        assert list(infos["turn_budget"]) == [4, 4]
        assert list(infos["turns_used"]) == [0, 0]
        assert len(observations) == 2  # two different mazes, fresh observations
    finally:
        envs.close()


def test_make_time_budget():
    env = gym.make("turnbudget/KeyQuest-Easy-v0", turn_budget=2)
    _, info = env.reset(seed=0)
    assert info["turn_budget"] == 2
