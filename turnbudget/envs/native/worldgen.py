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
    "room_name",
    "sample_name_ids",
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
    draws = rng.random(2 * n + 1).tolist()
    start = int(draws[0] * n)
    used = 1
    stack = [start]
    visited[start] = True
    while stack:
        cell = stack[-1]
        options = [pair for pair in neighbours[cell] if not visited[pair[1]]]
        if not options:
            stack.pop()
            continue
        direction, nxt = options[int(draws[used] * len(options))]
        used += 1
        exits[cell][direction] = nxt
        exits[nxt][OPPOSITE[direction]] = cell
        visited[nxt] = True
        stack.append(nxt)
    walls = [pair for pair in _south_east_pairs(width, height) if pair[1] not in exits[pair[0]]]
    for index in rng.permutation(len(walls))[:extra_passages].tolist():
        cell, direction, nxt = walls[index]
        exits[cell][direction] = nxt
        exits[nxt][OPPOSITE[direction]] = cell
    return exits


@functools.lru_cache(maxsize=64)
def _south_east_pairs(width: int, height: int) -> tuple[tuple[int, str, int], ...]:
    """Every (cell, "south"|"east", neighbour) of the grid: each inner wall once."""
    return tuple(
        (cell, d, c)
        for cell, pairs in enumerate(_grid_neighbours(width, height))
        for d, c in pairs
        if d in ("south", "east")
    )


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


def sample_name_ids(count: int, rng: np.random.Generator) -> list[int]:
    """``count`` distinct room-name ids (the same draw as `sample_names`); `room_name`
    spells one, so games can name rooms only when they are first described."""
    total = len(_ADJECTIVES) * len(_NOUNS)
    if count > total:
        raise ValueError(f"Expect at most {total} rooms, got {count}")
    return rng.choice(total, size=count, replace=False).tolist()


def room_name(name_id: int) -> str:
    """The room name with this id, such as "the Dusty Cellar"."""
    return f"the {_ADJECTIVES[name_id // len(_NOUNS)]} {_NOUNS[name_id % len(_NOUNS)]}"


def sample_names(count: int, rng: np.random.Generator) -> list[str]:
    """``count`` distinct room names such as "the Dusty Cellar"."""
    return [room_name(i) for i in sample_name_ids(count, rng)]
