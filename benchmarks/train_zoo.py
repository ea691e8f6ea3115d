"""Train the zoo: the base and RL policies the package ships (`policy:zoo/<family>/<arm>/seed<k>`).

The replication's recipe (benchmarks/budgetmix.py) with the budget hidden from
the policy, so every zoo policy is budget-blind: one run per episode scores every
T at once (truncate mode), budgets relative to a task's optimal length included.

1. **base**: behaviour cloning from ``bc_episodes`` episodes of the ε-oracle
   (``bc_epsilon``), budgets drawn from ``mix``; one per training seed.
2. **RL arms** from each seed's base, MaskablePPO with the same env steps:
   ``fixed-tight`` (T = ``tight``), ``fixed-generous`` (T = ``generous``),
   ``budgetmix`` (T ~ ``mix`` per episode).
3. **Export** (`turnbudget.agents.policy.export_policy`): each policy's actor
   as ``weights.npz`` (float32 arrays, no torch needed to play it),
   ``encoding.json`` and ``card.json`` (how it was trained: env, arm, seed,
   steps, budgets, this command, the commit), into ``zoo/<family>/<arm>/seed<k>``.

Jobs run in a pool of ``workers`` processes, one torch thread each; finished
jobs are skipped, so rerunning resumes. Training needs the rl extra; nothing
else in the package does.

Run (the machine is shared: be nice)::

    nice -n 10 python benchmarks/train_zoo.py                       # train + export
    python benchmarks/train_zoo.py --stages export                  # re-export only
    python benchmarks/train_zoo.py --seeds 0 --steps 2048 --bc-episodes 20 \\
        --out /tmp/zt --zoo /tmp/zoo                                # smoke
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from turnbudget.cli.flags import config_parser
from turnbudget.train import TrainConfig, train

ARMS = ("fixed-tight", "fixed-generous", "budgetmix")
ZOO = Path(__file__).resolve().parents[1] / "turnbudget" / "zoo"


@dataclasses.dataclass
class Config:
    """The zoo's training (every field is a flag)."""

    out: str = "runs/zoo-train"
    """Where the SB3 policies, logs and checkpoints go."""
    zoo: str = str(ZOO)
    """Where the exported zoo goes (default: the package's turnbudget/zoo)."""
    envs: tuple[str, ...] = ("turnbudget/Maze-Easy-v0",)
    """The game families."""
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    """Training seeds (each: its own base and one run per arm)."""
    steps: int = 50_000
    """PPO env steps per arm and seed."""
    net_arch: tuple[int, ...] = (64, 64)
    """Hidden layers of the policy (and value) MLP: 64 x 64 keeps a policy's weights.npz near
    125 KB (128 x 128 makes it 260 KB, the 20 policies over the zoo's 5 MB)."""
    ent_coef: float = 0.0
    """PPO entropy bonus (0: fine-tuning a BC policy that already explores)."""
    tight: int = 12
    """Fixed tight training budget."""
    generous: int = 40
    """Fixed generous training budget."""
    mix: str = "uniform:12-40"
    """BudgetMix training distribution (and the base's demonstration budgets)."""
    bc_episodes: int = 200
    """Demonstration episodes for the base."""
    bc_epsilon: float = 0.3
    """The demonstrator's ε."""
    reveal: str = "never"
    """Budget visibility in training (``never``: budget-blind policies)."""
    workers: int = 2
    """Processes for the jobs."""
    stages: str = "train,export"
    """Stages to run: train, export."""


def family(env_id: str) -> str:
    """``turnbudget/Maze-Easy-v0`` -> ``maze-easy``."""
    return env_id.split("/")[-1].rsplit("-v", 1)[0].lower()


def train_config(config: Config, env_id: str, seed: int, arm: str) -> TrainConfig:
    """The `TrainConfig` of the base (``arm="base"``) or of an RL arm."""
    where = Path(config.out) / family(env_id)
    shared = dict(
        env_id=env_id, seed=seed, total_steps=config.steps, ent_coef=config.ent_coef,
        net_arch=config.net_arch,
        budget_mix=config.mix, bc_episodes=config.bc_episodes, bc_epsilon=config.bc_epsilon,
        reveal=config.reveal, log="csv",
    )  # fmt: skip
    if arm == "base":
        return TrainConfig(algo="bc", out=str(where / f"base-s{seed}"), **shared)
    budgets = {
        "fixed-tight": {"budget_mix": "", "turn_budget": config.tight},
        "fixed-generous": {"budget_mix": "", "turn_budget": config.generous},
        "budgetmix": {},
    }[arm]
    return TrainConfig(
        algo="ppo", out=str(where / f"{arm}-s{seed}"), init=str(where / f"base-s{seed}"),
        **{**shared, **budgets},
    )  # fmt: skip


def _job(tc: TrainConfig) -> dict[str, Any]:
    os.environ["OMP_NUM_THREADS"] = "1"
    done = Path(tc.out) / "summary.json"
    if done.is_file() and (Path(tc.out) / "policy.zip").is_file():
        _check_same_training(tc)
        return {**json.loads(done.read_text()), "out": tc.out}  # resume
    return {**train(tc), "out": tc.out}


def _check_same_training(tc: TrainConfig) -> None:
    """A finished policy is reused only when it was trained with these settings (its own
    config.json): a rerun with other --steps or --tight reused the old policy, and its card
    said the new settings."""
    try:
        saved = json.loads((Path(tc.out) / "config.json").read_text())
    except (OSError, ValueError):
        saved = None
    wanted = json.loads(json.dumps(dataclasses.asdict(tc)))
    differ = sorted(k for k in wanted if saved is None or saved.get(k) != wanted[k])
    if differ:
        raise SystemExit(
            f"error: {tc.out} holds a policy trained with other settings ({', '.join(differ)}"
            "): remove it, or give another --out"
        )


def _pool(jobs: list[TrainConfig], workers: int) -> list[dict[str, Any]]:
    if workers <= 1 or len(jobs) <= 1:
        return [_job(j) for j in jobs]
    with multiprocessing.get_context("fork").Pool(workers, maxtasksperchild=1) as pool:
        return list(pool.imap(_job, jobs))


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
            cwd=Path(__file__).parent,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def command(config: Config) -> str:
    """The command that trains this zoo: the flags that differ from the defaults (not where
    the files go, nor which stages ran)."""
    default = Config()
    flags = [
        f"--{f.name.replace('_', '-')} "
        + (",".join(map(str, value)) if isinstance(value, tuple) else str(value))
        for f in dataclasses.fields(Config)
        if f.name not in ("out", "zoo", "stages")
        and (value := getattr(config, f.name)) != getattr(default, f.name)
    ]
    return " ".join(["nice -n 10 python benchmarks/train_zoo.py", *flags])


def card(config: Config, tc: TrainConfig, arm: str, summary: dict[str, Any]) -> dict[str, Any]:
    """How one zoo policy was trained (its ``card.json``)."""
    if arm == "base":
        how = (
            f"behaviour cloning on {tc.bc_episodes} episodes of the ε-oracle (ε = "
            f"{tc.bc_epsilon}), budgets {tc.budget_mix}, {tc.bc_epochs} epochs"
        )
    else:
        budget = f"T ~ {tc.budget_mix}" if tc.budget_mix else f"T = {tc.turn_budget}"
        how = (
            f"MaskablePPO, {tc.total_steps:,} env steps from base seed{tc.seed}, "
            f"{budget}, budget hidden"
        )
    return {
        "env_id": tc.env_id,
        "arm": arm,
        "seed": tc.seed,
        "algo": tc.algo,
        "how": how,
        "steps": tc.total_steps if arm != "base" else 0,
        "budget": None if tc.budget_mix else tc.turn_budget,
        "budget_mix": tc.budget_mix or None,
        "reveal": tc.reveal,
        "train_config": {
            k: v for k, v in dataclasses.asdict(tc).items() if k not in ("out", "init")
        },
        "train_summary": {k: v for k, v in summary.items() if k != "out"},
        "command": command(config),
        "commit": _commit(),
    }


def main(config: Config) -> dict[str, Any]:
    stages = set(config.stages.split(","))
    if stages - {"train", "export"}:
        raise SystemExit(f"error: unknown stages {sorted(stages - {'train', 'export'})}")
    jobs = {
        (e, s, a): train_config(config, e, s, a)
        for e in config.envs
        for s in config.seeds
        for a in ("base", *ARMS)
    }
    timings: dict[str, Any] = {}
    if "train" in stages:
        t = time.perf_counter()
        bases = [tc for (_, _, a), tc in jobs.items() if a == "base"]
        timings["bc"] = _pool(bases, config.workers)
        timings["ppo"] = _pool(
            [tc for (_, _, a), tc in jobs.items() if a != "base"], config.workers
        )
        timings["train_wall_s"] = round(time.perf_counter() - t, 1)
        Path(config.out).mkdir(parents=True, exist_ok=True)
        (Path(config.out) / "timings.json").write_text(json.dumps(timings, indent=1) + "\n")
    if "export" in stages:
        from turnbudget.agents.policy import export_policy

        for (env_id, seed, arm), tc in jobs.items():
            summary = json.loads((Path(tc.out) / "summary.json").read_text())
            dst = Path(config.zoo) / family(env_id) / arm / f"seed{seed}"
            export_policy(tc.out, dst, card=card(config, tc, arm, summary), overwrite=True)
        print(f"exported {len(jobs)} policies into {config.zoo}")
    return timings


if __name__ == "__main__":
    main(
        Config(
            **{
                k: v
                for k, v in vars(
                    config_parser(Config, __doc__.split("\n\n")[0], unset_is_none=True).parse_args()
                ).items()
                if v is not None
            }
        )
    )
