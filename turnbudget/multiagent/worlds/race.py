"""Race: the rules and the per-agent oracle of the competitive crafting game."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from turnbudget.envs.native.worldgen import DIRECTIONS, bfs_distances, grid_maze, sample_names
from turnbudget.multiagent.worlds.base import TeamWorld

__all__ = ["RaceConfig", "RaceWorld"]


@dataclass(frozen=True)
class RaceConfig:
    width: int
    height: int
    extra_passages: int  # loops in the map
    recipe_size: int  # materials per recipe: one contested, the rest private
    contested_copies: int  # copies of the material both recipes need (the scarce one)
    min_distance: int  # each player's best response lies in [min_distance, max_distance]
    max_distance: int


CONFIGS = {
    "easy": RaceConfig(width=3, height=3, extra_passages=1, recipe_size=2, contested_copies=1, min_distance=5, max_distance=12),
    "medium": RaceConfig(width=5, height=5, extra_passages=3, recipe_size=3, contested_copies=2, min_distance=15, max_distance=30),
    "hard": RaceConfig(width=7, height=7, extra_passages=5, recipe_size=4, contested_copies=2, min_distance=35, max_distance=60),
}  # fmt: skip
_MATERIALS = ("iron", "wood", "flint", "resin", "copper", "wool", "clay", "reed", "bone")
_TOOLS = ("a lantern", "a compass")
_HELD = -1  # room of a copy a player carries (who carries it is in `_holder`)

# A take event of a plan: (round from now, copy index).
_Takes = list[tuple[int, int]]


class RaceWorld(TeamWorld):
    """Two players race to gather their recipe's materials and craft first at the workbench.

    Both recipes share one material, of which there are too few copies
    (one in Easy, two in Medium and Hard); the other materials are private.
    A player can only pick up materials of its own recipe. Whoever crafts
    first wins; crafting on the same round is a win for both. Two players
    taking the same copy on the same round: it goes to ``player_0`` on odd
    rounds and to ``player_1`` on even rounds.

    No joint optimum exists, so the oracle is per agent, against a fixed
    opponent policy, the *house* policy: follow one's own shortest solo
    tour (materials by the scouts' report, copies chosen and ties broken in a
    fixed order), ignoring the other player; a take that fails because the
    copy is gone is retried forever (a blocked house player). That policy
    depends on the opponent only through what the opponent takes, so the
    best response is exact: the shortest of the tours over one's missing
    materials (every order and copy choice) that crafts no later than the
    house player, or that takes the copy the house player is heading for.
    """

    roles: ClassVar[tuple[str, ...]] = ("player_0", "player_1")
    configs: ClassVar[dict[str, RaceConfig]] = CONFIGS
    generation_tries: ClassVar[int] = 500
    _mutable: ClassVar[tuple[str, ...]] = (
        "_where", "_holder", "_room", "_visited", "_known", "_crafted", "_news",
    )  # fmt: skip

    # -- generation -------------------------------------------------------------------

    def _try_generate(self, cfg: RaceConfig, rng: np.random.Generator) -> bool:
        exits = grid_maze(cfg.width, cfg.height, cfg.extra_passages, rng)
        n = len(exits)
        names = sample_names(n, rng)
        materials = [str(m) for m in rng.choice(_MATERIALS, 2 * cfg.recipe_size - 1, replace=False)]
        contested, private = materials[0], materials[1:]
        k = cfg.recipe_size - 1
        recipes = {
            "player_0": (contested, *sorted(private[:k])),
            "player_1": (contested, *sorted(private[k:])),
        }
        placed = [contested] * cfg.contested_copies + private
        rooms = [int(r) for r in rng.choice(n, len(placed) + 3, replace=False)]
        copies = list(zip(placed, rooms[: len(placed)]))
        starts = {"player_0": rooms[-2], "player_1": rooms[-1]}
        self._setup(exits, names, rooms[-3], starts, recipes, copies)
        return all(
            d is not None and cfg.min_distance <= d <= cfg.max_distance
            for d in self._initial.values()
        )

    @classmethod
    def from_layout(
        cls,
        exits: list[dict[str, int]],
        bench: int,
        starts: Mapping[str, int],
        recipes: Mapping[str, tuple[str, ...]],
        copies: list[tuple[str, int]],
        difficulty: str = "easy",
    ) -> RaceWorld:
        """A hand-made world (for tests and examples): ``copies`` are ``(material, room)``."""
        names = [f"room {i}" for i in range(len(exits))]
        return cls._laid_out(difficulty, exits, names, bench, starts, recipes, copies)

    def _setup(
        self,
        exits: list[dict[str, int]],
        names: list[str],
        bench: int,
        starts: Mapping[str, int],
        recipes: Mapping[str, tuple[str, ...]],
        copies: list[tuple[str, int]],
    ) -> None:
        self._start_layout()
        self._exits, self._names, self._bench = exits, names, bench
        self._dist: dict[int, list[int]] = {}  # target room -> moves from every room, on demand
        self._recipes = {role: tuple(recipes[role]) for role in self.roles}
        self._material = [m for m, _ in copies]
        self._where = [r for _, r in copies]  # copy -> room, or _HELD
        self._holder: list[str | None] = [None] * len(copies)
        self._room = {role: int(starts[role]) for role in self.roles}
        self._visited = {role: [room] for role, room in self._room.items()}
        self._known = {role: list(self._where) for role in self.roles}  # the scouts' report
        self._crafted: dict[str, bool] = dict.fromkeys(self.roles, False)
        self._round = 0
        self._news = dict.fromkeys(self.roles, "")
        self._plans: dict[tuple, tuple[list[str], _Takes, int]] = {}
        self._initial = {role: self.distance_to_goal(role) for role in self.roles}

    # -- texts --------------------------------------------------------------------------

    def _other(self, role: str) -> str:
        return self.roles[self.roles.index(role) ^ 1]

    def _report(self, role: str) -> str:
        lines = []
        for material in self._recipes[role]:
            rooms = [
                self._names[self._known[role][c]]
                for c in range(len(self._material))
                if self._material[c] == material and self._known[role][c] != _HELD
            ]
            lines.append(f"{material}: {' and '.join(rooms) if rooms else 'none left'}")
        return "; ".join(lines)

    def goal(self, role: str) -> str:
        tool = _TOOLS[self.roles.index(role)]
        return (
            f"Craft {tool} at the workbench in {self._names[self._bench]} before your rival "
            f"crafts theirs. You need: {', '.join(self._recipes[role])}. "
            f"Scouts report: {self._report(role)}."
        )

    def describe(self, role: str) -> str:
        room = self._room[role]
        exits = [d for d in DIRECTIONS if d in self._exits[room]]
        here = [self._material[c] for c in range(len(self._where)) if self._where[c] == room]
        carried = [self._material[c] for c in range(len(self._where)) if self._holder[c] == role]
        text = f"You are in {self._names[room]}. Exits: {', '.join(exits)}."
        if here:
            text += f" Here: {', '.join(sorted(here))}."
        if room == self._bench:
            text += " The workbench is here."
        if self._room[self._other(role)] == room:
            text += " Your rival is here."
        missing = [m for m in self._recipes[role] if m not in carried]
        text += f"\nYou carry: {', '.join(sorted(carried)) or 'nothing'}."
        text += f" Still needed: {', '.join(missing) or 'nothing: go craft'}."
        if self._news[role]:
            text += f"\n{self._news[role]}"
        return text

    # -- commands -------------------------------------------------------------------------

    def _missing(self, role: str) -> list[str]:
        held = {self._material[c] for c, h in enumerate(self._holder) if h == role}
        return [m for m in self._recipes[role] if m not in held]

    def _admissible_key(self, role: str) -> tuple:
        return (role, self._room[role], tuple(self._where), tuple(self._holder), self.over)

    def _admissible(self, role: str) -> list[str]:
        if self.over:
            return []
        room = self._room[role]
        commands = [f"go {d}" for d in DIRECTIONS if d in self._exits[room]]
        missing = self._missing(role)
        here = sorted(
            {self._material[c] for c, r in enumerate(self._where) if r == room} & set(missing)
        )
        commands += [f"take {m}" for m in here]
        if room == self._bench:
            commands.append("craft")
        return [*commands, "look", "wait"]

    def explain_invalid(self, role: str, command: object) -> str:
        if isinstance(command, str) and command.strip().lower().split()[:1] in (["take"], ["get"]):
            return "You can't take that: it is not here, or not on your recipe, or you have one."
        if isinstance(command, str) and command.strip().lower() == "craft":
            return "The workbench is not here."
        return super().explain_invalid(role, command)

    # -- the round ------------------------------------------------------------------------

    def play_round(self, commands: Mapping[str, str | None]) -> dict[str, str]:
        self._round += 1
        feedback = dict.fromkeys(self.roles, "")
        self._news = dict.fromkeys(self.roles, "")
        takes = {}
        for role in self.roles:
            command = commands.get(role)
            if command is None:
                continue
            if command.startswith("take "):
                material = command[5:]
                room = self._room[role]
                found = [
                    c for c in range(len(self._where))
                    if self._where[c] == room and self._material[c] == material
                ]  # fmt: skip
                if found:
                    takes[role] = found[0]
                else:  # the house policy retrying a copy that is gone
                    feedback[role] = f"There is no {material} here."
            elif command.startswith("go "):
                self._room[role] = self._exits[self._room[role]][command[3:]]
                self._visited[role].append(self._room[role])
                feedback[role] = f"You walk {command[3:]}."
            elif command == "craft":
                if self._missing(role):
                    feedback[role] = f"You lack {', '.join(self._missing(role))}."
                else:
                    self._crafted[role] = True
                    feedback[role] = "You craft your tool!"
            else:
                feedback[role] = "You wait." if command == "wait" else "You look around."
        # Both after the same copy: the round's parity decides.
        order = self.roles if self._round % 2 == 1 else self.roles[::-1]
        for role in order:
            if role not in takes:
                continue
            c = takes[role]
            if self._where[c] == _HELD:
                feedback[role] = f"Your rival snatches the {self._material[c]} first!"
                continue
            self._where[c], self._holder[c] = _HELD, role
            feedback[role] = f"You take the {self._material[c]}."
            self._known[role][c] = _HELD
        for role in self.roles:
            if self._crafted[role]:
                self._news[self._other(role)] = "Your rival has crafted their tool."
        return feedback

    def ending(self, role: str) -> str:
        return "" if self._crafted[role] else "Your rival crafted first: you lose."

    # -- status ---------------------------------------------------------------------------

    def won(self, role: str) -> bool:
        return self._crafted[role]

    def lost(self, role: str) -> bool:
        return self.over and not self._crafted[role]

    @property
    def over(self) -> bool:
        return any(self._crafted.values())

    def progress(self, role: str) -> float:
        if self._crafted[role]:
            return 1.0
        recipe = self._recipes[role]
        return (len(recipe) - len(self._missing(role))) / (len(recipe) + 1)

    # -- the house policy -----------------------------------------------------------------

    def _solo_plan(self, role: str) -> tuple[list[str], _Takes, int]:
        """``role``'s shortest solo tour by its own knowledge: commands, take events, length."""
        room, missing = self._room[role], self._missing(role)
        known = self._known[role]
        key = (role, room, tuple(missing), tuple(known))
        if key not in self._plans:
            best: tuple[int, list[int]] | None = None
            for order in itertools.permutations(missing):
                for copies in itertools.product(
                    *(
                        [
                            c
                            for c in range(len(known))
                            if self._material[c] == m and known[c] != _HELD
                        ]
                        for m in order
                    )
                ):
                    length = self._tour_length(room, list(copies), known)
                    if best is None or length < best[0]:
                        best = (length, list(copies))
            if best is None:  # a copy it needs is gone from its report: it waits forever
                self._plans[key] = (["wait"], [], 10**9)
            else:
                self._plans[key] = self._tour_commands(role, room, best[1], known)
        return self._plans[key]

    def _tour_length(self, room: int, copies: list[int], where: list[int]) -> int:
        length = 0
        for c in copies:
            length += self._to(where[c])[room] + 1
            room = where[c]
        return length + self._to(self._bench)[room] + 1

    def _to(self, target: int) -> list[int]:
        """Moves from every room to ``target`` (one breadth-first search per target, kept)."""
        table = self._dist.get(target)
        if table is None:
            table = self._dist[target] = bfs_distances(self._exits, target)
        return table

    def _path(self, start: int, goal: int) -> list[str]:
        to_goal = self._to(goal)
        steps, room = [], start
        while room != goal:
            direction = next(
                d for d in DIRECTIONS
                if d in self._exits[room] and to_goal[self._exits[room][d]] == to_goal[room] - 1
            )  # fmt: skip
            steps.append(f"go {direction}")
            room = self._exits[room][direction]
        return steps

    def _tour_commands(
        self, role: str, room: int, copies: list[int], where: list[int]
    ) -> tuple[list[str], _Takes, int]:
        commands: list[str] = []
        takes: _Takes = []
        for c in copies:
            commands += self._path(room, where[c])
            commands.append(f"take {self._material[c]}")
            takes.append((len(commands), c))
            room = where[c]
        commands += [*self._path(room, self._bench), "craft"]
        return commands, takes, len(commands)

    def house_action(self, role: str) -> str:
        """The fixed opponent policy's command for ``role`` now (its solo plan's next step)."""
        if self.over:
            return "wait"
        return self._solo_plan(role)[0][0]

    # -- oracle ---------------------------------------------------------------------------

    def _best_tours(self, role: str) -> tuple[int | None, list[list[int]]]:
        """The best response's length against the house rival, and every copy sequence achieving it."""
        if self.over:
            return (0 if self._crafted[role] else None), []
        rival = self._other(role)
        _, rival_takes, rival_finish = self._solo_plan(rival)
        room, missing = self._room[role], self._missing(role)
        candidates = []
        for order in itertools.permutations(missing):
            options = [
                [c for c in range(len(self._where)) if self._material[c] == m and self._where[c] != _HELD]
                for m in order
            ]  # fmt: skip
            for copies in itertools.product(*options):
                candidates.append(
                    (self._tour_length(room, list(copies), self._where), list(copies))
                )
        candidates.sort(key=lambda item: item[0])
        best: int | None = None
        tours: list[list[int]] = []
        # A winning tour crafts after exactly its length: scan by length, stop past the best.
        for length, copies in candidates:
            if best is not None and length > best:
                break
            if self._race(role, room, copies, rival_takes, rival_finish) is not None:
                best = length
                tours.append(copies)
        return best, tours

    def _race(
        self, role: str, room: int, copies: list[int], rival_takes: _Takes, rival_finish: int
    ) -> int | None:
        """Rounds until ``role`` crafts along ``copies`` if that wins against the house rival."""
        mine: _Takes = []
        t = 0
        for c in copies:
            t += self._to(self._where[c])[room] + 1
            mine.append((t, c))
            room = self._where[c]
        finish = t + self._to(self._bench)[room] + 1
        gone: set[int] = set()
        mine_at = dict(mine)
        first = self.roles.index(role)
        rival = self._other(role)
        for t_rival, c_rival in rival_takes:
            # My takes before the rival's: they may empty the copy it is heading for.
            for t_mine, c_mine in mine:
                if t_mine < t_rival:
                    gone.add(c_mine)
            tie_goes_to_me = (self._round + t_rival) % 2 == (1 if first == 0 else 0)
            if mine_at.get(t_rival) == c_rival and tie_goes_to_me:
                gone.add(c_rival)
            if c_rival in gone or self._where[c_rival] != self._known[rival][c_rival]:
                return finish  # the rival is blocked for good
            if any(c == c_rival and t_mine >= t_rival for t_mine, c in mine):
                return None  # it takes a copy I planned to take later
            gone.add(c_rival)
        return finish if finish <= rival_finish else None

    def distance_alone(self, role: str) -> int | None:
        """Rounds of ``role``'s shortest tour to craft, the rival ignored (None: a material it
        needs has no copy left): a lower bound whoever plays the rival, who can only take
        copies, where `distance_to_goal` is exact against the house rival only. Not with
        setbacks on: a setback that makes the rival drop a copy can leave it nearer."""
        if role not in self.roles:
            raise ValueError(f"Expect one of {self.roles}, got {role!r}")
        if self.over:
            return 0 if self._crafted[role] else None
        room, best = self._room[role], None
        for order in itertools.permutations(self._missing(role)):
            options = [
                [c for c in range(len(self._where)) if self._material[c] == m and self._where[c] != _HELD]
                for m in order
            ]  # fmt: skip
            for copies in itertools.product(*options):
                length = self._tour_length(room, list(copies), self._where)
                best = length if best is None else min(best, length)
        return best

    def distance_to_goal(self, role: str | None = None) -> int | None:
        """Rounds of ``role``'s best response to the house rival (None: it cannot win)."""
        if role not in self.roles:
            raise ValueError(
                f"Race's oracle is per agent: expect one of {self.roles}, got {role!r}"
            )
        return self._best_tours(role)[0]

    def optimal_actions(self, role: str) -> list[str]:
        """Every admissible command of ``role`` that starts a best response to the house rival."""
        best, tours = self._best_tours(role)
        if not best:
            return []
        room = self._room[role]
        actions: set[str] = set()
        for copies in tours:
            target = self._where[copies[0]] if copies else self._bench
            if room == target:
                actions.add(f"take {self._material[copies[0]]}" if copies else "craft")
                continue
            for d, nxt in self._exits[room].items():
                if self._to(target)[nxt] == self._to(target)[room] - 1:
                    actions.add(f"go {d}")
        return sorted(actions)

    def joint_plan(self, role: str | None = None) -> list[dict[str, str]]:
        """``role``'s best response (first optimal command each round) against the house rival."""
        if role not in self.roles:
            raise ValueError(
                f"Race's oracle is per agent: expect one of {self.roles}, got {role!r}"
            )
        world = copy.deepcopy(self)
        plan: list[dict[str, str]] = []
        while not world.over and world.distance_to_goal(role):
            commands = {
                role: world.optimal_actions(role)[0],
                world._other(role): world.house_action(world._other(role)),
            }
            plan.append(commands)
            world.play_round(commands)
        return plan

    def inject_setback(self, role: str, rng: np.random.Generator) -> str:
        """Drop a carried material where ``role`` stands, or send it back to an earlier room;
        only perturbations after which ``role`` can still win and is no closer to winning,
        preferably ones that cost it rounds."""
        if self.over:
            return ""
        before = self.distance_to_goal(role)
        options = []
        for c, holder in enumerate(self._holder):
            if holder == role:
                options.append(("drop", c))
        for room in sorted(set(self._visited[role]) - {self._room[role]}):
            options.append(("move", room))
        scored = []
        for kind, value in options:
            trial = copy.deepcopy(self)
            trial._apply_setback(role, kind, value)
            after = trial.distance_to_goal(role)
            if after is not None and before is not None and after >= before:
                scored.append((after > before, kind, value))
        worse = [s for s in scored if s[0]] or scored
        if not worse:
            return "You stumble, but keep your footing."
        _, kind, value = worse[int(rng.integers(len(worse)))]
        self._apply_setback(role, kind, value)
        if kind == "drop":
            return f"You trip and drop the {self._material[value]}!"
        return f"A crowd sweeps you back to {self._names[value]}!"

    def _apply_setback(self, role: str, kind: str, value: int) -> None:
        if kind == "drop":
            self._where[value] = self._known[role][value] = self._room[role]
            self._holder[value] = None
        else:
            self._room[role] = value
            self._visited[role].append(value)
