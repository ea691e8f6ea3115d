"""The TextWorld families' registered configurations, as data.

Imports nothing from textworld: making an id does. Every family also takes its
arguments as kwargs at make time (``gym.make("turnbudget/CoinCollector-Easy-v0",
level=50)``), so these are starting points, not the only variants; such a game
plays under the id's budget, chosen for its registered settings (``gym.make`` warns):
pass ``turn_budget=`` for it. ``env.spec.kwargs`` records the settings played.
"""

from __future__ import annotations

from turnbudget.envs.core import EnvVariant

__all__ = ["TEXTWORLD_VARIANTS", "VARIANTS"]

_PKG = "turnbudget.envs.textworld"

# env id -> (entry point, default turn budget, game kwargs). Budgets are at
# least twice the longest walkthrough seen over game ids 0-19 of each variant
# (see benchmarks/speed/textworld_throughput.py --survey).
TEXTWORLD_VARIANTS: dict[str, tuple[str, int, dict]] = {
    # ---------------------------------------------------------- Coin Collector
    "CoinCollector-Easy-v0": (f"{_PKG}.coin_collector:CoinCollector", 20, {"level": 5}),
    "CoinCollector-Medium-v0": (f"{_PKG}.coin_collector:CoinCollector", 40, {"level": 110}),
    "CoinCollector-Hard-v0": (f"{_PKG}.coin_collector:CoinCollector", 60, {"level": 215}),
    # --------------------------------------------------------- Treasure Hunter
    "TreasureHunter-Easy-v0": (f"{_PKG}.treasure_hunter:TreasureHunter", 20, {"level": 5}),
    "TreasureHunter-Medium-v0": (f"{_PKG}.treasure_hunter:TreasureHunter", 40, {"level": 15}),
    "TreasureHunter-Hard-v0": (f"{_PKG}.treasure_hunter:TreasureHunter", 80, {"level": 25}),
    # ----------------------------------------------------------------- Cooking
    "Cooking-Easy-v0": (
        f"{_PKG}.cooking:Cooking", 30,
        {"recipe": 1, "take": 1, "go": 1, "open": True},
    ),
    "Cooking-Medium-v0": (
        f"{_PKG}.cooking:Cooking", 80,
        {"recipe": 2, "take": 2, "go": 6, "open": True, "cook": True, "cut": True},
    ),
    "Cooking-Hard-v0": (
        f"{_PKG}.cooking:Cooking", 120,
        {"recipe": 3, "take": 3, "go": 9, "open": True, "cook": True, "cut": True},
    ),
    # ------------------------------------------------------------------ Custom
    "TextWorldCustom-v0": (
        f"{_PKG}.custom:TextWorldCustom", 30,
        {"world_size": 5, "nb_objects": 10, "quest_length": 5},
    ),
    # ------------------------------------------------------------ Any game file
    "TextWorldFile-v0": (f"{_PKG}.env:TextWorldEnv", 100, {}),
}  # fmt: skip

VARIANTS = tuple(
    EnvVariant(name, entry_point, budget, kwargs)
    for name, (entry_point, budget, kwargs) in TEXTWORLD_VARIANTS.items()
)
