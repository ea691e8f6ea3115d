"""Env ids as users type them: ``--env`` of eval, probe and validate, and ``play ID``.

One rule for every subcommand: the ``turnbudget/`` prefix may be omitted, and a
team game's name (what ``turnbudget list --team`` prints) is answered with the
route that plays it, since it is a PettingZoo game, not a Gymnasium id.
"""

from __future__ import annotations

from collections.abc import Iterable

import gymnasium as gym

from turnbudget.registration import NAMESPACE

__all__ = ["TEAM_ROUTE", "env_ids", "resolve_env_id"]

#: What to do with a team game's name (filled with the game's name).
TEAM_ROUTE = (
    "{game!r} is a team game (PettingZoo), not a Gymnasium id: make it with "
    "turnbudget.multiagent.make_team({game!r}) and evaluate it with "
    "turnbudget.eval.evaluate_team; `turnbudget list` shows the single-agent ids"
)


def _team_game(name: str) -> str | None:
    """The team game ``name`` names (``"vault_v0"``, ``"turnbudget/vault_v0"``), or None."""
    game = name.removeprefix(f"{NAMESPACE}/")
    try:
        from turnbudget.multiagent import all_games
    except ImportError:  # (the multiagent extra is not installed)
        return None
    return game if f"{NAMESPACE}/{game}" in all_games else None


def resolve_env_id(name: str) -> str:
    """The registered id ``name`` means: itself, or ``turnbudget/<name>`` for a bare id, an
    unversioned one at its latest version as ``gym.make`` plays it (`played_env_id`).

    A name that is neither is returned as it is (``gym.make`` raises its own
    error, with its suggestions); a team game's name raises ``ValueError``
    naming the route that plays it.

    Example:
        >>> resolve_env_id("Maze-Easy-v0")
        'turnbudget/Maze-Easy-v0'
        >>> resolve_env_id("turnbudget/Maze-Easy-v0"), resolve_env_id("Maze-Easy")
        ('turnbudget/Maze-Easy-v0', 'turnbudget/Maze-Easy-v0')
    """
    from turnbudget.eval.run.plan import played_env_id

    name = name.strip()
    played = played_env_id(name)  # (a relative 'module:id' is a ValueError)
    if played in gym.registry:
        return played
    if "/" not in name and ":" not in name:
        played = played_env_id(f"{NAMESPACE}/{name}")
        if played in gym.registry:
            return played
    game = _team_game(name)
    if game is not None:
        raise ValueError(TEAM_ROUTE.format(game=game))
    return name


def env_ids(values: Iterable[str]) -> list[str]:
    """The ids of repeated ``--env`` flags, each one id or a comma list, resolved.

    Example:
        >>> env_ids(["Maze-Easy-v0,turnbudget/KeyQuest-Easy-v0", " Maze-Hard-v0 "])
        ['turnbudget/Maze-Easy-v0', 'turnbudget/KeyQuest-Easy-v0', 'turnbudget/Maze-Hard-v0']
    """
    items = [e for value in values for e in value.split(",")]
    if any(not e.strip() for e in items):
        raise ValueError(f"Expect --env to be env ids with no empty item, got {','.join(values)!r}")
    return [resolve_env_id(e) for e in items]
