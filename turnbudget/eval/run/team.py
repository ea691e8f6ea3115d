"""Pass@(K,T) for teams: run one agent per role on a multi-agent game, score team success.

`evaluate_team` is the team counterpart of `turnbudget.eval.evaluate`, on the
same core: its episodes are programs of the episode driver (`TeamEpisodes`,
one seat per role), so it runs on every backend (``local``, ``pool``,
``ray``), retries episodes that fail to run, writes a run directory
(``run.json``, ``episodes.jsonl``: one record per team episode,
``steps.jsonl``: every member's step records) that a rerun resumes, holds
its lock, and is summarised by the same analysis (`summarize_run`). Per task
(game seed), ``n`` independent episodes, each capped at T rounds of the
shared team budget; an episode succeeds at T when the team's success (every
role won in a cooperative game; the focal role won in a competitive one) came
within T rounds.

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
- **What agents see** (the rules of `turnbudget.eval.run.agent_view`, as in
  `evaluate`): the budget keys (``turn_budget``, ``turns_used``,
  ``turns_left``, ``rounds_used``, ``sampled_turn_budget``) only on the
  rounds the budget shows to that role or when its agent declares
  ``budget_aware``, so truncate and rerun agree for a budget-blind team;
  injected errors as a player meets them (no distances);
  ``info["executed_action"]`` after the first round (the command that ran
  for that role: its own, or an injected slip's substitute). Batch agents
  know an episode by an opaque id with no budget in it.
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

import copy
import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnbudget._checks import (
    MAX_TURN_BUDGET,
    agent_flag,
    brief,
    check_agent,
    check_bool,
    check_label,
    check_seed,
    is_finite,
    is_int,
)
from turnbudget.agents import make_agent
from turnbudget.agents.house import HOUSE_KEY
from turnbudget.eval.analysis import summarize_run
from turnbudget.eval.estimator import GridEstimate, check_n_bootstrap
from turnbudget.eval.run.agent_view import (
    GRANTS,
    agent_episode_id,
    agent_info,
    executed_action,
)
from turnbudget.eval.run.agent_view import grants as _grants
from turnbudget.eval.run.backends import Backend, resolve_backend
from turnbudget.eval.run.driver import Act, AgentSet, Player, Program, start_up
from turnbudget.eval.run.jobs import play_planned
from turnbudget.eval.run.lock import locks_run_dir
from turnbudget.eval.run.plan import (
    ERROR_DRAWS,
    MAX_BUDGETS,
    MAX_EPISODES_PER_TASK,
    EpisodePlan,
    EpisodeSpec,
    GridConfig,
    _agent_repr,
    check_backend_options,
    check_logged_settings,
    check_retries,
    derive_seed,
    positive_ints,
    resolve_mode,
    task_seeds,
)
from turnbudget.eval.run.sealed import driven_form
from turnbudget.multiagent.stack import game_module, make_team
from turnbudget.records import (
    RunPlan,
    dumps_lines,
    feasibility,
)

__all__ = [
    "TeamConfig",
    "TeamEpisodePlan",
    "TeamEpisodes",
    "TeamEvalResult",
    "baseline_teams",
    "evaluate_team",
    "house_roles",
    "plan_team_episodes",
    "planned_team",
    "seat_copies",
    "team_agent",
    "team_of",
    "team_plan",
]

_MODES = ("auto", "truncate", "rerun")


def team_roles(game: Any, agents: Any) -> tuple[Any, str, list[str]]:
    """The game's module, its name and its roles, once ``agents`` is checked to map each role
    to an agent (a spec or an instance)."""
    module = game_module(game)
    roles = module.raw_env().possible_agents
    if not isinstance(agents, Mapping):
        raise ValueError(
            f"Expect `agents` to map each role {roles} to an agent, got {brief(agents)}"
        )
    if set(agents) != set(roles):
        raise ValueError(f"Expect one agent per role {roles}, got {sorted(map(str, agents))}")
    return module, module.raw_env.metadata["name"], roles


def team_agent(spec: Any, name: str = "agent") -> Any:
    """An agent from a spec of the agent registry (``"random"``, ``"oracle[:EPS]"``,
    ``"house"``, ``"llm:..."``) or the agent itself (``TypeError`` naming ``name`` when it is
    neither)."""
    if isinstance(spec, str):
        return make_agent(spec)
    return check_agent(spec, name, also=" (or a spec string of the agent registry)")


def team_of(module: Any, roles: Sequence[str], agents: Mapping[str, Any]) -> list[Any]:
    """The team for ``roles`` (`team_agent` of each role's spec or agent), refused with a
    ``ValueError`` when the game cannot play it: the house (an agent with ``needs_house``)
    in a game without a house policy (every episode failed, and a rerun could not help), or
    every role played by the house (no one left to evaluate)."""
    return planned_team(module, roles, agents)[0]


def planned_team(
    module: Any, roles: Sequence[str], agents: Mapping[str, Any]
) -> tuple[list[Any], tuple[str, ...]]:
    """`team_of`'s team and its `house_roles`, each flag read once: what a run or a probe
    plans follows these reads (a flag read again could say otherwise)."""
    team = [team_agent(agents[role], f"agents[{role!r}]") for role in roles]
    return team, house_roles(module, roles, team)


def house_roles(module: Any, roles: Sequence[str], team: Sequence[Any]) -> tuple[str, ...]:
    """The roles of ``team`` played by the house (their agents declare ``needs_house``), refused
    as `team_of` says. Read once where a run is planned: its record says which roles are
    shown the house's moves, and the engine shows no other role."""
    house = tuple(
        r for r, agent in zip(roles, team, strict=True) if agent_flag(agent, "needs_house")
    )
    name = module.raw_env.metadata["name"]
    if house and not hasattr(module.raw_env, "house_action"):
        raise ValueError(
            f"{name} has no house policy (`house_action`: the competitive games have one), "
            f"but {list(house)} would play it"
        )
    if len(house) == len(roles):
        raise ValueError(f"Expect a role not played by the house in {name}, got {list(house)}")
    return house


def seat_copies(seated: Sequence[Any]) -> list[Any]:
    """``seated`` (one agent a role, as the driver holds them) with a copy in each seat after
    the first of a plain agent in two roles: reset for each seat, the one object played both
    on the last seat's seed. A batch or async agent keeps each role's episode apart by its id."""
    seen: set[int] = set()
    out = []
    for agent in seated:
        if id(agent) in seen and not hasattr(agent, "act_batch"):
            try:
                agent = copy.deepcopy(agent)
            except Exception as exc:  # (a lock, a client: say what to do instead)
                raise ValueError(
                    f"{type(agent).__name__} plays two roles and cannot be copied for the "
                    f"second ({type(exc).__name__}: {exc}): give each role its own agent"
                ) from None
        seen.add(id(agent))
        out.append(agent)
    return out


def baseline_teams(
    game: Any, epsilon: float = 0.1, focal: str | None = None
) -> dict[str, dict[str, Any]]:
    """The baseline teams of a game: ``"random"`` and ``f"oracle-eps{epsilon}"``.

    In a competitive game (one with ``house_action``) the oracle team is the
    ε-noisy best response for ``focal`` (default: the first role) against the
    house policy, and the random team plays ``focal`` at random against the house.
    """
    if not (is_finite(epsilon) and 0 <= epsilon <= 1):  # (epsilon=7 made "oracle:7")
        raise ValueError(f"Expect `epsilon` to be a probability in [0, 1], got {brief(epsilon)}")
    raw = game_module(game).raw_env
    roles = raw().possible_agents
    if focal is not None and focal not in roles:  # (it was played as a role of its own)
        raise ValueError(f"Expect `focal` to be one of {roles}, got {brief(focal)}")
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


@dataclass(frozen=True)
class TeamConfig(GridConfig):
    """Everything that determines a team evaluation's results (``run.json``).

    ``envs`` holds the game's id (``turnbudget/vault_v0``), so the run's
    records and summary read like a one-env evaluation's.
    """

    label: str
    game: str
    envs: tuple[str, ...]
    difficulty: str
    agents: dict[str, str]  # role -> the agent's repr, in the game's role order
    ks: tuple[int, ...]
    ts: tuple[int, ...]
    n: int
    tasks: tuple[int, ...]
    mode: str  # resolved: truncate | rerun
    success: str  # "all" or the role whose win is the team's
    errors: Any = None
    reveal: Any = None
    error_draws: str = "per_repeat"
    seed: int = 0
    record_steps: bool = False
    #: role -> what its agent is shown beyond a player's view, by its own flags
    #: (``needs_oracle``, ``budget_aware``): only the roles that declare any.
    grants: dict[str, list[str]] = field(default_factory=dict)
    #: The roles played by the house (`house_roles`): the only ones shown its moves.
    house: tuple[str, ...] = ()

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(self.agents)

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["house"] = list(self.house)  # (JSON's form, as the other tuples)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TeamConfig:
        """The configuration `to_dict` gave (a team run's ``run.json``), checked: ``ValueError``
        names what is missing or wrong."""
        names = {f for f in cls.__dataclass_fields__}
        if set(d) - names or {"label", "game", "envs", "agents", "ks", "ts", "n", "tasks"} - set(d):
            raise ValueError(f"Expect a team run's fields {sorted(names)}, got {sorted(d)}")
        d = dict(d)
        agents = d["agents"]
        if not isinstance(agents, dict) or not agents:
            raise ValueError(f"Expect `agents` to map roles to agents, got {brief(agents)}")
        if not all(isinstance(x, str) and x for pair in agents.items() for x in pair):
            raise ValueError(f"Expect `agents` to map roles to agents' reprs, got {brief(agents)}")
        # As `EvalConfig.from_dict` checks its own: a report indexes and prints these.
        for key in ("label", "game", "difficulty", "success"):
            if not isinstance(d.get(key), str) or not d[key]:
                raise ValueError(
                    f"Expect `{key}` to be a non-empty string, got {brief(d.get(key))}"
                )
        if d["success"] != "all" and d["success"] not in agents:
            raise ValueError(f"Expect `success` to be 'all' or a role, got {brief(d['success'])}")
        d["envs"] = tuple(d["envs"]) if isinstance(d["envs"], list) else d["envs"]
        if not (
            isinstance(d["envs"], tuple) and len(d["envs"]) == 1 and isinstance(d["envs"][0], str)
        ):
            raise ValueError(f"Expect `envs` to hold the game's id, got {brief(d['envs'])}")
        d["ks"] = positive_ints(d["ks"], "ks")
        d["ts"] = positive_ints(d["ts"], "ts", most=MAX_TURN_BUDGET, count=MAX_BUDGETS)
        d["tasks"] = task_seeds(d["tasks"])
        check_logged_settings(errors=d.get("errors"), reveal=d.get("reveal"))  # (as EvalConfig)
        if not is_int(d["n"]) or d["n"] < max(d["ks"]):
            raise ValueError(f"Expect `n` to be an int >= max(ks), got {brief(d['n'])}")
        if d.get("mode") not in _MODES[1:]:
            raise ValueError(f"Expect `mode` to be one of {_MODES[1:]}, got {brief(d.get('mode'))}")
        if d.get("error_draws", "per_repeat") not in ERROR_DRAWS:
            raise ValueError(
                f"Expect `error_draws` to be one of {ERROR_DRAWS}, got {brief(d['error_draws'])}"
            )
        if "seed" in d and not is_int(d["seed"]):
            raise ValueError(f"Expect `seed` to be an int, got {brief(d['seed'])}")
        if not isinstance(d.get("record_steps", False), bool):
            raise ValueError(
                f"Expect `record_steps` to be true or false, got {brief(d['record_steps'])}"
            )
        grants = d.get("grants", {})
        if not (
            isinstance(grants, dict) and set(grants) <= set(agents)
            and all(isinstance(g, list) and all(isinstance(x, str) and x in GRANTS for x in g)
                    for g in grants.values())
        ):  # fmt: skip
            raise ValueError(f"Expect `grants` to map roles to {list(GRANTS)}, got {brief(grants)}")
        house = d.get("house", [])
        if not (
            isinstance(house, list | tuple) and len(set(house)) == len(house)
            and all(isinstance(r, str) and r in agents for r in house) and len(house) < len(agents)
        ):  # fmt: skip
            raise ValueError(f"Expect `house` to list some of the roles, got {brief(house)}")
        d["house"] = tuple(house)
        return cls(**d)


def team_plan(config: TeamConfig) -> RunPlan:
    """The episodes ``config`` plans, as `turnbudget.records` checks a run's records."""
    return RunPlan(
        config.envs, config.tasks, config.n, config.run_budgets, config.ts, config.record_steps
    )


class TeamEpisodePlan(EpisodePlan):
    """`EpisodePlan` for a team run: every team episode, in `EpisodeSpec`'s order, each made
    when asked for. A spec's agent seed is 0: each role's seed is its own
    (`TeamEpisodes.players`)."""

    def _agent_seed(self, env_id: str, task: int, rep: int) -> int:
        return 0


def plan_team_episodes(config: TeamConfig) -> TeamEpisodePlan:
    """Every team episode ``config`` asks for, in a fixed order (a `TeamEpisodePlan`: a run
    of millions of episodes holds none of them)."""
    return TeamEpisodePlan(config)


def _build(config: TeamConfig, sink: Any) -> Any:
    return make_team(
        config.game, difficulty=config.difficulty, turn_budget=max(config.ts), errors=config.errors,
        reveal=config.reveal,
        record=None if sink is None else {"callback": sink, "record_steps": config.record_steps},
    )  # fmt: skip


class TeamEpisodes:
    """The `Kind` of `evaluate_team`'s runs: one seat per role (the driver holds the team
    as an `AgentSet`, in role order), an `EpisodeSpec` per team episode.

    A job's outcome is ``(episode record, member records)``: the team's episode
    record (its outcome in rounds, every member's episode summary under
    ``roles``) and the members' step records (JSON lines when ``serialize``).
    """

    def __init__(self, agents: Sequence[Any], config: TeamConfig, serialize: bool = False):
        self.config = config
        self.serialize = serialize
        self.roles = config.roles
        # What run.json's `grants` says each role is shown, as read where the run was planned:
        # the flags read again here (in a worker, or a sealed agent's process) handed a
        # member whose flag differed there the oracle's actions, the record saying none.
        # The budget: every round for a budget-aware agent; else on the rounds it shows.
        granted = [config.grants.get(role, ()) for role in self.roles]
        self.show_budget = ["budget_aware" in g for g in granted]
        self.needs_oracle = ["needs_oracle" in g for g in granted]
        self.needs_house = [role in config.house for role in self.roles]
        self.winners = self.roles if config.success == "all" else (config.success,)
        # The team's d*: the game's oracle, exact for a cooperative team and for a race against
        # the house. Against any other rival the race's best response to the house is no bound
        # (a random rival takes fewer copies: wins came below it), so d* is the tour alone.
        # (with success "all" every role is a winner: no house plays a rival, tour alone too)
        against_house = bool(config.house) and all(
            r in config.house for r in self.roles if r not in self.winners
        )
        self._d_star_alone = not against_house and callable(
            getattr(game_module(config.game).raw_env, "distance_alone", None)
        )
        self._envs: dict[int, tuple[Any, list[dict[str, Any]]]] = {}

    def players(self, spec: EpisodeSpec) -> list[Player]:
        game, cfg = self.config.game, self.config
        agent_id = agent_episode_id(spec.env_id, spec.task_seed, spec.rep)  # (no budget in it)
        return [
            Player(i, f"{agent_id}#{role}",
                   derive_seed(cfg.seed, f"{game}:{role}", spec.task_seed, spec.rep))
            for i, role in enumerate(self.roles)
        ]  # fmt: skip

    def _env(self, slot: int) -> tuple[Any, list[dict[str, Any]]]:
        if slot not in self._envs:
            records: list[dict[str, Any]] = []
            self._envs[slot] = (_build(self.config, records.append), records)
        return self._envs[slot]

    def discard(self, spec: EpisodeSpec, slot: int) -> None:
        entry = self._envs.pop(slot, None)
        if entry is not None:
            entry[0].close()

    def close(self) -> None:
        """Close every slot's env (the driver calls it when the run ends), each one even when
        one before it raised; then raise the first error (the driver logs it)."""
        envs, self._envs = [env for env, _ in self._envs.values()], {}
        first: Exception | None = None
        for env in envs:
            try:
                env.close()
            except Exception as exc:
                first = first or exc
        if first is not None:
            raise first

    def program(self, spec: EpisodeSpec, slot: int) -> Program:
        env, records = self._env(slot)
        records.clear()
        game = env.unwrapped
        options: dict[str, Any] = {"turn_budget": spec.turn_budget, "episode_id": spec.episode_id}
        if self.config.error_draws == "per_repeat":  # drawn per (task, repeat, agent, round)
            options["repeat"] = spec.rep
        observations, infos = env.reset(seed=spec.task_seed, options=options)
        d_star = game.distance_alone if self._d_star_alone else game.distance_to_goal
        optimal = [d_star(role) for role in self.winners]  # the team's d*
        optimal_length = None if None in optimal else max(optimal)
        # (the winners' own records say the same d*: theirs was the house-relative one)
        alone = dict(zip(self.winners, optimal, strict=True)) if self._d_star_alone else {}
        seat = {role: i for i, role in enumerate(self.roles)}
        rounds, first = 0, None
        executed: dict[str, str | None] = dict.fromkeys(self.roles)  # what ran last round
        while env.agents:
            actions = {}
            for role in env.agents:
                i = seat[role]
                oracle = (
                    functools.partial(game.optimal_actions, role) if self.needs_oracle[i] else None
                )
                info = agent_info(
                    infos[role], show_budget=self.show_budget[i], oracle=oracle,
                    executed=executed.get(role),
                )  # fmt: skip
                if self.needs_house[i]:
                    info[HOUSE_KEY] = game.house_action(role)
                command, _ = yield Act(i, observations[role]["text"], info)
                # An agent's bug fails the episode, as `evaluate`'s env refuses a non-str: the
                # game took it as a spent turn in process, and a sealed agent's bytes failed
                # (not JSON), so one agent scored differently sealed or not.
                if not isinstance(command, str):
                    raise TypeError(
                        f"Expect the agent of {role!r} to answer a str, got {brief(command)}"
                    )
                actions[role] = command
            observations, _, terminations, _, infos = env.step(actions)
            executed = {r: executed_action(a, infos[r]) for r, a in actions.items() if r in infos}
            rounds += 1
            if any(terminations.values()):
                first = rounds if all(infos[r]["won"] for r in self.winners) else None
                break
        return self._collect(spec, rounds, first, optimal_length, records, alone)

    def _collect(
        self, spec: EpisodeSpec, rounds: int, first: int | None, optimal_length: int | None,
        records: list[dict[str, Any]], alone: Mapping[str, int | None],
    ) -> tuple[dict[str, Any], Any]:  # fmt: skip
        for record in records:  # a per-env-object counter: it depends on scheduling
            record.pop("episode_index", None)
        episode: dict[str, Any] = {
            "record": "episode", "episode_id": spec.episode_id, "env_id": spec.env_id,
            "seed": spec.task_seed, "rep": spec.rep, "turn_budget": spec.turn_budget,
            "success": first is not None, "first_success_turn": first, "turns_used": rounds,
            "initial_distance": optimal_length,
            **feasibility(optimal_length, spec.turn_budget, first),
        }  # fmt: skip
        members = {r["agent"]: r for r in records if r["record"] == "episode"}
        for role, d_star in alone.items():
            if role in members:
                member = members[role]
                member["initial_distance"] = d_star
                member.update(
                    feasibility(d_star, member["turn_budget"], member["first_success_turn"])
                )
        if members:
            episode["roles"] = {role: members[role] for role in self.roles if role in members}
        if self.config.house:  # (its turns are not the team's: the step columns leave them out)
            episode["house"] = list(self.config.house)
        steps = [r for r in records if r["record"] == "step"]
        records.clear()
        if self.serialize:
            return episode, dumps_lines(steps)
        return episode, list(members.values()) + steps


@dataclass
class TeamEvalResult:
    """What `evaluate_team` returns.

    Attributes:
        config: the run's configuration (``run.json``).
        grid: the team's Pass@(K,T) (rerun grid when run, else truncate).
        episodes: one record per team episode, sorted by episode id.
        summary: the analysis of `turnbudget.eval.analysis.summarize_run`.
        records: every member's records (``record=True`` and no ``out``).
        out: the run directory, if any.
        n_run: episodes run by this call (the rest were resumed).
    """

    config: dict[str, Any]
    grid: GridEstimate
    episodes: list[dict[str, Any]]
    summary: dict[str, Any] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    out: Path | None = None
    n_run: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config, "grid": self.grid.to_dict()}

    def __repr__(self) -> str:  # (the dataclass's own printed every episode record)
        label = self.config.get("label") if isinstance(self.config, Mapping) else None
        return (
            f"TeamEvalResult(label={label!r}, episodes={len(self.episodes)}, "
            f"n_run={self.n_run}, records in memory={len(self.records)}, out={self.out!r})"
        )


@locks_run_dir  # one evaluation per output directory, its own
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
    label: str | None = None,
    workers: int = 1,
    backend: str | Backend | None = None,
    backend_options: dict[str, Any] | None = None,
    timeout: float | None = None,
    retries: int = 2,
    out: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    progress: bool = False,
    n_bootstrap: int = 1000,
    sealed: bool = False,
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
        record: keep every member's step and episode records (in ``records``
            without ``out``; in the run directory's ``steps.jsonl`` and under each
            episode record's ``roles`` with it).
        seed: base of the agents' per-episode seeds (an int >= 0).
        label: the run's name in reports (default: the game's name): printable text of
            at most 128 bytes of UTF-8 (`turnbudget._checks.check_label`).
        workers: with ``backend``, ``backend_options``, ``timeout`` and ``retries``,
            where and how the episodes run, as in `turnbudget.eval.evaluate`; every
            agent must be picklable for more than one worker. Results do not depend on them.
        backend: see ``workers``.
        backend_options: see ``workers``.
        timeout: see ``workers``.
        retries: see ``workers``.
        out: a run directory (``run.json``, ``episodes.jsonl``, ``steps.jsonl``); an
            existing run there with the same settings resumes.
        overwrite: discard a previous run in ``out`` instead of resuming it.
        progress: show a progress bar.
        n_bootstrap: bootstrap resamples for the confidence interval (at most
            `turnbudget.eval.estimator.MAX_BOOTSTRAP`).
        sealed: run each role's agent in a process of its own that receives only
            its view of each round (`turnbudget.eval.run.sealed.seal`), so it
            cannot reach this process's game or its oracle (it could rebuild a
            game it identified: keep ``seed`` secret for a leaderboard, see
            docs/guides/guarantees.md). Results do not depend on it for agents
            that play by the rules.

    Example:
        >>> result = evaluate_team("vault_v0", {"operator": "oracle", "runner": "oracle"},
        ...                        ks=[1], ts=[4, 30], tasks=3, n_bootstrap=0)
        >>> result.grid.mean.tolist()
        [[0.0, 1.0]]
    """
    # Every argument is checked before anything runs or is written (overwrite deletes).
    record = check_bool(record, "record")
    overwrite = check_bool(overwrite, "overwrite")
    progress = check_bool(progress, "progress")
    sealed = check_bool(sealed, "sealed")
    n_bootstrap = check_n_bootstrap(n_bootstrap)
    backend_options = check_backend_options(backend_options)
    config, team = _make_config(
        game, agents, difficulty=difficulty, ks=ks, ts=ts, n=n, tasks=tasks, mode=mode,
        success=success, errors=errors, reveal=reveal, error_draws=error_draws,
        record=record or out is not None, seed=seed, label=label,
    )  # fmt: skip
    retries = check_retries(retries)
    backend = resolve_backend(backend, workers, backend_options, timeout)
    _build(config, None).close()  # a bad setting fails before any episode
    for agent in {id(a): a for a in team}.values():  # (one agent in two roles: asked once)
        start_up(agent, "preflight")  # (an LLM agent's server: asked once, before any episode)
    driven: list[Any] = []  # an async (LLM) agent: episodes in flight
    try:
        driven.extend(driven_form(a, sealed=sealed) for a in team)
        played = play_planned(
            backend, AgentSet(tuple(seat_copies(driven))), config, plan_team_episodes(config),
            kind=TeamEpisodes, plan=team_plan(config), out=out, overwrite=overwrite,
            check_config=TeamConfig.from_dict, retries=retries, progress=progress,
            desc=f"{config.label} team",
        )  # fmt: skip
    finally:
        for given, wrapper in zip(team, driven, strict=False):
            if wrapper is not given:
                wrapper.close()
    summary = summarize_run(config, played.stream(), n_bootstrap=n_bootstrap, checked=True)
    grid = GridEstimate.from_dict(summary["groups"][config.envs[0]][config.mode])
    records = played.records if record else []
    return TeamEvalResult(
        config.to_dict(), grid, played.episodes, summary, records, played.out, played.n_run
    )


def _make_config(
    game: Any, agents: Mapping[str, Any], *, difficulty: str, ks: Sequence[int],
    ts: Sequence[int], n: int | None, tasks: Any, mode: str, success: str | None, errors: Any,
    reveal: Any, error_draws: str, record: bool, seed: int, label: str | None,
) -> tuple[TeamConfig, list[Any]]:  # fmt: skip
    """The run's `TeamConfig` and its team (one agent per role, in role order)."""
    module, name, roles = team_roles(game, agents)
    # as the game reads it ("Easy" is "easy"): a rerun that spelled it otherwise was refused
    # as another configuration
    difficulty = module.raw_env.world_class(difficulty).difficulty
    seed = check_seed(seed)
    if label is not None:
        check_label(label)
    # Every flag read once, here: the run's record, its mode and what the engine shows each
    # role follow these reads (a flag read again could say otherwise, as `grants` explains).
    team, house = planned_team(module, roles, agents)
    granted = {r: g for r, a in zip(roles, team, strict=True) if (g := _grants(a))}
    ks_t = positive_ints(ks, "ks", most=MAX_EPISODES_PER_TASK)
    ts_t = positive_ints(ts, "ts", most=MAX_TURN_BUDGET, count=MAX_BUDGETS)
    n_val = max(ks_t) if n is None else n
    if is_int(n_val) and n_val > MAX_EPISODES_PER_TASK:
        raise ValueError(
            f"Expect `n` to be a positive int (at most {MAX_EPISODES_PER_TASK:,}), got {brief(n)}"
        )
    if not is_int(n_val) or n_val < 1:  # (as `evaluate` takes it: a NumPy int is an int)
        raise ValueError(
            f"Expect `n` to be a positive int (at most {MAX_EPISODES_PER_TASK:,}), got {brief(n)}"
        )
    if n_val < max(ks_t):
        raise ValueError(
            f"Pass@K needs n >= max(K) episodes per task: got n={int(n_val)}, max(K)={max(ks_t)}"
        )
    # (str only: a NumPy array of one name passed `in`, then failed every episode, or hashing)
    if not isinstance(mode, str) or mode not in _MODES:
        raise ValueError(f"Expect `mode` to be one of {_MODES}, got {brief(mode)}")
    if not isinstance(error_draws, str) or error_draws not in ERROR_DRAWS:
        raise ValueError(
            f"Expect `error_draws` to be one of {ERROR_DRAWS}, got {brief(error_draws)}"
        )
    check_logged_settings(reveal=reveal, errors=errors)
    aware = [role for role, grants in granted.items() if "budget_aware" in grants]
    mode = resolve_mode(
        mode, reveal, f"{aware[0]} is budget_aware" if aware else None, both="both" in _MODES
    )
    if success is None:
        competitive = hasattr(module.raw_env, "house_action")
        success = next(r for r in roles if r not in house) if competitive else "all"
    if not isinstance(success, str) or (success != "all" and success not in roles):
        raise ValueError(f"Expect `success` to be 'all' or one of {roles}, got {brief(success)}")
    if success in house or (success == "all" and house):
        raise ValueError(
            f"Expect `success` to name a role not played by the house, got {success!r} with "
            f"{', '.join(house)} played by the house: the team would be scored by the house's wins"
        )
    config = TeamConfig(
        label=label or name, game=name, envs=(f"turnbudget/{name}",), difficulty=difficulty,
        agents={r: _agent_repr(a) for r, a in zip(roles, team, strict=True)}, ks=ks_t, ts=ts_t,
        n=int(n_val), tasks=task_seeds(tasks), mode=mode, success=success, errors=errors,
        reveal=reveal, error_draws=error_draws, seed=seed, record_steps=record,
        grants=granted, house=house,
    )  # fmt: skip
    return config, team
