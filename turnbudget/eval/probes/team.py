"""The team single-step probe: each role's command in states along the team oracle's plan."""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from turnbudget._checks import agent_flag, brief, check_seed, is_int
from turnbudget.agents.base import in_flight, observe, observe_batch
from turnbudget.eval.run.agent_view import agent_episode_id, agent_info
from turnbudget.eval.run.driver import one_each
from turnbudget.eval.run.plan import derive_seed, task_seeds
from turnbudget.eval.run.team import planned_team, team_roles

__all__ = ["team_step_probe"]

#: The most rounds ``t0s`` takes (each adds a probe per task): ``range(10**12)`` is refused,
#: not walked through until the end of time.
MAX_T0S = 1000


def team_step_probe(
    game: Any,
    agents: Mapping[str, Any],
    *,
    difficulty: str = "easy",
    tasks: int | Sequence[int] = 10,
    t0s: Sequence[int] = (0, 3, 6),
    seed: int = 0,
) -> dict[str, dict[str, float | int | None]]:
    """Single-step skill of each role, teacher-forced along the team oracle's plan.

    For each task seed and each t0, the game is driven for t0 rounds along
    one optimal plan (the joint plan; in a competitive game the focal roles'
    best response against the house), then every probed role's agent is asked
    for one command in that state, and the command is scored optimal or not
    (``optimal_actions(role)``, after canonical parsing). Roles played by
    ``"house"`` are not probed, nor states where every admissible command is
    optimal (an operator with nothing urgent to say): they hold no decision. The random agent's chance on the same states
    is computed exactly (optimal / admissible commands), and the skill is
    normalized: ``(p - p_random) / (1 - p_random)``, 0 for chance, 1 for the oracle.
    An agent that reads its budget (``budget_aware``) is shown the budget it would have
    there in a real episode: the game's default for the difficulty (`make_team`'s), t0
    rounds of it used (a t0 at or past it is no state of a real episode: not probed); the
    others are shown none.

    Returns:
        role -> ``{"n", "optimal_rate", "random_rate", "skill"}`` (None when no state was probed).

    Example:
        >>> out = team_step_probe("vault_v0", {"operator": "oracle", "runner": "random"}, tasks=4)
        >>> out["operator"]["skill"], 0 <= out["runner"]["random_rate"] < 1
        (1.0, True)
    """
    module, name, roles = team_roles(game, agents)
    seed = check_seed(seed)
    if isinstance(t0s, (str, bytes, Mapping)) or not isinstance(t0s, Sequence):
        raise ValueError(f"Expect `t0s` to be a list of rounds (ints >= 0), got {brief(t0s)}")
    if len(t0s) > MAX_T0S:
        raise ValueError(f"Expect at most {MAX_T0S:,} `t0s`, got {len(t0s):,}")
    if not all(is_int(t0) and t0 >= 0 for t0 in t0s):
        raise ValueError(f"Expect `t0s` to hold ints >= 0, got {brief(list(t0s))}")
    if len(set(t0s)) != len(t0s):  # (a round twice counted its states twice in the rates)
        raise ValueError(f"Expect distinct `t0s`, got {brief(list(t0s))}")
    members, house = planned_team(module, roles, agents)  # (what is probed follows its reads)
    team = dict(zip(roles, members, strict=True))
    seeds = task_seeds(tasks)
    # (the house is whatever asks for its moves, as `evaluate_team` tells it: not only a
    # HouseAgent, whose probe as a player failed on the house move it was never shown)
    probed = [r for r in roles if r not in house]
    # (read once, before any state, as the engines read them: an agent that set its own
    # ``needs_oracle`` after its first answer was handed the oracle's actions from then on)
    oracle_roles = {r for r in probed if agent_flag(team[r], "needs_oracle")}
    aware_roles = {r for r in probed if agent_flag(team[r], "budget_aware")}
    competitive = hasattr(module.raw_env, "house_action")
    # (an async agent through a batch of one: each probe is one decision of a fresh episode)
    driven = {r: a if hasattr(a, "act") or hasattr(a, "act_batch") else in_flight(a, 1)
              for r, a in team.items()}  # fmt: skip
    hits = dict.fromkeys(probed, 0)
    chance = dict.fromkeys(probed, 0.0)
    counts = dict.fromkeys(probed, 0)
    try:
        for task in seeds:
            for t0 in t0s:
                env = module.raw_env(difficulty=difficulty)
                budget = module.DEFAULT_BUDGETS[env.difficulty]
                observations, infos = env.reset(seed=task)
                focal = probed[0] if competitive else None
                plan = env.joint_plan(focal)
                if t0 >= len(plan) or t0 >= budget:
                    continue
                # (each round of the prefix, as its roles met it: the agent is told of them,
                # as `probe` tells it of its own, so it knows what a player there knows,
                # the goal of the first round's info among it)
                prefix = []
                for commands in plan[:t0]:
                    # (and the oracle's commands there, to an agent that reads them)
                    shown = {r: sorted(env.optimal_actions(r)) for r in oracle_roles}
                    prefix.append((observations, infos, commands, shown))
                    observations, _, _, _, infos = env.step(commands)
                for role in probed:
                    optimal = set(env.optimal_actions(role))
                    admissible = infos[role]["admissible_actions"]
                    if not optimal or not admissible:
                        continue
                    commands = plan[t0]
                    if competitive and role != focal:
                        # (the plan is the focal role's best response: this role's command in
                        # it is the house's, a failed retry at times, which `wait` matched)
                        commands = {**commands, role: sorted(optimal)[0]}
                    as_planned = _AsThePlan(env, role, commands)
                    good = {a for a in admissible if a in optimal or as_planned(a)}
                    if good.issuperset(admissible):
                        continue  # no decision to make here: it would only dilute the measure
                    oracle = functools.partial(sorted, optimal) if role in oracle_roles else None
                    aware = role in aware_roles
                    told = [
                        (seen[role]["text"],
                         _view(infos_then[role], budget, k, aware,
                               functools.partial(list, shown[role]) if role in shown else None,
                               _executed(plan, k - 1, role)),
                         commands[role])
                        for k, (seen, infos_then, commands, shown) in enumerate(prefix)
                        if role in seen and isinstance(commands.get(role), str)
                    ]  # fmt: skip
                    info = _view(
                        infos[role], budget, t0, aware, oracle, _executed(plan, t0 - 1, role)
                    )
                    command = _decide(
                        driven[role],
                        agent_episode_id(f"turnbudget/{name}:{role}", task, t0),
                        derive_seed(seed, f"{name}:{role}", task, t0),
                        told,
                        observations[role]["text"],
                        info,
                    )
                    # (judged as the text it plays: a str subclass's own methods, run inside
                    # the scorer, decided whether it was "optimal", or failed the probe)
                    if not isinstance(command, str):  # (as `probe`: an agent's bug, not a skill)
                        raise TypeError(
                            f"Expect the agent of {role!r} to answer a str, got {brief(command)}"
                        )
                    text = str.__str__(command)
                    parsed = env.world.parse(role, text)
                    hits[role] += parsed is not None and (
                        parsed in optimal or parsed in good or as_planned(parsed)
                    )
                    chance[role] += len(good) / len(admissible)
                    counts[role] += 1
    finally:
        for role, agent in driven.items():
            if agent is not team[role]:
                agent.close()
    out: dict[str, dict[str, float | int | None]] = {}
    for role in probed:
        n = counts[role]
        p = hits[role] / n if n else None
        p_random = chance[role] / n if n else None
        skill = None
        if p is not None and p_random is not None and p_random < 1:
            skill = (p - p_random) / (1 - p_random)
        out[role] = {"n": n, "optimal_rate": p, "random_rate": p_random, "skill": skill}
    return out


class _AsThePlan:
    """Whether a command in ``role``'s place in the plan's round ``commands`` leaves the role
    as close to its goal as the plan's own command does (played on copies of the game): what
    the step records count as optimal beside the oracle's spelling. (``Say White 4545`` and
    ``say 4545`` tell the runner what ``say white 4545`` does; compared as strings, an
    operator that capitalised the oracle's message scored a skill of -1.)"""

    def __init__(self, env: Any, role: str, commands: Mapping[str, str]):
        self.env, self.role, self.commands = env, role, commands
        self.planned = self._after(commands[role])

    def __call__(self, command: str) -> bool:
        if self.planned is None:
            return False
        after = self._after(command)
        return after is not None and after <= self.planned

    def _after(self, command: str) -> int | None:
        trial = copy.deepcopy(self.env)
        try:
            trial.step({**self.commands, self.role: command})
            return trial.distance_to_goal(self.role)
        finally:
            trial.close()


def _view(
    info: dict[str, Any], budget: int, used: int, aware: bool, oracle: Any, executed: str | None
) -> dict[str, Any]:
    """What a role's agent is shown of ``info`` after ``used`` rounds: the budget as
    `TeamTurnBudget` gives it (to an agent that reads it), the command it executed before."""
    shown = {**info, "turn_budget": budget, "turns_used": used, "turns_left": budget - used,
             "rounds_used": used}  # fmt: skip
    return agent_info(shown, show_budget=aware, oracle=oracle, executed=executed)


def _executed(plan: Sequence[Mapping[str, Any]], round_: int, role: str) -> str | None:
    """The command ``role`` played in the plan's round ``round_`` (None before the first)."""
    command = plan[round_].get(role) if round_ >= 0 else None
    return command if isinstance(command, str) else None


def _decide(
    agent: Any,
    episode_id: str,
    seed: int,
    told: Sequence[tuple[str, dict[str, Any], str]],
    observation: str,
    info: dict[str, Any],
) -> Any:
    """The command ``agent`` (an `Agent` or a `BatchAgent`) gives after the forced turns
    ``told`` (observation, view, command played) of a fresh episode."""
    if not hasattr(agent, "act_batch"):
        agent.reset(seed)
        for seen, view, executed in told:
            observe(agent, seen, view, executed)
        return agent.act(observation, info)
    agent.reset_episode(episode_id, seed)
    try:
        for seen, view, executed in told:
            observe_batch(agent, [episode_id], [seen], [view], [executed])
        answer = agent.act_batch([episode_id], [observation], [info])
        return one_each(answer, 1, f"{type(agent).__name__}.act_batch", "commands")[0]
    finally:
        end = getattr(agent, "end_episode", None)
        if end is not None:
            end(episode_id)
