"""Maze: navigation under partial observability."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from turnbudget.envs.core import EnvVariant
from turnbudget.envs.native.base import TextGame, reset_needed
from turnbudget.envs.native.worldgen import (
    DIRECTIONS,
    Draws,
    check_rooms,
    grid_maze_passages,
    passage_layers,
    passage_steps,
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
_GOALS_PER_MAZE = 8  # goals drawn on one maze before drawing another


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
    ``info["progress"]`` is 0 until the goal room is reached, then 1: a maze
    has no subgoal a player could observe (where the goal lies is unknown).

    ## Rewards
    1.0 on the turn the goal room is reached, 0 otherwise.

    ## Episode end
    ``terminated`` when the goal room is reached; the game cannot be lost, and
    every room stays reachable whatever is played (``commands_keep_solvable``).
    ``truncated`` only by a turn budget wrapper (`TurnBudget`).

    ## Oracle
    Exact BFS distances from the goal room, computed at generation. The setback
    sweeps the agent back to a room it visited earlier that is no closer to
    the goal; where there is none (on the first turn), to an adjacent room no
    closer; where there is none either, it holds its ground (the turn's error
    changes nothing).

    ## Arguments
    ``difficulty``: ``"easy"`` (4x4 rooms, optimal 5-12 turns), ``"medium"``
    (7x7, 15-30), ``"hard"`` (10x10, 35-60). ``render_mode``: ``"ansi"``,
    ``"human"`` or ``"rgb_array"`` (the screen as an image; the ``plot`` extra).
    Any int field of `MazeConfig` overrides the difficulty's value by keyword
    (``width=12, height=12, max_distance=80``); unknown keywords are a ``TypeError``.
    A maze has 2 to `MAX_ROOMS` (1,360) rooms, each with a name of its own, and
    ``min_distance`` is at most the number of rooms minus one.

    ## Registered configurations
    ``turnbudget/Maze-Easy-v0`` (budget 30), ``turnbudget/Maze-Medium-v0``
    (budget 64), ``turnbudget/Maze-Hard-v0`` (budget 128).
    ``turnbudget/Maze-v0`` takes ``difficulty`` and config fields as kwargs;
    its budget is the difficulty's, or twice ``max_distance`` when larger.

    ## Version history
    v0: initial release. Fixed in place (issue 21): ``info["progress"]`` was
    1 − d/d₀, the oracle's distance handed to every agent; it is now 0 until
    the goal is reached. Only that info key changed (not the dynamics, the
    observations or the rewards), so the id stays ``-v0``; a shaping
    potential built on it (``ProcessReward(potential="progress")``) now
    rewards reaching the goal only.
    """

    commands_keep_solvable = True  # (see Episode end)
    _mutable_lists = ("_visited",)
    _oracle_memos = ("_room_optimal",)
    _world_attributes = ("_room_view", "_room_optimal")

    configs = CONFIGS
    default_budgets = DEFAULT_BUDGETS

    def __init__(self, difficulty: str = "easy", render_mode: str | None = None, **config: int):
        super().__init__(difficulty=difficulty, render_mode=render_mode, **config)
        cfg = self.config
        check_rooms("Maze", cfg.width, cfg.height)
        if cfg.min_distance > cfg.width * cfg.height - 1:  # (a path visits each room once)
            raise ValueError(
                f"Expect `min_distance` <= {cfg.width * cfg.height - 1}: no room of a "
                f"{cfg.width}x{cfg.height} Maze is farther from another, got {cfg.min_distance}"
            )
        # Per room, its passages as a bitmask (built with every reset, so compact), and
        # per mask the (direction, room offset) of its exits.
        self._passages: list[int] = []
        self._steps = passage_steps(self.config.width)
        self._offsets = dict(self._steps[15])  # every direction
        self._distance: list[int] = []
        self._name_ids: list[int] = []
        self._room = 0
        # The rooms entered this episode (a setback sweeps the agent back to one of them): a
        # set, so it stays within the maze's size however long the episode runs.
        self._visited: set[int] = set()

    def _generate(self) -> None:
        cfg = self.config
        draws = Draws(self.np_random)  # every choice of the world, from one batch of draws
        for _ in range(_MAX_GENERATION_TRIES):
            passages = grid_maze_passages(cfg.width, cfg.height, cfg.extra_passages, draws)
            # Redraw the goal, not the maze, when no room lies in range of it: one more
            # search instead of a new maze. The goal is still uniform among the rooms of
            # this maze that have a start in range.
            for _ in range(_GOALS_PER_MAZE):
                goal_room = draws.index(len(passages))
                distance, layers = passage_layers(passages, cfg.width, goal_room)
                if len(layers) > cfg.min_distance:  # some room lies that far away
                    break
            else:
                continue
            starts = [r for layer in layers[cfg.min_distance : cfg.max_distance + 1] for r in layer]
            break
        else:  # only config overrides can make the distance range unreachable
            raise RuntimeError(
                f"Could not generate a {type(self).__name__} with {self.config} in "
                f"{_MAX_GENERATION_TRIES} tries: widen [min_distance, max_distance]"
            )
        self._passages, self._distance = passages, distance
        self._name_ids = sample_name_ids(len(passages), draws)  # spelled when needed
        self._room = draws.choice(starts)
        self._visited = {self._room}
        self.goal = f"Find {self._name(goal_room)}."
        # Everything the agent can perceive depends on the room alone: build it once per
        # room, on the first visit (most rooms are never seen in a short episode).
        self._room_view: list[tuple[str, list[str]] | None] = [None] * len(passages)
        self._room_optimal: list[tuple[str, ...] | None] = [None] * len(passages)  # the oracle's

    def _exits(self, room: int) -> tuple[tuple[str, int], ...]:
        """The (direction, room offset) of each exit of ``room``, in `DIRECTIONS` order."""
        return self._steps[self._passages[room]]

    def _room_text_for(self, room: int) -> str:
        directions = [d for d, _ in self._exits(room)]
        if len(directions) == 1:
            exits_text = f"The only exit leads {directions[0]}: a dead end."
        else:
            exits_text = f"Exits lead {', '.join(directions[:-1])} and {directions[-1]}."
        return f"You are in {self._name(room)}. {exits_text}"

    def _view(self) -> tuple[str, list[str]]:
        view = self._room_view[self._room]
        if view is None:
            commands = [f"go {d}" for d, _ in self._exits(self._room)]
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
        self._room += self._offsets[direction]
        self._visited.add(self._room)
        if self._distance[self._room] == 0:
            self._won = True
            return f"You walk {direction} into {self._name(self._room)}. You found it!"
        return f"You walk {direction}."

    def _explain_invalid(self, command: str, raw_action: str) -> str:
        if command.startswith("go ") and command[3:] in DIRECTIONS:
            return f"You can't go {command[3:]} from here: there is a wall."
        return super()._explain_invalid(command, raw_action)

    def _progress(self) -> float:
        return 0.0  # no subgoal a player can observe: 1.0 once won (the engine's)

    # -- oracle ------------------------------------------------------------------

    def distance_to_goal(self) -> int | None:
        if not self._in_episode:
            raise reset_needed("distance_to_goal")
        return 0 if self._won else self._distance[self._room]

    def optimal_actions(self) -> list[str]:
        if not self._in_episode:
            raise reset_needed("optimal_actions")
        if self._won:
            return []
        room = self._room
        plans = getattr(self, "_room_optimal", None)
        if plans is None:  # (a game unpickled: its memo was left out)
            plans = self._room_optimal = [None] * len(self._passages)
        plan = plans[room]
        if plan is None:  # asked every turn by a recorder: built once per room
            target = self._distance[room] - 1
            plan = plans[room] = tuple(
                f"go {d}" for d, step in self._exits(room) if self._distance[room + step] == target
            )
        return list(plan)

    def inject_setback(self, rng: np.random.Generator) -> str:
        """Sweep the agent back to an earlier room that is no closer to the goal."""
        self._check_setback(rng)
        if self._won:
            return ""
        here = self._distance[self._room]
        candidates = sorted(
            r for r in self._visited if r != self._room and self._distance[r] >= here
        )
        if not candidates:  # e.g. on the first turn: fall back to any adjacent room no closer
            room = self._room
            candidates = sorted(
                room + step for _, step in self._exits(room) if self._distance[room + step] >= here
            )
        if not candidates:
            return "A gust of wind howls through the maze, but you hold your ground."
        self._room = candidates[int(rng.integers(len(candidates)))]
        self._visited.add(self._room)
        self._state_changed()
        return f"A gust of wind sweeps you back to {self._name(self._room)}!"
