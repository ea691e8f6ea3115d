"""Baseline agents: uniform random over admissible actions, and an epsilon-noisy oracle."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from turnbudget.agents.base import ORACLE_KEY

__all__ = ["OracleAgent", "RandomAgent"]

_FALLBACK = "look"


def _choice(rng: np.random.Generator, options: Sequence[str]) -> str:
    return options[int(rng.integers(len(options)))]


class RandomAgent:
    """Pick a uniformly random admissible action each turn.

    Budget-blind and oracle-free; its draws come from a generator seeded by
    ``reset(seed)``, so an episode is reproducible from its seed alone.

    Example:
        >>> agent = RandomAgent()
        >>> agent.reset(seed=3)
        >>> a = agent.act("You are in a hall.", {"admissible_actions": ["north", "south"]})
        >>> agent.reset(seed=3)
        >>> a == agent.act("You are in a hall.", {"admissible_actions": ["north", "south"]})
        True
    """

    needs_oracle = False
    budget_aware = False

    def __init__(self) -> None:
        self._rng = np.random.default_rng(0)

    @property
    def name(self) -> str:
        return "random"

    def reset(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        admissible = list(info.get("admissible_actions") or ())
        return _choice(self._rng, admissible) if admissible else _FALLBACK

    def __repr__(self) -> str:
        return "RandomAgent()"


class OracleAgent:
    """Follow the env's oracle; with probability ``epsilon`` act uniformly at random instead.

    The engine supplies the oracle's actions in ``info["oracle_actions"]``
    (because ``needs_oracle`` is True). When several actions start a shortest
    plan, one is picked at random. ``epsilon=0`` solves every task in its
    optimal number of turns.

    Args:
        epsilon: probability of a uniformly random admissible action, in [0, 1].

    Example:
        >>> agent = OracleAgent(epsilon=0.0)
        >>> agent.reset(seed=0)
        >>> agent.act("...", {"admissible_actions": ["east", "west"], "oracle_actions": ["west"]})
        'west'
    """

    needs_oracle = True
    budget_aware = False

    def __init__(self, epsilon: float = 0.0):
        if (
            isinstance(epsilon, bool)
            or not isinstance(epsilon, (int, float))
            or not 0.0 <= epsilon <= 1.0
        ):
            raise ValueError(f"Expect `epsilon` to be a float in [0, 1], got {epsilon!r}")
        self.epsilon = float(epsilon)
        self._rng = np.random.default_rng(0)

    @property
    def name(self) -> str:
        return f"oracle-eps{self.epsilon:g}"

    def reset(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        if ORACLE_KEY not in info:
            raise KeyError(
                f"OracleAgent needs info[{ORACLE_KEY!r}]; run it through turnbudget.eval.evaluate "
                "or add env.unwrapped.optimal_actions() to info yourself"
            )
        admissible = list(info.get("admissible_actions") or ())
        optimal = list(info[ORACLE_KEY] or ())
        # Draw the same number of variates every turn, so the stream never depends on the state.
        explore = self._rng.random() < self.epsilon
        u = self._rng.random()
        pool = admissible if (explore or not optimal) else optimal
        if not pool:
            return _FALLBACK
        return pool[min(int(u * len(pool)), len(pool) - 1)]

    def __repr__(self) -> str:
        return f"OracleAgent(epsilon={self.epsilon:g})"
