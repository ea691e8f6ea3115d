"""A game's steps after one deep copy of it, against a game never copied (issue 26).

A probe's copy of a game, or a slip's look-ahead (Sokoban, Shop), once read the original's
``__dict__``, which moves it out of CPython's compact attribute layout for good: every
later step of that game cost 12-24% more. Prints, per game, the cost of bare random steps
(``--episodes`` episodes of at most 64 steps, the same on both sides) after one deep copy
over their cost in a game never copied: in CPU time (``--rounds`` alternating rounds, the
median of the rounds' ratios; each side runs first in every other round) or, with ``--instructions``, in instructions counted by
callgrind (each count minus that of a process that plays no step; needs valgrind).

Example::

    python benchmarks/speed/copy_layout.py --rounds 5
    python benchmarks/speed/copy_layout.py --instructions                 # ~3 min
    python benchmarks/speed/copy_layout.py --episodes 3 --rounds 1        # smoke
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import statistics
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np

import turnbudget  # noqa: F401  (registers the games)

ENV_IDS = ("turnbudget/Sokoban-Medium-v0", "turnbudget/Shop-Medium-v0", "turnbudget/Maze-Medium-v0")


def play(env_id: str, copied: bool, episodes: int) -> tuple[int, float]:
    """(steps played, CPU seconds) of random steps on a bare game, deep-copied once first or not."""
    game = gym.make(env_id).unwrapped
    game.reset(seed=0)
    if copied:
        copy.deepcopy(game)
    rng = np.random.default_rng(0)
    steps, start = 0, time.process_time()
    for episode in range(episodes):
        _, info = game.reset(seed=episode)
        for _ in range(64):
            commands = info["admissible_actions"] or ["look"]
            _, _, terminated, _, info = game.step(commands[int(rng.integers(len(commands)))])
            steps += 1
            if terminated:
                break
    return steps, time.process_time() - start


def _count(env_id: str, copied: bool, episodes: int) -> int:
    """Instructions callgrind counts in one process that runs `play`."""
    part = f"--count-part={env_id},{int(copied)},{episodes}"
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         __file__, part],
        env={**os.environ, "PYTHONHASHSEED": "0"}, capture_output=True, text=True,
    )  # fmt: skip
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind run failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env-ids", default=",".join(ENV_IDS), help="comma-separated ids")
    parser.add_argument("--episodes", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=5, help="CPU-time rounds")
    parser.add_argument("--instructions", action="store_true", help="count with callgrind")
    parser.add_argument("--count-part", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.count_part:  # one process of --instructions
        env_id, copied, episodes = args.count_part.split(",")
        play(env_id, copied == "1", int(episodes))
        return
    unit = "instructions" if args.instructions else f"CPU time, median of {args.rounds} rounds"
    print(f"steps after one deep copy / steps of a game never copied ({unit})")
    print("| env | steps | ratio |")
    print("|---|---|---|")
    for env_id in args.env_ids.split(","):
        steps = play(env_id, False, args.episodes)[0]
        if args.instructions:
            start_up = _count(env_id, False, 0)
            never, once = (_count(env_id, c, args.episodes) - start_up for c in (False, True))
            ratio = once / never
        else:
            ratios = []
            for round_ in range(args.rounds):  # (each side first in every other round)
                order = (False, True) if round_ % 2 == 0 else (True, False)
                seconds = {c: play(env_id, c, args.episodes)[1] for c in order}
                ratios.append(seconds[True] / seconds[False])
            ratio = statistics.median(ratios)
        print(f"| {env_id} | {steps} | {ratio:.3f}x |", flush=True)


if __name__ == "__main__":
    main()
