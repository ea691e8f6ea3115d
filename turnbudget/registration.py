"""The one place where every ``turnbudget/`` id is registered: a game under a default `TurnBudget`.

It sits above envs and wrappers (it needs both): the games declare their
variants as data (`turnbudget.envs.VARIANTS`) and know nothing of wrappers.
"""

from __future__ import annotations

import inspect
from typing import Any

import gymnasium as gym

from turnbudget._checks import load_object
from turnbudget.envs import VARIANTS, EnvVariant
from turnbudget.envs.env_checker import PassiveEnvChecker
from turnbudget.wrappers.turn_budget import TurnBudget

__all__ = ["NAMESPACE", "make_budgeted", "register_envs", "register_game"]

NAMESPACE = "turnbudget"


def _check_kwargs(game_cls: type, kwargs: dict[str, Any]) -> None:
    """Refuse keyword arguments the game does not take, naming the ones it does."""
    parameters = inspect.signature(game_cls).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return  # the game checks its own extra kwargs
    unknown = sorted(set(kwargs) - set(parameters))
    if unknown:
        raise TypeError(
            f"{game_cls.__name__} got unexpected argument(s) {', '.join(unknown)}; "
            f"expect turn_budget or one of: {', '.join(parameters)}"
        )


def make_budgeted(game_entry_point: str, turn_budget: int | None, **game_kwargs: Any) -> gym.Env:
    """Build the game at ``game_entry_point`` ("module:Class") and wrap it in `TurnBudget`.

    This is the entry point of every registered id, so ``gym.make(id)`` returns
    a game with its variant's default budget, and ``gym.make(id, turn_budget=T)``
    overrides it. ``turn_budget=None`` takes the game's ``default_turn_budget``.
    The outermost layer is turnbudget's `PassiveEnvChecker` (Gymnasium's own is
    disabled in the spec), which stays usable after a refused first reset.
    """
    game_cls = load_object(game_entry_point)
    _check_kwargs(game_cls, game_kwargs)
    game = game_cls(**game_kwargs)
    if turn_budget is None:
        turn_budget = getattr(game, "default_turn_budget", None)
        if turn_budget is None:
            raise ValueError(f"{game_cls.__name__} has no default budget: pass `turn_budget`")
    return PassiveEnvChecker(TurnBudget(game, turn_budget=turn_budget))


def register_game(
    env_id: str, game_entry_point: str, turn_budget: int | None, **game_kwargs: Any
) -> None:
    """Register ``turnbudget/<env_id>`` as ``game_entry_point`` under a default `TurnBudget`."""
    full_id = f"{NAMESPACE}/{env_id}"
    if full_id in gym.registry:
        return  # re-importing the package must not warn about re-registration
    gym.register(
        id=full_id,
        entry_point="turnbudget.registration:make_budgeted",
        kwargs={"game_entry_point": game_entry_point, "turn_budget": turn_budget, **game_kwargs},
        # The budget is ours (truncation via TurnBudget), never gymnasium's TimeLimit.
        max_episode_steps=None,
        # make_budgeted adds a passive checker that survives a refused first reset.
        disable_env_checker=True,
    )


def register_envs(variants: tuple[EnvVariant, ...] = VARIANTS) -> None:
    """Register every variant (by default every family's). Safe to call more than once."""
    for variant in variants:
        register_game(
            variant.name, variant.entry_point, turn_budget=variant.turn_budget, **variant.kwargs
        )
