"""Classic-RL adapter: a Discrete action space over the admissible commands, with an action mask."""

from __future__ import annotations

import logging
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.core import ObsType

from turnbudget._checks import brief, check_positive_int, is_int, is_listlike, is_whole
from turnbudget.wrappers._common import find_wrapper, record_args, require_single

__all__ = ["MAX_ACTIONS", "CommandSlots", "DiscreteActions", "check_max_actions"]

logger = logging.getLogger(__name__)

#: Largest ``max_actions``: far more commands than a text game admits at once (a native
#: game tens, a TextWorld game a few hundred), and a mask every step can afford.
MAX_ACTIONS = 4096

# Sent for a masked-out index: not an admissible command, so it costs a turn
# with valid_action=False, as any nonsense command does.
_INVALID_COMMAND = ""


def _as_index(action: Any) -> int | None:
    """``action`` as an int if it is one whole number (see `DiscreteActions.action`), else None."""
    if isinstance(action, np.timedelta64):  # (a NumPy integer subclass, but a duration)
        return None
    if type(action) is int or isinstance(action, np.integer):  # what learners send: at once
        return int(action)
    if isinstance(action, np.ndarray):
        if action.size != 1 or action.dtype.kind not in "iuf":
            return None
        action = action.reshape(()).item()
    return int(action) if is_int(action) or is_whole(action) else None


def check_max_actions(value: Any) -> int:
    """Return ``max_actions`` as an int from 1 to `MAX_ACTIONS`, else raise ``ValueError``."""
    value = check_positive_int(value, "max_actions")
    if value > MAX_ACTIONS:
        raise ValueError(f"Expect `max_actions` to be at most {MAX_ACTIONS}, got {brief(value)}")
    return value


class CommandSlots:
    """The admissible commands in ``max_actions`` index slots, in sorted order, and their mask.

    The index logic of `DiscreteActions`, for one agent: the team form
    (`turnbudget.multiagent.wrappers.TeamDiscreteActions`) keeps one per agent.
    ``mask`` is read-only (one array per number of open slots): copy it to change it.

    Args:
        max_actions: N, the number of slots (a positive int, at most `MAX_ACTIONS`).

    Example:
        >>> slots = CommandSlots(3)
        >>> slots.update(["look", "go north"])
        >>> slots.commands, slots.mask.tolist(), slots.command(1), slots.command(2)
        (['go north', 'look'], [True, True, False], 'look', '')
    """

    def __init__(self, max_actions: int):
        self.max_actions = check_max_actions(max_actions)
        self.commands: list[str] = []
        # The mask with the first k slots open, for each k: shared and read-only, as every
        # reader copies it (`action_masks`, the info's): a step makes no new array.
        self._masks = [np.arange(self.max_actions) < k for k in range(self.max_actions + 1)]
        for mask in self._masks:
            mask.flags.writeable = False
        self.mask = self._masks[0]
        self._warned = False

    def update(self, admissible: Any) -> None:
        """Fill the slots with ``admissible`` (sorted; those past ``max_actions`` dropped, logged once).

        ``admissible`` that is no list of str is a TypeError naming it (a str of commands
        filled the slots with its characters).
        """
        if type(admissible) is not list and not is_listlike(admissible):
            raise TypeError(
                "Expect info['admissible_actions'] to be a list of commands (str), got "
                f"{brief(admissible)}"
            )
        try:  # (the cheapest check that every command is a str: join's, in C, every step)
            "".join(admissible)
        except TypeError:
            bad = next(command for command in admissible if not isinstance(command, str))
            raise TypeError(
                f"Expect info['admissible_actions'] to hold commands (str) only, got {brief(bad)}"
            ) from None
        commands = sorted(admissible)
        if len(commands) > self.max_actions:
            if not self._warned:
                logger.warning("%d admissible commands, more than max_actions=%d: the rest are "
                               "dropped", len(commands), self.max_actions)  # fmt: skip
                self._warned = True
            del commands[self.max_actions :]  # (a new list: no copy of it)
        self.commands = commands
        # No command once the episode has ended: slot 0 stays open, so the mask is still a
        # distribution to sample from (Gymnasium's next-step autoreset and TorchRL draw an
        # action from the final observation, then ignore it); it is never played.
        self.mask = self._masks[len(commands) or 1]

    def command(self, action: Any) -> str:
        """The command for index ``action`` (a non-command when it is masked).

        Any whole number is an index: a Python or NumPy int of any width, a
        whole NumPy or Python float (RL libraries send ``np.float32(1.0)``), or
        a one-element array of those. ``bool``, strings and fractions are refused.
        """
        if type(action) is int and 0 <= action < len(self.commands):  # what learners send
            return self.commands[action]
        index = _as_index(action)
        if index is None or not 0 <= index < self.max_actions:
            raise ValueError(
                f"Expect an action in Discrete({self.max_actions}): a whole number in "
                f"[0, {self.max_actions}) (int, NumPy int or whole float), got {brief(action)}"
            )
        return self.commands[index] if index < len(self.commands) else _INVALID_COMMAND


class DiscreteActions(gym.ActionWrapper[ObsType, int, str], gym.utils.RecordConstructorArgs):
    """Expose ``Discrete(max_actions)`` over the admissible commands, in sorted order.

    Index i plays the i-th admissible command in alphabetical order (a stable
    order: it does not depend on how the env lists them). Indices past the
    admissible commands are masked; playing one anyway sends a non-command,
    which costs a turn with ``valid_action=False``. Commands past
    ``max_actions`` are dropped (logged once). ``info["action_mask"]`` (a bool
    array) and ``info["action_commands"]`` (the command per index) come with
    every reset and step, and ``action_masks()`` returns the mask, as
    sb3-contrib's ``MaskablePPO`` expects.

    Args:
        env: An env with ``Text`` actions and ``info["admissible_actions"]``.
        max_actions: N, the size of the ``Discrete`` space (a positive int, at most
            `MAX_ACTIONS`: 4096).

    Example:
        >>> import gymnasium as gym
        >>> import turnbudget
        >>> env = DiscreteActions(gym.make("turnbudget/Maze-Easy-v0"), max_actions=5)
        >>> _, info = env.reset(seed=0)
        >>> info["action_commands"] == sorted(info["admissible_actions"])
        True
        >>> bool(env.action_masks()[0]), int(env.action_masks().sum()) == len(info["action_commands"])
        (True, True)
        >>> _, _, _, _, info = env.step(0)
        >>> info["valid_action"]
        True
    """

    #: Why it must sit outside a `TurnBudget` (which refuses it underneath).
    outside_turn_budget = "its action mask must follow the episode's end (no command is left)"

    def __init__(self, env: gym.Env[ObsType, str], max_actions: int = 16):
        record_args(self, max_actions=max_actions)
        gym.ActionWrapper.__init__(self, env)
        self._slots = CommandSlots(max_actions)
        if not isinstance(env.action_space, spaces.Text):
            raise ValueError(f"DiscreteActions needs a Text action space, got {env.action_space}")
        from turnbudget.wrappers.numeric_info import NumericInfo  # (it imports this module)

        if find_wrapper(env, NumericInfo) is not None:  # it drops info["admissible_actions"]
            raise ValueError(
                "DiscreteActions reads info['admissible_actions'], which NumericInfo drops: "
                "put NumericInfo outside DiscreteActions (turnbudget.make(..., "
                "discrete_actions=N, info='numeric') stacks them in order)"
            )
        require_single(env, DiscreteActions)
        self.max_actions = self._slots.max_actions
        self.action_space = spaces.Discrete(self.max_actions)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        return obs, self._update(info)

    def step(self, action: int) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(self.action(action))
        return obs, reward, terminated, truncated, self._update(info)

    def action(self, action: Any) -> str:
        """The command for index ``action`` (see `CommandSlots.command`)."""
        return self._slots.command(action)

    def action_masks(self) -> np.ndarray:
        """Which indices play an admissible command now (for ``MaskablePPO``)."""
        return self._slots.mask.copy()

    def _update(self, info: dict[str, Any]) -> dict[str, Any]:
        if "admissible_actions" not in info:
            raise ValueError(
                "DiscreteActions needs info['admissible_actions'] from the env it wraps, "
                f"which gave only {list(info)}"
            )
        self._slots.update(info["admissible_actions"])
        for key in ("action_mask", "action_commands"):
            assert key not in info, f"info[{key!r}] set twice"
        info["action_mask"] = self._slots.mask.copy()
        info["action_commands"] = list(self._slots.commands)
        return info
