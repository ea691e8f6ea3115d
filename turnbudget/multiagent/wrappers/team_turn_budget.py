"""A shared team budget of T rounds, enforced as truncation of every agent at once."""

from __future__ import annotations

from typing import Any

from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from turnbudget._checks import check_reset_options
from turnbudget.multiagent.wrappers._common import (
    find_team_wrapper,
    require_parallel,
    require_single_team,
)
from turnbudget.wrappers._common import EpisodeSeeder
from turnbudget.wrappers.sample_turn_budget import BudgetMix, BudgetMixLike
from turnbudget.wrappers.turn_budget import check_turn_budget

__all__ = ["TeamTurnBudget", "begin_team_reset"]


def begin_team_reset(env: Any, seed: Any, options: Any) -> dict[str, Any]:
    """What a team wrapper's ``reset`` does first: end the episode, then check the arguments.

    The team form of `turnbudget.wrappers.turn_budget.begin_reset`: from here
    until a reset gets through to the game, every ``step`` of the stack raises
    ``ResetNeeded`` (the game's `check_actions`, which each team wrapper calls first). Returns ``options`` checked, as a new dict.
    """
    env.unwrapped.begin_reset()
    return check_reset_options(seed, options)


class TeamTurnBudget(BaseParallelWrapper):
    """Truncate every agent at the same round once the team has used ``turn_budget`` rounds.

    A round is one ``step()`` of the parallel env, in which every live agent
    takes one turn (valid or not). When the budget runs out, every live agent
    gets ``truncated=True`` on the same round, unless the game ended on that
    very round, in which case they are ``terminated`` and not truncated: the
    budget never touches ``terminated``. `turnbudget.wrappers.TurnBudget` is
    the single-agent form; the budget checks and BudgetMix are shared with it.

    The budget can be overridden for one episode with
    ``reset(options={"turn_budget": T})``, or drawn per episode from
    ``budget_mix`` (BudgetMix; anything `BudgetMix.coerce` accepts), seeded
    like `SampleTurnBudget`: a reset seed restarts the draws, a reset without
    one continues them; a caller's ``turn_budget`` option wins over the draw.
    Every agent's ``info`` carries ``turn_budget``, ``turns_used`` (that
    agent's turns), ``turns_left`` (the team's rounds left) and
    ``rounds_used``; on reset also ``sampled_turn_budget`` when a mix is set.

    Args:
        env: The parallel env to wrap.
        turn_budget: The default number of rounds per episode (a positive int).
        budget_mix: BudgetMix to draw T from at every reset (None: always ``turn_budget``).

    Example:
        >>> from turnbudget.multiagent import vault_v0
        >>> env = TeamTurnBudget(vault_v0.raw_env(), turn_budget=3)
        >>> _, infos = env.reset(seed=0)
        >>> for _ in range(3):
        ...     _, _, terminations, truncations, infos = env.step({a: "wait" for a in env.agents})
        >>> truncations, infos["runner"]["turns_used"], env.agents
        ({'operator': True, 'runner': True}, 3, [])
    """

    def __init__(self, env: ParallelEnv, turn_budget: int, budget_mix: BudgetMixLike | None = None):
        super().__init__(env)
        require_parallel(env, TeamTurnBudget)
        require_single_team(env, TeamTurnBudget)
        from turnbudget.multiagent.wrappers.record_team_outcomes import RecordTeamOutcomes

        if find_team_wrapper(env, RecordTeamOutcomes) is not None:
            # Inside the budget the recorder never saw the team truncated: every episode the
            # budget ended was dropped as abandoned at the next reset, silently.
            raise ValueError(
                "RecordTeamOutcomes must sit outside TeamTurnBudget, whose truncation ends its "
                "episodes: wrap the env in TeamTurnBudget first (make_team(..., record=...) "
                "stacks them in order)"
            )
        self.default_turn_budget = check_turn_budget(turn_budget)
        self.budget_mix = None if budget_mix is None else BudgetMix.coerce(budget_mix)
        self._seeder = EpisodeSeeder("SampleTurnBudget")
        self.turn_budget = self.default_turn_budget
        self.sampled_turn_budget: int | None = None
        self.rounds_used = 0
        self.turns_used: dict[str, int] = {}
        self.agents: list[str] = []

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        budget = begin_team_reset(self, seed, options).get("turn_budget")  # (no step until done)
        drawn = None
        if self.budget_mix is not None:  # one draw per episode keeps the stream aligned
            drawn = self.budget_mix.sample(self._seeder.stream(seed))
        if budget is not None:
            self.turn_budget, self.sampled_turn_budget = int(budget), None
        elif drawn is not None:
            self.turn_budget = self.sampled_turn_budget = drawn
        else:
            self.turn_budget = self.default_turn_budget
        observations, infos = self.env.reset(seed=seed, options=options)
        self.agents = list(self.env.agents)
        self.rounds_used = 0
        self.turns_used = dict.fromkeys(self.env.possible_agents, 0)
        for agent, info in infos.items():
            self._add_budget_info(agent, info)
            if self.budget_mix is not None:
                assert "sampled_turn_budget" not in info, "info['sampled_turn_budget'] set twice"
                info["sampled_turn_budget"] = self.sampled_turn_budget
        return observations, infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        actions = self.unwrapped.check_actions(
            actions, self.agents
        )  # a refused round counts for nothing
        if not self.agents:
            return {}, {}, {}, {}, {}
        acting = list(self.agents)
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        self.rounds_used += 1
        for agent in acting:
            self.turns_used[agent] += 1
        out_of_budget = self.rounds_used >= self.turn_budget
        for agent in acting:
            if out_of_budget and not terminations.get(agent, False):
                truncations[agent] = True
            if agent in infos:
                self._add_budget_info(agent, infos[agent])
        self.agents = [
            a for a in self.env.agents if not (terminations.get(a) or truncations.get(a))
        ]
        return observations, rewards, terminations, truncations, infos

    @property
    def turns_left(self) -> int:
        return max(self.turn_budget - self.rounds_used, 0)

    def _add_budget_info(self, agent: str, info: dict[str, Any]) -> None:
        info["turn_budget"] = self.turn_budget
        info["turns_used"] = self.turns_used.get(agent, 0)
        info["turns_left"] = self.turns_left
        info["rounds_used"] = self.rounds_used
