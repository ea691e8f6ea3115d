"""Wrapper overhead: steps/s of the registered env against the turn-budget wrapper stack.

Question: what do the wrappers cost per step, and how much of it is the oracle?
A uniform-random agent (pre-drawn numbers, so the agent costs the same
everywhere) plays each configuration on the same seeds; episodes are capped at
``cap`` turns so every configuration pays for the same number of resets.

Configurations (each built with `turnbudget.make`), each adding to the last:

- ``bare``: ``gym.make(id)`` as registered (the game under its `TurnBudget`);
- ``mix+reveal``: + BudgetMix (`SampleTurnBudget`) + `RevealBudget`
  ("always"): the budget wrappers, which never call the oracle
  (target: <= 1.3x the bare time per step);
- ``+records``: + `RecordStepOutcomes` with ``oracle=False`` (bookkeeping
  only, no oracle);
- ``+errors``: + `InjectErrors`, which needs the oracle: distances on the
  turns where an error fires, and a slip plays its candidate on a copy of the
  game to make sure the task stays solvable;
- ``full``: the recorder also queries ``optimal_actions()`` and
  ``distance_to_goal()`` every step: budget + mix + reveal + errors + records.

The oracle's share is the part of the full stack's extra time per step spent
in the last two increments.

Configurations are measured in interleaved rounds and the median round is
reported, in wall time and in CPU time of this process. The machine these
figures come from has 2 cores shared with other jobs: expect noise of
10-20% between runs; the CPU-time ratios are the steadier ones.

Run:
    python benchmarks/speed/wrapper_overhead.py                       # 2 ids, 5 rounds of 1 s
    python benchmarks/speed/wrapper_overhead.py --seconds 0.2 --rounds 1   # smoke
    python benchmarks/speed/wrapper_overhead.py --sink jsonl          # records to a real file (fsync)
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
from pathlib import Path
from typing import Any

import gymnasium as gym
from random_agent import rollout  # the script's folder is on sys.path

import turnbudget


@dataclasses.dataclass
class Config:
    env_ids: tuple[str, ...] = ("turnbudget/Maze-Medium-v0", "turnbudget/KeyQuest-Medium-v0")
    """ids to measure"""
    seconds: float = 1.0
    """wall time per configuration per round"""
    rounds: int = 5
    """interleaved rounds; the median is reported"""
    seed: int = 0
    """seed of the first episode and of the random agent"""
    cap: int = 32
    """turns per episode at most, in every configuration"""
    budget_mix: str = "32,48,64"
    """BudgetMix of the wrapped configurations (every value >= cap, so the cap ends episodes)"""
    error_rate: float = 0.05
    """InjectErrors rate (all three kinds)"""
    reveal: str = "always"
    """RevealBudget mode"""
    sink: str = "callback"
    """where records go: callback (built, then dropped), memory, or jsonl (a temp file, fsync per episode)"""


CONFIGS = ("bare", "mix+reveal", "+records", "+errors", "full")


def build(env_id: str, name: str, config: Config, path: Path) -> gym.Env:
    if name == "bare":
        return gym.make(env_id)
    level = CONFIGS.index(name)
    sink: dict[str, Any] = {
        "callback": {"callback": lambda record: None},
        "memory": {"memory": True},
        "jsonl": {"path": path},
    }[config.sink]
    return turnbudget.make(
        env_id,
        budget_mix=config.budget_mix,
        reveal=config.reveal,
        record={**sink, "oracle": name == "full"} if level >= 2 else None,
        errors={"rate": config.error_rate} if level >= 3 else None,
    )


def measure(config: Config) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for env_id in config.env_ids:
            wall: dict[str, list[float]] = {c: [] for c in CONFIGS}
            cpu: dict[str, list[float]] = {c: [] for c in CONFIGS}
            for _ in range(config.rounds):
                for name in CONFIGS:
                    env = build(env_id, name, config, Path(tmp) / "records.jsonl")
                    w, c = rollout(env, config.seconds, config.seed, config.cap)
                    env.close()
                    wall[name].append(w)
                    cpu[name].append(c)
            rows.append(
                {
                    "env_id": env_id,
                    "wall": {c: statistics.median(v) for c, v in wall.items()},
                    "cpu": {c: statistics.median(v) for c, v in cpu.items()},
                }
            )
    return rows


def report(rows: list[dict], config: Config) -> None:
    print(
        f"random agent, cap {config.cap} turns, mix {config.budget_mix}, errors {config.error_rate}, "
        f"reveal {config.reveal}, sink {config.sink}; median of {config.rounds} rounds x {config.seconds} s"
    )
    for clock in ("wall", "cpu"):
        print(f"\n[{clock} time] steps/s and time per step relative to bare")
        print(f"{'env id':32}" + "".join(f"{c:>20}" for c in CONFIGS))
        for r in rows:
            rates = r[clock]
            cells = [f"{rates[c]:,.0f} ({rates['bare'] / rates[c]:.2f}x)" for c in CONFIGS]
            print(f"{r['env_id']:32}" + "".join(f"{cell:>20}" for cell in cells))
    print("\n[cpu time] extra microseconds per step over bare, by increment")
    for r in rows:
        us = {c: 1e6 / v for c, v in r["cpu"].items()}
        extra = us["full"] - us["bare"]
        oracle = us["full"] - us["+records"]
        budget_ratio = us["mix+reveal"] / us["bare"]
        verdict = "meets" if budget_ratio <= 1.3 else "MISSES"
        share = f"{oracle / extra:.0%}" if extra > 0 else "n/a (no extra time measured)"
        print(
            f"{r['env_id']}: bare {us['bare']:.1f} us/step; mix+reveal {us['mix+reveal'] - us['bare']:+.1f} "
            f"({budget_ratio:.2f}x, {verdict} the 1.3x target); records w/o oracle "
            f"{us['+records'] - us['mix+reveal']:+.1f} ({us['+records'] / us['bare']:.2f}x cumulative); "
            f"errors {us['+errors'] - us['+records']:+.1f}; recorder oracle {us['full'] - us['+errors']:+.1f}; "
            f"full {us['full'] / us['bare']:.2f}x, oracle share of the extra {share}"
        )


def parse_args() -> Config:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    for field in dataclasses.fields(Config):
        default = field.default
        flag = "--" + field.name.replace("_", "-")
        if isinstance(default, tuple):
            parser.add_argument(flag, nargs="+", default=list(default))
        else:
            parser.add_argument(flag, type=type(default), default=default)
    args = vars(parser.parse_args())
    args["env_ids"] = tuple(args["env_ids"])
    if args["sink"] not in ("callback", "memory", "jsonl"):
        parser.error(f"--sink must be callback, memory or jsonl, got {args['sink']!r}")
    return Config(**args)


def main() -> None:
    config = parse_args()
    report(measure(config), config)


if __name__ == "__main__":
    main()
