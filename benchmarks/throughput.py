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

Other suites (wrapper overhead, TextWorld) have their own scripts listed in
benchmarks/README.md; ``--with-others`` runs them after this one.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import pstats
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

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
    )


def random_rollout(
    env: gym.Env, seconds: float, seed: int, episode_cap: int, oracle: bool = False
) -> float:
    """Steps per second of a uniform-random agent over the admissible actions.

    Episodes end at ``episode_cap`` turns even without a budget wrapper, so the
    bare and wrapped figures pay for the same number of resets.
    """
    game = env.unwrapped
    draws = np.random.default_rng(seed).random(1 << 16)  # pre-drawn: keep the agent's cost out
    _, info = env.reset(seed=seed)
    steps, episode, turn = 0, 0, 0
    deadline = time.perf_counter() + seconds
    start = time.perf_counter()
    while True:
        for _ in range(1000):
            actions = info["admissible_actions"]
            action = actions[int(draws[steps & 0xFFFF] * len(actions))]
            _, _, terminated, truncated, info = env.step(action)
            if oracle:
                game.distance_to_goal()
            steps += 1
            turn += 1
            if terminated or truncated or turn >= episode_cap:
                episode, turn = episode + 1, 0
                _, info = env.reset(seed=seed + episode)
        if time.perf_counter() >= deadline:
            return steps / (time.perf_counter() - start)


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
        bare = random_rollout(bare_env(env_id), config.seconds, config.seed, cap)
        made = random_rollout(gym.make(env_id), config.seconds, config.seed, cap)
        oracle = random_rollout(bare_env(env_id), config.seconds, config.seed, cap, oracle=True)
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
    random_rollout(
        env, config.seconds, config.seed, gym.registry[config.profile].kwargs["turn_budget"]
    )
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


OTHER_SCRIPTS = ("wrapper_overhead.py", "textworld_throughput.py")


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
