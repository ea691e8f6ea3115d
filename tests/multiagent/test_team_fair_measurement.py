"""Team evaluation under issue 9's measurement rules: independent attempts with paired teams,
a hidden budget that stays hidden, and the executed command handed back to every role."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from turnbudget.agents import BUDGET_KEYS, EXECUTED_KEY, OracleAgent, RandomAgent
from turnbudget.eval import evaluate_team
from turnbudget.multiagent.stack import make_team

ROLES = ("operator", "runner")


def _schedules(result: Any) -> dict[tuple[int, int, str], list[str | None]]:
    """(task, repeat, role) -> the kind of error at each round (None when quiet)."""
    steps: dict[tuple[int, int, str], list[dict[str, Any]]] = defaultdict(list)
    for r in result.records:
        if r["record"] == "step":
            fields = dict(p.split("=") for p in r["team_episode_id"].split("|")[1:])
            steps[(int(fields["seed"]), int(fields["rep"]), r["agent"])].append(r)
    return {
        key: [(s["injected_error"] or {}).get("kind") for s in sorted(v, key=lambda s: s["turn"])]
        for key, v in steps.items()
    }


def test_repeats_are_independent_and_teams_are_paired():
    kwargs = dict(difficulty="medium", ks=[1], ts=[30], n=4, tasks=3, errors=0.3,
                  record=True, n_bootstrap=0)  # fmt: skip
    random_run = evaluate_team("vault_v0", dict.fromkeys(ROLES, "random"), **kwargs)
    oracle_run = evaluate_team("vault_v0", dict.fromkeys(ROLES, "oracle:0.3"), **kwargs)
    shared = evaluate_team(
        "vault_v0", dict.fromkeys(ROLES, "random"), error_draws="shared", **kwargs
    )
    assert random_run.config["error_draws"] == "per_repeat"
    a, b, s = _schedules(random_run), _schedules(oracle_run), _schedules(shared)
    for task in range(3):
        for role in ROLES:
            per_repeat = {tuple(a[(task, r, role)]) for r in range(4)}
            assert len(per_repeat) == 4  # each attempt draws its own errors
            assert len({tuple(s[(task, r, role)]) for r in range(4)}) == 1  # the shared option
            for r in range(4):  # same (task, repeat): the same fired/kind sequence for both teams
                x, y = a[(task, r, role)], b[(task, r, role)]
                n = min(len(x), len(y))
                assert n > 5 and x[:n] == y[:n]
        # The two roles of one episode draw apart from each other.
        assert a[(task, 0, "operator")] != a[(task, 0, "runner")]
    with pytest.raises(ValueError, match="error_draws"):
        evaluate_team("vault_v0", dict.fromkeys(ROLES, "random"), error_draws="per_task")


class TurnsLeftReader:
    """Reads info["turns_left"] without declaring budget_aware: dawdles while it sees many turns."""

    needs_oracle = True

    def __init__(self, budget_aware: bool = False) -> None:
        self.budget_aware = budget_aware
        self.seen: set[str] = set()
        self._random = RandomAgent()

    def reset(self, seed: int) -> None:
        self._random.reset(seed)
        self.turn = 0

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        self.seen |= set(info) & set(BUDGET_KEYS)
        if self.turn:
            assert EXECUTED_KEY in info
        self.turn += 1
        if info.get("turns_left", 10**6) > 8:
            return self._random.act(observation, info)
        return info["oracle_actions"][0]


def test_hidden_budget_reaches_no_role_and_truncate_equals_rerun():
    reader = TurnsLeftReader()
    team = {"operator": "oracle", "runner": reader}
    kwargs = dict(ks=[1, 2], ts=[10, 16, 30], n=2, tasks=5, n_bootstrap=0)
    truncate = evaluate_team("vault_v0", team, mode="truncate", **kwargs)
    rerun = evaluate_team("vault_v0", team, mode="rerun", **kwargs)
    assert reader.seen == set()
    assert truncate.grid.mean.tolist() == rerun.grid.mean.tolist()
    assert evaluate_team("vault_v0", team, **kwargs).config["mode"] == "truncate"
    # Revealed, the role sees the team budget (and then truncate and rerun may differ).
    seeing = TurnsLeftReader()
    revealed = evaluate_team(
        "vault_v0", {"operator": "oracle", "runner": seeing}, reveal="always", **kwargs
    )
    assert revealed.config["mode"] == "rerun"
    assert seeing.seen == {"turn_budget", "turns_used", "turns_left", "rounds_used"}
    # A role that declares budget_aware sees it alone; the other role's agent does not.
    aware, blind = TurnsLeftReader(budget_aware=True), TurnsLeftReader()
    declared = evaluate_team("vault_v0", {"operator": blind, "runner": aware}, **kwargs)
    assert declared.config["mode"] == "rerun"
    assert aware.seen == {"turn_budget", "turns_used", "turns_left", "rounds_used"}
    assert blind.seen == set()
    # The env's own info is unchanged for RL users.
    env = make_team("vault_v0", turn_budget=10)
    assert {"turn_budget", "turns_used", "turns_left", "rounds_used"} <= set(
        env.reset(seed=0)[1]["runner"]
    )


class ExecutedChecker:
    """Plays the oracle's command (ε = 0.2) and checks what the engine says was executed."""

    needs_oracle = True

    def __init__(self) -> None:
        self.checked = self.slipped = 0
        self.mismatches: list[tuple[Any, Any]] = []
        self._oracle = OracleAgent(0.2)

    def reset(self, seed: int) -> None:
        self._oracle.reset(seed)
        self.last: str | None = None

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        if self.last is None:
            assert EXECUTED_KEY not in info  # nothing ran yet this episode
        else:
            event = info.get("injected_error") or {}
            expected = self.last
            if event.get("kind") == "slip" and event.get("applied"):
                expected = event["replaced_action"]
                self.slipped += 1
            self.checked += 1
            if info[EXECUTED_KEY] != expected:
                self.mismatches.append((info[EXECUTED_KEY], expected))
        self.last = self._oracle.act(observation, info)
        return self.last


def test_team_agents_are_told_the_command_a_slip_ran_for_them():
    operator, runner = ExecutedChecker(), ExecutedChecker()
    evaluate_team("vault_v0", {"operator": operator, "runner": runner}, difficulty="medium",
                  ks=[1], ts=[40], n=2, tasks=4, errors={"rate": 0.4, "kinds": ["slip"]},
                  n_bootstrap=0)  # fmt: skip
    for agent in (operator, runner):
        assert agent.checked > 50 and not agent.mismatches
    assert (
        runner.slipped > 20
    )  # (the operator's slips rarely apply: few of its commands are harmless)


def test_pass_at_k_with_errors_matches_k_independent_attempts():
    """Pass@8 from n = 16 repeats agrees with direct simulation of batches of 8 fresh team attempts."""
    t, k, tasks, rate = 7, 8, 30, 0.2
    team = dict.fromkeys(ROLES, "oracle:0.3")
    kwargs = dict(difficulty="easy", ks=[1, k], ts=[t], tasks=tasks, errors=rate)
    result = evaluate_team("vault_v0", team, n=2 * k, n_bootstrap=400, **kwargs)
    estimate, low, high = result.grid.mean[1, 0], result.grid.low[1, 0], result.grid.high[1, 0]

    env = make_team("vault_v0", difficulty="easy", turn_budget=t, errors=rate)
    game = env.unwrapped
    agents = {role: OracleAgent(0.3) for role in ROLES}
    batches = 6
    rng = np.random.default_rng(12345)
    hits = 0
    for task in range(tasks):
        for _ in range(batches):
            won_any = False
            for _ in range(k):  # K attempts, each with fresh errors and fresh agent seeds
                repeat = int(rng.integers(10**6, 10**9))
                _, infos = env.reset(seed=task, options={"repeat": repeat})
                for agent in agents.values():
                    agent.reset(int(rng.integers(2**31)))
                while env.agents:
                    actions = {
                        r: agents[r].act(
                            "", {**infos[r], "oracle_actions": game.optimal_actions(r)}
                        )
                        for r in env.agents
                    }
                    _, _, terminations, _, infos = env.step(actions)
                    if any(terminations.values()):
                        won_any |= all(infos[r]["won"] for r in ROLES)
                        break
            hits += won_any
    simulated = hits / (tasks * batches)
    assert 0.2 < estimate < 0.9  # the budget binds, and K attempts help
    assert low <= simulated <= high, (simulated, estimate, low, high)
    assert abs(simulated - estimate) < 0.12

    shared = evaluate_team("vault_v0", team, n=k, error_draws="shared", n_bootstrap=0, **kwargs)
    assert shared.grid.mean[1, 0] < estimate  # one schedule for all attempts: Pass@8 biased low


def test_team_error_wrapper_takes_the_repeat_option():
    env = make_team("vault_v0", turn_budget=30, errors=0.5)

    def fired(**options: Any) -> list[tuple[str, str | None]]:
        env.reset(seed=3, options=options or None)
        out = []
        while env.agents:
            _, _, _, _, infos = env.step({a: "wait" for a in env.agents})
            out += [(a, (i.get("injected_error") or {}).get("kind")) for a, i in infos.items()]
        return out

    assert fired(repeat=0) == fired(repeat=0) != fired(repeat=1)
    assert fired() == fired()  # without the option: the task's one schedule
    with pytest.raises(ValueError, match="repeat"):
        env.reset(seed=3, options={"repeat": -1})


@pytest.mark.parametrize("difficulty", ["easy", "medium"])
def test_setbacks_never_make_an_optimal_team_command_invalid(difficulty):
    """A setback (either role's) fires before the round's commands run: each command is judged
    on the state its agent saw, so an oracle team has no invalid command (the operator's
    setback shuts a door the runner was about to walk through)."""
    result = evaluate_team(
        "vault_v0", dict.fromkeys(ROLES, "oracle"), difficulty=difficulty, ks=[1], ts=[60], n=1,
        tasks=30, errors={"rate": 0.3, "kinds": ["setback"]}, record=True, n_bootstrap=0,
    )  # fmt: skip
    steps = [r for r in result.records if r["record"] == "step"]
    members = [r for r in result.records if r["record"] == "episode"]
    assert sum(bool(s["injected_error"]) for s in steps) > 100
    assert sum(m["n_invalid"] for m in members) == 0
    assert all(s["valid_action"] and s["optimal"] for s in steps)


def test_team_agents_know_episodes_by_ids_without_the_budget():
    from turnbudget.eval.run.team import TeamEpisodes, _make_config, plan_team_episodes

    config, team = _make_config(
        "vault_v0", dict.fromkeys(ROLES, "random"), difficulty="easy", ks=[1], ts=[6, 12], n=1,
        tasks=2, mode="rerun", errors=None, reveal=None, seed=0, label=None, record=False,
        success=None, error_draws="per_repeat",
    )  # fmt: skip
    kind = TeamEpisodes(team, config)
    specs = plan_team_episodes(config)
    ids = {spec.turn_budget: [] for spec in specs}
    for spec in specs:
        players = kind.players(spec)
        assert [p.episode_id.rpartition("#")[2] for p in players] == list(ROLES)
        assert all("T=" not in p.episode_id and "seed" not in p.episode_id for p in players)
        ids[spec.turn_budget].append([p.episode_id for p in players])
    assert ids[6] == ids[12]  # one task and repeat at two budgets: the same ids


class TurnLogger(TurnsLeftReader):
    """Logs, per round, whether its info held budget keys."""

    def reset(self, seed: int) -> None:
        super().reset(seed)
        self.rounds: list[bool] = []
        self.log = getattr(self, "log", [])
        self.log.append(self.rounds)

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        self.rounds.append(bool(set(info) & set(BUDGET_KEYS)))
        return super().act(observation, info)


def test_a_team_budget_shown_in_the_last_k_rounds_reaches_a_role_only_then():
    runner = TurnLogger()
    evaluate_team("vault_v0", {"operator": "random", "runner": runner}, ks=[1], ts=[12], n=1,
                  tasks=4, reveal="final=2", n_bootstrap=0)  # fmt: skip
    assert any(len(rounds) == 12 for rounds in runner.log)
    for rounds in runner.log:
        assert rounds == [12 - r <= 2 for r in range(len(rounds))]


def test_an_agent_is_not_given_its_partner_s_error():
    """Each agent's command was judged by the distance after the whole round: an operator who
    waited while the runner detoured was given a self-made error (Vault's operator has no
    command that can raise the distance), and one mistake counted as two. Its own command
    is judged with the best its partner could have played: wasted, not an error; the rise
    is still an error the team recovers from."""
    env = make_team("vault_v0", record=True)
    env.reset(seed=1)
    game = env.unwrapped
    env.step({"operator": "wait", "runner": "go west"})
    while env.agents:
        env.step({a: game.optimal_actions(a)[0] for a in env.agents})
    first = {r["agent"]: r for r in env.records if r["record"] == "step" and r["turn"] == 1}
    operator, runner = first["operator"], first["runner"]
    assert (operator["distance_before"], operator["distance_after"]) == (7, 8)
    assert (operator["error_self"], operator["wasted"], operator["command_effect"]) == (
        False, True, 0,
    )  # fmt: skip
    assert (runner["error_self"], runner["command_effect"]) == (True, 1)
    assert operator["errors_opened"] == runner["errors_opened"] == 1
    # A random team: the operator's commands never raise the distance on their own, whatever
    # errors the runner meets (a round with the runner's slip judged the operator by the
    # team's rise: its wait was a self-made error).
    rng = np.random.default_rng(0)
    for seed, errors in itertools.product(range(20), (None, 0.3)):
        env = make_team("vault_v0", record=True, difficulty="medium", errors=errors)
        _, infos = env.reset(seed=seed)
        while env.agents:
            commands = {a: infos[a]["admissible_actions"] for a in env.agents}
            _, _, _, _, infos = env.step(
                {a: options[rng.integers(len(options))] for a, options in commands.items()}
            )
        mine = [r for r in env.records if r["record"] == "step" and r["agent"] == "operator"]
        assert not any(r["error_self"] for r in mine), seed


def test_a_step_not_judged_is_no_self_inflicted_error():
    """Race, seed 22, round 33: player_1 could not win going in (its step not judged), its
    own setback raised the distance the house's setback had opened, and its ``look`` was
    counted its own error (OracleAgent(0), whom no schedule may blame)."""
    result = evaluate_team(
        "race_v0", {"player_0": "house", "player_1": "oracle"}, difficulty="medium",
        ks=[1], ts=[128], n=1, tasks=[22], errors=0.4, n_bootstrap=0, record=True,
    )  # fmt: skip
    steps = [r for r in result.records if r["record"] == "step" and r["agent"] == "player_1"]
    unjudged = [s for s in steps if s["optimal"] is None]
    assert any(s["distance_injected"] is not None for s in unjudged)  # (the case above)
    assert not any(s["error_self"] for s in steps)
    assert result.episodes[0]["roles"]["player_1"]["n_errors_self"] == 0
