"""What an agent may see of a turn: the info the engine hands it, and the command that ran.

The env's ``info`` is written for RL code and carries everything (the budget
included). The engines (`evaluate`, `probe` and the team engine) pass agents a
filtered copy: the budget keys only when the agent may see its budget, the
oracle's actions only to agents that declare ``needs_oracle``, and
``info["executed_action"]`` (`EXECUTED_KEY`) after the first turn, as
`turnbudget.agents.base` documents.

The copy is deep: its lists and dicts are the agent's own, fresh on every
call, so an agent that sorts ``info["admissible_actions"]`` in place or edits
``info["injected_error"]`` changes nothing of the run (the error injector's
slip substitutes, the step records) and nothing another call receives.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from turnbudget.agents.base import BUDGET_KEYS, EXECUTED_KEY, ORACLE_KEY

__all__ = ["agent_info", "budget_visible", "executed_action", "private_copy"]

# Values shared as they are: immutable, so no agent can change them through its copy.
_ATOMS = frozenset({str, int, float, bool, type(None), bytes})


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


def private_copy(value: Any) -> Any:
    """A copy of ``value`` that shares nothing mutable with it (what an agent may keep and change).

    The info's own value types (str, numbers, lists of str, nested dicts) are
    copied directly, which costs a few microseconds per turn; anything else
    goes through `copy.deepcopy`. Exact types are checked, so a subclass of
    ``str`` or ``list`` is deep-copied too.

    Example:
        >>> info = {"admissible_actions": ["north", "west"], "injected_error": {"kind": "slip"}}
        >>> mine = private_copy(info)
        >>> mine["admissible_actions"].sort(); mine["injected_error"].clear()
        >>> info
        {'admissible_actions': ['north', 'west'], 'injected_error': {'kind': 'slip'}}
    """
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is list:
        return [v if type(v) in _ATOMS else private_copy(v) for v in value]
    if kind is dict:
        return {k: v if type(v) in _ATOMS else private_copy(v) for k, v in value.items()}
    if kind is tuple:
        return tuple(v if type(v) in _ATOMS else private_copy(v) for v in value)
    return copy.deepcopy(value)


def agent_info(
    info: Mapping[str, Any],
    *,
    show_budget: bool,
    oracle: Callable[[], list[str]] | None = None,
    executed: str | None = None,
) -> dict[str, Any]:
    """A deep copy of ``info`` for the agent (the run's objects are never shared with it).

    Args:
        info: The env's info for the observation the agent is about to answer.
        show_budget: Keep the budget keys (revealed budget, or a ``budget_aware`` agent).
        oracle: Called for ``info["oracle_actions"]`` (agents with ``needs_oracle``).
        executed: The command executed on the previous turn (None on the first turn).

    Example:
        >>> agent_info({"turns_left": 3, "won": False}, show_budget=False, executed="look")
        {'won': False, 'executed_action': 'look'}
    """
    view = {k: private_copy(v) for k, v in info.items() if show_budget or k not in BUDGET_KEYS}
    if oracle is not None:
        view[ORACLE_KEY] = list(oracle())
    if executed is not None:
        view[EXECUTED_KEY] = executed
    return view
