"""Registry-wide contract tests for every native game id."""

from __future__ import annotations

import itertools

import gymnasium as gym
import pytest
from _support import native_env_ids

from turnbudget.utils import check_text_env

ENV_IDS = native_env_ids()
ORACLE_SEEDS = tuple(range(20))


def test_every_family_and_difficulty_is_registered():
    assert (
        sorted(
            f"turnbudget/{family}-{difficulty}-v0"
            for family in ("Crafting", "KeyQuest", "Maze", "Shop", "Sokoban")
            for difficulty in ("Easy", "Medium", "Hard")
        )
        == ENV_IDS
    )


@pytest.mark.slow  # ~45 s in all; the default suite runs every check on every id with 2 seeds
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_id_passes_the_contract_checker(env_id):
    """Gymnasium's checker (unwrapped and under TurnBudget), seeded rollouts identical in
    two processes, pickle round trip, the oracle winning every seed within half the
    default budget, Bellman-exact along random walks, setbacks that keep the task
    solvable, hostile inputs and budget flags: see `check_text_env`. With 20 seeds and
    long walks (`slow`); tests/utils/test_check_text_env.py runs the same checks on every
    id with 2 seeds and short walks in the default suite."""
    report = check_text_env(env_id, seeds=ORACLE_SEEDS, steps=150, walks=4)
    assert report.skipped == {}
    assert report.setbacks_that_cost > 0, "setbacks should usually cost the agent something"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_optimal_lengths_lie_in_the_variant_range(env_id):
    config = gym.make(env_id).unwrapped.config
    env = gym.make(env_id)
    for seed in ORACLE_SEEDS:
        env.reset(seed=seed)
        assert config.min_distance <= env.unwrapped.distance_to_goal() <= config.max_distance


@pytest.mark.parametrize("family", sorted({i.split("/")[1].split("-")[0] for i in ENV_IDS}))
def test_optimal_lengths_grow_with_difficulty(family):
    ranges = [
        (config.min_distance, config.max_distance)
        for config in (
            gym.make(f"turnbudget/{family}-{level}-v0").unwrapped.config
            for level in ("Easy", "Medium", "Hard")
        )
    ]
    assert ranges[0][0] >= 5 and ranges[-1][0] >= 25  # hard games are long-horizon
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(ranges))
    # families without a reason to differ keep the suite's common ranges
    if family in ("Crafting", "KeyQuest", "Maze", "Shop", "Sokoban"):
        assert ranges == [(5, 12), (15, 30), (35, 60)]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_reset_is_determined_by_the_seed(env_id):
    env = gym.make(env_id)
    first = env.reset(seed=11)
    env.step("look")
    assert env.reset(seed=11) == first
    assert env.reset(seed=12)[0] != first[0]
