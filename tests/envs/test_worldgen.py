"""The seeded building blocks of the native worlds: maze law, distances, batched draws."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from turnbudget.envs.native.worldgen import (
    Draws,
    _grid_neighbours,
    bfs_distances,
    grid_maze,
    grid_maze_passages,
    passage_layers,
    sample_name_ids,
)


def backtracker_law(width: int, height: int, extra_passages: int) -> dict[frozenset, Fraction]:
    """The exact law of the textbook maze: a uniform start, then a depth-first search that
    steps to a uniform unvisited neighbour (backtracking when there is none), then
    ``extra_passages`` walls knocked down, a uniform subset of those left."""
    neighbours = [[c for _, c in pairs] for pairs in _grid_neighbours(width, height)]
    every_edge = {frozenset((a, b)) for a, near in enumerate(neighbours) for b in near}
    trees: dict[frozenset, Fraction] = {}

    def search(stack, visited, edges, p):
        while stack:
            options = [c for c in neighbours[stack[-1]] if c not in visited]
            if options:
                for c in options:
                    search(
                        [*stack, c],
                        visited | {c},
                        edges | {frozenset((stack[-1], c))},
                        p / len(options),
                    )
                return
            stack = stack[:-1]
        trees[frozenset(edges)] = trees.get(frozenset(edges), Fraction(0)) + p

    n = width * height
    for start in range(n):
        search([start], frozenset([start]), frozenset(), Fraction(1, n))
    law: dict[frozenset, Fraction] = {}
    for tree, p in trees.items():
        walls = sorted(every_edge - tree, key=sorted)
        subsets = list(itertools.combinations(walls, min(extra_passages, len(walls))))
        for subset in subsets:
            maze = tree | frozenset(subset)
            law[maze] = law.get(maze, Fraction(0)) + p / len(subsets)
    return law


def edges_of(exits: list[dict[str, int]]) -> frozenset:
    return frozenset(frozenset((a, b)) for a, room in enumerate(exits) for b in room.values())


@pytest.mark.parametrize(("width", "height", "extra"), [(3, 3, 0), (2, 4, 0), (2, 3, 1)])
def test_grid_maze_has_the_law_of_the_textbook_depth_first_maze(width, height, extra):
    """Samples of `grid_maze` fit the exact law of the recursive backtracker (every maze
    it can make, with its probability): speed-ups must not change which mazes come out
    how often. Pearson's test at a fixed seed, failing below p = 3e-5."""
    law = backtracker_law(width, height, extra)
    samples = 60_000
    rng = np.random.default_rng(2026)
    counts = Counter(edges_of(grid_maze(width, height, extra, rng)) for _ in range(samples))
    assert set(counts) <= set(law), "a maze the backtracker can never make"
    chi2 = sum((counts[m] - samples * float(p)) ** 2 / (samples * float(p)) for m, p in law.items())
    dof = len(law) - 1
    # Wilson-Hilferty: chi2 / dof is close to normal after a cube root.
    z = ((chi2 / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
    assert z < 4.0, f"chi2 = {chi2:.1f} on {dof} degrees of freedom"


@pytest.mark.parametrize(
    ("width", "height", "extra"), [(7, 7, 5), (10, 10, 8), (1, 6, 3), (4, 4, 99)]
)
def test_mazes_are_connected_with_the_passages_asked_for(width, height, extra):
    inner_walls = (width - 1) * height + width * (height - 1)
    for seed in range(30):
        passages = grid_maze_passages(width, height, extra, np.random.default_rng(seed))
        exits = grid_maze(width, height, extra, np.random.default_rng(seed))
        assert len(edges_of(exits)) == min(width * height - 1 + extra, inner_walls)
        assert all(
            (exits[room].get(d) is not None) == bool(passages[room] & bit)
            for room in range(width * height)
            for d, bit in (("north", 1), ("south", 2), ("east", 4), ("west", 8))
        )
        source = seed % (width * height)
        distance, layers = passage_layers(passages, width, source)
        assert distance == bfs_distances(exits, source)
        assert min(distance) == 0  # connected
        assert [sorted(layer) for layer in layers] == [
            sorted(r for r, d in enumerate(distance) if d == k) for k in range(len(layers))
        ]


def test_draws_are_the_generators_numbers_in_order():
    draws, rng = Draws(np.random.default_rng(5), batch=7), np.random.default_rng(5)
    taken = [draws.index(10) for _ in range(5)] + draws.floats(20) + [draws.index(1000)]
    expected = rng.random(32).tolist()  # batches of 7, then a batch sized to the request
    assert taken[:5] == [int(u * 10) for u in expected[:5]]
    assert taken[5:25] == expected[5:25]


def test_draws_sample_distinct_elements_uniformly():
    draws = Draws(np.random.default_rng(0))
    firsts = Counter()
    for _ in range(6000):
        picked = draws.sample("abcdef", 3)
        assert len(set(picked)) == 3
        firsts[picked[0]] += 1
    assert set(firsts) == set("abcdef") and max(firsts.values()) < 1.15 * min(firsts.values())
    assert draws.sample("abc", 0) == [] and sorted(draws.sample("abc", 3)) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="0 <= k <= 3"):
        draws.sample("abc", 4)


@pytest.mark.parametrize("count", [1, 49, 100, 400, 1360])
def test_room_names_are_distinct_and_seeded(count):
    ids = sample_name_ids(count, np.random.default_rng(3))
    assert len(ids) == count == len(set(ids)) and all(0 <= i < 1360 for i in ids)
    assert ids == sample_name_ids(count, np.random.default_rng(3))
    with pytest.raises(ValueError, match="at most 1360 rooms"):
        sample_name_ids(1361, np.random.default_rng(0))
