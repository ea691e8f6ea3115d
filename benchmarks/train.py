"""Train a policy on a turnbudget game: behaviour cloning from a noisy oracle, or MaskablePPO.

cleanrl-style: everything a run does is in this file, configured by `TrainConfig`
(``--help`` lists the flags). The env stack is the library's own, built by
`turnbudget.make` and `HistoryFeatures`::

    TurnBudget (fixed T) or SampleTurnBudget (BudgetMix) -> ProcessReward (optional)
    -> RevealBudget -> DiscreteActions -> TextFeatures -> HistoryFeatures -> TaskSeeds

- ``--algo bc``: collect ``bc_episodes`` episodes of the ε-oracle (``bc_epsilon``)
  and fit the policy to the commands it played (cross-entropy on masked
  logits) and its value head to the Monte-Carlo returns: the "SFT" stage.
- ``--algo ppo``: sb3-contrib ``MaskablePPO`` (masks from `DiscreteActions`),
  optionally starting from a saved policy (``--init``, e.g. the BC base).

Memory: the policy sees a window of the last ``history`` executed commands,
per-slot command features and a revisit signal (`HistoryFeatures`), not an
LSTM: measured here, ``RecurrentPPO`` ran at about a third of MaskablePPO's
speed and cannot use action masks, and a short window covers what these
games hide (where you just came from, what you already took).

Training worlds come from task seeds >= ``task_seed_base`` (1,000,000 by
default), drawn per episode from a generator seeded by ``seed``, so they are
disjoint from evaluation seeds (0..9,999) by construction.

Output (``--out DIR``): ``policy.zip`` (SB3), ``encoding.json`` (what
`turnbudget.agents.policy.PolicyAgent` needs to rebuild the features and,
with the weights, the network),
``config.json``, ``progress.csv`` (or TensorBoard events with ``--log tensorboard``),
``checkpoints/`` and ``summary.json`` (steps/s, share of time in the envs).
Load the result with ``turnbudget eval --agent policy:DIR``.

Example::

    python benchmarks/train.py --algo bc --out runs/bc
    python benchmarks/train.py --init runs/bc --budget-mix uniform:12-40 --out runs/mix
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from config_flags import parse_config  # benchmarks/ is on sys.path as a script

__all__ = ["TaskSeeds", "TrainConfig", "behaviour_clone", "make_env", "parse_args", "train"]


@dataclasses.dataclass
class TrainConfig:
    """One training run (every field is a flag: ``--budget-mix uniform:12-40``)."""

    algo: str = "ppo"
    """``ppo`` (MaskablePPO) or ``bc`` (behaviour cloning from the ε-oracle)."""
    env_id: str = "turnbudget/Maze-Easy-v0"
    """The registered game."""
    out: str = "runs/train"
    """Directory for the saved policy, logs and checkpoints."""
    seed: int = 0
    """Seeds torch, the PPO sampler, the training worlds and the budget draws."""
    total_steps: int = 100_000
    """Environment steps (PPO)."""
    budget: int = 30
    """Fixed turn budget T (ignored when ``budget_mix`` is set)."""
    budget_mix: str = ""
    """BudgetMix distribution, e.g. ``uniform:12-40`` (empty: fixed ``budget``)."""
    process_reward: bool = False
    """Add potential-based shaping from the oracle's distance (`ProcessReward`)."""
    process_scale: float = 0.1
    """Shaping scale (Φ = -scale · distance)."""
    reveal: str = "always"
    """Budget visibility (`RevealBudget` mode); with ``always`` the policy also gets numeric budget features."""
    max_actions: int = 10
    """Action slots (`DiscreteActions`)."""
    text_dim: int = 64
    """Hash buckets per `TextFeatures` block."""
    history: int = 4
    """Executed commands and observations kept in the window (`HistoryFeatures`)."""
    command_dim: int = 16
    """Hash buckets per command."""
    n_envs: int = 16
    """Parallel envs (16 × 64 steps: one batched forward pass serves 16 envs)."""
    vec_env: str = "dummy"
    """``dummy`` (all envs in this process) or ``subproc`` (one process per env)."""
    n_steps: int = 64
    """PPO rollout length per env."""
    batch_size: int = 256
    """PPO minibatch."""
    n_epochs: int = 4
    """PPO epochs per rollout."""
    learning_rate: float = 3e-4
    """Adam step size (PPO and BC)."""
    gamma: float = 0.99
    """Discount (also ProcessReward's gamma)."""
    ent_coef: float = 0.01
    """PPO entropy bonus."""
    net_arch: tuple[int, ...] = (128, 128)
    """Hidden layers of the policy and value MLPs."""
    init: str = ""
    """Start PPO from this saved policy directory (its encoding must match)."""
    task_seed_base: int = 1_000_000
    """Training worlds use task seeds >= this (evaluation uses smaller ones)."""
    task_pool: int = 0
    """If > 0, train on task seeds base..base+pool-1 only (a fixed pool); 0: a new world each episode."""
    bc_episodes: int = 200
    """Demonstration episodes (BC)."""
    bc_epsilon: float = 0.3
    """The demonstrator's ε: a random admissible command with this probability (BC)."""
    bc_epochs: int = 20
    """Passes over the demonstrations (BC)."""
    checkpoint_every: int = 0
    """Save a checkpoint every this many steps (0: none)."""
    log: str = "csv"
    """``csv``, ``tensorboard`` (needs the tensorboard package) or ``none``."""
    progress: bool = False
    """Show a progress bar (SB3's, through rich)."""
    bootstrap_at_budget: str = "auto"
    """Bootstrap the value when the budget runs out: ``yes``, ``no`` or ``auto`` (yes only when
    the budget is hidden). A policy that sees its budget has running out of turns in its
    state: the value after the last turn is 0, and bootstrapping from the (never trained)
    value of a turns-left-0 state lets it drift (Pardo et al., 2018, "Time limits in RL")."""
    torch_threads: int = 1
    """torch threads in this process (1: parallelism comes from running seeds in parallel)."""


# --------------------------------------------------------------------------- the env stack


class TaskSeeds(gym.Wrapper):
    """Reset every episode with a task seed drawn from a fixed range, never below ``base``.

    SB3 seeds only the first reset; later resets would draw worlds from the
    game's own stream. Drawing an explicit seed per episode keeps training
    worlds disjoint from evaluation seeds and reproducible from ``seed``.
    """

    def __init__(self, env: gym.Env, base: int, pool: int, seed: int):
        super().__init__(env)
        self.base, self.pool = int(base), int(pool)
        self._rng = np.random.default_rng([seed, 0x7A5C])

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            self._rng = np.random.default_rng([seed, 0x7A5C])
        span = self.pool if self.pool > 0 else 2**31
        task = self.base + int(self._rng.integers(span))
        return self.env.reset(seed=task, options=options)


class ZeroPotentialAtBudgetEnd(gym.Wrapper):
    """Set ProcessReward's Φ(s') to 0 when the budget runs out (not only at termination).

    For a learner that does not bootstrap at the budget's end (see
    ``bootstrap_at_budget``), shaping keeps the optimal policy unchanged only if
    Φ = 0 wherever the return stops: this removes the γ·Φ(s') term the shaping
    added on the last, truncated turn.
    """

    def __init__(self, env: gym.Env, gamma: float):
        super().__init__(env)
        self.gamma = float(gamma)

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if truncated and not terminated and "process_reward" in info:
            shaping = info["process_reward"]
            reward = float(reward) - self.gamma * shaping["potential"]
        return obs, reward, terminated, truncated, info


def make_env(config: TrainConfig, index: int = 0, process_reward: bool | None = None) -> gym.Env:
    """The training stack for sub-env ``index`` (see the module docstring for the order)."""
    import turnbudget
    from turnbudget.wrappers.history_features import HistoryFeatures

    shaping = config.process_reward if process_reward is None else process_reward
    env = turnbudget.make(
        config.env_id,
        budget=None if config.budget_mix else config.budget,
        budget_mix=config.budget_mix or None,
        process_reward={"gamma": config.gamma, "scale": config.process_scale} if shaping else None,
        reveal=config.reveal,
        discrete_actions=config.max_actions,
        text_features=config.text_dim,
        info="text",  # HistoryFeatures reads the text keys (action_commands, ...)
    )
    env = HistoryFeatures(
        env,
        history=config.history,
        command_dim=config.command_dim,
        budget=config.reveal != "never",
    )
    if shaping and not _bootstraps(config):
        env = ZeroPotentialAtBudgetEnd(env, config.gamma)
    return TaskSeeds(env, config.task_seed_base, config.task_pool, config.seed * 1000 + index)


def _encoding(env: gym.Env, config: TrainConfig) -> dict[str, Any]:
    from turnbudget.wrappers._common import find_wrapper
    from turnbudget.wrappers.history_features import HistoryFeatures

    spec = find_wrapper(env, HistoryFeatures).spec_dict()
    return {"format": 1, "env_id": config.env_id, **spec}


def _bootstraps(config: TrainConfig) -> bool:
    if config.bootstrap_at_budget not in ("auto", "yes", "no"):
        raise ValueError(
            f"Expect `bootstrap_at_budget` auto|yes|no, got {config.bootstrap_at_budget!r}"
        )
    if config.bootstrap_at_budget == "auto":
        return config.reveal == "never"
    return config.bootstrap_at_budget == "yes"


class _TimedVecEnv:
    """Wrap a VecEnv: add up the wall time spent in reset/step (the envs and wrappers), and
    drop SB3's ``TimeLimit.truncated`` flag when the budget's end is not to be bootstrapped."""

    def __init__(self, venv: Any, bootstrap: bool = True):
        from stable_baselines3.common.vec_env import VecEnvWrapper

        class Timed(VecEnvWrapper):
            env_seconds = 0.0

            def reset(self):
                t = time.perf_counter()
                out = self.venv.reset()
                Timed.env_seconds += time.perf_counter() - t
                return out

            def step_wait(self):
                t = time.perf_counter()
                obs, rewards, dones, infos = self.venv.step_wait()
                Timed.env_seconds += time.perf_counter() - t
                if not bootstrap:
                    for info in infos:
                        info["TimeLimit.truncated"] = False
                return obs, rewards, dones, infos

            def step_async(self, actions):
                t = time.perf_counter()
                self.venv.step_async(actions)
                Timed.env_seconds += time.perf_counter() - t

        self.env = Timed(venv)
        self.cls = Timed


def _vec_env(config: TrainConfig) -> Any:
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    # Monitor: episode return and length in the logs (rollout/ep_rew_mean, ep_len_mean).
    fns = [lambda i=i: Monitor(make_env(config, i)) for i in range(config.n_envs)]
    if config.vec_env == "subproc":
        return SubprocVecEnv(fns, start_method="fork")
    if config.vec_env != "dummy":
        raise ValueError(f"Expect `vec_env` to be 'dummy' or 'subproc', got {config.vec_env!r}")
    return DummyVecEnv(fns)


def _setup_torch(config: TrainConfig) -> None:
    import torch

    torch.set_num_threads(config.torch_threads)
    torch.manual_seed(config.seed)


def _new_model(config: TrainConfig, venv: Any) -> Any:
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.utils import ConstantSchedule

    if config.init:
        model = MaskablePPO.load(Path(config.init) / "policy.zip", env=venv, device="cpu")
        # The loaded hyperparameters are the init's; use this run's.
        model.learning_rate = config.learning_rate
        # An SB3 schedule object, not a lambda: the saved zip must load without this file.
        model.lr_schedule = ConstantSchedule(config.learning_rate)
        model.ent_coef, model.gamma = config.ent_coef, config.gamma
        model.n_epochs, model.batch_size = config.n_epochs, config.batch_size
        if model.n_steps != config.n_steps or model.n_envs != config.n_envs:
            raise ValueError("`--init` policy was saved with other n_steps/n_envs; use the same")
        model.set_random_seed(config.seed)
        return model
    return MaskablePPO(
        "MlpPolicy",
        venv,
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        learning_rate=config.learning_rate,
        gamma=config.gamma,
        ent_coef=config.ent_coef,
        policy_kwargs={"net_arch": list(config.net_arch)},
        seed=config.seed,
        device="cpu",
        verbose=0,
    )


def _save(model: Any, out: Path, encoding: dict[str, Any], config: TrainConfig) -> None:
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / "policy.zip")
    # PolicyAgent rebuilds the network from the weights' shapes and this name: it never
    # unpickles the zip's objects.
    encoding = {**encoding, "activation": model.policy.activation_fn.__name__}
    (out / "encoding.json").write_text(json.dumps(encoding, indent=2) + "\n")
    (out / "config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2) + "\n")


def _logger(config: TrainConfig, out: Path) -> Any:
    from stable_baselines3.common.logger import configure

    formats = {"csv": ["csv"], "tensorboard": ["tensorboard"], "none": []}[config.log]
    return configure(str(out), formats)


# --------------------------------------------------------------------------- PPO


def train(config: TrainConfig) -> dict[str, Any]:
    """Run MaskablePPO; save the policy under ``config.out``; return the run summary."""
    from stable_baselines3.common.callbacks import CheckpointCallback

    _setup_torch(config)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    timed = _TimedVecEnv(_vec_env(config), bootstrap=_bootstraps(config))
    venv = timed.env
    model = _new_model(config, venv)
    model.set_logger(_logger(config, out))
    callbacks = []
    if config.checkpoint_every > 0:
        every = max(1, config.checkpoint_every // config.n_envs)
        callbacks.append(CheckpointCallback(every, str(out / "checkpoints"), name_prefix="policy"))
    probe_env = make_env(config, 0)
    encoding = _encoding(probe_env, config)
    probe_env.close()
    start = time.perf_counter()
    model.learn(
        total_timesteps=config.total_steps,
        callback=callbacks or None,
        progress_bar=config.progress,
        reset_num_timesteps=True,
    )
    wall = time.perf_counter() - start
    _save(model, out, encoding, config)
    venv.close()
    summary = {
        "algo": "ppo",
        "env_id": config.env_id,
        "steps": int(model.num_timesteps),
        "wall_s": round(wall, 2),
        "steps_per_s": round(model.num_timesteps / wall, 1),
        "env_share": round(timed.cls.env_seconds / wall, 3),
        "n_envs": config.n_envs,
        "vec_env": config.vec_env,
        "bootstrap_at_budget": _bootstraps(config),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


# --------------------------------------------------------------------------- behaviour cloning


def collect_demos(config: TrainConfig, epsilon: float | None = None) -> dict[str, np.ndarray]:
    """Episodes of the ε-oracle through the training stack: features, masks, actions, returns."""
    eps = config.bc_epsilon if epsilon is None else epsilon
    rng = np.random.default_rng([config.seed, 0xDE70])
    env = make_env(config, 0, process_reward=False)
    obs_l, mask_l, act_l, ret_l = [], [], [], []
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
        g, returns = 0.0, []
        for r in reversed(rewards):
            g = r + config.gamma * g
            returns.append(g)
        ret_l.extend(reversed(returns))
        obs, info = env.reset()
    env.close()
    return {
        "obs": np.asarray(obs_l, dtype=np.float32),
        "masks": np.asarray(mask_l, dtype=bool),
        "actions": np.asarray(act_l, dtype=np.int64),
        "returns": np.asarray(ret_l, dtype=np.float32),
    }


def fit_policy(model: Any, demos: dict[str, np.ndarray], config: TrainConfig) -> list[float]:
    """Cross-entropy on the demonstrated commands plus value regression; returns loss per epoch."""
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


def behaviour_clone(config: TrainConfig) -> dict[str, Any]:
    """The BC stage: demonstrations, fit, save (a policy PPO can start from)."""
    _setup_torch(config)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    demos = collect_demos(config)
    venv = _vec_env(config)
    model = _new_model(dataclasses.replace(config, init=""), venv)
    losses = fit_policy(model, demos, config)
    probe_env = make_env(config, 0)
    _save(model, out, _encoding(probe_env, config), config)
    probe_env.close()
    venv.close()
    summary = {
        "algo": "bc",
        "env_id": config.env_id,
        "demo_steps": len(demos["actions"]),
        "demo_success": None,
        "losses": [round(x, 4) for x in losses],
        "wall_s": round(time.perf_counter() - start, 2),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


# --------------------------------------------------------------------------- command line


def parse_args(argv: list[str] | None = None) -> TrainConfig:
    """Flags from the `TrainConfig` fields."""
    return parse_config(TrainConfig, argv, __doc__.split("\n\n")[0])


def main(argv: list[str] | None = None) -> None:
    config = parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(config.torch_threads))
    if config.algo not in ("ppo", "bc"):
        raise SystemExit(f"Expect --algo ppo or bc, got {config.algo!r}")
    summary = train(config) if config.algo == "ppo" else behaviour_clone(config)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
