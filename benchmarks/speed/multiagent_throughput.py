"""Throughput of the multi-agent games: rounds per second of a random team, and the oracle's cost.

For each game of ``turnbudget.multiagent.all_games`` and each difficulty, on one core:

- raw rounds/s: the parallel ``raw_env`` itself, every agent choosing uniformly
  from its ``info["admissible_actions"]`` (pre-drawn numbers), episodes capped
  at the default team budget;
- parallel_env: the same through ``parallel_env()`` (the `TeamTurnBudget`);
- AEC: through ``env()`` (PettingZoo's ``parallel_to_aec``), counted in rounds
  (one round = one ``step()`` per live agent);
- oracle cost per call: ``distance_to_goal(agent)`` and ``optimal_actions(agent)``
  for every agent, on states along random-team episodes (each call after a new
  round, so per-state caches are cold), in microseconds.

Run:
    python benchmarks/speed/multiagent_throughput.py                 # 1 s per figure
    python benchmarks/speed/multiagent_throughput.py --seconds 0.05  # smoke (tests run this)
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from typing import Any

import numpy as np

from turnbudget.multiagent import all_games


@dataclasses.dataclass
class Config:
    seconds: float = 1.0
    """wall time per measurement"""
    seed: int = 0
    """seed of the first episode and of the random team"""
    games: tuple[str, ...] = ()
    """game names to measure (default: every game of all_games)"""
    difficulties: tuple[str, ...] = ("easy", "medium", "hard")


def parallel_rounds(env: Any, seconds: float, seed: int, cap: int) -> float:
    """Rounds per second of a random team on a parallel env, episodes capped at ``cap`` rounds."""
    draws = np.random.default_rng(seed).random(1 << 16)
    _, infos = env.reset(seed=seed)
    rounds = episode = turn = i = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:  # one batch at least, however late the clock is read (a busy machine)
        for _ in range(200):
            actions = {}
            for agent in env.agents:
                options = infos[agent]["admissible_actions"] or ["wait"]
                actions[agent] = options[int(draws[i & 0xFFFF] * len(options))]
                i += 1
            _, _, _, _, infos = env.step(actions)
            rounds += 1
            turn += 1
            if not env.agents or turn >= cap:
                episode, turn = episode + 1, 0
                _, infos = env.reset(seed=seed + episode)
        if time.perf_counter() >= deadline:
            return rounds / (time.perf_counter() - start)


def aec_rounds(env: Any, seconds: float, seed: int) -> float:
    """Rounds per second of a random team on an AEC env (agent turns / number of agents)."""
    draws = np.random.default_rng(seed).random(1 << 16)
    env.reset(seed=seed)
    turns = episode = i = 0
    start = time.perf_counter()
    deadline = start + seconds
    n_agents = env.num_agents
    while True:  # one batch at least, as above
        for _ in range(200):
            _, _, terminated, truncated, info = env.last()
            if terminated or truncated:
                action = None
            else:
                options = info["admissible_actions"] or ["wait"]
                action = options[int(draws[i & 0xFFFF] * len(options))]
                i += 1
            env.step(action)
            turns += 1
            if not env.agents:
                episode += 1
                env.reset(seed=seed + episode)
        if time.perf_counter() >= deadline:
            return turns / n_agents / (time.perf_counter() - start)


def oracle_cost(module: Any, difficulty: str, seconds: float, seed: int) -> dict[str, float]:
    """Microseconds per ``distance_to_goal(agent)`` and per ``optimal_actions(agent)`` call."""
    env = module.parallel_env(difficulty=difficulty)
    game = env.unwrapped
    rng = np.random.default_rng(seed)
    _, infos = env.reset(seed=seed)
    spent = {"distance_to_goal": 0.0, "optimal_actions": 0.0}
    calls = 0
    deadline = time.perf_counter() + seconds
    episode = 0
    while not calls or time.perf_counter() < deadline:  # one round of calls at least
        for agent in env.agents:
            t0 = time.perf_counter()
            game.distance_to_goal(agent)
            t1 = time.perf_counter()
            game.optimal_actions(agent)
            t2 = time.perf_counter()
            spent["distance_to_goal"] += t1 - t0
            spent["optimal_actions"] += t2 - t1
            calls += 1
        actions = {}
        for agent in env.agents:
            options = infos[agent]["admissible_actions"] or ["wait"]
            actions[agent] = options[int(rng.integers(len(options)))]
        _, _, _, _, infos = env.step(actions)
        if not env.agents:
            episode += 1
            _, infos = env.reset(seed=seed + episode)
    return {k: v / max(calls, 1) * 1e6 for k, v in spent.items()}


def measure(config: Config) -> list[dict[str, Any]]:
    rows = []
    for name in config.games or sorted(all_games):
        module = all_games[name if "/" in name else f"turnbudget/{name}"]
        for difficulty in config.difficulties:
            cap = module.DEFAULT_BUDGETS[difficulty]
            raw = parallel_rounds(
                module.raw_env(difficulty=difficulty), config.seconds, config.seed, cap
            )
            par = parallel_rounds(
                module.parallel_env(difficulty=difficulty), config.seconds, config.seed, cap
            )
            aec = aec_rounds(module.env(difficulty=difficulty), config.seconds, config.seed)
            cost = oracle_cost(module, difficulty, config.seconds, config.seed)
            rows.append({"game": module.raw_env.metadata["name"], "difficulty": difficulty,
                         "raw": raw, "parallel_env": par, "aec": aec, **cost})  # fmt: skip
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        f"{'game':10} {'difficulty':10} {'raw rounds/s':>13} {'parallel_env':>13} {'AEC':>10}"
        f" {'distance us':>12} {'optimal us':>11}"
    )
    for r in rows:
        print(
            f"{r['game']:10} {r['difficulty']:10} {r['raw']:13,.0f} {r['parallel_env']:13,.0f}"
            f" {r['aec']:10,.0f} {r['distance_to_goal']:12,.1f} {r['optimal_actions']:11,.1f}"
        )


def parse_args() -> Config:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=Config.seconds)
    parser.add_argument("--seed", type=int, default=Config.seed)
    parser.add_argument("--games", nargs="*", default=[])
    parser.add_argument("--difficulties", nargs="*", default=list(Config.difficulties))
    args = parser.parse_args()
    return Config(args.seconds, args.seed, tuple(args.games), tuple(args.difficulties))


if __name__ == "__main__":
    print_table(measure(parse_args()))
