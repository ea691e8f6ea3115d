"""Probe planning: the configuration, and the probe states every agent is put in.

`plan_probes` turns a `ProbeConfig` into `ProbeSpec` records, a pure function
of (env id, task seed, prefix, seed): a seeded optimal plan per task, the
prefix lengths, for each error kind the first error (in a seeded order) that
raises the distance at that prefix and leaves an on-track state as far from
the goal earlier on the plan (the matched control), and the budgets.
`TaskStarts` hands out envs at a task's start: one reset per task, then cheap
copies, each closed by whoever took it (`TaskStarts.release`). `state_signature` says whether a command changed the state. See
`turnbudget.eval.probes.run` for what the probes measure.
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from turnbudget._checks import (
    MAX_TURN_BUDGET,
    brief,
    check_label,
    check_seed,
    is_finite,
    is_int,
    make_failure,
)
from turnbudget.envs.core import oracle_distance
from turnbudget.eval.run.agent_view import GRANTS
from turnbudget.eval.run.episodes import check_text_observation
from turnbudget.eval.run.plan import derive_seed
from turnbudget.wrappers._common import find_wrapper
from turnbudget.wrappers.turn_budget import TurnBudget

__all__ = [
    "MAX_BUDGET_FACTOR",
    "MAX_BUDGET_SLACK",
    "PROBE_KINDS",
    "ProbeConfig",
    "ProbeSpec",
    "TaskStarts",
    "plan_probes",
    "probe_budget",
    "state_signature",
]

#: The error kinds a recovery probe can inject (a transient error never raises the distance).
PROBE_KINDS = ("slip", "setback")
_SETBACK_TRIES = 8  # setback draws tried until one raises the distance
#: The largest ``budget_factor``: a probe's budget ``ceil(budget_factor * d) + budget_slack``
#: must be a turn budget (at most `MAX_TURN_BUDGET`) for every plan a game can have.
MAX_BUDGET_FACTOR = 1000.0
#: The largest ``budget_slack`` (turns added to every probe's budget).
MAX_BUDGET_SLACK = 1_000_000
#: The most probes per state (``repeats``, ``baseline_repeats``): a typo such as 10**20 is
#: refused, not planned until the memory runs out.
MAX_REPEATS = 10_000


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
    #: label -> what its agent is shown beyond a player's view, by its own flags
    #: (``needs_oracle``, ``budget_aware``): only the agents that declare any.
    grants: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Refuse settings no probe can run with: budgets must be turn budgets, seeds seeds."""
        factor = self.budget_factor
        if not is_finite(factor) or not 1.0 <= factor <= MAX_BUDGET_FACTOR:
            raise ValueError(
                f"Expect `budget_factor` to be a number from 1 to {MAX_BUDGET_FACTOR:g}, "
                f"got {brief(factor)}"
            )
        for name, value, low, high in (
            ("budget_slack", self.budget_slack, 0, MAX_BUDGET_SLACK),
            ("repeats", self.repeats, 1, MAX_REPEATS),
            ("baseline_repeats", self.baseline_repeats, 1, MAX_REPEATS),
        ):
            if not is_int(value) or value < low or (high is not None and value > high):
                most = "" if high is None else f" and at most {high:,}"
                raise ValueError(f"Expect `{name}` to be an int >= {low}{most}, got {brief(value)}")
        check_seed(self.seed)
        for label in self.labels:
            check_label(label, subject="every label of the agents probed")
        grants = self.grants
        if not (
            isinstance(grants, dict) and set(grants) <= set(self.labels)
            and all(isinstance(g, list) and set(g) <= set(GRANTS) for g in grants.values())
        ):  # fmt: skip
            raise ValueError(
                f"Expect `grants` to map labels of the agents probed to flags of {list(GRANTS)}, "
                f"got {brief(grants)}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


@dataclass(frozen=True)
class ProbeSpec:
    """One probe state: a task, a prefix of its plan, and (for recovery) the error to inject.

    ``probe`` is ``"single"``, ``"recovery"`` or ``"control"``. ``start`` is
    the number of plan commands forced before the agent plays: ``prefix`` for
    single-step and recovery probes, and for the control the earlier point of
    the plan as far from the goal as the recovery probe's state after the
    error (``len(plan) - distance_after``). ``budget`` is the turns the agent
    is given (its ``turns_left`` at its first call): for a single-step probe
    what a real episode of `probe_budget` (plan length) turns would have left
    after the prefix; for recovery and control probes B = `probe_budget`
    (distance after the error), counted after the error's turn. ``error`` is
    the slip's command or the seed of the setback's generator; ``applied`` is
    False when no error there raises the distance and keeps a matched control
    (the pair is then skipped and reported). ``n_changing`` counts the
    admissible commands that change the state (chance's denominator).
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
    n_changing: int = 0
    start: int = 0

    @property
    def key(self) -> tuple[str, int, int, str, str]:
        return (self.env_id, self.task_seed, self.prefix, self.probe, self.kind or "")


def _make_env(env_id: str, setbacks: bool = True) -> Any:
    import gymnasium as gym

    from turnbudget.wrappers.stack import NoTurnBudgetError, drop_checks, make

    try:
        env = drop_checks(make(env_id))  # copied for every probe: no layer a copy re-checks
    except gym.error.Error as exc:
        from turnbudget.eval.run.episodes import namespace_hint

        raise ValueError(
            f"Cannot make {brief(env_id)}: {make_failure(exc, env_id in gym.registry)}"
            f"{namespace_hint(env_id)} (`turnbudget list` shows the registered ids)"
        ) from exc
    except NoTurnBudgetError as exc:  # (its advice, `turn_budget`, is no probe's argument)
        raise exc.for_engines() from None
    game = env.unwrapped
    needed = ("optimal_actions", "distance_to_goal", *(("inject_setback",) if setbacks else ()))
    missing = [m for m in needed if not callable(getattr(game, m, None))]
    if missing:
        env.close()
        raise ValueError(f"Probes need the oracle methods {missing} on {type(game).__name__}")
    return env


def probe_budget(distance: int, config: ProbeConfig) -> int:
    """The turns a probe gives for ``distance`` left: ``ceil(budget_factor * d) + budget_slack``
    (never below the distance, as ``budget_factor >= 1``).

    Example:
        >>> probe_budget(10, ProbeConfig((), (), (), ()))
        17
        >>> probe_budget(50, ProbeConfig((), (), (), (), budget_factor=1.1, budget_slack=0))
        55
    """
    # (rounded first: 1.1 * 50 is 55.000000000000007 in binary, whose ceiling is 56)
    budget = math.ceil(round(config.budget_factor * distance, 9)) + config.budget_slack
    if budget > MAX_TURN_BUDGET:
        raise ValueError(
            f"Expect `budget_factor` and `budget_slack` to give turn budgets of at most "
            f"{MAX_TURN_BUDGET:,}: ceil({config.budget_factor:g} * {distance}) + "
            f"{config.budget_slack} = {budget:,}"
        )
    return budget


def state_signature(game: Any, observation: str) -> tuple[Any, ...]:
    """What a command must change for it to count as changing the state: the game's own
    ``state_key()`` when it gives one (TextWorld: its logic state's facts), else the
    description of what the player perceives (a native game's own; else the observation's
    last paragraph), and the admissible commands and the distance to the goal.

    A valid command that leaves it the same (``look``, ``inventory``, choosing
    again what was chosen) is a no-op: a turn spent, nothing lost or gained.
    """
    key = getattr(game, "state_key", None)
    text = key() if callable(key) else None
    if text is None:
        world = getattr(game, "world", None)
        text = world().describe() if callable(world) else observation.rsplit("\n\n", 1)[-1]
    admissible = getattr(game, "admissible_actions", None)
    commands = tuple(admissible()) if callable(admissible) else ()
    return text, commands, oracle_distance(game)


#: The most tasks whose start `TaskStarts` keeps (probes run task after task: each is
#: reset again at most once per agent).
MAX_TASK_STARTS = 16


class TaskStarts:
    """Envs at the start of a task: one reset per (env id, task), then cheap copies.

    Native games copy in a fraction of a reset's time (world generation and the
    oracle's tables are shared by the copies). What is copied is the game (what
    lies under the env's `TurnBudget`), and a new `TurnBudget` goes on the copy:
    never the whole wrapper stack. A game that cannot be copied (one holding an
    external process) is reset each time instead. Every env `fresh` hands out
    goes back through `release` (a copy is closed, so a TextWorld copy's
    interpreter process ends with it); `close` closes the rest. At most
    `MAX_TASK_STARTS` tasks' starts are kept, the least recently used closed first (a
    TextWorld start holds an interpreter process: one per task ran out of file handles).
    """

    def __init__(self, setbacks: bool = True) -> None:
        self._setbacks = setbacks  # (whether the games must have `inject_setback`)
        self._base: OrderedDict[tuple[str, int], tuple[Any, str, dict[str, Any]] | None] = (
            OrderedDict()
        )
        self._spare: dict[tuple[str, int], Any] = {}  # reset-each-time envs, per slot

    def fresh(
        self, env_id: str, task_seed: int, budget: int, slot: int = 0
    ) -> tuple[Any, str, dict[str, Any]]:
        """A new env at the start of the task, with a turn budget of ``budget`` (give it
        back with `release`)."""
        key = (env_id, task_seed)
        if key in self._base:
            self._base.move_to_end(key)
        else:
            while len(self._base) >= MAX_TASK_STARTS:
                _, oldest = self._base.popitem(last=False)
                if oldest is not None:
                    oldest[0].close()
            env = _make_env(env_id, self._setbacks)
            obs, info = env.reset(seed=task_seed)
            check_text_observation(obs, env_id)
            try:
                _copy(env, 1).close()
                self._base[key] = (env, obs, info)
            except Exception:  # not copyable: reset a spare env every time
                env.close()
                self._base[key] = None
        base = self._base[key]
        if base is None:
            if (env_id, slot) not in self._spare:
                self._spare[(env_id, slot)] = _make_env(env_id, self._setbacks)
            env = self._spare[(env_id, slot)]
            obs, info = env.reset(seed=task_seed, options={"turn_budget": budget})
            return env, obs, info
        env, obs, info = base
        return _copy(env, budget), obs, {**info, "turn_budget": budget, "turns_left": budget}

    def release(self, env: Any) -> None:
        """Give back an env `fresh` handed out: a copy is closed, a spare kept for the next."""
        if not any(env is spare for spare in self._spare.values()):
            env.close()

    @contextlib.contextmanager
    def at(
        self, env_id: str, task_seed: int, actions: Sequence[str], budget: int
    ) -> Iterator[tuple[Any, str]]:
        """A new env after playing ``actions`` from the start of the task, and its observation,
        for the ``with`` block (released when it ends)."""
        env, obs, _ = self.fresh(env_id, task_seed, budget)
        try:
            for action in actions:
                obs = env.step(action)[0]
            yield env, obs
        finally:
            self.release(env)

    def close(self) -> None:
        """Close every env, each one even when one before it raised (a TextWorld env's
        interpreter process ends with it); then raise the first error."""
        envs = [entry[0] for entry in self._base.values() if entry is not None]
        envs += self._spare.values()
        self._base.clear()
        self._spare.clear()
        first: Exception | None = None
        for env in envs:
            try:
                env.close()
            except Exception as exc:  # (the others still hold their processes)
                first = first or exc
        if first is not None:
            raise first


def _copy(env: Any, budget: int) -> Any:
    """A copy of ``env`` (just reset) with ``budget`` turns: a new `TurnBudget` on a copy of
    what is under its own, or, when that is not the outermost layer, a copy of the stack."""
    if isinstance(env, TurnBudget):
        return TurnBudget(copy.deepcopy(env.env), budget)
    env = copy.deepcopy(env)
    find_wrapper(env, TurnBudget).turn_budget = budget
    return env


def _optimal_plan(env: Any, task_seed: int, seed: int) -> tuple[str, ...]:
    """A shortest plan, each step drawn among the optimal actions with a seeded generator."""
    game = env.unwrapped
    rng = np.random.default_rng(derive_seed(seed, "plan", task_seed))
    plan: list[str] = []
    length = oracle_distance(game)
    if length is None:
        return ()
    for _ in range(int(length)):
        options = sorted(game.optimal_actions())
        if not options:
            break
        before = oracle_distance(game)
        plan.append(options[int(rng.integers(len(options)))])
        _, _, _, _, info = env.step(plan[-1])
        after = oracle_distance(game)
        # Every probe's state is a prefix of this plan: an oracle that lists a command the
        # game refuses, or one that does not bring the distance down by one, would put
        # every probe somewhere other than where its record says.
        if info.get("valid_action") is False or None in (before, after) or after != before - 1:
            raise ValueError(
                f"{type(game).__name__}'s oracle listed {brief(plan[-1])} as optimal, but "
                f"the game {'refused it' if info.get('valid_action') is False else 'took it'}"
                f" and the distance went {before} -> {after} (task {task_seed}): "
                f"optimal_actions() must list admissible commands that each bring "
                f"distance_to_goal() down by one"
            )
    return tuple(plan)


def _raises(game: Any, before: int, limit: int) -> int | None:
    after = oracle_distance(game)
    return int(after) if after is not None and before < after <= limit else None


def _plan_task(
    starts: TaskStarts, env_id: str, task_seed: int, config: ProbeConfig
) -> list[ProbeSpec]:
    with starts.at(env_id, task_seed, (), 10**6) as (env, _):
        plan = _optimal_plan(env, task_seed, config.seed)
    if not plan:
        return []
    length = len(plan)
    prefixes = sorted({min(round(f * length), length - 1) for f in config.prefixes})
    # A matched control needs an on-track state after one plan command at least as far from
    # the goal as the state after the error: errors strike after two commands at the earliest.
    error_prefixes = sorted({min(max(2, t0), length - 1) for t0 in prefixes}) if length > 2 else []
    specs = []
    big = length * 8 + 64

    def at_prefix(t0: int) -> Any:
        return starts.at(env_id, task_seed, plan[:t0], big)

    for t0 in sorted({*prefixes, *error_prefixes}):
        with at_prefix(t0) as (env, obs):
            game = env.unwrapped
            d0 = int(oracle_distance(game))
            optimal = set(game.optimal_actions())
            admissible = (
                list(game.admissible_actions()) if hasattr(game, "admissible_actions") else []
            )
            changing = _changing(env, obs, admissible) if t0 in prefixes else 0
        common = dict(env_id=env_id, task_seed=task_seed, plan=plan, prefix=t0, distance_before=d0)
        if t0 in prefixes:
            specs.append(
                ProbeSpec(
                    **common,
                    probe="single",
                    budget=probe_budget(length, config) - t0,
                    n_admissible=len(admissible),
                    n_optimal=sum(a in optimal for a in admissible),
                    n_changing=changing,
                    start=t0,
                )
            )
        if t0 not in error_prefixes:
            continue
        for kind in config.kinds:
            # The control starts after one plan command at least, as the recovery probe does:
            # both are mid-episode (an agent that does something on turn 1 does it in neither).
            error, d1 = _find_error(
                lambda t0=t0: at_prefix(t0), task_seed, t0, kind, config, admissible, optimal,
                d0, length - 1,
            )  # fmt: skip
            budget = probe_budget(d1, config) if d1 is not None else 1
            for name, begin in (("recovery", t0), ("control", length - (d1 or length))):
                specs.append(
                    ProbeSpec(
                        **common,
                        probe=name,
                        kind=kind,
                        distance_after=d1,
                        budget=budget,
                        error=error,
                        applied=d1 is not None,
                        start=begin,
                    )
                )
    return specs


def _changing(env: Any, obs: str, admissible: list[str]) -> int:
    """How many admissible commands change the state (`state_signature`), each tried on a copy
    of the game (a game that cannot be copied counts every command as changing it)."""
    game = env.unwrapped
    before = state_signature(game, obs)
    changing = 0
    for command in admissible:
        try:
            trial = copy.deepcopy(game)
        except Exception:
            return len(admissible)
        try:
            after = trial.step(command)[0]
            changing += state_signature(trial, after) != before
        finally:
            trial.close()
    return changing


def _find_error(
    at_prefix: Any,
    task_seed: int,
    t0: int,
    kind: str,
    config: ProbeConfig,
    admissible: list[str],
    optimal: set[str],
    d0: int,
    limit: int,
) -> tuple[str | int | None, int | None]:
    """The first error of ``kind`` (in a seeded order) that raises the distance from ``d0`` to
    at most ``limit`` (so that an on-track state of the plan is as far from the goal).
    ``at_prefix()`` is a ``with`` block's env at the prefix (`TaskStarts.at`)."""
    if kind == "setback":
        for attempt in range(_SETBACK_TRIES):
            draw = derive_seed(config.seed, "setback", task_seed, t0, attempt)
            with at_prefix() as (env, _):
                env.unwrapped.inject_setback(np.random.default_rng(draw))
                d1 = _raises(env.unwrapped, d0, limit)
            if d1 is not None:
                return draw, d1
        return None, None
    candidates = [a for a in admissible if a not in optimal]
    rng = np.random.default_rng(derive_seed(config.seed, "slip", task_seed, t0))
    for index in rng.permutation(len(candidates)):
        with at_prefix() as (env, _):
            _, _, terminated, _, _ = env.step(candidates[index])
            d1 = _raises(env.unwrapped, d0, limit)
        if not terminated and d1 is not None:
            return candidates[index], d1
    return None, None


def plan_probes(config: ProbeConfig, starts: TaskStarts | None = None) -> list[ProbeSpec]:
    """Every probe of the configuration, in a fixed order (the same for every agent)."""
    own = starts is None
    starts = starts or TaskStarts("setback" in config.kinds)
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
