"""Seeded building blocks for procedural worlds: grid mazes, graph distances, names."""

from __future__ import annotations

import functools
from collections import deque

import numpy as np

__all__ = [
    "DIRECTIONS",
    "OPPOSITE",
    "bfs_distances",
    "grid_maze",
    "sample_names",
]

DIRECTIONS = ("north", "south", "east", "west")
OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}
_OFFSETS = {"north": (0, -1), "south": (0, 1), "east": (1, 0), "west": (-1, 0)}

# Exits of one room: direction -> neighbouring room index.
Exits = dict[str, int]


@functools.lru_cache(maxsize=64)
def _grid_neighbours(width: int, height: int) -> tuple[tuple[tuple[str, int], ...], ...]:
    """Per cell of the grid, its (direction, neighbour) pairs; cached per grid size."""
    table = []
    for cell in range(width * height):
        x, y = cell % width, cell // width
        pairs = []
        for direction in DIRECTIONS:
            dx, dy = _OFFSETS[direction]
            nx, ny = x + dx, y + dy
            if 0 <= nx < width and 0 <= ny < height:
                pairs.append((direction, ny * width + nx))
        table.append(tuple(pairs))
    return tuple(table)


def grid_maze(
    width: int, height: int, extra_passages: int, rng: np.random.Generator
) -> list[Exits]:
    """A perfect maze on a ``width`` x ``height`` grid (randomized depth-first search),
    then ``extra_passages`` more walls knocked down to make loops.

    Returns, per room, its exits as ``{direction: neighbour}``; passages are two-way.
    """
    n = width * height
    neighbours = _grid_neighbours(width, height)
    exits: list[Exits] = [{} for _ in range(n)]
    visited = [False] * n
    # One batch of random numbers instead of a generator call per carving step.
    draws = iter(rng.random(2 * n + 1).tolist())
    start = int(next(draws) * n)
    stack = [start]
    visited[start] = True
    while stack:
        cell = stack[-1]
        options = [(d, c) for d, c in neighbours[cell] if not visited[c]]
        if not options:
            stack.pop()
            continue
        direction, nxt = options[int(next(draws) * len(options))]
        exits[cell][direction] = nxt
        exits[nxt][OPPOSITE[direction]] = cell
        visited[nxt] = True
        stack.append(nxt)
    walls = [
        (cell, d, c)
        for cell in range(n)
        for d, c in neighbours[cell]
        if d in ("south", "east") and d not in exits[cell]
    ]
    for index in rng.permutation(len(walls))[:extra_passages]:
        cell, direction, nxt = walls[index]
        exits[cell][direction] = nxt
        exits[nxt][OPPOSITE[direction]] = cell
    return exits


def bfs_distances(exits: list[Exits], source: int) -> list[int]:
    """Shortest number of moves from every room to ``source`` (-1 where unreachable)."""
    distance = [-1] * len(exits)
    distance[source] = 0
    queue = deque([source])
    while queue:
        cell = queue.popleft()
        for nxt in exits[cell].values():
            if distance[nxt] < 0:
                distance[nxt] = distance[cell] + 1
                queue.append(nxt)
    return distance


_ADJECTIVES = (
    "Amber", "Ashen", "Azure", "Brass", "Broken", "Cedar", "Chalk", "Cobalt", "Copper", "Crimson",
    "Damp", "Dusty", "Echoing", "Emerald", "Faded", "Frozen", "Gilded", "Granite", "Hollow", "Iron",
    "Ivory", "Jade", "Lantern", "Marble", "Misty", "Mossy", "Narrow", "Obsidian", "Pale", "Quiet",
    "Rusty", "Sandy", "Scarlet", "Silent", "Silver", "Slate", "Sunken", "Twisted", "Velvet", "Willow",
)  # fmt: skip
_NOUNS = (
    "Alcove", "Archive", "Atrium", "Bakery", "Barracks", "Cellar", "Chamber", "Chapel", "Cloister",
    "Corridor", "Crypt", "Den", "Foyer", "Gallery", "Garden", "Hall", "Kitchen", "Larder", "Library",
    "Loft", "Nook", "Observatory", "Pantry", "Parlor", "Passage", "Rotunda", "Salon", "Scullery",
    "Solar", "Stairwell", "Study", "Vault", "Vestibule", "Workshop",
)  # fmt: skip


def sample_names(count: int, rng: np.random.Generator) -> list[str]:
    """``count`` distinct room names such as "the Dusty Cellar"."""
    total = len(_ADJECTIVES) * len(_NOUNS)
    if count > total:
        raise ValueError(f"Expect at most {total} rooms, got {count}")
    picks = rng.choice(total, size=count, replace=False)
    return [f"the {_ADJECTIVES[i // len(_NOUNS)]} {_NOUNS[i % len(_NOUNS)]}" for i in picks]
