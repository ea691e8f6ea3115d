"""How often a memoryless agent's recovery-specific skill reads as clearly non-zero.

A memoryless ε-oracle has no recovery skill of its own: its true recovery-specific skill
is 0 where the probes' matched control is exact. The control is matched on the oracle's
distance only (`docs/guides/probes.md`, "Two limits of the recovery measure"), and on
Sokoban a setback adds walking that no random move spoils while the on-track control still
has box pushes that can deadlock: there the skill leans above 0. This script repeats a
probe run of the ε-oracles ``--reps`` times, each replicate on its own ``--tasks`` task
seeds (replicate r: seeds ``base + r * tasks`` on, and ``--seed`` base + r), and counts
the replicates whose 95% interval lies above 0, below 0, or covers 0 (with Wilson's 95%
interval of each rate), and the mean estimate.

Run:
    python benchmarks/recovery_bias.py                                  # Sokoban-Easy, 200 x 40 tasks
    python benchmarks/recovery_bias.py --env turnbudget/Maze-Easy-v0 --reps 50
    python benchmarks/recovery_bias.py --reps 2 --tasks 4               # smoke: a few seconds
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from turnbudget.agents import OracleAgent
from turnbudget.eval import probe
from turnbudget.eval.estimator import wilson_interval

EPSILONS = (0.3, 0.5)


def replicate(env_id: str, tasks: int, base: int, rep: int) -> dict[str, dict[str, Any]]:
    """One probe run of the ε-oracles: each one's recovery-specific skill (mean, low, high)."""
    seeds = list(range(base + rep * tasks, base + (rep + 1) * tasks))
    result = probe(
        env_id, [OracleAgent(e) for e in EPSILONS], tasks=seeds, seed=base + rep, n_bootstrap=1000
    )
    return {
        f"oracle-eps{e:g}": result.summary["agents"][f"oracle-eps{e:g}"][env_id][
            "recovery_specific_skill"
        ]
        for e in EPSILONS
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="turnbudget/Sokoban-Easy-v0")
    parser.add_argument("--tasks", type=int, default=40, help="tasks per replicate")
    parser.add_argument("--reps", type=int, default=200, help="replicates")
    parser.add_argument("--base", type=int, default=20000, help="the first task seed")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    for name in ("tasks", "reps", "workers"):  # (0 failed deep inside, after the pool started)
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    if args.base < 0:
        parser.error(f"--base must be a task seed >= 0, got {args.base}")
    with ProcessPoolExecutor(args.workers) as pool:
        runs = list(
            pool.map(
                replicate,
                [args.env] * args.reps,
                [args.tasks] * args.reps,
                [args.base] * args.reps,
                range(args.reps),
            )
        )
    print(f"{args.env}: {args.reps} replicates of {args.tasks} tasks, 95% intervals")
    print("| agent | above 0 | below 0 | covers 0 [95%] | mean estimate |")
    print("|---|---|---|---|---|")
    for label in runs[0]:
        skills = [run[label] for run in runs if run[label]["mean"] is not None]
        above = sum(s["low"] > 0 for s in skills)
        below = sum(s["high"] < 0 for s in skills)
        covers = len(skills) - above - below
        low, high = wilson_interval(covers / len(skills), len(skills))
        mean = float(np.mean([s["mean"] for s in skills]))
        print(
            f"| {label} | {above} | {below} | {covers / len(skills):.3f} [{low:.3f}, {high:.3f}] "
            f"| {mean:+.4f} |"
        )


if __name__ == "__main__":
    main()
