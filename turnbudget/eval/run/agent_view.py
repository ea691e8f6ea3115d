"""What an agent may see of a turn: the info the engine hands it, the command that ran,
and the id a batch agent knows its episode by.

The env's ``info`` is written for RL code and carries everything (the budget
and the oracle's distances included). The engines (`evaluate`, `probe` and the
team engine) pass agents a filtered copy, what a player would know:

- the budget keys (`BUDGET_KEYS`) only while the agent may see its budget: an
  agent that declares ``budget_aware`` always; any other agent only on turns
  whose observation showed the budget (``info["budget_visible"]``, set by
  `RevealBudget`: every turn with ``reveal="always"``, the last k turns with
  ``"final=k"``, never with ``"never"``);
- an injected error as a player meets it (`player_event`): its kind, what the
  game said and a slip's substitute command, never the oracle's distances
  (they stay in the step records), and nothing at all for an error that did
  not apply;
- the oracle's actions only to agents that declare ``needs_oracle``;
- ``info["executed_action"]`` (`EXECUTED_KEY`) after the first turn, as
  `turnbudget.agents.base` documents.

A batch agent knows each episode by an opaque id (`agent_episode_id`): a
keyed digest of the task and repeat, never of the budget, so an id carries
neither the budget nor the task seed. The key (`opaque_id`) is drawn at
random in each process and never reaches an agent's process when it is
sealed: an unkeyed digest could be matched against a table of every env id,
task seed and repeat, and the task seed rebuilds the game and its oracle.
The driver never has two episodes with one id in flight for an agent (the
same task and repeat at several budgets run one after the other). The records
keep their readable ids.

The copy is deep: its lists and dicts are the agent's own, fresh on every
call, so an agent that sorts ``info["admissible_actions"]`` in place or edits
``info["injected_error"]`` changes nothing of the run (the error injector's
slip substitutes, the step records) and nothing another call receives.
"""

from __future__ import annotations

import copy
import hashlib
import secrets
from collections.abc import Callable, Mapping
from typing import Any

from turnbudget._checks import agent_flag
from turnbudget.agents.base import BUDGET_KEYS, EXECUTED_KEY, ORACLE_KEY

__all__ = [
    "GRANTS",
    "PLAYER_EVENT_KEYS",
    "agent_episode_id",
    "agent_info",
    "budget_visible",
    "executed_action",
    "grants",
    "opaque_id",
    "player_event",
    "private_copy",
]

#: What a player learns of an injected error (``info["injected_error"]``) that applied: its
#: kind, what the game said, and a slip's substitute command (the distances stay in the records).
PLAYER_EVENT_KEYS = ("kind", "applied", "narration", "replaced_action")
#: What an agent's flags show it beyond a player's view: flag -> what a report calls it.
GRANTS = {"needs_oracle": "oracle actions", "budget_aware": "budget"}
_EVENT_KEY = "injected_error"
_EVENT_ONLY = frozenset({_EVENT_KEY})  # (copied apart: `player_event`)
_EVENT_AND_BUDGET = _EVENT_ONLY | set(BUDGET_KEYS)

# The key of `opaque_id`: this process's own, drawn when it imports this module (a sealed
# agent's process is a fresh interpreter that never holds the engine's).
_ID_KEY = secrets.token_bytes(32)

# Values shared as they are: immutable, so no agent can change them through its copy.
_ATOMS = frozenset({str, int, float, bool, type(None), bytes})


def budget_visible(reveal: Any) -> bool:
    """Whether `turnbudget.make(reveal=...)` shows the budget at some turn (a mapping's mode
    defaults to always): such runs need the rerun mode. Which turns show it is the env's
    ``info["budget_visible"]``, which `agent_info` follows."""
    if isinstance(reveal, Mapping):
        reveal = reveal.get("mode", "always")
    if not isinstance(reveal, (str, bool, type(None))):
        return True  # (an array was "ambiguous" here; the stack's own check refuses it)
    if isinstance(reveal, str):  # spelt as `check_reveal` reads it: " NEVER" hides it too
        reveal = reveal.strip().lower().partition("=")[0]
    return reveal not in (None, False, "never")


def grants(agent: Any) -> list[str]:
    """The flags of `GRANTS` ``agent`` declares, read once where a run is planned: its record
    says so, and the engines show the agent what the record says (read again in a worker or
    in a sealed agent's process, a flag could say otherwise there).

    Example:
        >>> from turnbudget.agents import OracleAgent, RandomAgent
        >>> grants(OracleAgent(0.1)), grants(RandomAgent())
        (['needs_oracle'], [])
    """
    return [flag for flag in GRANTS if agent_flag(agent, flag)]


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
    if kind is list:  # (of atoms only, as most are: one copy, their types checked in C)
        if _ATOMS.issuperset(map(type, value)):
            return value.copy()
        return [v if type(v) in _ATOMS else private_copy(v) for v in value]
    if kind is dict:
        return {k: v if type(v) in _ATOMS else private_copy(v) for k, v in value.items()}
    if kind is tuple:
        return tuple(v if type(v) in _ATOMS else private_copy(v) for v in value)
    return copy.deepcopy(value)


def player_event(event: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """An injected error as a player meets it: `PLAYER_EVENT_KEYS` of one that applied, else None.

    Example:
        >>> player_event({"kind": "setback", "turn": 4, "applied": True, "distance_before": 3,
        ...               "distance_after": 6, "narration": "Swept back!", "replaced_action": None})
        {'kind': 'setback', 'applied': True, 'narration': 'Swept back!', 'replaced_action': None}
        >>> player_event({"kind": "slip", "applied": False, "narration": ""}) is None
        True
    """
    if not event or not event.get("applied", True):
        return None
    return {k: private_copy(event[k]) for k in PLAYER_EVENT_KEYS if k in event}


def opaque_id(prefix: str, text: str) -> str:
    """``prefix`` and 16 hex digits of a digest of ``text`` keyed by this process's random key:
    the same text gives the same id in this process, and no one without the key can tell
    which text an id stands for (by trying every task seed, say).

    Example:
        >>> a = opaque_id("episode", "x"); a == opaque_id("episode", "x") != opaque_id("episode", "y")
        True
        >>> a[:8], len(a)
        ('episode-', 24)
    """
    return f"{prefix}-{hashlib.blake2b(text.encode(), digest_size=8, key=_ID_KEY).hexdigest()}"


def agent_episode_id(env_id: str, task_seed: int, rep: int) -> str:
    """The id a batch agent knows an episode by: an `opaque_id` of its task and repeat, never
    of its budget.

    The same task and repeat at two budgets share it (the driver runs them one
    after the other, in rising T), so the id tells an agent that keeps nothing across
    resets, as the agent protocol asks, nothing of its budget; the task seed and env
    id cannot be read from it, nor found by trying them.

    Example:
        >>> agent_episode_id("turnbudget/Maze-Easy-v0", 3, 0) == agent_episode_id("turnbudget/Maze-Easy-v0", 3, 0)
        True
    """
    return opaque_id("episode", f"{env_id}\x1f{int(task_seed)}\x1f{int(rep)}")


def agent_info(
    info: Mapping[str, Any],
    *,
    show_budget: bool,
    oracle: Callable[[], list[str]] | None = None,
    executed: str | None = None,
) -> dict[str, Any]:
    """A deep copy of what a player may see of ``info`` (the run's objects are never shared).

    Args:
        info: The env's info for the observation the agent is about to answer.
        show_budget: Keep the budget keys on every turn (a ``budget_aware`` agent);
            otherwise they are kept only when ``info["budget_visible"]`` is true
            (the observation showed the budget).
        oracle: Called for ``info["oracle_actions"]`` (agents with ``needs_oracle``).
        executed: The command executed on the previous turn (None on the first turn).

    Example:
        >>> agent_info({"turns_left": 3, "won": False}, show_budget=False, executed="look")
        {'won': False, 'executed_action': 'look'}
        >>> agent_info({"turns_left": 2, "budget_visible": True}, show_budget=False)
        {'turns_left': 2, 'budget_visible': True}
    """
    hide = _EVENT_ONLY if show_budget or info.get("budget_visible") is True else _EVENT_AND_BUDGET
    view = {}
    # (a loop: a comprehension builds a function every call; a list of atoms, such as
    # ``admissible_actions`` on every turn, copied here without a call of `private_copy`)
    for key, value in info.items():
        if key not in hide:
            kind = type(value)
            if kind in _ATOMS:
                view[key] = value
            elif kind is list and _ATOMS.issuperset(map(type, value)):
                view[key] = value.copy()
            else:
                view[key] = private_copy(value)
    event = info.get(_EVENT_KEY)
    if event:  # (most turns have none: no call of `player_event`)
        event = player_event(event)
        if event is not None:
            view[_EVENT_KEY] = event
    if oracle is not None:
        view[ORACLE_KEY] = list(oracle())
    if executed is not None:
        view[EXECUTED_KEY] = executed
    return view
