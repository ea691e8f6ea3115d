"""Crafting: gather raw materials and craft through a recipe tree that needs tools."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from turnbudget.envs.core import EnvVariant
from turnbudget.envs.native.base import TextGame, reset_needed, sanitize_for_display

__all__ = ["CONFIGS", "DEFAULT_BUDGETS", "MAX_HEAD_START", "VARIANTS", "Crafting", "CraftingConfig"]


@dataclass(frozen=True)
class CraftingConfig:
    goals: tuple[str, ...]  # the goal item is drawn from these
    max_goal_count: int  # how many of it to craft: 1..max_goal_count
    max_head_start: int  # up to this many random items in the starting inventory
    min_distance: int  # the optimal solution length lies in [min_distance, max_distance]
    max_distance: int


CONFIGS = {
    "easy": CraftingConfig(
        goals=("torch", "wooden sword", "crafting table", "wooden pickaxe", "ladder"),
        max_goal_count=2,
        max_head_start=3,
        min_distance=5,
        max_distance=12,
    ),
    "medium": CraftingConfig(
        goals=("stone pickaxe", "stone sword", "furnace", "bow", "ladder", "wooden pickaxe"),
        max_goal_count=2,
        max_head_start=4,
        min_distance=15,
        max_distance=30,
    ),
    "hard": CraftingConfig(
        goals=("iron sword", "iron pickaxe", "shield", "compass", "lantern"),
        max_goal_count=2,
        max_head_start=4,
        min_distance=35,
        max_distance=60,
    ),
}
# Default turn budgets: at least twice the longest optimal solution of the variant.
DEFAULT_BUDGETS = {"easy": 30, "medium": 64, "hard": 128}
_ENTRY_POINT = "turnbudget.envs.native.crafting:Crafting"
# ------------------------------------------------------------------ Crafting
VARIANTS = (
    *(
        EnvVariant(
            f"Crafting-{d.capitalize()}-v0", _ENTRY_POINT, DEFAULT_BUDGETS[d], {"difficulty": d}
        )
        for d in CONFIGS
    ),
    # Free variant: difficulty and config fields as kwargs, the budget follows them.
    EnvVariant("Crafting-v0", _ENTRY_POINT, None),
)
_MAX_GENERATION_TRIES = 500
#: Most items of a head start (drawn one at a time, up to 500 times per reset).
MAX_HEAD_START = 1000

# Raw materials: name -> (tool needed to gather it, or None; where it is found).
_RAW = {
    "wood": (None, "a stand of trees"),
    "fiber": (None, "tall grass"),
    "stone": ("wooden pickaxe", "a rocky outcrop"),
    "coal": ("wooden pickaxe", "a seam of coal"),
    "iron ore": ("stone pickaxe", "a rusty iron vein"),
}
# Recipes: product -> (ingredient -> (fewest, most) units drawn per world; station or tool needed).
# Tools and stations are never ingredients: they are kept, not consumed.
_RECIPES: dict[str, tuple[dict[str, tuple[int, int]], str | None]] = {
    "plank": ({"wood": (1, 1)}, None),
    "stick": ({"plank": (1, 1)}, None),
    "string": ({"fiber": (2, 3)}, None),
    "crafting table": ({"plank": (2, 4)}, None),
    "torch": ({"stick": (1, 1), "coal": (1, 1)}, None),
    "ladder": ({"stick": (3, 5)}, "crafting table"),
    "wooden pickaxe": ({"plank": (2, 3), "stick": (1, 2)}, "crafting table"),
    "wooden sword": ({"plank": (1, 2), "stick": (1, 1)}, "crafting table"),
    "stone pickaxe": ({"stone": (2, 3), "stick": (1, 2)}, "crafting table"),
    "stone sword": ({"stone": (1, 2), "stick": (1, 1)}, "crafting table"),
    "bow": ({"stick": (2, 3), "string": (1, 2)}, "crafting table"),
    "furnace": ({"stone": (4, 6)}, "crafting table"),
    "iron ingot": ({"iron ore": (1, 1), "coal": (1, 1)}, "furnace"),
    "iron sword": ({"iron ingot": (2, 2), "stick": (1, 1)}, "crafting table"),
    "iron pickaxe": ({"iron ingot": (2, 3), "stick": (1, 2)}, "crafting table"),
    "shield": ({"iron ingot": (1, 2), "plank": (2, 4)}, "crafting table"),
    "compass": ({"iron ingot": (2, 3), "stone": (1, 1)}, "crafting table"),
    "lantern": ({"iron ingot": (1, 2), "torch": (1, 1)}, "crafting table"),
}
_TOOLS = frozenset(
    {"crafting table", "furnace", "wooden pickaxe", "stone pickaxe"}
    | {tool for tool, _ in _RAW.values() if tool}
)
# Every item, ordered so that whatever an item is made from or with comes after it.
_ITEMS: tuple[str, ...] = ()
_HEAD_START = ("wood", "plank", "stick", "fiber", "stone", "coal", "iron ore")


def _topological_order() -> tuple[str, ...]:
    needs = {
        item: {*_RECIPES[item][0], *filter(None, [_RECIPES[item][1]])}
        if item in _RECIPES
        else set(filter(None, [_RAW[item][0]]))
        for item in [*_RECIPES, *_RAW]
    }
    order: list[str] = []
    placed: set[str] = set()

    def visit(item: str) -> None:  # depth-first post-order, then reversed
        if item in placed:
            return
        placed.add(item)
        for need in sorted(needs[item]):
            visit(need)
        order.append(item)

    for item in sorted(needs):
        visit(item)
    return tuple(reversed(order))


_ITEMS = _topological_order()


class Crafting(TextGame):
    """Craft a goal item through a tree of recipes, some of which need tools.

    ## Description
    A survival-crafting world without a map: raw materials (wood, fiber, stone,
    coal, iron ore) are gathered one unit per turn, and items are crafted one
    unit per turn from ingredients that are consumed. Some steps need a tool
    or station that is kept, not consumed: stone and coal need a wooden
    pickaxe, iron ore a stone pickaxe, most recipes a crafting table, iron
    ingots a furnace. Ingredient quantities are drawn per world, so the
    recipes must be read (``recipes``) rather than remembered. Deep goals form
    long dependency chains: a missing tool blocks everything below it.

    ## Goal
    "Craft 2 iron swords." (the goal item and count vary per world).

    ## Actions
    Free-form text. Admissible: ``gather <material>`` when its tool is held,
    ``craft <item>`` when its ingredients and station are held, ``recipes``
    (lists every recipe), ``inventory``, ``look``. A gather or craft that is
    blocked (a missing tool, too few ingredients) costs a turn and says what is
    missing, with ``valid_action=False``.

    ## Observations
    The feedback of the last command, the inventory, and what can be gathered
    nearby. Recipes only on request. ``info["progress"]``: the share of the
    goal's recipe tree (the items it needs from the starting inventory, as the
    recipes show) made or gathered at least once (1 once won).

    ## Rewards
    1.0 on the turn the goal count is reached, 0 otherwise.

    ## Episode end
    ``terminated`` when the goal item is crafted the required number of times
    (held in the inventory); the game cannot be lost, and no command blocks it
    (``commands_keep_solvable``): wood and fiber need no tool, tools and
    stations are never consumed, and whatever a recipe uses up can be made
    again from them. ``truncated`` only by a turn budget wrapper (`TurnBudget`).

    ## Oracle
    Exact: every recipe is the only way to make its product and yields one
    unit, so the fewest turns are the units still to be made, found by netting
    the demand down the recipe tree against the inventory (tools count once).
    ``optimal_actions`` checks every admissible command against that count.
    Setback: a held tool breaks (the materials to rebuild it stay
    obtainable); without tools, a needed ingredient crumbles.

    ## Arguments
    ``difficulty``: ``"easy"`` (wooden items, optimal 5-12 turns),
    ``"medium"`` (stone tools, bows, 15-30), ``"hard"`` (iron, 35-60).
    ``render_mode``: ``"ansi"`` or ``"human"``. Any int field of `CraftingConfig`
    overrides the difficulty's value by keyword; unknown keywords are a ``TypeError``.
    ``max_goal_count`` lies in [1, ``max_distance``] (each unit of the goal is a
    turn) and ``max_head_start`` is at most `MAX_HEAD_START` (1,000).

    ## Registered configurations
    ``turnbudget/Crafting-Easy-v0`` (budget 30), ``turnbudget/Crafting-Medium-v0``
    (budget 64), ``turnbudget/Crafting-Hard-v0`` (budget 128).
    ``turnbudget/Crafting-v0`` takes ``difficulty`` and config fields as kwargs;
    its budget is the difficulty's, or twice ``max_distance`` when larger.

    ## Version history
    v0: initial release.
    """

    commands_keep_solvable = True  # (see Episode end)
    _world_attributes = (
        "_recipes", "_target", "_target_count", "_tree", "_made", "_recipe_text", "_by_tools",
        "_current_view",
    )  # fmt: skip
    configs = CONFIGS
    default_budgets = DEFAULT_BUDGETS

    def __init__(self, difficulty: str = "easy", render_mode: str | None = None, **config: int):
        super().__init__(difficulty=difficulty, render_mode=render_mode, **config)
        cfg = self.config
        # Every unit of the goal is one craft, so a count above max_distance never fits.
        if not 1 <= cfg.max_goal_count <= cfg.max_distance:
            raise ValueError(
                f"Expect 1 <= `max_goal_count` <= `max_distance` (each unit of the goal takes a "
                f"turn to craft), got {cfg.max_goal_count} and {cfg.max_distance}"
            )
        if cfg.max_head_start > MAX_HEAD_START:
            raise ValueError(
                f"Expect `max_head_start` to be at most {MAX_HEAD_START:,}, got {cfg.max_head_start}"
            )
        self._inventory: dict[str, int] = {}
        self._distance_cache: tuple[int, int] | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> Crafting:
        clone = super().__deepcopy__(memo)
        clone._inventory = dict(self._inventory)  # the one table that steps mutate
        return clone

    # -- generation ----------------------------------------------------------------

    def _generate(self) -> None:
        cfg = self.config
        rng = self.np_random
        for _ in range(_MAX_GENERATION_TRIES):
            self._recipes = {
                product: (
                    {item: int(rng.integers(lo, hi + 1)) for item, (lo, hi) in needs.items()},
                    tool,
                )
                for product, (needs, tool) in _RECIPES.items()
            }
            self._target = str(self._choice(cfg.goals))
            self._target_count = int(rng.integers(1, cfg.max_goal_count + 1))
            inventory: dict[str, int] = {}
            for _ in range(int(rng.integers(cfg.max_head_start + 1))):
                item = str(self._choice(_HEAD_START))
                inventory[item] = inventory.get(item, 0) + 1
            self._inventory = inventory
            distance = self._distance_of(inventory)
            if cfg.min_distance <= distance <= cfg.max_distance:
                break
        else:  # only config overrides can make the distance range unreachable
            raise RuntimeError(
                f"Could not generate a {type(self).__name__} with {self.config} in "
                f"{_MAX_GENERATION_TRIES} tries: widen [min_distance, max_distance]"
            )
        self._distance_cache = None
        # Progress without the oracle: the share of the goal's recipe tree (the items a
        # shortest plan makes, tools included) held at least once so far.
        self._tree = self._needed(inventory)
        self._made: set[str] = set()
        plural = _plural(self._target) if self._target_count > 1 else self._target
        count = str(self._target_count) if self._target_count > 1 else _article(self._target)
        self.goal = f"Craft {count} {plural}. Type `recipes` to see how things are made."
        self._recipe_text = self._render_recipes()
        # Per count of each of _TOOLS held (None: never held), filled as they come up: the
        # gathers they allow, and the recipes they allow, each as its command and ingredients.
        self._by_tools: dict[tuple[int | None, ...], tuple[list[str], tuple]] = {}
        # (state version, inventory items, view): the view of the inventory at hand, kept
        # while the items stay the same (a look, a listing, or a step asking twice).
        self._current_view: tuple[int, tuple | None, tuple[list[str], str, str]] = (
            -1,
            None,
            ([], "", ""),
        )

    # -- perception ------------------------------------------------------------------

    def _render_recipes(self) -> str:
        lines = ["Recipes (ingredients are used up; tools and stations are kept):"]
        for product in sorted(self._recipes):
            needs, tool = self._recipes[product]
            parts = ", ".join(f"{n} {item}" for item, n in needs.items())
            where = f" (needs a {tool})" if tool else ""
            lines.append(f"- {product}: {parts}{where}")
        lines.append("Raw materials (gather one per turn):")
        for raw, (tool, _) in _RAW.items():
            lines.append(f"- {raw}" + (f" (needs a {tool})" if tool else ""))
        return "\n".join(lines)

    def _inventory_text(self) -> str:
        inventory = self._inventory
        keys = tuple(inventory)  # (the held items come in a handful of orders)
        order = _SORTED_KEYS.get(keys)
        if order is None:
            if len(_SORTED_KEYS) >= _MAX_MEMO:
                _SORTED_KEYS.clear()
            order = _SORTED_KEYS[keys] = sorted(keys)
        try:
            held = [_WORDS[item][n] for item in order if (n := inventory[item])]
        except KeyError:  # (an amount not worded yet)
            held = [_words(item, n) for item in order if (n := inventory[item])]
        if len(held) > 1:  # (`_join` inlined: one string built, not two, on every new inventory)
            last = held.pop()
            return f"You carry {', '.join(held)} and {last}."
        return f"You carry {held[0]}." if held else "You carry nothing."

    def _view(self) -> tuple[list[str], str, str]:
        """(admissible commands, description, inventory text) of the current inventory, worked
        out again only when its items changed (a dict of every inventory seen cost more per
        step than it saved: in play, inventories rarely come back)."""
        version, key, view = self._current_view
        if version == self._state_version:
            return view
        now = tuple(self._inventory.items())
        if now != key:
            held = self._inventory_text()
            view = (self._commands(), f"{held} {_AROUND}", held)
        self._current_view = (self._state_version, now, view)
        return view

    def _describe(self) -> str:
        return self._view()[1]

    def _admissible(self) -> list[str]:
        return self._view()[0]

    # The view is kept per state already: no second cache over it.
    _admissible_now = _admissible

    def _commands(self) -> list[str]:
        get = self._inventory.get
        tools = tuple(map(get, _TOOLS))  # (counts or None: cheaper to key by than bools)
        allowed = self._by_tools.get(tools)
        if allowed is None:
            if len(self._by_tools) >= _MAX_TOOL_COUNTS:
                self._by_tools.clear()
            held = dict(zip(_TOOLS, map(bool, tools)))
            allowed = self._by_tools[tools] = self._allowed_by(held)
        gathers, crafts = allowed
        commands = list(gathers)
        for command, needs in crafts:
            for item, n in needs:
                if get(item, 0) < n:
                    break
            else:
                commands.append(command)
        commands += _ALWAYS
        return commands

    def _allowed_by(self, held: dict[str, bool]) -> tuple[list[str], tuple]:
        """The gathers the tools ``held`` allow, and the recipes (command, ingredients)."""
        gathers = [command for command, tool in _GATHERS if tool is None or held[tool]]
        crafts = tuple(
            (f"craft {product}", tuple(needs.items()))
            for product, (needs, tool) in self._recipes.items()
            if tool is None or held[tool]
        )
        return gathers, crafts

    # -- dynamics --------------------------------------------------------------------

    def _apply(self, command: str) -> str:
        verb, _, obj = command.partition(" ")
        if obj in self._tree and obj not in self._made:
            self._made = self._made | {obj}  # rebound, never mutated: copies may share it
        if verb == "gather":
            self._inventory[obj] = self._inventory.get(obj, 0) + 1
            return _GATHERED[obj]
        if verb == "craft":
            needs, _ = self._recipes[obj]
            for item, n in needs.items():
                self._inventory[item] -= n
            self._inventory[obj] = self._inventory.get(obj, 0) + 1
            if obj == self._target and self._inventory[obj] >= self._target_count:
                self._won = True
                return f"You craft {_article(obj)} {obj}. That's everything you needed!"
            return _CRAFTED[obj]
        if verb == "recipes":
            return self._recipe_text
        if verb == "inventory":
            return self._view()[2]  # (an inventory command leaves the inventory as it is)
        return "You look around."

    def _explain_invalid(self, command: str, raw_action: str) -> str:
        verb, _, obj = command.partition(" ")
        inv = self._inventory
        if verb == "gather" and obj in _RAW:
            return f"You need a {_RAW[obj][0]} to gather {obj}."
        if verb == "gather" and obj in self._recipes:
            return f"You can't gather {_article(obj)} {obj}: it is crafted (see `recipes`)."
        if verb == "craft" and obj in _RAW:
            return f"You can't craft {obj}: gather it."
        if verb == "craft" and obj in self._recipes:
            needs, tool = self._recipes[obj]
            if tool and not inv.get(tool):
                return f"You need a {tool} to craft {_article(obj)} {obj}."
            missing = [
                f"{n - inv.get(i, 0)} more {i}" for i, n in needs.items() if inv.get(i, 0) < n
            ]
            return f"You can't craft {_article(obj)} {obj} yet: you need {_join(missing)}."
        if verb in ("craft", "gather") and obj:
            return f"There is no such thing as a {sanitize_for_display(obj)} here. Type `recipes` for the list."
        return super()._explain_invalid(command, raw_action)

    def _progress(self) -> float:
        return len(self._made) / len(self._tree)

    # -- oracle ----------------------------------------------------------------------

    def _needed(self, inventory: dict[str, int]) -> frozenset[str]:
        """The items a shortest plan from ``inventory`` makes (the goal's open recipe tree)."""
        return frozenset(item for item, n in self._netting(inventory).items() if n > 0)

    def _distance_of(self, inventory: dict[str, int]) -> int:
        """Fewest turns to hold the goal count: the units still to make, netted top-down."""
        return sum(self._netting(inventory).values())

    def _netting(self, inventory: dict[str, int]) -> dict[str, int]:
        """Units of each item still to make, netted down the recipe tree against ``inventory``."""
        demand = dict.fromkeys(_ITEMS, 0)
        demand[self._target] = self._target_count
        makes = {}
        for item in _ITEMS:  # products before their ingredients and tools
            make = demand[item] - inventory.get(item, 0)
            if make <= 0:
                continue
            makes[item] = make
            if item in self._recipes:
                needs, tool = self._recipes[item]
                for ingredient, n in needs.items():
                    demand[ingredient] += n * make
            else:
                tool = _RAW[item][0]
            if tool is not None:
                demand[tool] = max(demand[tool], 1)
        return makes

    def distance_to_goal(self) -> int | None:
        if not self._in_episode:
            raise reset_needed("distance_to_goal")
        if self._won:
            return 0
        cache = self._distance_cache
        if cache is None or cache[0] != self._state_version:
            cache = self._distance_cache = (self._state_version, self._distance_of(self._inventory))
        return cache[1]

    def _after(self, command: str) -> dict[str, int]:
        inventory = dict(self._inventory)
        verb, _, obj = command.partition(" ")
        if verb == "gather":
            inventory[obj] = inventory.get(obj, 0) + 1
        elif verb == "craft":
            for item, n in self._recipes[obj][0].items():
                inventory[item] -= n
            inventory[obj] = inventory.get(obj, 0) + 1
        return inventory

    def optimal_actions(self) -> list[str]:
        if not self._in_episode:
            raise reset_needed("optimal_actions")
        if self._won:
            return []
        target = self.distance_to_goal() - 1
        return [
            command
            for command in self._admissible_now()
            if command.startswith(("gather ", "craft "))
            and self._distance_of(self._after(command)) == target
        ]

    def inject_setback(self, rng: np.random.Generator) -> str:
        """A held tool breaks; without tools, a needed ingredient crumbles."""
        self._check_setback(rng)
        if self._won:
            return ""
        before = self.distance_to_goal()
        inv = self._inventory
        tools = sorted(item for item in _TOOLS if inv.get(item))
        if tools:
            candidates = [(t, f"Crack! Your {t} breaks and falls apart.") for t in tools]
        else:
            candidates = [
                (item, f"One of your {_plural(item)} crumbles to dust.")
                for item in sorted(inv)
                if inv[item] and item != self._target
            ]
        scored = []
        for item, narration in candidates:
            after = dict(inv)
            after[item] -= 1
            scored.append((self._distance_of(after), item, narration))
        worse = [c for c in scored if c[0] > before] or [c for c in scored if c[0] >= before]
        if not worse:
            return "A gust of wind scatters some leaves, but you lose nothing."
        _, item, narration = worse[int(rng.integers(len(worse)))]
        inv[item] -= 1
        self._state_changed()
        return narration


def _plural(item: str) -> str:
    if item in _RAW:  # mass nouns: "3 wood", "2 iron ore"
        return item
    if item.endswith(("s", "sh", "ch")):
        return item + "es"
    return item + "s"


def _article(item: str) -> str:
    return "an" if item[0] in "aeiou" else "a"


def _amount(item: str, n: int) -> str:
    """How the inventory says ``n`` of ``item``: "3 planks", "1 plank", "2 wood"."""
    return f"{n} {_PLURALS[item] if n > 1 else item}"


# The inventory text's memos, shared by every game, each at most `_MAX_MEMO` entries: an
# item -> count -> its words ("3 planks"), and the held items in an order -> sorted.
_WORDS: dict[str, dict[int, str]] = {}
_SORTED_KEYS: dict[tuple[str, ...], list[str]] = {}
_MAX_MEMO = 10_000


def _words(item: str, n: int) -> str:
    """`_amount`, memoized in `_WORDS`."""
    words = _WORDS.setdefault(item, {})
    if len(words) >= _MAX_MEMO:
        words.clear()
    words[n] = _amount(item, n)
    return words[n]


def _join(words: list[str]) -> str:
    if not words:
        return "nothing"
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


_GATHERS = tuple((f"gather {raw}", tool) for raw, (tool, _) in _RAW.items())
# Every tool or station a gather or a recipe needs (kept, never used up), in a fixed order:
# which of them are held decides which commands can be allowed at all.
_TOOLS = tuple(
    sorted({tool for _, tool in _RECIPES.values() if tool} | {t for t, _ in _RAW.values() if t})
)
_ALWAYS = ("recipes", "inventory", "look")
# The most tool counts a world's `_by_tools` keeps (an agent crafting tools again and again
# makes new counts; a handful come up in play).
_MAX_TOOL_COUNTS = 256
_PLURALS = {item: _plural(item) for item in _ITEMS}
# The feedback of a gather and of a craft (but the last), per item.
_GATHERED = {raw: f"You gather some {raw}." for raw in _RAW}
_CRAFTED = {item: f"You craft {_article(item)} {item}." for item in _RECIPES}
# What every description ends with: where the raw materials are.
_AROUND = f"Around you: {_join([place for _, place in _RAW.values()])}."
