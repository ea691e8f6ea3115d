"""`make`: build a turn-budget experiment stack in one call, in the documented order.

`build_stack` puts the wrappers on an env that has a `TurnBudget`; every
``turnbudget/`` id runs it inside ``gym.make``, so ``gym.make(id, **options)``
and ``turnbudget.make(id, **options)`` build the same stack.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
from gymnasium.wrappers import TimeLimit

from turnbudget._checks import brief, is_int
from turnbudget.wrappers._common import find_wrapper
from turnbudget.wrappers.discrete_actions import DiscreteActions
from turnbudget.wrappers.inject_errors import InjectErrors
from turnbudget.wrappers.numeric_info import NumericInfo
from turnbudget.wrappers.process_reward import ProcessReward
from turnbudget.wrappers.record_step_outcomes import RecordStepOutcomes
from turnbudget.wrappers.reveal_budget import RevealBudget
from turnbudget.wrappers.sample_turn_budget import BudgetMix, BudgetMixLike, SampleTurnBudget
from turnbudget.wrappers.text_features import TextFeatures
from turnbudget.wrappers.turn_budget import TurnBudget, check_turn_budget

__all__ = [
    "INFO_MODES",
    "STACK_ENTRY_POINT",
    "STACK_OPTIONS",
    "STACK_ORDER",
    "absorb_time_limit",
    "build_stack",
    "check_stack_options",
    "make",
    "peel_time_limits",
]

#: The wrapper every ``turnbudget/`` id registers (see `turnbudget.registration`).
STACK_ENTRY_POINT = "turnbudget.registration:budget_stack"

#: Innermost first. Each wrapper reads what the ones inside it put in ``info``.
STACK_ORDER = (
    "TurnBudget",  # the budget as truncation (inside every registered id)
    "SampleTurnBudget",  # BudgetMix: T per episode, passed down through reset options
    "InjectErrors",  # errors fire inside the recorded turn
    "RecordStepOutcomes",  # sees the agent's command, the injected error and the raw reward
    "ProcessReward",  # shaping on top of the recorded reward
    "RevealBudget",  # the text the agent reads
    "DiscreteActions",  # classic-RL adapters last: they change the spaces
    "TextFeatures",
    "NumericInfo",  # info as fixed-shape arrays, for vector envs and replay buffers
)


def _kwargs(
    value: Any, name: str, scalar: str | None, scalar_types: tuple[type, ...] = ()
) -> dict[str, Any] | None:
    """None/False: no wrapper; True: defaults; a mapping: its keyword arguments; a scalar: ``{scalar: value}``."""
    if value is None or value is False:
        return None
    if value is True:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if scalar is not None and isinstance(value, scalar_types) and not isinstance(value, bool):
        return {scalar: value}
    raise ValueError(
        f"Unexpected `{name}`={brief(value)}: see turnbudget.make's docstring for what it accepts"
    )


#: The stack's options: keyword arguments of `make`, `build_stack` and of ``gym.make`` on any
#: ``turnbudget/`` id (``gym.make(id, discrete_actions=8, text_features=64)``).
STACK_OPTIONS = (
    "budget_mix",
    "errors",
    "record",
    "process_reward",
    "reveal",
    "discrete_actions",
    "text_features",
    "info",
    "env_index",
)
INFO_MODES = ("text", "numeric")


def check_stack_options(
    *,
    budget_mix: BudgetMixLike | None = None,
    errors: float | Mapping[str, Any] | None = None,
    record: bool
    | str
    | os.PathLike[str]
    | Callable[[dict[str, Any]], Any]
    | Mapping[str, Any]
    | None = None,
    process_reward: bool | Mapping[str, Any] | None = None,
    reveal: str | Mapping[str, Any] | None = None,
    discrete_actions: int | Mapping[str, Any] | None = None,
    text_features: bool | int | Mapping[str, Any] | None = None,
    info: str | None = None,
    env_index: int | None = None,
) -> dict[str, Any]:
    """Check the stack's options (see `make`) and return each wrapper's keyword arguments."""
    if env_index is not None and (not is_int(env_index) or env_index < 0):
        raise ValueError(f"Expect `env_index` to be an int >= 0 or None, got {brief(env_index)}")
    specs: dict[str, Any] = {
        "budget_mix": None if budget_mix is None else BudgetMix.coerce(budget_mix),
        "errors": _kwargs(errors, "errors", "rate", (int, float)),
        "process_reward": _kwargs(process_reward, "process_reward", None),
        "reveal": _kwargs(reveal, "reveal", "mode", (str,)),
        "discrete_actions": _kwargs(discrete_actions, "discrete_actions", "max_actions", (int,)),
        "text_features": _kwargs(text_features, "text_features", "dim", (int,)),
    }
    if info is None:  # numeric wherever the observation is
        info = "numeric" if specs["text_features"] is not None else "text"
    if info not in INFO_MODES:
        raise ValueError(f"Expect `info` to be one of {INFO_MODES} or None, got {brief(info)}")
    specs["info"] = info
    if record is None or record is False:
        specs["record"] = None
    elif isinstance(record, (str, os.PathLike)):
        specs["record"] = {"path": record}
    elif callable(record) and not isinstance(record, Mapping):
        specs["record"] = {"callback": record}
    else:
        specs["record"] = _kwargs(record, "record", None)
    if specs["record"] is not None and env_index is not None:
        specs["record"].setdefault("env_index", env_index)
    return specs


def build_stack(env: gym.Env, **options: Any) -> gym.Env:
    """Put the wrappers of the stack's ``options`` (see `make`) on ``env``, which has a `TurnBudget`.

    This is what every ``turnbudget/`` id runs inside ``gym.make`` (through
    `turnbudget.registration`), and what `make` runs on an env it is given.
    """
    specs = check_stack_options(**options)
    if find_wrapper(env, TurnBudget) is None:
        raise ValueError(
            "build_stack needs an env with a TurnBudget (wrap it with TurnBudget first)"
        )
    if specs["budget_mix"] is not None:
        env = SampleTurnBudget(env, budget_mix=specs["budget_mix"])
    for key, wrapper in (
        ("errors", InjectErrors),
        ("record", RecordStepOutcomes),
        ("process_reward", ProcessReward),
        ("reveal", RevealBudget),
        ("discrete_actions", DiscreteActions),
        ("text_features", TextFeatures),
    ):
        if specs[key] is not None:
            env = wrapper(env, **specs[key])
    if specs["info"] == "numeric":
        env = NumericInfo(env)
    return env


def peel_time_limits(env: gym.Env) -> tuple[gym.Env, int | None]:
    """``env`` without the ``TimeLimit`` wrappers on its outside, and the smallest of their limits."""
    limits = []
    while isinstance(env, TimeLimit):  # (Gymnasium's TimeLimit takes True for 1: refused here)
        limits.append(check_turn_budget(env._max_episode_steps, "max_episode_steps"))
        env = env.env
    return env, min(limits, default=None)


def absorb_time_limit(env: gym.Env) -> gym.Env:
    """Make the ``TimeLimit`` wrappers on the outside of ``env`` its turn budget, and drop them.

    A ``TimeLimit`` counts steps on its own, outside `TurnBudget`: it can set
    ``truncated=True`` on the very step the game ends (both flags) and leaves
    ``info["turns_left"]`` wrong. This returns ``env`` without them, its
    `TurnBudget`'s default budget set to the smallest of their limits, so one
    owner enforces one limit. ``gym.make(id, max_episode_steps=N)`` on a
    ``turnbudget/`` id does this by itself; `make` does it to an env it is given.

    Example:
        >>> import gymnasium as gym, turnbudget
        >>> env = absorb_time_limit(gym.wrappers.TimeLimit(gym.make("turnbudget/Maze-Easy-v0"), 5))
        >>> type(env).__name__, env.reset(seed=0)[1]["turn_budget"]
        ('TurnBudget', 5)
    """
    env, limit = peel_time_limits(env)
    if limit is not None:
        budget = find_wrapper(env, TurnBudget)
        if budget is None:
            raise ValueError("This env has a TimeLimit but no TurnBudget to take it over")
        budget.set_default_turn_budget(limit)
        while env is not budget:  # their cached specs still name the old budget
            env._cached_spec, env = None, env.env
    return env


def make(
    env_id: str | gym.Env,
    *,
    budget: int | None = None,
    make_kwargs: Mapping[str, Any] | None = None,
    **options: Any,
) -> gym.Env:
    """Make a registered env and stack the turn-budget wrappers on it, in `STACK_ORDER`.

    Equivalent to ``gym.make(env_id, turn_budget=budget)`` wrapped by hand in
    `SampleTurnBudget`, `InjectErrors`, `RecordStepOutcomes`, `ProcessReward`,
    `RevealBudget`, `DiscreteActions`, `TextFeatures` and `NumericInfo`,
    skipping those left at None. For a ``turnbudget/`` id it *is*
    ``gym.make(env_id, turn_budget=budget, **options)``: every option below is
    also a ``gym.make`` keyword, so string-id clients (``gym.make_vec``, SB3's
    ``make_vec_env``, TorchRL's ``GymEnv``) build the same stack. A mapping
    passes keyword arguments to its wrapper (a misspelt one raises
    ``TypeError``); the scalar shortcuts are listed below. Every configuration
    error is raised here, before any episode runs.

    Args:
        env_id: A registered id (or an env; one without a `TurnBudget` then
            needs ``budget``; a ``TimeLimit`` on its outside becomes its budget).
        budget: The default turn budget T (the id's default if None).
        make_kwargs: Extra keyword arguments for ``gym.make`` (e.g. ``render_mode``).

    Keyword Args:
        budget_mix: BudgetMix: anything `BudgetMix.coerce` accepts (``"uniform:5-40"``, ``[10, 20]``...).
        errors: An error rate (float) or `InjectErrors` keyword arguments.
        record: True (in memory), a JSONL path, a callback, or `RecordStepOutcomes` keyword arguments.
        process_reward: True or `ProcessReward` keyword arguments.
        reveal: A mode (``"always"``, ``"final=3"``, ``"never"``) or `RevealBudget` keyword arguments.
        discrete_actions: ``max_actions`` or `DiscreteActions` keyword arguments.
        text_features: True, ``dim`` or `TextFeatures` keyword arguments.
        info: ``"numeric"`` (`NumericInfo`: fixed-shape NumPy values only, for
            vector envs and replay buffers) or ``"text"`` (every key); None:
            numeric exactly when ``text_features`` makes the observation numeric.
        env_index: The sub-env index in a vector env (for the records).

    Example:
        >>> import turnbudget
        >>> env = turnbudget.make("turnbudget/Maze-Easy-v0", budget_mix=[8, 16], errors=0.1,
        ...                       record=True, reveal="final=3")
        >>> _, info = env.reset(seed=1)
        >>> info["turn_budget"] in (8, 16)
        True
        >>> [type(w).__name__ for w in (env, env.env, env.env.env, env.env.env.env)]
        ['RevealBudget', 'RecordStepOutcomes', 'InjectErrors', 'SampleTurnBudget']
    """
    unknown = sorted(set(options) - set(STACK_OPTIONS))
    if unknown:
        raise TypeError(
            f"make() got an unexpected keyword argument {unknown[0]!r}; "
            f"expect budget, make_kwargs or one of: {', '.join(STACK_OPTIONS)}"
        )
    if budget is not None:
        budget = check_turn_budget(budget, "budget")
    if make_kwargs is not None and not isinstance(make_kwargs, Mapping):
        raise ValueError(
            f"Expect `make_kwargs` to be a mapping of gym.make keyword arguments or None, "
            f"got {brief(make_kwargs)}"
        )
    options = {key: value for key, value in options.items() if value is not None}
    check_stack_options(**options)  # before anything is built
    if isinstance(env_id, gym.Env):
        env = absorb_time_limit(env_id)
        if find_wrapper(env, TurnBudget) is None:
            if budget is None:
                raise ValueError("This env has no TurnBudget: pass `budget`")
            env = TurnBudget(env, budget)
        elif budget is not None:
            raise ValueError("This env already has a TurnBudget: set its budget where it was made")
        return build_stack(env, **options)
    kwargs = dict(make_kwargs or {})
    if budget is not None:
        kwargs["turn_budget"] = budget
    if _builds_the_stack(env_id):
        return gym.make(env_id, **kwargs, **options)
    env = gym.make(env_id, **kwargs)
    if find_wrapper(env, TurnBudget) is None:  # an id from outside turnbudget
        env = TurnBudget(env, budget if budget is not None else _no_budget(env_id))
    return build_stack(env, **options)


def _builds_the_stack(env_id: str) -> bool:
    """True for ids whose ``gym.make`` takes the stack's options (every ``turnbudget/`` id)."""
    module, _, name = env_id.rpartition(":")  # "module:id" as gym.make reads it
    try:
        if module:
            importlib.import_module(module)
        spec = gym.spec(name)
    except (ImportError, gym.error.Error):
        return False  # gym.make raises the proper error
    return any(w.entry_point == STACK_ENTRY_POINT for w in spec.additional_wrappers)


def _no_budget(env_id: str) -> int:
    raise ValueError(f"{env_id!r} has no TurnBudget: pass `budget`")
