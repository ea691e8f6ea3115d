"""An exact Sokoban solver in player moves: A* over push states, with deadlock pruning."""

from __future__ import annotations

import heapq
import itertools
from collections import deque

__all__ = ["SokobanSolver", "bits"]


class SokobanSolver:
    """Exact shortest solutions of one Sokoban level, in player moves.

    A* over the states reached right after a push, (player square, box set),
    where an edge is "walk to a square next to a box, then push it": its cost
    is the walk's length plus one. The heuristic, the sum over boxes of the
    fewest pushes to bring each to its nearest target on the empty level, is
    consistent (one push changes it by at most one), so the first solved state
    popped is optimal. Pruned, because they can never be solved: a box on a
    dead square (no target reachable by pushes) and 2x2 blocks of walls and
    boxes holding a box off target. Every answer is memoized, and so is every
    state along each optimal plan found, so following the plan costs nothing
    and searches from nearby states stop early where they meet a known one.

    Squares are indices into the row-major grid (border walls included); box
    sets are bitmasks.
    """

    def __init__(self, walls: bytes, width: int, targets: int):
        self.walls = walls
        self.width = width
        self.targets = targets
        self.offsets = (-width, width, 1, -1)  # north, south, east, west
        self.to_target = [self._push_distances_to(t) for t in bits(targets)]
        # Fewest pushes from each square to its nearest target (-1: a dead square).
        self.push_distance = [
            min((d for d in column if d >= 0), default=-1) for column in zip(*self.to_target)
        ]
        self._assignments = list(itertools.permutations(range(len(self.to_target))))
        self.neighbours = [
            tuple(n for n in (s + o for o in self.offsets) if 0 <= n < len(walls) and not walls[n])
            if not walls[s]
            else ()
            for s in range(len(walls))
        ]
        self._heuristics: dict[int, int | None] = {}
        self.floor = sum(1 << square for square, wall in enumerate(walls) if not wall)
        # Solvability by (lowest square the player can walk to, boxes): the player's exact
        # square within its reachable region does not matter for whether a solution exists.
        self.solvable_memo: dict[tuple[int, int], bool] = {}
        self.memo: dict[tuple[int, int], int | None] = {}

    def _push_distances_to(self, target: int) -> list[int]:
        """Fewest pushes to bring a box alone on the level from each square to ``target``
        (-1 where it never can)."""
        size = len(self.walls)
        distance = [-1] * size
        distance[target] = 0
        queue = deque([target])
        while queue:  # a box moves from `before` to `square` when the player stands behind it
            square = queue.popleft()
            for step in self.offsets:
                before, behind = square - step, square - 2 * step
                if (
                    0 <= behind < size
                    and distance[before] < 0
                    and not self.walls[before]
                    and not self.walls[behind]
                ):
                    distance[before] = distance[square] + 1
                    queue.append(before)
        return distance

    def is_dead_square(self, square: int) -> bool:
        return self.push_distance[square] < 0

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

    def reach(self, player: int, boxes: int) -> list[int]:
        """Walking distance from ``player`` to every square (-1 where boxes or walls cut it off)."""
        neighbours = self.neighbours
        distance = [-1] * len(self.walls)
        distance[player] = 0
        frontier = [player]
        d = 0
        while frontier:
            d += 1
            nxt = []
            for square in frontier:
                for n in neighbours[square]:
                    if distance[n] < 0 and not boxes >> n & 1:
                        distance[n] = d
                        nxt.append(n)
            frontier = nxt
        return distance

    def heuristic(self, boxes: int) -> int | None:
        """Fewest pushes with each box sent to its own target (best assignment), None if dead."""
        cached = self._heuristics.get(boxes, -1)
        if cached != -1:
            return cached
        columns = [[row[square] for row in self.to_target] for square in bits(boxes)]
        best = None
        for order in self._assignments:
            total = 0
            for column, target in zip(columns, order):
                d = column[target]
                if d < 0:
                    break
                total += d
            else:
                if best is None or total < best:
                    best = total
        self._heuristics[boxes] = best
        return best

    def distance(self, player: int, boxes: int, bound: int | None = None) -> int | None:
        """Fewest moves from this state to every box on a target (None when unsolvable).

        With ``bound``, the search gives up as soon as no plan of at most ``bound`` moves
        is left (returning None, not remembered as unsolvable): much cheaper than the
        exact answer when it only matters whether a state is that close."""
        key = (player, boxes)
        if key in self.memo:
            known = self.memo[key]
            return None if known is None or (bound is not None and known > bound) else known
        if boxes == self.targets:
            return 0
        h0 = self.heuristic(boxes)
        if h0 is None or (bound is not None and h0 > bound):
            return None
        if bound is None and not self.solvable(player, boxes):
            # Proving a state unsolvable costs a search of everything reachable from it:
            # `solvable` does it over box sets and player regions, far fewer than A*'s states.
            self.memo[key] = None
            return None
        memo, walls, targets, push = self.memo, self.walls, self.targets, self.push_distance
        best: dict[tuple[int, int], int] = {key: 0}
        parent: dict[tuple[int, int], tuple[tuple[int, int], int] | None] = {key: None}
        heap: list[tuple[int, int, int, int, int]] = [(h0, 0, h0, player, boxes)]
        while heap:
            f, negative_g, h, p, b = heapq.heappop(heap)
            if bound is not None and f > bound:
                return None  # every plan left is longer than the bound
            g = -negative_g
            if h < 0:  # a known state's exact answer: nothing left can beat it
                return self._finish(key, (p, b), parent, g + memo[p, b], g)
            if best.get((p, b), -1) != g:
                continue
            if b == targets:
                return self._finish(key, (p, b), parent, g, g)
            known = memo.get((p, b), -1) if (p, b) != key else -1
            if known is None:
                continue
            if known > 0:  # exact distance known here: finish through it when it is popped
                heapq.heappush(heap, (g + known, -g, -1, p, b))
                continue
            layers, region = self.layers(p, b)
            rest = b
            while rest:
                low = rest & -rest
                box = low.bit_length() - 1
                rest ^= low
                for step in self.offsets:
                    stand, to = box - step, box + step
                    if not region >> stand & 1 or walls[to] or b >> to & 1 or push[to] < 0:
                        continue
                    nb = b ^ low | 1 << to
                    if not targets >> to & 1 and self.frozen(to, nb):
                        continue
                    state = (box, nb)
                    if memo.get(state, 0) is None:
                        continue
                    walk = 0
                    while not layers[walk] >> stand & 1:
                        walk += 1
                    g2 = g + walk + 1
                    if g2 < best.get(state, 1 << 30):
                        h2 = self.heuristic(nb)
                        if h2 is None:
                            continue
                        best[state] = g2
                        parent[state] = ((p, b), stand)
                        heapq.heappush(heap, (g2 + h2, -g2, h2, box, nb))
        if bound is None:
            for state in best:  # every state reached from an unsolvable one is unsolvable
                memo[state] = None
        return None

    def solvable(self, player: int, boxes: int) -> bool:
        """Whether any sequence of pushes still solves the level (greedy best-first search
        over box sets, each with the region the player can walk in; cheaper than
        `distance` because it need not be shortest)."""
        if boxes == self.targets:
            return True
        known = self.memo.get((player, boxes), -1)
        if known != -1:
            return known is not None
        start = (_lowest(self.layers(player, boxes)[1]), boxes)
        if start in self.solvable_memo:
            return self.solvable_memo[start]
        if self.heuristic(boxes) is None or any(
            not self.targets >> box & 1 and self.frozen(box, boxes) for box in bits(boxes)
        ):
            self.solvable_memo[start] = False
            return False
        walls, targets, push = self.walls, self.targets, self.push_distance
        seen = {start}
        heap = [(self.heuristic(boxes), 0, player, boxes)]
        counter = 0
        while heap:
            _, _, p, b = heapq.heappop(heap)
            if b == targets:
                self.solvable_memo[start] = True
                return True
            region = self.layers(p, b)[1]
            rest = b
            while rest:
                low = rest & -rest
                box = low.bit_length() - 1
                rest ^= low
                for step in self.offsets:
                    stand, to = box - step, box + step
                    if not region >> stand & 1 or walls[to] or b >> to & 1 or push[to] < 0:
                        continue
                    nb = b ^ low | 1 << to
                    if not targets >> to & 1 and self.frozen(to, nb):
                        continue
                    if nb == targets:
                        self.solvable_memo[start] = True
                        return True
                    key = (_lowest(self.layers(box, nb)[1]), nb)
                    if key in seen or self.solvable_memo.get(key) is False:
                        continue
                    if self.solvable_memo.get(key):
                        self.solvable_memo[start] = True
                        return True
                    seen.add(key)
                    h = self.heuristic(nb)
                    if h is not None:
                        counter += 1
                        heapq.heappush(heap, (h, counter, box, nb))
        for key in seen:  # everything reachable from an unsolvable state is unsolvable
            self.solvable_memo[key] = False
        return False

    def _finish(
        self,
        start: tuple[int, int],
        end: tuple[int, int],
        parent: dict[tuple[int, int], tuple[tuple[int, int], int] | None],
        total: int,
        g_end: int,
    ) -> int:
        """Memoize every state along the plan found (walks included): the rest of an optimal
        plan is optimal, so its distances are exact."""
        memo = self.memo
        memo[end] = total - g_end
        state = end
        while parent[state] is not None:
            previous, stand = parent[state]
            p, b = previous
            walk = self._walk(p, b, stand)
            g_prev = g_end - len(walk) - 1  # the push into `state` is the last move
            for k, square in enumerate(walk):
                memo.setdefault((square, b), total - (g_prev + k + 1))
            memo.setdefault(previous, total - g_prev)
            state, g_end = previous, g_prev
        memo[start] = total
        return total

    def _walk(self, player: int, boxes: int, goal: int) -> list[int]:
        """The squares of one shortest walk from ``player`` to ``goal`` (player excluded)."""
        if player == goal:
            return []
        came = {player: player}
        queue = deque([player])
        while queue:
            square = queue.popleft()
            for step in self.offsets:
                n = square + step
                if n not in came and not self.walls[n] and not boxes >> n & 1:
                    came[n] = square
                    if n == goal:
                        path = [n]
                        while came[path[-1]] != player:
                            path.append(came[path[-1]])
                        return path[::-1]
                    queue.append(n)
        raise ValueError("goal square not reachable")  # pragma: no cover - callers check reach


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
