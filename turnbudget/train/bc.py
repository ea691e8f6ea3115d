"""Behaviour cloning from the ε-oracle: the "SFT" stage that PPO can start from.

`collect_demos` plays ``bc_episodes`` episodes of the ε-oracle (the optimal
commands, or a random admissible one with probability ``bc_epsilon``) through
the training stack; `fit_policy` fits the policy to the commands it played
(cross-entropy on masked logits) and its value head to the Monte-Carlo returns.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from turnbudget._checks import check_probability
from turnbudget.train import _sb3
from turnbudget.train.config import TrainConfig, check_config, check_out
from turnbudget.train.stack import make_env

__all__ = ["behaviour_clone", "collect_demos", "fit_policy"]


def collect_demos(config: TrainConfig, epsilon: float | None = None) -> dict[str, np.ndarray]:
    """Episodes of the ε-oracle through the training stack: features, masks, actions, returns
    (one per step) and whether each episode was won (``"won"``, one per episode)."""
    config = check_config(config)
    eps = config.bc_epsilon if epsilon is None else check_probability(epsilon, "epsilon")
    rng = np.random.default_rng([config.seed, 0xDE70])
    env = make_env(config, 0, process_reward=False)
    try:
        obs_l, mask_l, act_l, ret_l, won_l = [], [], [], [], []
        obs, info = env.reset(seed=config.seed)
        for _ in range(config.bc_episodes):
            rewards: list[float] = []
            done = False
            while not done:
                commands = info["action_commands"]
                optimal = [c for c in env.unwrapped.optimal_actions() if c in commands]
                explore = rng.random() < eps
                pool = commands if explore or not optimal else optimal
                action = commands.index(pool[int(rng.integers(len(pool)))])
                obs_l.append(obs)
                mask_l.append(info["action_mask"])
                act_l.append(action)
                obs, reward, terminated, truncated, info = env.step(action)
                rewards.append(float(reward))
                done = terminated or truncated
            won_l.append(bool(info.get("won")))
            g, returns = 0.0, []
            for r in reversed(rewards):
                g = r + config.gamma * g
                returns.append(g)
            ret_l.extend(reversed(returns))
            obs, info = env.reset()
    finally:
        env.close()  # (also when interrupted)
    return {
        "obs": np.asarray(obs_l, dtype=np.float32),
        "masks": np.asarray(mask_l, dtype=bool),
        "actions": np.asarray(act_l, dtype=np.int64),
        "returns": np.asarray(ret_l, dtype=np.float32),
        "won": np.asarray(won_l, dtype=bool),
    }


def fit_policy(model: Any, demos: dict[str, np.ndarray], config: TrainConfig) -> list[float]:
    """Cross-entropy on the demonstrated commands plus value regression; returns loss per epoch."""
    config = check_config(config)
    import torch

    policy = model.policy
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    obs = torch.as_tensor(demos["obs"])
    masks = demos["masks"]
    actions = torch.as_tensor(demos["actions"])
    returns = torch.as_tensor(demos["returns"])
    gen = np.random.default_rng([config.seed, 0xB0C])
    losses = []
    for _ in range(config.bc_epochs):
        order = gen.permutation(len(actions))
        total = 0.0
        for start in range(0, len(order), config.batch_size):
            idx = order[start : start + config.batch_size]
            values, log_prob, _ = policy.evaluate_actions(
                obs[idx], actions[idx], action_masks=masks[idx]
            )
            loss = -log_prob.mean() + 0.5 * torch.nn.functional.mse_loss(
                values.flatten(), returns[idx]
            )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(idx)
        losses.append(total / len(order))
    return losses


def behaviour_clone(config: TrainConfig, *, overwrite: bool = False) -> dict[str, Any]:
    """The BC stage: demonstrations, fit, save (a policy PPO can start from); the summary.
    With ``init`` the fit starts from that saved policy's network (its features checked as
    PPO checks them). An ``out`` that holds another run is refused unless ``overwrite``
    (`check_out`)."""
    config = check_config(config)
    config.check_init()  # (before torch is imported, the demonstrations played or out made)
    check_out(config, overwrite)
    _sb3.require_rl()
    _sb3.setup_torch(config)
    start = time.perf_counter()
    venv = _sb3.vec_env(config)
    try:
        model = _sb3.new_model(config, venv)  # (an init of other features: refused before `out`)
    except BaseException:
        venv.close()
        raise
    try:
        if config.init:  # the network only: BC fits with an Adam of its own (`fit_policy`), and
            # the init's optimizer moments, saved with this policy, would start a PPO run stale
            policy = model.policy
            policy.optimizer = policy.optimizer_class(
                policy.parameters(), lr=model.lr_schedule(1), **policy.optimizer_kwargs
            )
        _sb3.start_out(config)
        demos = collect_demos(config)
        losses = fit_policy(model, demos, config)
        _sb3.save_policy(model, config)
    finally:
        venv.close()  # (subprocess sub-envs too, also when interrupted)
    return _sb3.write_summary(
        config,
        {
            "algo": "bc",
            "env_id": config.env_id,
            "demo_steps": len(demos["actions"]),
            "demo_success": round(float(demos["won"].mean()), 4) if len(demos["won"]) else None,
            "losses": [round(x, 4) for x in losses],
            "wall_s": round(time.perf_counter() - start, 2),
        },
    )
