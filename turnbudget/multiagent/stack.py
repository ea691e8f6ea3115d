"""`make_team`: a team game with its budget, BudgetMix, errors, records and visibility, in one call."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from turnbudget._checks import brief, check_bool, renamed
from turnbudget.multiagent.base import TextParallelEnv, checked_aec
from turnbudget.multiagent.wrappers import (
    InjectTeamErrors,
    RecordTeamOutcomes,
    RevealTeamBudget,
    TeamDiscreteActions,
    TeamNumericInfo,
    TeamTextFeatures,
    TeamTurnBudget,
)
from turnbudget.wrappers.sample_turn_budget import BudgetMixLike, beside_a_mix
from turnbudget.wrappers.stack import INFO_MODES
from turnbudget.wrappers.turn_budget import check_turn_budget

__all__ = ["TEAM_STACK_ORDER", "game_module", "make_team"]

#: Innermost first, as `turnbudget.stack.STACK_ORDER` for single agents.
TEAM_STACK_ORDER = (
    "TeamTurnBudget",
    "InjectTeamErrors",
    "RecordTeamOutcomes",
    "RevealTeamBudget",
    # classic-RL adapters last: they change the spaces
    "TeamDiscreteActions",
    "TeamTextFeatures",
    "TeamNumericInfo",
)


def game_module(game: str | ModuleType) -> ModuleType:
    """The game module named ``game`` (``"vault_v0"`` or ``"turnbudget/vault_v0"``), or ``game`` itself."""
    from turnbudget.multiagent import all_games

    if isinstance(game, ModuleType):
        raw_env = getattr(game, "raw_env", None)
        if not (
            isinstance(raw_env, type) and issubclass(raw_env, TextParallelEnv)
            and isinstance(getattr(raw_env, "world_class", None), type)
            and isinstance(getattr(raw_env, "metadata", None), dict)
            and isinstance(raw_env.metadata.get("name"), str)
        ):  # fmt: skip
            raise ValueError(
                f"Expect a team game module (its `raw_env` a `TextParallelEnv` with a "
                f"`world_class` and a name), got the module {game.__name__!r}: use one of "
                f"{sorted(all_games)}"
            )
        return game
    # (a str only: the f-string's str() of a deep list or an object raised its own error)
    key = (game if "/" in game else f"turnbudget/{game}") if isinstance(game, str) else None
    if key not in all_games:
        raise ValueError(f"Unknown team game {brief(game)}: expect one of {sorted(all_games)}")
    return all_games[key]


#: The wrapper keyword a ``make_team`` option's single value is passed as.
_SCALAR_KEYWORDS = {"errors": "rate", "reveal": "mode", "discrete_actions": "max_actions",
                    "text_features": "size"}  # fmt: skip


def _options(value: Any, name: str, scalar: str | None = None) -> dict[str, Any] | None:
    """None/False: no wrapper; True: defaults; a mapping: keyword arguments; a scalar: ``{scalar: value}``."""
    if value is None or value is False:
        return None
    if value is True:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if scalar is not None:
        return {scalar: value}
    raise ValueError(
        f"Unexpected `{name}`={brief(value)}: see make_team's docstring for what it accepts"
    )


def make_team(
    game: str | ModuleType,
    *,
    difficulty: str = "easy",
    turn_budget: int | None = None,
    budget_mix: BudgetMixLike | None = None,
    errors: float | Mapping[str, Any] | None = None,
    record: bool
    | str
    | os.PathLike[str]
    | Callable[[dict[str, Any]], Any]
    | Mapping[str, Any]
    | None = None,
    reveal: str | Mapping[str, Any] | None = None,
    discrete_actions: int | Mapping[str, Any] | None = None,
    text_features: int | bool | Mapping[str, Any] | None = None,
    info: str | None = None,
    aec: bool = False,
    render_mode: str | None = None,
    budget: int | None = None,
) -> Any:
    """Make a team game and stack the team wrappers on it, in `TEAM_STACK_ORDER`.

    Args:
        game: A game module of `turnbudget.multiagent.all_games`, or its name (``"vault_v0"``).
        difficulty: ``"easy"``, ``"medium"`` or ``"hard"``.
        turn_budget: The team budget T in rounds (the game's default for the difficulty if None).
        budget_mix: BudgetMix: anything `BudgetMix.coerce` accepts.
        errors: An error rate per agent and round, or `InjectTeamErrors` keyword arguments.
        record: True (in memory), a JSONL path, a callback, or `RecordTeamOutcomes` keyword arguments.
        reveal: A mode (``"always"``, ``"final=3"``) or `RevealTeamBudget` keyword arguments.
        discrete_actions: ``max_actions`` or `TeamDiscreteActions` keyword arguments: every
            agent acts by index, with ``info["action_mask"]``.
        text_features: True, the observation's length (`TeamTextFeatures`'s ``size``) or its
            keyword arguments: every agent observes a float vector.
        info: ``"numeric"`` (`TeamNumericInfo`: fixed-shape NumPy values only, for SuperSuit's
            vector envs) or ``"text"`` (every key); None: numeric exactly when
            ``text_features`` makes the observations numeric. As in `turnbudget.make`.
        aec: Return the AEC form (PettingZoo's ``parallel_to_aec``: `checked_aec`) instead of the
            parallel env.
        render_mode: ``"ansi"`` or ``"human"``.
        budget: Deprecated: the old name of ``turn_budget`` (warns; removed in the next release).

    Example:
        >>> env = make_team("vault_v0", difficulty="medium", budget_mix=[20, 40], errors=0.1,
        ...                 record=True, reveal="final=5")
        >>> _, infos = env.reset(seed=0)
        >>> infos["runner"]["turn_budget"] in (20, 40)
        True

        The classic-RL form (SuperSuit's vector envs, SB3), as `turnbudget.make` builds it:

        >>> env = make_team("vault_v0", discrete_actions=8, text_features=64)
        >>> observations, infos = env.reset(seed=0)
        >>> observations["runner"].shape, env.action_space("runner"), infos["runner"]["action_mask"].shape
        ((64,), Discrete(8), (8,))
    """
    module = game_module(game)
    budget = renamed(turn_budget, budget, "turn_budget", "budget", "make_team")
    aec = check_bool(aec, "aec")
    if info is None:
        info = "text" if text_features is None or text_features is False else "numeric"
    if not isinstance(info, str) or info not in INFO_MODES:  # (an array: "ambiguous")
        raise ValueError(f"Expect `info` to be one of {INFO_MODES} or None, got {brief(info)}")
    given = {"errors": errors, "reveal": reveal, "discrete_actions": discrete_actions,
             "text_features": text_features}  # fmt: skip
    specs = {key: _options(value, key, _SCALAR_KEYWORDS[key]) for key, value in given.items()}
    specs["info"] = {} if info == "numeric" else None
    # The options given as one value (``reveal="sometimes"``): a wrapper's refusal names its
    # own keyword (`mode`), which make_team has not; it is said as the option.
    scalars = [k for k, v in given.items() if v is not None and not isinstance(v, (bool, Mapping))]
    if isinstance(record, (str, os.PathLike)):
        specs["record"] = {"path": record}
    elif callable(record) and not isinstance(record, Mapping):
        specs["record"] = {"callback": record}
    else:
        specs["record"] = _options(record, "record")
    if budget_mix is not None and budget is not None:
        raise beside_a_mix(budget)
    raw = module.raw_env(difficulty=difficulty, render_mode=render_mode)
    budget = (
        module.DEFAULT_BUDGETS[raw.difficulty]
        if budget is None
        else check_turn_budget(budget, "turn_budget")
    )
    env: Any = TeamTurnBudget(raw, turn_budget=budget, budget_mix=budget_mix)
    for key, wrapper in (
        ("errors", InjectTeamErrors),
        ("record", RecordTeamOutcomes),
        ("reveal", RevealTeamBudget),
        ("discrete_actions", TeamDiscreteActions),
        ("text_features", TeamTextFeatures),
        ("info", TeamNumericInfo),
    ):
        if specs[key] is not None:
            try:
                env = wrapper(env, **specs[key])
            except ValueError as exc:
                if key not in scalars or type(exc) is not ValueError:
                    raise
                keyword = _SCALAR_KEYWORDS[key]
                raise ValueError(str(exc).replace(f"`{keyword}`", f"`{key}`")) from None
    return checked_aec(env) if aec else env
