"""KeyQuest: a text adventure of rooms, locked doors and keys behind other doors."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from turnbudget.envs.core import EnvVariant
from turnbudget.envs.native.base import TextGame, reset_needed, sanitize_for_display
from turnbudget.envs.native.worldgen import (
    DIRECTIONS,
    OPPOSITE,
    Draws,
    check_rooms,
    grid_maze,
    room_name,
    sample_name_ids,
)

__all__ = ["CONFIGS", "DEFAULT_BUDGETS", "VARIANTS", "KeyQuest", "KeyQuestConfig"]


@dataclass(frozen=True)
class KeyQuestConfig:
    width: int
    height: int
    doors: int  # locked doors, each with its own key
    distractors: int  # useless portable objects
    min_distance: int  # the optimal solution length lies in [min_distance, max_distance]
    max_distance: int


CONFIGS = {
    "easy": KeyQuestConfig(
        width=3, height=3, doors=1, distractors=1, min_distance=5, max_distance=12
    ),
    "medium": KeyQuestConfig(
        width=4, height=4, doors=2, distractors=2, min_distance=15, max_distance=30
    ),
    "hard": KeyQuestConfig(
        width=5, height=5, doors=4, distractors=3, min_distance=35, max_distance=60
    ),
}
# Default budgets: at least twice the longest optimal solution of each difficulty.
DEFAULT_BUDGETS = {"easy": 30, "medium": 64, "hard": 128}
_ENTRY_POINT = "turnbudget.envs.native.keyquest:KeyQuest"
# ------------------------------------------------------------------ KeyQuest
VARIANTS = (
    *(
        EnvVariant(
            f"KeyQuest-{d.capitalize()}-v0", _ENTRY_POINT, DEFAULT_BUDGETS[d], {"difficulty": d}
        )
        for d in CONFIGS
    ),
    # Free variant: difficulty and config fields as kwargs, the budget follows them.
    EnvVariant("KeyQuest-v0", _ENTRY_POINT, None),
)
_COLORS = ("red", "blue", "green", "yellow", "silver", "bronze", "white", "black")
_TREASURES = ("golden crown", "jeweled chalice", "ancient scroll", "crystal orb", "carved idol")
_DISTRACTORS = ("old boot", "candle", "wooden spoon", "rusty nail", "feather", "tin cup")
_MAX_GENERATION_TRIES = 200
CARRIED = -1

# Oracle state: (room, bitmask of open doors, location of each relevant item).
# Relevant items are the keys (item i opens door i) and then the treasure.
_State = tuple[int, int, tuple[int, ...]]


class KeyQuest(TextGame):
    """Fetch a treasure from behind locked doors and bring it to a named room.

    ## Description
    Rooms on a grid, joined by passages that form a tree. Some passages are
    closed by locked doors of different colours; each door opens with the key of
    its colour, and keys can lie behind other locked doors, so the order in which
    they are found matters. A few useless objects lie around.

    ## Goal
    "Bring the golden crown to the Dusty Cellar and drop it there."

    ## Actions
    Free-form text. Admissible: ``go <direction>`` through an open passage,
    ``unlock <colour> door`` next to a locked door while holding its key,
    ``take <item>``, ``drop <item>``, ``look``, ``inventory``. Synonyms: ``n``,
    ``get``/``grab``/``pick up`` for ``take``, ``open`` for ``unlock``, articles
    are ignored. Anything else costs a turn with ``valid_action=False``.

    ## Observations
    The feedback of the last command and the current room: its objects, exits
    and doors. Nothing about other rooms. ``info["progress"]``: the doors
    opened and the treasure held, out of the doors plus two (1 once won).

    ## Rewards
    1.0 on the turn the treasure is dropped in the goal room, 0 otherwise.

    ## Episode end
    ``terminated`` when the treasure is delivered; the game cannot be lost, and
    no command blocks it (``commands_keep_solvable``): an unlocked door stays
    open, a key is not used up, and whatever is dropped can be taken again.
    ``truncated`` only by a turn budget wrapper (`TurnBudget`).

    ## Oracle
    Exact breadth-first search over (room, open doors, where each key and the
    treasure is), ignoring ``drop`` (never part of a shortest plan except the
    final drop) and the useless objects. The table is memoized, so one search
    per episode serves every step until a drop or a setback moves an item.
    Setbacks: a carried key or the treasure slips to the floor, or an open door
    swings shut and locks again; only those that keep the quest solvable, and
    preferably ones that lengthen it.

    ## Arguments
    ``difficulty``: ``"easy"`` (3x3 rooms, 1 door, optimal 5-12 turns),
    ``"medium"`` (4x4, 2 doors, 15-30), ``"hard"`` (5x5, 4 doors, 35-60).
    ``render_mode``: ``"ansi"``, ``"human"`` or ``"rgb_array"`` (the screen as
    an image; the ``plot`` extra).
    Any field of `KeyQuestConfig` overrides the difficulty's value by keyword
    (``difficulty="hard", doors=5, max_distance=80``); unknown keywords are a ``TypeError``.
    A world has 2 to `MAX_ROOMS` (1,360) rooms, each with a name of its own.

    ## Registered configurations
    ``turnbudget/KeyQuest-Easy-v0`` (budget 30), ``turnbudget/KeyQuest-Medium-v0``
    (budget 64), ``turnbudget/KeyQuest-Hard-v0`` (budget 128).
    ``turnbudget/KeyQuest-v0`` takes ``difficulty`` and config fields as kwargs;
    its budget is the difficulty's, or twice ``max_distance`` when larger.

    ## Version history
    v0: initial release.
    """

    commands_keep_solvable = True  # (see Episode end)
    _mutable_lists = ("_item_loc",)
    _oracle_memos = ("_optimal",)
    _world_attributes = (
        "_exits", "_room", "_door_at", "_open_mask", "_item_loc", "_goal_room", "_name_ids",
        "_item_names", "_oracle", "_optimal", "_oracle_world", "_text_cache",
    )  # fmt: skip

    configs = CONFIGS
    default_budgets = DEFAULT_BUDGETS

    def __init__(self, difficulty: str = "easy", render_mode: str | None = None, **config: int):
        super().__init__(difficulty=difficulty, render_mode=render_mode, **config)
        cfg = self.config
        check_rooms("KeyQuest", cfg.width, cfg.height)
        # Each door has its own colour and sits on one passage of the rooms' spanning tree.
        max_doors = min(len(_COLORS), cfg.width * cfg.height - 1)
        if not 1 <= cfg.doors <= max_doors or cfg.distractors > len(_DISTRACTORS):
            raise ValueError(
                f"Expect 1 <= `doors` <= {max_doors} and `distractors` <= {len(_DISTRACTORS)} "
                f"for a {cfg.width}x{cfg.height} KeyQuest, got {cfg.doors} and {cfg.distractors}"
            )

    # -- generation ----------------------------------------------------------------

    def _generate(self) -> None:
        cfg = self.config
        draws = Draws(self.np_random)  # the world's many small choices, from few numpy calls
        for _ in range(_MAX_GENERATION_TRIES):
            self._lay_out(cfg, draws)
            # Constructive: one search finds the optimal length for every goal room, and
            # the goal is drawn among the rooms that put it in range (a new layout only
            # when none does).
            lengths = self._delivery_lengths(cfg.max_distance)
            goals = [
                room
                for room, length in enumerate(lengths)
                if cfg.min_distance <= length and room != self._item_loc[cfg.doors]
            ]
            if goals:
                break
        else:  # only config overrides can make the distance range unreachable
            raise RuntimeError(
                f"Could not generate a {type(self).__name__} with {self.config} in "
                f"{_MAX_GENERATION_TRIES} tries: widen [min_distance, max_distance]"
            )
        self._goal_room = draws.choice(goals)
        # Names, colours and useless objects do not change the length: drawn once, for the
        # world kept (the same law as drawing them with every try).
        self._dress(cfg, draws)

    def _lay_out(self, cfg: KeyQuestConfig, draws: Draws) -> None:
        """What the optimal length depends on, but the goal: rooms, doors, keys, treasure,
        start."""
        self._exits = grid_maze(cfg.width, cfg.height, 0, draws)
        n_rooms = len(self._exits)
        self._room = draws.index(n_rooms)
        passages = [
            (r, d) for r in range(n_rooms) for d in self._exits[r] if d in ("south", "east")
        ]
        self._door_at: dict[tuple[int, str], int] = {}
        for door, (room, direction) in enumerate(draws.sample(passages, cfg.doors)):
            self._door_at[room, direction] = door
            self._door_at[self._exits[room][direction], OPPOSITE[direction]] = door
        self._open_mask = 0

        # Unlock the doors in a random feasible order, placing each key in the
        # region opened last, so keys end up behind other locked doors.
        key_rooms = [0] * cfg.doors
        region = self._flood(self._room, 0)
        newest = sorted(region)
        open_mask = 0
        for _ in range(cfg.doors):
            frontier = sorted(
                {
                    door
                    for (room, _d), door in self._door_at.items()
                    if room in region and not open_mask >> door & 1
                }
            )
            door = draws.choice(frontier)
            key_rooms[door] = draws.choice(newest)
            open_mask |= 1 << door
            grown = self._flood(self._room, open_mask, region, door)
            newest = sorted(grown - region)
            region = grown
        # The keys, then the treasure: item `doors`.
        self._item_loc = [*key_rooms, draws.choice(newest)]

    def _dress(self, cfg: KeyQuestConfig, draws: Draws) -> None:
        """What the length does not depend on: names, colours, the useless objects."""
        n_rooms = len(self._exits)
        self._name_ids = sample_name_ids(n_rooms, draws)  # spelled when described
        door_colors = draws.sample(_COLORS, cfg.doors)
        treasure = draws.choice(_TREASURES)
        distractors = draws.sample(_DISTRACTORS, cfg.distractors)
        self._item_names = [f"{c} key" for c in door_colors] + [treasure, *distractors]
        self._item_loc += [draws.index(n_rooms) for _ in distractors]
        self.goal = (
            f"Bring the {treasure} to {room_name(self._name_ids[self._goal_room])} "
            "and drop it there."
        )
        # The oracle's answers depend on what this key names, and only on it: the same world
        # again (an evaluation plays each task at every budget and repeat) keeps them.
        world = (
            self._goal_room, self._exits, self._door_at, self._item_loc[: cfg.doors + 1],
            self._item_names[: cfg.doors + 1],
        )  # fmt: skip
        if world != self._oracle_world:
            self._oracle_world = world
            self._oracle: dict[_State, int | None] = {}
            self._optimal: dict[_State, tuple[str, ...]] = {}  # optimal commands per state
        self._text_cache: dict[tuple[int, int, tuple[int, ...]], tuple[str, list[str]]] = {}

    @property
    def _door_colors(self) -> list[str]:
        """Each door's colour, from its key's name (worked out, not stored: a game's attributes
        are kept few, see `MAX_FAST_ATTRIBUTES`)."""
        return [name[:-4] for name in self._item_names[: self.config.doors]]

    def _door_color(self, door: int) -> str:
        """One door's colour (`_door_colors` without the list)."""
        return self._item_names[door][:-4]  # (its key's name, less " key")

    def _flood(
        self,
        start: int,
        open_mask: int,
        region: set[int] | None = None,
        opened: int | None = None,
    ) -> set[int]:
        """Rooms reachable from ``start`` through passages without a locked door.

        Given the ``region`` reachable before door ``opened`` was unlocked, only the
        rooms beyond that door are searched (the same set, for less work)."""
        if region is None:
            seen, queue = {start}, [start]
        else:
            seen = set(region)
            queue = [r for (r, _), door in self._door_at.items() if door == opened and r in region]
        exits, door_at = self._exits, self._door_at
        while queue:
            room = queue.pop()
            for direction, nxt in exits[room].items():
                if nxt in seen:
                    continue
                door = door_at.get((room, direction))
                if door is None or open_mask >> door & 1:
                    seen.add(nxt)
                    queue.append(nxt)
        return seen

    # -- perception ------------------------------------------------------------------

    def _room_view(self) -> tuple[str, list[str]]:
        """(description, admissible commands) of the current state, memoized."""
        key = (self._room, self._open_mask, tuple(self._item_loc))
        cached = self._text_cache.get(key)
        if cached is None:
            cached = self._text_cache[key] = (self._render_room(), self._list_commands())
        return cached

    def _render_room(self) -> str:
        room = self._room
        parts = [f"You are in {room_name(self._name_ids[room])}."]
        here = [name for name, loc in zip(self._item_names, self._item_loc) if loc == room]
        if here:
            parts.append(f"You see {_join(['a ' + name for name in here])} here.")
        passages, doors = [], []
        for direction in DIRECTIONS:
            if direction not in self._exits[room]:
                continue
            door = self._door_at.get((room, direction))
            if door is None:
                passages.append(direction)
            elif self._open_mask >> door & 1:
                doors.append(f"An open {self._door_color(door)} door leads {direction}.")
            else:
                doors.append(f"A locked {self._door_color(door)} door blocks the way {direction}.")
        if passages:
            parts.append(f"Passages lead {_join(passages)}.")
        parts.extend(doors)
        return " ".join(parts)

    def _list_commands(self) -> list[str]:
        room = self._room
        commands = []
        for direction in DIRECTIONS:
            if direction not in self._exits[room]:
                continue
            door = self._door_at.get((room, direction))
            if door is None or self._open_mask >> door & 1:
                commands.append(f"go {direction}")
            elif self._item_loc[door] == CARRIED:
                commands.append(f"unlock {self._door_color(door)} door")
        commands += [f"take {n}" for n, loc in zip(self._item_names, self._item_loc) if loc == room]
        commands += [
            f"drop {n}" for n, loc in zip(self._item_names, self._item_loc) if loc == CARRIED
        ]
        return [*commands, "look", "inventory"]

    def _admissible(self) -> list[str]:
        return self._room_view()[1]

    def _describe(self) -> str:
        return self._room_view()[0]

    # -- dynamics --------------------------------------------------------------------

    def _apply(self, command: str) -> str:
        verb, _, obj = command.partition(" ")
        if verb == "go":
            self._room = self._exits[self._room][obj]
            return f"You go {obj}."
        if verb == "unlock":
            self._open_mask |= 1 << self._door_colors.index(obj.removesuffix(" door"))
            return (
                f"You unlock the {obj} with the {obj.removesuffix(' door')} key and swing it open."
            )
        if verb == "take":
            self._item_loc[self._item_names.index(obj)] = CARRIED
            return f"You take the {obj}."
        if verb == "drop":
            item = self._item_names.index(obj)
            self._item_loc[item] = self._room
            if item == self.config.doors and self._room == self._goal_room:
                self._won = True
                return f"You set the {obj} down in {room_name(self._name_ids[self._room])}. Quest complete!"
            return f"You drop the {obj}."
        if verb == "inventory":
            carried = [n for n, loc in zip(self._item_names, self._item_loc) if loc == CARRIED]
            return (
                f"You are carrying {_join(['a ' + n for n in carried])}."
                if carried
                else "You are empty-handed."
            )
        return "You look around."

    def _explain_invalid(self, command: str, raw_action: str) -> str:
        verb, _, obj = command.partition(" ")
        if verb == "go" and obj in DIRECTIONS:
            door = self._door_at.get((self._room, obj))
            if obj not in self._exits[self._room]:
                return f"You can't go {obj} from here: there is a wall."
            if door is not None:
                return f"The {self._door_color(door)} door is locked."
        # (only a door of this room: any colour of the world's told a player of doors it
        # had not seen, where other colours got "You can't do that")
        here = {
            self._door_color(d): d for (room, _), d in self._door_at.items() if room == self._room
        }
        if verb == "unlock" and obj.removesuffix(" door") in here:
            door = here[obj.removesuffix(" door")]
            if self._open_mask >> door & 1:  # (it said "without its key" to the key's holder)
                return f"The {obj.removesuffix(' door')} door is already open."
            return f"You can't unlock the {obj} from here without its key."
        # `obj` is the player's own words: echoed printable (the observation space's charset).
        if verb == "take" and obj:
            return f"You don't see a {sanitize_for_display(obj, limit=len(obj))} here."
        if verb == "drop" and obj:
            return f"You aren't carrying a {sanitize_for_display(obj, limit=len(obj))}."
        return super()._explain_invalid(command, raw_action)

    def _progress(self) -> float:
        doors = self.config.doors
        opened = bin(self._open_mask).count("1")
        holding = self._item_loc[doors] == CARRIED
        return (opened + holding) / (doors + 2)

    # -- oracle ----------------------------------------------------------------------

    def _oracle_state(self) -> _State:
        return (self._room, self._open_mask, tuple(self._item_loc[: self.config.doors + 1]))

    def _successors(self, state: _State) -> list[tuple[str, _State]]:
        """Moves in the search graph: every admissible command except drops."""
        room, open_mask, locs = state
        result = []
        for direction, nxt in self._exits[room].items():
            door = self._door_at.get((room, direction))
            if door is None or open_mask >> door & 1:
                result.append((f"go {direction}", (nxt, open_mask, locs)))
            elif locs[door] == CARRIED:
                result.append(
                    (f"unlock {self._door_color(door)} door", (room, open_mask | 1 << door, locs))
                )
        for item, loc in enumerate(locs):
            if loc == room:
                taken = (*locs[:item], CARRIED, *locs[item + 1 :])
                result.append((f"take {self._item_names[item]}", (room, open_mask, taken)))
        return result

    def _next_states(self, state: _State) -> list[_State]:
        """The states of `_successors` without their commands: what the searches need."""
        room, open_mask, locs = state
        result = []
        for direction, nxt in self._exits[room].items():
            door = self._door_at.get((room, direction))
            if door is None or open_mask >> door & 1:
                result.append((nxt, open_mask, locs))
            elif locs[door] == CARRIED:
                result.append((room, open_mask | 1 << door, locs))
        for item, loc in enumerate(locs):
            if loc == room:
                result.append((room, open_mask, (*locs[:item], CARRIED, *locs[item + 1 :])))
        return result

    def _can_deliver(self, state: _State) -> bool:
        room, _, locs = state
        return room == self._goal_room and locs[self.config.doors] == CARRIED

    def _delivery_lengths(self, longest: int) -> list[int]:
        """Per room, the optimal length of the quest were that room the goal (-1 when it is
        over ``longest``): one forward breadth-first search from the start of a new world,
        noting the first time the treasure is held in each room. Cheaper than `_solve_from`
        (which tabulates every state); the oracle's table is built lazily when first asked.

        In a new world nothing is carried, and a shortest plan never drops anything before
        the end, so an item's location is just "taken or not": a state packs (room, open
        doors, taken items) into one integer.
        """
        exits, door_at, item_loc = self._exits, self._door_at, self._item_loc
        treasure = doors = self.config.doors
        room_bits = len(exits).bit_length()
        room_mask, door_shift, taken_shift = (1 << room_bits) - 1, room_bits, room_bits + doors
        holding = 1 << taken_shift + treasure
        # Per room: the state deltas of its open passages, its passages behind a door
        # (delta, door), and the relevant items lying there.
        free_moves: list[list[int]] = [[] for _ in exits]
        door_moves: list[list[tuple[int, int]]] = [[] for _ in exits]
        for room, room_exits in enumerate(exits):
            for direction, nxt in room_exits.items():
                door = door_at.get((room, direction))
                if door is None:
                    free_moves[room].append(nxt - room)
                else:
                    door_moves[room].append((nxt - room, door))
        items_at: list[list[int]] = [[] for _ in exits]
        for item in range(treasure + 1):
            items_at[item_loc[item]].append(item)
        special = [bool(door_moves[r] or items_at[r]) for r in range(len(exits))]
        lengths = [-1] * len(exits)
        unknown = len(exits)
        seen = {self._room}
        frontier = [self._room]
        depth = 0
        while frontier and unknown and depth + 2 <= longest:  # found now: depth + 2 long
            depth += 1
            # Walks through open passages, as one set comprehension (the bulk of the work).
            reached = {
                state + delta for state in frontier for delta in free_moves[state & room_mask]
            }
            for state in frontier:
                room = state & room_mask
                if not special[room]:
                    continue
                for delta, door in door_moves[room]:
                    if state >> door_shift + door & 1:  # open: walk through
                        reached.add(state + delta)
                    elif state >> taken_shift + door & 1:  # its key in hand: unlock it
                        reached.add(state | 1 << door_shift + door)
                for item in items_at[room]:
                    reached.add(state | 1 << taken_shift + item)
            reached -= seen
            for state in reached:
                if state & holding and lengths[state & room_mask] < 0:
                    lengths[state & room_mask] = depth + 1  # ... and the final drop
                    unknown -= 1
            seen |= reached
            frontier = list(reached)
        return lengths

    def _solve_from(self, start: _State) -> None:
        """Exact distances for every state reachable from ``start``, into the memo.

        States already in the memo are not searched again (a setback's state leads back
        into the states of the episode's start within a few moves): the new states'
        distances come from the goal within them and from the known distances at their
        edge, shortest first (one search of the new states, not of the whole world).
        """
        known = self._oracle
        successors: dict[_State, list[_State]] = {}
        queue = deque([start])
        successors[start] = []
        while queue:
            state = queue.popleft()
            nexts = self._next_states(state)
            successors[state] = nexts
            for nxt in nexts:
                if nxt not in successors and nxt not in known:
                    successors[nxt] = []
                    queue.append(nxt)
        predecessors: dict[_State, list[_State]] = {s: [] for s in successors}
        distance: dict[_State, int | None] = dict.fromkeys(successors)
        # Shortest first. Every move costs one, so a list per distance is the queue.
        by_distance: dict[int, list[_State]] = {}
        for state, nexts in successors.items():
            best = 1 if self._can_deliver(state) else None  # the final "drop <treasure>"
            for nxt in nexts:
                if nxt in predecessors:
                    predecessors[nxt].append(state)
                elif known[nxt] is not None and (best is None or known[nxt] + 1 < best):
                    best = known[nxt] + 1
            if best is not None:
                by_distance.setdefault(best, []).append(state)
        d = min(by_distance, default=0)
        while by_distance:
            for state in by_distance.pop(d, ()):
                if distance[state] is None:
                    distance[state] = d
                    for prev in predecessors[state]:
                        if distance[prev] is None:
                            by_distance.setdefault(d + 1, []).append(prev)
            d += 1
        known.update(distance)

    def _distance_of(self, state: _State) -> int | None:
        if state not in self._oracle:
            self._solve_from(state)
        return self._oracle[state]

    def distance_to_goal(self) -> int | None:
        if not self._in_episode:
            raise reset_needed("distance_to_goal")
        if self._won:
            return 0
        return self._distance_of(self._oracle_state())

    def optimal_actions(self) -> list[str]:
        if not self._in_episode:
            raise reset_needed("optimal_actions")
        if self._won:
            return []
        state = self._oracle_state()
        plans = getattr(self, "_optimal", None)
        if plans is None:  # (a game unpickled: its memo was left out)
            plans = self._optimal = {}
        plan = plans.get(state)
        if plan is None:  # asked every turn by a recorder: searched once per state
            distance = self._distance_of(state)
            if distance is None:
                plan = ()
            elif distance == 1:
                plan = (f"drop {self._item_names[self.config.doors]}",)
            else:
                plan = tuple(
                    a
                    for a, nxt in self._successors(state)
                    if self._distance_of(nxt) == distance - 1
                )
            plans[state] = plan
        return list(plan)

    def inject_setback(self, rng: np.random.Generator) -> str:
        """Drop a carried key or the treasure, or slam an open door shut and lock it."""
        self._check_setback(rng)
        if self._won:
            return ""
        before = self.distance_to_goal()
        room, open_mask, locs = self._oracle_state()
        candidates: list[tuple[_State, str]] = []
        for item, loc in enumerate(locs):
            if loc == CARRIED:
                dropped = (*locs[:item], room, *locs[item + 1 :])
                name = self._item_names[item]
                candidates.append(
                    (
                        (room, open_mask, dropped),
                        f"Oops! The {name} slips from your grasp and falls to the floor.",
                    )
                )
        for door, color in enumerate(self._door_colors):
            if open_mask >> door & 1:
                candidates.append(
                    (
                        (room, open_mask & ~(1 << door), locs),
                        f"Somewhere a {color} door slams shut, and its lock clicks.",
                    )
                )
        scored = [(self._distance_of(s), s, text) for s, text in candidates]
        solvable = [
            (d, s, text)
            for d, s, text in scored
            if d is not None and before is not None and d >= before
        ]
        worse = [c for c in solvable if c[0] > before] or solvable
        if not worse:
            return "You stumble, but nothing is lost."
        _, state, narration = worse[int(rng.integers(len(worse)))]
        self._room, self._open_mask = state[0], state[1]
        self._item_loc[: self.config.doors + 1] = state[2]
        self._state_changed()
        return narration


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
