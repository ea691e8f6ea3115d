"""One role of a team game as a single-agent Gymnasium env: the team world's single-agent cousin."""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import numpy as np

from turnbudget._checks import brief
from turnbudget.envs.core import TextEnv
from turnbudget.multiagent.base import TEXT_KEY
from turnbudget.multiagent.stack import game_module

__all__ = ["PARTNER_POLICIES", "SoloRoleEnv"]

#: How the other roles play: the team oracle's first optimal command, or the game's house policy.
PARTNER_POLICIES = ("oracle", "house")


class SoloRoleEnv(TextEnv):
    """Play one role of a team game alone; every other role follows a fixed policy.

    ## Description
    The same world and rules as the PettingZoo game (``raw_env``), driven
    through Gymnasium's single-agent API, so the single-agent wrappers
    (`TurnBudget`, `InjectErrors`, `RecordStepOutcomes`, ...) and
    ``turnbudget.make`` apply unchanged. The partners play ``"oracle"`` (the
    team oracle's first optimal command for them: in Vault, an operator who
    radios the right code at the right round) or ``"house"`` (the game's
    fixed opponent policy, in Race).

    ## Goal, Actions, Rewards
    Those of the role in the team game (see its module). A command that is
    not admissible is a spent turn in which nothing happens: the partners
    wait too, since a refused command changes nothing. Actions are free
    text; the single-agent contract (`turnbudget.envs.core.TextEnv`) holds: a
    non-string action is a ``TypeError``, a step before ``reset`` raises
    ``ResetNeeded``, a step after the game ended is a spent, invalid turn.

    ## Observations
    The role's observation text.

    ## Episode end
    ``terminated`` when the team game ends; ``truncated`` only by a budget
    wrapper.

    ## Oracle
    ``distance_to_goal()`` is the role's distance under the partners' policy
    (the joint plan's length with an oracle partner, the best response to
    the house in Race); ``optimal_actions()`` are the role's admissible
    commands after which it drops by one, checked on a copy of the game;
    ``inject_setback(rng)`` is the game's setback aimed at this role.

    ## Arguments
    ``game``: a game module or name (``"vault_v0"``); ``role``: the role
    played (default: the last role, e.g. the runner); ``partners``:
    ``"oracle"`` or ``"house"``, the one the game's oracle answers (default:
    ``"house"`` in a game with a house policy, Race; else ``"oracle"``);
    ``difficulty``; ``render_mode``.

    ## Version history
    v0: initial release.

    Example:
        >>> import turnbudget
        >>> env = turnbudget.make(SoloRoleEnv("vault_v0", role="runner"), turn_budget=30)
        >>> obs, info = env.reset(seed=0)
        >>> oracle = env.unwrapped
        >>> while True:
        ...     obs, reward, terminated, truncated, info = env.step(oracle.optimal_actions()[0])
        ...     if terminated or truncated:
        ...         break
        >>> reward, info["turns_used"] == oracle.initial_distance
        (1.0, True)
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "render_fps": 1}

    def __init__(
        self,
        game: Any = "vault_v0",
        role: str | None = None,
        partners: str | None = None,
        difficulty: str = "easy",
        render_mode: str | None = None,
    ):
        module = game_module(game)
        # (the role's own screen is what renders: the team's shows every role's, the
        # operator's route and codes included, and in "human" mode printed each round)
        self.team = module.raw_env(difficulty=difficulty)
        roles = self.team.possible_agents
        self.role = roles[-1] if role is None else role
        if self.role not in roles:
            raise ValueError(f"Expect `role` to be one of {roles}, got {brief(role)}")
        # The oracle's distance is the role's under the game's own partners: the team oracle's
        # plan, or the best response to the house where there is one (Race). Partners of the
        # other kind made it a distance nobody played: with oracle partners, Race's role had
        # no optimal command at distance 9.
        has_house = callable(getattr(self.team, "house_action", None))
        if partners is None:
            partners = "house" if has_house else "oracle"
        if partners not in PARTNER_POLICIES:
            raise ValueError(
                f"Expect `partners` to be one of {PARTNER_POLICIES}, got {brief(partners)}"
            )
        if (partners == "house") != has_house:
            name = module.raw_env.metadata["name"]
            raise ValueError(
                f"{name} has no house policy: use partners='oracle'"
                if not has_house
                else f"{name}'s oracle answers the house policy: use partners='house' (the default)"
            )
        super().__init__(render_mode=render_mode)
        self.partners = partners
        self.initial_distance: int | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        # The team env keeps its own seeding rule (a seed restarts, none continues).
        observations, infos = self.team.reset(seed=seed, options=options)
        self._in_episode, self._episode_over = True, False
        self.initial_distance = self.distance_to_goal()
        return self._observe(observations[self.role][TEXT_KEY]), infos[self.role]

    def _play(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        world = self.team.world
        if world.parse(self.role, action) is None:
            # The single-agent contract: a refused command changes nothing, so the
            # partners wait too (the turn is still spent, by the budget wrapper).
            text = f"{world.explain_invalid(self.role, action)}\n\n{world.describe(self.role)}"
            return self._observe(text), 0.0, False, False, self._info(valid_action=False)
        observations, rewards, terminations, _, infos = self.team.step(self._joint(action))
        self._episode_over = terminations[self.role]
        return (
            self._observe(observations[self.role][TEXT_KEY]),
            rewards[self.role],
            terminations[self.role],
            False,
            infos[self.role],
        )

    def _info(self, valid_action: bool | None = None) -> dict[str, Any]:
        return self.team.agent_info(self.role, valid_action)

    def _joint(self, action: str, world: Any = None) -> dict[str, str]:
        """The role's action and the partners' policy's commands, in ``world`` (default: the game's)."""
        world = self.team.world if world is None else world
        joint = {self.role: action}
        for partner in world.roles:
            if partner == self.role:
                continue
            if self.partners == "house":
                joint[partner] = world.house_action(partner)
            else:
                joint[partner] = (world.optimal_actions(partner) or ["wait"])[0]
        return joint

    # -- oracle -------------------------------------------------------------------------

    def distance_to_goal(self) -> int | None:
        return self.team.distance_to_goal(self.role)

    def optimal_actions(self) -> list[str]:
        distance = self.distance_to_goal()
        if not distance or self._episode_over:
            return []
        best = []
        for command in self.team.world.admissible(self.role):
            trial = copy.deepcopy(self.team.world)  # cheap: the world shares its tables
            trial.step(self._joint(command, trial))
            after = trial.distance_to_goal(self.role)
            if trial.won(self.role) or (after is not None and after == distance - 1):
                best.append(command)
        return best

    def inject_setback(self, rng: np.random.Generator) -> str:
        return self.team.inject_setback(self.role, rng)
