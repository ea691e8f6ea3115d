"""SampleTurnBudget / BudgetMix: distributions, seeding, explicit budgets, vector envs."""

from __future__ import annotations

import math
import re

import gymnasium as gym
import numpy as np
import pytest
from _wrapper_stub import STUB_ID, LineWorld

import turnbudget
from turnbudget.wrappers import BudgetMix, SampleTurnBudget, TurnBudget


def budgets(env: gym.Env, n: int, seed: int = 0) -> list[int]:
    out = [env.reset(seed=seed)[1]["turn_budget"]]
    out += [env.reset()[1]["turn_budget"] for _ in range(n - 1)]
    return out


def test_choice_respects_values_and_weights():
    mix = BudgetMix.choice([5, 10, 40], weights=[0, 3, 1])
    rng = np.random.default_rng(0)
    draws = [mix.sample(rng) for _ in range(4000)]
    assert set(draws) == {10, 40}
    assert abs(draws.count(10) / len(draws) - 0.75) < 0.03


def test_uniform_covers_the_closed_range():
    rng = np.random.default_rng(1)
    draws = {BudgetMix.uniform(3, 7).sample(rng) for _ in range(500)}
    assert draws == {3, 4, 5, 6, 7}


def test_log_uniform_favours_small_budgets_within_range():
    rng = np.random.default_rng(2)
    draws = np.array([BudgetMix.log_uniform(4, 128).sample(rng) for _ in range(5000)])
    assert draws.min() == 4 and draws.max() == 128
    # P(T < 16) = log(16/4) / log(129/4) ~ 0.40 under the discretized log-uniform
    assert abs((draws < 16).mean() - math.log(4) / math.log(129 / 4)) < 0.03


def test_callable_and_parse_and_coerce():
    assert BudgetMix.from_callable(lambda rng: 7).sample(np.random.default_rng()) == 7
    assert BudgetMix.parse("10, 20") == BudgetMix.choice([10, 20])
    assert BudgetMix.parse("uniform:5-9") == BudgetMix.uniform(5, 9)
    assert BudgetMix.parse("loguniform:5-80") == BudgetMix.log_uniform(5, 80)
    assert BudgetMix.parse(" Choice : 10 , 20 ") == BudgetMix.choice([10, 20])
    assert BudgetMix.parse("uniform: 5 - 9") == BudgetMix.uniform(5, 9)
    with pytest.raises(ValueError, match="budget mix string"):
        BudgetMix.parse(10)  # type: ignore[arg-type]
    assert BudgetMix.coerce({8: 1.0, 16: 3.0}) == BudgetMix.choice([8, 16], [1, 3])
    assert BudgetMix.coerce((8, 16)) == BudgetMix.choice([8, 16])


@pytest.mark.parametrize(
    ("mix", "message"),
    [
        ([], "non-empty"),
        ([5, 0], "positive int"),
        ([5, -1], "got -1"),
        ([5, 2.5], "positive int"),
        ({5: -1.0}, "weight"),
        ({5: 0.0}, "positive sum"),
        ({5: float("nan")}, "weight"),
        ("uniform:9-3", "high"),
        ("uniform:0-3", "positive int"),
        ("triangular:1-3", "Cannot parse"),
        ("ten,twenty", "Cannot parse"),
        ("10 20", "Cannot parse"),  # (not 1020: spaces inside a number are not dropped)
        ("uniform:5 0-90", "Cannot parse"),
        ("10,,20", "Cannot parse"),
        ("10,20,", "Cannot parse"),
        ("uniform:5", "Cannot parse"),
        ("1_000", "Cannot parse"),  # (int() would take it)
        ("\u0663,5", "Cannot parse"),  # (an Arabic-Indic 3: int() would take it too)
        ("9" * 5000, "Cannot parse"),
        (3.5, "Expect `budget_mix`"),
        # (checked one by one, these ran for ever and filled the memory: refused at once)
        (range(1, 10**12), "at most 1,000,000 budgets"),
        (range(0, 10**20), "at most 1,000,000 budgets"),  # (len() overflows)
    ],
)
def test_bad_mix_raises_at_construction(mix, message):
    with pytest.raises(ValueError, match=message):
        SampleTurnBudget(gym.make(STUB_ID), budget_mix=mix)


@pytest.mark.parametrize(
    "mix, part",
    [
        ("uniform:40-12", "`high` >= `low`, got low=40, high=12"),
        ("choice:5,-1", "`values\\[i\\]` to be a positive int, got -1"),
        ({5: -1}, "every weight to be a finite number >= 0, got -1"),
    ],
    ids=repr,
)
def test_a_bad_mix_names_budget_mix_and_the_mix_got(mix, part):
    """ "uniform:40-12" was 'Expect `high` >= `low`...' and "choice:5,-1" 'Expect `values[i]`
    ...': names of BudgetMix's parts, not of the argument the caller passed."""
    got = re.escape(repr(mix))
    for make in (
        lambda: turnbudget.make("turnbudget/Maze-Easy-v0", budget_mix=mix),
        lambda: gym.make("turnbudget/Maze-Easy-v0", budget_mix=mix),
        lambda: SampleTurnBudget(gym.make(STUB_ID), budget_mix=mix),
    ):
        with pytest.raises(ValueError, match=rf"Expect a valid `budget_mix`, got {got}: .*{part}"):
            make()


def test_callable_returning_a_bad_budget_raises_a_clear_error():
    with pytest.raises(ValueError, match="positive int, got 0"):  # its test draw, at construction
        SampleTurnBudget(gym.make(STUB_ID), budget_mix=lambda rng: 0)
    draws = iter([5, 0])  # good on the test draw, bad on the first episode's
    env = SampleTurnBudget(gym.make(STUB_ID), budget_mix=lambda rng: next(draws))
    with pytest.raises(ValueError, match="positive int, got 0"):
        env.reset(seed=0)


def test_needs_a_turn_budget_inside_and_only_once():
    with pytest.raises(ValueError, match="needs a TurnBudget"):
        SampleTurnBudget(LineWorld(), budget_mix=[3])
    with pytest.raises(ValueError, match="already in this stack"):
        SampleTurnBudget(SampleTurnBudget(gym.make(STUB_ID), [3]), [4])


def test_draws_are_reproducible_by_seed_and_reach_the_budget():
    mix = BudgetMix.uniform(2, 50)
    a = budgets(SampleTurnBudget(gym.make(STUB_ID), mix), 20, seed=7)
    b = budgets(SampleTurnBudget(gym.make(STUB_ID), mix), 20, seed=7)
    c = budgets(SampleTurnBudget(gym.make(STUB_ID), mix), 20, seed=8)
    assert a == b != c
    assert len(set(a)) > 5


def test_drawn_budget_is_enforced_and_reported():
    env = SampleTurnBudget(gym.make(STUB_ID, length=1000), budget_mix=[3, 5])
    for seed in range(6):
        _, info = env.reset(seed=seed)
        budget = info["turn_budget"]
        assert info["sampled_turn_budget"] == budget in (3, 5)
        for turn in range(1, budget + 1):
            _, _, terminated, truncated, info = env.step("wait")
            assert truncated == (turn == budget) and not terminated
        assert info["turns_used"] == budget


def test_explicit_budget_wins_and_keeps_the_stream_aligned():
    env = SampleTurnBudget(gym.make(STUB_ID), budget_mix=BudgetMix.uniform(2, 60))
    plain = budgets(env, 5, seed=3)
    env.reset(seed=3)
    _, info = env.reset(options={"turn_budget": 99})
    assert (info["turn_budget"], info["sampled_turn_budget"]) == (99, None)
    assert [env.reset()[1]["turn_budget"] for _ in range(3)] == plain[2:]


def test_per_sub_env_in_sync_vector_env_with_autoreset():
    fns = [lambda: SampleTurnBudget(gym.make(STUB_ID, length=1000), budget_mix="uniform:1-3")] * 3
    venv = gym.vector.SyncVectorEnv(fns)
    _, info = venv.reset(seed=10)
    first = info["turn_budget"].tolist()
    seen = [first]
    for _ in range(12):
        _, _, _, _, info = venv.step(["wait"] * 3)
        seen.append(info["turn_budget"].tolist())
    venv.close()
    assert all(1 <= t <= 3 for row in seen for t in row)
    assert len({tuple(row) for row in seen}) > 1  # autoreset drew new budgets
    single = [
        SampleTurnBudget(gym.make(STUB_ID, length=1000), "uniform:1-3").reset(seed=10 + i)[1][
            "turn_budget"
        ]
        for i in range(3)
    ]
    assert first == single  # sub-env i is seeded with seed + i, as gymnasium does


def make_sampled():
    return SampleTurnBudget(gym.make(STUB_ID, length=1000), budget_mix=[2, 3, 5, 7, 11])


def test_async_vector_env_matches_sync():
    def trace(venv):
        _, info = venv.reset(seed=4)
        rows = [info["turn_budget"].tolist()]
        for _ in range(15):
            _, _, _, _, info = venv.step(["wait"] * 2)
            rows.append(info["turn_budget"].tolist())
        venv.close()
        return rows

    sync = trace(gym.vector.SyncVectorEnv([make_sampled] * 2))
    asyn = trace(gym.vector.AsyncVectorEnv([make_sampled] * 2, shared_memory=False))
    assert sync == asyn


def test_vector_reset_options_override_every_sub_env():
    venv = gym.vector.SyncVectorEnv([make_sampled] * 2)
    _, info = venv.reset(seed=0, options={"turn_budget": 13})
    assert info["turn_budget"].tolist() == [13, 13]
    venv.close()


def test_turn_budget_found_under_gym_make_wrappers():
    env = gym.make(STUB_ID)
    assert not isinstance(env, TurnBudget)
    SampleTurnBudget(env, [4])  # no error: the TurnBudget sits under OrderEnforcing
