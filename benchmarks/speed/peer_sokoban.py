"""Random-agent throughput of the peers' Sokoban (GEM, TextArena), run in THEIR venv.

Not for turnbudget's venv: `throughput.py --peers-python /tmp/peers/bin/python` runs
this file with that interpreter and reads one JSON object per line from its stdout.
It imports only the standard library, numpy and the peers' packages; a peer that is
not installed is reported as skipped, never an error.

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install gem-llm textarena
    /tmp/peers/bin/python benchmarks/speed/peer_sokoban.py --seconds 2
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections.abc import Callable

DIRECTIONS = ("up", "down", "left", "right")


def timed(
    reset: Callable[[int], None], step: Callable[[str], bool], seconds: float, cap: int
) -> dict:
    """all-in (resets included) and step-only steps per second of a uniform-random agent."""
    import numpy as np

    draws = np.random.default_rng(0).integers(4, size=1 << 16).tolist()
    steps = episode = turn = 0
    step_time = 0.0
    reset(0)
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:  # some peers' resets take seconds: check every step
        t = time.perf_counter()
        done = step(DIRECTIONS[draws[steps & 0xFFFF]])
        step_time += time.perf_counter() - t
        steps += 1
        turn += 1
        if done or turn >= cap:
            episode, turn = episode + 1, 0
            reset(episode)
    return {
        "all_in": steps / (time.perf_counter() - start),
        "step_only": steps / step_time,
        "episodes": episode,
    }


def gem_rows(seconds: float, cap: int) -> list[dict]:
    import gem

    rows = []
    for env_id in ("game:Sokoban-v0-easy", "game:Sokoban-v0-hard"):
        env = gem.make(env_id)

        def step(direction: str, env=env) -> bool:
            _, _, terminated, truncated, _ = env.step(f"\\boxed{{{direction}}}")
            return terminated or truncated

        rows.append(
            {
                "env_id": f"GEM {env_id}",
                **timed(lambda s, env=env: env.reset(seed=s), step, seconds, cap),
            }
        )
    return rows


def textarena_rows(seconds: float, cap: int) -> list[dict]:
    import textarena as ta

    rows = []
    for env_id in ("Sokoban-v0", "Sokoban-v0-medium"):
        env = ta.make(env_id)

        def reset(seed: int, env=env) -> None:
            env.reset(num_players=1, seed=seed)
            env.get_observation()

        def step(direction: str, env=env) -> bool:
            done, _ = env.step(f"[{direction}]")
            if not done:
                env.get_observation()
            return done

        rows.append({"env_id": f"TextArena {env_id}", **timed(reset, step, seconds, cap)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--cap", type=int, default=64, help="turns per episode at most")
    parser.add_argument("--only", choices=("gem-llm", "textarena"), default=None)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the peers log every episode
    for name, rows in (("gem-llm", gem_rows), ("textarena", textarena_rows)):
        if args.only and name != args.only:
            continue
        try:
            results = rows(args.seconds, args.cap)
        except ImportError as error:
            results = [{"env_id": name, "skipped": f"not installed ({error})"}]
        for row in results:
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
