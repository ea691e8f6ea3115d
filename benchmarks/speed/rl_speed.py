"""Training speed: env steps/s of MaskablePPO with 1 and 2 envs (in-process or one process each).

Runs `turnbudget.train.train_ppo` for ``--steps`` env steps per setting and reports steps/s
and the share of wall time spent inside the vector env (the games plus every
wrapper, `HistoryFeatures` included) against the learner (policy forward
passes during rollouts and the PPO updates). torch uses one thread.

Example::

    python benchmarks/speed/rl_speed.py --steps 8192
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from turnbudget.train import TrainConfig, train_ppo

SETTINGS = (
    ("1 env", {"n_envs": 1, "n_steps": 1024}),
    ("2 envs, one process", {"n_envs": 2, "n_steps": 512}),
    ("2 envs, two processes", {"n_envs": 2, "n_steps": 512, "vec_env": "subproc"}),
    ("16 envs, one process (budgetmix.py)", {"n_envs": 16, "n_steps": 64}),
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8192, help="env steps per setting")
    parser.add_argument("--env-id", default="turnbudget/Maze-Easy-v0")
    args = parser.parse_args(argv)
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
