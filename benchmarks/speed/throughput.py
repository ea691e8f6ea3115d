"""Throughput of the native games: steps per second of a random agent.

For each family and difficulty, on one core:

- all-in: the game class itself, a random agent choosing from
  ``info["admissible_actions"]``, resets included (episodes capped at the
  id's default budget); target >= 50,000 steps/s where the game allows;
- step-only: the same run, counting only the time spent in ``step()``; the
  ratio all-in / step-only is the share of time spent stepping (target
  >= 0.5 on Medium: a reset costs no more than the episode it starts);
  beside it, the mean cost of one reset and of one episode's steps;
- gym.make: all-in through ``gymnasium.make`` (env checker, order enforcing
  and the default `TurnBudget`);
- + oracle: all-in with ``distance_to_goal()`` also queried every step;
- vs trivial: step-only against `TrivialTextEnv` (a Gymnasium ``Text`` env whose
  step returns a constant observation and info), the two measured in alternating
  slices of the same run so that the machine's load cancels: the floor any
  Python text env pays (goal >= 0.05 on Medium).
  (`vs_trivial_cpu` is the same ratio in CPU time, for a machine other jobs keep
  busy: `before_after.py` measures either.)

Then the Sokoban solver's time per oracle call on Hard (worst case and
percentiles), and, with ``--peers-python``, our Sokoban beside GEM's and
TextArena's, measured by ``peer_sokoban.py`` in the peers' own venv (never
imported here; skipped cleanly when absent).

Run:
    python benchmarks/speed/throughput.py                 # all native ids, 2 s each
    python benchmarks/speed/throughput.py --seconds 0.2   # quick look
    python benchmarks/speed/throughput.py --profile turnbudget/KeyQuest-Hard-v0
    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install gem-llm textarena
    python benchmarks/speed/throughput.py --peers-python /tmp/peers/bin/python

Other suites (wrapper overhead, TextWorld, multi-agent) have their own scripts listed in
benchmarks/README.md; ``--with-others`` runs them after this one.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import pstats
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from random_agent import cpu_per_step, rollout, rollout_split  # the script's folder is on sys.path

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
    solver_episodes: int = 20
    """Sokoban-Hard episodes whose every oracle call is timed (0: skip)"""
    peers_python: str = ""
    """python of a venv with gem-llm and textarena: compare their Sokoban with ours"""


class TrivialTextEnv(gym.Env[str, str]):
    """The cheapest Gymnasium ``Text`` env: constant observation, two admissible commands.

    The yardstick of the "vs trivial" column: what a step costs before any game logic."""

    def __init__(self) -> None:
        self.observation_space = spaces.Text(64)
        self.action_space = spaces.Text(64)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        return "You are here.", {"admissible_actions": ["wait", "look"], "goal": "Wait."}

    def step(self, action: str):
        info = {"admissible_actions": ["wait", "look"], "won": False, "lost": False}
        return "You wait.", 0.0, False, False, info


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
        split = rollout_split(bare_env(env_id), config.seconds, config.seed, cap)
        made, _ = rollout(gym.make(env_id), config.seconds, config.seed, cap)
        game = bare_env(env_id)
        oracle, _ = rollout(game, config.seconds, config.seed, cap, per_step=game.distance_to_goal)
        rows.append(
            {
                "env_id": env_id,
                "all_in": split.all_in,
                "step_only": split.step_only,
                "ratio": split.ratio,
                "reset_us": split.reset_us,
                "episode_us": split.episode_step_us,
                "gym.make": made,
                "oracle": oracle,
                "vs_trivial": vs_trivial(env_id, config.seconds, config.seed),
            }
        )
    return rows


def vs_trivial(env_id: str, seconds: float, seed: int, slices: int = 10) -> float:
    """Step-only rate of the bare game over `TrivialTextEnv`'s, in alternating slices."""
    cap = gym.registry[env_id].kwargs["turn_budget"]
    game, trivial = bare_env(env_id), TrivialTextEnv()
    game_time = trivial_time = 0.0
    for i in range(slices):
        game_time += 1 / rollout_split(game, seconds / slices / 2, seed + 1000 * i, cap).step_only
        trivial_time += 1 / rollout_split(trivial, seconds / slices / 2, seed, cap).step_only
    return trivial_time / game_time


def vs_trivial_cpu(env_id: str, seconds: float, seed: int, slices: int = 10) -> float:
    """`vs_trivial` in CPU time (`cpu_per_step`): the figure for a machine that other jobs
    keep busy, where a step's wall time measures the share of a core it got."""
    cap = gym.registry[env_id].kwargs["turn_budget"]
    game, trivial = bare_env(env_id), TrivialTextEnv()
    game_time = trivial_time = 0.0
    for i in range(slices):
        game_time += cpu_per_step(game, seconds / slices / 2, seed + 1000 * i, cap)
        trivial_time += cpu_per_step(trivial, seconds / slices / 2, seed, cap)
    return trivial_time / game_time


def print_table(rows: list[dict]) -> None:
    print(
        f"{'env id':32} {'all-in':>9} {'step-only':>10} {'ratio':>6} {'reset µs':>9}"
        f" {'episode µs':>10} {'gym.make':>9} {'+oracle':>9} {'vs trivial':>10}"
    )
    for r in rows:
        print(
            f"{r['env_id']:32} {r['all_in']:9,.0f} {r['step_only']:10,.0f} {r['ratio']:6.2f}"
            f" {r['reset_us']:9,.0f} {r['episode_us']:10,.0f}"
            f" {r['gym.make']:9,.0f} {r['oracle']:9,.0f} {r['vs_trivial']:10.3f}"
        )
    medium = [r for r in rows if "-Medium-" in r["env_id"]]
    short = [r["env_id"] for r in medium if r["ratio"] < 0.5]
    slow = [r["env_id"] for r in medium if r["vs_trivial"] < 0.05]
    print(
        "\nstep-only >= 0.05x the trivial env on every Medium id"
        if not slow
        else f"\nstep-only < 0.05x the trivial env on: {', '.join(slow)}"
    )
    print(
        "all-in >= 0.5x step-only on every Medium id"
        if not short
        else f"\nall-in < 0.5x step-only on: {', '.join(short)}"
    )


def time_sokoban_solver(config: Config) -> dict:
    """Every oracle call (distance_to_goal, optimal_actions) on Sokoban-Hard, timed: along
    random walks (which reach states no plan visits) and along the oracle's own plan. The
    first call of each level builds the solver's table of every state: the worst case."""
    from turnbudget.envs.native.sokoban import Sokoban

    game = Sokoban("hard")
    rng = np.random.default_rng(config.seed)
    times: list[float] = []

    def timed(call):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
        return result

    for episode in range(config.solver_episodes):
        game.reset(seed=config.seed + episode)
        for _turn in range(128):
            timed(game.distance_to_goal)
            optimal = timed(game.optimal_actions)
            if not optimal:
                break
            actions = game.admissible_actions()
            explore = episode % 2 == 0 and rng.random() < 0.5
            action = actions[int(rng.integers(len(actions)))] if explore else optimal[0]
            _, _, terminated, _, _ = game.step(action)
            if terminated:
                break
    ms = np.array(times) * 1e3
    return {
        "calls": len(ms),
        "mean_ms": float(ms.mean()),
        "p99_ms": float(np.percentile(ms, 99)),
        "max_ms": float(ms.max()),
    }


def compare_peers(config: Config) -> list[dict]:
    """Our Sokoban beside GEM's and TextArena's (run in their venv by peer_sokoban.py)."""
    rows = []
    for env_id in (
        "turnbudget/Sokoban-Easy-v0",
        "turnbudget/Sokoban-Medium-v0",
        "turnbudget/Sokoban-Hard-v0",
    ):
        split = rollout_split(bare_env(env_id), config.seconds, config.seed, 64)
        rows.append({"env_id": env_id, "all_in": split.all_in, "step_only": split.step_only})
    python = Path(config.peers_python)
    if not python.exists():
        rows.append({"env_id": "GEM, TextArena", "skipped": f"no interpreter at {python}"})
        return rows
    script = Path(__file__).with_name("peer_sokoban.py")
    out = subprocess.run(
        [str(python), str(script), "--seconds", str(config.seconds), "--cap", "64"],
        capture_output=True,
        text=True,
        check=False,
    )
    rows += [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0:
        rows.append({"env_id": "peer_sokoban.py", "skipped": out.stderr.strip()[-200:]})
    return rows


def print_peers(rows: list[dict]) -> None:
    print(f"\n{'Sokoban (random agent, <= 64 turns)':40} {'all-in':>9} {'step-only':>10}")
    for r in rows:
        if "skipped" in r:
            print(f"{r['env_id']:40} skipped: {r['skipped']}")
        else:
            print(f"{r['env_id']:40} {r['all_in']:9,.1f} {r['step_only']:10,.0f}")


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
    parser.add_argument("--solver-episodes", type=int, default=Config.solver_episodes)
    parser.add_argument("--peers-python", default="")
    args = parser.parse_args()
    return Config(
        args.seconds,
        args.seed,
        tuple(args.env_ids),
        args.profile,
        args.with_others,
        args.solver_episodes,
        args.peers_python,
    )


OTHER_SCRIPTS = ("wrapper_overhead.py", "textworld_throughput.py", "multiagent_throughput.py")


def main() -> None:
    config = parse_args()
    if config.profile:
        profile(config)
        return
    print_table(measure(config))
    if config.solver_episodes:
        t = time_sokoban_solver(config)
        print(
            f"\nSokoban-Hard oracle, {t['calls']} calls: mean {t['mean_ms']:.2f} ms,"
            f" p99 {t['p99_ms']:.1f} ms, worst {t['max_ms']:.1f} ms per call"
        )
    if config.peers_python:
        print_peers(compare_peers(config))
    if config.with_others:
        here = Path(__file__).parent
        for name in OTHER_SCRIPTS:
            if (here / name).exists():
                print(f"\n== {name}")
                subprocess.run([sys.executable, str(here / name)], check=False)


if __name__ == "__main__":
    main()
