"""The uniform-random agent every throughput benchmark times (imported by the scripts here)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

import gymnasium as gym
import numpy as np

__all__ = ["Split", "cpu_per_step", "rollout", "rollout_split"]


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
    draws = np.random.default_rng(seed).random(1 << 16).tolist()  # floats: no numpy scalars
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


class Split(NamedTuple):
    """One `rollout_split` measurement."""

    all_in: float
    """steps per wall second, resets included"""
    step_only: float
    """steps per second spent inside ``step()``"""
    reset_us: float
    """mean wall time of one ``reset()``"""
    episode_step_us: float
    """mean wall time of one episode's steps (what a reset is compared with)"""

    @property
    def ratio(self) -> float:
        return self.all_in / self.step_only


def rollout_split(env: gym.Env, seconds: float, seed: int, cap: int) -> Split:
    """All-in and step-only steps per wall second of the same uniform-random agent, and
    what a reset and an episode's steps cost.

    All-in counts every second, resets included; step-only counts only the time spent
    inside ``step()``. Their ratio is the share of time a rollout spends stepping: 0.5
    means resets (and the agent's own few list lookups) cost as much as the steps of the
    episodes they start. It runs for ``seconds`` and at least to the end of its first
    episode, so that a reset is measured however short the window.
    """
    draws = np.random.default_rng(seed).random(1 << 16).tolist()  # floats: no numpy scalars
    _, info = env.reset(seed=seed)
    steps = episode = turn = 0
    step_time = reset_time = 0.0
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
                t = clock()
                _, info = env.reset(seed=seed + episode)
                reset_time += clock() - t
        # At least one whole episode, so a reset's and an episode's cost are measured
        # however slow the machine (a busy one once finished none in 0.02 s).
        if clock() >= deadline and episode:
            return Split(
                steps / (clock() - start),
                steps / step_time,
                reset_time / episode * 1e6,
                step_time / episode * 1e6,
            )


def cpu_per_step(env: gym.Env, seconds: float, seed: int, cap: int) -> float:
    """CPU seconds per ``step()`` of the same uniform-random agent, resets left out.

    The agent plays episodes for half of ``seconds``; then they are replayed (same seeds,
    same commands: the same states), reading this process's CPU time once per episode
    around nothing but the ``step()`` calls. The time other jobs take from this one on a
    busy machine does not count, nor does the agent's own work.
    """
    draws = np.random.default_rng(seed).random(1 << 16).tolist()
    episodes: list[list[str]] = []
    steps = 0
    deadline = time.perf_counter() + seconds / 2
    while time.perf_counter() < deadline or not episodes:
        _, info = env.reset(seed=seed + len(episodes))
        played: list[str] = []
        for _ in range(cap):
            actions = info["admissible_actions"] or ["look"]
            played.append(actions[int(draws[steps & 0xFFFF] * len(actions))])
            steps += 1
            _, _, terminated, truncated, info = env.step(played[-1])
            if terminated or truncated:
                break
        episodes.append(played)
    spent = 0.0
    clock = time.process_time
    for episode, played in enumerate(episodes):
        env.reset(seed=seed + episode)
        step = env.step
        start = clock()
        for action in played:
            step(action)
        spent += clock() - start
    return spent / steps
