"""Rules of the Shop: near misses lose, the right product with the right options wins."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest

from turnbudget.envs.native.shop import Shop


def _open(game: Shop, product: int) -> None:
    """Search, page and view our way to ``product``'s page."""
    word = game._products[product][2].lower()  # its brand
    game.step(f"search {word}")
    for _ in range(game.results(word).index(product) // game.config.page_size):
        game.step("next page")
    obs, *_, info = game.step(f"view {game._products[product][0]}")
    assert info["valid_action"], obs


def _near_misses(game: Shop, item: int) -> list[int]:
    """Products sharing the type and at least two other attributes with a listed product."""
    target, _, _ = game._wanted[item]
    _, kind, brand, material, style, _ = game._products[target]
    return [
        i
        for i, (_, k, b, m, s, _) in enumerate(game._products)
        if i != target and k == kind and (b == brand) + (m == material) + (s == style) >= 2
    ]


def test_buying_a_near_miss_loses():
    env = gym.make("turnbudget/Shop-Medium-v0")
    for seed in range(10):
        env.reset(seed=seed)
        game = env.unwrapped
        misses = _near_misses(game, 0)
        assert misses, "every listed product has near misses"
        _open(game, misses[0])
        for option in game._wanted[0][1]:  # even with the right options
            game.step(f"select {option[0]} {option[1]}")
        obs, reward, terminated, truncated, info = env.step("buy")
        assert terminated and not truncated and info["lost"] and not info["won"]
        assert reward == 0.0 and "Order failed" in obs
        assert game.distance_to_goal() is None


def test_the_right_product_with_a_wrong_option_loses():
    game = Shop("easy")
    game.reset(seed=4)
    target, options, _ = game._wanted[0]
    _open(game, target)
    (dim, value), *rest = options
    values = game._describe().split(f"{dim.capitalize()}: ")[1].split("\n")[0].split(", ")
    wrong = next(v for v in values if v != value)
    game.step(f"select {dim} {wrong}")
    for d, v in rest:
        game.step(f"select {d} {v}")
    obs, reward, terminated, _, info = game.step("buy")
    assert terminated and info["lost"] and "wrong options" in obs


def test_a_correct_purchase_with_the_right_options_wins():
    env = gym.make("turnbudget/Shop-Easy-v0")
    env.reset(seed=2)
    game = env.unwrapped
    target, options, cap = game._wanted[0]
    assert game._products[target][5] <= cap
    _open(game, target)
    obs, *_, info = env.step("buy")
    assert info["valid_action"] is False and "Choose every option" in obs
    for dim, value in options:
        env.step(f"select {dim} {value}")
    obs, reward, terminated, truncated, info = env.step("buy")
    assert terminated and not truncated and info["won"] and reward == 1.0


def test_every_listed_description_has_exactly_one_matching_product():
    for difficulty in ("easy", "medium", "hard"):
        game = Shop(difficulty)
        for seed in range(10):
            game.reset(seed=seed)
            for target, _, cap in game._wanted:
                description = game._products[target][1:5]
                fits = [
                    i for i, p in enumerate(game._products) if p[1:5] == description and p[5] <= cap
                ]
                assert fits == [target]


def test_search_takes_one_keyword_and_explains_otherwise():
    game = Shop("easy")
    game.reset(seed=0)
    obs, *_, info = game.step("search cotton t-shirt")
    assert info["valid_action"] is False and "one keyword" in obs
    obs, *_, info = game.step("search unobtainium")
    assert info["valid_action"] is False and "unobtainium" in obs
    obs, *_, info = game.step("buy")
    assert info["valid_action"] is False and "product page" in obs


def _brute_force_distance(game: Shop, limit: int) -> int | None:
    """Breadth-first search through every admissible command, over (page, choices, bought).

    States are set on one scratch copy and admissible commands applied with the game's
    own ``_apply`` (what ``step`` does with them), much cheaper than copying per edge."""
    scratch = copy.deepcopy(game)

    def load(state: tuple) -> None:
        scratch._view, scratch._selected, bought = state
        scratch._bought, scratch._won, scratch._lost = list(bought), False, False
        scratch._state_changed()

    start = (game._view, game._selected, tuple(game._bought))
    seen = {start}
    frontier = [start]
    for depth in range(1, limit + 1):
        nxt = []
        for state in frontier:
            load(state)
            for action in scratch._admissible():
                load(state)
                scratch._apply(action)
                if scratch._won:
                    return depth
                after = (scratch._view, scratch._selected, tuple(scratch._bought))
                if not scratch._lost and after not in seen:
                    seen.add(after)
                    nxt.append(after)
        frontier = nxt
    return None


@pytest.mark.parametrize("seed", range(3))
def test_the_oracle_distance_matches_a_brute_force_search(seed):
    game = Shop("easy")
    game.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(3):  # from the start and from states off the optimal path
        distance = game.distance_to_goal()
        assert _brute_force_distance(game, distance) == distance  # not found any sooner
        actions = [a for a in game.admissible_actions() if a != "buy"]
        game.step(actions[int(rng.integers(len(actions)))])


def test_setbacks_reset_the_page_or_clear_an_option():
    game = Shop("hard")
    rng = np.random.default_rng(0)
    narrations = set()
    for seed in range(10):
        game.reset(seed=seed)
        for turn in range(40):
            if turn % 4 == 3:
                before = game.distance_to_goal()
                text = game.inject_setback(rng)
                assert game.distance_to_goal() >= before
                narrations.add(text.split(" ")[0])
            game.step(game.optimal_actions()[0])
    assert {"The", "A", "Your"} <= narrations
