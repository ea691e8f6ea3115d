"""The games: the shared contract (`core`), native games and TextWorld games.

`VARIANTS` lists every registered configuration of every family as data;
`turnbudget.registration` turns them into ``turnbudget/`` ids. Nothing here
imports a wrapper, the evaluator or textworld.
"""

from __future__ import annotations

from turnbudget.envs.core import EnvVariant, Oracle, TextEnv, get_oracle
from turnbudget.envs.native import crafting, keyquest, maze, shop, sokoban
from turnbudget.envs.textworld import variants as textworld_variants

__all__ = ["VARIANTS", "EnvVariant", "Oracle", "TextEnv", "get_oracle"]

#: Every registered configuration, family by family.
VARIANTS: tuple[EnvVariant, ...] = (
    *crafting.VARIANTS,
    *keyquest.VARIANTS,
    *maze.VARIANTS,
    *shop.VARIANTS,
    *sokoban.VARIANTS,
    *textworld_variants.VARIANTS,
)
