"""Sokoban: push boxes onto targets in a text grid, where one bad push can lose the game."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from turnbudget._checks import brief
from turnbudget.envs.core import MAX_OBSERVATION_LENGTH, EnvVariant
from turnbudget.envs.native.base import TextGame, reset_needed
from turnbudget.envs.native.sokoban_solver import (
    MAX_PLACEMENTS,
    SokobanSolver,
    bits,
    check_oracle_size,
)
from turnbudget.envs.native.worldgen import DIRECTIONS, Draws

__all__ = ["CONFIGS", "DEFAULT_BUDGETS", "VARIANTS", "Sokoban", "SokobanConfig", "SokobanSolver"]


@dataclass(frozen=True)
class SokobanConfig:
    width: int  # inner width and height of the room, walls excluded
    height: int
    boxes: int
    wall_blocks: int  # inner wall squares dropped into the room (kept only if it stays connected)
    pulls: tuple[int, int]  # reverse play stops once the boxes are this many pushes from home
    # (if no pull takes them farther, or max_distance moves are played, it stops sooner)
    min_distance: int  # the optimal solution length lies in [min_distance, max_distance]
    max_distance: int


CONFIGS = {
    "easy": SokobanConfig(
        width=5, height=4, boxes=1, wall_blocks=2, pulls=(3, 5), min_distance=5, max_distance=12
    ),
    "medium": SokobanConfig(
        width=6, height=5, boxes=2, wall_blocks=3, pulls=(10, 15), min_distance=15, max_distance=30
    ),
    "hard": SokobanConfig(
        width=7, height=6, boxes=3, wall_blocks=7, pulls=(18, 26), min_distance=35, max_distance=60
    ),
}
# Default turn budgets: at least twice the longest optimal solution of the variant.
DEFAULT_BUDGETS = {"easy": 30, "medium": 64, "hard": 128}
_ENTRY_POINT = "turnbudget.envs.native.sokoban:Sokoban"
# ------------------------------------------------------------------ Sokoban
VARIANTS = (
    *(
        EnvVariant(
            f"Sokoban-{d.capitalize()}-v0", _ENTRY_POINT, DEFAULT_BUDGETS[d], {"difficulty": d}
        )
        for d in CONFIGS
    ),
    # Free variant: difficulty and config fields as kwargs, the budget follows them.
    EnvVariant("Sokoban-v0", _ENTRY_POINT, None),
)
_MAX_GENERATION_TRIES = 2000
_PLAYS_PER_ROOM = 3  # reverse plays from one room's solved state before a new room
_LEGEND = (
    "Legend: # wall, _ floor, @ you, $ box, . target, * box on a target, + you on a target. "
    "Moves: go north, go south, go east, go west (or n, s, e, w); walking into a box pushes it "
    "one square if the square behind it is free. Boxes cannot be pulled."
)


class Sokoban(TextGame):
    """Push every box onto a target; a push into a dead end loses the game.

    ## Description
    A walled room drawn as lines of characters, with boxes, targets and you.
    You walk one square per turn; walking into a box pushes it one square if
    the square behind it is free. Boxes cannot be pulled, so some pushes are
    irreversible: a box in a corner, or two boxes side by side against a wall,
    can never be moved onto its target again. Levels are made by playing
    backwards from the solved room (pulling boxes off their targets, each pull
    taking them farther from home), so every level is solvable; difficulty is
    the number of boxes and the length of the shortest solution, which lies in
    the variant's range: replaying the play forwards bounds it from above, and
    a bounded search proves that nothing shorter than the range exists.

    ## Goal
    "Push every box ($) onto a target (.)."

    ## Actions
    Free-form text. Admissible: ``go north|south|east|west`` where the way is
    free or a box can be pushed, and ``look``. Synonyms: ``n``, ``north``,
    ``walk n``. Anything else costs a turn with ``valid_action=False``.

    ## Observations
    The feedback of the last command, the grid (one line per row), how many
    boxes are on targets, and a legend with the move list.
    ``info["progress"]``: the share of boxes on targets.

    ## Rewards
    1.0 on the turn the last box reaches a target, 0 otherwise.

    ## Episode end
    ``terminated`` when every box is on a target (``won``), or as soon as a
    push leaves the level unsolvable: the game says so and ends with
    ``lost=True`` (exactly when the solver finds no solution, so
    ``distance_to_goal()`` is ``None`` exactly when ``lost``). ``truncated``
    only by a turn budget wrapper (`TurnBudget`).

    ## Oracle
    `SokobanSolver`, exact in player moves: the first oracle call of a level
    runs a breadth-first search backward from the solved room that records the
    distance of every solvable state (about 2 ms on Medium, 10-60 ms on Hard);
    every later answer, on the plan or off it, is a lookup. Plain rollouts never
    build it: a push checks solvability with a cheaper search. A level the
    oracle cannot take is refused up front with a ``ValueError`` naming the
    count (by config, or by `load_level`; `check_oracle_size`): more than
    `MAX_BOXES` (6) boxes, `MAX_PLACEMENTS` (500,000) ways to place them or
    `MAX_STATES` (20 million) states, and so is a room whose observation would
    not fit in `MAX_OBSERVATION_LENGTH` (8,192) characters. Setbacks: a box
    slides one square, or you are swept to another square; only ones that keep
    the level solvable (checked with the solver) and, where possible, lengthen
    the solution.

    ## Arguments
    ``difficulty``: ``"easy"`` (5x4 room, 1 box, optimal 5-12 moves),
    ``"medium"`` (6x5, 2 boxes, 15-30), ``"hard"`` (7x6, 3 boxes, 35-60).
    ``render_mode``: ``"ansi"`` or ``"human"``. Any int field of `SokobanConfig`
    overrides the difficulty's value by keyword; unknown keywords are a ``TypeError``.

    ## Registered configurations
    ``turnbudget/Sokoban-Easy-v0`` (budget 30), ``turnbudget/Sokoban-Medium-v0``
    (budget 64), ``turnbudget/Sokoban-Hard-v0`` (budget 128).
    ``turnbudget/Sokoban-v0`` takes ``difficulty`` and config fields as kwargs;
    its budget is the difficulty's, or twice ``max_distance`` when larger.

    ## Version history
    v0: initial release.
    """

    configs = CONFIGS
    default_budgets = DEFAULT_BUDGETS
    _world_attributes = (
        "_solver", "_width", "_walls", "_targets", "_template", "_box_chars", "_player_chars",
        "_places", "_status", "_views",
    )  # fmt: skip

    def __init__(self, difficulty: str = "easy", render_mode: str | None = None, **config: int):
        super().__init__(difficulty=difficulty, render_mode=render_mode, **config)
        cfg = self.config
        room = cfg.width * cfg.height
        if not 1 <= cfg.boxes < room:
            raise ValueError(
                f"Expect 1 <= boxes < width x height and at most {MAX_PLACEMENTS:,} ways to "
                f"place the boxes (the exact oracle tabulates them), got {cfg.boxes} boxes in "
                f"a {cfg.width}x{cfg.height} room"
            )
        if cfg.wall_blocks > room - cfg.boxes - 1:  # (room to place the boxes and you)
            raise ValueError(
                f"Expect `wall_blocks` <= width x height - boxes - 1 = {room - cfg.boxes - 1}, "
                f"got {cfg.wall_blocks}"
            )
        _check_size(cfg.width + 2, cfg.height + 2, cfg.boxes, room, room)
        self._player = 0
        self._boxes = 0

    # -- generation ----------------------------------------------------------------

    def _generate(self) -> None:
        cfg = self.config
        draws = Draws(self.np_random, batch=64)
        for _ in range(_MAX_GENERATION_TRIES):
            if self._try_room(cfg, draws):
                break
        else:  # only config overrides can make the distance range unreachable
            raise RuntimeError(
                f"Could not generate a {type(self).__name__} with {self.config} in "
                f"{_MAX_GENERATION_TRIES} tries: widen [min_distance, max_distance]"
            )
        self.goal = "Push every box ($) onto a target (.)."

    def _try_room(self, cfg: SokobanConfig, draws: Draws) -> bool:
        """Draw a room and its targets, then play backwards from the solved room a few
        times, until a play leaves a level whose optimal length is in range."""
        width, height = cfg.width + 2, cfg.height + 2
        inner, floor = _room(width, height)
        inner = list(inner)
        for _ in range(cfg.wall_blocks):
            square = inner.pop(draws.index(len(inner)))
            if _connected(floor & ~(1 << square), width):  # a wall that cuts the room off: skip
                floor &= ~(1 << square)
        walls = bin(floor)[2:].zfill(width * height)[::-1].encode().translate(_WALL_BYTES)
        squares = bits(floor)
        targets = 0
        for _ in range(cfg.boxes):
            targets |= 1 << squares.pop(draws.index(len(squares)))
        solver = SokobanSolver(walls, width, targets)
        for _ in range(_PLAYS_PER_ROOM):
            player = squares[draws.index(len(squares))]
            player, boxes, moves = self._reverse_play(solver, player, targets, cfg, draws)
            if boxes == targets:
                continue
            # Leave the player anywhere it can walk to, so the level does not start
            # mid-push. Replaying the reverse play forwards solves the level in `moves`
            # plus the walk from the start: a start at most max_distance - moves away
            # keeps that within max_distance.
            layers, _ = solver.layers(player, boxes)
            choices = bits(sum(layers[: cfg.max_distance - moves + 1]))
            start = choices[draws.index(len(choices))]
            walk = 0
            while not layers[walk] >> start & 1:
                walk += 1
            if moves + walk < cfg.min_distance + cfg.min_distance // 4:
                # Most levels whose replay is this short solve in under min_distance:
                # drawing another costs less than the search that would say so.
                continue
            # And when no plan is shorter than min_distance, the optimal length is in
            # range. The exact length waits for the first oracle call.
            if solver.within(start, boxes, cfg.min_distance - 1):
                continue
            self._set_level(solver, width, walls, targets)
            self._player, self._boxes = start, boxes
            return True
        return False

    def _reverse_play(
        self,
        solver: SokobanSolver,
        player: int,
        boxes: int,
        cfg: SokobanConfig,
        draws: Draws,
    ) -> tuple[int, int, int]:
        """Play backwards from the solved room: walk to a box and pull it, until the boxes
        are ``cfg.pulls`` pushes from home (`SokobanSolver.heuristic`), no pull takes them
        farther, or the moves played would pass ``cfg.max_distance``. Each pull takes the
        boxes farther from home and walks the least to do it: replayed forwards, the play
        is close to optimal, so its length says how hard the level is.
        Returns (player, boxes, moves played)."""
        walls, heuristic, known = solver.walls, solver.heuristic, solver.known_heuristics
        floor, width = solver.floor, solver.width
        lo, hi = cfg.pulls
        goal = lo + draws.index(hi - lo + 1)
        pushes = moves = 0
        while pushes < goal:
            # The pulls that take the boxes farther: a box, the square beside it to pull
            # from (`stand`) and the square behind that, both free.
            free = floor & ~boxes
            options = []  # (box, step, stand)
            stands = 0
            for step in solver.offsets:
                if step > 0:
                    mask = boxes << step & free & free >> step
                else:
                    mask = boxes >> -step & free & free << -step
                while mask:
                    low = mask & -mask
                    mask ^= low
                    stand = low.bit_length() - 1
                    after = boxes ^ (low | 1 << stand - step)
                    h = known.get(after, -1)
                    if h == -1:
                        h = heuristic(after)
                    if h > pushes:
                        options.append((stand - step, step, stand))
                        stands |= low
            # Walk to the nearest of their stands (breadth-first, bit-parallel).
            ring = seen = 1 << player
            walk = 0
            while ring and not ring & stands:
                ring = (ring << 1 | ring >> 1 | ring << width | ring >> width) & free & ~seen
                seen |= ring
                walk += 1
            if not ring:
                break  # no pull takes the boxes farther
            if moves + walk + 1 > cfg.max_distance:
                break  # replayed forwards, the level would take longer than the variant allows
            options = [o for o in options if ring >> o[2] & 1]
            box, step, _ = options[draws.index(len(options))]
            moves += walk
            while True:  # pull the box one square, and keep pulling while it gets farther
                boxes ^= 1 << box | 1 << box + step
                box += step
                player = box + step
                moves += 1
                pushes = known[boxes]  # looked up when the pull was chosen
                ahead = box + 2 * step
                if (
                    pushes >= goal
                    or moves == cfg.max_distance
                    or walls[ahead]
                    or boxes >> ahead & 1
                    or heuristic(boxes ^ (1 << box | 1 << box + step)) <= pushes
                    or draws.uniform() < 0.5
                ):
                    break
        return player, boxes, moves

    def load_level(self, text: str) -> str:
        """Replace the current level by one drawn in the usual characters and return the
        new observation: ``#`` wall, ``@``/``+`` you, ``$`` box, ``.`` target, ``*`` box on a
        target, ``_`` or space floor. Call after ``reset()``; the turn count is not touched.

        >>> game = Sokoban()
        >>> _ = game.reset(seed=0)
        >>> _ = game.load_level("#####\\n#@$.#\\n#####")
        >>> game.distance_to_goal(), game.optimal_actions()
        (1, ['go east'])
        """
        if not isinstance(text, str):
            raise TypeError(f"Expect `text` to be a level as a str, got {brief(text)}")
        rows = text.strip("\n").split("\n")
        width = max(len(row) for row in rows) + 2
        grid = (
            ["#" * width] + ["#" + row.ljust(width - 2, "#") + "#" for row in rows] + ["#" * width]
        )
        cells = "".join(grid)
        unknown = set(cells) - set("#@+$.*_ ")
        if unknown:
            raise ValueError(f"Expect a level drawn with #@+$.*_ and spaces, got {sorted(unknown)}")
        if sum(cells.count(c) for c in "@+") != 1:
            raise ValueError("Expect exactly one player (@ or +) in the level")
        boxes = sum(1 << i for i, c in enumerate(cells) if c in "$*")
        targets = sum(1 << i for i, c in enumerate(cells) if c in ".*+")
        if bin(boxes).count("1") != bin(targets).count("1") or not boxes:
            raise ValueError("Expect as many boxes as targets, and at least one")
        _check_size(width, len(grid), boxes.bit_count())  # (the solver checks the oracle's size)
        walls = bytes(c == "#" for c in cells)
        self._set_level(SokobanSolver(walls, width, targets), width, walls, targets)
        self._player = next(i for i, c in enumerate(cells) if c in "@+")
        self._boxes = boxes
        self._won = boxes == targets
        self._lost = not self._won and not self._solver.solvable(self._player, boxes)
        self._episode_over = self._won or self._lost
        self.goal = "Push every box ($) onto a target (.)."
        self._state_changed()
        return self._observe(f"{self.goal}\n\n{self._describe()}")

    # -- perception ------------------------------------------------------------------

    def _set_level(self, solver: SokobanSolver, width: int, walls: bytes, targets: int) -> None:
        """Install a level's unchanging parts, and the grid's template: the drawing of the
        empty room (walls, floor, targets, line breaks), on which a turn's drawing only
        places the boxes and you."""
        self._solver, self._width, self._walls, self._targets = solver, width, walls, targets
        on_target = [targets >> square & 1 for square in range(len(walls))]
        empty = bytes(_EMPTY[walls[i] or 2 * on_target[i]] for i in range(len(walls)))
        self._template = b"\n".join(empty[top : top + width] for top in range(0, len(walls), width))
        self._box_chars = bytes(b"$*"[bit] for bit in on_target)
        self._player_chars = bytes(b"@+"[bit] for bit in on_target)
        self._places = tuple(square + square // width for square in range(len(walls)))
        total = targets.bit_count()
        self._status = tuple(
            f"\nBoxes on targets: {placed} of {total}.\n{_LEGEND}" for placed in range(total + 1)
        )
        # (player, boxes) -> (admissible commands, description): walks revisit states all
        # the time, and both are functions of the state alone, so copies may share it.
        self._views: dict[tuple[int, int], tuple[list[str], str]] = {}

    def _grid(self) -> str:
        """The room, one line per row: the level's template with the boxes and you placed
        (``_places[square]`` is the square's place in the text: ``square + square //
        width``, one line break per row above it)."""
        grid = bytearray(self._template)
        places, box_chars, boxes = self._places, self._box_chars, self._boxes
        while boxes:
            low = boxes & -boxes
            boxes ^= low
            square = low.bit_length() - 1
            grid[places[square]] = box_chars[square]
        player = self._player
        grid[places[player]] = self._player_chars[player]
        return grid.decode()

    def _view(self) -> tuple[list[str], str]:
        """(admissible commands, description) of the current state, memoized per level."""
        key = (self._player, self._boxes)
        view = self._views.get(key)
        if view is None:
            if len(self._views) >= _MAX_VIEWS:
                self._views = {}  # rebound, never cleared: copies may hold the old one
            commands = [
                command
                for command, step in zip(_GO, self._solver.offsets)
                if self._move(step) is not None
            ]
            commands.append("look")
            text = self._grid() + self._status[(self._boxes & self._targets).bit_count()]
            view = self._views[key] = (commands, text)
        return view

    def _describe(self) -> str:
        return self._view()[1]

    def _admissible(self) -> list[str]:
        return self._view()[0]

    def _move(self, step: int) -> tuple[int, int] | None:
        """(player, boxes) after one move by ``step`` (an offset of `SokobanSolver.offsets`),
        or None if a wall or a stuck box stops it."""
        nxt = self._player + step
        if self._walls[nxt]:
            return None
        if self._boxes >> nxt & 1:
            beyond = nxt + step
            if self._walls[beyond] or self._boxes >> beyond & 1:
                return None
            return nxt, self._boxes ^ (1 << nxt | 1 << beyond)
        return nxt, self._boxes

    # -- dynamics --------------------------------------------------------------------

    def _apply(self, command: str) -> str:
        if command == "look":
            return "You look around."
        direction = command[3:]
        step = self._solver.offsets[DIRECTIONS.index(direction)]
        player, boxes = self._move(step)
        pushed = boxes != self._boxes
        self._player, self._boxes = player, boxes
        if not pushed:
            return f"You walk {direction}."
        if boxes == self._targets:
            self._won = True
            return f"You push the box {direction}. Every box is on a target: solved!"
        box = player + step
        # A game not over is in a solvable state, and a push that can be undone keeps it so.
        if not self._solver.undoable(player, boxes, step) and not self._solver.solvable(
            player, boxes
        ):
            self._lost = True
            if self._solver.is_dead_square(box):
                why = "it can never be pushed onto a target from there"
            elif not self._targets >> box & 1 and self._solver.frozen(box, boxes):
                why = "it is jammed against walls and boxes"
            else:
                why = "no sequence of pushes can solve the room any more"
            return f"You push the box {direction}, and it is stuck: {why}. The puzzle is lost."
        return f"You push the box {direction}."

    def _explain_invalid(self, command: str, raw_action: str) -> str:
        if command.startswith("go ") and command[3:] in DIRECTIONS:
            step = self._solver.offsets[DIRECTIONS.index(command[3:])]
            if self._walls[self._player + step]:
                return f"You can't go {command[3:]}: there is a wall."
            return f"The box {command[3:]} of you won't move: something is behind it."
        if command.startswith(("push ", "pull ")):
            return "To push a box, walk into it (e.g. `go north`). Boxes cannot be pulled."
        return super()._explain_invalid(command, raw_action)

    def _progress(self) -> float:
        return (self._boxes & self._targets).bit_count() / self._targets.bit_count()

    # -- oracle ----------------------------------------------------------------------

    def distance_to_goal(self) -> int | None:
        if not self._in_episode:
            raise reset_needed("distance_to_goal")
        if self._won:
            return 0
        if self._lost:
            return None
        return self._solver.distance(self._player, self._boxes)

    def optimal_actions(self) -> list[str]:
        """Every move after which the solver's distance is one less (its table makes each
        look-ahead a lookup)."""
        if not self._in_episode:
            raise reset_needed("optimal_actions")
        distance = self.distance_to_goal()
        if not distance:
            return []
        solver = self._solver
        return [
            command
            for command, step in zip(_GO, solver.offsets)
            if (after := self._move(step)) is not None and solver.distance(*after) == distance - 1
        ]

    def inject_setback(self, rng: np.random.Generator) -> str:
        """A box slides one square, or you are swept elsewhere; only if still solvable."""
        self._check_setback(rng)
        before = self.distance_to_goal()
        if self._won or before is None:
            return ""
        walls, boxes, offsets = self._walls, self._boxes, self._solver.offsets
        candidates: list[tuple[int, int, str]] = []
        for box in bits(boxes):
            for direction, step in zip(DIRECTIONS, offsets):
                to = box + step
                if not walls[to] and not boxes >> to & 1 and to != self._player:
                    text = f"The floor tilts, and a box slides one square {direction}."
                    candidates.append((self._player, boxes ^ (1 << box | 1 << to), text))
        layers, _ = self._solver.layers(self._player, boxes)
        for square in bits(sum(layers[2:])):  # two or more moves away
            text = "A trapdoor opens under you and drops you elsewhere in the room."
            candidates.append((square, boxes, text))
        fallback = None
        for index in rng.permutation(len(candidates)).tolist():
            player, new_boxes, text = candidates[index]
            after = self._solver.distance(player, new_boxes)
            if after is not None and after > before:
                fallback = candidates[index]
                break
            if after is not None and after == before and fallback is None:
                fallback = candidates[index]
        if fallback is None:
            return "The room creaks, but nothing moves."
        self._player, self._boxes, text = fallback
        self._state_changed()
        return text


_MAX_VIEWS = 4096  # memoized views per level (a long wander starts a new table)
_GO = tuple(f"go {direction}" for direction in DIRECTIONS)  # in the order of the offsets
_WALL_BYTES = bytes.maketrans(b"01", b"\x01\x00")  # floor bits as wall bytes
# The empty room's characters: floor, wall, target (indexed by wall byte or 2 x on target).
_EMPTY = b"_#."
# Room in an observation for the text around the room's description: the goal or the
# feedback before it (the longest quotes 40 characters of an invalid command).
_FEEDBACK_ROOM = 200


def _check_size(
    width: int, height: int, boxes: int, squares: int | None = None, floor: int | None = None
) -> None:
    """Refuse, before any work, a level whose observation would be cut or, given its
    ``squares`` and ``floor`` counts (see `oracle_limit`), too large for the exact oracle.
    ``width`` and ``height`` are the grid's, border walls included."""
    grid = width * height + height - 1  # one line per row
    longest = grid + len(f"\nBoxes on targets: {boxes} of {boxes}.\n{_LEGEND}") + _FEEDBACK_ROOM
    if longest > MAX_OBSERVATION_LENGTH:
        raise ValueError(
            f"Expect a Sokoban room whose observation fits in {MAX_OBSERVATION_LENGTH:,} "
            f"characters, got a {width - 2}x{height - 2} room (a {width}x{height} grid: up to "
            f"{longest:,} characters with the text around it); use a smaller room"
        )
    if squares is not None and floor is not None:
        check_oracle_size(squares, floor, boxes)


@functools.cache
def _room(width: int, height: int) -> tuple[tuple[int, ...], int]:
    """The squares inside the walls of an empty room (border walls included in the size),
    as a tuple and as a bitmask."""
    inner = tuple(y * width + x for y in range(1, height - 1) for x in range(1, width - 1))
    return inner, sum(1 << square for square in inner)


def _connected(floor: int, width: int) -> bool:
    """Whether every floor square can be walked to from every other (a flood of bitmasks)."""
    region = floor & -floor
    while True:
        grown = (region | region << 1 | region >> 1 | region << width | region >> width) & floor
        if grown == region:
            return region == floor
        region = grown
