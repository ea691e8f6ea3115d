"""A team game's role as a single-agent Gymnasium env, under the single-agent wrappers."""

from __future__ import annotations

import pytest

pytest.importorskip("pettingzoo")

import gymnasium as gym
from gymnasium.utils.env_checker import check_env

import turnbudget
from turnbudget.multiagent.solo import SoloRoleEnv

CASES = [("vault_v0", "runner", "oracle"), ("vault_v0", "operator", "oracle"),
         ("race_v0", "player_0", "house"), ("race_v0", "player_1", "house")]  # fmt: skip


@pytest.mark.parametrize(("game", "role", "partners"), CASES)
def test_gymnasium_checker(game, role, partners):
    check_env(SoloRoleEnv(game, role=role, partners=partners), skip_render_check=True)


@pytest.mark.parametrize(("game", "role", "partners"), CASES)
@pytest.mark.parametrize("difficulty", ["easy", "hard"])
def test_single_agent_oracle_wins_in_its_distance(game, role, partners, difficulty):
    for seed in range(5):
        env = turnbudget.make(
            SoloRoleEnv(game, role=role, partners=partners, difficulty=difficulty), turn_budget=128
        )
        _, info = env.reset(seed=seed)
        solo = env.unwrapped
        while True:
            before = solo.distance_to_goal()
            _, reward, terminated, truncated, info = env.step(solo.optimal_actions()[0])
            if terminated or truncated:
                break
            assert solo.distance_to_goal() == before - 1
        assert reward == 1.0 and terminated and not truncated
        assert info["turns_used"] == solo.initial_distance


def test_single_agent_wrappers_apply_unchanged():
    env = turnbudget.make(SoloRoleEnv("race_v0", partners="house", difficulty="medium"),
                          turn_budget=64, errors=0.2, record=True, reveal="final=5")  # fmt: skip
    _, info = env.reset(seed=1)
    while True:
        actions = info["admissible_actions"] or ["look"]
        _, _, terminated, truncated, info = env.step(actions[0])
        if terminated or truncated:
            break
    recorder = env.env  # RevealBudget(RecordStepOutcomes(...))
    episode = recorder.records[-1]
    assert episode["record"] == "episode" and episode["turns_used"] >= 1


def test_bad_arguments():
    with pytest.raises(ValueError, match="role"):
        SoloRoleEnv("vault_v0", role="pilot")
    with pytest.raises(ValueError, match="house policy"):
        SoloRoleEnv("vault_v0", partners="house")
    with pytest.raises(TypeError):
        env = SoloRoleEnv("vault_v0")
        env.reset(seed=0)
        env.step(3)
    with pytest.raises(gym.error.ResetNeeded):
        SoloRoleEnv("race_v0", partners="house").step("look")


@pytest.mark.parametrize(("game", "role", "partners"), CASES)
def test_single_agent_contract_checker(game, role, partners):
    import functools

    from turnbudget.envs.core import Oracle
    from turnbudget.utils import check_text_env

    factory = functools.partial(SoloRoleEnv, game, role=role, partners=partners)
    assert isinstance(factory(), Oracle)
    # The checker's Bellman walk assumes a running game is always winnable; a race
    # can become hopeless before the house crafts (distance None, game still on),
    # so Race is walked by test_single_agent_oracle_wins_in_its_distance instead.
    walks = 0 if game == "race_v0" else 1
    check_text_env(factory, seeds=(0, 1), steps=12, walks=walks, budget_factor=None)


def test_team_envs_answer_the_team_oracle_protocol():
    from turnbudget.multiagent import all_games
    from turnbudget.multiagent.worlds.base import TeamOracle

    for module in all_games.values():
        assert isinstance(module.raw_env(), TeamOracle)


def test_each_game_defaults_to_the_partners_its_oracle_answers():
    """Race's oracle is the best response to the house, but its role's partners defaulted to
    the team oracle: optimal_actions() was empty at distance 9, and an oracle run stalled."""
    for game, partners in (("race_v0", "house"), ("vault_v0", "oracle")):
        env = SoloRoleEnv(game)
        env.reset(seed=0)
        assert env.partners == partners
        assert env.distance_to_goal() > 0 and env.optimal_actions()
    with pytest.raises(ValueError, match="partners='house'"):
        SoloRoleEnv("race_v0", partners="oracle")


@pytest.mark.parametrize("role", ["player_0", "player_1"])
def test_the_contract_checker_passes_a_race_role_that_can_no_longer_win(role):
    """A Race role can lose before the game ends (distance None, and None after every
    command): the checker's Bellman rule asked for a finite successor and failed it."""
    from turnbudget.utils import check_text_env

    report = check_text_env(SoloRoleEnv("race_v0", role=role, difficulty="medium"))
    assert "oracle_bellman" in report.checks


def test_human_render_shows_the_role_s_own_screen_once(capsys):
    """The team game under it was made in "human" mode too: every reset and step printed
    the whole team's screen first (the operator's route and door codes to the runner),
    then the runner's."""
    env = SoloRoleEnv("vault_v0", role="runner", render_mode="human")
    obs, _ = env.reset(seed=0)
    assert capsys.readouterr().out.strip() == obs.strip()
    obs = env.step("look")[0]
    assert capsys.readouterr().out.strip() == obs.strip()
