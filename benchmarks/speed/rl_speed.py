"""Training speed: env steps/s of MaskablePPO with 1 and 2 envs (in-process or one process each).

Runs `turnbudget.train.train_ppo` for ``--steps`` env steps per setting and reports steps/s
and the share of wall time spent inside the vector env (the games plus every
wrapper, `HistoryFeatures` included) against the learner (policy forward
passes during rollouts and the PPO updates). torch uses one thread.

``--env-side`` measures instead, without a learner, the CPU time per env step of the
16-env vector env the learner uses (every wrapper, the featurisation and SB3's copy of
the infos; a uniform-random masked policy, whose own cost is subtracted) against the
bare game's step (resets included), and prints the ratio (issue 26: goal <= 5x).

Example::

    python benchmarks/speed/rl_speed.py --steps 8192
    python benchmarks/speed/rl_speed.py --env-side --steps 400
"""

from __future__ import annotations

import argparse
import importlib
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

from turnbudget.train import TrainConfig, train_ppo

SETTINGS = (
    ("1 env", {"n_envs": 1, "n_steps": 1024}),
    ("2 envs, one process", {"n_envs": 2, "n_steps": 512}),
    ("2 envs, two processes", {"n_envs": 2, "n_steps": 512, "vec_env": "subproc"}),
    ("16 envs, one process (budgetmix.py)", {"n_envs": 16, "n_steps": 64}),
)


def env_side(env_id: str, steps: int, n_envs: int = 16, slices: int = 4) -> tuple[float, float]:
    """(CPU µs per env step of the learner's vector env, of the bare game), measured in
    ``slices`` alternating slices of each so that a change of the machine's load cancels."""
    from turnbudget.train import _sb3

    config = TrainConfig(env_id=env_id, budget_mix="uniform:12-40", n_envs=n_envs)
    venv = _sb3.vec_env(config)
    venv.reset()
    rng = np.random.default_rng(0)

    def actions() -> np.ndarray:
        masks = venv.env_method("action_masks")
        return np.array([rng.choice(np.flatnonzero(mask)) for mask in masks])

    kwargs = dict(gym.registry[env_id].kwargs)
    module, _, attr = kwargs.pop("game_entry_point").partition(":")
    kwargs.pop("turn_budget")
    game = getattr(importlib.import_module(module), attr)(**kwargs)
    _, info = game.reset(seed=0)
    total = policy = bare = 0.0
    played = 0
    for i in range(slices):
        chunk = steps // slices + (i < steps % slices)
        start = time.process_time()
        for _ in range(chunk):
            venv.step(actions())
        total += time.process_time() - start
        start = time.process_time()
        for _ in range(chunk):
            actions()
        policy += time.process_time() - start
        start = time.process_time()
        for _ in range(chunk * n_envs):
            played += 1
            commands = info["admissible_actions"] or ["look"]
            _, _, terminated, _, info = game.step(commands[int(rng.integers(len(commands)))])
            if terminated or played % 30 == 0:  # about the mean budget of uniform:12-40
                _, info = game.reset(seed=played)
        bare += time.process_time() - start
    venv.close()
    per_step = steps * n_envs / 1e6
    return (total - policy) / per_step, bare / per_step


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8192, help="env steps per setting")
    parser.add_argument("--env-id", default="turnbudget/Maze-Easy-v0")
    parser.add_argument("--env-side", action="store_true", help="env side vs bare game only")
    args = parser.parse_args(argv)
    if args.env_side:
        env_us, bare_us = env_side(args.env_id, args.steps)
        print(
            f"{args.env_id}: env side {env_us:.1f} µs/step, bare game {bare_us:.1f} µs/step,"
            f" ratio {env_us / bare_us:.1f}x"
        )
        return
    print(f"{args.env_id}, {args.steps} steps per setting, rollout 1024 steps, batch 256, 4 epochs")
    print("| setting | env steps/s | share of wall time in envs + wrappers | learner share |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, kwargs in SETTINGS:
            config = TrainConfig(
                env_id=args.env_id,
                out=str(Path(tmp) / "run"),
                total_steps=args.steps,
                log="none",
                budget_mix="uniform:12-40",
                **kwargs,
            )
            summary = train_ppo(config)
            share, speed = summary["env_share"], summary["steps_per_s"]
            print(f"| {name} | {speed:,.0f} | {share:.0%} | {1 - share:.0%} |", flush=True)
    print("(with subprocess envs the env share is the parent's wait on its workers)")


if __name__ == "__main__":
    main()
