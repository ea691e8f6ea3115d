"""Maze: navigation under partial observability."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from turnbudget.envs.core import EnvVariant
from turnbudget.envs.native.base import TextGame
from turnbudget.envs.native.worldgen import (
    DIRECTIONS,
    bfs_distances,
    grid_maze,
    room_name,
    sample_name_ids,
)

__all__ = ["CONFIGS", "DEFAULT_BUDGETS", "VARIANTS", "Maze", "MazeConfig"]


@dataclass(frozen=True)
class MazeConfig:
    width: int
    height: int
    extra_passages: int  # walls knocked down after the perfect maze: loops
    min_distance: int  # the optimal solution length lies in [min_distance, max_distance]
    max_distance: int


CONFIGS = {
    "easy": MazeConfig(width=4, height=4, extra_passages=2, min_distance=5, max_distance=12),
    "medium": MazeConfig(width=7, height=7, extra_passages=5, min_distance=15, max_distance=30),
    "hard": MazeConfig(width=10, height=10, extra_passages=8, min_distance=35, max_distance=60),
}
# Default budgets: at least twice the longest optimal solution of each difficulty.
DEFAULT_BUDGETS = {"easy": 30, "medium": 64, "hard": 128}
_ENTRY_POINT = "turnbudget.envs.native.maze:Maze"
# ------------------------------------------------------------------ Maze
VARIANTS = (
    *(
        EnvVariant(f"Maze-{d.capitalize()}-v0", _ENTRY_POINT, DEFAULT_BUDGETS[d], {"difficulty": d})
        for d in CONFIGS
    ),
    # Free variant: difficulty and config fields as kwargs, the budget follows them.
    EnvVariant("Maze-v0", _ENTRY_POINT, None),
)
_MAX_GENERATION_TRIES = 100


class Maze(TextGame):
    """Find a named room in a maze, seeing only the room you are in.

    ## Description
    A grid of rooms joined by passages: a perfect maze (every room reachable,
    dead ends everywhere) with a few extra passages knocked through, so loops
    exist and more than one shortest route may lead to the goal. Only the
    current room and its exits are described; the agent must remember where it
    has been.

    ## Goal
    Reach the room named in the goal text ("Find the Amber Hall.").

    ## Actions
    Free-form text. Admissible: ``go north|south|east|west`` for each exit and
    ``look``. Synonyms: ``n``, ``north``, ``walk n``. Anything else costs a turn
    and is reported with ``valid_action=False``.

    ## Observations
    The feedback of the last command and the current room with its exits.

    ## Rewards
    1.0 on the turn the goal room is reached, 0 otherwise.

    ## Episode end
    ``terminated`` when the goal room is reached; the game cannot be lost.
    ``truncated`` only by a turn budget wrapper (`TurnBudget`).

    ## Oracle
    Exact BFS distances from the goal room, computed at generation. The setback
    sweeps the agent back to a room it visited earlier that is no closer to
    the goal.

    ## Arguments
    ``difficulty``: ``"easy"`` (4x4 rooms, optimal 5-12 turns), ``"medium"``
    (7x7, 15-30), ``"hard"`` (10x10, 35-60). ``render_mode``: ``"ansi"``,
    ``"human"`` or ``"rgb_array"`` (the screen as an image; the ``plot`` extra).
    Any field of `MazeConfig` overrides the difficulty's value by keyword
    (``width=12, height=12, max_distance=80``); unknown keywords are a ``TypeError``.

    ## Registered configurations
    ``turnbudget/Maze-Easy-v0`` (budget 30), ``turnbudget/Maze-Medium-v0``
    (budget 64), ``turnbudget/Maze-Hard-v0`` (budget 128).
    ``turnbudget/Maze-v0`` takes ``difficulty`` and config fields as kwargs;
    its budget is the difficulty's, or twice ``max_distance`` when larger.

    ## Version history
    v0: initial release.
    """

    _mutable_lists = ("_visited",)

    configs = CONFIGS
    default_budgets = DEFAULT_BUDGETS

    def __init__(self, difficulty: str = "easy", render_mode: str | None = None, **config: int):
        super().__init__(difficulty=difficulty, render_mode=render_mode, **config)
        if self.config.width * self.config.height < 2:
            raise ValueError(f"Expect a Maze of at least 2 rooms, got {self.config}")
        self._exits: list[dict[str, int]] = []
        self._distance: list[int] = []
        self._name_ids: list[int] = []
        self._room = 0
        self._visited: list[int] = []

    def _generate(self) -> None:
        cfg = self.config
        for _ in range(_MAX_GENERATION_TRIES):
            exits = grid_maze(cfg.width, cfg.height, cfg.extra_passages, self.np_random)
            goal_room = int(self.np_random.integers(len(exits)))
            distance = bfs_distances(exits, goal_room)
            starts = [
                r for r, d in enumerate(distance) if cfg.min_distance <= d <= cfg.max_distance
            ]
            if starts:
                break
        else:  # only config overrides can make the distance range unreachable
            raise RuntimeError(
                f"Could not generate a {type(self).__name__} with {self.config} in "
                f"{_MAX_GENERATION_TRIES} tries: widen [min_distance, max_distance]"
            )
        self._exits, self._distance = exits, distance
        self._name_ids = sample_name_ids(len(exits), self.np_random)  # spelled when needed
        self._room = self._choice(starts)
        self._initial_distance = distance[self._room]
        self._visited = [self._room]
        self.goal = f"Find {self._name(goal_room)}."
        # Everything the agent can perceive depends on the room alone: build it once per
        # room, on the first visit (most rooms are never seen in a short episode).
        self._room_view: list[tuple[str, list[str]] | None] = [None] * len(exits)

    def _room_text_for(self, room: int) -> str:
        directions = [d for d in DIRECTIONS if d in self._exits[room]]
        if len(directions) == 1:
            exits_text = f"The only exit leads {directions[0]}: a dead end."
        else:
            exits_text = f"Exits lead {', '.join(directions[:-1])} and {directions[-1]}."
        return f"You are in {self._name(room)}. {exits_text}"

    def _view(self) -> tuple[str, list[str]]:
        view = self._room_view[self._room]
        if view is None:
            room_exits = self._exits[self._room]
            commands = [f"go {d}" for d in DIRECTIONS if d in room_exits]
            view = self._room_view[self._room] = (
                self._room_text_for(self._room),
                [*commands, "look"],
            )
        return view

    def _name(self, room: int) -> str:
        return room_name(self._name_ids[room])

    def _admissible(self) -> list[str]:
        return self._view()[1]

    def _describe(self) -> str:
        return self._view()[0]

    def _apply(self, command: str) -> str:
        if command == "look":
            return "You look around."
        direction = command[3:]
        self._room = self._exits[self._room][direction]
        self._visited.append(self._room)
        if self._distance[self._room] == 0:
            self._won = True
            return f"You walk {direction} into {self._name(self._room)}. You found it!"
        return f"You walk {direction}."

    def _explain_invalid(self, command: str, raw_action: str) -> str:
        if command.startswith("go ") and command[3:] in DIRECTIONS:
            return f"You can't go {command[3:]} from here: there is a wall."
        return super()._explain_invalid(command, raw_action)

    def _progress(self) -> float:
        return max(0.0, 1.0 - self._distance[self._room] / self._initial_distance)

    # -- oracle ------------------------------------------------------------------

    def distance_to_goal(self) -> int | None:
        return 0 if self._won else self._distance[self._room]

    def optimal_actions(self) -> list[str]:
        if self._won:
            return []
        target = self._distance[self._room] - 1
        exits = self._exits[self._room]
        return [f"go {d}" for d in DIRECTIONS if d in exits and self._distance[exits[d]] == target]

    def inject_setback(self, rng: np.random.Generator) -> str:
        """Sweep the agent back to an earlier room that is no closer to the goal."""
        if self._won:
            return ""
        here = self._distance[self._room]
        candidates = sorted(
            {r for r in self._visited if r != self._room and self._distance[r] >= here}
        )
        if not candidates:  # e.g. on the first turn: fall back to any adjacent room no closer
            candidates = sorted(
                r for r in self._exits[self._room].values() if self._distance[r] >= here
            )
        if not candidates:
            return "A gust of wind howls through the maze, but you hold your ground."
        self._room = candidates[int(rng.integers(len(candidates)))]
        self._visited.append(self._room)
        self._state_changed()
        return f"A gust of wind sweeps you back to {self._name(self._room)}!"
