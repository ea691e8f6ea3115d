"""Seeded building blocks for procedural worlds: batched draws, grid mazes, distances, names."""

from __future__ import annotations

import functools
import itertools
from collections import deque
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

__all__ = [
    "DIRECTIONS",
    "MAX_ROOMS",
    "OPPOSITE",
    "PASSAGE_BITS",
    "Draws",
    "as_draws",
    "bfs_distances",
    "check_rooms",
    "grid_maze",
    "grid_maze_passages",
    "passage_layers",
    "passage_steps",
    "room_name",
    "sample_name_ids",
    "sample_names",
]

DIRECTIONS = ("north", "south", "east", "west")
OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}
_OFFSETS = {"north": (0, -1), "south": (0, 1), "east": (1, 0), "west": (-1, 0)}

T = TypeVar("T")

# Exits of one room: direction -> neighbouring room index.
Exits = dict[str, int]


class Draws:
    """Uniform numbers from a seeded generator, fetched a batch at a time.

    A numpy call costs microseconds (``choice`` without replacement the most), as much as
    several steps of a game; one batch serves the dozens of small choices that build a
    world. Deterministic: the draws are the generator's, consumed in order. Every helper
    here that takes a generator also takes a `Draws`, so a world can be built from one.
    """

    def __init__(self, rng: np.random.Generator, batch: int = 128):
        self._rng, self._batch = rng, batch
        self._values: list[float] = []
        self._next = 0

    def floats(self, k: int) -> list[float]:
        """``k`` uniform floats in ``[0, 1)``."""
        if self._next + k > len(self._values):
            self._values = (
                self._values[self._next :] + self._rng.random(max(self._batch, k)).tolist()
            )
            self._next = 0
        values = self._values[self._next : self._next + k]
        self._next += k
        return values

    def uniform(self) -> float:
        """A uniform float in ``[0, 1)``."""
        if self._next == len(self._values):
            self._values, self._next = self._rng.random(self._batch).tolist(), 0
        value = self._values[self._next]
        self._next += 1
        return value

    def index(self, n: int) -> int:
        """A uniform integer in ``[0, n)``."""
        if self._next == len(self._values):
            self._values, self._next = self._rng.random(self._batch).tolist(), 0
        value = self._values[self._next]
        self._next += 1
        return int(value * n)

    def choice(self, sequence: Sequence[T]) -> T:
        """A uniform element of a non-empty sequence."""
        return sequence[self.index(len(sequence))]

    def sample(self, sequence: Sequence[T], k: int) -> list[T]:
        """``k`` distinct elements in uniformly random order (a partial Fisher-Yates shuffle)."""
        pool = list(sequence)
        if not 0 <= k <= len(pool):
            raise ValueError(f"Expect 0 <= k <= {len(pool)}, got {k}")
        for i in range(k):
            j = i + self.index(len(pool) - i)
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:k]

    def distinct(self, total: int, k: int) -> list[int]:
        """``k`` distinct integers of ``[0, total)`` in uniformly random order."""
        if 4 * k > total:  # dense: shuffle
            return self.sample(range(total), k)
        # Sparse: uniform draws, skipping repeats, are a uniform ordered sample too.
        ids: dict[int, None] = {}
        while len(ids) < k:
            ids.update(dict.fromkeys([int(u * total) for u in self.floats(k - len(ids))]))
        return list(ids)


def as_draws(rng: np.random.Generator | Draws) -> Draws:
    """``rng`` as a `Draws` (itself if it is one)."""
    return rng if isinstance(rng, Draws) else Draws(rng)


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


#: The bit of each direction in a room's passage mask (`grid_maze_passages`).
PASSAGE_BITS = {"north": 1, "south": 2, "east": 4, "west": 8}
_OPPOSITE_BIT = {1: 2, 2: 1, 4: 8, 8: 4}

# How the depth-first search enters a cell from a neighbour (its parent), or starts there:
# the passage bits to set at the parent and here, and every order of the neighbours left
# to try, each spelled as the (cell, neighbour) pairs to push, last first.
_Entry = tuple[int, int, tuple[tuple[tuple[int, int], ...], ...]]


@functools.lru_cache(maxsize=64)
def _search_table(width: int, height: int) -> tuple[dict[int, _Entry], ...]:
    """Per cell, its `_Entry` by parent (the cell itself: the start); cached per grid size."""

    def orders(cell: int, pairs: list[tuple[str, int]]) -> tuple[tuple[tuple[int, int], ...], ...]:
        return tuple(
            tuple((cell, n) for _, n in reversed(order)) for order in itertools.permutations(pairs)
        )

    table = []
    for cell, pairs in enumerate(_grid_neighbours(width, height)):
        entries: dict[int, _Entry] = {cell: (0, 0, orders(cell, list(pairs)))}
        for direction, parent in pairs:
            here = PASSAGE_BITS[direction]
            others = [pair for pair in pairs if pair[1] != parent]
            entries[parent] = (_OPPOSITE_BIT[here], here, orders(cell, others))
        table.append(entries)
    return tuple(table)


@functools.lru_cache(maxsize=64)
def passage_steps(width: int) -> tuple[tuple[tuple[str, int], ...], ...]:
    """Per passage mask (0-15), its (direction, cell offset) pairs in `DIRECTIONS` order."""
    offsets = {"north": -width, "south": width, "east": 1, "west": -1}
    return tuple(
        tuple((d, offsets[d]) for d in DIRECTIONS if mask & PASSAGE_BITS[d]) for mask in range(16)
    )


def grid_maze_passages(
    width: int, height: int, extra_passages: int, rng: np.random.Generator | Draws
) -> list[int]:
    """A perfect maze on a ``width`` x ``height`` grid (randomized depth-first search),
    then ``extra_passages`` more walls knocked down to make loops.

    Returns, per room (row-major), its passages as a bitmask of `PASSAGE_BITS`;
    `passage_steps` spells a mask as (direction, offset) pairs. The compact form of
    `grid_maze`, for games that build a maze with every reset.
    """
    # Each cell draws one random order of its other neighbours up front, and the search
    # walks on to the first one still unvisited: the same law as choosing uniformly among
    # the unvisited neighbours at each step (the rest of a uniform order is uniform), at
    # half the cost, because the loop below only pops, tests and sets bits.
    n = width * height
    table = _search_table(width, height)
    source = as_draws(rng)
    draws = source.floats(n + 1)
    start = int(draws[n] * n)
    passages = [0] * n
    visited = bytearray(n)
    stack = [(start, start)]
    while stack:
        parent, cell = stack.pop()
        if visited[cell]:
            continue
        visited[cell] = 1
        at_parent, here, options = table[cell][parent]
        passages[parent] |= at_parent
        passages[cell] |= here
        stack += options[int(draws[cell] * len(options))]
    # Knock down walls one at a time, each uniform among those still standing (drawn
    # among every inner wall, redrawn while the draw is a passage: cheaper than listing).
    pairs = _inner_walls(width, height)
    for _ in range(min(extra_passages, len(pairs) - (n - 1))):
        cell, bit, nxt, back = pairs[source.index(len(pairs))]
        while passages[cell] & bit:
            cell, bit, nxt, back = pairs[source.index(len(pairs))]
        passages[cell] |= bit
        passages[nxt] |= back
    return passages


@functools.lru_cache(maxsize=64)
def _inner_walls(width: int, height: int) -> tuple[tuple[int, int, int, int], ...]:
    """Every inner wall of the grid once: (cell, its passage bit, neighbour, the
    neighbour's passage bit), for the cell's south and east sides."""
    return tuple(
        (cell, PASSAGE_BITS[d], nxt, _OPPOSITE_BIT[PASSAGE_BITS[d]])
        for cell, pairs in enumerate(_grid_neighbours(width, height))
        for d, nxt in pairs
        if d in ("south", "east")
    )


def grid_maze(
    width: int, height: int, extra_passages: int, rng: np.random.Generator | Draws
) -> list[Exits]:
    """`grid_maze_passages` with, per room, its exits as ``{direction: neighbour}``;
    passages are two-way."""
    steps = passage_steps(width)
    return [
        {d: cell + offset for d, offset in steps[mask]}
        for cell, mask in enumerate(grid_maze_passages(width, height, extra_passages, rng))
    ]


def passage_layers(
    passages: list[int], width: int, source: int
) -> tuple[list[int], list[list[int]]]:
    """`bfs_distances` over a `grid_maze_passages` maze, and the rooms at each distance."""
    offsets = _passage_offsets(width)
    distance = [-1] * len(passages)
    distance[source] = 0
    frontier = [source]
    layers = [frontier]
    d = 0
    while True:
        d += 1
        reached = []
        for cell in frontier:
            for offset in offsets[passages[cell]]:
                nxt = cell + offset
                if distance[nxt] < 0:
                    distance[nxt] = d
                    reached.append(nxt)
        if not reached:
            return distance, layers
        layers.append(reached)
        frontier = reached


@functools.lru_cache(maxsize=64)
def _passage_offsets(width: int) -> tuple[tuple[int, ...], ...]:
    """Per passage mask, the room offsets of its exits (`passage_steps` without names)."""
    return tuple(tuple(offset for _, offset in steps) for steps in passage_steps(width))


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


#: Most rooms a world can have: every room has a name of its own.
MAX_ROOMS = len(_ADJECTIVES) * len(_NOUNS)


def check_rooms(game: str, width: int, height: int) -> None:
    """Refuse, when a game is built, a grid of rooms with fewer than 2 or more than
    `MAX_ROOMS` rooms (the names run out; the generation would fail only at reset, after
    seconds of work for a large grid).

    Example:
        >>> check_rooms("Maze", 40, 34)
        >>> check_rooms("Maze", 1_000_000, 1)
        Traceback (most recent call last):
        ...
        ValueError: Expect a Maze of at least 2 rooms and at most 1,360 (each has a name of its \
own), got 1000000x1 = 1,000,000
    """
    rooms = width * height
    if not 2 <= rooms <= MAX_ROOMS:
        raise ValueError(
            f"Expect a {game} of at least 2 rooms and at most {MAX_ROOMS:,} (each has a name of "
            f"its own), got {width}x{height} = {rooms:,}"
        )


def sample_name_ids(count: int, rng: np.random.Generator | Draws) -> list[int]:
    """``count`` distinct room-name ids (the same draw as `sample_names`); `room_name`
    spells one, so games can name rooms only when they are first described."""
    if count > MAX_ROOMS:
        raise ValueError(f"Expect at most {MAX_ROOMS} rooms, got {count}")
    return as_draws(rng).distinct(MAX_ROOMS, count)


def room_name(name_id: int) -> str:
    """The room name with this id, such as "the Dusty Cellar"."""
    return f"the {_ADJECTIVES[name_id // len(_NOUNS)]} {_NOUNS[name_id % len(_NOUNS)]}"


def sample_names(count: int, rng: np.random.Generator | Draws) -> list[str]:
    """``count`` distinct room names such as "the Dusty Cellar"."""
    return [room_name(i) for i in sample_name_ids(count, rng)]
