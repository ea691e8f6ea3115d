"""Native procedural text games: pure Python, fast, with exact oracles."""

from __future__ import annotations

import importlib

from turnbudget.envs.registration import register_game

__all__ = ["DEFAULT_BUDGETS", "register_native_envs"]

# Default budgets: at least twice the longest optimal solution of the variant
# (Easy <= 12, Medium <= 30, Hard <= 60 turns by construction).
DEFAULT_BUDGETS = {"Easy": 30, "Medium": 64, "Hard": 128}


_GAMES = {
    # Crafting: gather and craft through a recipe tree; tools gate whole branches
    "Crafting": "turnbudget.envs.native.crafting:Crafting",
    # KeyQuest: rooms, locked doors, keys behind other doors, a treasure to deliver
    "KeyQuest": "turnbudget.envs.native.keyquest:KeyQuest",
    # Maze: navigation under partial observability, dead ends and loops
    "Maze": "turnbudget.envs.native.maze:Maze",
    # Shop: a shopping list in a text web shop full of near misses; a wrong purchase loses
    "Shop": "turnbudget.envs.native.shop:Shop",
    # Sokoban: boxes onto targets; a bad push loses the game
    "Sokoban": "turnbudget.envs.native.sokoban:Sokoban",
}


def register_native_envs() -> None:
    for family, entry_point in _GAMES.items():
        # A game module may declare its own DEFAULT_BUDGETS ({"easy": T, ...}).
        module = importlib.import_module(entry_point.partition(":")[0])
        budgets = getattr(module, "DEFAULT_BUDGETS", None)
        for difficulty, budget in DEFAULT_BUDGETS.items():
            register_game(
                f"{family}-{difficulty}-v0",
                entry_point,
                turn_budget=budgets[difficulty.lower()] if budgets else budget,
                difficulty=difficulty.lower(),
            )
