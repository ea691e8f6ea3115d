"""Enforce a turn budget T as truncation."""

from __future__ import annotations

import copy
from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium import spaces
from gymnasium.core import ActType, ObsType
from gymnasium.envs.registration import EnvSpec
from gymnasium.wrappers import TimeLimit

from turnbudget._checks import brief, check_reset_options, check_turn_budget
from turnbudget.envs.core import GAME_OVER_TEXT, INFO_ADMISSIBLE_ACTIONS, INFO_VALID_ACTION
from turnbudget.wrappers._common import find_wrapper, record_args, spec_with_limit

__all__ = ["RESET_REFUSED", "TurnBudget", "begin_reset", "check_turn_budget"]

#: What a step after a refused reset raises (``ResetNeeded``), from any wrapper that checks.
RESET_REFUSED = "The last reset() was refused (see the error it raised): call reset() again"


def begin_reset(env: gym.Env, seed: Any, options: Any) -> dict[str, Any]:
    """What a stack wrapper's ``reset`` does first: end the episode, then check the arguments.

    From here until a reset gets through the stack's `TurnBudget` (inside
    ``env``, or ``env`` itself), its ``step`` raises ``ResetNeeded``: a reset
    refused for its arguments, by any wrapper, leaves no episode running.
    Returns ``options`` checked, as a new dict (`check_reset_options`).

    Example:
        >>> import gymnasium as gym, turnbudget
        >>> env = turnbudget.make("turnbudget/Maze-Easy-v0", errors=0.1)
        >>> _ = env.reset(seed=0)
        >>> env.reset(seed=0, options={"repeat": -1})
        Traceback (most recent call last):
        ...
        ValueError: Expect the `repeat` option to be an int >= 0, got -1
        >>> env.step("look")
        Traceback (most recent call last):
        ...
        gymnasium.error.ResetNeeded: The last reset() was refused (see the error it raised): \
call reset() again
    """
    budget = find_wrapper(env, TurnBudget)
    if budget is not None:
        budget._reset_refused = True
    return check_reset_options(seed, options)


class TurnBudget(gym.Wrapper[ObsType, ActType, ObsType, ActType], gym.utils.RecordConstructorArgs):
    """Truncate an episode once it has used ``turn_budget`` turns.

    A turn is one ``step()`` call, valid or not. When the budget runs out the
    step returns ``truncated=True``, unless the game ended on that very turn,
    in which case it is ``terminated`` and not truncated: an episode won on its
    last budgeted turn is a success. The budget never touches ``terminated``.

    Once the episode has ended (terminated, or truncated here or below), a
    further step is answered here, as a native game answers a step after its
    game is over, and the env under this wrapper is not stepped: the turn
    plays nothing, its reward is 0, ``terminated`` and ``truncated`` stay as
    the episode ended, the observation is the game-over text
    (`turnbudget.envs.core.GAME_OVER_TEXT`; the last observation again where
    the observation space cannot hold it), and ``info`` is the last one
    with ``valid_action=False`` and no admissible command. ``turns_used``
    never passes the budget: the episode's turns are over.

    The budget can be overridden for one episode with
    ``reset(options={"turn_budget": T})``; the next reset without that option
    goes back to the default. Every ``info`` carries ``turn_budget``,
    ``turns_used`` and ``turns_left``. It is the only turn limit of a
    registered id: ``gym.make(id, max_episode_steps=N)`` sets its budget to N
    instead of adding Gymnasium's ``TimeLimit`` (see `turnbudget.registration`),
    and ``env.spec.max_episode_steps`` is the default budget (None under a
    `SampleTurnBudget`, whose budget varies per episode). An env with a turn limit
    below (a `TurnBudget`, as every registered id has, or a ``TimeLimit`` other than
    one of this budget right under it) is refused: that limit would end the episode
    while ``info`` told the agent this one's.

    Args:
        env: The environment to wrap.
        turn_budget: The default number of turns per episode (a positive int, at most
            `MAX_TURN_BUDGET`: 2**31 - 1).

    Example:
        >>> import gymnasium as gym
        >>> import turnbudget
        >>> env = gym.make("turnbudget/Maze-Easy-v0", turn_budget=3)
        >>> _, info = env.reset(seed=0)
        >>> info["turn_budget"], info["turns_left"]
        (3, 3)
        >>> for _ in range(3):
        ...     _, _, terminated, truncated, info = env.step("look")
        >>> terminated, truncated, info["turns_used"]
        (False, True, 3)
        >>> obs, reward, terminated, truncated, info = env.step("look")  # the episode is over
        >>> obs, reward, truncated, info["turns_used"], info["valid_action"]
        ('The game is over. Call reset() to play again.', 0.0, True, 3, False)
        >>> _, info = env.reset(seed=0, options={"turn_budget": 7})
        >>> info["turn_budget"]
        7
    """

    def __init__(self, env: gym.Env[ObsType, ActType], turn_budget: int):
        record_args(self, turn_budget=turn_budget)
        turn_budget = check_turn_budget(turn_budget)
        if isinstance(env, TimeLimit) and env._max_episode_steps == turn_budget:
            # ``gym.make(env.spec)`` puts back the limit our spec's max_episode_steps
            # names, right under this wrapper: the same limit, enforced once, here.
            env = env.env
        # (a second limit below still ended the episode, while info and the revealed budget
        # told the agent this one's: "[20 turns left]" on its last turn)
        inner = find_wrapper(env, TurnBudget)
        if inner is not None:
            raise ValueError(
                "Expect an env without a turn limit under a TurnBudget (the stack's only one), "
                f"got one with a TurnBudget of {inner.default_turn_budget} turns: set its budget "
                "where it is made (gym.make(id, turn_budget=N)) or per episode "
                "(reset(options={'turn_budget': N}))"
            )
        _refuse_wrappers_that_must_see_the_end(env)
        time_limit = find_wrapper(env, TimeLimit)
        if time_limit is not None:
            raise ValueError(
                "Expect an env without a turn limit under a TurnBudget (the stack's only one), "
                f"got one with Gymnasium's TimeLimit of {brief(time_limit._max_episode_steps)} "
                "steps: wrap the env under that TimeLimit (or give the TurnBudget its limit, "
                "right over it)"
            )
        gym.Wrapper.__init__(self, env)
        self.default_turn_budget = turn_budget
        self.turn_budget = self.default_turn_budget
        self.turns_used = 0
        self._reset_refused = False
        # After the episode's end: (terminated, truncated, observation, info) to answer with.
        self._ended: tuple[bool, bool, Any, dict[str, Any]] | None = None
        # (read once: a step after the end checks its action as the game would have)
        self._text_actions = isinstance(self.action_space, spaces.Text)
        # (observation space, whether it holds GAME_OVER_TEXT): a Text space checks every
        # character, which cost more than the rest of an episode's end.
        self._game_over_fits: tuple[Any, bool] = (object(), False)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        budget = begin_reset(self, seed, options).get("turn_budget")  # no step until it succeeds
        self.turn_budget = self.default_turn_budget if budget is None else int(budget)
        self.turns_used = 0
        self._ended = None
        obs, info = self.env.reset(seed=seed, options=options)
        self._reset_refused = False
        return obs, self._add_budget_info(info)

    def step(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._reset_refused:
            raise gym.error.ResetNeeded(RESET_REFUSED)
        if self._ended is not None:
            if self._text_actions and not isinstance(action, str):  # (as before the end)
                raise TypeError(f"Expect the action to be a str, got {type(action).__name__}")
            return self._after_the_end()
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.turns_used += 1
        if self.turns_used >= self.turn_budget and not terminated:
            truncated = True
        info = self._add_budget_info(info)
        if terminated or truncated:
            self._end(obs, terminated, truncated, info)
        return obs, reward, terminated, truncated, info

    def set_default_turn_budget(self, turn_budget: int) -> None:
        """Change this wrapper's default budget (from the next reset on), as if it had been
        given at construction. Wrappers outside it keep the spec they were built with: for a
        stack (``gym.make``'s), spec included, use `turnbudget.wrappers.set_turn_budget`."""
        self.default_turn_budget = check_turn_budget(turn_budget)
        self._saved_kwargs["turn_budget"] = self.default_turn_budget  # what `spec` recreates
        self._cached_spec = None

    @property
    def spec(self) -> EnvSpec | None:
        """The env's spec, with ``max_episode_steps`` = the default budget: what Gymnasium's
        wrappers read (``TimeAwareObservation``). It adds no second limit: ``gym.make(spec)``
        rebuilds this wrapper on the ``TimeLimit`` it adds, which it then drops."""
        return spec_with_limit(self, self.default_turn_budget)

    @property
    def turns_left(self) -> int:
        return max(self.turn_budget - self.turns_used, 0)

    def _end(self, obs: Any, terminated: bool, truncated: bool, info: dict[str, Any]) -> None:
        """Keep what a step after the end answers: copies, taken before the caller (or an outer
        wrapper) sees ``obs`` and ``info``, so nothing done to those changes it."""
        if self._game_over_text_fits():
            obs = GAME_OVER_TEXT
        elif not isinstance(obs, str):
            obs = copy.deepcopy(obs)  # (once per episode, and only outside the text games)
        info = _copied(info)
        info[INFO_VALID_ACTION] = False
        if INFO_ADMISSIBLE_ACTIONS in info:
            info[INFO_ADMISSIBLE_ACTIONS] = []
        self._ended = (bool(terminated), bool(truncated), obs, info)

    def _game_over_text_fits(self) -> bool:
        """Whether the observation space holds `GAME_OVER_TEXT` (checked once per space)."""
        space = self.observation_space
        if self._game_over_fits[0] is not space:
            fits = isinstance(space, spaces.Text) and space.contains(GAME_OVER_TEXT)
            self._game_over_fits = (space, fits)
        return self._game_over_fits[1]

    def _after_the_end(self) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """A step after the episode's end: nothing is played (see the class docstring)."""
        terminated, truncated, obs, info = self._ended
        if not isinstance(obs, str):
            obs = copy.deepcopy(obs)
        return obs, 0.0, terminated, truncated, _copied(info)

    def _add_budget_info(self, info: dict[str, Any]) -> dict[str, Any]:
        info["turn_budget"] = self.turn_budget
        info["turns_used"] = self.turns_used
        left = self.turn_budget - self.turns_used  # (`turns_left` inline: a property and a
        info["turns_left"] = left if left > 0 else 0  # max() cost more than the rest of this)
        return info


def _copied(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` with its own copy of each list, dict and set value (one level: what an info holds)."""
    copied = {}
    for key, value in info.items():  # (a loop: a comprehension builds a function every call)
        copied[key] = value.copy() if isinstance(value, (list, dict, set)) else value
    return copied


def _refuse_wrappers_that_must_see_the_end(env: gym.Env) -> None:
    """A wrapper that must see the episode end the budget makes (its class says why, in
    ``outside_turn_budget``) refused under a `TurnBudget`: there it never saw the truncation,
    and, say, a recorder dropped every episode the budget ended as abandoned, silently."""
    inner: Any = env
    while isinstance(inner, gym.Wrapper):
        why = getattr(type(inner), "outside_turn_budget", None)
        if why:
            name = type(inner).__name__
            raise ValueError(
                f"Expect {name} outside the TurnBudget, not under it: {why}. Wrap the env in "
                f"its TurnBudget first and {name} over it (turnbudget.make(game, turn_budget=N, "
                "...) builds the stack in order over the bare game)"
            )
        inner = inner.env
