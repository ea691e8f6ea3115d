"""Multi-agent text games on PettingZoo, with team turn budgets (the ``multiagent`` extra).

Each game is one module with ``env()`` (AEC), ``parallel_env()`` and
``raw_env``, like ``pettingzoo.classic`` modules; `all_games` lists them as
``pettingzoo.utils.all_modules`` does::

    from turnbudget.multiagent import race_v0, vault_v0
    env = vault_v0.parallel_env(difficulty="medium")
    observations, infos = env.reset(seed=0)

`SoloRoleEnv` plays one role of a team game as a single-agent Gymnasium env.
"""

from __future__ import annotations

try:
    import pettingzoo  # noqa: F401 - the games are PettingZoo envs
except ModuleNotFoundError as missing:  # (a bare "No module named 'pettingzoo'" said no more)
    raise ModuleNotFoundError(
        "turnbudget's team games need the multiagent extra (PettingZoo): "
        "pip install -e '.[multiagent]' in the turnbudget checkout",
        name=missing.name,
    ) from missing

from turnbudget.multiagent import race_v0, vault_v0
from turnbudget.multiagent.base import TEXT_KEY, TextParallelEnv, UnknownAgentError
from turnbudget.multiagent.solo import SoloRoleEnv
from turnbudget.multiagent.stack import make_team

__all__ = [
    "TEXT_KEY",
    "SoloRoleEnv",
    "TextParallelEnv",
    "UnknownAgentError",
    "all_games",
    "make_team",
    "race_v0",
    "vault_v0",
]

#: Every game module, by name (as ``pettingzoo.utils.all_modules.all_environments``).
all_games = {
    "turnbudget/race_v0": race_v0,
    "turnbudget/vault_v0": vault_v0,
}
