"""The one place where every ``turnbudget/`` environment id is registered."""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium as gym

from turnbudget.envs.env_checker import PassiveEnvChecker
from turnbudget.wrappers.turn_budget import TurnBudget

__all__ = ["make_budgeted", "register_envs", "register_game"]

NAMESPACE = "turnbudget"


def make_budgeted(game_entry_point: str, turn_budget: int, **game_kwargs: Any) -> gym.Env:
    """Build the game at ``game_entry_point`` ("module:Class") and wrap it in `TurnBudget`.

    This is the entry point of every registered id, so ``gym.make(id)`` returns
    a game with its variant's default budget, and ``gym.make(id, turn_budget=T)``
    overrides it.
    """
    module_name, _, attr = game_entry_point.partition(":")
    game_cls = getattr(importlib.import_module(module_name), attr)
    return PassiveEnvChecker(TurnBudget(game_cls(**game_kwargs), turn_budget=turn_budget))


def register_game(env_id: str, game_entry_point: str, turn_budget: int, **game_kwargs: Any) -> None:
    """Register ``turnbudget/<env_id>`` as ``game_entry_point`` under a default `TurnBudget`."""
    full_id = f"{NAMESPACE}/{env_id}"
    if full_id in gym.registry:
        return  # re-importing the package must not warn about re-registration
    gym.register(
        id=full_id,
        entry_point="turnbudget.envs.registration:make_budgeted",
        kwargs={"game_entry_point": game_entry_point, "turn_budget": turn_budget, **game_kwargs},
        # The budget is ours (truncation via TurnBudget), never gymnasium's TimeLimit.
        max_episode_steps=None,
        # make_budgeted adds a passive checker that survives a refused first reset.
        disable_env_checker=True,
    )


def register_envs() -> None:
    """Register every environment family. Safe to call more than once."""
    from turnbudget.envs.native import register_native_envs
    from turnbudget.envs.textworld.registration import register_textworld_envs

    register_native_envs()
    register_textworld_envs()
