"""Recoverable errors (slip, transient, setback) on a seed-and-turn schedule."""

from __future__ import annotations

import bisect
import copy
import itertools
import logging
import pickle
from collections.abc import Callable, Mapping, Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from turnbudget._checks import (
    brief,
    check_bool,
    check_positive_int,
    check_probability,
    check_reset_options,
    json_int_keys,
    normalize_weights,
)
from turnbudget.envs.core import oracle_distance
from turnbudget.envs.native.base import sanitize_for_display
from turnbudget.records import InjectedError
from turnbudget.wrappers._common import (
    EpisodeSeeder,
    find_wrapper,
    record_args,
    require_oracle,
    require_single,
    seed_sequence,
    seeded_rng,
)
from turnbudget.wrappers.discrete_actions import DiscreteActions
from turnbudget.wrappers.record_step_outcomes import RecordStepOutcomes
from turnbudget.wrappers.turn_budget import RESET_REFUSED, begin_reset

__all__ = [
    "ERROR_KINDS",
    "ErrorSchedule",
    "InjectErrors",
    "narrate",
    "repeat_seed",
    "valid_as_seen",
]

logger = logging.getLogger(__name__)

ERROR_KINDS = ("slip", "transient", "setback")
# Sent to the env in place of the agent's command for a transient error: the
# contract makes any non-admissible command cost a turn and change nothing.
_NO_OP_COMMAND = ""
_DRAW_BLOCK = 64
# What copying a game that cannot be copied raises (an open file, a lock, a process), and
# only that: an interruption raised while copying (an evaluation's episode timeout, which
# this layer cannot name) must end the episode, not be read as "cannot copy".
_UNCOPYABLE = (
    TypeError,
    AttributeError,
    RecursionError,
    NotImplementedError,
    copy.Error,
    pickle.PickleError,
)
# What a step before the first reset raises (``ResetNeeded``): Gymnasium's own words.
_NEVER_RESET = "Cannot call env.step() before calling env.reset()"


class ErrorSchedule:
    """Whether and which error fires at each turn of an episode: a pure function of
    (episode seed, turn), the same for every agent (common random numbers).

    Turn t reads the t-th pair of uniforms of the episode's stream (drawn in
    blocks, so a turn costs no generator construction); a fixed ``schedule``
    takes precedence at its turns. `InjectErrors` keeps one; a team wrapper
    keeps one per agent.

    Args:
        rate: Probability in [0, 1] that an error fires at a turn.
        kinds: The kinds drawn when the rate fires.
        weights: Relative weights of ``kinds`` (uniform if None).
        schedule: Fixed errors ``{turn: kind}`` (or ``[(turn, kind), ...]``).
    """

    def __init__(
        self,
        rate: float = 0.0,
        kinds: Sequence[str] = ERROR_KINDS,
        weights: Sequence[float] | None = None,
        schedule: Mapping[int, str] | Sequence[tuple[int, str]] | None = None,
    ):
        self.rate = check_probability(rate, "rate")
        self.kinds = _check_kinds(kinds, "kinds")
        if not self.kinds:
            raise ValueError("Expect `kinds` to name at least one error kind, got none")
        self.probabilities = _check_weights(weights, len(self.kinds))
        self.schedule = _check_schedule(schedule)
        self._cumulative = list(itertools.accumulate(self.probabilities))
        self.start(0)

    @property
    def used_kinds(self) -> set[str]:
        """The kinds that can fire (those of the schedule, and of the rate when it is positive)."""
        return set(self.schedule.values()) | (set(self.kinds) if self.rate > 0 else set())

    def start(self, episode_seed: int) -> None:
        """Start an episode's stream."""
        self._episode_seed = int(episode_seed)
        self._stream = seeded_rng(self._episode_seed, 0)
        self._planned: list[str | None] = []  # the kind (or None) per turn, decided in blocks

    def planned(self, turn: int) -> str | None:
        """The error kind scheduled at ``turn`` (1-based) of this episode, or None."""
        if type(turn) is not int or turn < 1:  # (turn 0 read the list from its end)
            turn = check_positive_int(turn, "turn")
        planned = self._planned
        while len(planned) < turn:
            self._plan_block()
        return planned[turn - 1]

    def _plan_block(self) -> None:
        """Decide the next `_DRAW_BLOCK` turns from their (fires, pick) pairs of uniforms: once
        per block, so a turn costs one list lookup."""
        first = len(self._planned) + 1
        rate, cumulative, kinds = self.rate, self._cumulative, self.kinds
        last = len(kinds) - 1
        draws = iter(self._stream.random(2 * _DRAW_BLOCK).tolist())  # (a turn's pair: 2 in a row)
        block = [
            kinds[min(bisect.bisect_right(cumulative, pick), last)] if fires < rate else None
            for fires, pick in zip(draws, draws)
        ]
        for turn, kind in self.schedule.items():  # (fixed errors take precedence)
            if first <= turn < first + _DRAW_BLOCK:
                block[turn - first] = kind
        self._planned.extend(block)

    def turn_rng(self, turn: int) -> np.random.Generator:
        """The generator an error at ``turn`` uses: seeded by (episode seed, turn)."""
        if type(turn) is not int or turn < 1:
            turn = check_positive_int(turn, "turn")
        return seeded_rng(self._episode_seed, turn)


def repeat_seed(episode_seed: int, options: Mapping[str, Any] | None) -> int:
    """The error seed of attempt r (the ``repeat`` reset option) at an episode seed.

    Without the option the episode seed is returned unchanged; with it the
    result is a pure function of (episode seed, r), so repeated attempts at
    one task draw independent errors. Shared by `InjectErrors` and the team wrapper.

    Example:
        >>> repeat_seed(7, None), repeat_seed(7, {"repeat": 0}) == repeat_seed(7, {"repeat": 1})
        (7, False)
    """
    repeat = check_reset_options(None, options).get("repeat")
    if repeat is None:
        return episode_seed
    state = seed_sequence(episode_seed, int(repeat)).generate_state(2)
    return int(state[0]) << 32 | int(state[1])


class InjectErrors(gym.Wrapper[str, str, str, str], gym.utils.RecordConstructorArgs):
    """Inject recoverable errors at a per-turn rate or on a fixed schedule.

    An error fires at the *start* of a turn, before the agent's command:

    - ``slip``: the command is replaced by a different admissible command that
      is not optimal and keeps the task solvable (checked on a copy of the
      game); it does not fire (``applied=False``) when no such command exists.
    - ``transient``: the command fails with a message; the state is unchanged
      and the turn is spent (the env receives an empty command, which the
      contract treats as an invalid turn).
    - ``setback``: the env's ``inject_setback(rng)`` perturbs the state, then
      the agent's command runs in the perturbed state; checked on a copy of the
      game as a slip is, it does not fire (``applied=False``) where that
      command, run blind, would lose the game (a Sokoban box pushed into a
      corner from where the setback left the player).

    Whether and which error fires at turn t depends only on the episode's
    seed and t, never on the agent's actions (common random numbers): each
    turn draws from its own generator seeded by (episode seed, t). Episode
    seeds follow the reset seed (a reset without a seed continues the stream)
    and the ``repeat`` reset option: ``reset(seed=s, options={"repeat": r})``
    draws the errors of attempt r at task s, a pure function of (s, r, t), so
    repeated attempts at one task are independent while two agents on the
    same (s, r) face the same draws. What is shared is *whether* an error
    fires and *its kind*; its concrete effect (a slip's substitute, where a
    setback sends you) is drawn from the same per-turn generator but applied
    to the state each agent is in, so it can differ between agents.
    Errors fire only during an episode: a step before the first ``reset()``
    (or after a refused one) raises ``ResetNeeded`` before the game is asked
    anything, and a step after the episode's end goes to the env untouched.
    The narration is prepended to the observation; ``info["valid_action"]``
    tells whether the *agent's* command was admissible in the state the agent
    saw (`valid_as_seen`: a command a setback made impossible is not the
    agent's fault); ``info["injected_error"]``
    is an `InjectedError` on a turn where an error was scheduled and absent on
    other turns (read it with ``info.get``; a key that is sometimes None would
    break Gymnasium's vector-env info batching).

    Args:
        env: An env with ``Text`` observations and the oracle
            (``distance_to_goal()``, plus ``optimal_actions()`` for slips and
            ``inject_setback(rng)`` for setbacks).
        rate: Probability in [0, 1] that an error fires at a turn.
        kinds: The kinds drawn when the rate fires.
        weights: Relative weights of ``kinds`` (uniform if None).
        schedule: Fixed errors ``{turn: kind}`` (or ``[(turn, kind), ...]``);
            they take precedence over the rate at their turns.
        transient_message: What the agent reads on a transient error.
        check_slips: Play each slip candidate, and each setback with the agent's
            command after it, on a deep copy of the game first (the solvability
            guarantee). This copy is most of a slip's cost; it
            is skipped for a game whose rules make it always pass (one that
            declares ``commands_keep_solvable``: Maze, KeyQuest, Crafting). Pass False
            only for another game without dead ends or losses, or make the
            copy cheap with a ``__deepcopy__`` on the game.

    Example:
        >>> import gymnasium as gym
        >>> import turnbudget
        >>> env = InjectErrors(gym.make("turnbudget/Maze-Easy-v0"), schedule={2: "setback"})
        >>> _, info = env.reset(seed=0)
        >>> _, _, _, _, info = env.step("look")
        >>> "injected_error" in info
        False
        >>> _, _, _, _, info = env.step("look")
        >>> info["injected_error"]["kind"], info["injected_error"]["turn"]
        ('setback', 2)
        >>> info["injected_error"]["distance_after"] >= info["injected_error"]["distance_before"]
        True
    """

    def __init__(
        self,
        env: gym.Env[str, str],
        rate: float = 0.0,
        kinds: Sequence[str] = ERROR_KINDS,
        weights: Sequence[float] | None = None,
        schedule: Mapping[int, str] | Sequence[tuple[int, str]] | None = None,
        transient_message: str = "Your attempt fails: something went wrong. Nothing changes.",
        check_slips: bool = True,
    ):
        record_args(
            self, rate=rate, kinds=kinds, weights=weights, schedule=schedule,
            transient_message=transient_message, check_slips=check_slips,
        )  # fmt: skip
        gym.Wrapper.__init__(self, env)
        self.errors = ErrorSchedule(rate, kinds, weights, schedule)
        self.rate, self.kinds = self.errors.rate, self.errors.kinds
        self.probabilities, self.schedule = self.errors.probabilities, self.errors.schedule
        if not isinstance(transient_message, str):
            raise ValueError(
                f"Expect `transient_message` to be a str, got {brief(transient_message)}"
            )
        self.transient_message = transient_message
        self.check_slips = check_bool(check_slips, "check_slips")
        # A game whose commands all keep it solvable needs no look-ahead (`TextEnv`).
        self._look_ahead = self.check_slips and (
            getattr(env.unwrapped, "commands_keep_solvable", False) is not True
        )
        used = self.errors.used_kinds
        methods = ("distance_to_goal",)
        if "slip" in used:
            methods += ("optimal_actions",)
        if "setback" in used:
            methods += ("inject_setback",)
        require_oracle(env, methods, "InjectErrors", " (drop the kinds that need it)")
        if used & {"slip", "transient"} and not isinstance(env.action_space, spaces.Text):
            raise ValueError(
                f"InjectErrors' slip and transient errors need a Text action space, got {env.action_space}"
            )
        if not isinstance(env.observation_space, spaces.Text):  # (errors narrate into it)
            raise ValueError(
                f"InjectErrors needs a Text observation space, got {env.observation_space}"
            )
        require_single(env, InjectErrors)
        from turnbudget.wrappers.numeric_info import NumericInfo  # (it imports this module)

        if "slip" in used and find_wrapper(env, NumericInfo) is not None:  # (none ever fired)
            raise ValueError(
                "InjectErrors' slips draw from info['admissible_actions'], which NumericInfo "
                "drops: put NumericInfo outside InjectErrors (turnbudget.make(..., errors=..., "
                "info='numeric') stacks them in order)"
            )
        if find_wrapper(env, RecordStepOutcomes) is not None:
            # Recorded below the errors, a slip's substitute was the agent's command and a
            # setback the agent's error: an oracle agent had self-inflicted errors.
            raise ValueError(
                "InjectErrors must sit inside RecordStepOutcomes, whose records tell an injected "
                "error from the agent's command: wrap the env in InjectErrors first "
                "(turnbudget.make(..., errors=..., record=...) stacks them in order)"
            )
        self._seeder = EpisodeSeeder("InjectErrors")
        self._turn = 0
        self._admissible: list[str] = []  # a copy of the last info's list: the caller's may change
        self._reset_needed: str | None = _NEVER_RESET  # (None: an episode was started)
        self._over = False  # the episode has ended: no more errors
        self._warned_no_copy = False
        # Read once: the action space is the inner env's, and the check runs every step.
        self._text_actions = isinstance(self.action_space, spaces.Text)
        # (an index for DiscreteActions below: the command it plays is what a setback's turn
        # judges, in the state the agent saw; the index itself was never admissible)
        self._discrete = None if self._text_actions else find_wrapper(env, DiscreteActions)

    def planned_error(self, turn: int) -> str | None:
        """The error kind scheduled at ``turn`` (1-based) of this episode, or None (see `ErrorSchedule`)."""
        return self.errors.planned(turn)

    def turn_rng(self, turn: int) -> np.random.Generator:
        """The generator an error at ``turn`` uses (slip choice, ``inject_setback``): seeded by (episode seed, turn)."""
        return self.errors.turn_rng(turn)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        self._reset_needed = RESET_REFUSED  # until the env's reset gets through
        begin_reset(self.env, seed, options)  # (checks `repeat`: no draw on a refused reset)
        with self._seeder.undone_on_failure():  # (nor on one the env below refuses)
            episode_seed = repeat_seed(self._seeder.next_seed(seed), options)
            self.errors.start(episode_seed)
            self._turn = 0
            obs, info = self.env.reset(seed=seed, options=options)
        self._admissible = list(info.get("admissible_actions", ()))
        self._reset_needed, self._over = None, False
        return obs, info

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        # Checked before the turn counts or an error touches the game, as the env would.
        if self._reset_needed is not None:
            raise gym.error.ResetNeeded(self._reset_needed)
        if type(action) is not str:
            if isinstance(action, str):  # a subclass: its own __eq__ / __hash__ judge nothing
                action = str.__str__(action)
            elif self._text_actions:
                raise TypeError(f"Expect the action to be a str, got {type(action).__name__}")
        if self._over:  # (the env answers a step after the end; no error fires then)
            return self.env.step(action)
        self._turn = turn = self._turn + 1
        try:
            obs, reward, terminated, truncated, info = self._turn_step(action, turn)
        except BaseException:  # (a refused action, an index out of range: no turn spent, so the
            self._turn = turn - 1  # schedule's next error still falls on the agent's next turn)
            raise
        # A copy: the caller may change the list it gets, and the next error reads this one.
        self._admissible = list(info.get("admissible_actions", ()))
        if terminated or truncated:
            self._over = True
        return obs, reward, terminated, truncated, info

    def _turn_step(self, action: Any, turn: int) -> tuple[Any, SupportsFloat, bool, bool, dict]:
        """Turn ``turn``'s step: the env's, or the error planned for it with its event in
        ``info["injected_error"]``."""
        planned = self.errors._planned  # (the turns decided so far: most turns read one here)
        kind = planned[turn - 1] if turn <= len(planned) else self.errors.planned(turn)
        if kind is None:  # (most turns: the env's step, and the list the agent will see)
            return self.env.step(action)
        # The listed command the agent's spelling plays in the state it saw (before a
        # setback moves it): "n" or "GO NORTH" is as valid as "go north" on any turn.
        canonical = getattr(self.env.unwrapped, "canonical_command", None)
        if self._discrete is not None and not isinstance(action, str):
            command = self._discrete.action(action)
            seen = command if command in self._admissible else None
        else:
            seen = canonical(action) if canonical is not None else None
        (obs, reward, terminated, truncated, info), event = getattr(self, f"_{kind}")(action, seen)
        # Absent on quiet turns: vector envs cannot batch a key that is sometimes None.
        assert "injected_error" not in info, "info['injected_error'] set twice"
        info["injected_error"] = event
        return obs, reward, terminated, truncated, info

    # -- the three kinds -------------------------------------------------------------

    # A kind that draws builds its turn's generator itself: building one costs more than most
    # steps, and a transient error draws nothing.

    def _transient(self, action: str, seen: str | None) -> tuple[tuple, InjectedError]:
        distance = oracle_distance(self.env.unwrapped)
        obs, reward, terminated, truncated, info = self.env.step(_NO_OP_COMMAND)
        if info.get("valid_action", False):
            raise RuntimeError(
                f"{type(self.env.unwrapped).__name__} accepted the empty command as valid; "
                "InjectErrors' transient errors need it to be an invalid (no-op) turn"
            )
        info["valid_action"] = valid_as_seen(action, self._admissible, seen=seen)
        _, _, rest = obs.partition("\n\n")  # drop the env's own invalid-command feedback
        obs = self._narrate(self.transient_message, rest)
        event = self._event("transient", distance, distance, self.transient_message)
        return (obs, reward, terminated, truncated, info), event

    def _setback(self, action: str, seen: str | None) -> tuple[tuple, InjectedError]:
        game = self.env.unwrapped
        before = oracle_distance(game)
        if self._look_ahead and not self._keeps_solvable(
            lambda trial: (
                trial.unwrapped.inject_setback(self.turn_rng(self._turn)),
                trial.step(action),  # (through the wrappers below: an index, say)
            )[1],
            may_end=True,
            stack=True,
        ):
            # (the agent's command, run blind after it, would lose the game: a Sokoban box
            # pushed into a corner from where the setback left the player; an error injected
            # is one to recover from, so this one does not fire)
            event = self._event("setback", before, before, "", applied=False)
            return self.env.step(action), event
        narration = str(game.inject_setback(self.turn_rng(self._turn)))
        event = self._event("setback", before, oracle_distance(game), narration)
        obs, reward, terminated, truncated, info = self.env.step(action)
        info["valid_action"] = valid_as_seen(
            action, self._admissible, info.get("valid_action"), seen
        )
        return (self._narrate(narration, obs), reward, terminated, truncated, info), event

    def _slip(self, action: str, seen: str | None) -> tuple[tuple, InjectedError]:
        game = self.env.unwrapped
        before = oracle_distance(game)
        # (and the command it plays respelt: "LOOK" for "look" replaced it by itself)
        excluded = {action, seen, *game.optimal_actions()}
        candidates = [c for c in self._admissible if c not in excluded]
        replacement = None
        order = self.turn_rng(self._turn).permutation(len(candidates)) if candidates else ()
        for index in order:
            if not self._look_ahead or self._keeps_solvable(
                lambda trial, command=candidates[index]: trial.step(command)
            ):
                replacement = candidates[index]
                break
        if replacement is None:
            event = self._event("slip", before, before, "", applied=False)
            return self.env.step(action), event
        obs, reward, terminated, truncated, info = self.env.step(replacement)
        info["valid_action"] = valid_as_seen(action, self._admissible, seen=seen)
        # (the agent's line cleaned as the game echoes it: its line breaks made game text)
        narration = (
            f'Your hand slips: instead of "{sanitize_for_display(action)}", you {replacement}.'
        )
        event = self._event("slip", before, oracle_distance(game), narration)
        event["replaced_action"] = replacement
        return (self._narrate(narration, obs), reward, terminated, truncated, info), event

    # -- helpers -----------------------------------------------------------------------

    def _keeps_solvable(
        self, play: Callable[[Any], tuple], may_end: bool = False, stack: bool = False
    ) -> bool:
        """``play`` on a copy of the game, or of the ``stack`` below this wrapper (what turns
        the agent's action into the game's command), returning the last step's result: the
        task must stay solvable, and not end unless ``may_end`` (then by a win only)."""
        try:
            trial = copy.deepcopy(self.env if stack else self.env.unwrapped)
        except _UNCOPYABLE:  # e.g. a game that holds an external process
            if not self._warned_no_copy:
                logger.warning(
                    "cannot copy %s: slips and setbacks are not checked for solvability",
                    type(self.env.unwrapped).__name__,
                )
                self._warned_no_copy = True
            return True
        game = trial.unwrapped
        if getattr(game, "render_mode", None) == "human":
            game.render_mode = None  # (a trial: its screens were printed as if played)
        try:
            _, _, terminated, _, _ = play(trial)
            return (may_end or not terminated) and oracle_distance(game) is not None
        finally:
            trial.close()  # a copy may hold an interpreter of its own (TextWorld)

    def _event(
        self, kind: str, before: int | None, after: int | None, narration: str, applied: bool = True
    ) -> InjectedError:
        # (as ints: a game's oracle may answer NumPy ints, which the records could not write)
        return InjectedError(
            kind=kind, turn=self._turn, applied=applied,
            distance_before=None if before is None else int(before),
            distance_after=None if after is None else int(after),
            narration=narration, replaced_action=None,
        )  # fmt: skip

    def _narrate(self, narration: str, obs: str) -> str:
        return narrate(narration, obs, self.observation_space)


def valid_as_seen(
    action: Any,
    admissible: Sequence[str],
    ran_valid: bool | None = None,
    seen: str | None = None,
) -> bool:
    """Whether the agent's command was admissible in the state the agent saw.

    An injected error changes what runs or where: a slip or a transient error
    keeps the command from running, and a setback runs it in a state the agent
    never saw. The command is judged on what the agent was shown: it is valid
    when it is in ``admissible`` (the list the agent saw), when it is another
    spelling of one there (``seen``: the listed command it plays in that state, a
    game's ``canonical_command``, as ``go north`` for ``n``, or the command an index
    plays through `DiscreteActions`), or when it ran and the env accepted it
    (``ran_valid``). Shared by `InjectErrors` and the team wrapper.

    Example:
        >>> valid_as_seen("go north", ["go north", "look"], ran_valid=False)  # a wall, after a setback
        True
        >>> valid_as_seen("n", ["go north", "look"]), valid_as_seen("n", ["go north"], seen="go north")
        (False, True)
    """
    return (isinstance(action, str) and action in admissible) or seen is not None or bool(ran_valid)


def narrate(narration: str, obs: str, space: Any) -> str:
    """``narration`` before ``obs``, cut and cleaned to fit ``space`` when it is a ``Text``
    (the narration may echo an agent's raw command)."""
    text = f"{narration}\n\n{obs}" if obs else narration
    if not isinstance(space, spaces.Text):
        return text
    charset = space.character_set
    text = text[: space.max_length]
    if charset.issuperset(text):  # (the usual case, checked in C)
        return text
    return "".join(ch if ch in charset else "?" for ch in text)


def _check_kinds(kinds: Any, name: str) -> tuple[str, ...]:
    if isinstance(kinds, str) or not isinstance(kinds, Sequence):
        raise ValueError(
            f"Expect `{name}` to be a sequence of error kinds from {ERROR_KINDS}, got {brief(kinds)}"
        )
    for kind in kinds:
        if kind not in ERROR_KINDS:
            raise ValueError(
                f"Unknown error kind {brief(kind)} in `{name}`: expect one of {ERROR_KINDS}"
            )
    if len(set(kinds)) != len(kinds):
        raise ValueError(f"Expect `{name}` without repeats, got {brief(kinds)}")
    return tuple(kinds)


def _check_weights(weights: Sequence[float] | None, n: int) -> tuple[float, ...]:
    return normalize_weights(weights, n, per="kind")


def _check_schedule(schedule: Any) -> dict[int, str]:
    if schedule is None:
        return {}
    # (a JSON spec's keys are strings: turn "2" is 2)
    items = json_int_keys(schedule).items() if isinstance(schedule, Mapping) else schedule
    try:
        pairs = [(turn, kind) for turn, kind in items]
    except (TypeError, ValueError):
        raise ValueError(
            f"Expect `schedule` to be {{turn: kind}} or [(turn, kind), ...], got {brief(schedule)}"
        ) from None
    result: dict[int, str] = {}
    for turn, kind in pairs:
        check_positive_int(turn, "schedule", subject="every turn in `schedule`")
        if kind not in ERROR_KINDS:
            raise ValueError(
                f"Unknown error kind {brief(kind)} in `schedule`: expect one of {ERROR_KINDS}"
            )
        if int(turn) in result:
            raise ValueError(f"Turn {turn} appears twice in `schedule`")
        result[int(turn)] = kind
    return result
