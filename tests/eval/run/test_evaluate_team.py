"""Pass@(K,T) for teams: oracle and random baselines, modes, determinism, checks."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from turnbudget.agents.house import HouseAgent
from turnbudget.eval import evaluate_team
from turnbudget.eval.probes.team import team_step_probe
from turnbudget.eval.run.team import baseline_teams
from turnbudget.multiagent import race_v0, vault_v0


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_oracle_teams_pass_within_the_default_budget(difficulty):
    budget = vault_v0.DEFAULT_BUDGETS[difficulty]
    teams = {
        "vault_v0": {"operator": "oracle", "runner": "oracle"},
        "race_v0": {"player_0": "oracle", "player_1": "house"},
    }
    for game, team in teams.items():
        result = evaluate_team(
            game, team, difficulty=difficulty, ks=[1], ts=[budget], tasks=5, n_bootstrap=0
        )
        assert result.grid.mean.tolist() == [[1.0]], game


def test_random_team_is_a_floor_and_the_budget_binds():
    teams = baseline_teams("vault_v0", epsilon=0.1)
    assert set(teams) == {"random", "oracle-eps0.1"}
    grids = {
        label: evaluate_team(
            "vault_v0",
            team,
            difficulty="medium",
            ks=[1, 2],
            ts=[20, 64],
            n=2,
            tasks=6,
            n_bootstrap=0,
        ).grid.mean
        for label, team in teams.items()
    }
    assert grids["random"][0, 1] < grids["oracle-eps0.1"][0, 1]
    assert grids["oracle-eps0.1"][0, 0] <= grids["oracle-eps0.1"][0, 1]  # more rounds never hurt


def test_race_baselines_play_against_the_house():
    teams = baseline_teams(race_v0, epsilon=0.0, focal="player_1")
    assert teams["oracle-eps0"] == {"player_1": "oracle:0.0", "player_0": "house"}
    result = evaluate_team(race_v0, teams["oracle-eps0"], ks=[1], ts=[30], tasks=4, n_bootstrap=0)
    assert result.config["success"] == "player_1" and result.grid.mean.tolist() == [[1.0]]


def test_rerun_mode_with_a_revealed_budget_and_errors_is_deterministic():
    kwargs = dict(difficulty="easy", ks=[1, 2], ts=[6, 12], n=2, tasks=3, reveal="always",
                  errors=0.2, n_bootstrap=50, record=True)  # fmt: skip
    team = {"operator": "oracle:0.2", "runner": "oracle:0.2"}
    first = evaluate_team("vault_v0", team, **kwargs)
    second = evaluate_team("vault_v0", team, **kwargs)
    assert first.config["mode"] == "rerun"
    assert {e["turn_budget"] for e in first.episodes} == {6, 12}
    assert first.episodes == second.episodes
    assert first.grid.to_dict() == second.grid.to_dict()
    assert any(r.get("agent") == "runner" and r["record"] == "episode" for r in first.records)


def test_bad_team_specs():
    with pytest.raises(ValueError, match="one agent per role"):
        evaluate_team("vault_v0", {"runner": "oracle"})
    with pytest.raises(ValueError, match="Unknown agent"):
        evaluate_team("vault_v0", {"operator": "genius", "runner": "oracle"})
    with pytest.raises(ValueError, match="n >= max"):
        evaluate_team("vault_v0", {"operator": "random", "runner": "random"}, ks=[4], n=2)
    with pytest.raises(KeyError, match="house_action"):
        HouseAgent().act("", {})


@pytest.mark.parametrize(
    ("key", "bad"),
    [(key, bad) for key, name in [("mode", "rerun"), ("success", "runner"),
                                  ("error_draws", "shared")]
     for bad in (np.array([name]), "x" * 10**6)],
)  # fmt: skip
def test_team_settings_that_are_no_name_are_refused_briefly(key, bad):
    """A NumPy array of one name passed the ``in`` check: ``success`` failed every episode (an
    unhashable array), ``mode`` raised "unhashable type", ``error_draws`` went into the run's
    configuration; and a hostile string was quoted whole (a 1 MB message)."""
    with pytest.raises(ValueError, match=f"Expect `{key}` to be") as caught:
        evaluate_team(
            "vault_v0", {"operator": "oracle", "runner": "oracle"}, ks=[1], ts=[30], tasks=1,
            retries=0, n_bootstrap=0, **{key: bad},
        )  # fmt: skip
    assert len(str(caught.value)) < 300


class _EchoBatchAgent:
    """A BatchAgent that plays the first admissible command (the shape of an LLM client)."""

    max_batch_size = 4

    def __init__(self) -> None:
        self.live: set[str] = set()
        self.ended = 0

    def reset_episode(self, episode_id: str, seed: int) -> None:
        self.live.add(episode_id)

    def act_batch(self, episode_ids, observations, infos):
        assert set(episode_ids) <= self.live and all(isinstance(o, str) for o in observations)
        return [(i["admissible_actions"] or ["wait"])[0] for i in infos]

    def end_episode(self, episode_id: str) -> None:
        self.live.discard(episode_id)
        self.ended += 1


def test_batch_agents_play_a_role():
    agent = _EchoBatchAgent()
    result = evaluate_team("vault_v0", {"operator": "oracle", "runner": agent}, ks=[1], ts=[30],
                           tasks=3, n_bootstrap=0)  # fmt: skip
    assert len(result.episodes) == 3 and agent.ended == 3 and not agent.live


def test_step_probe_scores_the_oracle_at_one_and_chance_at_zero():
    oracle = team_step_probe("race_v0", {"player_0": "oracle", "player_1": "house"},
                             difficulty="medium", tasks=8)  # fmt: skip
    assert set(oracle) == {"player_0"}  # the house is not probed
    assert oracle["player_0"]["n"] > 0 and oracle["player_0"]["skill"] == 1.0
    random = team_step_probe("vault_v0", {"operator": "random", "runner": "random"},
                             difficulty="hard", tasks=20, t0s=(0, 5, 10, 20))  # fmt: skip
    runner = random["runner"]
    assert 0 < runner["random_rate"] < 1
    assert abs(runner["skill"]) < 0.35  # chance level, up to sampling noise
    again = team_step_probe("vault_v0", {"operator": "random", "runner": "random"},
                            difficulty="hard", tasks=20, t0s=(0, 5, 10, 20))  # fmt: skip
    assert again == random  # seeded


class _BatchRandom:
    """A BatchAgent that picks uniformly among the admissible commands, a generator per
    episode (seeded by ``reset_episode``)."""

    name = "batch-random"

    def __init__(self, width: int = 4) -> None:
        import random

        self.max_batch_size, self._random, self.rngs = width, random.Random, {}

    def reset_episode(self, episode_id: str, seed: int) -> None:
        self.rngs[episode_id] = self._random(seed)

    def act_batch(self, episode_ids, observations, infos):
        return [
            self.rngs[e].choice(sorted(i["admissible_actions"]))
            for e, i in zip(episode_ids, infos, strict=True)
        ]

    def end_episode(self, episode_id: str) -> None:
        self.rngs.pop(episode_id, None)

    def __repr__(self) -> str:
        return "BatchRandom()"


def test_a_plain_agent_beside_a_batch_agent_plays_one_episode_at_a_time():
    """With several episodes in flight for the batch agent, the driver reset the one plain
    agent (a stateful "random") for each of them and their turns interleaved: the steps
    depended on ``max_batch_size`` and on the worker count."""

    def steps(width: int, workers: int = 1) -> list[tuple]:
        result = evaluate_team(
            "vault_v0", {"operator": _BatchRandom(width), "runner": "random"}, ks=[1], ts=[30],
            tasks=4, n=2, n_bootstrap=0, record=True, workers=workers,
        )  # fmt: skip
        return sorted(
            (r["team_episode_id"], r["turn"], r["agent"], r["action"])
            for r in result.records
            if r["record"] == "step"
        )

    one = steps(1)
    assert any(agent == "runner" for _, _, agent, _ in one)
    assert steps(4) == one and steps(4, workers=2) == one


def test_one_plain_agent_in_two_roles_plays_as_two_copies_of_it():
    """Reset for each seat, the one object played both roles on the last seat's seed (and
    state), with a run.json that could not tell: each extra seat now plays a copy."""
    from turnbudget.agents import RandomAgent

    kwargs = dict(ks=[1], ts=[30], tasks=3, n=2, n_bootstrap=0, record=True)
    shared = RandomAgent()
    one = evaluate_team("vault_v0", {"operator": shared, "runner": shared}, **kwargs)
    two = evaluate_team("vault_v0", {"operator": RandomAgent(), "runner": RandomAgent()}, **kwargs)
    assert one.config == two.config and one.episodes == two.episodes and one.records == two.records


def test_teams_the_game_cannot_play_are_refused_before_any_episode(tmp_path):
    from turnbudget.eval.probes.team import team_step_probe

    cases = [
        ("vault_v0", {"operator": "house", "runner": "random"}, r"vault_v0 has no house policy"),
        ("race_v0", {"player_0": "house", "player_1": "house"}, r"a role not played by the house"),
    ]
    for game, team, says in cases:
        with pytest.raises(ValueError, match=says):
            evaluate_team(game, team, ks=[1], ts=[5], tasks=1, out=tmp_path / "run")
        with pytest.raises(ValueError, match=says):
            team_step_probe(game, team, tasks=1)
    assert not (tmp_path / "run").exists()


def test_the_team_step_probe_asks_batch_and_async_agents_as_it_asks_plain_ones():
    """A batch or async agent passed its argument check, then failed with AttributeError
    (``no attribute 'reset'``)."""
    import asyncio

    from turnbudget.agents import OracleAgent
    from turnbudget.eval.probes.team import team_step_probe

    class BatchOracle(_BatchRandom):
        needs_oracle = True

        def act_batch(self, episode_ids, observations, infos):
            return [i["oracle_actions"][0] for i in infos]

    class AsyncOracle:
        needs_oracle = True

        async def reset_async(self, seed: int) -> None:
            await asyncio.sleep(0)

        async def act_async(self, observation, info):
            return info["oracle_actions"][0]

    probes = [
        team_step_probe("vault_v0", {"operator": "random", "runner": runner}, tasks=6)["runner"]
        for runner in (OracleAgent(0.0), BatchOracle(), AsyncOracle())
    ]
    assert probes[0]["n"] > 0 and probes[0]["skill"] == 1.0
    assert probes[1] == probes[0] and probes[2] == probes[0]


class _SpellingOracle:
    """The oracle's own command, spelt otherwise (``spell``): the same command to the game."""

    needs_oracle = True

    def __init__(self, spell):
        self.spell = spell

    def reset(self, seed: int) -> None:
        pass

    def act(self, observation, info):
        return self.spell(info["oracle_actions"][0])


@pytest.mark.parametrize(
    "spell", [str.upper, str.title, lambda c: c], ids=["upper", "title", "as-is"]
)
def test_the_step_probe_judges_a_command_by_what_it_does_not_its_spelling(spell):
    """The probe compared the parsed command with the oracle's strings, and Vault keeps a
    ``say`` message's case: an operator saying the oracle's message in capitals (which the
    runner hears, and the records count optimal) scored a skill of -1.0."""
    from turnbudget.eval.probes.team import team_step_probe

    team = {"operator": _SpellingOracle(spell), "runner": _SpellingOracle(lambda c: c)}
    out = team_step_probe("vault_v0", team, tasks=6, t0s=(0, 1, 2, 3))
    assert out["operator"]["n"] > 0 and out["operator"]["skill"] == 1.0
    assert out["runner"]["skill"] == 1.0


class _Guesses(str):
    """An answer whose text is the first admissible command, but which says it equals
    anything and hashes as the next admissible command each time it is asked: a rigged
    answer that only a scorer calling its own methods would count as optimal."""

    def __new__(cls, admissible: list[str]) -> _Guesses:
        answer = super().__new__(cls, admissible[0])
        answer.rest = list(admissible[1:])
        return answer

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return hash(self.rest.pop(0) if self.rest else str.__str__(self))

    def split(self, *args, **kwargs):  # (what a scorer calling the agent's code would run)
        raise RuntimeError("the agent's own code ran inside the scorer")


class _FirstAdmissible:
    needs_oracle = False
    budget_aware = False

    def __init__(self, rigged: bool):
        self.rigged = rigged

    def reset(self, seed: int) -> None:
        pass

    def act(self, observation: str, info) -> str:
        admissible = list(info["admissible_actions"])
        return _Guesses(admissible) if self.rigged else admissible[0]


def test_the_step_probes_judge_an_answer_as_the_text_it_plays():
    """A str subclass's own __eq__ and __hash__ judged whether it was optimal: a rigged
    answer scored 0.98 where its text scored 0.25 (team) and 0.74 where it scored 0.33
    (probe), and its own methods, run inside the scorer, could fail the probe."""
    from turnbudget.eval import probe
    from turnbudget.eval.probes.team import team_step_probe

    def team(rigged: bool):
        agents = {"player_0": _FirstAdmissible(rigged), "player_1": "house"}
        return team_step_probe("race_v0", agents, difficulty="medium", tasks=6)

    assert team(True) == team(False)
    single = {
        rigged: probe(
            "turnbudget/KeyQuest-Easy-v0",
            _FirstAdmissible(rigged),
            tasks=6,
            kinds=[],
            baseline_repeats=2,
            n_bootstrap=0,
        ).records
        for rigged in (True, False)
    }
    judged = {
        r: [(x["action"], x["optimal"]) for x in single[r] if x["agent"] != "random"]
        for r in single
    }
    assert judged[True] == judged[False] and judged[True]


def test_n_is_read_as_evaluate_reads_it():
    """A NumPy int was refused with "n >= max(K): got n=2, max(K)=1", and 2.0 likewise."""
    import numpy as np

    agents = {"player_0": "random", "player_1": "house"}
    result = evaluate_team("race_v0", agents, ks=[1], ts=[4], tasks=1, n=np.int64(2))
    assert result.config["n"] == 2 and type(result.config["n"]) is int
    with pytest.raises(ValueError, match=r"Expect `n` to be a positive int .* got 2\.0"):
        evaluate_team("race_v0", agents, ks=[1], ts=[4], tasks=1, n=2.0)
    with pytest.raises(ValueError, match=r"Pass@K needs n >= max\(K\) .* got n=1, max\(K\)=2"):
        evaluate_team("race_v0", agents, ks=[1, 2], ts=[4], tasks=1, n=1)


def test_a_difficulty_is_recorded_as_the_game_reads_it(tmp_path):
    """ "Easy" played easy but went into run.json as typed: the same run asked for "easy"
    was refused as another configuration."""
    team = {"operator": "oracle", "runner": "oracle"}
    settings = dict(ks=[1], ts=[10], tasks=2, n_bootstrap=0, out=tmp_path)
    first = evaluate_team("vault_v0", team, difficulty="Easy", **settings)
    again = evaluate_team("vault_v0", team, difficulty="easy", **settings)
    assert first.config["difficulty"] == again.config["difficulty"] == "easy"
    assert again.records == first.records


def test_success_naming_the_house_s_role_is_refused(tmp_path):
    """``success="player_0"`` with the house playing player_0 scored the team by the house's
    wins: the random player_1 'passed' every task. A custom agent with ``needs_house`` is the
    house too, and the default ``success`` passes it over as it passes over `HouseAgent`."""

    class MyHouse(HouseAgent):
        pass

    class FlaggedHouse:
        needs_house = True

        def reset(self, seed):
            pass

        def act(self, observation, info):
            return info["house_action"]

    with pytest.raises(ValueError, match="a role not played by the house, got 'player_0'"):
        evaluate_team(
            "race_v0", {"player_0": "house", "player_1": "random"}, success="player_0",
            ks=[1], ts=[5], tasks=1, out=tmp_path / "run",
        )  # fmt: skip
    assert not (tmp_path / "run").exists()
    # "all" holds the house's role too: the oracle player_1 won every task and scored 0
    with pytest.raises(ValueError, match="got 'all' with player_0 played by the house"):
        evaluate_team(
            "race_v0", {"player_0": "house", "player_1": "oracle"}, success="all",
            ks=[1], ts=[30], tasks=1, out=tmp_path / "run",
        )  # fmt: skip
    assert not (tmp_path / "run").exists()
    for house in (MyHouse(), FlaggedHouse()):
        result = evaluate_team(
            "race_v0", {"player_0": house, "player_1": "oracle"}, ks=[1], ts=[40], tasks=2,
            n_bootstrap=0,
        )  # fmt: skip
        assert result.config["success"] == "player_1"
        # the step probe takes it for the house too: it probes player_1 alone (it probed the
        # flagged agent as a player, which failed on the house move it was never shown)
        probed = team_step_probe("race_v0", {"player_0": house, "player_1": "oracle"}, tasks=2)
        assert list(probed) == ["player_1"] and probed["player_1"]["skill"] == 1.0


def test_a_module_that_is_not_a_team_game_is_refused_naming_it():
    """A PettingZoo module with a ``raw_env`` that is not one of ours was taken, then failed
    with ``TypeError: raw_env() takes no arguments``."""
    import types
    from typing import ClassVar

    from pettingzoo.utils.env import ParallelEnv

    from turnbudget.multiagent import TextParallelEnv, make_team

    class raw_env(ParallelEnv):  # (a PettingZoo game module's name for its class)
        metadata: ClassVar[dict[str, str]] = {"name": "other_v0"}
        possible_agents: ClassVar[list[str]] = ["a", "b"]

    class Nameless(vault_v0.raw_env):
        metadata: ClassVar[dict[str, str]] = {}

    module = types.ModuleType("other_v0")
    says = r"Expect a team game module .* got the module 'other_v0'"
    for module.raw_env in (raw_env, TextParallelEnv, Nameless):  # (the base has no world)
        with pytest.raises(ValueError, match=says):
            make_team(module)
        with pytest.raises(ValueError, match=says):
            evaluate_team(module, {"a": "random", "b": "random"}, ks=[1], ts=[2], tasks=1)
    assert make_team(vault_v0).unwrapped.metadata["name"] == "vault_v0"  # ours still taken


def test_the_team_plan_holds_no_episodes_and_keeps_the_order():
    """The plan was a sorted list of every spec: 800,000 specs took 116 MiB, and a run of a
    million tasks failed with MemoryError before its first episode."""
    import tracemalloc

    from turnbudget.eval.run.plan import EpisodeSpec
    from turnbudget.eval.run.team import _make_config, plan_team_episodes

    def config(tasks, n, ts, mode):
        return _make_config(
            "vault_v0", {"operator": "random", "runner": "random"}, difficulty="easy", ks=[1],
            ts=ts, n=n, tasks=tasks, mode=mode, success=None, errors=None, reveal=None,
            error_draws="per_repeat", record=False, seed=3, label=None,
        )[0]  # fmt: skip

    small = config([7, 2, 5], 2, [9, 4], "rerun")
    old = sorted(
        EpisodeSpec(small.envs[0], task, rep, budget, env_index=0, agent_seed=0)
        for task in small.tasks for rep in range(small.n) for budget in small.run_budgets
    )  # fmt: skip
    plan = plan_team_episodes(small)
    assert list(plan) == old and [plan[i] for i in range(len(plan))] == old
    assert {(s.env_index, s.agent_seed) for s in plan} == {(0, 0)}

    big = config(list(range(1000)), 100, list(range(1, 11)), "rerun")
    tracemalloc.start()
    try:
        plan = plan_team_episodes(big)
        assert len(plan) == 1000 * 100 * 10
        assert plan[-1].episode_id == "turnbudget/vault_v0|seed=999|rep=99|T=10"
        assert repr(plan) == "TeamEpisodePlan(1000000 episodes)"
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


class _Waiter:
    """A team member with Python's default repr (a memory address)."""

    def reset(self, seed):
        pass

    def act(self, observation, info):
        return "wait"


_RESUME = """
import sys
from test_evaluate_team import _Waiter
from turnbudget.eval import evaluate_team
result = evaluate_team("vault_v0", {"operator": _Waiter(), "runner": "random"}, ks=[1], ts=[4],
                       tasks=1, n_bootstrap=0, out=sys.argv[1])
print(result.n_run)
"""


def test_a_member_with_a_default_repr_resumes_in_another_process(tmp_path):
    """run.json kept the member's repr with its memory address: the same call in a new
    process was "a run with a different configuration (differs in: agents)"."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    here = str(Path(__file__).resolve().parent)  # (where this module is)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])),
    }
    runs = [
        subprocess.run([sys.executable, "-c", _RESUME, str(tmp_path / "run")],
                       capture_output=True, text=True, check=False, env=env)
        for _ in range(2)
    ]  # fmt: skip
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr[-2000:]
    assert [r.stdout.split()[-1] for r in runs] == ["1", "0"]  # (the second resumed)


def test_a_team_runs_step_columns_pool_its_members_turns(tmp_path):
    """The team's episode record keeps the counts under its roles: the summary read none
    there, and the report said no error was injected in a run with errors on."""
    result = evaluate_team(
        "vault_v0", {"operator": "random", "runner": "random"}, ks=[1], ts=[12], tasks=3,
        errors=0.3, n_bootstrap=0, out=tmp_path / "run",
    )  # fmt: skip
    members = [m for e in result.episodes for m in e["roles"].values()]
    stats = result.summary["analysis"]["turnbudget/vault_v0"]
    assert stats["turns"] == sum(m["turns_used"] for m in members)
    assert stats["errors_injected"] == sum(m["n_errors_injected"] for m in members) > 0
    assert stats["wasted"] == sum(m["n_wasted"] for m in members)
    assert stats["steps_judged"] == sum(m["n_steps_judged"] for m in members) > 0


def test_the_step_columns_leave_out_the_houses_turns(tmp_path):
    """The house is the game's opponent, not a member of the team evaluated: its turns were
    pooled into the team's columns, and a perfect player read an optimal-step rate of 0.96
    (player_0's 104 of 104 beside the house's 10 of 15)."""
    result = evaluate_team(
        "race_v0", {"player_0": "oracle", "player_1": "house"}, ks=[1], ts=[30], tasks=10,
        n_bootstrap=0, out=tmp_path / "run",
    )  # fmt: skip
    assert {tuple(e["house"]) for e in result.episodes} == {("player_1",)}
    house = [e["roles"]["player_1"] for e in result.episodes]
    assert sum(m["n_steps_judged"] - m["n_optimal_steps"] for m in house) > 0  # (it errs)
    player = [e["roles"]["player_0"] for e in result.episodes]
    stats = result.summary["analysis"]["turnbudget/race_v0"]
    assert stats["optimal_step_rate"] == 1.0
    assert stats["steps_judged"] == sum(m["n_steps_judged"] for m in player)
    assert stats["turns"] == sum(m["turns_used"] for m in player)
    # A run recorded before the episode records listed the house reads it from run.json.
    import json

    from turnbudget.eval.report import load_run_summary

    log = tmp_path / "run" / "episodes.jsonl"
    old = [json.loads(line) for line in log.read_text().splitlines()]
    log.write_text("".join(json.dumps({k: v for k, v in e.items() if k != "house"}) + "\n"
                           for e in old))  # fmt: skip
    again = load_run_summary(tmp_path / "run", n_bootstrap=0)["analysis"]["turnbudget/race_v0"]
    assert again["optimal_step_rate"] == 1.0 and again["steps_judged"] == stats["steps_judged"]


def test_the_team_report_names_what_each_role_was_shown_beyond_a_players_view(tmp_path):
    from turnbudget.agents import OracleAgent
    from turnbudget.eval.report import build_report

    evaluate_team(
        "vault_v0", {"operator": OracleAgent(0.0), "runner": "random"}, ks=[1], ts=[8],
        tasks=2, n_bootstrap=0, out=tmp_path / "run",
    )  # fmt: skip
    build_report(tmp_path / "run", plots=False)
    rows = [line for line in (tmp_path / "run" / "report.md").read_text().splitlines()
            if line.startswith("| vault_v0 |")]  # fmt: skip
    assert rows and "operator: oracle actions |" in rows[0], rows


@pytest.mark.parametrize(
    "kwargs, says",
    [
        ({"focal": "nobody"}, r"Expect `focal` to be one of \['operator', 'runner'\]"),
        ({"epsilon": 7}, r"Expect `epsilon` to be a probability in \[0, 1\], got 7"),
    ],
)
def test_baseline_teams_checks_its_arguments(kwargs, says):
    """A focal that is no role was played as a role of its own, and epsilon=7 made
    "oracle:7", both refused only later without naming the argument."""
    with pytest.raises(ValueError, match=says):
        baseline_teams("vault_v0", **kwargs)


def test_a_team_run_from_before_grants_were_recorded_resumes(tmp_path):
    """run.json holds `grants` since this release: an older run with an oracle-given member
    was "a run with a different configuration (differs in: grants)"."""
    import json

    from turnbudget.agents import OracleAgent

    def run() -> int:
        return evaluate_team(
            "vault_v0", {"operator": OracleAgent(0.0), "runner": "random"}, ks=[1], ts=[6],
            tasks=1, n_bootstrap=0, out=tmp_path / "run",
        ).n_run  # fmt: skip

    assert run() == 1
    path = tmp_path / "run" / "run.json"
    older = json.loads(path.read_text())
    del older["grants"]
    path.write_text(json.dumps(older))
    assert run() == 0


def test_a_member_whose_repr_holds_another_address_resumes(tmp_path):
    """Only a default repr lost its memory address: a dataclass holding a NumPy Generator
    (``Generator(PCG64) at 0x...``) differed in every process."""
    from dataclasses import dataclass, field

    import numpy as np

    @dataclass
    class Member:
        rng: np.random.Generator = field(default_factory=np.random.default_rng)

        def reset(self, seed):
            pass

        def act(self, observation, info):
            return "wait"

    def run() -> int:
        return evaluate_team(
            "vault_v0", {"operator": Member(), "runner": "random"}, ks=[1], ts=[6], tasks=1,
            n_bootstrap=0, out=tmp_path / "run",
        ).n_run  # fmt: skip

    assert " at 0x" in repr(Member())
    assert run() == 1 and run() == 0  # (two objects: two addresses)


def test_a_race_against_a_rival_that_is_not_the_house_never_wins_below_its_d_star():
    """d* was the best response to the house whoever played the rival: against a random rival
    the oracle won task 14 in 8 rounds with a d* of 10 (infeasible, a negative step regret),
    and 1 in 40 episodes of the "T/d* < 1" bin succeeded. Against another rival d* is the
    tour alone, which no rival can shorten; against the house it is still the best response."""
    from turnbudget.multiagent import race_v0 as race

    settings = dict(ks=[1], ts=[8, 30], tasks=20, n=1, n_bootstrap=0)
    random_rival = evaluate_team(race, {"player_0": "oracle", "player_1": "random"}, **settings)
    won = [e for e in random_rival.episodes if e["success"]]
    assert len(won) >= 10
    for episode in random_rival.episodes:
        env = race.raw_env()
        env.reset(seed=episode["seed"])
        assert episode["initial_distance"] == env.distance_alone("player_0")
        assert episode["initial_distance"] <= env.distance_to_goal("player_0")
        if episode["success"]:
            assert episode["first_success_turn"] >= episode["initial_distance"]
            assert episode["step_regret"] >= 0 and episode["feasible"]
    by_ratio = random_rival.summary["analysis"]["turnbudget/race_v0"]["feasibility"]["by_ratio"]
    below = next(row for row in by_ratio if row["ratio"] == [0.0, 1.0])
    assert below["cells"] > 0 and below["mean"] == [0.0]
    for episode in random_rival.episodes:  # (the winner's own record says the same d*)
        mine = episode["roles"]["player_0"]
        assert mine["initial_distance"] == episode["initial_distance"]
        assert mine["step_regret"] is None or mine["step_regret"] >= 0
    # success "all" (both players, a tie) and no house: the tours alone too (the review found
    # the house-relative d* here, and a joint win 2 rounds below it)
    both = evaluate_team(race, {"player_0": "oracle", "player_1": "oracle"}, success="all",
                         **settings)  # fmt: skip
    for episode in both.episodes:
        env = race.raw_env()
        env.reset(seed=episode["seed"])
        alone = max(env.distance_alone("player_0"), env.distance_alone("player_1"))
        assert episode["initial_distance"] == alone
    house = evaluate_team(race, {"player_0": "oracle", "player_1": "house"}, **settings)
    for episode in house.episodes:
        env = race.raw_env()
        env.reset(seed=episode["seed"])
        assert episode["initial_distance"] == env.distance_to_goal("player_0")
