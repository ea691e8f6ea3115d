"""Shop: buy the products on a shopping list in a text web shop full of near misses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from turnbudget.envs.core import MAX_OBSERVATION_LENGTH, EnvVariant
from turnbudget.envs.native.base import TextGame, reset_needed, sanitize_for_display

__all__ = [
    "CONFIGS",
    "DEFAULT_BUDGETS",
    "MAX_ITEMS",
    "MAX_PRODUCTS",
    "VARIANTS",
    "Shop",
    "ShopConfig",
]


@dataclass(frozen=True)
class ShopConfig:
    items: int  # products on the shopping list
    catalog: int  # random products in the shop, besides the listed ones and their near misses
    near_misses: int  # per listed product: copies differing in one attribute or over the price cap
    page_size: int  # search results per page
    min_distance: int  # the optimal solution length lies in [min_distance, max_distance]
    max_distance: int


CONFIGS = {
    "easy": ShopConfig(
        items=1, catalog=40, near_misses=3, page_size=3, min_distance=5, max_distance=12
    ),
    "medium": ShopConfig(
        items=3, catalog=80, near_misses=3, page_size=4, min_distance=15, max_distance=30
    ),
    "hard": ShopConfig(
        items=7, catalog=150, near_misses=4, page_size=5, min_distance=35, max_distance=60
    ),
}
# Default turn budgets: at least twice the longest optimal solution of the variant.
DEFAULT_BUDGETS = {"easy": 30, "medium": 64, "hard": 128}
_ENTRY_POINT = "turnbudget.envs.native.shop:Shop"
# ------------------------------------------------------------------ Shop
VARIANTS = (
    *(
        EnvVariant(f"Shop-{d.capitalize()}-v0", _ENTRY_POINT, DEFAULT_BUDGETS[d], {"difficulty": d})
        for d in CONFIGS
    ),
    # Free variant: difficulty and config fields as kwargs, the budget follows them.
    EnvVariant("Shop-v0", _ENTRY_POINT, None),
)
_MAX_GENERATION_TRIES = 200
#: Most products in a shop: each has a code of its own, p1000 to p9999.
MAX_PRODUCTS = 9000
#: Most products on a shopping list: the list fits in one observation.
MAX_ITEMS = 50
#: Most results a page shows: 100 lines of at most 55 characters, with the page's header and
#: the shopping list's status, fit in one observation (1,000 were cut at 8,192 characters,
#: mid-line, their view commands admissible for products the agent could not see).
MAX_PAGE_SIZE = 100
# The fewest turns one purchase takes: a search, a view, one selection per option (every
# product type has two) and the purchase.
_TURNS_PER_PURCHASE = 5

# Product types: (name, materials, styles, option dimensions -> values).
_TYPES = (
    ("t-shirt", ("cotton", "linen", "polyester", "bamboo"), ("v-neck", "crew-neck", "striped", "slim"),
     {"size": ("s", "m", "l", "xl"), "colour": ("navy", "white", "black", "olive")}),
    ("hoodie", ("cotton", "fleece", "polyester", "wool"), ("zip", "hooded", "oversized", "slim"),
     {"size": ("s", "m", "l", "xl"), "colour": ("grey", "black", "navy", "maroon")}),
    ("sneakers", ("leather", "canvas", "mesh", "suede"), ("running", "high-top", "slip-on", "trail"),
     {"size": ("7", "8", "9", "10", "11"), "colour": ("white", "black", "red", "blue")}),
    ("backpack", ("canvas", "nylon", "leather", "polyester"), ("waterproof", "rolltop", "padded", "travel"),
     {"size": ("15l", "25l", "35l"), "colour": ("black", "olive", "tan", "grey")}),
    ("mug", ("ceramic", "steel", "glass", "bamboo"), ("insulated", "travel", "handmade", "stackable"),
     {"size": ("small", "large"), "colour": ("white", "blue", "black", "green")}),
    ("bottle", ("steel", "glass", "plastic", "bamboo"), ("insulated", "foldable", "sport", "travel"),
     {"size": ("500ml", "750ml", "1l"), "colour": ("silver", "black", "blue", "pink")}),
    ("headphones", ("plastic", "aluminium", "leather", "mesh"), ("wireless", "foldable", "studio", "sport"),
     {"fit": ("standard", "large"), "colour": ("black", "white", "silver", "blue")}),
    ("jeans", ("denim", "cotton", "linen", "stretch"), ("slim", "straight", "relaxed", "cropped"),
     {"size": ("28", "30", "32", "34", "36"), "colour": ("indigo", "black", "grey", "blue")}),
)  # fmt: skip
_BRANDS = ("Nimbus", "Aurora", "Kestrel", "Vantage", "Pinecrest", "Solace", "Trident", "Lumen")
_HOME = ("home",)
_STRIDES = (7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47)

# A product: (code, type index, brand, material, style, price in cents).
_Product = tuple[str, int, str, str, str, int]
# Where the agent is: ("home",), ("results", word, page) or ("item", product, word, page).
_View = tuple[Any, ...]


class Shop(TextGame):
    """Buy every product on a shopping list, with the right options, under its price cap.

    ## Description
    A small web shop in text. A search bar on every page takes one keyword (a
    brand, a material, a style or a product type) and lists the matching
    products three, four or five to a page (Easy, Medium, Hard); items open to a page with their options (size,
    colour), which must be chosen before buying. The shop is full of near
    misses: for every listed product there are copies that differ in one
    attribute (brand, material or style) or cost more than the cap, and many
    other products share some of its words. Search results have a fixed
    order, so a well-chosen keyword saves paging.

    ## Goal
    "Buy: (1) a cotton v-neck t-shirt by Nimbus, size m, colour navy, under
    $30.00; (2) ..." (one product on Easy, three on Medium, seven on Hard).

    ## Actions
    Free-form text. Admissible: ``search <keyword>`` (any page), ``next page``
    and ``previous page`` (results), ``view <code>`` for a product on the
    current results page, ``select <option> <value>``, ``buy`` once every
    option is chosen, and ``back`` (item page), ``list`` and ``look``.
    Anything else costs a turn with ``valid_action=False``.

    ## Observations
    The feedback of the last command, the current page, and what is still to
    buy. ``info["progress"]``: the share of the listed products bought.

    ## Rewards
    1.0 on the turn the last listed product is bought, 0 otherwise.

    ## Episode end
    ``terminated`` when every listed product has been bought (``won``), or as
    soon as anything else is bought: a product that is not on the list, one
    over its price cap, a listed one with a wrong option, or one bought twice
    (``lost``). ``truncated`` only by a turn budget wrapper (`TurnBudget`).

    ## Oracle
    Exact over the shop's own search engine: each purchase ends on the home
    page, so the fewest turns are the cheapest way to buy one remaining
    product from where the agent stands, plus, for every other one, a search
    with its best keyword, the paging to it, viewing it, choosing each option
    and buying. Setbacks: the results jump back to the first page, a chosen
    option is cleared, or the session expires to the home page; only ones
    that lengthen the plan, or at least keep it.

    ## Arguments
    ``difficulty``: ``"easy"`` (1 product, 44 in the shop, optimal 5-7
    turns), ``"medium"`` (3 products, 92, 15-20), ``"hard"`` (7, 185, 35-46):
    the worlds of seeds 0-299 (every product takes about 5 turns, so the
    configs' bounds of 12, 30 and 60 are not reached). ``render_mode``: ``"ansi"`` or ``"human"``. Any int field of
    `ShopConfig` overrides the difficulty's value by keyword; unknown keywords are a
    ``TypeError``. A shop holds at most `MAX_PRODUCTS` (9,000) products, ``catalog`` +
    ``items`` x (1 + ``near_misses``), each with its own code; a list at most
    `MAX_ITEMS` (50), a page at most `MAX_PAGE_SIZE` (100) results, and the list's
    ``list`` answer above a full page must fit in one observation together (50 items
    with 40 results a page do; 50 with 100 are refused); and every purchase takes at
    least 5 turns, so ``items`` is at most ``max_distance`` // 5.

    ## Registered configurations
    ``turnbudget/Shop-Easy-v0`` (budget 30), ``turnbudget/Shop-Medium-v0``
    (budget 64), ``turnbudget/Shop-Hard-v0`` (budget 128).
    ``turnbudget/Shop-v0`` takes ``difficulty`` and config fields as kwargs;
    its budget is the difficulty's, or twice ``max_distance`` when larger.

    ## Version history
    v0: initial release.
    """

    _mutable_lists = ("_bought",)
    _world_attributes = (
        "_products", "_by_code", "_wanted", "_wanted_by_product", "_index", "_vocabulary",
        "_home_cost", "_search_commands",
    )  # fmt: skip

    configs = CONFIGS
    default_budgets = DEFAULT_BUDGETS

    def __init__(self, difficulty: str = "easy", render_mode: str | None = None, **config: int):
        super().__init__(difficulty=difficulty, render_mode=render_mode, **config)
        cfg = self.config
        if not 1 <= cfg.items <= MAX_ITEMS:
            raise ValueError(
                f"Expect `items` to be from 1 to {MAX_ITEMS} (the shopping list fits in one "
                f"observation), got {cfg.items}"
            )
        if cfg.items * _TURNS_PER_PURCHASE > cfg.max_distance:
            raise ValueError(
                f"Expect `items` x {_TURNS_PER_PURCHASE} <= `max_distance` (a purchase takes "
                f"{_TURNS_PER_PURCHASE} turns at least: a search, a view, two selections and the "
                f"buy), got {cfg.items} x {_TURNS_PER_PURCHASE} > {cfg.max_distance}"
            )
        if cfg.page_size < 1:
            raise ValueError(f"Expect `page_size` to be a positive int, got {cfg.page_size}")
        if cfg.page_size > MAX_PAGE_SIZE:
            raise ValueError(
                f"Expect `page_size` to be from 1 to {MAX_PAGE_SIZE} (a page of results fits in "
                f"one observation), got {cfg.page_size}"
            )
        longest = _longest_observation(cfg.items, cfg.page_size)
        if longest > MAX_OBSERVATION_LENGTH:
            raise ValueError(
                f"Expect the shopping list's `list` answer above a full page of results to fit "
                f"in one observation ({MAX_OBSERVATION_LENGTH:,} characters), got up to "
                f"{longest:,} with items={cfg.items} and page_size={cfg.page_size}: list fewer "
                "items or show fewer results a page"
            )
        products = cfg.catalog + cfg.items * (1 + cfg.near_misses)
        if products > MAX_PRODUCTS:
            raise ValueError(
                f"Expect `catalog` + `items` x (1 + `near_misses`) <= {MAX_PRODUCTS:,} products "
                f"(each has a code of its own), got {cfg.catalog} + {cfg.items} x "
                f"(1 + {cfg.near_misses}) = {products:,}"
            )
        self._view: _View = _HOME
        self._bought: list[bool] = []
        self._selected: tuple[tuple[str, str], ...] = ()

    # -- generation ----------------------------------------------------------------

    def _generate(self) -> None:
        cfg = self.config
        for _ in range(_MAX_GENERATION_TRIES):
            if not self._build_shop(cfg):
                continue
            distance = self._distance()  # (the public one waits for the reset to finish)
            if cfg.min_distance <= distance <= cfg.max_distance:
                break
        else:  # only config overrides can make the distance range unreachable
            raise RuntimeError(
                f"Could not generate a {type(self).__name__} with {self.config} in "
                f"{_MAX_GENERATION_TRIES} tries: widen [min_distance, max_distance]"
            )

    def _build_shop(self, cfg: ShopConfig) -> bool:
        rng = self.np_random
        n = cfg.catalog + cfg.items * (1 + cfg.near_misses)
        draws = rng.integers(0, 1 << 30, size=(n, 6)).tolist()
        products: list[list[Any]] = []
        for type_draw, brand, material, style, price, _ in draws:
            kind = type_draw % len(_TYPES)
            _, materials, styles, _ = _TYPES[kind]
            products.append(
                [kind, _BRANDS[brand % len(_BRANDS)], materials[material % 4], styles[style % 4],
                 1000 + price % 9000]
            )  # fmt: skip
        # The listed products come first in `products`, each followed by its near misses.
        wanted: list[tuple[int, tuple[tuple[str, str], ...], int]] = []
        for item in range(cfg.items):
            base = item * (1 + cfg.near_misses)
            kind, brand, material, style, price = products[base]
            options = tuple(
                (dim, values[(draws[base][5] >> (4 * i)) % len(values)])
                for i, (dim, values) in enumerate(_TYPES[kind][3].items())
            )
            cap = (price // 500 + 1) * 500  # the next round $5 above the price
            wanted.append((base, options, cap))
            for miss in range(1, cfg.near_misses + 1):
                copy = [kind, brand, material, style, price]
                which = draws[base + miss][0] % 4
                if which == 0:
                    copy[1] = _BRANDS[(_BRANDS.index(brand) + 1 + draws[base + miss][1] % 7) % 8]
                elif which == 1:
                    materials = _TYPES[kind][1]
                    copy[2] = materials[
                        (materials.index(material) + 1 + draws[base + miss][2] % 3) % 4
                    ]
                elif which == 2:
                    styles = _TYPES[kind][2]
                    copy[3] = styles[(styles.index(style) + 1 + draws[base + miss][3] % 3) % 4]
                else:
                    copy[4] = cap + 1 + draws[base + miss][4] % 2000
                products[base + miss] = copy
        # No other product may fit a listed description: any that does costs more than the cap.
        listed = {tuple(products[base][:4]): cap for base, _, cap in wanted}
        if len(listed) < cfg.items:
            return False  # two listed products with the same description: draw again
        bases = {base for base, _, _ in wanted}
        for index, product in enumerate(products):
            cap = listed.get(tuple(product[:4]))
            if cap is not None and index not in bases and product[4] <= cap:
                product[4] = cap + 1 + product[4] % 2000
        # Shuffle the shop: the catalogue order is the (fixed) relevance order of every search.
        order = rng.permutation(n).tolist()
        position = {old: new for new, old in enumerate(order)}
        # Distinct product codes without drawing from all 9000: a random start and a stride
        # coprime with 9000 walk the codes without repeats (there are at most 9000 products).
        start, stride = rng.integers(MAX_PRODUCTS, size=2).tolist()
        stride = _STRIDES[stride % len(_STRIDES)]
        self._products: list[_Product] = []
        index: dict[str, list[int]] = {}
        for new, old in enumerate(order):
            kind, brand, material, style, price = products[old]
            keywords = (brand.lower(), material, style, _TYPES[kind][0])
            code = f"p{1000 + (start + new * stride) % MAX_PRODUCTS}"
            self._products.append((code, kind, brand, material, style, price))
            for word in keywords:
                found = index.get(word)
                if found is None:
                    index[word] = [new]
                else:
                    found.append(new)
        self._by_code = {p[0]: i for i, p in enumerate(self._products)}
        self._wanted = [(position[base], options, cap) for base, options, cap in wanted]
        self._wanted_by_product = {w[0]: i for i, w in enumerate(self._wanted)}
        self._index = index
        self._vocabulary = sorted(index)
        self._bought = [False] * cfg.items
        self._view, self._selected = _HOME, ()
        self._home_cost = [self._cost_from_home(i) for i in range(cfg.items)]
        lines = [f"({i + 1}) {self._wish_text(i)}" for i in range(cfg.items)]
        self.goal = "Buy: " + "; ".join(lines) + "."
        self._search_commands = [f"search {w}" for w in self._vocabulary]
        return True

    def results(self, word: str) -> list[int]:
        """Indices of the products a search for ``word`` lists, in order."""
        return self._index.get(word, [])

    # -- perception ------------------------------------------------------------------

    def _wish_text(self, item: int) -> str:
        product, options, cap = self._wanted[item]
        _, kind, brand, material, style, _ = self._products[product]
        chosen = ", ".join(f"{dim} {value}" for dim, value in options)
        return f"a {material} {style} {_TYPES[kind][0]} by {brand}, {chosen}, under {_money(cap)}"

    def _line(self, index: int) -> str:
        code, kind, brand, material, style, price = self._products[index]
        return f"[{code}] {brand} {material} {style} {_TYPES[kind][0]}, {_money(price)}"

    def _describe(self) -> str:
        view = self._view
        if view[0] == "home":
            page = "You are on the shop's home page. Search with `search <keyword>`."
        elif view[0] == "results":
            _, word, number = view
            found = self.results(word)
            pages = max(1, -(-len(found) // self.config.page_size))
            shown = found[number * self.config.page_size : (number + 1) * self.config.page_size]
            lines = [self._line(i) for i in shown] or ["No products match."]
            page = f'Results for "{word}" (page {number + 1} of {pages}):\n' + "\n".join(lines)
        else:
            index = view[1]
            options = _TYPES[self._products[index][1]][3]
            lines = [self._line(index)]
            lines += [f"{dim.capitalize()}: {', '.join(values)}" for dim, values in options.items()]
            chosen = ", ".join(f"{d} {v}" for d, v in self._selected) or "nothing yet"
            lines.append(f"Chosen: {chosen}.")
            page = "\n".join(lines)
        left = [f"({i + 1})" for i, done in enumerate(self._bought) if not done]
        return f"{page}\nStill to buy: {' '.join(left)} (type `list` to see the list)."

    def _admissible(self) -> list[str]:
        view = self._view
        commands = []
        if view[0] == "results":
            _, word, number = view
            found = self.results(word)
            shown = found[number * self.config.page_size : (number + 1) * self.config.page_size]
            commands += [f"view {self._products[i][0]}" for i in shown]
            if (number + 1) * self.config.page_size < len(found):
                commands.append("next page")
            if number > 0:
                commands.append("previous page")
        elif view[0] == "item":
            options = _TYPES[self._products[view[1]][1]][3]
            commands += [f"select {dim} {v}" for dim, values in options.items() for v in values]
            if len(self._selected) == len(options):
                commands.append("buy")
            commands.append("back")
        return [*commands, *self._search_commands, "list", "look"]

    # -- dynamics --------------------------------------------------------------------

    def _apply(self, command: str) -> str:
        verb, _, rest = command.partition(" ")
        if verb == "search":
            self._view = ("results", rest, 0)
            return f'You search for "{rest}".'
        if command in ("next page", "previous page"):
            _, word, number = self._view
            self._view = ("results", word, number + (1 if verb == "next" else -1))
            return f"You go to the {verb} page."
        if verb == "view":
            _, word, number = self._view
            self._view = ("item", self._by_code[rest], word, number)
            self._selected = ()
            return f"You open {rest}."
        if verb == "select":
            dim, _, value = rest.partition(" ")
            self._selected = tuple(
                sorted([(d, v) for d, v in self._selected if d != dim] + [(dim, value)])
            )
            return f"You choose {dim} {value}."
        if verb == "back":
            _, _, word, number = self._view
            self._view = ("results", word, number)
            self._selected = ()
            return "You go back to the results."
        if verb == "buy":
            return self._buy()
        if verb == "list":
            marks = ["bought" if done else "to buy" for done in self._bought]
            return "Shopping list: " + "; ".join(
                f"({i + 1}, {mark}) {self._wish_text(i)}" for i, mark in enumerate(marks)
            )
        return "You look at the page again."

    def _buy(self) -> str:
        index = self._view[1]
        item = self._wanted_by_product.get(index)
        name = self._line(index)
        self._view, selected = _HOME, self._selected
        self._selected = ()
        if item is None or self._bought[item]:
            self._lost = True
            why = "it was already bought" if item is not None else "it is not on your list"
            return f"You bought {name}, but {why}. Order failed."
        if selected != tuple(sorted(self._wanted[item][1])):
            self._lost = True
            return f"You bought {name} with the wrong options. Order failed."
        self._bought[item] = True
        if all(self._bought):
            self._won = True
            return f"You bought {name}. Your shopping is done!"
        return f"You bought {name}. Back to the home page."

    def _explain_invalid(self, command: str, raw_action: str) -> str:
        verb, _, rest = command.partition(" ")
        if verb == "search":
            if not rest:
                return "Search for what? Type `search <keyword>`."
            if " " in rest:
                return "The search bar takes one keyword at a time, e.g. `search cotton`."
            return f'No product mentions "{sanitize_for_display(rest)}".'
        if verb == "buy" and self._view[0] == "item":
            return "Choose every option (e.g. `select size m`) before buying."
        if verb in ("buy", "select", "back") and self._view[0] != "item":
            return f"You can only {verb} on a product page."
        if verb == "view":
            return "You can only view a product listed on the current results page."
        if verb in ("next", "previous"):
            return "There is no such page."
        return super()._explain_invalid(command, raw_action)

    def _progress(self) -> float:
        return sum(self._bought) / len(self._bought)

    # -- oracle ----------------------------------------------------------------------

    def _option_count(self, item: int) -> int:
        return len(self._wanted[item][1])

    def _page_of(self, item: int, word: str) -> int | None:
        found = self.results(word)
        product = self._wanted[item][0]
        return found.index(product) // self.config.page_size if product in found else None

    def _cost_from_home(self, item: int) -> int:
        """search (best keyword) + paging + view + one select per option + buy."""
        product = self._wanted[item][0]
        pages = min(self._page_of(item, w) for w in _keywords(self._products[product]))
        return 1 + pages + 1 + self._option_count(item) + 1

    def _cost_from_here(self, item: int) -> int:
        view, best = self._view, self._home_cost[item]
        if view[0] == "item" and view[1] == self._wanted[item][0]:
            wrong = sum(1 for option in self._wanted[item][1] if option not in self._selected)
            return min(best, wrong + 1)
        if view[0] in ("results", "item"):
            word, number = view[-2:]
            page = self._page_of(item, word)
            if page is not None:
                back = 1 if view[0] == "item" else 0
                best = min(best, back + abs(page - number) + 1 + self._option_count(item) + 1)
        return best

    def distance_to_goal(self) -> int | None:
        if not self._in_episode:
            raise reset_needed("distance_to_goal")
        return self._distance()

    def _distance(self) -> int | None:
        if self._won:
            return 0
        if self._lost:
            return None
        left = [i for i, done in enumerate(self._bought) if not done]
        base = sum(self._home_cost[i] for i in left)
        return base + min(self._cost_from_here(i) - self._home_cost[i] for i in left)

    def optimal_actions(self) -> list[str]:
        if not self._in_episode:
            raise reset_needed("optimal_actions")
        distance = self.distance_to_goal()
        if not distance:
            return []
        optimal = []
        saved = (self._view, self._selected, list(self._bought), self._won, self._lost)
        for command in self._admissible_now():
            if command in ("list", "look"):
                continue
            self._apply(command)
            if self.distance_to_goal() == distance - 1:
                optimal.append(command)
            self._view, self._selected, bought, self._won, self._lost = saved
            self._bought = list(bought)
        return optimal

    def inject_setback(self, rng: np.random.Generator) -> str:
        """Results back to page one, a chosen option cleared, or back to the home page."""
        self._check_setback(rng)
        before = self.distance_to_goal()
        if not before:
            return ""
        view = self._view
        candidates: list[tuple[_View, tuple[tuple[str, str], ...], str]] = []
        if view[0] == "results" and view[2] > 0:
            candidates.append(
                (("results", view[1], 0), (), "The page reloads and jumps back to page 1.")
            )
        for option in self._selected:
            left = tuple(o for o in self._selected if o != option)
            candidates.append((view, left, f"A glitch clears your choice of {option[0]}."))
        if view[0] != "home":
            candidates.append((_HOME, (), "Your session expires: you are back on the home page."))
        saved = (self._view, self._selected)
        scored = []
        for new_view, selected, text in candidates:
            self._view, self._selected = new_view, selected
            scored.append((self.distance_to_goal(), new_view, selected, text))
        self._view, self._selected = saved
        worse = [c for c in scored if c[0] > before] or [c for c in scored if c[0] >= before]
        if not worse:
            return "The page flickers, but nothing changes."
        _, self._view, self._selected, text = worse[int(rng.integers(len(worse)))]
        self._state_changed()
        return text


def _keywords(product: _Product) -> tuple[str, str, str, str]:
    _, kind, brand, material, style, _ = product
    return (brand.lower(), material, style, _TYPES[kind][0])


def _longest_observation(items: int, page_size: int) -> int:
    """The most characters a step's observation takes: the `list` answer (each item's longest
    description) above a full page of the longest result lines, and the status line. Each
    alone fits (`MAX_ITEMS`, `MAX_PAGE_SIZE`); 50 items above a page of 100 were cut mid-line,
    their view commands admissible for products the agent could not see."""
    money = len(_money(99_999))  # (prices stay under $120)
    brand = max(map(len, _BRANDS))
    wish = max(  # "a {material} {style} {type} by {brand}, {dim value, ...}, under $X"
        len(f"a   {name} by , , under ") + max(map(len, materials)) + max(map(len, styles))
        + brand + len(", ".join(f"{d} {max(vs, key=len)}" for d, vs in options.items())) + money
        for name, materials, styles, options in _TYPES
    )  # fmt: skip
    line = max(  # "[p1234] {brand} {material} {style} {type}, $X"
        len(f"[p1234]    {name}, ") + brand + max(map(len, materials)) + max(map(len, styles))
        + money
        for name, materials, styles, _ in _TYPES
    )  # fmt: skip
    numbers = [f"({i + 1})" for i in range(items)]
    listing = len("Shopping list: ") + sum(len(f"{n[:-1]}, to buy) ") + wish for n in numbers)
    listing += len("; ") * (items - 1)
    keyword = max(brand, *(len(w) for t in _TYPES for w in (t[0], *t[1], *t[2])))
    pages = len(str(MAX_PRODUCTS))
    header = len('Results for "" (page  of ):\n') + keyword + 2 * pages
    status = len("\nStill to buy:  (type `list` to see the list).") + len(" ".join(numbers))
    return listing + len("\n\n") + header + page_size * (line + 1) + status


def _money(cents: int) -> str:
    return f"${cents // 100}.{cents % 100:02d}"
