"""One name per idea (issue 25): the turn budget is ``turn_budget`` in every door.

``turnbudget.make`` and ``make_team`` took ``budget=`` while ``gym.make`` and
``reset(options=...)`` took ``turn_budget``; the old spelling is accepted for one
release, with a ``DeprecationWarning`` that names the new one.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import turnbudget

MAZE = "turnbudget/Maze-Easy-v0"


def test_make_takes_turn_budget_as_gym_make_does():
    made = turnbudget.make(MAZE, turn_budget=7)
    assert made.reset(seed=0)[1]["turn_budget"] == 7
    assert gym.make(MAZE, turn_budget=7).reset(seed=0)[1]["turn_budget"] == 7


def test_make_still_takes_budget_for_one_release_and_names_the_new_keyword():
    with pytest.warns(DeprecationWarning, match=r"use make\(turn_budget=\)"):
        env = turnbudget.make(MAZE, budget=7)
    assert env.reset(seed=0)[1]["turn_budget"] == 7
    with pytest.raises(TypeError, match="`turn_budget`"):
        turnbudget.make(MAZE, budget=7, turn_budget=8)


def test_make_team_takes_turn_budget_and_warns_on_budget():
    pytest.importorskip("pettingzoo")
    from turnbudget.multiagent import make_team

    _, infos = make_team("vault_v0", turn_budget=9).reset(seed=0)
    assert infos["runner"]["turn_budget"] == 9
    with pytest.warns(DeprecationWarning, match=r"use make_team\(turn_budget=\)"):
        make_team("vault_v0", budget=9)


def test_gym_make_with_budget_names_turn_budget():
    with pytest.raises(
        TypeError, match=r"keyword is `turn_budget` \(gym.make\(id, turn_budget=10\)\)"
    ):
        gym.make(MAZE, budget=10)


def test_play_takes_turn_budget(monkeypatch, capsys):
    import io

    from turnbudget.cli import main

    monkeypatch.setattr("sys.stdin", io.StringIO("quit\n"))
    assert main(["play", "Maze-Easy-v0", "--seed", "0", "--turn-budget", "3"]) == 0
    assert "[3 turns left]" in capsys.readouterr().out


def test_text_features_n_gives_n_dimensions():
    assert turnbudget.make(MAZE, text_features=64).observation_space.shape == (64,)
    env = gym.make(MAZE, text_features={"block_dim": 64, "include_admissible": True})
    assert env.observation_space.shape == (3 * 64,)
    with pytest.raises(ValueError, match=r"`text_features` to be a multiple of 2 .*, got 65"):
        gym.make(MAZE, text_features=65)


def test_text_features_old_dim_means_per_block_and_warns():
    from turnbudget.wrappers import TextFeatures

    with pytest.warns(DeprecationWarning, match=r"use TextFeatures\(block_dim=\)"):
        env = TextFeatures(gym.make(MAZE), dim=32)
    assert env.observation_space.shape == (64,) and env.block_dim == 32
    with pytest.warns(DeprecationWarning, match=r"use TextFeatures.block_dim"):
        assert env.dim == 32


def test_check_text_env_passed_is_a_bool_as_check_group_seeding_s():
    from turnbudget.utils import check_text_env

    report = check_text_env(MAZE, seeds=(0,), steps=3, walks=1, cross_process=False)
    assert report.passed is True
    assert report.checks[0] == "gymnasium_checker"


def test_solo_role_env_is_exported_with_the_team_games():
    pytest.importorskip("pettingzoo")
    import turnbudget.multiagent
    from turnbudget.multiagent import SoloRoleEnv
    from turnbudget.multiagent.solo import SoloRoleEnv as Defined

    assert SoloRoleEnv is Defined and "SoloRoleEnv" in turnbudget.multiagent.__all__
