"""Enforce a turn budget T as truncation."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium.core import ActType, ObsType
from gymnasium.envs.registration import EnvSpec
from gymnasium.wrappers import TimeLimit

from turnbudget._checks import check_reset_options, check_turn_budget
from turnbudget.wrappers._common import find_wrapper, spec_with_limit

__all__ = ["TurnBudget", "begin_reset", "check_turn_budget"]


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

    The budget can be overridden for one episode with
    ``reset(options={"turn_budget": T})``; the next reset without that option
    goes back to the default. Every ``info`` carries ``turn_budget``,
    ``turns_used`` and ``turns_left``. It is the only turn limit of a
    registered id: ``gym.make(id, max_episode_steps=N)`` sets its budget to N
    instead of adding Gymnasium's ``TimeLimit`` (see `turnbudget.registration`),
    and ``env.spec.max_episode_steps`` is the default budget (None under a
    `SampleTurnBudget`, whose budget varies per episode).

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
        >>> _, info = env.reset(seed=0, options={"turn_budget": 7})
        >>> info["turn_budget"]
        7
    """

    def __init__(self, env: gym.Env[ObsType, ActType], turn_budget: int):
        gym.utils.RecordConstructorArgs.__init__(self, turn_budget=turn_budget)
        turn_budget = check_turn_budget(turn_budget)
        if isinstance(env, TimeLimit) and env._max_episode_steps == turn_budget:
            # ``gym.make(env.spec)`` puts back the limit our spec's max_episode_steps
            # names, right under this wrapper: the same limit, enforced once, here.
            env = env.env
        gym.Wrapper.__init__(self, env)
        self.default_turn_budget = turn_budget
        self.turn_budget = self.default_turn_budget
        self.turns_used = 0
        self._reset_refused = False

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        budget = begin_reset(self, seed, options).get("turn_budget")  # no step until it succeeds
        self.turn_budget = self.default_turn_budget if budget is None else int(budget)
        self.turns_used = 0
        obs, info = self.env.reset(seed=seed, options=options)
        self._reset_refused = False
        return obs, self._add_budget_info(info)

    def step(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._reset_refused:
            raise gym.error.ResetNeeded(
                "The last reset() was refused (see the error it raised): call reset() again"
            )
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.turns_used += 1
        if self.turns_used >= self.turn_budget and not terminated:
            truncated = True
        return obs, reward, terminated, truncated, self._add_budget_info(info)

    def set_default_turn_budget(self, turn_budget: int) -> None:
        """Change the default budget (from the next reset on), as if it had been given at construction."""
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

    def _add_budget_info(self, info: dict[str, Any]) -> dict[str, Any]:
        info["turn_budget"] = self.turn_budget
        info["turns_used"] = self.turns_used
        info["turns_left"] = self.turns_left
        return info
