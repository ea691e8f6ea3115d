"""sb3-contrib MaskablePPO trains on Maze-Easy through DiscreteActions + TextFeatures (the rl extra)."""

from __future__ import annotations

import numpy as np
import pytest

import turnbudget

pytestmark = pytest.mark.rl


def make_env():
    return turnbudget.make(
        "turnbudget/Maze-Easy-v0", budget_mix=[15, 30], discrete_actions=5, text_features=64
    )


def test_maskable_ppo_trains_and_runs_on_maze_easy():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env(make_env, n_envs=2, seed=0)
    model = MaskablePPO(
        "MlpPolicy", venv, n_steps=256, batch_size=64, n_epochs=2, seed=0, device="cpu"
    )
    model.learn(total_timesteps=3072)
    assert model.num_timesteps >= 3072
    assert np.isfinite(model.logger.name_to_value["train/loss"])

    env = make_env()
    for seed in range(3):
        obs, info = env.reset(seed=100 + seed)
        done = False
        while not done:
            masks = get_action_masks(env)
            assert (masks == info["action_mask"]).all()
            action, _ = model.predict(obs, action_masks=masks, deterministic=True)
            obs, reward, terminated, truncated, info = env.step(int(action))
            assert info["valid_action"], "a masked policy only plays admissible commands"
            done = terminated or truncated
        assert info["turns_used"] <= info["turn_budget"]
