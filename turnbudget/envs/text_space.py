"""`TextSpace`: Gymnasium's ``Text`` space, refused by shared memory at construction.

Gymnasium's ``AsyncVectorEnv(..., shared_memory=True)`` (its default) reads a
``Text`` observation out of shared memory once, when it is built, and hands
back that stale copy on every later step: strings of padding characters, with
no warning. Every turnbudget env and wrapper uses this subclass, and its
shared-memory constructor (Gymnasium dispatches on the space type) raises, so
such a vector env fails when it is built, with a message that names the fix.

Classic-RL libraries that need numeric spaces fail on a ``Text`` space with
errors of their own that name no fix (stable-baselines3: ``TypeError:
'NoneType' object is not iterable``). When one of `NUMERIC_ONLY` reads the
space's ``shape``, it is told which options make the spaces numeric
(`NUMERIC_MESSAGE`); everyone else reads Gymnasium's ``None``.
"""

from __future__ import annotations

import multiprocessing
import sys
from types import ModuleType
from typing import Any

from gymnasium import spaces
from gymnasium.error import CustomSpaceError
from gymnasium.vector.utils import create_shared_memory

__all__ = ["NUMERIC_MESSAGE", "NUMERIC_ONLY", "SHARED_MEMORY_MESSAGE", "TextSpace"]

SHARED_MEMORY_MESSAGE = (
    "turnbudget's Text observations cannot go through shared memory: Gymnasium's "
    "AsyncVectorEnv would return a stale copy of them. "
    "Build it with gym.vector.AsyncVectorEnv(env_fns, shared_memory=False) "
    '(or gym.make_vec(..., vectorization_mode="async", vector_kwargs={"shared_memory": False})).'
)


#: Packages that need numeric spaces and crash on a ``Text`` one without naming the fix.
NUMERIC_ONLY = ("stable_baselines3.", "sb3_contrib.")

NUMERIC_MESSAGE = (
    "This library needs numeric spaces, and turnbudget's observations and actions are text: "
    "make the env with discrete_actions=N (Discrete actions with info['action_mask']) and "
    "text_features=D (D floats), e.g. gym.make(id, discrete_actions=8, text_features=64) or "
    "turnbudget.make(id, discrete_actions=8, text_features=64); with SB3's make_vec_env, "
    'env_kwargs={"discrete_actions": 8, "text_features": 64}.'
)


class TextSpace(spaces.Text):
    """A ``gymnasium.spaces.Text`` that refuses shared memory (see the module docstring).

    Example:
        >>> import string
        >>> space = TextSpace(max_length=8, charset=string.printable)
        >>> space.contains("go north"), isinstance(space, spaces.Text)
        (True, True)
        >>> create_shared_memory(space, n=2)
        Traceback (most recent call last):
        ...
        gymnasium.error.CustomSpaceError: turnbudget's Text observations cannot go through shared memory: ...
    """

    @property
    def shape(self) -> tuple[int, ...] | None:
        """None, as Gymnasium's; a `NUMERIC_ONLY` library reading it gets `NUMERIC_MESSAGE`."""
        if sys._getframe(1).f_globals.get("__name__", "").startswith(NUMERIC_ONLY):
            raise TypeError(NUMERIC_MESSAGE)
        return self._shape


@create_shared_memory.register(TextSpace)
def _refuse_shared_memory(space: TextSpace, n: int = 1, ctx: ModuleType = multiprocessing) -> Any:
    raise CustomSpaceError(SHARED_MEMORY_MESSAGE)
