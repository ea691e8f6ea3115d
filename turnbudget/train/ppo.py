"""MaskablePPO on the training stack (masks from `DiscreteActions`), optionally from a saved policy."""

from __future__ import annotations

import time
from typing import Any

from turnbudget.train import _sb3
from turnbudget.train.config import TrainConfig, check_config, check_out

__all__ = ["train_ppo"]

_LOG_FORMATS = {"csv": ["csv"], "tensorboard": ["tensorboard"], "none": []}


def train_ppo(config: TrainConfig, *, overwrite: bool = False) -> dict[str, Any]:
    """Run MaskablePPO for ``config.total_steps`` env steps (from ``config.init`` when set);
    save the policy under ``config.out``; return the run summary (also ``summary.json``).
    An ``out`` that holds another run is refused unless ``overwrite`` (`check_out`)."""
    config = check_config(config)
    config.check_init()  # (before torch is imported, or anything is written)
    check_out(config, overwrite)
    _sb3.require_rl()
    if config.log == "tensorboard":
        _sb3.require_tensorboard()
    from stable_baselines3.common.callbacks import CheckpointCallback
    from stable_baselines3.common.logger import configure

    _sb3.setup_torch(config)
    timed = _sb3.TimedVecEnv(_sb3.vec_env(config), bootstrap=config.bootstraps())
    venv = timed.env
    try:
        model = _sb3.new_model(config, venv)  # (an init of other features: refused before `out`)
    except BaseException:
        venv.close()  # (subprocess sub-envs too)
        raise
    out = _sb3.start_out(config)
    model.set_logger(configure(str(out), _LOG_FORMATS[config.log]))
    callbacks = []
    if config.checkpoint_every > 0:
        every = max(1, config.checkpoint_every // config.n_envs)
        callbacks.append(CheckpointCallback(every, str(out / "checkpoints"), name_prefix="policy"))
    start = time.perf_counter()
    try:
        model.learn(
            total_timesteps=config.total_steps,
            callback=callbacks or None,
            progress_bar=config.progress,
            reset_num_timesteps=True,
        )
    except ValueError:  # (torch's refusal of NaN logits when the weights have diverged)
        _sb3.check_finite(model, config)
        raise
    finally:
        venv.close()
    wall = time.perf_counter() - start
    _sb3.save_policy(model, config)
    return _sb3.write_summary(
        config,
        {
            "algo": "ppo",
            "env_id": config.env_id,
            "steps": int(model.num_timesteps),
            "wall_s": round(wall, 2),
            "steps_per_s": round(model.num_timesteps / wall, 1),
            "env_share": round(timed.cls.env_seconds / wall, 3),
            "n_envs": config.n_envs,
            "vec_env": config.vec_env,
            "bootstrap_at_budget": config.bootstraps(),
        },
    )
