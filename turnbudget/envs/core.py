"""The contract every turnbudget text env follows, written once.

Every single-agent game (native, TextWorld, and the multi-agent games' single
agent cousins) is a `TextEnv`: a ``gymnasium.Env`` whose observation and
action spaces are printable `spaces.Text` (a `TextSpace`, which Gymnasium's
shared-memory ``AsyncVectorEnv`` refuses at construction), whose ``step``
refuses a non-string action with ``TypeError`` (and plays a ``str`` subclass
as the plain ``str`` it holds), raises ``ResetNeeded`` before the first
``reset``, answers a step after the game ended with a spent, invalid turn,
and whose observations never exceed `MAX_OBSERVATION_LENGTH`. Subclasses
implement ``reset`` and ``_play(action)``; the checks above live here only.

Oracle
------
Wrappers that judge or perturb play (`InjectErrors`, `RecordStepOutcomes`,
`ProcessReward`) and the probes ask the unwrapped env three questions, the
`Oracle` Protocol below: ``optimal_actions()``, ``distance_to_goal()`` and
``inject_setback(rng)``; `get_oracle` finds them under any wrappers. A native
game keeps its rules in one engine (`turnbudget.envs.native.base.TextGame`:
``_generate``, ``_admissible``, ``_describe``, ``_apply``, ``_progress`` and
the oracle); the team games keep theirs in a world shared with their
single-agent cousins (`turnbudget.multiagent.worlds`).

Info keys (`INFO_*`) are the ones every env puts in ``info``; wrappers read
them through these constants. `EnvVariant` is how a game family declares its
registered configurations as data; `turnbudget.registration` turns them into
gymnasium ids.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from turnbudget._checks import brief, is_int, is_whole
from turnbudget.envs.text_space import TextSpace

__all__ = [
    "GAME_OVER_TEXT",
    "INFO_ADMISSIBLE_ACTIONS",
    "INFO_GOAL",
    "INFO_LOST",
    "INFO_PROGRESS",
    "INFO_VALID_ACTION",
    "INFO_WON",
    "MAX_ACTION_LENGTH",
    "MAX_OBSERVATION_LENGTH",
    "ORACLE_METHODS",
    "PRINTABLE",
    "RESET_INFO_KEYS",
    "STEP_INFO_KEYS",
    "EnvVariant",
    "Oracle",
    "TextEnv",
    "check_distance",
    "get_oracle",
    "oracle_distance",
    "reset_needed",
]

#: The charset of every observation and action space.
PRINTABLE = string.printable
#: Observations are cut to this many characters, in every family. It is the
#: limit TextWorld games already had (their text is the interpreter's, not
#: ours to bound); native observations never came near the old native limit
#: of 4096 (the longest in 200 seeds x 150 random steps of every native id is
#: 220 characters), so one limit changes no observation of either family.
MAX_OBSERVATION_LENGTH = 8192
#: The action space's length limit (what ``action_space.sample()`` draws).
MAX_ACTION_LENGTH = 256

INFO_ADMISSIBLE_ACTIONS = "admissible_actions"
INFO_WON = "won"
INFO_LOST = "lost"
INFO_PROGRESS = "progress"
INFO_VALID_ACTION = "valid_action"
INFO_GOAL = "goal"
#: Keys present in ``info`` after every ``reset``.
RESET_INFO_KEYS = frozenset(
    {INFO_ADMISSIBLE_ACTIONS, INFO_WON, INFO_LOST, INFO_PROGRESS, INFO_GOAL}
)
#: Keys present in ``info`` after every ``step``.
STEP_INFO_KEYS = frozenset(
    {INFO_ADMISSIBLE_ACTIONS, INFO_WON, INFO_LOST, INFO_PROGRESS, INFO_VALID_ACTION}
)

GAME_OVER_TEXT = "The game is over. Call reset() to play again."


@runtime_checkable
class Oracle(Protocol):
    """What an env offers to wrappers that judge or perturb play (computed lazily)."""

    def optimal_actions(self) -> list[str]:
        """Every action that starts a shortest plan to success from the current state."""
        ...

    def distance_to_goal(self) -> int | None:
        """The length of that plan (0 once won, None when unsolvable)."""
        ...

    def inject_setback(self, rng: np.random.Generator) -> str:
        """Apply a recoverable perturbation that keeps the task solvable; return its narration."""
        ...


#: The three oracle methods, in the order errors name them.
ORACLE_METHODS = ("optimal_actions", "distance_to_goal", "inject_setback")


def check_distance(value: Any, game: Any) -> int | None:
    """``game.distance_to_goal()``'s answer ``value`` as an int, None where no win is reachable;
    a ValueError naming the game for anything else. A custom game's ``inf`` for "no win" (the
    documented answer is None) was an OverflowError deep in whoever read it, a NaN a NaN
    reward, and "3" was taken as 3.

    Example:
        >>> check_distance(3, object()), check_distance(4.0, object()), check_distance(None, 0)
        (3, 4, None)
        >>> check_distance(float("inf"), object())
        Traceback (most recent call last):
        ...
        ValueError: Expect object.distance_to_goal() to return an int >= 0, or None where no \
win is reachable, got inf
    """
    if value is None:
        return None
    if (is_int(value) or is_whole(value)) and value >= 0:
        return int(value)
    raise ValueError(
        f"Expect {type(game).__name__}.distance_to_goal() to return an int >= 0, or None where "
        f"no win is reachable, got {brief(value)}"
    )


def oracle_distance(game: Any) -> int | None:
    """``game.distance_to_goal()``, checked (`check_distance`): an int >= 0, or None."""
    value = game.distance_to_goal()
    # (a native game's int passes at once; anything else is checked)
    return value if type(value) is int and value >= 0 else check_distance(value, game)


def get_oracle(
    env: gym.Env,
    methods: tuple[str, ...] = ORACLE_METHODS,
    *,
    needed_by: str = "This",
    hint: str = "",
) -> Oracle:
    """The `Oracle` under ``env``'s wrappers, or a ``TypeError`` naming what is missing.

    Args:
        env: An env, wrapped or not.
        methods: The oracle methods the caller uses (a wrapper that only reads
            distances asks for ``("distance_to_goal",)``).
        needed_by: Who needs them, for the message (a wrapper's name).
        hint: Appended to the message (e.g. what to use instead).

    Example:
        >>> import gymnasium as gym, turnbudget
        >>> oracle = get_oracle(gym.make("turnbudget/Maze-Easy-v0"))
        >>> isinstance(oracle, Oracle)
        True
        >>> get_oracle(gym.make("CartPole-v1"), needed_by="InjectErrors")
        Traceback (most recent call last):
        ...
        TypeError: InjectErrors needs the oracle method(s) `optimal_actions()`, \
`distance_to_goal()`, `inject_setback()` on the unwrapped env, which CartPoleEnv does not have
    """
    game = env.unwrapped
    missing = [m for m in methods if not callable(getattr(game, m, None))]
    if missing:
        names = ", ".join(f"`{m}()`" for m in missing)
        raise TypeError(
            f"{needed_by} needs the oracle method(s) {names} on the unwrapped env, "
            f"which {type(game).__name__} does not have{hint}"
        )
    return game


@dataclass(frozen=True)
class EnvVariant:
    """One registered configuration of a game family, as data.

    Attributes:
        name: The id without the namespace, version last (``"Maze-Easy-v0"``).
        entry_point: The game class as ``"module:Class"``.
        turn_budget: The default budget of the id; None lets the game choose
            (its ``default_turn_budget`` attribute), for ids whose size is a kwarg.
        kwargs: Keyword arguments of the game class.
    """

    name: str
    entry_point: str
    turn_budget: int | None
    kwargs: Mapping[str, Any] = field(default_factory=dict)


def reset_needed(method: str) -> gym.error.ResetNeeded:
    """The error of a question about the world (the oracle, the admissible commands) asked
    before the first reset: there is no world yet, and an answer would be made up."""
    return gym.error.ResetNeeded(f"Call reset() before {method}()")


class TextEnv(gym.Env[str, str]):
    """The shared base of every text env: spaces, step checks, game over, observations.

    Subclasses implement ``reset`` (setting ``self._in_episode = True`` once a
    world is loaded and ``self._episode_over`` whenever the game ends),
    ``_play(action)`` (one turn of a running game, ``action`` already known to
    be a ``str``) and ``_info(valid_action)``.
    """

    #: ``"ansi"`` returns the screen's text, ``"human"`` prints it, ``"rgb_array"``
    #: draws it (`turnbudget.envs.render`, the ``plot`` extra).
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human", "rgb_array"],
        "render_fps": 2,
    }

    #: True when no command can end this game other than by winning it or leave its task
    #: unsolvable (a game that cannot be lost and has no irreversible step: Maze, KeyQuest,
    #: Crafting).
    #: With an exact oracle a non-optimal command then never ends it either, so
    #: `InjectErrors` skips its look-ahead check of a slip (a copy of the game): the check
    #: could only ever pass. Declare it only when the game's rules guarantee it.
    commands_keep_solvable: ClassVar[bool] = False

    #: True when the oracle follows one plan rather than searching every command: its
    #: ``distance_to_goal()`` is the plan's length, and a command off the plan may win sooner
    #: than the plan says (TextWorld). `check_text_env` then checks the plan is followed,
    #: not that the distance is Bellman-consistent against every admissible command.
    oracle_is_plan: ClassVar[bool] = False

    def __init__(self, render_mode: str | None = None):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"Expect `render_mode` to be one of {self.metadata['render_modes']}, got {brief(render_mode)}"
            )
        if render_mode is not None:  # (else `gym.Env`'s class default: one attribute fewer)
            self.render_mode = render_mode
        # gymnasium's per-instance state, set here rather than at the first reset and by
        # `gym.make`: every attribute exists from construction on (see
        # `turnbudget.envs.native.base.MAX_FAST_ATTRIBUTES`).
        self.spec = None
        self._np_random = None
        self._np_random_seed = None
        # TextSpace: a shared-memory AsyncVectorEnv is refused when it is built.
        self.observation_space = TextSpace(
            max_length=MAX_OBSERVATION_LENGTH, min_length=0, charset=PRINTABLE
        )
        self.action_space = TextSpace(max_length=MAX_ACTION_LENGTH, min_length=0, charset=PRINTABLE)
        self._in_episode = False
        self._episode_over = False
        # The screen: the last observation, and the command that led to it (None on a reset).
        self._last_observation = ""
        self._screen_command: str | None = None

    def _check_setback(self, rng: Any) -> None:
        """Refuse a setback before the first reset, or one drawn from anything but a
        ``np.random.Generator`` (whether a game draws depends on its state: a bad ``rng``
        would fail in some states only, with an error from inside)."""
        if not self._in_episode:
            raise reset_needed("inject_setback")
        if not isinstance(rng, np.random.Generator):
            raise TypeError(
                "Expect `rng` to be a np.random.Generator (np.random.default_rng(seed)), "
                f"got {brief(rng)}"
            )

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if type(action) is not str:
            if not isinstance(action, str):
                raise TypeError(f"Expect the action to be a str, got {type(action).__name__}")
            # A subclass's own __eq__, __hash__ or methods must not judge the command.
            action = str.__str__(action)
        if not self._in_episode:
            raise gym.error.ResetNeeded("Call reset() before step()")
        if self._episode_over:
            turn = self._observe(GAME_OVER_TEXT), 0.0, True, False, self._info(valid_action=False)
        else:
            turn = self._play(action)
        self._screen_command = action  # (`_observe` left None: the screen is this turn's)
        return turn

    def render(self) -> str | np.ndarray | None:
        """The screen: its text (``"ansi"``), printed (``"human"``: each screen is also
        printed as the game shows it, at every reset and step) or an image (``"rgb_array"``)."""
        if self.render_mode == "ansi":
            return self._last_observation
        if self.render_mode == "human":
            print(self._last_observation)  # what render_mode="human" asks for
        if self.render_mode == "rgb_array":
            from turnbudget.envs.render import text_frame  # Pillow: the plot extra

            return text_frame(self._last_observation, self._screen_command)
        return None

    def _observe(self, text: str) -> str:
        # A screen observed outside a step (a reset, a setback's narration) shows no command;
        # `step` names its command once its turn is observed.
        self._screen_command = None
        self._last_observation = text[:MAX_OBSERVATION_LENGTH]
        if self.render_mode == "human":  # (Gymnasium's "human": shown as it is played)
            print(self._last_observation)
        return self._last_observation

    def _play(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        raise NotImplementedError

    def _info(self, valid_action: bool | None = None) -> dict[str, Any]:
        raise NotImplementedError
