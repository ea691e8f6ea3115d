"""A tiny line-world that follows the env contract, for the wrapper tests.

The agent walks from 0 to ``length``. ``forward`` is the only optimal command,
``back`` and ``wait`` are admissible but not optimal, and ``jump`` (when
``trap=True``) loses the game: a slip must never pick it. Anything else costs
a turn with ``valid_action=False``. `BareLine` is the same game without the
oracle methods. ``on_step`` injects extra behaviour into ``step``.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from turnbudget.wrappers import TurnBudget

__all__ = ["STUB_ID", "BareLine", "LineWorld", "make_line"]

STUB_ID = "turnbudget-test/LineWorld-v0"


class BareLine(gym.Env[str, str]):
    metadata = {"render_modes": []}  # noqa: RUF012

    def __init__(
        self,
        length: int = 6,
        trap: bool = True,
        on_step: Callable[[BareLine, str], None] | None = None,
    ):
        self.length, self.trap, self.on_step = length, trap, on_step
        self.observation_space = spaces.Text(max_length=200, min_length=0, charset=string.printable)
        self.action_space = spaces.Text(max_length=50, min_length=0, charset=string.printable)
        self.pos, self.won, self.lost = 0, False, False

    def admissible(self) -> list[str]:
        if self.won or self.lost:
            return []
        commands = (
            ["forward", "wait"]
            + (["back"] if self.pos > 0 else [])
            + (["jump"] if self.trap else [])
        )
        return sorted(commands)

    def _info(self, **extra: Any) -> dict[str, Any]:
        progress = 1.0 if self.won else self.pos / self.length
        return {"admissible_actions": self.admissible(), "won": self.won, "lost": self.lost,
                "progress": progress, **extra}  # fmt: skip

    def _text(self, feedback: str) -> str:
        return f"{feedback}\n\nYou stand at {self.pos} of {self.length}."

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.pos = int(self.np_random.integers(0, 2))
        self.won = self.lost = False
        return self._text("Walk to the end."), self._info(goal=f"Reach {self.length}.")

    def step(self, action: str):
        if self.on_step is not None:
            self.on_step(self, action)
        if self.won or self.lost:
            return "Over.", 0.0, True, False, self._info(valid_action=False)
        valid = action in self.admissible()
        if not valid:
            feedback = "You can't do that."
        elif action == "forward":
            self.pos += 1
            self.won = self.pos >= self.length
            feedback = "You step forward."
        elif action == "back":
            self.pos -= 1
            feedback = "You step back."
        elif action == "jump":
            self.lost = True
            feedback = "You fall."
        else:
            feedback = "You wait."
        done = self.won or self.lost
        return self._text(feedback), float(self.won), done, False, self._info(valid_action=valid)


class LineWorld(BareLine):
    def optimal_actions(self) -> list[str]:
        return [] if self.won or self.lost else ["forward"]

    def distance_to_goal(self) -> int | None:
        return None if self.lost else (0 if self.won else self.length - self.pos)

    def inject_setback(self, rng: np.random.Generator) -> str:
        if self.won or self.lost:
            return ""
        self.pos = max(0, self.pos - 1 - int(rng.integers(2)))
        return f"A wind blows you back to {self.pos}."


def make_line(turn_budget: int = 10, oracle: bool = True, **kwargs: Any) -> gym.Env:
    """Entry point of `STUB_ID`: the game under a `TurnBudget`, like every registered id."""
    return TurnBudget((LineWorld if oracle else BareLine)(**kwargs), turn_budget=turn_budget)


if STUB_ID not in gym.registry:
    gym.register(STUB_ID, entry_point=make_line, disable_env_checker=True)
