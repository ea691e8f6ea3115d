"""Native procedural text games: pure Python, fast, with exact oracles.

Each family module (`crafting`, `keyquest`, `maze`, `shop`, `sokoban`) declares its difficulty configs,
default budgets and registered `VARIANTS`.
"""

from __future__ import annotations

__all__: list[str] = []
