"""The training stack: the library's wrappers, in the order a trained policy is played back.

::

    TurnBudget (fixed T) or SampleTurnBudget (BudgetMix) -> ProcessReward (optional)
    -> RevealBudget -> DiscreteActions -> TextFeatures -> HistoryFeatures
    -> BudgetSchedule (a progressive horizon, optional) -> TaskSeeds

and `TaskWorld` just above the game, which `TaskSeeds` resets it through with each
episode's task seed.

`PolicyAgent` rebuilds the same features from text; `policy_encoding` records
how (``encoding.json``). The learner's vector env builds them for all its sub-envs at
once: there each stack ends in `TurnInputs` after `RevealBudget` instead (one layer in
place of the three; ``make_env(..., batched=True)``) and `batch_encoder`'s `BatchEncoder`
makes the vectors (`turnbudget.train.batched`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

import turnbudget
from turnbudget._checks import (
    MAX_SEED,
    brief,
    check_bool,
    check_positive_int,
    check_reset_options,
    check_seed,
    is_int,
)
from turnbudget.agents.policy import policy_encoding
from turnbudget.train.batched import TRAINING_INFO_KEYS, BatchEncoder, TurnInputs
from turnbudget.train.config import UNBOUNDED_POOL, TrainConfig, check_config
from turnbudget.wrappers.history_features import HistoryFeatures
from turnbudget.wrappers.stack import drop_checks

__all__ = [
    "TRAINING_INFO_KEYS",
    "BudgetSchedule",
    "TaskSeeds",
    "TaskWorld",
    "batch_encoder",
    "make_env",
    "training_encoding",
]


class TaskSeeds(gym.Wrapper):
    """Reset every episode with a task seed drawn from a fixed range, never below ``base``.

    SB3 seeds only the first reset; later resets would draw worlds from the
    game's own stream. Drawing an explicit seed per episode keeps training
    worlds disjoint from evaluation seeds and reproducible from ``seed``.

    The task seed goes to the game alone, through a `TaskWorld` this wrapper puts just
    above the game in ``env`` (unless ``env`` holds one). Passed down the whole stack, it
    would restart every wrapper's stream with each episode, and a task would always meet
    the same draws: with a ``pool``, one turn budget of a BudgetMix per task. The stack's
    own streams are seeded by the first reset (its seed, else ``seed``) and run on.
    """

    def __init__(self, env: gym.Env, base: int, pool: int, seed: int):
        base = check_seed(base, "base")
        if not is_int(pool) or pool < 0:
            raise ValueError(
                f"Expect `pool` to be an int >= 0 (0: {UNBOUNDED_POOL:,} seeds), got {brief(pool)}"
            )
        if base + (pool or UNBOUNDED_POOL) - 1 > MAX_SEED:
            raise ValueError(
                f"Expect the task seeds `base` + `pool` to stay at most {MAX_SEED:,}, "
                f"got base {base:,} and pool {pool:,}"
            )
        seed = check_seed(seed)
        env, self._world = _with_task_world(env)
        super().__init__(env)
        self.base, self.pool = base, int(pool)
        self._first_seed: int | None = seed  # (the first reset's, when it comes without one)
        self._rng = np.random.default_rng([seed, 0x7A5C])

    @property
    def spec(self) -> None:
        """None: `make_env` builds this stack (a `TaskWorld` spliced under the game's own
        wrappers) and no `EnvSpec` rebuilds it; one that claimed to failed Gymnasium's
        `check_env` ("TaskWorld ... cannot be recreated")."""
        return None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        check_reset_options(seed, options)
        if seed is not None:
            self._rng = np.random.default_rng([seed, 0x7A5C])
        seed, self._first_seed = seed if seed is not None else self._first_seed, None
        span = self.pool if self.pool > 0 else UNBOUNDED_POOL
        self._world.task_seed = self.base + int(self._rng.integers(span))
        try:
            return self.env.reset(seed=seed, options=options)
        finally:
            self._world.task_seed = None  # (spent, or left unspent by a reset that failed)


class TaskWorld(gym.Wrapper):
    """The layer just above the game that `TaskSeeds` resets it through: with the task seed
    set for this reset (``task_seed``), whatever seed came down the stack; a reset that
    comes from below `TaskSeeds` passes its own seed on."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.task_seed: int | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        seed = seed if self.task_seed is None else self.task_seed
        return self.env.reset(seed=seed, options=options)


def _with_task_world(env: gym.Env) -> tuple[gym.Env, TaskWorld]:
    """``env`` and its `TaskWorld`, one put just above the game (in place) if it has none."""
    from turnbudget.wrappers._common import find_wrapper

    world = find_wrapper(env, TaskWorld)
    if world is not None:
        return env, world
    if not isinstance(env, gym.Wrapper):
        world = TaskWorld(env)
        return world, world
    inner = env
    while isinstance(inner.env, gym.Wrapper):
        inner = inner.env
    world = inner.env = TaskWorld(inner.env)
    return env, world


class BudgetSchedule(gym.Wrapper):
    """A progressive horizon: the turn budget of each episode drawn from the current phase's mix.

    Phase ``i`` of ``len(phases)`` covers this env's steps ``i * steps_per_phase`` to
    ``(i + 1) * steps_per_phase - 1`` (the last phase runs on); an episode takes the
    phase in force when it starts. The draws come from a generator seeded by ``seed``,
    so a run is reproducible; the budget goes down as ``options["turn_budget"]``, which
    wins over the stack's own `TurnBudget` / `SampleTurnBudget`.

    Example:
        >>> import turnbudget
        >>> env = BudgetSchedule(turnbudget.make("turnbudget/Maze-Easy-v0"), ["3", "50"], 4, 0)
        >>> budgets = []
        >>> for _ in range(3):
        ...     _, info = env.reset(seed=0)
        ...     budgets.append(info["turn_budget"])
        ...     for _ in range(3):
        ...         _ = env.step("look")
        >>> budgets
        [3, 3, 50]
    """

    def __init__(self, env: gym.Env, phases: Sequence[str], steps_per_phase: int, seed: int):
        from turnbudget.wrappers.sample_turn_budget import BudgetMix

        super().__init__(env)
        if isinstance(phases, str) or not phases:
            raise ValueError(f"Expect `phases` to be a non-empty sequence of mixes, got {phases!r}")
        steps_per_phase = check_positive_int(steps_per_phase, "steps_per_phase")  # (not True)
        self.phases = [BudgetMix.coerce(phase) for phase in phases]
        self.steps_per_phase = steps_per_phase
        self.steps = 0
        self._rng = np.random.default_rng([seed, 0x5C4E])

    @property
    def phase(self) -> int:
        """The phase in force (0-based)."""
        return min(self.steps // self.steps_per_phase, len(self.phases) - 1)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        options = check_reset_options(seed, options)  # (checked before the phase draws)
        budget = self.phases[self.phase].sample(self._rng)
        return self.env.reset(seed=seed, options={**options, "turn_budget": budget})

    def step(self, action: Any):
        self.steps += 1
        return self.env.step(action)


def make_env(
    config: TrainConfig, index: int = 0, process_reward: bool | None = None, batched: bool = False
) -> TaskSeeds:
    """The training stack for sub-env ``index`` (the module docstring gives the order).

    ``process_reward`` overrides ``config.process_reward`` (BC's demonstrations
    need no shaping). When the learner does not bootstrap at the budget's end
    (`TrainConfig.bootstraps`), `ProcessReward`'s Φ is 0 there as at
    termination (``potential_at_truncation="zero"``), so shaping keeps the
    optimal policy of the budget-capped return. ``batched``: the stack ends in
    `TurnInputs`, whose turns `batch_encoder` makes the same vectors from.
    """
    config = check_config(config)
    if not is_int(index) or index < 0:
        raise ValueError(f"Expect `index` to be an int >= 0, got {brief(index)}")
    check_bool(batched, "batched")
    shaping = (
        config.process_reward
        if process_reward is None
        else check_bool(process_reward, "process_reward")
    )
    env: gym.Env = (
        TurnInputs(_text(config, shaping), config.max_actions)
        if batched
        else _features(config, shaping)
    )
    env_seed = _env_seed(config.seed, index)
    if config.budget_schedule:
        per_env = max(1, config.total_steps // config.n_envs)  # each sub-env's share of the steps
        phase_steps = max(1, per_env // len(config.budget_schedule))
        env = BudgetSchedule(env, config.budget_schedule, phase_steps, env_seed)
    return TaskSeeds(env, config.task_seed_base, config.task_pool, env_seed)


def _env_seed(seed: int, index: int) -> int:
    """The seed of sub-env ``index``'s budget schedule and task stream: ``seed * 1000 + index``
    for the first 1,000 (what every run so far drew: their streams stay), from a
    ``SeedSequence`` past them (sub-env 1000 + j drew sub-env j's of the run seeded seed + 1).

    Example:
        >>> _env_seed(0, 1000) != _env_seed(1, 0) == 1000
        True
    """
    if index < 1000:
        return seed * 1000 + index
    return int(np.random.SeedSequence([seed, index, 0x5EED]).generate_state(1, np.uint64)[0])


def training_encoding(config: TrainConfig, activation: str) -> dict[str, Any]:
    """The ``encoding.json`` of a policy trained with ``config`` (see `policy_encoding`)."""
    config = check_config(config)
    features = _features(config, shaping=False)  # shaping changes rewards, not features
    try:
        return policy_encoding(features, config.env_id, activation)
    finally:
        features.close()


def batch_encoder(config: TrainConfig) -> BatchEncoder:
    """The `BatchEncoder` of ``config.n_envs`` stacks of ``make_env(config, i, batched=True)``."""
    features = _features(config, shaping=False)
    try:
        return BatchEncoder(features.spec_dict(), config.n_envs)
    finally:
        features.close()


def _features(config: TrainConfig, shaping: bool) -> HistoryFeatures:
    return HistoryFeatures(
        _text(config, shaping, features=True),
        history=config.history,
        command_dim=config.command_dim,
        budget=config.reveal != "never",
    )


def _text(config: TrainConfig, shaping: bool, features: bool = False) -> gym.Env:
    """The stack up to `RevealBudget` (then `DiscreteActions` and `TextFeatures` if
    ``features``)."""
    shaping_kwargs = {
        "gamma": config.gamma,
        "scale": config.process_scale,
        "potential_at_truncation": "keep" if config.bootstraps() else "zero",
    }
    env = turnbudget.make(
        config.env_id,
        # (a `BudgetSchedule` outside sets each episode's budget)
        turn_budget=None if config.budget_mix or config.budget_schedule else config.turn_budget,
        budget_mix=config.budget_mix or None,
        process_reward=shaping_kwargs if shaping else None,
        reveal=config.reveal,
        discrete_actions=config.max_actions if features else None,
        text_features={"block_dim": config.text_dim} if features else None,
        info="text",  # HistoryFeatures and TurnInputs read the text keys
    )
    return drop_checks(env)  # learners reset before they step: the checks cost a call a step
