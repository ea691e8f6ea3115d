"""Native procedural text games: pure Python, fast, with exact oracles."""

from __future__ import annotations

from turnbudget.envs.registration import register_game

__all__ = ["DEFAULT_BUDGETS", "register_native_envs"]

# Default budgets: at least twice the longest optimal solution of the variant
# (Easy <= 12, Medium <= 30, Hard <= 60 turns by construction).
DEFAULT_BUDGETS = {"Easy": 30, "Medium": 64, "Hard": 128}


def register_native_envs() -> None:
    # ---------------------------------------------------------------- KeyQuest
    for difficulty, budget in DEFAULT_BUDGETS.items():
        register_game(
            f"KeyQuest-{difficulty}-v0",
            "turnbudget.envs.native.keyquest:KeyQuest",
            turn_budget=budget,
            difficulty=difficulty.lower(),
        )
    # -------------------------------------------------------------------- Maze
    for difficulty, budget in DEFAULT_BUDGETS.items():
        register_game(
            f"Maze-{difficulty}-v0",
            "turnbudget.envs.native.maze:Maze",
            turn_budget=budget,
            difficulty=difficulty.lower(),
        )
