"""Classic-RL adapter: an ``info`` of fixed-shape NumPy values that every vector env and buffer stacks."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.core import ActType, ObsType

from turnbudget.envs.core import INFO_LOST, INFO_PROGRESS, INFO_VALID_ACTION, INFO_WON
from turnbudget.wrappers._common import find_wrapper, record_args, require_single
from turnbudget.wrappers.discrete_actions import DiscreteActions
from turnbudget.wrappers.inject_errors import ERROR_KINDS, InjectErrors
from turnbudget.wrappers.process_reward import ProcessReward
from turnbudget.wrappers.reveal_budget import RevealBudget
from turnbudget.wrappers.sample_turn_budget import SampleTurnBudget
from turnbudget.wrappers.turn_budget import TurnBudget

__all__ = ["NumericInfo", "numeric_fields", "to_numeric"]

#: A key of a numeric info: its space and the function that makes its value.
Field = tuple[spaces.Space, Callable[[Any], np.ndarray]]

_INT_MAX = np.iinfo(np.int64).max
_FLAG = spaces.Box(0, 1, shape=(), dtype=np.bool_)
_COUNT = spaces.Box(0, _INT_MAX, shape=(), dtype=np.int64)
_REAL = spaces.Box(-np.inf, np.inf, shape=(), dtype=np.float32)


def _flag(value: Any) -> np.ndarray:
    return np.asarray(bool(value), dtype=np.bool_)


def _count(value: Any) -> np.ndarray:
    return np.asarray(0 if value is None else int(value), dtype=np.int64)


def _real(value: Any) -> np.ndarray:
    return np.asarray(float(value), dtype=np.float32)


def _mask(value: Any, dtype: type = np.bool_) -> np.ndarray:
    return np.array(value, dtype=dtype)


def _error_kind(event: Any) -> np.ndarray:
    if not isinstance(event, dict) or not event.get("applied", True):
        return np.asarray(-1, dtype=np.int8)
    return np.asarray(ERROR_KINDS.index(event["kind"]), dtype=np.int8)


def numeric_fields(
    *,
    sampled: bool = False,
    errors: bool = False,
    shaping: bool = False,
    reveal: bool = False,
    max_actions: int | None = None,
    mask_dtype: type = np.bool_,
) -> dict[str, Field]:
    """The keys of a numeric ``info`` (see `NumericInfo`), for the wrappers present in a stack.

    Shared by `NumericInfo` and its team form
    (`turnbudget.multiagent.wrappers.TeamNumericInfo`): the same keys, dtypes
    and shapes for one agent or each agent of a team.

    Args:
        sampled: A BudgetMix draws T (``sampled_turn_budget``).
        errors: Errors are injected (``injected_error_kind``).
        shaping: A process reward is added (``env_reward``, ``shaping``).
        reveal: The budget's visibility is a setting (``budget_visible``).
        max_actions: The size of the discrete action space (``action_mask``), or None.
        mask_dtype: The mask's dtype: bool (sb3-contrib's) or int8 (PettingZoo's).
    """
    fields: dict[str, Field] = {
        INFO_WON: (_FLAG, _flag),
        INFO_LOST: (_FLAG, _flag),
        INFO_PROGRESS: (spaces.Box(0.0, 1.0, shape=(), dtype=np.float32), _real),
        INFO_VALID_ACTION: (_FLAG, _flag),
        "turn_budget": (_COUNT, _count),
        "turns_used": (_COUNT, _count),
        "turns_left": (_COUNT, _count),
    }
    if sampled:
        fields["sampled_turn_budget"] = (_COUNT, _count)
    if errors:
        kinds = spaces.Box(-1, len(ERROR_KINDS) - 1, shape=(), dtype=np.int8)
        fields["injected_error_kind"] = (kinds, _error_kind)
    if shaping:
        fields["env_reward"] = (_REAL, _real)
        fields["shaping"] = (_REAL, _real)
    if reveal:
        fields["budget_visible"] = (_FLAG, _flag)
    if max_actions is not None:
        mask = spaces.Box(0, 1, shape=(max_actions,), dtype=mask_dtype)
        fields["action_mask"] = (mask, functools.partial(_mask, dtype=mask_dtype))  # (picklable)
    return fields


def to_numeric(fields: dict[str, Field], info: dict[str, Any], sampled: Any) -> dict[str, Any]:
    """``info`` reduced to ``fields`` (`numeric_fields`); ``sampled``: the episode's drawn T or None."""
    reward = info.get("process_reward") or {}  # absent on reset: no reward yet
    values = {
        **info,
        # Carried over from reset, so the key is on every step (None: the caller chose T).
        "sampled_turn_budget": sampled,
        "env_reward": reward.get("env_reward", 0.0),
        "shaping": reward.get("shaping", 0.0),
        "injected_error_kind": info.get("injected_error"),
    }
    return {key: convert(values.get(key)) for key, (_, convert) in fields.items()}


class NumericInfo(gym.Wrapper[ObsType, ActType, ObsType, ActType], gym.utils.RecordConstructorArgs):
    """Reduce ``info`` to fixed-shape NumPy values, with the same keys on every reset and step.

    Classic-RL libraries stack ``info`` across sub-envs (Gymnasium's vector
    envs, TorchRL, Tianshou's replay buffer): a list of strings, a dict or a
    plain ``bool`` breaks them. This wrapper keeps, for the wrappers present
    in the stack, exactly the keys of `info_space` (a ``spaces.Dict``; every
    value is a 0-d or 1-d array with that key's dtype):

    - ``won``, ``lost``, ``valid_action`` (bool; ``valid_action`` is False on
      reset, where no command was played), ``progress`` (float32);
    - ``turn_budget``, ``turns_used``, ``turns_left`` (int64), from `TurnBudget`;
    - ``sampled_turn_budget`` (int64, 0 when the caller set the budget), from
      `SampleTurnBudget`, on every step of the episode;
    - ``injected_error_kind`` (int8: the index in ``ERROR_KINDS`` of an error
      applied this turn, -1 otherwise), from `InjectErrors`;
    - ``env_reward`` and ``shaping`` (float32), from `ProcessReward`;
    - ``budget_visible`` (bool), from `RevealBudget`;
    - ``action_mask`` (bool, one per action), from `DiscreteActions`.

    Text keys (``admissible_actions``, ``goal``, ``action_commands``,
    ``text_observation``) and anything else are dropped: use the text stack
    (``info="text"`` in `turnbudget.make`) to read them. Put it outermost.

    Args:
        env: A stack with a `TurnBudget` (what `turnbudget.make` builds).

    Example:
        >>> import turnbudget
        >>> env = turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=4, text_features=32)
        >>> _, info = env.reset(seed=0)
        >>> sorted(info) == sorted(env.info_space.spaces), env.info_space.contains(info)
        (True, True)
        >>> info["won"].dtype, info["turns_left"].dtype, info["action_mask"].shape
        (dtype('bool'), dtype('int64'), (4,))
    """

    def __init__(self, env: gym.Env[ObsType, ActType]):
        record_args(self)
        gym.Wrapper.__init__(self, env)
        require_single(env, NumericInfo)
        if find_wrapper(env, TurnBudget) is None:
            raise ValueError("NumericInfo needs a TurnBudget inside the env it wraps")
        actions = find_wrapper(env, DiscreteActions)
        fields = numeric_fields(
            sampled=find_wrapper(env, SampleTurnBudget) is not None,
            errors=find_wrapper(env, InjectErrors) is not None,
            shaping=find_wrapper(env, ProcessReward) is not None,
            reveal=find_wrapper(env, RevealBudget) is not None,
            max_actions=None if actions is None else actions.max_actions,
        )
        self._fields = fields
        #: What every ``info`` holds: one space per key.
        self.info_space = spaces.Dict({key: space for key, (space, _) in fields.items()})
        self._sampled: Any = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self._sampled = info.get("sampled_turn_budget")
        return obs, self._numeric(info)

    def step(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, self._numeric(info)

    def _numeric(self, info: dict[str, Any]) -> dict[str, Any]:
        return to_numeric(self._fields, info, self._sampled)
