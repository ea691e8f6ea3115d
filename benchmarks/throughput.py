"""Throughput of the native games: steps per second of a random agent.

For each family and difficulty, three figures on one core:

- bare: the game class itself, a random agent choosing from
  ``info["admissible_actions"]`` (target: >= 50,000 steps/s);
- gym.make: the same through ``gymnasium.make`` (env checker, order
  enforcing and the default `TurnBudget`);
- bare + oracle: ``distance_to_goal()`` also queried every step.

Run:
    python benchmarks/throughput.py                 # all native ids, 2 s each
    python benchmarks/throughput.py --seconds 0.2   # quick look
    python benchmarks/throughput.py --profile turnbudget/KeyQuest-Hard-v0

Other suites (wrapper overhead, TextWorld, multi-agent) have their own scripts listed in
benchmarks/README.md; ``--with-others`` runs them after this one.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import pstats
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
from random_agent import rollout  # benchmarks/ is on sys.path when run as a script

import turnbudget  # noqa: F401 - registers the envs


@dataclasses.dataclass
class Config:
    seconds: float = 2.0
    """wall time per measurement"""
    seed: int = 0
    """seed of the first episode and of the random agent"""
    env_ids: tuple[str, ...] = ()
    """ids to measure (default: every native id)"""
    profile: str = ""
    """profile this id instead of measuring, printing where the time goes"""
    with_others: bool = False
    """also run the other benchmark scripts (wrappers, TextWorld) afterwards"""


def native_ids() -> list[str]:
    return sorted(
        env_id
        for env_id, spec in gym.registry.items()
        if str(spec.kwargs.get("game_entry_point", "")).startswith("turnbudget.envs.native")
        and "difficulty" in spec.kwargs  # the registered difficulties, not the free -v0 ids
    )


def bare_env(env_id: str) -> gym.Env:
    """The game class alone, built from the registration kwargs (no wrappers at all)."""
    import importlib

    kwargs = dict(gym.registry[env_id].kwargs)
    module_name, _, attr = kwargs.pop("game_entry_point").partition(":")
    kwargs.pop("turn_budget")
    return getattr(importlib.import_module(module_name), attr)(**kwargs)


def measure(config: Config) -> list[dict]:
    rows = []
    for env_id in config.env_ids or native_ids():
        cap = gym.registry[env_id].kwargs["turn_budget"]
        bare, _ = rollout(bare_env(env_id), config.seconds, config.seed, cap)
        made, _ = rollout(gym.make(env_id), config.seconds, config.seed, cap)
        game = bare_env(env_id)
        oracle, _ = rollout(game, config.seconds, config.seed, cap, per_step=game.distance_to_goal)
        rows.append({"env_id": env_id, "bare": bare, "gym.make": made, "bare+oracle": oracle})
    return rows


def print_table(rows: list[dict]) -> None:
    print(
        f"{'env id':32} {'bare steps/s':>13} {'gym.make':>10} {'ratio':>6} {'+oracle':>10} {'ratio':>6}"
    )
    for r in rows:
        print(
            f"{r['env_id']:32} {r['bare']:13,.0f} {r['gym.make']:10,.0f} {r['bare'] / r['gym.make']:5.2f}x"
            f" {r['bare+oracle']:10,.0f} {r['bare'] / r['bare+oracle']:5.2f}x"
        )
    worst = min(rows, key=lambda r: r["bare"])
    verdict = "meets" if worst["bare"] >= 50_000 else "MISSES"
    print(
        f"\nslowest bare: {worst['env_id']} at {worst['bare']:,.0f} steps/s, {verdict} the 50,000 target"
    )


def profile(config: Config) -> None:
    env = bare_env(config.profile)
    profiler = cProfile.Profile()
    profiler.enable()
    rollout(env, config.seconds, config.seed, gym.registry[config.profile].kwargs["turn_budget"])
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


def parse_args() -> Config:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=Config.seconds)
    parser.add_argument("--seed", type=int, default=Config.seed)
    parser.add_argument("--env-ids", nargs="*", default=[])
    parser.add_argument("--profile", default="")
    parser.add_argument("--with-others", action="store_true")
    args = parser.parse_args()
    return Config(args.seconds, args.seed, tuple(args.env_ids), args.profile, args.with_others)


OTHER_SCRIPTS = ("wrapper_overhead.py", "textworld_throughput.py", "multiagent_throughput.py")


def main() -> None:
    config = parse_args()
    if config.profile:
        profile(config)
        return
    print_table(measure(config))
    if config.with_others:
        here = Path(__file__).parent
        for name in OTHER_SCRIPTS:
            if (here / name).exists():
                print(f"\n== {name}")
                subprocess.run([sys.executable, str(here / name)], check=False)


if __name__ == "__main__":
    main()
