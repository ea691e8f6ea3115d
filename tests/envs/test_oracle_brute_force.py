"""Every native oracle against a breadth-first search through every admissible command.

`distance_to_goal()` must be the fewest turns to a win and `optimal_actions()` exactly the
admissible commands that start a shortest plan, from the reset state and from states reached
by random play and setbacks; None exactly when no win is reachable. The search plays each
command with the game's own ``step`` on a scratch copy loaded with the state it expands
(the game's whole state, not its observation), and is compared only where it is exhaustive.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from turnbudget.envs.native.crafting import Crafting
from turnbudget.envs.native.keyquest import KeyQuest
from turnbudget.envs.native.maze import Maze
from turnbudget.envs.native.shop import Shop
from turnbudget.envs.native.sokoban import Sokoban

# Per game: its state, and how to load one into a game (what `step` reads and changes).
_STATE = {
    Maze: ("_room",),
    KeyQuest: ("_room", "_open_mask", "_item_loc"),
    Sokoban: ("_player", "_boxes"),
    Shop: ("_view", "_selected", "_bought"),
    Crafting: ("_inventory",),
}


def _get(game: Any) -> tuple:
    values = []
    for name in _STATE[type(game)]:
        value = getattr(game, name)
        if isinstance(value, dict):  # an inventory: what is held, not the zeros left over
            value = tuple(sorted((k, n) for k, n in value.items() if n))
        values.append(tuple(value) if isinstance(value, list) else value)
    return tuple(values)


def _load(game: Any, state: tuple) -> None:
    for name, value in zip(_STATE[type(game)], state):
        if name in ("_item_loc", "_bought"):
            value = list(value)
        elif name == "_inventory":
            value = dict(value)
        setattr(game, name, value)
    game._won = game._lost = game._episode_over = False
    game._state_changed()


def _search(game: Any, depth: int) -> tuple[int | None, set[str], bool]:
    """(fewest turns to a win within ``depth``, the first commands of every such plan,
    whether the search covered every reachable state)."""
    if game._won or game._lost:
        return (0 if game._won else None), set(), True
    scratch = copy.deepcopy(game)
    start = _get(game)
    seen = {start}
    frontier = [start]
    parents: list[dict[Any, set[tuple[Any, str]]]] = []
    for turn in range(1, depth + 1):
        layer: dict[Any, set[tuple[Any, str]]] = {}
        won = False
        for state in frontier:
            _load(scratch, state)
            for command in scratch.admissible_actions():
                _load(scratch, state)
                *_, info = scratch.step(command)
                assert info["valid_action"], command
                if info["lost"]:
                    continue
                after = "won" if info["won"] else _get(scratch)
                won = won or after == "won"
                if after in layer or after not in seen:
                    seen.add(after)
                    layer.setdefault(after, set()).add((state, command))
        parents.append(layer)
        if won:  # back from the win to the first commands of every shortest plan
            on_plan = {"won"}
            for layer in reversed(parents[1:]):
                on_plan = {state for after in on_plan for state, _ in layer[after]}
            return turn, {c for after in on_plan for _, c in parents[0][after]}, True
        frontier = [s for s in layer if s != "won"]
        if not frontier:
            return None, set(), True
    return None, set(), False


def _check(game: Any, depth: int, where: str) -> bool:
    """Compare the oracle with the search; True when the search was exhaustive. Only states
    the oracle puts within ``depth`` turns are searched (and every fifth other one in a game
    whose searches stay cheap), so a search that comes to the depth limit is rare."""
    distance, optimal = game.distance_to_goal(), set(game.optimal_actions())
    far = distance is not None and distance > depth
    if far and (type(game) is Shop or game._state_version % 5):
        return False
    found, first, exhaustive = _search(game, depth)
    if found is not None:
        assert (distance, optimal) == (found, first), where
    elif exhaustive:
        assert (distance, optimal) == (None, set()), where
    else:
        assert distance is None or distance > depth, where
    return exhaustive


def _walk(game_class: type, difficulty: str, seed: int, turns: int, depth: int) -> int:
    """Play ``turns`` turns of mostly optimal, some random commands and some setbacks,
    checking the oracle after each; return how many checks were exhaustive."""
    game = game_class(difficulty)
    game.reset(seed=seed)
    rng = np.random.default_rng(seed)
    exhaustive = _check(game, depth, f"seed {seed} at reset")
    for turn in range(turns):
        if game._won or game._lost:
            break
        u = rng.random()
        if u < 0.15:
            what = game.inject_setback(np.random.default_rng([seed, turn]))
        else:
            commands = game.optimal_actions() if u < 0.6 else []
            commands = commands or game.admissible_actions()
            what = commands[int(rng.integers(len(commands)))]
            game.step(what)
        exhaustive += _check(game, depth, f"seed {seed} turn {turn} after {what!r}")
    return exhaustive


_GAMES = [Maze, KeyQuest, Sokoban, Shop, Crafting]


@pytest.mark.parametrize("game_class", _GAMES, ids=lambda c: c.__name__)
def test_the_oracle_is_the_brute_force_search_on_easy_games(game_class):
    # (Shop: every page lists every search, so only the last turns of a purchase are searched)
    depth, turns = (3, 40) if game_class is Shop else (12, 12)
    assert sum(_walk(game_class, "easy", seed, turns, depth) for seed in range(2)) >= 5


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", ["easy", "medium"])
@pytest.mark.parametrize("game_class", _GAMES, ids=lambda c: c.__name__)
def test_the_oracle_is_the_brute_force_search_on_many_seeds(game_class, difficulty):
    depth, seeds, turns = (4, 5, 90) if game_class is Shop else (13, 30, 40)
    for seed in range(10, 10 + seeds):
        _walk(game_class, difficulty, seed, turns, depth)
