"""Helpers shared by the team wrappers: finding a wrapper in a parallel-env stack."""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

__all__ = ["find_team_wrapper", "require_parallel", "require_single_team"]


def find_team_wrapper(env: Any, cls: type) -> Any | None:
    """The outermost wrapper of type ``cls`` in a parallel-env stack, or None."""
    while True:
        if isinstance(env, cls):
            return env
        if not isinstance(env, BaseParallelWrapper):
            return None
        env = env.env


def require_parallel(env: Any, cls: type) -> None:
    """Raise ``ValueError`` when ``env`` is an AEC env: a team wrapper steps a parallel env
    (over an AEC one its reset failed with "cannot unpack non-iterable NoneType object")."""
    if isinstance(env, AECEnv):
        raise ValueError(
            f"{cls.__name__} wraps a parallel team env, got the AEC env {type(env).__name__}: "
            "wrap the game's parallel_env() and take the AEC form last "
            "(turnbudget.multiagent.make_team(..., aec=True) or checked_aec)"
        )


def require_single_team(env: Any, cls: type) -> None:
    """Raise ``ValueError`` when ``env`` already contains a ``cls`` (its info keys would clash)."""
    if find_team_wrapper(env, cls) is not None:
        raise ValueError(f"{cls.__name__} is already in this stack; wrap an env with it only once")
