"""What stoppable TextWorld steps cost: the interpreter in its own process against in-process.

Question: the TextWorld env runs jericho's frotz in a child process
(`turnbudget.envs.textworld.interpreter`), so that a story file that loops
forever is stopped by ``--timeout`` (or the per-step limit) on every backend.
Every interpreter call is then a round trip over a pipe. What does that cost
per TextWorld step, against running the interpreter in-process as before?

Both setups play game 0 of each id with the same pre-drawn random choices over
the admissible commands, episodes capped at the id's default budget:

- in-process: ``textworld.start`` (jericho in this process: the env before);
- own process: `start_game` with an `Interpreter` (the env now).

Two request modes: "adapter" requests exactly the infos the env requests
(admissible commands, quest tracking: what a real step costs), "minimal"
requests none of TextWorld's tracking (the interpreter is then nearly all a
step does: the worst case for the guard). In a round both setups play in
lockstep, alternating step by step, so load spikes on a shared machine hit
both. Reported: the median wall-clock microseconds per step, the ratio
(own process / in-process) of each round, then the median of each over
``rounds`` rounds; and the CPU per step of both processes together (this
process plus the interpreter's, read from /proc where there is one).

Run:
    python benchmarks/speed/textworld_step_guard.py                       # ~4 min of CPU
    python benchmarks/speed/textworld_step_guard.py --steps 20 --rounds 1  # smoke (tests run this)
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from cpu_time import children_cpu_seconds

import turnbudget  # noqa: F401 - registers the envs
from turnbudget.cli.flags import parse_config


@dataclasses.dataclass
class Config:
    env_ids: tuple[str, ...] = ("turnbudget/CoinCollector-Hard-v0", "turnbudget/Cooking-Medium-v0")
    """ids whose game 0 is played"""
    steps: int = 1500
    """steps per setup and round"""
    rounds: int = 3
    """interleaved rounds (the median is reported)"""
    seed: int = 0
    """seed of the random agent's pre-drawn choices"""
    cache_dir: str = ""
    """game cache root (empty: $TURNBUDGET_TEXTWORLD_CACHE or the user cache dir)"""


def _game_path(env_id: str, cache_dir: str) -> Path:
    kwargs = dict(gym.registry[env_id].kwargs)
    module_name, _, attr = kwargs.pop("game_entry_point").partition(":")
    kwargs.pop("turn_budget")
    cls = getattr(importlib.import_module(module_name), attr)
    return cls(**kwargs, cache_dir=cache_dir or None).pregenerate(0)


def _infos(mode: str) -> Any:
    import textworld

    tracking = mode == "adapter"
    return textworld.EnvInfos(
        feedback=True, score=True, max_score=True, moves=True, won=True, lost=True,
        objective=True, admissible_commands=tracking, policy_commands=tracking,
        extras=["walkthrough"] if tracking else [],
    )  # fmt: skip


class _Player:
    """One setup playing the random agent: ``step()`` plays one turn (resetting as needed)."""

    def __init__(self, path: Path, mode: str, guarded: bool, cap: int):
        import textworld

        from turnbudget.envs.textworld.interpreter import Interpreter, start_game

        self.interpreter = Interpreter() if guarded else None
        infos = _infos(mode)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # jericho's UnsupportedGameWarning
            if self.interpreter is not None:
                self.env = start_game(path, infos, self.interpreter)
            else:
                self.env = textworld.start(str(path), request_infos=infos)
        self.cap = cap
        self.state = self.env.reset()
        self.turn = 0

    def step(self, draw: float) -> None:
        commands = self.state.admissible_commands or _MENU
        self.state, _, done = self.env.step(commands[int(draw * len(commands))])
        self.turn += 1
        if done or self.turn >= self.cap:
            self.state, self.turn = self.env.reset(), 0

    def close(self) -> None:
        self.env.close()
        if self.interpreter is not None:
            self.interpreter.terminate()


_MENU = ["look", "inventory", "go north", "go south", "go east", "go west"]


def one_round(path: Path, mode: str, config: Config, cap: int) -> dict[str, tuple[float, float]]:
    """Both setups in lockstep (step i of one, then step i of the other, alternating which
    goes first), so load spikes hit both: ``{setup: (median wall s per step, CPU s per step
    of both processes)}``."""
    players = {"in-process": _Player(path, mode, False, cap),
               "own process": _Player(path, mode, True, cap)}  # fmt: skip
    walls: dict[str, list[float]] = {name: [] for name in players}
    cpus = dict.fromkeys(players, 0.0)
    interpreter = children_cpu_seconds()  # (the own-process setup's is the only child)
    draws = np.random.default_rng(config.seed).random(config.steps)
    order = list(players.items())
    for i, draw in enumerate(draws):
        for name, player in order if i % 2 else order[::-1]:
            wall, cpu = time.perf_counter(), time.process_time()
            player.step(draw)
            walls[name].append(time.perf_counter() - wall)
            cpus[name] += time.process_time() - cpu
    cpus["own process"] += children_cpu_seconds() - interpreter
    for player in players.values():
        player.close()
    return {name: (statistics.median(walls[name]), cpus[name] / config.steps) for name in players}


def measure(config: Config) -> list[dict[str, Any]]:
    rows = []
    for env_id in config.env_ids:
        path = _game_path(env_id, config.cache_dir)
        cap = gym.registry[env_id].kwargs["turn_budget"]
        for mode in ("adapter", "minimal"):
            rounds = [one_round(path, mode, config, cap) for _ in range(config.rounds)]
            row: dict[str, Any] = {"env_id": env_id, "mode": mode}
            for name in rounds[0]:
                row[name] = statistics.median(r[name][0] for r in rounds)
                row[f"{name} cpu"] = statistics.median(r[name][1] for r in rounds)
            row["ratio"] = statistics.median(
                r["own process"][0] / r["in-process"][0] for r in rounds
            )
            rows.append(row)
    return rows


def print_table(rows: list[dict[str, Any]], config: Config) -> None:
    print(f"load average while measured: {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores; {config.steps} steps x {config.rounds} rounds, median")  # fmt: skip
    print(f"\n{'us per step (wall)':34} {'mode':8} {'in-proc':>8} {'own proc':>9} {'ratio':>6} "
          f"{'+us':>6} {'CPU in-proc':>12} {'CPU own (both)':>15}")  # fmt: skip
    for r in rows:
        before, after = r["in-process"] * 1e6, r["own process"] * 1e6
        print(f"{r['env_id']:34} {r['mode']:8} {before:8.0f} {after:9.0f} {r['ratio']:5.2f}x "
              f"{after - before:6.0f} {r['in-process cpu'] * 1e6:12.0f} "
              f"{r['own process cpu'] * 1e6:15.0f}")  # fmt: skip
    adapter = [r["ratio"] for r in rows if r["mode"] == "adapter"]
    if adapter:
        print(f"\nper TextWorld step with the env's infos: own process / in-process "
              f"{min(adapter):.2f}x to {max(adapter):.2f}x")  # fmt: skip


def parse_args(argv: list[str] | None = None) -> Config:
    return parse_config(Config, argv, __doc__)


def main(argv: list[str] | None = None) -> int:
    config = parse_args(argv)
    print_table(measure(config), config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
