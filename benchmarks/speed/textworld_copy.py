"""What copying a TextWorld game mid-episode costs: the state moved against the episode replayed.

Question (issue 26, "probes copy the game"): a slip's and a setback's
look-ahead (`InjectErrors`), and the probes, copy the game. A TextWorld game's
copy (``copy.deepcopy``) moves its interpreter's state to a new interpreter and
copies TextWorld's quest tracking; unpickling replays the episode's commands in
a new interpreter instead, as every copy did before. How do the two grow with
the episode's length?

Game 0 of each id is played along its walkthrough (the oracle's commands); at
each of ``--histories`` commands played, both copies are made ``--rounds``
times, alternating (load spikes on a shared machine hit both), and each copy is
closed. Reported: the median wall-clock milliseconds of each, and their ratio
(replayed / moved). Wall clock includes the new interpreter's process start and
the story's load, which both pay.

Then what it changes for a run with errors (``--error-episodes``, 0: skipped): the
ε = 0.2 oracle plays ``--error-id``'s games 0, 1, ... under `InjectErrors` (slips and
setbacks at rate 0.5, each checked on a copy of the game), with copies moved and
with copies replayed (`TextWorldEnv.__deepcopy__` swapped for the replay), the same
episodes in both; and unchecked, for reference (another trajectory: no look-ahead).

Run:
    python benchmarks/speed/textworld_copy.py                                  # ~2 min
    python benchmarks/speed/textworld_copy.py --histories 2 --rounds 1 --error-episodes 0   # smoke
"""

from __future__ import annotations

import copy
import dataclasses
import os
import pickle
import statistics
import sys
import time
from typing import Any

import gymnasium as gym

import turnbudget  # noqa: F401 - registers the envs
from turnbudget.cli.flags import parse_config


@dataclasses.dataclass
class Config:
    env_ids: tuple[str, ...] = ("turnbudget/Cooking-Hard-v0", "turnbudget/CoinCollector-Hard-v0")
    """ids whose game 0 is played"""
    histories: tuple[int, ...] = (2, 10, 20)
    """commands played before the copies (each id stops at its walkthrough's end)"""
    rounds: int = 3
    """copies of each kind at each history length (the median is reported)"""
    error_episodes: int = 3
    """episodes of the run with errors (0: skip it)"""
    error_id: str = "turnbudget/Cooking-Medium-v0"
    """the id of the run with errors"""
    cache_dir: str = ""
    """TextWorld game cache (default: the usual one)"""


def _moved(game: Any) -> None:
    copy.deepcopy(game).close()


def _replayed(game: Any) -> None:
    pickle.loads(pickle.dumps(game)).close()


def measure(config: Config, env_id: str) -> list[dict[str, Any]]:
    """One row per history length reached: the median ms of each copy and their ratio."""
    kwargs = {"cache_dir": config.cache_dir} if config.cache_dir else {}
    env = gym.make(env_id, **kwargs)
    env.reset(seed=0)
    game = env.unwrapped
    rows = []
    played = 0
    for history in sorted(config.histories):
        ended = False
        while played < history and not ended:
            commands = game.optimal_actions()
            if not commands:
                break
            _, _, ended, _, _ = env.step(commands[0])
            played += 1
        if ended or played < history:
            break
        times: dict[str, list[float]] = {"moved": [], "replayed": []}
        for _ in range(config.rounds):
            for name, make in (("moved", _moved), ("replayed", _replayed)):
                started = time.perf_counter()
                make(game)
                times[name].append(time.perf_counter() - started)
        moved, replayed = (statistics.median(times[k]) * 1000 for k in ("moved", "replayed"))
        rows.append({"env_id": env_id, "history": played, "moved_ms": moved,
                     "replayed_ms": replayed, "ratio": replayed / moved})  # fmt: skip
    env.close()
    return rows


def _replay_copy(game: Any, memo: dict[int, Any]) -> Any:
    """A copy as unpickling makes it: the episode replayed in a new interpreter."""
    clone = type(game).__new__(type(game))
    memo[id(game)] = clone
    clone.__setstate__(copy.deepcopy(game.__getstate__(), memo))
    return clone


def run_with_errors(config: Config, copies: str) -> tuple[float, int]:
    """Seconds and steps of the run with errors: ``copies`` "moved", "replayed" or
    "unchecked" (no look-ahead)."""
    from turnbudget.agents import OracleAgent
    from turnbudget.envs.textworld.env import TextWorldEnv
    from turnbudget.wrappers import InjectErrors

    kwargs = {"cache_dir": config.cache_dir} if config.cache_dir else {}
    env = InjectErrors(gym.make(config.error_id, **kwargs), rate=0.5, kinds=("slip", "setback"),
                       check_slips=copies != "unchecked")  # fmt: skip
    agent = OracleAgent(0.2)
    moved = TextWorldEnv.__deepcopy__
    if copies == "replayed":
        TextWorldEnv.__deepcopy__ = _replay_copy  # type: ignore[method-assign]
    started, steps = time.perf_counter(), 0
    try:
        for episode in range(config.error_episodes):
            observation, info = env.reset(seed=episode)
            agent.reset(episode)
            ended = False
            while not ended:
                shown = {**info, "oracle_actions": env.unwrapped.optimal_actions()}
                observation, _, terminated, truncated, info = env.step(
                    agent.act(observation, shown)
                )
                steps += 1
                ended = terminated or truncated
    finally:
        TextWorldEnv.__deepcopy__ = moved  # type: ignore[method-assign]
        env.close()
    return time.perf_counter() - started, steps


def main(argv: list[str] | None = None) -> int:
    config = parse_config(Config, argv, __doc__)
    print(f"load {os.getloadavg()[0]:.2f}; median of {config.rounds} copies each, wall clock")
    print(
        f"{'env id':34} {'history':>7} {'moved ms':>9} {'replayed ms':>12} {'replayed/moved':>15}"
    )
    for env_id in config.env_ids:
        for row in measure(config, env_id):
            print(f"{row['env_id']:34} {row['history']:>7} {row['moved_ms']:>9.1f} "
                  f"{row['replayed_ms']:>12.1f} {row['ratio']:>14.2f}x")  # fmt: skip
    if config.error_episodes:
        print(f"\n{config.error_id}, {config.error_episodes} episodes, slips and setbacks at "
              "rate 0.5, the ε = 0.2 oracle:")  # fmt: skip
        for copies in ("moved", "replayed", "unchecked"):
            seconds, steps = run_with_errors(config, copies)
            print(f"  copies {copies:9} {seconds:6.1f} s  {steps} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
