"""The house policy of a competitive team game, as an agent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from turnbudget._checks import brief

__all__ = ["HOUSE_KEY", "HouseAgent"]

#: The info key under which the team evaluator hands agents with ``needs_house`` the
#: game's fixed opponent policy (``house_action(role)`` of the raw env).
HOUSE_KEY = "house_action"


class HouseAgent:
    """Play the game's fixed opponent policy (the one the per-agent oracle best-responds to).

    The evaluator adds ``info["house_action"]`` before each call, because
    ``needs_house`` is True; the agent never sees the env.

    Example:
        >>> agent = HouseAgent()
        >>> agent.reset(seed=0)
        >>> agent.act("...", {"house_action": "go north"})
        'go north'
    """

    needs_oracle = False
    needs_house = True
    budget_aware = False

    @property
    def name(self) -> str:
        return "house"

    @classmethod
    def from_spec(cls, arg: str = "") -> HouseAgent:
        """The ``house`` agent spec: takes no argument."""
        if arg:
            raise ValueError(f"Expect `house` without an argument, got {brief(f'house:{arg}')}")
        return cls()

    def reset(self, seed: int) -> None:
        """Deterministic: nothing to seed."""

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        if HOUSE_KEY not in info:
            raise KeyError(
                f"HouseAgent needs info[{HOUSE_KEY!r}]; run it through "
                "turnbudget.eval.evaluate_team, or add env.unwrapped.house_action(agent) yourself"
            )
        return str(info[HOUSE_KEY])

    def __repr__(self) -> str:
        return "HouseAgent()"
