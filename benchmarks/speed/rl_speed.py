"""Training speed: env steps/s of MaskablePPO with 1 and 2 envs (in-process or one process each).

Runs `turnbudget.train.train_ppo` for ``--steps`` env steps per setting and reports steps/s
and the share of wall time spent inside the vector env (the games plus every
wrapper, `HistoryFeatures` included) against the learner (policy forward
passes during rollouts and the PPO updates). torch uses one thread.

``--env-side`` measures instead, without a learner, the CPU time per env step of the
16-env vector env the learner uses (every wrapper, the featurisation and SB3's copy of
the infos; a uniform-random masked policy, whose own cost is subtracted) against the
bare game's step (resets included), and prints the ratio (issue 26: goal <= 5x).
``--instructions`` gives the same ratio in instructions counted by callgrind (the same cold
``--steps`` vector steps; needs valgrind): figures a busy machine does not move.

Example::

    python benchmarks/speed/rl_speed.py --steps 8192
    python benchmarks/speed/rl_speed.py --env-side --steps 400
    python benchmarks/speed/rl_speed.py --instructions --steps 200
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from turnbudget.train import TrainConfig, train_ppo

SETTINGS = (
    ("1 env", {"n_envs": 1, "n_steps": 1024}),
    ("2 envs, one process", {"n_envs": 2, "n_steps": 512}),
    ("2 envs, two processes", {"n_envs": 2, "n_steps": 512, "vec_env": "subproc"}),
    ("16 envs, one process (budgetmix.py)", {"n_envs": 16, "n_steps": 64}),
)
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _learner_envs(env_id: str, n_envs: int, rng: np.random.Generator) -> tuple[Any, Any]:
    """The learner's vector env of ``n_envs`` sub-envs, reset, and the random masked policy."""
    from turnbudget.train import _sb3

    config = TrainConfig(env_id=env_id, budget_mix="uniform:12-40", n_envs=n_envs)
    venv = _sb3.vec_env(config)
    venv.reset()

    def actions() -> np.ndarray:
        masks = venv.env_method("action_masks")
        return np.array([rng.choice(np.flatnonzero(mask)) for mask in masks])

    return venv, actions


def _bare_game(env_id: str, rng: np.random.Generator) -> Callable[[int], None]:
    """A function that plays ``n`` random steps of the bare game (no wrapper), resetting at its
    end and every 30 steps (about the mean budget of uniform:12-40). Its random picks are drawn
    before the loop, as the env side's policy is subtracted: a ``Generator.integers`` call a
    step (about 1.1 µs) was counted as the game's."""
    kwargs = dict(gym.registry[env_id].kwargs)
    module, _, attr = kwargs.pop("game_entry_point").partition(":")
    kwargs.pop("turn_budget")
    game = getattr(importlib.import_module(module), attr)(**kwargs)
    state = {"info": game.reset(seed=0)[1], "played": 0}

    def play(n: int) -> None:
        info, played = state["info"], state["played"]
        for pick in rng.random(n).tolist():
            played += 1
            commands = info["admissible_actions"] or ["look"]
            _, _, terminated, _, info = game.step(commands[int(pick * len(commands))])
            if terminated or played % 30 == 0:
                _, info = game.reset(seed=played)
        state["info"], state["played"] = info, played

    return play


def env_side(env_id: str, steps: int, n_envs: int = 16, slices: int = 4) -> tuple[float, float]:
    """(CPU µs per env step of the learner's vector env, of the bare game), measured in
    ``slices`` alternating slices of each so that a change of the machine's load cancels."""
    rng = np.random.default_rng(0)
    venv, actions = _learner_envs(env_id, n_envs, rng)
    play = _bare_game(env_id, rng)
    total = policy = bare = 0.0
    for i in range(slices):
        chunk = steps // slices + (i < steps % slices)
        start = time.process_time()
        for _ in range(chunk):
            venv.step(actions())
        total += time.process_time() - start
        start = time.process_time()
        for _ in range(chunk):
            actions()
        policy += time.process_time() - start
        start = time.process_time()
        play(chunk * n_envs)
        bare += time.process_time() - start
    venv.close()
    per_step = steps * n_envs / 1e6
    return (total - policy) / per_step, bare / per_step


# One BLAS thread: OpenBLAS's idle threads spin, and callgrind counts their spinning.
_COUNTING_ENV = {"PYTHONHASHSEED": "0", **dict.fromkeys(_BLAS_THREADS, "1")}


def _run_part(part: str, env_id: str, steps: int, n_envs: int = 16) -> None:
    """One part of the env side, cold, for ``steps`` vector steps: the vector env stepped by the
    policy (``envs``), the policy alone (``policy``) or the bare game (``bare``, ``n_envs``
    steps each)."""
    rng = np.random.default_rng(0)
    venv, actions = _learner_envs(env_id, n_envs, rng)
    play = _bare_game(env_id, rng)
    for _ in range(steps if part != "bare" else 0):
        if part == "envs":
            venv.step(actions())
        else:
            actions()
    if part == "bare":
        play(steps * n_envs)
    venv.close()


def _count(part: str, env_id: str, steps: int) -> int:
    """Instructions callgrind counts in one process running ``part`` for ``steps`` steps."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         __file__, f"--env-id={env_id}", f"--steps={steps}", f"--count-part={part}"],
        env={**os.environ, **_COUNTING_ENV}, capture_output=True, text=True,
    )  # fmt: skip
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind run of {part} failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def env_side_instructions(
    env_id: str, steps: int, n_envs: int = 16
) -> tuple[float, float, dict[str, int]]:
    """(instructions per env step of the learner's vector env, of the bare game, and each
    process's count): each part's count for ``steps`` cold vector steps minus its count for
    none (start-up and imports cancel), the policy's subtracted from the vector env's. Six
    processes under callgrind, two at a time (the bytecode is written first by an uncounted
    run); about 15 minutes on 2 idle cores."""
    _run_part("policy", env_id, 0, n_envs)  # writes the bytecode, which a counted run would not
    runs = [(part, n) for part in ("envs", "policy", "bare") for n in (0, steps)]
    with ThreadPoolExecutor(2) as pool:
        counts = dict(zip(runs, pool.map(lambda run: _count(run[0], env_id, run[1]), runs)))

    def counted(part: str) -> int:
        return counts[part, steps] - counts[part, 0]

    per_step = steps * n_envs
    parts = {f"{part} x {n}": count for (part, n), count in counts.items()}
    return (counted("envs") - counted("policy")) / per_step, counted("bare") / per_step, parts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8192, help="env steps per setting")
    parser.add_argument("--env-id", default="turnbudget/Maze-Easy-v0")
    parser.add_argument("--env-side", action="store_true", help="env side vs bare game only")
    parser.add_argument(
        "--instructions", action="store_true", help="--env-side in callgrind's instructions"
    )
    parser.add_argument("--count-part", choices=("envs", "policy", "bare"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.count_part:  # one process of --instructions
        _run_part(args.count_part, args.env_id, args.steps)
        return
    if args.instructions:
        env_ins, bare_ins, parts = env_side_instructions(args.env_id, args.steps)
        print("instructions:", ", ".join(f"{part} {count:,}" for part, count in parts.items()))
        print(
            f"{args.env_id}: env side {env_ins:,.0f} instructions/step, bare game "
            f"{bare_ins:,.0f} instructions/step, ratio {env_ins / bare_ins:.2f}x"
        )
        return
    if args.env_side:
        env_us, bare_us = env_side(args.env_id, args.steps)
        print(
            f"{args.env_id}: env side {env_us:.1f} µs/step, bare game {bare_us:.1f} µs/step,"
            f" ratio {env_us / bare_us:.1f}x"
        )
        return
    print(f"{args.env_id}, {args.steps} steps per setting, rollout 1024 steps, batch 256, 4 epochs")
    print("| setting | env steps/s | share of wall time in envs + wrappers | learner share |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, kwargs) in enumerate(SETTINGS):
            config = TrainConfig(
                env_id=args.env_id,
                out=str(Path(tmp) / f"run{i}"),  # (one each: an out holding another is refused)
                total_steps=args.steps,
                log="none",
                budget_mix="uniform:12-40",
                **kwargs,
            )
            summary = train_ppo(config)
            share, speed = summary["env_share"], summary["steps_per_s"]
            print(f"| {name} | {speed:,.0f} | {share:.0%} | {1 - share:.0%} |", flush=True)
    print("(with subprocess envs the env share is the parent's wait on its workers)")


if __name__ == "__main__":
    main()
