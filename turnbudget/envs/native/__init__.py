"""Native procedural text games: pure Python, fast, with exact oracles.

Each family module (`maze`, `keyquest`) declares its difficulty configs,
default budgets and registered `VARIANTS`.
"""

from __future__ import annotations

__all__: list[str] = []
