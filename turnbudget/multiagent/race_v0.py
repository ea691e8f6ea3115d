"""Race: a competitive crafting race under a scarce material (PettingZoo, parallel and AEC)."""

from __future__ import annotations

from typing import Any, ClassVar

from turnbudget.multiagent.base import TextParallelEnv, game_factories
from turnbudget.multiagent.worlds.race import RaceWorld

__all__ = ["DEFAULT_BUDGETS", "env", "parallel_env", "raw_env"]

# At least twice the longest best response of each variant (12, 30, 60 rounds by construction).
DEFAULT_BUDGETS = {"easy": 30, "medium": 64, "hard": 128}


class raw_env(TextParallelEnv):  # PettingZoo's name for the unwrapped env
    """Two players race to gather materials and craft their tool first; one material is scarce.

    ## Description
    Rooms on a grid joined by passages, with a few loops. Each player's
    recipe has one material both need, with too few copies (one in Easy, two
    in Medium and Hard), and private ones. A player can carry only materials
    of its own recipe, one of each. Both know where every material lies (the
    scouts' report); each sees only its own room, and its rival when they
    share a room. Taking the copy the rival is heading for blocks it.

    ## Goal
    Craft your tool at the workbench before your rival crafts theirs.

    ## Actions
    Free-form text, one command per player per round: ``go <direction>``,
    ``take <material>`` (synonyms ``get``, ``grab``, ``pick up``), ``craft``
    at the workbench, ``look``, ``wait``. Both taking the same copy on the
    same round: it goes to ``player_0`` on odd rounds, ``player_1`` on even
    rounds. A command that is not admissible (or not a string, or missing)
    costs that player its turn with feedback and ``valid_action=False``.

    ## Observations
    ``{"text": str}`` per player: its last command's feedback, its room,
    exits, materials there, what it carries and still needs.

    ## Rewards
    1.0 to a player on the round it crafts (both when they craft on the same
    round), 0 otherwise.

    ## Episode end
    ``terminated`` for both players when one crafts (the other has
    ``lost=True``). ``truncated`` for both at the same round when the team
    budget runs out (`TeamTurnBudget`); never both.

    ## Oracle
    Per agent, against the fixed *house* policy (its own shortest solo
    tour, blind to the rival; a blocked take is retried forever):
    ``distance_to_goal(agent)`` is the exact best response's length (None
    when the agent can no longer win), ``optimal_actions(agent)`` its first
    commands, ``joint_plan(agent)`` the rounds of best response against the
    house, ``house_action(agent)`` the house policy itself, and
    ``distance_alone(agent)`` the shortest tour to craft with the rival ignored
    (a lower bound against any rival). No joint
    optimum exists in a race. Setbacks: the player drops a carried material
    where it stands, or a crowd sweeps it back to an earlier room; only ones
    after which it can still win.

    ## Arguments
    ``difficulty``: ``"easy"`` (3x3 rooms, 2 materials, best response 5-12
    rounds), ``"medium"`` (5x5, 3 materials, 15-30), ``"hard"`` (7x7, 4
    materials, 35-60), for both players. ``render_mode``: ``"ansi"`` or
    ``"human"``. The factories ``env()`` / ``parallel_env()`` also take
    ``turn_budget``.

    ## Registered configurations
    ``turnbudget.multiagent.race_v0`` in ``all_games``; default team budgets
    30 / 64 / 128 rounds (Easy / Medium / Hard).

    ## Version history
    v0: initial release.
    """

    world_class = RaceWorld
    metadata: ClassVar[dict[str, Any]] = {**TextParallelEnv.metadata, "name": "race_v0"}

    def house_action(self, agent: str) -> str:
        """The fixed opponent policy's command for ``agent`` this round."""
        return self.world.house_action(self.known_agent(agent))

    def distance_alone(self, agent: str) -> int | None:
        """Rounds of ``agent``'s shortest tour to craft, the rival ignored: a lower bound on
        its rounds to win against any rival (`distance_to_goal` is exact against the house)."""
        return self.world.distance_alone(self.known_agent(agent))


env, parallel_env = game_factories(raw_env, DEFAULT_BUDGETS)
