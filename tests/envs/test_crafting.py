"""Rules of the Crafting game: tools gate recipes, recipes are discoverable, the oracle is exact."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from turnbudget.envs.native.crafting import Crafting


def _play_until(game: Crafting, predicate, limit: int = 200) -> None:
    for _ in range(limit):
        if predicate():
            return
        game.step(game.optimal_actions()[0])
    pytest.fail("condition never met along the optimal plan")


def test_a_missing_tool_blocks_a_recipe_with_feedback():
    game = Crafting("medium")
    for seed in range(50):
        game.reset(seed=seed)
        game._inventory = {"plank": 5, "stick": 5}  # everything but the crafting table
        game._state_changed()
        obs, reward, terminated, _, info = game.step("craft wooden pickaxe")
        assert info["valid_action"] is False and reward == 0.0 and not terminated
        assert "You need a crafting table to craft a wooden pickaxe" in obs
        assert game._inventory == {"plank": 5, "stick": 5}  # nothing consumed
        obs, *_, info = game.step("gather stone")
        assert info["valid_action"] is False and "You need a wooden pickaxe to gather stone" in obs
        game.step("craft crafting table")
        obs, *_, info = game.step("craft wooden pickaxe")
        assert info["valid_action"] is True and "You craft a wooden pickaxe" in obs
        assert "gather stone" in info["admissible_actions"]
        return


def test_missing_ingredients_are_named():
    game = Crafting("easy")
    game.reset(seed=0)
    game._inventory = {"plank": 1}
    game._state_changed()
    obs, *_, info = game.step("craft crafting table")
    needed = game._recipes["crafting table"][0]["plank"]
    assert info["valid_action"] is False
    assert f"you need {needed - 1} more plank" in obs


def test_recipes_and_inventory_are_discoverable_in_game():
    game = Crafting("hard")
    obs, info = game.reset(seed=3)
    assert "recipes" in info["admissible_actions"] and "inventory" in info["admissible_actions"]
    assert "Recipes" not in obs  # only on request
    obs, *_ = game.step("recipes")
    for product, (needs, tool) in game._recipes.items():
        line = next(x for x in obs.splitlines() if x.startswith(f"- {product}:"))
        for item, n in needs.items():
            assert f"{n} {item}" in line
        assert (f"needs a {tool}" in line) == bool(tool)
    game.step("gather wood")
    obs, *_ = game.step("inventory")
    assert "wood" in obs.split("\n")[0]


def test_hard_games_need_35_turns_and_a_chain_of_tools():
    game = Crafting("hard")
    for seed in range(20):
        game.reset(seed=seed)
        assert game.distance_to_goal() >= 35
        crafted = []
        while not game._won:
            action = game.optimal_actions()[0]
            crafted.append(action)
            game.step(action)
        for tool in ("crafting table", "wooden pickaxe", "stone pickaxe", "furnace"):
            assert f"craft {tool}" in crafted  # every hard goal needs iron, so every tool


def _brute_force_distance(game: Crafting, limit: int) -> int | None:
    """Breadth-first search over inventories through every admissible command."""
    frontier = [game]
    seen = {tuple(sorted((k, v) for k, v in game._inventory.items() if v))}
    for depth in range(1, limit + 1):
        nxt = []
        for state in frontier:
            for action in state.admissible_actions():
                if not action.startswith(("gather ", "craft ")):
                    continue  # look/recipes/inventory never change the state
                probe = copy.deepcopy(state)
                probe.step(action)
                if probe._won:
                    return depth
                key = tuple(sorted((k, v) for k, v in probe._inventory.items() if v))
                if key not in seen:
                    seen.add(key)
                    nxt.append(probe)
        frontier = nxt
    return None


@pytest.mark.parametrize("seed", range(6))
def test_the_oracle_distance_matches_a_brute_force_search(seed):
    game = Crafting("easy")
    game.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(3):  # from the start and from a few states off the optimal path
        distance = game.distance_to_goal()
        if distance > 9:  # keep the search small
            break
        assert _brute_force_distance(game, distance) == distance
        assert _brute_force_distance(game, distance - 1) is None
        actions = [a for a in game.admissible_actions() if a.startswith(("gather", "craft"))]
        game.step(actions[int(rng.integers(len(actions)))])
        if game._won:
            break


def test_a_setback_breaks_a_held_tool_and_it_can_be_rebuilt():
    game = Crafting("hard")
    game.reset(seed=1)
    _play_until(game, lambda: game._inventory.get("wooden pickaxe", 0) > 0)
    before = game.distance_to_goal()
    narration = game.inject_setback(np.random.default_rng(0))
    assert "breaks" in narration
    assert game.distance_to_goal() > before
    while not game._won:
        game.step(game.optimal_actions()[0])


def _inventory_words(inventory: dict[str, int]) -> str:
    """The inventory sentence, written out from the rules (sorted names, plurals past one)."""
    from turnbudget.envs.native.crafting import _PLURALS

    held = [
        f"{n} {_PLURALS[item] if n > 1 else item}" for item, n in sorted(inventory.items()) if n
    ]
    if not held:
        return "You carry nothing."
    return (
        f"You carry {held[0]}."
        if len(held) == 1
        else (f"You carry {', '.join(held[:-1])} and {held[-1]}.")
    )


def test_the_inventory_text_follows_the_rules_whatever_the_order_and_counts():
    # The text's memos (words per count, sorted names per insertion order) must never show
    # through: any order, zero counts, counts never seen before, a huge count.
    import turnbudget.envs.native.crafting as crafting

    game = Crafting("medium")
    game.reset(seed=0)
    rng = np.random.default_rng(0)
    items = list(crafting._ITEMS)
    for trial in range(300):
        names = rng.choice(items, size=int(rng.integers(0, 8)), replace=False)
        counts = rng.integers(0, 4, size=len(names)).tolist()
        if trial % 10 == 0 and len(names):
            counts[0] = int(rng.integers(5, 10**6))  # (a count no play reaches)
        game._inventory = dict(zip(map(str, names), counts))
        game._state_changed()
        assert game._inventory_text() == _inventory_words(game._inventory)
        obs, *_ = game.step("inventory")
        assert obs.startswith(_inventory_words(game._inventory) + "\n\n")


def test_the_inventory_memos_stay_bounded(monkeypatch):
    import turnbudget.envs.native.crafting as crafting

    monkeypatch.setattr(crafting, "_MAX_MEMO", 5)
    monkeypatch.setattr(crafting, "_WORDS", {})
    monkeypatch.setattr(crafting, "_SORTED_KEYS", {})
    game = Crafting("easy")
    game.reset(seed=0)
    for n in range(1, 40):
        game._inventory = {"wood": n, "plank": n + 1} if n % 2 else {"plank": n + 1, "wood": n}
        assert game._inventory_text() == _inventory_words(game._inventory)
        assert len(crafting._WORDS["wood"]) <= 5 and len(crafting._SORTED_KEYS) <= 5


def test_tool_counts_allow_what_holding_the_tool_allows(monkeypatch):
    # Commands are looked up by the count of each tool held: two of a tool, one, or a
    # zero left by a setback must allow what holding it (or not) allows.
    import turnbudget.envs.native.crafting as crafting

    monkeypatch.setattr(crafting, "_MAX_TOOL_COUNTS", 3)
    game = Crafting("medium")
    game.reset(seed=1)
    base = {"wood": 9, "plank": 9, "stick": 9, "stone": 9, "fiber": 9}

    def commands(**tools: int) -> list[str]:
        game._inventory = {**base, **{k.replace("_", " "): v for k, v in tools.items()}}
        game._state_changed()
        return game.admissible_actions()

    without = commands()
    assert commands(crafting_table=0) == without  # (a tool broken by a setback)
    one = commands(crafting_table=1, wooden_pickaxe=1)
    assert one != without and "gather stone" in one
    for count in (2, 3, 7, 1):
        assert commands(crafting_table=count, wooden_pickaxe=count) == one
    assert len(game._by_tools) <= 3
