"""Pass@(K,T) for teams: oracle and random baselines, modes, determinism, checks."""

from __future__ import annotations

import pytest

pytest.importorskip("pettingzoo")

from turnbudget.agents.house import HouseAgent
from turnbudget.eval import evaluate_team
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
    from turnbudget.eval.probes.team import team_step_probe

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
