"""An exact Sokoban solver in player moves: breadth-first searches over box sets, bit-parallel."""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Any

__all__ = [
    "MAX_BOXES",
    "MAX_PLACEMENTS",
    "MAX_STATES",
    "SokobanSolver",
    "bits",
    "check_oracle_size",
]

# The exact oracle tabulates every solvable state, so a level it cannot take is refused
# before any work (`check_oracle_size`), on three counts; the generated levels (at most 3 boxes,
# a few thousand placements, half a million states) are far below each.
#: Most boxes: the heuristic tries every assignment of boxes to targets (boxes! of them)
#: for every box set it meets (11 boxes: 39,916,800 each, which exhausts memory).
MAX_BOXES = 6
#: Most ways to place the boxes on the squares a box can still be solved from.
MAX_PLACEMENTS = 500_000
#: Most states in the table: box placements x player squares (20 million take 10-20 s
#: and a few hundred MB; a 100x100 room with one box has 100 million and takes 6 minutes).
MAX_STATES = 20_000_000


def check_oracle_size(squares: int, floor: int, boxes: int) -> None:
    """Refuse a level the exact oracle cannot take with a ``ValueError`` naming the count,
    before any work.

    Args:
        squares: the squares a box may stand on (the live squares; a room's size for a config).
        floor: the squares the player may stand on (boxes' included).
        boxes: the number of boxes.

    Every count is bounded work: the boxes are checked first, so the binomial
    coefficient is a product of at most `MAX_BOXES` terms.

    Example:
        >>> check_oracle_size(20, 20, 3)
        >>> check_oracle_size(20, 20, 11)
        Traceback (most recent call last):
        ...
        ValueError: Expect a Sokoban level the exact oracle can tabulate: at most 6 boxes (the \
heuristic tries all 11! assignments of boxes to targets), got 11; use fewer boxes or a smaller room
        >>> check_oracle_size(9_604, 10_000, 1)
        Traceback (most recent call last):
        ...
        ValueError: Expect a Sokoban level the exact oracle can tabulate: at most 20,000,000 \
states (box placements x player squares), got 9,604 x 9,999 = 96,030,396; use fewer boxes or a \
smaller room
    """
    why = _oracle_limit(squares, floor, boxes)
    if why is not None:
        raise ValueError(
            f"Expect a Sokoban level the exact oracle can tabulate: {why}; "
            "use fewer boxes or a smaller room"
        )


def _oracle_limit(squares: int, floor: int, boxes: int) -> str | None:
    """Which of the limits a level passes, and by how much (None: it is within all three)."""
    if boxes > MAX_BOXES:
        return (
            f"at most {MAX_BOXES} boxes (the heuristic tries all {boxes}! assignments of boxes "
            f"to targets), got {boxes}"
        )
    placements = math.comb(squares, boxes)
    if placements > MAX_PLACEMENTS:
        return (
            f"at most {MAX_PLACEMENTS:,} ways to place the boxes, got {placements:,} "
            f"({boxes} boxes on {squares} squares a box can be solved from)"
        )
    states = placements * (floor - boxes)
    if states > MAX_STATES:
        return (
            f"at most {MAX_STATES:,} states (box placements x player squares), got "
            f"{placements:,} x {floor - boxes:,} = {states:,}"
        )
    return None


_DEAD = 1 << 20  # "never": larger than any sum of push counts on a level
_FLOOR_DIGITS = bytes.maketrans(b"\x00\x01", b"10")


class SokobanSolver:
    """Exact shortest solutions of one Sokoban level, in player moves.

    Squares are indices into the row-major grid (border walls included); box
    sets are bitmasks, and so are sets of player squares, so that a step of
    every player square at once is four shifts and a mask. Three searches:

    - `distance` (the oracle): on its first call, a breadth-first search
      *backward* from every solved state (a move undone is a step back or a
      pull) over (box set, player squares), which records the exact distance
      of every solvable state of the level; every answer after that is a
      lookup, so following a plan, wandering off it and looking one move ahead
      (`optimal_actions`) all cost next to nothing.
    - `within(player, boxes, bound)`: is there a plan of at most ``bound``
      moves? A forward breadth-first search that drops every state whose moves
      so far plus the pushes still needed (`heuristic`: one push lowers it by
      at most one) exceed ``bound``; what level generation uses to bound a new
      level's length without the table.
    - `solvable`: whether any plan is left (a greedy best-first search over box
      sets and player regions, memoized; the table's answer once it exists),
      what every push asks to end a lost game at once.

    Pruned where a search runs forward, because they can never be solved: a
    box on a dead square (no target reachable by pushes) and, in `solvable`,
    2x2 blocks of walls and boxes holding a box off target. The table needs no
    pruning: walking backward from the solved states meets only solvable ones.
    A solver is immutable apart from those caches, which only hold facts about
    its level: copies of a game share it, and pickling leaves the caches out.
    """

    def __init__(self, walls: bytes, width: int, targets: int):
        if targets.bit_count() > MAX_BOXES:  # before the searches below, which grow with it
            check_oracle_size(0, 0, targets.bit_count())
        self.walls = walls
        self.width = width
        self.targets = targets
        self.offsets = (-width, width, 1, -1)  # north, south, east, west
        # bit i set where square i is floor: the walls read as binary digits, last square first
        self.floor = int(bytes(walls).translate(_FLOOR_DIGITS)[::-1], 2)
        # Per target, the fewest pushes to it from each square (_DEAD where it never can);
        # a square is live when a box on it can still reach some target.
        self.to_target, self.live = [], 0
        for target in bits(targets):
            distances, reached = self._push_distances_to(target)
            self.to_target.append(distances)
            self.live |= reached
        check_oracle_size(self.live.bit_count(), self.floor.bit_count(), targets.bit_count())
        self._columns = list(zip(*self.to_target))  # per square, its distance to each target
        self._assignments = list(itertools.permutations(range(len(self.to_target))))
        self._clear_caches()

    def _clear_caches(self) -> None:
        self.known_heuristics: dict[int, int | None] = {}  # heuristic's memo
        # Solvability by (lowest square the player can walk to, boxes): the player's exact
        # square within its reachable region does not matter for whether a solution exists.
        self.solvable_memo: dict[tuple[int, int], bool] = {}
        # The oracle's table: per solvable box set, (distance, player squares) rings.
        self._table: dict[int, list[tuple[int, int]]] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in ("known_heuristics", "solvable_memo", "_table"):
            del state[name]  # caches: rebuilt on demand, identical answers
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._clear_caches()

    def _push_distances_to(self, target: int) -> tuple[list[int], int]:
        """Fewest pushes to bring a box alone on the level from each square to ``target``
        (_DEAD where it never can), and the squares that can, by rings of squares: a box
        moves from ``before`` onto a square of the ring when ``before`` and the square
        behind it are floor."""
        floor, width = self.floor, self.width
        distance = [_DEAD] * len(self.walls)
        seen = ring = 1 << target
        d = 0
        while ring:
            rest = ring
            while rest:
                low = rest & -rest
                rest ^= low
                distance[low.bit_length() - 1] = d
            # before = square - step, behind = before - step, for the four steps
            ring = (
                (
                    (ring >> 1 & floor << 1 | ring << 1 & floor >> 1)
                    | (ring >> width & floor << width | ring << width & floor >> width)
                )
                & floor
                & ~seen
            )
            seen |= ring
            d += 1
        return distance, seen

    def is_dead_square(self, square: int) -> bool:
        return not self.live >> square & 1

    def frozen(self, square: int, boxes: int) -> bool:
        """A box on ``square`` closes a 2x2 block of walls and boxes, one box off target."""
        walls, width, targets = self.walls, self.width, self.targets
        for dx in (1, -1):
            side = square + dx
            if not (walls[side] or boxes >> side & 1):
                continue
            for dy in (width, -width):
                up, corner = square + dy, side + dy
                if (walls[up] or boxes >> up & 1) and (walls[corner] or boxes >> corner & 1):
                    block = boxes & (1 << square | 1 << side | 1 << up | 1 << corner)
                    if block & ~targets:
                        return True
        return False

    def layers(self, player: int, boxes: int) -> tuple[list[int], int]:
        """Breadth-first layers of the walk from ``player`` as bitmasks (layer k: the squares
        k moves away), and their union. Bit-parallel: a few integer operations per layer."""
        free, width = self.floor & ~boxes, self.width
        frontier = region = 1 << player
        layers = [frontier]
        while True:
            f = frontier
            frontier = (f << 1 | f >> 1 | f << width | f >> width) & free & ~region
            if not frontier:
                return layers, region
            region |= frontier
            layers.append(frontier)

    def region(self, player: int, boxes: int) -> int:
        """The squares the player can walk to from ``player``, as a bitmask (a flood fill:
        `layers` without the layers)."""
        free, width = self.floor & ~boxes, self.width
        region = 1 << player
        while True:
            grown = (region | region << 1 | region >> 1 | region << width | region >> width) & free
            if grown == region:
                return region
            region = grown

    def heuristic(self, boxes: int) -> int | None:
        """Fewest pushes with each box sent to its own target (best assignment), None if dead."""
        cached = self.known_heuristics.get(boxes, -1)
        if cached != -1:
            return cached
        columns = self._columns
        low = boxes & -boxes
        first = columns[low.bit_length() - 1]
        rest = boxes ^ low
        if not rest:
            best = first[0]
        elif not rest & rest - 1:
            b0, b1 = columns[rest.bit_length() - 1]
            x, y = first[0] + b1, first[1] + b0
            best = x if x < y else y
        elif len(first) == 3:  # Hard: the six assignments, written out (hot in `within`)
            low = rest & -rest
            a0, a1, a2 = first
            b0, b1, b2 = columns[low.bit_length() - 1]
            c0, c1, c2 = columns[(rest ^ low).bit_length() - 1]
            x, y = b1 + c2, b2 + c1
            best = a0 + (x if x < y else y)
            x, y = b0 + c2, b2 + c0
            x = a1 + (x if x < y else y)
            best = x if x < best else best
            x, y = b0 + c1, b1 + c0
            x = a2 + (x if x < y else y)
            best = x if x < best else best
        else:
            chosen = [columns[square] for square in bits(boxes)]
            best = min(sum(c[t] for c, t in zip(chosen, order)) for order in self._assignments)
        result = best if best < _DEAD else None
        self.known_heuristics[boxes] = result
        return result

    # -- the oracle: every solvable state's distance -----------------------------------

    def distance(self, player: int, boxes: int) -> int | None:
        """Fewest moves from this state to every box on a target (None when unsolvable).

        The first call builds the level's table (`build_table`); later calls look it up."""
        if boxes == self.targets:
            return 0
        rings = (self._table if self._table is not None else self.build_table()).get(boxes)
        if rings is not None:
            for d, squares in rings:
                if squares >> player & 1:
                    return d
        return None

    def build_table(self) -> dict[int, list[tuple[int, int]]]:
        """Exact distances of every solvable state, by a breadth-first search backward from
        the solved states, one box set at a time per ring: a move undone is a step back
        (four shifts of the player squares) or a pull (the square behind the player is
        free and a box is ahead of it: the box comes back one square, the player two).
        Returns box set -> [(distance, player squares at that distance), ...]."""
        if self._table is not None:
            return self._table
        floor, width, targets = self.floor, self.width, self.targets
        everywhere = floor & ~targets  # solved wherever the player stands
        seen = {targets: everywhere}
        table = {targets: [(0, everywhere)]}
        frontier = [(targets, everywhere)]
        d = 0
        while frontier:
            d += 1
            found: dict[int, int] = {}
            get = found.get
            for boxes, ring in frontier:
                free = floor & ~boxes
                back = (ring << 1 | ring >> 1 | ring << width | ring >> width) & free
                if back:
                    found[boxes] = get(boxes, 0) | back
                for step in (1, width):
                    # undo a move in +step: the player at p came from p - step, the box now
                    # at p + step was at p
                    pulls = ring & boxes >> step & free << step
                    while pulls:
                        low = pulls & -pulls
                        pulls ^= low
                        before = boxes ^ (low << step | low)
                        found[before] = get(before, 0) | low >> step
                    # undo a move in -step, the mirror image
                    pulls = ring & boxes << step & free >> step
                    while pulls:
                        low = pulls & -pulls
                        pulls ^= low
                        before = boxes ^ (low >> step | low)
                        found[before] = get(before, 0) | low << step
            frontier = []
            for boxes, squares in found.items():
                known = seen.get(boxes, 0)
                squares &= ~known
                if squares:
                    seen[boxes] = known | squares
                    frontier.append((boxes, squares))
                    if known:
                        table[boxes].append((d, squares))
                    else:
                        table[boxes] = [(d, squares)]
        self._table = table
        return table

    # -- bounded and boolean questions, without the table ----------------------------

    def within(self, player: int, boxes: int, bound: int) -> bool:
        """Whether some plan solves the level in at most ``bound`` moves.

        Breadth-first over moves, one box set at a time per ring, keeping only states
        whose moves so far plus `heuristic` (a lower bound of what is left) stay within
        ``bound``: the work grows with the bound, not with the level's true distance."""
        if self._table is not None:
            d = self.distance(player, boxes)
            return d is not None and d <= bound
        targets, floor, width, live = self.targets, self.floor, self.width, self.live
        if boxes == targets:
            return True
        heuristic, known_h = self.heuristic, self.known_heuristics
        h = heuristic(boxes)
        if h is None or h > bound:
            return False
        seen = {boxes: 1 << player}
        stands: dict[int, int] = {}  # per box set: the squares a box can be pushed from
        frontier = [(boxes, 1 << player)]
        for moves in range(1, bound + 1):
            slack = bound - moves  # what the heuristic may still ask after this move
            found: dict[int, int] = {}  # box set -> player squares reached by this move
            for b, ring in frontier:
                free = floor & ~b
                ahead = free & live  # where a pushed box may go
                if known_h[b] <= slack:  # walking leaves the heuristic as it is
                    walk = (ring << 1 | ring >> 1 | ring << width | ring >> width) & free
                    if walk:
                        found[b] = found.get(b, 0) | walk
                pushable = stands.get(b)
                if pushable is None:
                    pushable = stands[b] = _stands(b, free, ahead, width)
                if not ring & pushable:
                    continue  # nobody here stands behind a box that can move
                for step in (1, width):
                    # push in +step (the player at p, a box at p + step, room at p + 2 step)
                    # and in -step, the mirror image
                    forward = ring & b >> step & ahead >> 2 * step
                    backward = ring & b << step & ahead << 2 * step
                    while forward or backward:
                        if forward:
                            low = forward & -forward
                            forward ^= low
                            box = low << step  # where the player ends
                            after = b ^ (box | box << step)
                        else:
                            low = backward & -backward
                            backward ^= low
                            box = low >> step
                            after = b ^ (box | box >> step)
                        if after in found:
                            found[after] |= box
                            continue
                        if after == targets:
                            return True
                        h2 = known_h.get(after, -1)
                        if h2 == -1:
                            h2 = heuristic(after)
                        if h2 is not None and h2 <= slack:
                            found[after] = box
            frontier = []
            for b, squares in found.items():
                known = seen.get(b, 0)
                squares &= ~known
                if squares:
                    seen[b] = known | squares
                    frontier.append((b, squares))
            if not frontier:
                return False
        return False

    def undoable(self, player: int, boxes: int, step: int) -> bool:
        """Whether the push that just left the player on ``player`` with ``boxes`` (a box
        pushed by ``step``, onto ``player + step``) can be undone: the player walks round
        behind the box, pushes it back, and can then walk to where it pushed from. The
        push then leaves a solvable level solvable: what a game checks before `solvable`."""
        behind = player + 2 * step
        if (
            self.walls[behind]
            or boxes >> behind & 1
            or not self.region(player, boxes) >> behind & 1
        ):
            return False
        before = boxes ^ (1 << player | 1 << player + step)
        return bool(self.region(player + step, before) >> player - step & 1)

    def solvable(self, player: int, boxes: int) -> bool:
        """Whether any sequence of pushes still solves the level (greedy best-first search
        over box sets, each with the region the player can walk in; cheaper than the
        table because it need not be shortest).

        A state is named by its box set and the lowest square of the player's region
        (where exactly the player stands in it does not matter), found when the state is
        taken from the queue rather than when it is queued: most queued states are never
        taken. Every state on the plan found is memoized as solvable; when none is
        found, every state reached is memoized as unsolvable."""
        if boxes == self.targets:
            return True
        if self._table is not None:
            return self.distance(player, boxes) is not None
        memo = self.solvable_memo
        start = (_lowest(self.region(player, boxes)), boxes)
        known = memo.get(start)
        if known is not None:
            return known
        if self.heuristic(boxes) is None or any(
            not self.targets >> box & 1 and self.frozen(box, boxes) for box in bits(boxes)
        ):
            memo[start] = False
            return False
        heuristic, parents = self.heuristic, {}  # parents: taken state -> its parent
        heap: list[tuple[int, int, int, int, tuple[int, int] | None]] = [
            (0, 0, player, boxes, None)
        ]
        counter = 0
        while heap:
            _, _, p, b, parent = heapq.heappop(heap)
            region = self.region(p, b)
            key = (_lowest(region), b)
            if key in parents:
                continue
            parents[key] = parent
            known = memo.get(key)
            if known is False:
                continue
            pushes = None if known else self._pushes(region, b)
            if pushes is None:  # a plan: every state on it is solvable
                while key is not None:
                    memo[key] = True
                    key = parents[key]
                return True
            for box, after in pushes:
                h = heuristic(after)
                if h is not None:
                    counter += 1
                    heapq.heappush(heap, (h, counter, box, after, key))
        for key in parents:  # everything reachable from an unsolvable state is unsolvable
            memo[key] = False
        return False

    def _pushes(self, region: int, boxes: int) -> list[tuple[int, int]] | None:
        """The pushes the player can make from ``region``, as (square the player ends on,
        box set after), leaving out those that put a box on a dead square or freeze it off
        target; None when one of them solves the level."""
        walls, targets, live, frozen = self.walls, self.targets, self.live, self.frozen
        pushes = []
        rest = boxes
        while rest:
            low = rest & -rest
            box = low.bit_length() - 1
            rest ^= low
            for step in self.offsets:
                to = box + step
                if (
                    not region >> box - step & 1
                    or walls[to]
                    or boxes >> to & 1
                    or not live >> to & 1
                ):
                    continue
                after = boxes ^ low | 1 << to
                if after == targets:
                    return None
                if targets >> to & 1 or not frozen(to, after):
                    pushes.append((box, after))
        return pushes


def _stands(boxes: int, free: int, ahead: int, width: int) -> int:
    """The free squares from which a box can be pushed onto a square of ``ahead``."""
    return free & (
        boxes >> 1 & ahead >> 2
        | boxes << 1 & ahead << 2
        | boxes >> width & ahead >> 2 * width
        | boxes << width & ahead << 2 * width
    )


def _lowest(mask: int) -> int:
    """The lowest square of a region: names it."""
    return (mask & -mask).bit_length() - 1


def bits(mask: int) -> list[int]:
    """The squares of a bitmask, lowest first."""
    squares = []
    while mask:
        low = mask & -mask
        squares.append(low.bit_length() - 1)
        mask ^= low
    return squares
