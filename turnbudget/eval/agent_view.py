"""What an agent may see of a turn: the info the engine hands it, and the command that ran.

The env's ``info`` is written for RL code and carries everything (the budget
included). The engines (`evaluate` and `probe`) pass agents a filtered copy:
the budget keys only when the agent may see its budget, the oracle's actions
only to agents that declare ``needs_oracle``, and ``info["executed_action"]``
(`EXECUTED_KEY`) after the first turn, as `turnbudget.agents.base` documents.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from turnbudget.agents.base import BUDGET_KEYS, EXECUTED_KEY, ORACLE_KEY

__all__ = ["agent_info", "budget_visible", "executed_action"]


def budget_visible(reveal: Any) -> bool:
    """Whether `turnbudget.make(reveal=...)` shows the budget (a mapping's mode defaults to always)."""
    if isinstance(reveal, Mapping):
        reveal = reveal.get("mode", "always")
    return reveal not in (None, False, "never")


def executed_action(action: str, info: Mapping[str, Any]) -> str:
    """The command the env executed this turn: ``action``, or the substitute of an injected slip.

    Example:
        >>> executed_action("north", {"injected_error": {"applied": True, "replaced_action": "west"}})
        'west'
        >>> executed_action("north", {})
        'north'
    """
    event = info.get("injected_error")
    if event and event.get("applied", True) and event.get("replaced_action") is not None:
        return str(event["replaced_action"])
    return action


def agent_info(
    info: Mapping[str, Any],
    *,
    show_budget: bool,
    oracle: Callable[[], list[str]] | None = None,
    executed: str | None = None,
) -> dict[str, Any]:
    """A copy of ``info`` for the agent (the env's own dict is never changed).

    Args:
        info: The env's info for the observation the agent is about to answer.
        show_budget: Keep the budget keys (revealed budget, or a ``budget_aware`` agent).
        oracle: Called for ``info["oracle_actions"]`` (agents with ``needs_oracle``).
        executed: The command executed on the previous turn (None on the first turn).

    Example:
        >>> agent_info({"turns_left": 3, "won": False}, show_budget=False, executed="look")
        {'won': False, 'executed_action': 'look'}
    """
    view = dict(info) if show_budget else {k: v for k, v in info.items() if k not in BUDGET_KEYS}
    if oracle is not None:
        view[ORACLE_KEY] = list(oracle())
    if executed is not None:
        view[EXECUTED_KEY] = executed
    return view
