"""The uniform-random agent every throughput benchmark times (imported by the scripts here)."""

from __future__ import annotations

import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np

__all__ = ["rollout"]


def rollout(
    env: gym.Env,
    seconds: float,
    seed: int,
    cap: int,
    per_step: Callable[[], object] | None = None,
) -> tuple[float, float]:
    """(steps per wall second, steps per CPU second) of a uniform-random agent.

    The agent picks from ``info["admissible_actions"]`` with pre-drawn numbers,
    so its own cost is the same everywhere. Episodes end at ``cap`` turns even
    without a budget wrapper, so bare and wrapped envs pay for the same resets.
    ``per_step`` (e.g. an oracle query) is called after every step.
    """
    draws = np.random.default_rng(seed).random(1 << 16)
    _, info = env.reset(seed=seed)
    steps = episode = turn = 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    deadline = wall0 + seconds
    while True:
        for _ in range(500):
            actions = info["admissible_actions"] or ["look"]
            _, _, terminated, truncated, info = env.step(
                actions[int(draws[steps & 0xFFFF] * len(actions))]
            )
            if per_step is not None:
                per_step()
            steps += 1
            turn += 1
            if terminated or truncated or turn >= cap:
                episode, turn = episode + 1, 0
                _, info = env.reset(seed=seed + episode)
        if time.perf_counter() >= deadline:
            return steps / (time.perf_counter() - wall0), steps / (time.process_time() - cpu0)
