"""Throughput of the TextWorld adapter against raw ``textworld.start``, and make times.

Questions:

1. Does the adapter cost anything? A uniform-random agent over the admissible
   commands plays the same game with the same pre-drawn choices through
   - raw: ``textworld.start`` with exactly the infos the adapter requests
     (admissible commands; quest tracking on, plan commands not generated);
   - adapter: the env class alone (no wrappers); target >= 0.9x raw;
   - gym.make: the registered id (checker, order enforcing, `TurnBudget`).
   For reference, "raw minimal" requests no tracking at all (feedback, score,
   won/lost), which is what TextWorld costs before admissible commands.
2. What does the oracle cost? adapter + ``distance_to_goal()`` every step
   against raw with ``policy_commands`` requested every step.
3. Cached make against fresh generation: ``gym.make(id)`` + ``reset(seed)``
   when the game is in the cache, and when TextWorld must generate it first.

Run:
    python benchmarks/speed/textworld_throughput.py                       # 4 ids, 6 s each
    python benchmarks/speed/textworld_throughput.py --seconds 0.5 --fresh-games 0   # quick look
    python benchmarks/speed/textworld_throughput.py --env-ids turnbudget/Cooking-Easy-v0

Games come from the cache (``--cache-dir``, default: the usual cache); game 0
of each id is generated first if missing. Wall-clock figures on a shared
machine are noisy: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from cpu_time import cpu_seconds  # the script's folder is on sys.path

import turnbudget  # noqa: F401 - registers the envs


@dataclasses.dataclass
class Config:
    seconds: float = 6.0
    """wall time per throughput measurement (split over the rounds)"""
    env_ids: tuple[str, ...] = (
        "turnbudget/CoinCollector-Hard-v0",
        "turnbudget/TreasureHunter-Hard-v0",
        "turnbudget/Cooking-Medium-v0",
        "turnbudget/Cooking-Hard-v0",
    )
    """ids to measure"""
    seed: int = 0
    """game id played, and seed of the random agent"""
    cache_dir: str | None = None
    """game cache root (default: $TURNBUDGET_TEXTWORLD_CACHE or the user cache dir)"""
    rounds: int = 3
    """interleaved rounds per measurement (best kept), each seconds / rounds long"""
    cached_makes: int = 5
    """cached make + reset timings per id (median reported)"""
    fresh_games: int = 2
    """freshly generated games per id (median reported); 0 skips generation"""


def _game_class_and_kwargs(env_id: str, cache_dir: str | None) -> tuple[type, dict[str, Any]]:
    kwargs = dict(gym.registry[env_id].kwargs)
    module_name, _, attr = kwargs.pop("game_entry_point").partition(":")
    kwargs.pop("turn_budget")
    return getattr(importlib.import_module(module_name), attr), {**kwargs, "cache_dir": cache_dir}


def _loop(step, reset, admissible, seconds: float, seed: int, cap: int, oracle=None) -> float:
    """Steps per CPU second of a random agent (``step(cmd)`` returns done).

    CPU time (of this process and of the env's interpreter process, where the
    adapter runs it) rather than wall time, so other jobs on a shared machine
    skew the ratios less.
    """
    draws = np.random.default_rng(seed).random(1 << 16)
    reset()
    steps = turn = 0
    start = cpu_seconds()
    deadline = time.perf_counter() + seconds
    while True:
        for _ in range(50):
            actions = admissible()
            done = step(actions[int(draws[steps & 0xFFFF] * len(actions))])
            if oracle is not None:
                oracle()
            steps += 1
            turn += 1
            if done or turn >= cap:
                turn = 0
                reset()
        if time.perf_counter() >= deadline:
            return steps / max(cpu_seconds() - start, 1e-9)


def raw_rate(path: Path, config: Config, cap: int, mode: str) -> float:
    """``mode``: "minimal", "same" (the adapter's infos) or "policy" (plan every step)."""
    import textworld

    tracking = mode != "minimal"
    infos = textworld.EnvInfos(
        feedback=True, score=True, max_score=True, moves=True, won=True, lost=True,
        objective=True, admissible_commands=tracking, policy_commands=tracking,
        extras=["walkthrough"] if tracking else [],
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # jericho's UnsupportedGameWarning, as in the adapter
        env = textworld.start(str(path), request_infos=infos)
    holder: dict[str, Any] = {}

    def reset() -> None:
        infos.policy_commands = tracking
        holder["state"] = env.reset()
        infos.policy_commands = mode == "policy"

    def step(command: str) -> bool:
        holder["state"], _, done = env.step(command)
        return done

    def admissible() -> list[str]:
        # Without tracking, TextWorld knows no admissible commands: replay a fixed menu.
        return holder["state"].admissible_commands or ["look", "inventory", "go north", "go south",
                                                       "go east", "go west", "take coin"]  # fmt: skip

    rate = _loop(step, reset, admissible, config.seconds, config.seed, cap)
    env.close()
    return rate


def adapter_rate(env: gym.Env, config: Config, cap: int, oracle: bool = False) -> float:
    holder: dict[str, Any] = {}

    def reset() -> None:
        holder["info"] = env.reset(seed=config.seed)[1]

    def step(command: str) -> bool:
        _, _, terminated, truncated, holder["info"] = env.step(command)
        return terminated or truncated

    def admissible() -> list[str]:
        return holder["info"]["admissible_actions"] or ["look"]

    game = env.unwrapped
    return _loop(step, reset, admissible, config.seconds, config.seed, cap,
                 oracle=game.distance_to_goal if oracle else None)  # fmt: skip


def make_times(env_id: str, config: Config) -> tuple[float, float | None]:
    """Median seconds of make + reset: cached (game ``seed``), and fresh (new games)."""
    cached = []
    for _ in range(config.cached_makes):
        began = time.perf_counter()
        env = gym.make(env_id, cache_dir=config.cache_dir)
        env.reset(seed=config.seed)
        cached.append(time.perf_counter() - began)
        env.close()
    fresh = []
    with tempfile.TemporaryDirectory() as empty_cache:
        for i in range(config.fresh_games):
            began = time.perf_counter()
            env = gym.make(env_id, cache_dir=empty_cache)
            env.reset(seed=config.seed + 1000 + i)
            fresh.append(time.perf_counter() - began)
            env.close()
    return statistics.median(cached), statistics.median(fresh) if fresh else None


def throughputs(
    env_id: str, cls: type, kwargs: dict[str, Any], path: Path, config: Config
) -> dict[str, float]:
    """Best steps per CPU second of each setup over interleaved rounds (load spikes hit all)."""
    cap = gym.registry[env_id].kwargs["turn_budget"]
    part = dataclasses.replace(config, seconds=config.seconds / config.rounds)
    runs = {
        "raw minimal": lambda: raw_rate(path, part, cap, "minimal"),
        "raw": lambda: raw_rate(path, part, cap, "same"),
        "adapter": lambda: adapter_rate(cls(**kwargs), part, cap),
        "gym.make": lambda: adapter_rate(gym.make(env_id, cache_dir=config.cache_dir), part, cap),
        "raw+policy": lambda: raw_rate(path, part, cap, "policy"),
        "adapter+oracle": lambda: adapter_rate(cls(**kwargs), part, cap, oracle=True),
    }
    best = dict.fromkeys(runs, 0.0)
    for _ in range(config.rounds):
        for name, run in runs.items():
            best[name] = max(best[name], run())
    return best


def measure(config: Config) -> list[dict[str, Any]]:
    rows = []
    for env_id in config.env_ids:
        cls, kwargs = _game_class_and_kwargs(env_id, config.cache_dir)
        path = cls(**kwargs).pregenerate(config.seed)
        row = {"env_id": env_id, **throughputs(env_id, cls, kwargs, path, config)}
        row["cached make s"], row["fresh make s"] = make_times(env_id, config)
        rows.append(row)
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"load average while measured: {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores")  # fmt: skip
    print(f"\n{'steps per CPU second':34} {'raw min':>8} {'raw':>7} {'adapter':>8} {'ratio':>6} "
          f"{'gym.make':>9} {'raw+pol':>8} {'+oracle':>8} {'ratio':>6}")  # fmt: skip
    for r in rows:
        print(f"{r['env_id']:34} {r['raw minimal']:8.0f} {r['raw']:7.0f} {r['adapter']:8.0f} "
              f"{r['adapter'] / r['raw']:5.2f}x {r['gym.make']:9.0f} {r['raw+policy']:8.0f} "
              f"{r['adapter+oracle']:8.0f} {r['adapter+oracle'] / r['raw+policy']:5.2f}x")  # fmt: skip
    print(f"\n{'make + reset, median s':34} {'cached':>8} {'fresh':>8} {'speed-up':>9}")
    for r in rows:
        fresh = r["fresh make s"]
        tail = f"{fresh:8.2f} {fresh / r['cached make s']:8.0f}x" if fresh else f"{'-':>8} {'-':>9}"
        print(f"{r['env_id']:34} {r['cached make s']:8.3f} {tail}")
    worst = min(r["adapter"] / r["raw"] for r in rows)
    print(
        f"\nworst adapter/raw ratio {worst:.2f}x: {'meets' if worst >= 0.9 else 'MISSES'} "
        "the 0.9x target"
    )


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=Config.seconds)
    parser.add_argument("--env-ids", nargs="*", default=list(Config.env_ids))
    parser.add_argument("--seed", type=int, default=Config.seed)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--rounds", type=int, default=Config.rounds)
    parser.add_argument("--cached-makes", type=int, default=Config.cached_makes)
    parser.add_argument("--fresh-games", type=int, default=Config.fresh_games)
    args = parser.parse_args(argv)
    return Config(args.seconds, tuple(args.env_ids), args.seed, args.cache_dir, args.rounds,
                  args.cached_makes, args.fresh_games)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    print_table(measure(parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
