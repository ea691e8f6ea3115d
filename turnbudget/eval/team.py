"""Pass@(K,T) for teams: run one agent per role on a multi-agent game, score team success.

`evaluate_team` is the team counterpart of `turnbudget.eval.evaluate`,
built on the same estimator: per task (game seed), ``n`` independent
episodes, each capped at T rounds of the shared team budget; an episode
succeeds at T when the team's success (every role won in a cooperative
game; the focal role won in a competitive one) came within T rounds.

- **Roles.** ``agents`` maps each role to an agent (an `Agent`, or a
  `BatchAgent` such as an LLM client, asked one episode at a time) or a spec
  of the agent registry (`turnbudget.agents.make_agent`): ``"random"``,
  ``"oracle"``, ``"oracle:EPS"``, ``"house"`` (the game's fixed opponent
  policy, `HouseAgent`), or any registered name. Agents with
  ``needs_oracle`` get ``info["oracle_actions"]`` = the game's
  ``optimal_actions(role)``; those with ``needs_house`` get
  ``info["house_action"]``.
- **Modes.** ``truncate`` runs each episode once at ``max(ts)`` (exact for
  budget-blind agents); ``rerun`` runs it once per T; ``auto`` picks
  ``rerun`` when the budget is revealed or an agent is budget-aware.
- **What agents see** (the rules of `turnbudget.eval.agent_view`, as in
  `evaluate`): the budget keys (``turn_budget``, ``turns_used``,
  ``turns_left``, ``rounds_used``, ``sampled_turn_budget``) only when the
  budget is revealed or that role's agent declares ``budget_aware``, so
  truncate and rerun agree for a budget-blind team; ``info["executed_action"]``
  after the first round (the command that ran for that role: its own, or
  an injected slip's substitute).
- **Determinism.** An episode is fixed by (game, difficulty, task seed,
  repeat, budget): the env is reset with the task seed, each role's agent
  with a seed derived from (``seed``, game, role, task, repeat). Errors
  are drawn per (task seed, repeat, agent, round) (``error_draws=
  "per_repeat"``), so the n attempts at a task are independent while two
  teams on the same (task, repeat) face the same draws: whether an error
  fires for a role at a round and its kind (the concrete effect depends
  on the state); ``error_draws="shared"`` gives every repeat the task's one schedule.
- **Baselines.** `baseline_teams` builds the random team and the
  ε-noisy oracle team (against the house policy in competitive games).
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from turnbudget.agents import make_agent
from turnbudget.agents.house import HOUSE_KEY, HouseAgent
from turnbudget.eval.agent_view import agent_info, budget_visible, executed_action
from turnbudget.eval.estimator import GridEstimate, estimate_from_task_grids, estimate_grid
from turnbudget.eval.plan import ERROR_DRAWS
from turnbudget.multiagent.stack import game_module, make_team

__all__ = ["TeamEvalResult", "baseline_teams", "evaluate_team", "team_agent", "team_step_probe"]

_MODES = ("auto", "truncate", "rerun")


def team_agent(spec: Any) -> Any:
    """An agent from a spec of the agent registry (``"random"``, ``"oracle[:EPS]"``,
    ``"house"``, ``"llm:..."``) or the agent itself."""
    if isinstance(spec, str):
        return make_agent(spec)
    is_agent = callable(getattr(spec, "act", None)) and callable(getattr(spec, "reset", None))
    if not is_agent and not callable(getattr(spec, "act_batch", None)):
        raise ValueError(
            f"Expect an agent (reset(seed), act(obs, info)) or a spec string, got {spec!r}"
        )
    return spec


def baseline_teams(
    game: Any, epsilon: float = 0.1, focal: str | None = None
) -> dict[str, dict[str, Any]]:
    """The baseline teams of a game: ``"random"`` and ``f"oracle-eps{epsilon}"``.

    In a competitive game (one with ``house_action``) the oracle team is the
    ε-noisy best response for ``focal`` (default: the first role) against the
    house policy, and the random team plays ``focal`` at random against the house.
    """
    raw = game_module(game).raw_env
    roles = raw().possible_agents
    if hasattr(raw, "house_action"):
        focal = focal or roles[0]
        house = {r: "house" for r in roles if r != focal}
        return {
            "random": {focal: "random", **house},
            f"oracle-eps{epsilon:g}": {focal: f"oracle:{epsilon}", **house},
        }
    return {
        "random": dict.fromkeys(roles, "random"),
        f"oracle-eps{epsilon:g}": dict.fromkeys(roles, f"oracle:{epsilon}"),
    }


@dataclass
class TeamEvalResult:
    """What `evaluate_team` returns."""

    config: dict[str, Any]
    grid: GridEstimate
    episodes: list[
        dict[str, Any]
    ]  # one per episode: task, rep, budget, success, first success round
    records: list[dict[str, Any]] = field(default_factory=list)  # per-agent records (record=True)

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config, "grid": self.grid.to_dict()}


def _agent_seed(seed: int, game: str, role: str, task: int, rep: int) -> int:
    ss = np.random.SeedSequence([seed, zlib.crc32(f"{game}:{role}".encode()), task, rep])
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def evaluate_team(
    game: Any,
    agents: Mapping[str, Any],
    *,
    difficulty: str = "easy",
    ks: Sequence[int] = (1, 2, 4),
    ts: Sequence[int] = (10, 20, 40),
    n: int | None = None,
    tasks: int | Sequence[int] = 10,
    mode: str = "auto",
    success: str | None = None,
    errors: Any = None,
    reveal: Any = None,
    error_draws: str = "per_repeat",
    record: bool = False,
    seed: int = 0,
    progress: bool = False,
    n_bootstrap: int = 1000,
) -> TeamEvalResult:
    """Evaluate a team (one agent per role) and return its Pass@(K,T) grid.

    Args:
        game: A game module of `turnbudget.multiagent.all_games` or its name (``"vault_v0"``).
        agents: role -> agent or spec, one per role of the game.
        difficulty: ``"easy"``, ``"medium"`` or ``"hard"``.
        ks: the K values (``n`` must be at least ``max(ks)``).
        ts: the team budgets T, in rounds.
        n: episodes per task (default ``max(ks)``).
        tasks: task seeds, or a count m for seeds ``0..m-1``.
        mode: ``auto``, ``truncate`` or ``rerun``.
        success: ``"all"`` (every role wins) or a role; default: ``"all"`` in a
            cooperative game, the first role that is not the house in a competitive one.
        errors: the ``errors=`` setting of `make_team`.
        reveal: the ``reveal=`` setting of `make_team`.
        error_draws: ``"per_repeat"`` (default): errors are drawn per (task
            seed, repeat, agent, round), so the n attempts at a task are
            independent while two teams on the same (task, repeat) face the
            same draws; ``"shared"``: every repeat of a task faces one schedule.
        record: keep every agent's step and episode records in the result.
        seed: base of the agents' per-episode seeds.
        progress: show a progress bar.
        n_bootstrap: bootstrap resamples for the confidence interval.

    Example:
        >>> result = evaluate_team("vault_v0", {"operator": "oracle", "runner": "oracle"},
        ...                        ks=[1], ts=[4, 30], tasks=3, n_bootstrap=0)
        >>> result.grid.mean.tolist()
        [[0.0, 1.0]]
    """
    from tqdm.auto import tqdm

    module = game_module(game)
    name = module.raw_env.metadata["name"]
    roles = module.raw_env().possible_agents
    if set(agents) != set(roles):
        raise ValueError(f"Expect one agent per role {roles}, got {sorted(agents)}")
    team = {role: team_agent(agents[role]) for role in roles}
    ks_t = tuple(sorted({int(k) for k in ks}))
    ts_t = tuple(sorted({int(t) for t in ts}))
    if not ks_t or not ts_t or min(ks_t) < 1 or min(ts_t) < 1:
        raise ValueError(f"Expect positive ks and ts, got ks={ks!r}, ts={ts!r}")
    n_val = max(ks_t) if n is None else int(n)
    if n_val < max(ks_t):
        raise ValueError(
            f"Pass@K needs n >= max(K) episodes per task: got n={n_val}, max(K)={max(ks_t)}"
        )
    task_seeds = tuple(range(tasks)) if isinstance(tasks, int) else tuple(int(s) for s in tasks)
    if not task_seeds or len(set(task_seeds)) != len(task_seeds):
        raise ValueError(f"Expect `tasks` to be a positive count or distinct seeds, got {tasks!r}")
    if mode not in _MODES:
        raise ValueError(f"Expect `mode` to be one of {_MODES}, got {mode!r}")
    if error_draws not in ERROR_DRAWS:
        raise ValueError(f"Expect `error_draws` to be one of {ERROR_DRAWS}, got {error_draws!r}")
    visible = budget_visible(reveal)
    show_budget = {r: visible or bool(getattr(a, "budget_aware", False)) for r, a in team.items()}
    if mode == "auto":
        mode = "rerun" if any(show_budget.values()) else "truncate"
    if success is None:
        house = {r for r, a in team.items() if isinstance(a, HouseAgent)}
        success = (
            "all"
            if not hasattr(module.raw_env, "house_action")
            else next(r for r in roles if r not in house)
        )
    if success != "all" and success not in roles:
        raise ValueError(f"Expect `success` to be 'all' or one of {roles}, got {success!r}")
    winners = roles if success == "all" else [success]
    budgets = (max(ts_t),) if mode == "truncate" else ts_t
    config = {
        "game": name, "difficulty": difficulty, "agents": {r: repr(a) for r, a in team.items()},
        "ks": list(ks_t), "ts": list(ts_t), "n": n_val, "tasks": list(task_seeds), "mode": mode,
        "success": success, "errors": errors, "reveal": reveal, "error_draws": error_draws,
        "seed": seed,
    }  # fmt: skip
    records: list[dict[str, Any]] = []
    env = make_team(module, difficulty=difficulty, budget=max(ts_t), errors=errors, reveal=reveal,
                    record={"callback": records.append} if record else None)  # fmt: skip
    game_env = env.unwrapped
    episodes = []
    total = len(task_seeds) * n_val * len(budgets)
    with tqdm(total=total, desc=f"{name} team", unit="ep", disable=not progress) as bar:
        for task in task_seeds:
            for rep in range(n_val):
                for budget in budgets:
                    first = _run_episode(
                        env, game_env, team, task, rep, budget, winners, name, seed,
                        show_budget, per_repeat=error_draws == "per_repeat",
                    )  # fmt: skip
                    episodes.append({"task": task, "rep": rep, "turn_budget": budget,
                                     "success": first is not None, "first_success_round": first})  # fmt: skip
                    bar.update(1)
    if mode == "truncate":
        by_task: dict[int, list[int | None]] = {t: [] for t in task_seeds}
        for e in episodes:
            by_task[e["task"]].append(e["first_success_round"])
        grid = estimate_grid(by_task, ks_t, ts_t, n_bootstrap=n_bootstrap, seed=seed)
    else:  # one column per T, from the runs at that T
        grids = np.empty((len(task_seeds), len(ks_t), len(ts_t)))
        for i, task in enumerate(task_seeds):
            for j, t in enumerate(ts_t):
                runs = [
                    e["first_success_round"]
                    for e in episodes
                    if e["task"] == task and e["turn_budget"] == t
                ]
                grids[i, :, j] = estimate_grid({task: runs}, ks_t, [t], n_bootstrap=0).mean[:, 0]
        grid = estimate_from_task_grids(
            grids, ks_t, ts_t, n_per_task=n_val, n_bootstrap=n_bootstrap, seed=seed
        )
    env.close()
    return TeamEvalResult(config, grid, episodes, records)


def _run_episode(
    env: Any, game: Any, team: Mapping[str, Any], task: int, rep: int, budget: int,
    winners: Sequence[str], name: str, seed: int, show_budget: Mapping[str, bool],
    per_repeat: bool,
) -> int | None:  # fmt: skip
    """Play one episode; return the round of the team's success, or None."""
    episode_id = f"turnbudget/{name}|seed={task}|rep={rep}|T={budget}"
    options: dict[str, Any] = {"turn_budget": budget, "episode_id": episode_id}
    if per_repeat:  # InjectTeamErrors draws per (task seed, repeat, agent, round)
        options["repeat"] = rep
    observations, infos = env.reset(seed=task, options=options)
    for role, agent in team.items():
        if hasattr(agent, "act_batch"):  # a BatchAgent (an LLM client): one episode at a time
            agent.reset_episode(f"{episode_id}#{role}", _agent_seed(seed, name, role, task, rep))
        else:
            agent.reset(_agent_seed(seed, name, role, task, rep))
    rounds = 0
    result = None
    executed: dict[str, str | None] = dict.fromkeys(team)  # what ran for each role last round
    while env.agents:
        actions = {}
        for role in env.agents:
            agent = team[role]
            oracle = None
            if getattr(agent, "needs_oracle", False):
                oracle = functools.partial(game.optimal_actions, role)
            info = agent_info(
                infos[role],
                show_budget=show_budget[role],
                oracle=oracle,
                executed=executed.get(role),
            )
            if getattr(agent, "needs_house", False):
                info[HOUSE_KEY] = game.house_action(role)
            text = observations[role]["text"]
            if hasattr(agent, "act_batch"):
                actions[role] = agent.act_batch([f"{episode_id}#{role}"], [text], [info])[0]
            else:
                actions[role] = agent.act(text, info)
        observations, _, terminations, _, infos = env.step(actions)
        executed = {r: executed_action(a, infos[r]) for r, a in actions.items() if r in infos}
        rounds += 1
        if any(terminations.values()):
            result = rounds if all(infos[r]["won"] for r in winners) else None
            break
    for role, agent in team.items():
        if hasattr(agent, "end_episode"):
            agent.end_episode(f"{episode_id}#{role}")
    return result


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

    Returns:
        role -> ``{"n", "optimal_rate", "random_rate", "skill"}`` (None when no state was probed).

    Example:
        >>> out = team_step_probe("vault_v0", {"operator": "oracle", "runner": "random"}, tasks=4)
        >>> out["operator"]["skill"], 0 <= out["runner"]["random_rate"] < 1
        (1.0, True)
    """
    module = game_module(game)
    name = module.raw_env.metadata["name"]
    roles = module.raw_env().possible_agents
    if set(agents) != set(roles):
        raise ValueError(f"Expect one agent per role {roles}, got {sorted(agents)}")
    team = {role: team_agent(agents[role]) for role in roles}
    probed = [r for r in roles if not isinstance(team[r], HouseAgent)]
    competitive = hasattr(module.raw_env, "house_action")
    task_seeds = tuple(range(tasks)) if isinstance(tasks, int) else tuple(int(s) for s in tasks)
    hits = dict.fromkeys(probed, 0)
    chance = dict.fromkeys(probed, 0.0)
    counts = dict.fromkeys(probed, 0)
    for task in task_seeds:
        for t0 in t0s:
            env = module.raw_env(difficulty=difficulty)
            observations, infos = env.reset(seed=task)
            focal = probed[0] if competitive else None
            plan = env.joint_plan(focal)
            if t0 >= len(plan):
                continue
            for commands in plan[:t0]:
                observations, _, _, _, infos = env.step(commands)
            for role in probed:
                optimal = set(env.optimal_actions(role))
                admissible = infos[role]["admissible_actions"]
                if not optimal or not admissible or optimal.issuperset(admissible):
                    continue  # no decision to make here: it would only dilute the measure
                agent = team[role]
                oracle = None
                if getattr(agent, "needs_oracle", False):
                    oracle = functools.partial(sorted, optimal)
                info = agent_info(infos[role], show_budget=True, oracle=oracle)  # (no budget here)
                agent.reset(_agent_seed(seed, name, role, task, t0))
                command = agent.act(observations[role]["text"], info)
                parsed = env.world.parse(role, command) if isinstance(command, str) else None
                hits[role] += parsed in optimal
                chance[role] += len(optimal & set(admissible)) / len(admissible)
                counts[role] += 1
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
