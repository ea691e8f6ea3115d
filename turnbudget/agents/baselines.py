"""Baseline agents: uniform random over admissible actions, and an epsilon-noisy oracle."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from turnbudget._checks import brief, check_probability, check_seed
from turnbudget.agents.base import ORACLE_KEY, admissible_commands, exact_number

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
        # (checked: True was seed 1, None a draw from the OS, so no run could be replayed)
        self._rng = np.random.default_rng(check_seed(seed))

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        admissible = admissible_commands(info)
        return _choice(self._rng, admissible) if admissible else _FALLBACK

    @classmethod
    def from_spec(cls, arg: str = "") -> RandomAgent:
        """The ``random`` agent spec: takes no argument."""
        if arg:
            raise ValueError(f"Expect `random` without an argument, got {brief(f'random:{arg}')}")
        return cls()

    def __repr__(self) -> str:
        return "RandomAgent()"


class OracleAgent:
    """Follow the env's oracle; with probability ``epsilon`` act uniformly at random instead.

    The engine supplies the oracle's actions in ``info["oracle_actions"]``
    (because ``needs_oracle`` is True). When several actions start a shortest
    plan, one is picked at random. ``epsilon=0`` solves every task in its
    optimal number of turns.

    It is memoryless (its choice never depends on the past, errors included),
    which makes it the ε-oracle *control* of `turnbudget.agents.controls`:
    single-step skill decreasing in ε, recovery-specific skill 0.

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
        self.epsilon = check_probability(epsilon, "epsilon")
        self._rng = np.random.default_rng(0)

    @property
    def name(self) -> str:
        return f"oracle-eps{exact_number(self.epsilon)}"

    def reset(self, seed: int) -> None:
        # (checked: True was seed 1, None a draw from the OS, so no run could be replayed)
        self._rng = np.random.default_rng(check_seed(seed))

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        admissible = admissible_commands(info)  # (checks `info` first)
        if ORACLE_KEY not in info:
            raise KeyError(
                f"OracleAgent needs info[{ORACLE_KEY!r}]; run it through turnbudget.eval.evaluate "
                "or add env.unwrapped.optimal_actions() to info yourself"
            )
        optimal = admissible_commands(info, ORACLE_KEY)  # (a str was played letter by letter)
        # Draw the same number of variates every turn, so the stream never depends on the state.
        explore = self._rng.random() < self.epsilon
        u = self._rng.random()
        pool = admissible if (explore or not optimal) else optimal
        if not pool:
            return _FALLBACK
        return pool[min(int(u * len(pool)), len(pool) - 1)]

    @classmethod
    def from_spec(cls, arg: str = "") -> OracleAgent:
        """The ``oracle[:EPSILON]`` agent spec (``oracle`` alone: epsilon 0)."""
        try:
            epsilon = float(arg) if arg else 0.0
        except ValueError:
            raise ValueError(
                f"Expect `oracle:EPSILON` with a number, got {brief(f'oracle:{arg}')}"
            ) from None
        return cls(epsilon)

    def __repr__(self) -> str:
        return f"OracleAgent(epsilon={exact_number(self.epsilon)})"
