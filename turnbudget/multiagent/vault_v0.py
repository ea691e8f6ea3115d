"""Vault: a cooperative game with asymmetric information (PettingZoo, parallel and AEC)."""

from __future__ import annotations

from typing import Any, ClassVar

from turnbudget.multiagent.base import TextParallelEnv, game_factories
from turnbudget.multiagent.worlds.vault import MAX_SAY_LENGTH, VaultWorld

__all__ = ["DEFAULT_BUDGETS", "env", "parallel_env", "raw_env"]

# At least twice the longest joint plan of each variant (12, 30, 60 rounds by construction).
DEFAULT_BUDGETS = {"easy": 30, "medium": 64, "hard": 128}


class raw_env(TextParallelEnv):  # PettingZoo's name for the unwrapped env
    """An operator talks a runner through a building of coded doors to the vault.

    ## Description
    The building is a tree of rooms, some passages closed by coloured doors
    with four-digit keypads. The *operator* sees the plan: where the runner
    is, the route to the vault, and every door's code, but can only talk.
    The *runner* sees only its room and what it hears on the radio, and acts.
    A message reaches the runner at the end of the round it was said, and
    carries at most one code (four digits: any further digit arrives as
    static, ``#``), so communication costs rounds and the operator must pick
    which code to send.
    Decoy doors off the route (Medium, Hard) have codes too.

    ## Goal
    The runner reaches the vault room; the team wins together.

    ## Actions
    Free-form text, one command per agent per round. Operator: ``say
    <message>`` (up to {say} characters), ``wait``. Runner: ``go <direction>``
    through an open passage, ``enter <code>`` next to a locked door
    (synonyms ``type``, ``key``, ``dial``), ``look``, ``wait``.
    ``info["admissible_actions"]`` lists the canonical commands (the
    operator's list holds one ``say <colour> <code>`` per locked door). A
    command that is not admissible (or not a string, or missing) costs that
    agent its turn with feedback and ``valid_action=False``; the other agent's
    command still runs.

    ## Observations
    ``{{"text": str}}`` per agent: the feedback of its last command, then what
    it perceives (the runner: its room, exits, doors, the radio message and
    the codes heard so far; the operator: the runner's room, the route, every
    code and what the runner just did). ``info["progress"]``: the route's
    coded doors that stand open over one more than their number (entering
    the vault is the last step): 1 only once won.

    ## Rewards
    1.0 to both agents on the round the runner enters the vault, 0 otherwise.

    ## Episode end
    ``terminated`` for both agents when the runner reaches the vault (the game
    cannot be lost). ``truncated`` for both at the same round when the team
    budget runs out (`TeamTurnBudget`); never both.

    ## Oracle
    Exact and information-respecting: the runner plans only with codes it has
    heard, and the j-th new code it needs can be used no earlier than round
    j + 1. ``distance_to_goal()`` is the joint plan's length in rounds,
    ``joint_plan()`` one such plan, ``optimal_actions(agent)`` each agent's
    commands that start one. Setbacks: guards escort the runner back to an
    earlier room no closer to the vault; or an open door on the route slams
    shut with a new code (aimed at the operator, who must send it again).

    ## Arguments
    ``difficulty``: ``"easy"`` (3x3 rooms, 1 coded door, joint plan 5-12
    rounds), ``"medium"`` (5x5, 2 doors + 1 decoy, 15-30), ``"hard"`` (7x7,
    4 doors + 2 decoys, 35-60). ``render_mode``: ``"ansi"`` or ``"human"``.
    The factories ``env()`` / ``parallel_env()`` also take ``turn_budget``.

    ## Registered configurations
    ``turnbudget.multiagent.vault_v0`` in ``all_games``; default team budgets
    30 / 64 / 128 rounds (Easy / Medium / Hard).

    ## Version history
    v0: initial release. Fixed in place (issue 21): ``info["progress"]`` was
    1 − d/d₀, the team oracle's distance handed to both agents; it is now the
    share of the route's coded doors that stand open. Only that info key
    changed (not the dynamics, the observations or the rewards), so the name
    stays ``vault_v0``.
    """

    world_class = VaultWorld
    metadata: ClassVar[dict[str, Any]] = {**TextParallelEnv.metadata, "name": "vault_v0"}


raw_env.__doc__ = (raw_env.__doc__ or "").format(say=MAX_SAY_LENGTH)
env, parallel_env = game_factories(raw_env, DEFAULT_BUDGETS)
