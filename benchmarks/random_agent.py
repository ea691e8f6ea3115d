"""The uniform-random agent every throughput benchmark times (imported by the scripts here)."""

from __future__ import annotations

import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np

__all__ = ["rollout", "rollout_split"]


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


def rollout_split(env: gym.Env, seconds: float, seed: int, cap: int) -> tuple[float, float]:
    """(all-in, step-only) steps per wall second of the same uniform-random agent.

    All-in counts every second, resets included; step-only counts only the time spent
    inside ``step()``. Their ratio is the share of time a rollout spends stepping: 0.5
    means resets cost as much as the steps of the episodes they start.
    """
    draws = np.random.default_rng(seed).random(1 << 16)
    _, info = env.reset(seed=seed)
    steps = episode = turn = 0
    step_time = 0.0
    clock = time.perf_counter
    start = clock()
    deadline = start + seconds
    while True:
        for _ in range(20):  # some resets are slow (Sokoban-Hard): check the clock often
            actions = info["admissible_actions"] or ["look"]
            action = actions[int(draws[steps & 0xFFFF] * len(actions))]
            t = clock()
            _, _, terminated, truncated, info = env.step(action)
            step_time += clock() - t
            steps += 1
            turn += 1
            if terminated or truncated or turn >= cap:
                episode, turn = episode + 1, 0
                _, info = env.reset(seed=seed + episode)
        if clock() >= deadline:
            return steps / (clock() - start), steps / step_time
