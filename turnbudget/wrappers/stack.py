"""`make`: build a turn-budget experiment stack in one call, in the documented order."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from turnbudget._checks import is_int
from turnbudget.wrappers._common import find_wrapper
from turnbudget.wrappers.discrete_actions import DiscreteActions
from turnbudget.wrappers.inject_errors import InjectErrors
from turnbudget.wrappers.process_reward import ProcessReward
from turnbudget.wrappers.record_step_outcomes import RecordStepOutcomes
from turnbudget.wrappers.reveal_budget import RevealBudget
from turnbudget.wrappers.sample_turn_budget import BudgetMix, BudgetMixLike, SampleTurnBudget
from turnbudget.wrappers.text_features import TextFeatures
from turnbudget.wrappers.turn_budget import TurnBudget, check_turn_budget

__all__ = ["STACK_ORDER", "make"]

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
        f"Unexpected `{name}`={value!r}: see turnbudget.make's docstring for what it accepts"
    )


def make(
    env_id: str | gym.Env,
    *,
    budget: int | None = None,
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
    env_index: int | None = None,
    make_kwargs: Mapping[str, Any] | None = None,
) -> gym.Env:
    """Make a registered env and stack the turn-budget wrappers on it, in `STACK_ORDER`.

    Equivalent to ``gym.make(env_id, turn_budget=budget)`` wrapped by hand in
    `SampleTurnBudget`, `InjectErrors`, `RecordStepOutcomes`, `ProcessReward`,
    `RevealBudget`, `DiscreteActions` and `TextFeatures`, skipping those left
    at None. A mapping passes keyword arguments to its wrapper (a misspelt
    one raises ``TypeError``); the scalar shortcuts are listed below. Every
    configuration error is raised here, before any episode runs.

    Args:
        env_id: A registered id (or an env; one without a `TurnBudget` then needs ``budget``).
        budget: The default turn budget T (the id's default if None).
        budget_mix: BudgetMix: anything `BudgetMix.coerce` accepts (``"uniform:5-40"``, ``[10, 20]``...).
        errors: An error rate (float) or `InjectErrors` keyword arguments.
        record: True (in memory), a JSONL path, a callback, or `RecordStepOutcomes` keyword arguments.
        process_reward: True or `ProcessReward` keyword arguments.
        reveal: A mode (``"always"``, ``"final=3"``, ``"never"``) or `RevealBudget` keyword arguments.
        discrete_actions: ``max_actions`` or `DiscreteActions` keyword arguments.
        text_features: True, ``dim`` or `TextFeatures` keyword arguments.
        env_index: The sub-env index in a vector env (for the records).
        make_kwargs: Extra keyword arguments for ``gym.make`` (e.g. ``render_mode``).

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
    if budget is not None:
        budget = check_turn_budget(budget, "budget")
    if env_index is not None and (not is_int(env_index) or env_index < 0):
        raise ValueError(f"Expect `env_index` to be an int >= 0 or None, got {env_index!r}")
    if budget_mix is not None:
        budget_mix = BudgetMix.coerce(budget_mix)  # a bad mix fails before the env is made
    # Check every option before building anything.
    specs = {
        "errors": _kwargs(errors, "errors", "rate", (int, float)),
        "process_reward": _kwargs(process_reward, "process_reward", None),
        "reveal": _kwargs(reveal, "reveal", "mode", (str,)),
        "discrete_actions": _kwargs(discrete_actions, "discrete_actions", "max_actions", (int,)),
        "text_features": _kwargs(text_features, "text_features", "dim", (int,)),
    }
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

    if isinstance(env_id, gym.Env):
        env = env_id
        if find_wrapper(env, TurnBudget) is None:
            if budget is None:
                raise ValueError("This env has no TurnBudget: pass `budget`")
            env = TurnBudget(env, budget)
        elif budget is not None:
            raise ValueError("This env already has a TurnBudget: set its budget where it was made")
    else:
        kwargs = dict(make_kwargs or {})
        if budget is not None:
            kwargs["turn_budget"] = budget
        env = gym.make(env_id, **kwargs)
        if find_wrapper(env, TurnBudget) is None:  # an id from outside turnbudget
            env = TurnBudget(env, budget if budget is not None else _no_budget(env_id))

    if budget_mix is not None:
        env = SampleTurnBudget(env, budget_mix=budget_mix)
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
    return env


def _no_budget(env_id: str) -> int:
    raise ValueError(f"{env_id!r} has no TurnBudget: pass `budget`")
