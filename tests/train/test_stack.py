"""The training stack (`turnbudget.train.make_env`): features, task seeds, shaping at the budget's end."""

from __future__ import annotations

import numpy as np
import pytest

from turnbudget.train import TrainConfig, make_env
from turnbudget.wrappers.process_reward import ProcessReward

MAZE = "turnbudget/Maze-Easy-v0"


def _find(env, cls):
    while not isinstance(env, cls):
        env = env.env
    return env


def _config(**kwargs) -> TrainConfig:
    base = dict(
        env_id=MAZE,
        turn_budget=6,
        process_reward=True,
        text_dim=16,
        command_dim=4,
        history=2,
        max_actions=6,
    )
    return TrainConfig(**{**base, **kwargs})


def _play(env, seed: int, steps: int) -> list[tuple[float, bool, dict]]:
    """Step a fixed action sequence (slot ``i % mask.sum()``) through whole episodes."""
    out = []
    _, info = env.reset(seed=seed)
    for i in range(steps):
        mask = info["action_mask"]
        action = int(np.flatnonzero(mask)[i % int(mask.sum())])
        _, reward, terminated, truncated, info = env.step(action)
        out.append((float(reward), truncated and not terminated, info["process_reward"]))
        if terminated or truncated:
            _, info = env.reset()
    return out


def test_shaping_is_zero_at_the_budget_end_exactly_when_the_learner_does_not_bootstrap():
    """A visible budget (auto: no bootstrap) zeroes Φ where the budget runs out, which is
    what the old ZeroPotentialAtBudgetEnd wrapper did after the fact: keep's reward minus
    γ·Φ(s') on the truncated turn, the same reward on every other turn."""
    zero = make_env(_config(reveal="always"))
    keep = make_env(_config(reveal="always", bootstrap_at_budget="yes"))
    assert _find(zero, ProcessReward).potential_at_truncation == "zero"
    assert _find(keep, ProcessReward).potential_at_truncation == "keep"
    assert _find(make_env(_config(reveal="never")), ProcessReward).potential_at_truncation == "keep"
    cut = 0
    for (r_zero, truncated, _), (r_keep, _, shaping) in zip(_play(zero, 3, 60), _play(keep, 3, 60)):
        if truncated:
            cut += 1
            assert r_zero == pytest.approx(r_keep - 0.99 * shaping["potential"], abs=1e-12)
            assert shaping["potential"] < 0  # Φ(s') kept: the cut was worth something
        else:
            assert r_zero == r_keep
    assert cut >= 5


def test_task_seeds_stay_in_the_training_range_and_follow_the_seed():
    config = _config(task_pool=5, process_reward=False)
    env = make_env(config, index=1)
    seen = set()
    for _ in range(30):
        env.reset()
        seen.add(env.unwrapped.np_random_seed)
    assert seen <= set(range(config.task_seed_base, config.task_seed_base + 5))
    assert len(seen) > 1


def test_the_observation_is_the_vector_the_encoding_describes():
    from turnbudget.agents.policy import _feature_size
    from turnbudget.train import training_encoding

    config = _config()
    obs, _ = make_env(config).reset(seed=0)
    assert obs.shape == (_feature_size(training_encoding(config, "Tanh")),)


@pytest.mark.rl
def test_the_learners_vector_env_carries_only_small_infos():
    """SB3 deep-copies every info of every step: the learner's envs keep plain scalars only
    (issue 26: the text keys cost more to copy than the game's step)."""
    pytest.importorskip("stable_baselines3")
    from turnbudget.train import _sb3
    from turnbudget.train.stack import TRAINING_INFO_KEYS

    venv = _sb3.vec_env(_config(n_envs=2))
    try:
        venv.reset()
        masks = venv.env_method("action_masks")
        _, _, _, infos = venv.step(np.array([int(np.flatnonzero(m)[0]) for m in masks]))
        for info in infos:
            assert set(info) - {"TimeLimit.truncated", "episode", "terminal_observation"} == set(
                TRAINING_INFO_KEYS
            )
            assert all(type(info[key]) in (bool, int) for key in TRAINING_INFO_KEYS)
    finally:
        venv.close()
