"""Configuration mistakes are one clear ValueError at construction, before any episode runs."""

from __future__ import annotations

import re

import gymnasium as gym
import pytest

import turnbudget
from turnbudget.wrappers import BudgetMix, RecordStepOutcomes, TextFeatures
from turnbudget.wrappers.text_features import MAX_DIM, MAX_NGRAMS

MAZE = "turnbudget/Maze-Easy-v0"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"text_features": 10**12}, f"at most {MAX_DIM}"),
        ({"text_features": {"block_dim": MAX_DIM + 1}}, "at most"),
        ({"text_features": {"ngrams": MAX_NGRAMS + 1}}, "at most"),
        ({"budget_mix": lambda: 5}, "one argument"),
        ({"budget_mix": lambda rng, extra: 5}, "one argument"),
        ({"budget_mix": lambda rng: 0}, "positive int"),
        ({"budget_mix": lambda rng: "ten"}, "positive int"),
        ({"budget_mix": lambda rng: 1 / 0}, "test draw"),
        ({"env_index": -1}, "env_index"),
        ({"env_index": "0"}, "env_index"),
        ({"env_index": True}, "env_index"),
    ],
)
def test_bad_settings_raise_a_clear_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        turnbudget.make(MAZE, **kwargs)


@pytest.mark.parametrize("size", [2 * MAX_DIM + 2, 10**400], ids=["past", "10**400"])
def test_a_size_past_its_limit_is_refused_naming_size(size):
    """The message named `block_dim` (half the size given) where only `size` was given."""
    with pytest.raises(ValueError, match=rf"Expect `size` to be at most {2 * MAX_DIM} \(2 blocks"):
        TextFeatures(turnbudget.make(MAZE), size=size)
    assert TextFeatures(turnbudget.make(MAZE), size=2 * MAX_DIM).block_dim == MAX_DIM


def test_good_settings_at_the_bounds_build():
    env = turnbudget.make(MAZE, budget_mix=lambda rng: int(rng.integers(3, 9)), env_index=0)
    _, info = env.reset(seed=0)
    assert 3 <= info["turn_budget"] < 9
    assert TextFeatures(
        turnbudget.make(MAZE), block_dim=64, ngrams=MAX_NGRAMS
    ).observation_space.shape
    assert BudgetMix.from_callable(lambda rng: 4).sample(None) == 4


def test_record_into_a_missing_folder_is_an_error_not_a_new_folder(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        turnbudget.make(MAZE, record=tmp_path / "typo" / "records.jsonl")
    assert not (tmp_path / "typo").exists()
    with pytest.raises(ValueError, match="does not exist"):
        RecordStepOutcomes(turnbudget.make(MAZE), path=tmp_path / "typo" / "r.jsonl")


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        (dict(kind="choice", values=(5, 6), probabilities=(0.3, 0.3)), "summing to 1"),
        (dict(kind="choice", values=(5, 6), probabilities=(1.0,)), "one probability each"),
        (dict(kind="choice", values=(0,), probabilities=(1.0,)), "positive int"),
        (dict(kind="choice", values=(2**31,), probabilities=(1.0,)), "at most 2,147,483,647"),
        (dict(kind="uniform", low=5, high=2), "`high` >= `low`"),
        (dict(kind="loguniform", low=5, high=9), "Expect `kind` among"),
        (dict(kind="callable"), "callable"),
    ],
    ids=["weights", "lengths", "zero", "huge", "low-high", "kind", "no-fn"],
)
def test_a_budget_mix_built_by_hand_is_checked_when_built(fields, says):
    """Only the factories checked: weights of (0.3, 0.3) gave the last value 70%, low > high
    failed inside NumPy at the first reset, an unknown kind was a bare AssertionError."""
    with pytest.raises(ValueError, match=re.escape(says)):
        BudgetMix(**fields)


def test_a_budget_mix_built_by_hand_with_lists_is_hashable_and_draws_as_given():
    mix = BudgetMix("choice", values=[5, 6], probabilities=[0.25, 0.75])
    assert hash(mix) == hash(BudgetMix.choice([5, 6], weights=[1, 3]))
    env = gym.make("turnbudget/Maze-Easy-v0", budget_mix=mix)
    budgets = [env.reset(seed=s)[1]["turn_budget"] for s in range(400)]
    assert 0.65 < budgets.count(6) / len(budgets) < 0.85
