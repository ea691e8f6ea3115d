"""Probe planning: the configuration, and the probe states every agent is put in.

`plan_probes` turns a `ProbeConfig` into `ProbeSpec` records, a pure function
of (env id, task seed, prefix, seed): a seeded optimal plan per task, the
prefix lengths, and for each error kind the first error (in a seeded order)
that raises the distance at that prefix, with its recovery budget. `TaskStarts`
hands out envs at a task's start: one reset per task, then cheap copies.
See `turnbudget.eval.probes.run` for what the probes measure.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from turnbudget.eval.run.plan import derive_seed
from turnbudget.wrappers._common import find_wrapper
from turnbudget.wrappers.turn_budget import TurnBudget

__all__ = ["PROBE_KINDS", "ProbeConfig", "ProbeSpec", "TaskStarts", "plan_probes"]

#: The error kinds a recovery probe can inject (a transient error never raises the distance).
PROBE_KINDS = ("slip", "setback")
_SETBACK_TRIES = 8  # setback draws tried until one raises the distance


@dataclass(frozen=True)
class ProbeConfig:
    """Everything that determines a probe run's results (JSON-serialisable)."""

    labels: tuple[str, ...]  # one per agent probed
    envs: tuple[str, ...]
    agents: tuple[str, ...]  # their reprs
    tasks: tuple[int, ...]
    prefixes: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75)
    kinds: tuple[str, ...] = PROBE_KINDS
    budget_factor: float = 1.5
    budget_slack: int = 2
    repeats: int = 1
    baseline_repeats: int = 4
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


@dataclass(frozen=True)
class ProbeSpec:
    """One probe state: a task, a prefix of its plan, and (for recovery) the error to inject.

    ``probe`` is ``"single"``, ``"recovery"`` or ``"control"``. For recovery
    and control probes ``budget`` is B; ``error`` is the slip's command or the
    seed of the setback's generator; ``applied`` is False when no error raising the
    distance exists there (the probe is then skipped and reported).
    """

    env_id: str
    task_seed: int
    plan: tuple[str, ...]
    prefix: int
    probe: str
    kind: str | None = None
    distance_before: int | None = None
    distance_after: int | None = None
    budget: int = 1
    error: str | int | None = None
    applied: bool = True
    n_admissible: int = 0
    n_optimal: int = 0

    @property
    def key(self) -> tuple[str, int, int, str, str]:
        return (self.env_id, self.task_seed, self.prefix, self.probe, self.kind or "")


def _make_env(env_id: str) -> Any:
    import gymnasium as gym

    from turnbudget.wrappers.stack import make

    try:
        env = make(env_id)
    except gym.error.Error as exc:
        raise ValueError(
            f"Cannot make {env_id!r}: {exc} (`turnbudget list` shows the registered ids)"
        ) from exc
    game = env.unwrapped
    missing = [
        m for m in ("optimal_actions", "distance_to_goal", "inject_setback")
        if not callable(getattr(game, m, None))
    ]  # fmt: skip
    if missing:
        env.close()
        raise ValueError(f"Probes need the oracle methods {missing} on {type(game).__name__}")
    return env


class TaskStarts:
    """Envs at the start of a task: one reset per (env id, task), then cheap copies.

    Native games copy in a fraction of a reset's time (world generation and the
    oracle's tables are shared by the copies). A game that cannot be copied
    (one holding an external process) is reset each time instead.
    """

    def __init__(self) -> None:
        self._base: dict[tuple[str, int], tuple[Any, str, dict[str, Any]] | None] = {}
        self._spare: dict[tuple[str, int], Any] = {}  # reset-each-time envs, per slot

    def fresh(
        self, env_id: str, task_seed: int, budget: int, slot: int = 0
    ) -> tuple[Any, str, dict[str, Any]]:
        """A new env at the start of the task, with a turn budget of ``budget``."""
        key = (env_id, task_seed)
        if key not in self._base:
            env = _make_env(env_id)
            obs, info = env.reset(seed=task_seed)
            try:
                copy.deepcopy(env).close()
                self._base[key] = (env, obs, info)
            except Exception:  # not copyable: reset a spare env every time
                env.close()
                self._base[key] = None
        base = self._base[key]
        if base is None:
            if (env_id, slot) not in self._spare:
                self._spare[(env_id, slot)] = _make_env(env_id)
            env = self._spare[(env_id, slot)]
            obs, info = env.reset(seed=task_seed, options={"turn_budget": budget})
            return env, obs, info
        env, obs, info = base
        env = copy.deepcopy(env)
        find_wrapper(env, TurnBudget).turn_budget = budget
        return env, obs, {**info, "turn_budget": budget, "turns_left": budget}

    def at(self, env_id: str, task_seed: int, actions: Sequence[str], budget: int) -> Any:
        """A new env after playing ``actions`` from the start of the task."""
        env, _, _ = self.fresh(env_id, task_seed, budget)
        for action in actions:
            env.step(action)
        return env

    def close(self) -> None:
        for entry in self._base.values():
            if entry is not None:
                entry[0].close()
        for env in self._spare.values():
            env.close()
        self._base.clear()
        self._spare.clear()


def _optimal_plan(env: Any, task_seed: int, seed: int) -> tuple[str, ...]:
    """A shortest plan, each step drawn among the optimal actions with a seeded generator."""
    game = env.unwrapped
    rng = np.random.default_rng(derive_seed(seed, "plan", task_seed))
    plan: list[str] = []
    length = game.distance_to_goal()
    if length is None:
        return ()
    for _ in range(int(length)):
        options = sorted(game.optimal_actions())
        if not options:
            break
        plan.append(options[int(rng.integers(len(options)))])
        env.step(plan[-1])
    return tuple(plan)


def _raises(game: Any, before: int) -> int | None:
    after = game.distance_to_goal()
    return int(after) if after is not None and after > before else None


def _plan_task(
    starts: TaskStarts, env_id: str, task_seed: int, config: ProbeConfig
) -> list[ProbeSpec]:
    plan = _optimal_plan(starts.at(env_id, task_seed, (), 10**6), task_seed, config.seed)
    if not plan:
        return []
    prefixes = sorted({min(round(f * len(plan)), len(plan) - 1) for f in config.prefixes})
    specs = []
    big = len(plan) * 8 + 64
    for t0 in prefixes:

        def at_prefix(t0: int = t0) -> Any:
            return starts.at(env_id, task_seed, plan[:t0], big)

        game = at_prefix().unwrapped
        d0 = int(game.distance_to_goal())
        optimal = set(game.optimal_actions())
        admissible = list(game.admissible_actions()) if hasattr(game, "admissible_actions") else []
        common = dict(env_id=env_id, task_seed=task_seed, plan=plan, prefix=t0, distance_before=d0)
        specs.append(
            ProbeSpec(
                **common,
                probe="single",
                n_admissible=len(admissible),
                n_optimal=sum(a in optimal for a in admissible),
            )
        )
        for kind in config.kinds:
            error, d1 = _find_error(at_prefix, task_seed, t0, kind, config, admissible, optimal, d0)
            budget = (
                math.ceil(config.budget_factor * d1) + config.budget_slack if d1 is not None else 1
            )
            for name in ("recovery", "control"):
                specs.append(
                    ProbeSpec(
                        **common,
                        probe=name,
                        kind=kind,
                        distance_after=d1,
                        budget=budget,
                        error=error,
                        applied=d1 is not None,
                    )
                )
    return specs


def _find_error(
    at_prefix: Any,
    task_seed: int,
    t0: int,
    kind: str,
    config: ProbeConfig,
    admissible: list[str],
    optimal: set[str],
    d0: int,
) -> tuple[str | int | None, int | None]:
    """The first error of ``kind`` (in a seeded order) that raises the distance from ``d0``."""
    if kind == "setback":
        for attempt in range(_SETBACK_TRIES):
            game = at_prefix().unwrapped
            draw = derive_seed(config.seed, "setback", task_seed, t0, attempt)
            game.inject_setback(np.random.default_rng(draw))
            d1 = _raises(game, d0)
            if d1 is not None:
                return draw, d1
        return None, None
    candidates = [a for a in admissible if a not in optimal]
    rng = np.random.default_rng(derive_seed(config.seed, "slip", task_seed, t0))
    for index in rng.permutation(len(candidates)):
        env = at_prefix()
        _, _, terminated, _, _ = env.step(candidates[index])
        d1 = _raises(env.unwrapped, d0)
        if not terminated and d1 is not None:
            return candidates[index], d1
    return None, None


def plan_probes(config: ProbeConfig, starts: TaskStarts | None = None) -> list[ProbeSpec]:
    """Every probe of the configuration, in a fixed order (the same for every agent)."""
    own = starts is None
    starts = starts or TaskStarts()
    try:
        return [
            spec
            for env_id in config.envs
            for task_seed in config.tasks
            for spec in _plan_task(starts, env_id, task_seed, config)
        ]
    finally:
        if own:
            starts.close()
