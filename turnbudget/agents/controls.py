"""Control agents: agents whose true skills are known, to validate the skill metrics.

A metric that claims to measure single-step decision quality or recovery skill
must put each of these on the right side of 0 (`turnbudget validate` runs them
on the probes and checks). What each one truly has:

| control (spec) | behaviour | single-step skill | recovery-specific skill |
|---|---|---|---|
| ``random`` | uniform over the admissible commands | 0 (chance) | 0 |
| ``oracle:EPS`` | the memoryless ε-oracle (`OracleAgent`) | decreasing in ε | 0 |
| ``control:undo`` | random; undoes a slip, retraces its history after a setback | 0 | about 0 (no goal) |
| ``control:pingpong`` | always undoes the last executed command | below 0 (about 0 where commands have no inverse) | 0 |
| ``control:look-first`` | ``look`` on turn 1, then the oracle | 1 (its look apart) | 0 |
| ``control:look-last`` | the oracle, ``look`` on its last turn | 1 (its look apart) | 0 |
| ``control:recovery-positive`` | ε = 0.5 on track, the oracle for 3 turns after an error | that of ε = 0.5 | above 0 |
| ``control:recovery-negative`` | the oracle on track, ε = 0.8 for 3 turns after an error | 1 | below 0 |

*Recovery-specific skill* is what an agent does after an error beyond what it
does anyway from a state as far from the goal (`turnbudget.eval.probes`):
a memoryless agent acts the same whether or not it just erred, so it has none,
whatever its single-step skill; the undo reflex and the ping-pong react to
errors but have no goal to return to, so what they gain by it stays near 0.
Near, not at: in a probe the forced prefix the undo reflex retraces is the
teacher's optimal path, so on Maze-Easy its recovery-specific skill is about
+0.105 (±0.003 over 3,500 probed tasks; +0.008 on KeyQuest-Easy), at the edge of
the margin `turnbudget validate` allows it (`REFLEX_MARGIN`, 0.1): at about
10,000 tasks, validate's check of it fails about half the time on a sound metric,
and more often with more, as its interval narrows onto +0.105 (at its default
40 tasks, practically never).

An *error* is what a player notices, never the oracle's distance: an
``info["injected_error"]`` event of kind slip or setback (the narration the
engine shows with it), or ``info["executed_action"]`` differing from the
command the agent gave (a slip replaced it). The oracle controls read
``info["oracle_actions"]`` as `OracleAgent` does (``needs_oracle``); the
others see only observations, admissible commands and what was executed.

Every control is an `Agent` with the optional ``observe`` hook (it hears the
turns a probe forces), seeded by ``reset`` only. Build one from a spec with
``make_agent("control:pingpong")`` (`make_control` parses the argument).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from turnbudget._checks import brief, check_positive_int, check_probability, check_seed
from turnbudget.agents.base import EXECUTED_KEY, admissible_commands, exact_number
from turnbudget.agents.baselines import OracleAgent, RandomAgent

__all__ = [
    "CONTROLS",
    "EpsilonOracle",
    "LookOracle",
    "OwnErrorRecovery",
    "PingPong",
    "RecoveryControl",
    "UndoReflex",
    "inverse_command",
    "make_control",
    "noticed_error",
    "state_text",
]

#: The memoryless ε-oracle control is `OracleAgent` itself: each turn, with probability ε a
#: uniformly random admissible command, else an optimal one, never depending on the past.
EpsilonOracle = OracleAgent

#: The harmless information-gathering command of the look controls (a valid no-op).
LOOK = "look"
_OPPOSITE = {
    "north": "south", "south": "north", "east": "west", "west": "east", "up": "down",
    "down": "up",
}  # fmt: skip
_INVERSE_VERBS = {"take": "drop", "drop": "take", "open": "close", "close": "open"}
_INVERSE_COMMANDS = {"next page": "previous page", "previous page": "next page"}


def state_text(observation: str) -> str:
    """What the observation says about the state: its last paragraph (the games put the
    feedback of a command, a narration or the goal before it, each a paragraph of its own).

    Example:
        >>> state_text("You walk south.\\n\\nYou are in the Crimson Scullery.")
        'You are in the Crimson Scullery.'
    """
    if not isinstance(observation, str):  # (was an AttributeError from rsplit)
        raise TypeError(
            f"Expect `observation` to be the env's text, a str, got {brief(observation)}"
        )
    return observation.rsplit("\n\n", 1)[-1]


def inverse_command(command: str | None, admissible: Sequence[str]) -> str | None:
    """The admissible command that undoes ``command`` (``go north`` / ``go south``,
    ``take x`` / ``drop x``, ``view x`` / ``back``, page turns), or None when it has none.

    Example:
        >>> inverse_command("go north", ["go south", "look"])
        'go south'
        >>> inverse_command("take red key", ["drop red key"]), inverse_command("gather wood", ["look"])
        ('drop red key', None)
    """
    if command is None or command == "":
        return None
    if not isinstance(command, str):  # (was an AttributeError from partition)
        raise TypeError(f"Expect `command` to be a command (a str) or None, got {brief(command)}")
    verb, _, rest = command.partition(" ")
    if verb == "go" and rest in _OPPOSITE:
        undo = f"go {_OPPOSITE[rest]}"
    elif verb in _INVERSE_VERBS and rest:
        undo = f"{_INVERSE_VERBS[verb]} {rest}"
    elif verb == "view":
        undo = "back"
    else:
        undo = _INVERSE_COMMANDS.get(command, "")
    return undo if undo in admissible else None


def noticed_error(info: Mapping[str, Any], commanded: str | None) -> str | None:
    """``"slip"`` or ``"setback"`` when the turn just played brought an error a player notices:
    an injected slip or setback event, or a command executed in place of ``commanded``
    (the agent's own command on that turn; None on a forced turn). Else None.

    Example:
        >>> noticed_error({"executed_action": "go west"}, "go east")
        'slip'
        >>> noticed_error({"injected_error": {"kind": "setback", "applied": True}}, None)
        'setback'
        >>> noticed_error({"executed_action": "go east"}, "go east") is None
        True
    """
    if not isinstance(info, Mapping):  # (every control asks first: one check for them all)
        raise TypeError(f"Expect `info` to be the env's info, a mapping, got {brief(info)}")
    event = info.get("injected_error")
    if isinstance(event, Mapping) and event.get("applied", True):
        kind = event.get("kind")
        if kind in ("slip", "setback"):
            return str(kind)
    executed = info.get(EXECUTED_KEY)
    if commanded is not None and executed is not None and executed != commanded:
        return "slip"
    return None


def _random(rng: np.random.Generator, admissible: Sequence[str]) -> str:
    return admissible[int(rng.integers(len(admissible)))] if admissible else LOOK


class _Memory:
    """What a control remembers of its episode: each state it was in and the command the
    env executed there (its own, a slip's substitute, or one a probe forced)."""

    def __init__(self) -> None:
        self.history: list[tuple[str, str]] = []
        self.commanded: str | None = None  # its own command on the last turn (None: forced)
        self._pending: str | None = None  # the observation it answered last

    def heard(self, observation: str, info: Mapping[str, Any], executed: str) -> None:
        """A forced turn: ``executed`` was played for the agent in ``observation``."""
        self._close(info)
        self.history.append((state_text(observation), executed))
        self.commanded = None

    def acted(self, observation: str, command: str) -> None:
        self._pending, self.commanded = observation, command

    def update(self, info: Mapping[str, Any]) -> None:
        """Close the turn it answered last with what was executed (read on its next call)."""
        self._close(info)

    def _close(self, info: Mapping[str, Any]) -> None:
        if self._pending is not None:
            executed = info.get(EXECUTED_KEY, self.commanded)
            self.history.append((state_text(self._pending), str(executed)))
            self._pending = None


class UndoReflex:
    """A random walker with an undo reflex: its only skill is returning to where it was.

    After a slip it plays the inverse of the slipped command (when the game has
    one); after a setback it looks for the state it is now in among the states
    of its history and replays the commands executed from there (a probe's
    forced prefix, in a probe), which brings it back to where the setback
    struck. Otherwise it picks uniformly among the admissible commands. It has
    no goal: without errors it is `RandomAgent`, and its Pass@(K,T) is
    random's. Its recovery-specific skill is near 0 (what it gains by returning
    is the head start a random walk gets from a state one error closer), though
    it "recovers" (reaches its pre-error distance) almost always.

    Example:
        >>> agent = UndoReflex()
        >>> agent.reset(seed=0)
        >>> agent.act("You slip east.", {"executed_action": "go east",
        ...           "injected_error": {"kind": "slip", "applied": True},
        ...           "admissible_actions": ["go west", "go north"]})
        'go west'
    """

    needs_oracle = False
    budget_aware = False

    def __init__(self) -> None:
        self._rng = np.random.default_rng(0)
        self._memory = _Memory()
        self._queue: list[str] = []

    @property
    def name(self) -> str:
        return "undo-reflex"

    def reset(self, seed: int) -> None:
        # (checked: True was seed 1, None a draw from the OS, so no run could be replayed)
        self._rng = np.random.default_rng(check_seed(seed))
        self._memory = _Memory()
        self._queue = []

    def observe(self, observation: str, info: Mapping[str, Any], executed: str) -> None:
        self._memory.heard(observation, info, executed)

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        here = state_text(observation)  # (checked now: a non-str failed on the next turn)
        memory = self._memory
        error = noticed_error(info, memory.commanded)
        memory.update(info)
        admissible = admissible_commands(info)
        if error == "slip":
            undo = inverse_command(info.get(EXECUTED_KEY), admissible)
            self._queue = [undo] if undo else []
        elif error == "setback":
            self._queue = self._retrace(here)
        command = self._queue.pop(0) if self._queue else _random(self._rng, admissible)
        if command not in admissible:  # the replay went off course: give it up
            self._queue, command = [], _random(self._rng, admissible)
        memory.acted(observation, command)
        return command

    def _retrace(self, here: str) -> list[str]:
        history = self._memory.history
        for j in range(len(history) - 1, -1, -1):
            if history[j][0] == here:
                return [command for _, command in history[j:] if command]
        return []

    @classmethod
    def from_spec(cls, arg: str = "") -> UndoReflex:
        return cls()

    def __repr__(self) -> str:
        return "UndoReflex()"


class PingPong(RandomAgent):
    """Always undo the last executed command (a random one when it has no inverse).

    Where every command has an inverse (Maze, KeyQuest's moves) it walks back
    and forth between two states, so it never gets further than one command
    from where it started (Pass@1 = 0 wherever the goal is two or more commands
    away); where most have none (Crafting's gather and craft) it plays mostly at
    random, and wins (Pass@(1,100) 0.51 [0.46, 0.57] on Crafting-Easy:
    ``evaluate("turnbudget/Crafting-Easy-v0", PingPong(), ks=[1], ts=[100], tasks=100, n=8)``).
    It undoes every slip
    at once. Its single-step skill
    is below chance where commands have inverses (in a probe it undoes the last
    optimal command; where most have none, Crafting's and Shop's, it answers at
    random, about chance), and its
    recovery-specific skill is 0: undoing the error leaves it oscillating.

    Example:
        >>> agent = PingPong()
        >>> agent.reset(seed=0)
        >>> agent.act("...", {"executed_action": "go north", "admissible_actions": ["go south"]})
        'go south'
    """

    @property
    def name(self) -> str:
        return "ping-pong"

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        admissible = admissible_commands(info)
        undo = inverse_command(info.get(EXECUTED_KEY), admissible)
        return undo or super().act(observation, info)  # RandomAgent's draw

    @classmethod
    def from_spec(cls, arg: str = "") -> PingPong:
        return cls()

    def __repr__(self) -> str:
        return "PingPong()"


class LookOracle(OracleAgent):
    """The oracle, with one harmless ``look`` (a valid command that changes nothing).

    ``when="first"``: ``look`` on the episode's first turn (before anything was
    executed), then the oracle. ``when="last"``: the oracle, and ``look`` on its
    last turn (``turns_left == 1``; this one is ``budget_aware``). Both win
    wherever the oracle wins with a turn to spare (T > d*), and every
    state-changing command they give is optimal: single-step skill 1, with their
    looks counted apart as no-ops, not as errors.

    Example:
        >>> agent = LookOracle("first")
        >>> agent.reset(seed=0)
        >>> agent.act("...", {"admissible_actions": ["go east", "look"], "oracle_actions": ["go east"]})
        'look'
    """

    def __init__(self, when: str = "first", epsilon: float = 0.0):
        if when not in ("first", "last"):
            raise ValueError(f"Expect `when` to be 'first' or 'last', got {when!r}")
        super().__init__(epsilon)
        self.when = when
        self.budget_aware = when == "last"

    @property
    def name(self) -> str:
        return f"look-{self.when}" + (f"-eps{exact_number(self.epsilon)}" if self.epsilon else "")

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        admissible_commands(info)  # (checked before a look, as OracleAgent's act checks it)
        if self.when == "first" and EXECUTED_KEY not in info:
            return LOOK
        if self.when == "last" and info.get("turns_left") == 1:
            return LOOK
        return super().act(observation, info)

    def __repr__(self) -> str:
        return f"LookOracle(when={self.when!r}, epsilon={exact_number(self.epsilon)})"


class RecoveryControl(OracleAgent):
    """An ε-oracle whose ε changes for ``turns`` turns after each error it notices.

    ``RecoveryControl(0.5, 0.0)`` (*recovery-positive*) plays ε = 0.5 on track
    and the oracle for 3 turns after an error: its single-step skill is that of
    ε = 0.5, and it does better after an error than from an on-track state as
    far from the goal (recovery-specific skill > 0). ``RecoveryControl(0.0,
    0.8)`` (*recovery-negative*) is the oracle on track and ε = 0.8 for 3 turns
    after an error: single-step skill 1, recovery-specific skill < 0. Errors are
    those a player notices (`noticed_error`), never the oracle's distance.

    Args:
        on_track: ε when no error is recent.
        after_error: ε on the ``turns`` turns that follow each error.
        turns: how long the change lasts (the turn that shows the error counts).

    Example:
        >>> agent = RecoveryControl(on_track=1.0, after_error=0.0)
        >>> agent.reset(seed=0)
        >>> agent.act("...", {"admissible_actions": ["go east", "go west"], "oracle_actions": ["go west"],
        ...                   "injected_error": {"kind": "slip", "applied": True}})
        'go west'
    """

    def __init__(self, on_track: float, after_error: float, turns: int = 3):
        super().__init__(on_track)
        self.on_track = self.epsilon
        self.after_error = check_probability(after_error, "after_error")
        self.turns = check_positive_int(turns, "turns")
        self._left = 0
        self._commanded: str | None = None

    @property
    def name(self) -> str:
        preset = {(0.5, 0.0, 3): "recovery-positive", (0.0, 0.8, 3): "recovery-negative"}
        key = (self.on_track, self.after_error, self.turns)
        return (
            preset.get(key)
            or f"recovery-eps{exact_number(self.on_track)}-{exact_number(self.after_error)}x{self.turns}"
        )

    def reset(self, seed: int) -> None:
        super().reset(seed)
        self._left, self._commanded = 0, None

    def observe(self, observation: str, info: Mapping[str, Any], executed: str) -> None:
        self._commanded = None  # a forced turn: nothing of its own to compare with

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        if noticed_error(info, self._commanded):
            self._left = self.turns
        self.epsilon = self.after_error if self._left > 0 else self.on_track
        self._left = max(0, self._left - 1)
        self._commanded = super().act(observation, info)
        return self._commanded

    def __repr__(self) -> str:
        return (
            f"RecoveryControl(on_track={exact_number(self.on_track)}, "
            f"after_error={exact_number(self.after_error)}, "
            f"turns={self.turns})"
        )


class OwnErrorRecovery(RandomAgent):
    """Random on track; the oracle for ``turns`` turns after each error of its own: a command
    it gave, executed as given, that was not among the optimal commands and changed the
    state. Injected errors and forced turns start nothing.

    Its gain under errors is all recovery, and recovery from its own errors: Pass@(K,T) far
    above the random agent's, while the probes' recovery-specific skill, which measures the
    response to an error the agent is told of, reads about 0 (its own errors are repaired in
    the matched control too: see the probes guide).

    Example:
        >>> agent = OwnErrorRecovery()
        >>> agent.reset(seed=0)
        >>> info = {"admissible_actions": ["go east", "go west"], "oracle_actions": ["go west"]}
        >>> first = agent.act("You are in A.", info)
        >>> wrong = first != "go west"
        >>> agent.act("You are in B.", {**info, "executed_action": first}) == "go west" or not wrong
        True
    """

    needs_oracle = True
    name = "own-error-recovery"

    def __init__(self, turns: int = 3):
        super().__init__()
        self.turns = check_positive_int(turns, "turns")
        self._left = 0
        self._last: tuple[str, list[str], str] | None = None  # (command, optimal, state)

    def reset(self, seed: int) -> None:
        super().reset(seed)
        self._left, self._last = 0, None

    def observe(self, observation: str, info: Mapping[str, Any], executed: str) -> None:
        self._last = None  # a forced turn: no command of its own

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        if not isinstance(info, Mapping):
            raise TypeError(f"Expect `info` to be the env's info, a mapping, got {brief(info)}")
        if self._last is not None:
            command, optimal, state = self._last
            event = info.get("injected_error")
            injected = isinstance(event, Mapping) and event.get("applied", True)
            if (
                not injected  # (a setback changed the state too: not its own error)
                and command not in optimal
                and info.get(EXECUTED_KEY) == command
                and state_text(observation) != state
            ):
                self._left = self.turns
        admissible = admissible_commands(info)
        optimal = [c for c in admissible_commands(info, "oracle_actions") if c in admissible]
        pool = optimal if self._left > 0 and optimal else admissible
        command = _random(self._rng, pool)
        self._left = max(0, self._left - 1)
        self._last = (command, optimal, state_text(observation))
        return command

    def __repr__(self) -> str:
        return f"OwnErrorRecovery(turns={self.turns})"


#: The control specs (``control:NAME``) and what builds each.
CONTROLS: dict[str, Any] = {
    "undo": UndoReflex,
    "pingpong": PingPong,
    "look-first": lambda: LookOracle("first"),
    "look-last": lambda: LookOracle("last"),
    "recovery-positive": lambda: RecoveryControl(0.5, 0.0, 3),
    "recovery-negative": lambda: RecoveryControl(0.0, 0.8, 3),
    "own-error-recovery": OwnErrorRecovery,
    "random": RandomAgent,
}


def make_control(arg: str = "") -> Any:
    """The ``control:NAME`` agent spec: NAME is one of `CONTROLS`, or ``oracle:EPS`` (the
    memoryless ε-oracle, `OracleAgent`).

    Example:
        >>> make_control("pingpong"), make_control("oracle:0.3")
        (PingPong(), OracleAgent(epsilon=0.3))
    """
    if not isinstance(arg, str):  # (was an AttributeError from arg.strip())
        raise ValueError(f"Expect `arg` to be a control's NAME (a str), got {brief(arg)}")
    name, _, rest = arg.strip().lower().partition(":")
    if name == "oracle":
        return OracleAgent.from_spec(rest)
    if name not in CONTROLS or rest:
        raise ValueError(
            f"Expect `control:NAME` with NAME one of {[*CONTROLS, 'oracle:EPS']}, got {brief(f'control:{arg}')}"
        )
    return CONTROLS[name]()
