"""Gymnasium's passive env checker, made to survive a refused first reset.

``gym.make`` puts ``gymnasium.wrappers.PassiveEnvChecker`` on every env whose
spec does not disable it. That checker marks its first ``reset`` as checked
before calling it, so when that reset raises (a bad ``options=`` value, say)
it keeps no reset data, and every later ``step`` fails inside the checker with
``TypeError: cannot unpack non-iterable NoneType object``: the env is broken
for good. The registered turnbudget ids use this subclass instead (their
specs disable Gymnasium's copy): a first reset or step that raises is checked
again on the next call, and the error the caller sees is the env's own.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium.core import ActType, ObsType
from gymnasium.envs.registration import EnvSpec

__all__ = ["PassiveEnvChecker"]


class PassiveEnvChecker(gym.wrappers.PassiveEnvChecker[ObsType, ActType]):
    """``gymnasium.wrappers.PassiveEnvChecker`` that stays usable when its first reset or step raises."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        first = not self.checked_reset
        try:
            return super().reset(seed=seed, options=options)
        except BaseException:
            if first:  # check the next reset instead of keeping no data from this one
                self.checked_reset = False
            raise

    def step(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        first = not self.checked_step
        try:
            return super().step(action)
        except BaseException:
            if first:
                self.checked_step = False
            raise

    @property
    def spec(self) -> EnvSpec | None:
        # The inner spec as registered (disable_env_checker=True): gym.make(env.spec)
        # must not add Gymnasium's checker on top of this one.
        return self.env.spec
