"""ProcessReward: potential-based shaping, its telescoping guarantee, construction errors."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest
from _wrapper_stub import STUB_ID
from hypothesis import given, settings
from hypothesis import strategies as st

from turnbudget._checks import MAX_TURN_BUDGET
from turnbudget.wrappers import InjectErrors, ProcessReward
from turnbudget.wrappers.process_reward import MAX_SCALE


def stub(**kwargs) -> gym.Env:
    return gym.make(STUB_ID, **{"length": 6, "turn_budget": 30, **kwargs})


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 1000),
    gamma=st.floats(0.5, 1.0),
    actions=st.lists(
        st.sampled_from(["forward", "back", "wait", "jump", "??"]), min_size=1, max_size=30
    ),
)
def test_shaping_is_potential_based(seed, gamma, actions):
    env = ProcessReward(InjectErrors(stub(), rate=0.2), gamma=gamma, scale=0.5)
    env.reset(seed=seed)
    phi = -0.5 * env.unwrapped.distance_to_goal()
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        shaped = info["process_reward"]
        distance = env.unwrapped.distance_to_goal()
        next_phi = 0.0 if terminated else -0.5 * (100.0 if distance is None else distance)
        assert shaped["potential"] == pytest.approx(next_phi)
        assert shaped["shaping"] == pytest.approx(gamma * next_phi - phi)
        assert reward == pytest.approx(shaped["env_reward"] + shaped["shaping"])
        phi = next_phi
        if terminated or truncated:
            break


def test_undiscounted_shaping_telescopes_so_every_winning_path_gets_the_same_bonus():
    totals = []
    for actions in (
        ["forward"] * 10,
        ["back", "wait", "forward", "forward", "back"] + ["forward"] * 10,
    ):
        env = ProcessReward(stub(), gamma=1.0, scale=1.0)
        env.reset(seed=0)
        start = env.unwrapped.distance_to_goal()
        total = 0.0
        for action in actions:
            _, reward, terminated, _, info = env.step(action)
            total += info["process_reward"]["shaping"]
            if terminated:
                break
        totals.append((total, start))
    assert totals[0] == totals[1] and totals[0][0] == pytest.approx(totals[0][1])  # -Phi(s0)


def test_progress_potential_needs_no_oracle():
    env = ProcessReward(stub(oracle=False), potential="progress", gamma=1.0, scale=1.0)
    env.reset(seed=0)
    _, reward, *_ = env.step("forward")
    assert reward == pytest.approx(1 / 6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"gamma": 0.0}, r"`gamma` to be a number in \(0.0, 1.0\]"),
        ({"gamma": 1.1}, "gamma"),
        ({"potential": "reward"}, "potential"),
        ({"scale": 0}, "scale"),
        ({"scale": float("inf")}, "scale"),
        ({"unsolvable_distance": -1}, "unsolvable_distance"),
    ],
)
def test_bad_configuration_raises_at_construction(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ProcessReward(stub(), **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scale": 1e308}, r"`scale` to be at most 1,000,000, got 1e\+308"),
        ({"unsolvable_distance": 1e308}, r"`unsolvable_distance` to be at most 2,147,483,647"),
    ],
)
def test_a_finite_setting_whose_potential_overflows_is_refused(kwargs, message):
    """``scale=1e308`` passed as finite, then Φ = -scale * distance was -inf and every shaped
    reward NaN; the largest settings allowed keep every reward finite."""
    with pytest.raises(ValueError, match=message):
        ProcessReward(stub(), **kwargs)
    env = ProcessReward(stub(), scale=MAX_SCALE, unsolvable_distance=MAX_TURN_BUDGET)
    env.reset(seed=0)
    for action in ("forward", "back", "wait"):
        _, reward, *_ = env.step(action)
        assert math.isfinite(reward)


def test_distance_potential_needs_the_oracle():
    with pytest.raises(TypeError, match="distance_to_goal"):
        ProcessReward(stub(oracle=False))


@pytest.mark.parametrize("at_truncation", ["keep", "zero"])
def test_potential_at_truncation(at_truncation):
    """ "zero": the shaped return of a cut episode telescopes to -phi(s0) (gamma = 1), so the
    budget-capped return ranks policies as before; "keep": it keeps phi(s_T)."""
    env = ProcessReward(
        stub(turn_budget=3), gamma=1.0, scale=0.5, potential_at_truncation=at_truncation
    )
    env.reset(seed=0)
    phi0 = -0.5 * env.unwrapped.distance_to_goal()
    total = 0.0
    for _ in range(3):
        _, reward, terminated, truncated, info = env.step("wait")
        total += reward - info["process_reward"]["env_reward"]
    assert truncated and not terminated
    phi_t = -0.5 * env.unwrapped.distance_to_goal()
    assert info["process_reward"]["potential"] == (0.0 if at_truncation == "zero" else phi_t)
    assert total == pytest.approx((0.0 if at_truncation == "zero" else phi_t) - phi0)


def test_potential_at_truncation_is_checked():
    with pytest.raises(ValueError, match="potential_at_truncation"):
        ProcessReward(stub(), potential_at_truncation="drop")


class _Progress(gym.Wrapper):
    """A game whose info['progress'] is ``value``."""

    def __init__(self, env, value):
        super().__init__(env)
        self.value = value

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return obs, {**info, "progress": self.value}

    def step(self, action):
        *rest, info = self.env.step(action)
        return (*rest, {**info, "progress": self.value})


@pytest.mark.parametrize("progress", [float("nan"), float("inf"), "0.5", None])
def test_a_progress_that_is_no_number_is_a_value_error(progress):
    """A NaN progress made every shaped reward NaN, and "0.5" was taken as 0.5."""
    env = ProcessReward(_Progress(stub(), progress), potential="progress")
    with pytest.raises(ValueError, match=r"Expect info\['progress'\] of \w+ to be a finite number"):
        env.reset(seed=0)


def test_progress_potential_reads_the_progress_numeric_info_made_an_array():
    import turnbudget

    """Over NumericInfo (text_features' default info) the first reset failed, blaming the
    game for its finite progress, now a 0-d float32 array."""
    import gymnasium as gym

    game = gym.make("turnbudget/KeyQuest-Easy-v0", text_features=32)
    env = turnbudget.make(game, process_reward={"potential": "progress", "scale": 2.0})
    _, info = env.reset(seed=0)
    plan = env.unwrapped.optimal_actions()
    while True:  # (the oracle's plan: progress rises, and the shaping with it)
        _, reward, terminated, truncated, info = env.step(plan[0])
        if info["process_reward"]["shaping"] or terminated or truncated:
            break
        plan = env.unwrapped.optimal_actions()
    assert info["process_reward"]["potential"] == 2.0 * float(info["progress"]) > 0
