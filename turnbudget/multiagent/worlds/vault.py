"""Vault: the rules and the team oracle of the cooperative game with asymmetric information."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from turnbudget.envs.core import PRINTABLE
from turnbudget.envs.native.base import ascii_words, normalize_command
from turnbudget.envs.native.worldgen import (
    DIRECTIONS,
    OPPOSITE,
    bfs_distances,
    grid_maze,
    sample_names,
)
from turnbudget.multiagent.worlds.base import MAX_PARSED_LENGTH, TeamWorld

__all__ = ["MAX_SAY_LENGTH", "VaultConfig", "VaultWorld"]


@dataclass(frozen=True)
class VaultConfig:
    width: int
    height: int
    route_doors: int  # coded doors on the runner's route to the vault
    decoy_doors: int  # coded doors elsewhere (their codes are noise for the operator)
    min_distance: int  # the joint plan's length lies in [min_distance, max_distance]
    max_distance: int


CONFIGS = {
    "easy": VaultConfig(width=3, height=3, route_doors=1, decoy_doors=0, min_distance=5, max_distance=12),
    "medium": VaultConfig(width=5, height=5, route_doors=2, decoy_doors=1, min_distance=15, max_distance=30),
    "hard": VaultConfig(width=7, height=7, route_doors=4, decoy_doors=2, min_distance=35, max_distance=60),
}  # fmt: skip
MAX_SAY_LENGTH = 120  # characters of one radio message
_COLORS = ("red", "blue", "green", "yellow", "silver", "bronze", "white", "black")
# (ASCII digits only: "١٢٣٤" is four digits to \d and to str.isdigit, and its echo in the
# operator's monitor line left the printable Text space)
_CODE = re.compile(r"(?<!\d)\d{4}(?!\d)", re.ASCII)
_ENTER_SYNONYMS = ("enter", "type", "key", "input", "punch", "dial")


def _one_code(message: str) -> tuple[str, bool]:
    """``message`` as the runner hears it, and whether static cut any of it: four digits get
    through (the first four-digit code's, else the first four), every other digit arrives as
    ``#``. Only further four-digit codes were cut: "28283326" or "2 8 2 8 3 3 2 6" carried
    two codes.

    Example:
        >>> _one_code("green 2828, then 3326")
        ('green 2828, then ####', True)
        >>> _one_code("go 2 rooms, code 1234")
        ('go # rooms, code 1234', True)
        >>> _one_code("28283326"), _one_code("2 8 2 8 3")
        (('2828####', True), ('2 8 2 8 #', True))
    """
    first = _CODE.search(message)
    if first is not None:
        keep = range(first.start(), first.end())
    else:
        keep = [i for i, ch in enumerate(message) if ch.isascii() and ch.isdigit()][:4]
    out = [
        "#" if ch.isascii() and ch.isdigit() and i not in keep else ch
        for i, ch in enumerate(message)
    ]
    heard = "".join(out)
    return heard, heard != message


# The oracle's state: (runner's room, open doors as a bitmask, codes the runner has heard).
_State = tuple[int, int, frozenset[str]]


class VaultWorld(TeamWorld):
    """A runner crosses a building of coded doors to the vault; only the operator knows the codes.

    The building is a tree of rooms (one route between any two), so the route
    is fixed and the team's real problem is the radio: the operator sees the
    plan, the route and every code, and can only ``say`` things; a message
    reaches the runner at the end of the round, and carries at most one
    four-digit code (four digits: any further digit in it arrives as static, ``#``).
    The runner sees its room and what it hears, and acts.

    The team oracle is exact: the runner needs one round per move and per
    door it opens, and the j-th code it has not heard yet can be used no
    earlier than round j + 1 (said in round j at the earliest, one code per
    round), so the joint plan length is ``L + max(0, max_j(j + 1 - s_j))``
    where s_j is the round of the j-th such door along the route. The oracle
    plans only with codes the runner has heard: a code it was never told is
    a guess, never part of a plan.
    """

    roles: ClassVar[tuple[str, ...]] = ("operator", "runner")
    configs: ClassVar[dict[str, VaultConfig]] = CONFIGS
    _mutable: ClassVar[tuple[str, ...]] = ("_codes", "_visited")

    # -- generation -------------------------------------------------------------------

    def _try_generate(self, cfg: VaultConfig, rng: np.random.Generator) -> bool:
        exits = grid_maze(cfg.width, cfg.height, 0, rng)  # a tree: one route between two rooms
        n = len(exits)
        vault = int(rng.integers(n))
        depth = bfs_distances(exits, vault)
        low = max(cfg.route_doors + 1, cfg.min_distance - 2 * cfg.route_doors)
        starts = [r for r in range(n) if low <= depth[r] <= cfg.max_distance - cfg.route_doors]
        if not starts:
            return False
        start = starts[int(rng.integers(len(starts)))]
        toward = _toward(exits, depth)
        route, room = [], start
        while room != vault:
            route.append((room, toward[room]))
            room = exits[room][toward[room]]
        others = [
            (r, d) for r in range(n) for d in exits[r]
            if d in ("south", "east") and (r, d) not in route
            and (exits[r][d], OPPOSITE[d]) not in route
        ]  # fmt: skip
        if len(others) < cfg.decoy_doors:
            return False
        picked = [route[i] for i in sorted(rng.choice(len(route), cfg.route_doors, replace=False))]
        picked += [others[i] for i in rng.choice(len(others), cfg.decoy_doors, replace=False)]
        colors = [str(c) for c in rng.choice(_COLORS, len(picked), replace=False)]
        doors = [
            (r, d, c, code)
            for (r, d), c, code in zip(picked, colors, self._draw_codes(len(picked), rng))
        ]
        self._setup(exits, sample_names(n, rng), start, vault, doors)
        distance = self._initial_distance
        return cfg.min_distance <= distance <= cfg.max_distance

    @classmethod
    def from_layout(
        cls,
        exits: list[dict[str, int]],
        start: int,
        vault: int,
        doors: list[tuple[int, str, str, str]],
        difficulty: str = "easy",
    ) -> VaultWorld:
        """A hand-made world (for tests and examples): ``exits`` must form a tree; ``doors``
        are ``(room, direction, colour, code)``."""
        names = [f"room {i}" for i in range(len(exits))]
        return cls._laid_out(difficulty, exits, names, start, vault, doors)

    def _setup(
        self,
        exits: list[dict[str, int]],
        names: list[str],
        start: int,
        vault: int,
        doors: list[tuple[int, str, str, str]],
    ) -> None:
        self._start_layout()
        depth = bfs_distances(exits, vault)
        toward = _toward(exits, depth)
        self._exits, self._depth, self._toward, self._vault = exits, depth, toward, vault
        self._names = names
        self._colors = [color for _, _, color, _ in doors]
        self._codes = [code for _, _, _, code in doors]
        self._door_at: dict[tuple[int, str], int] = {}
        for door, (r, d, _, _) in enumerate(doors):
            self._door_at[r, d] = door
            self._door_at[exits[r][d], OPPOSITE[d]] = door
        self._route_memo: dict[tuple[int, int], list[tuple[str, object]]] = {}
        self._distance_memo: dict[_State, int] = {}  # cleared when a code changes
        self._room, self._open, self._heard = start, 0, frozenset()
        self._visited = [start]
        self._won = False
        self._radio = ""  # the message the runner hears this round
        self._runner_news = ""  # what the operator's monitors showed of the runner's last command
        self._initial_distance = self._distance((start, 0, frozenset()))
        # Progress a player can see: the coded doors of the start's route that stand open.
        self._route_doors = [d for kind, d in self._route_actions(start, 0) if kind == "enter"]

    @staticmethod
    def _draw_codes(count: int, rng: np.random.Generator, taken: tuple[str, ...] = ()) -> list[str]:
        codes: list[str] = []
        while len(codes) < count:
            code = f"{int(rng.integers(1000, 10000))}"
            if code not in codes and code not in taken:
                codes.append(code)
        return codes

    # -- texts --------------------------------------------------------------------------

    def goal(self, role: str) -> str:
        vault = self._names[self._vault]
        if role == "runner":
            return (
                f"Reach {vault}, where the safe stands. Coded doors open with `enter <code>`; "
                "your operator knows the codes and the way, and talks to you over the radio."
            )
        return (
            f"Guide the runner to {vault}. You see the plan and every door code, and can only "
            "talk: `say <message>` reaches the runner at the end of the round, one code per message."
        )

    def describe(self, role: str) -> str:
        return self._describe_runner() if role == "runner" else self._describe_operator()

    def _door_text(self, door: int) -> str:
        state = "open" if self._open >> door & 1 else "locked"
        return f"the {self._colors[door]} door ({state})"

    def _describe_runner(self) -> str:
        room = self._room
        parts = []
        for d in DIRECTIONS:
            if d in self._exits[room]:
                door = self._door_at.get((room, d))
                parts.append(d if door is None else f"{d} through {self._door_text(door)}")
        text = f"You are in {self._names[room]}. Exits: {', '.join(parts)}."
        if self._radio:
            text += f'\nRadio: "{self._radio}"'
        if self._heard:
            text += f"\nCodes you have heard: {', '.join(sorted(self._heard))}."
        return text

    def _describe_operator(self) -> str:
        steps = []
        for kind, value in self._route_actions(self._room, self._open):
            if kind == "go":
                steps.append(value)
            else:
                steps.append(f"[{self._colors[value]} door]")
        codes = ", ".join(
            f"{self._colors[d]} {self._codes[d]} ({'open' if self._open >> d & 1 else 'locked'})"
            for d in range(len(self._codes))
        )
        text = (
            f"The runner is in {self._names[self._room]}; the safe is in "
            f"{self._names[self._vault]}.\nRoute: {' '.join(steps) or 'none: the runner is there'}."
            f"\nDoor codes: {codes}."
        )
        if self._runner_news:
            text += f"\nMonitor: {self._runner_news}"
        return text

    # -- commands -------------------------------------------------------------------------

    def _admissible_key(self, role: str) -> tuple:
        return (role, self._room, self._open, self._heard, self._won, tuple(self._codes))

    def _admissible(self, role: str) -> list[str]:
        if self._won:
            return []
        if role == "operator":
            closed = [d for d in range(len(self._codes)) if not self._open >> d & 1]
            return [f"say {self._colors[d]} {self._codes[d]}" for d in closed] + ["wait"]
        room = self._room
        commands = [
            f"go {d}" for d in DIRECTIONS
            if d in self._exits[room] and self._passable(room, d)
        ]  # fmt: skip
        if self._locked_here():
            commands += [f"enter {code}" for code in sorted(self._heard)]
        return [*commands, "look", "wait"]

    def parse(self, role: str, command: str) -> str | None:
        if len(command) > MAX_PARSED_LENGTH:
            return None
        # (case and whitespace folded in ASCII only, as the native games fold them: "\u212aey"
        # was "key", an attempt at the keypad)
        words = ascii_words(command)
        if role == "operator" and words and words[0] == "say":
            message = " ".join(command.strip()[3:].split())  # one line, single spaces
            message = "".join(ch if ch in PRINTABLE else "?" for ch in message)[:MAX_SAY_LENGTH]
            return f"say {message}" if message else None
        if role == "runner" and words and words[0] in _ENTER_SYNONYMS and self._locked_here():
            codes = _CODE.findall(command)
            if len(codes) == 1 and all(
                (w.isascii() and w.isdigit()) or w in (*_ENTER_SYNONYMS, "code", "the")
                for w in words
            ):
                return f"enter {codes[0]}"  # any well-formed code is an attempt, heard or not
            return None
        canonical = normalize_command(command)
        return canonical if canonical in self.admissible(role) else None

    def explain_invalid(self, role: str, command: object) -> str:
        if role == "runner" and isinstance(command, str):
            canonical = normalize_command(command)
            if canonical.startswith("go ") and canonical[3:] in DIRECTIONS:
                door = self._door_at.get((self._room, canonical[3:]))
                if door is not None and canonical[3:] in self._exits[self._room]:
                    return f"The {self._colors[door]} door is locked: its keypad waits for a code."
                return f"You can't go {canonical[3:]} from here: there is a wall."
            if canonical.startswith(_ENTER_SYNONYMS):
                return "There is no locked keypad here, or that is not a four-digit code."
        if role == "operator" and isinstance(command, str) and command.strip().lower() == "say":
            return "Say what? `say <message>`."
        return super().explain_invalid(role, command)

    def _passable(self, room: int, direction: str) -> bool:
        door = self._door_at.get((room, direction))
        return door is None or bool(self._open >> door & 1)

    def _locked_here(self) -> list[int]:
        return [
            door for d in self._exits[self._room]
            if (door := self._door_at.get((self._room, d))) is not None and not self._open >> door & 1
        ]  # fmt: skip

    # -- the round ------------------------------------------------------------------------

    def play_round(self, commands: Mapping[str, str | None]) -> dict[str, str]:
        self._radio = ""
        runner = commands.get("runner")
        feedback = {"runner": "", "operator": ""}
        if runner is not None:
            feedback["runner"] = self._run(runner)
            self._runner_news = f"the runner did `{runner}`: {feedback['runner']}"
        else:
            self._runner_news = "the runner fumbled (an invalid command)."
        operator = commands.get("operator")
        if operator is not None:
            feedback["operator"] = self._talk(operator)
        return feedback

    def _run(self, command: str) -> str:
        if command.startswith("go "):
            direction = command[3:]
            self._room = self._exits[self._room][direction]
            self._visited.append(self._room)
            if self._room == self._vault:
                self._won = True
                return f"You walk {direction} into {self._names[self._room]}: the safe is here! You made it."
            return f"You walk {direction}."
        if command.startswith("enter "):
            code = command[6:]
            for door in self._locked_here():
                if self._codes[door] == code:
                    self._open |= 1 << door
                    return f"The keypad beeps twice: the {self._colors[door]} door swings open."
            return "The keypad buzzes: wrong code."
        return "You wait." if command == "wait" else "You look around."

    def _talk(self, command: str) -> str:
        if not command.startswith("say "):
            return "You watch the monitors."
        message, cut = _one_code(command[4:])
        first = _CODE.search(message)
        if first is not None:
            self._heard = self._heard | {first.group(0)}
        self._radio = message
        note = " (only one code gets through per message: the rest was static)" if cut else ""
        return f'You radio: "{message}"{note}.'

    # -- status ---------------------------------------------------------------------------

    def won(self, role: str) -> bool:
        return self._won

    def lost(self, role: str) -> bool:
        return False

    def ending(self, role: str) -> str:
        # (the runner's own feedback says it: "the safe is here! You made it.")
        return "" if role == "runner" else "The runner reaches the vault: you made it."

    @property
    def over(self) -> bool:
        return self._won

    def progress(self, role: str) -> float:
        """The operator's: the route's coded doors that stand open over one more than their
        number (entering the vault is the last step: 1.0 only once won), what its plan shows,
        never the oracle's distance. The runner's: 0 until won, then 1 (it does not know the
        route: a share of route doors told it which doors it entered were on it)."""
        if self._won:
            return 1.0
        if role == "runner":
            return 0.0
        opened = sum(self._open >> d & 1 for d in self._route_doors)
        return opened / (len(self._route_doors) + 1)

    # -- oracle ---------------------------------------------------------------------------

    def _state(self) -> _State:
        return (self._room, self._open, self._heard)

    def _route_actions(self, room: int, open_mask: int) -> list[tuple[str, object]]:
        """The runner's moves and door openings along the (unique) route to the vault."""
        memo = self._route_memo.get((room, open_mask))
        if memo is not None:
            return memo
        start = room
        actions: list[tuple[str, object]] = []
        while room != self._vault:
            direction = self._toward[room]
            door = self._door_at.get((room, direction))
            if door is not None and not open_mask >> door & 1:
                actions.append(("enter", door))
            actions.append(("go", direction))
            room = self._exits[room][direction]
        self._route_memo[start, open_mask] = actions
        return actions

    def _distance(self, state: _State) -> int:
        memo = self._distance_memo.get(state)
        if memo is not None:
            return memo
        room, open_mask, heard = state
        if room == self._vault:
            return 0
        actions = self._route_actions(room, open_mask)
        wait = 0
        j = 0
        for s, (kind, door) in enumerate(actions, start=1):
            if kind == "enter" and self._codes[door] not in heard:  # type: ignore[index]
                j += 1
                wait = max(wait, j + 1 - s)
        self._distance_memo[state] = distance = len(actions) + wait
        return distance

    def _next_state(self, state: _State, runner: str, operator: str) -> _State:
        room, open_mask, heard = state
        if runner.startswith("go "):
            room = self._exits[room][runner[3:]]
        elif runner.startswith("enter "):
            for d in self._exits[room]:
                door = self._door_at.get((room, d))
                if door is not None and self._codes[door] == runner[6:]:
                    open_mask |= 1 << door
        if operator.startswith("say "):
            first = _CODE.search(operator)
            if first is not None:
                heard = heard | {first.group(0)}
        return (room, open_mask, heard)

    def _optimal_pairs(self) -> list[tuple[str, str]]:
        if self._won:
            return []
        state = self._state()
        target = self._distance(state) - 1
        return [
            (r, o)
            for r in self.admissible("runner")
            for o in self.admissible("operator")
            if self._distance(self._next_state(state, r, o)) == target
        ]

    def distance_to_goal(self, role: str | None = None) -> int | None:
        """Rounds of the shortest joint plan (the same for both roles: the team wins together)."""
        return 0 if self._won else self._distance(self._state())

    def optimal_actions(self, role: str) -> list[str]:
        """Every admissible command of ``role`` that starts a shortest joint plan."""
        index = self.roles.index(role) ^ 1  # pairs are (runner, operator)
        return sorted({pair[index] for pair in self._optimal_pairs()})

    def joint_plan(self, role: str | None = None) -> list[dict[str, str]]:
        """One shortest joint plan from now: a ``{role: command}`` dict per round."""
        plan: list[dict[str, str]] = []
        state = self._state()
        while state[0] != self._vault:
            target = self._distance(state) - 1
            runner_options = self._runner_options(state)
            operator_options = self._operator_options(state)
            runner, operator = next(
                (r, o) for r in runner_options for o in operator_options
                if self._distance(self._next_state(state, r, o)) == target
            )  # fmt: skip
            plan.append({"operator": operator, "runner": runner})
            state = self._next_state(state, runner, operator)
        return plan

    def _runner_options(self, state: _State) -> list[str]:
        room, open_mask, heard = state
        moves = [
            f"go {d}" for d in DIRECTIONS
            if d in self._exits[room]
            and ((door := self._door_at.get((room, d))) is None or open_mask >> door & 1)
        ]  # fmt: skip
        return [*moves, *(f"enter {c}" for c in sorted(heard)), "wait"]

    def _operator_options(self, state: _State) -> list[str]:
        closed = [d for d in range(len(self._codes)) if not state[1] >> d & 1]
        return [f"say {self._colors[d]} {self._codes[d]}" for d in closed] + ["wait"]

    def inject_setback(self, role: str, rng: np.random.Generator) -> str:
        """Runner: escorted back to an earlier room no closer to the vault. Operator: an open
        door on the route slams shut and its keypad draws a new code (any door when none is)."""
        if self._won:
            return ""
        if role == "runner":
            here = self._depth[self._room]
            # (no closer by depth, and no shorter a task: a room past a door an operator's
            # setback slammed behind the runner is nearer the vault in rounds)
            _, open_mask, heard = state = self._state()
            before = self._distance(state)

            def no_closer(rooms: Iterable[int]) -> list[int]:
                return sorted(
                    r for r in rooms
                    if self._depth[r] >= here and self._distance((r, open_mask, heard)) >= before
                )  # fmt: skip

            candidates = no_closer(set(self._visited) - {self._room})
            if not candidates:
                candidates = no_closer(self._exits[self._room].values())
            if not candidates:
                return "A guard eyes you suspiciously, but lets you be."
            self._room = candidates[int(rng.integers(len(candidates)))]
            self._visited.append(self._room)
            return f"Guards escort you back to {self._names[self._room]}!"
        route_doors = [d for kind, d in self._route_actions(self._room, 0) if kind == "enter"]
        opened = [d for d in route_doors if self._open >> d & 1] or list(range(len(self._codes)))
        door = opened[int(rng.integers(len(opened)))]
        self._open &= ~(1 << door)
        self._codes[door] = self._draw_codes(1, rng, tuple(self._codes))[0]
        self._distance_memo = {}  # distances depend on which codes were heard
        return (
            f"Alarm! The {self._colors[door]} door slams shut and its keypad now wants "
            f"{self._codes[door]}."
        )


def _toward(exits: list[dict[str, int]], depth: list[int]) -> list[str]:
    """Per room, the direction one step closer to the vault (a tree has exactly one)."""
    toward = [""] * len(exits)
    for room, room_exits in enumerate(exits):
        for direction, nxt in room_exits.items():
            if depth[nxt] == depth[room] - 1:
                toward[room] = direction
    return toward
