"""`TextSpace`: Gymnasium's ``Text`` space, refused by shared memory at construction.

Gymnasium's ``AsyncVectorEnv(..., shared_memory=True)`` (its default) reads a
``Text`` observation out of shared memory once, when it is built, and hands
back that stale copy on every later step: strings of padding characters, with
no warning. Every turnbudget env and wrapper uses this subclass, and its
shared-memory constructor (Gymnasium dispatches on the space type) raises, so
such a vector env fails when it is built, with a message that names the fix.
"""

from __future__ import annotations

import multiprocessing
from types import ModuleType
from typing import Any

from gymnasium import spaces
from gymnasium.error import CustomSpaceError
from gymnasium.vector.utils import create_shared_memory

__all__ = ["SHARED_MEMORY_MESSAGE", "TextSpace"]

SHARED_MEMORY_MESSAGE = (
    "turnbudget's Text observations cannot go through shared memory: Gymnasium's "
    "AsyncVectorEnv would return a stale copy of them. "
    "Build it with gym.vector.AsyncVectorEnv(env_fns, shared_memory=False) "
    '(or gym.make_vec(..., vectorization_mode="async", vector_kwargs={"shared_memory": False})).'
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


@create_shared_memory.register(TextSpace)
def _refuse_shared_memory(space: TextSpace, n: int = 1, ctx: ModuleType = multiprocessing) -> Any:
    raise CustomSpaceError(SHARED_MEMORY_MESSAGE)
