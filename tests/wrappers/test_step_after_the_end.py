"""A step after the episode's end plays nothing: `TurnBudget` answers it as a game answers a
step after its game is over, and no wrapper injects, shapes or records anything then."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from _support import native_env_ids
from gymnasium import spaces

import turnbudget
from turnbudget.envs.core import GAME_OVER_TEXT, PRINTABLE
from turnbudget.wrappers import TurnBudget


def state_of(env: gym.Env) -> tuple:
    game = env.unwrapped
    return game._state_version, game.distance_to_goal(), game._won, game._lost


def test_the_reported_case_no_win_past_the_budget():
    env = turnbudget.make("turnbudget/Maze-Easy-v0", turn_budget=1)
    env.reset(seed=0)
    _, _, terminated, truncated, info = env.step("look")
    assert (terminated, truncated, info["turns_used"]) == (False, True, 1)
    before = state_of(env)
    for _ in range(10):
        best = env.unwrapped.optimal_actions() or ["look"]
        obs, reward, terminated, truncated, info = env.step(best[0])
        assert (obs, reward, terminated, truncated) == (GAME_OVER_TEXT, 0.0, False, True)
        assert info["turns_used"] == info["turn_budget"] == 1 and info["turns_left"] == 0
        assert info["won"] is False and info["valid_action"] is False
        assert info["admissible_actions"] == []
    assert state_of(env) == before


FULL = {
    "errors": {"rate": 1.0}, "process_reward": {"gamma": 0.9}, "record": True,
    "reveal": "always",
}  # fmt: skip


@pytest.mark.parametrize("env_id", native_env_ids())
def test_nothing_acts_after_truncation_in_a_full_stack(env_id):
    env = turnbudget.make(env_id, turn_budget=3, **FULL)
    env.reset(seed=0)
    for _ in range(3):
        _, _, terminated, truncated, _ = env.step("look")
    assert truncated and not terminated
    records = list(env.get_wrapper_attr("records"))
    before = state_of(env)
    for action in ["look", "inventory", *(env.unwrapped.optimal_actions() or ["look"])]:
        obs, reward, terminated, truncated, info = env.step(action)
        assert (reward, terminated, truncated) == (0.0, False, True)
        assert obs.startswith(GAME_OVER_TEXT)  # (and the revealed budget: 0 turns left)
        assert "injected_error" not in info
        assert info["process_reward"]["shaping"] == 0.0
        assert info["turns_used"] == 3 and info["turns_left"] == 0
    assert state_of(env) == before
    assert env.get_wrapper_attr("records") == records
    env.reset(seed=1)  # and the next episode plays as usual
    _, _, _, _, info = env.step("look")
    assert info["turns_used"] == 1


def test_turns_are_not_counted_past_a_win_either():
    env = turnbudget.make("turnbudget/Maze-Easy-v0", turn_budget=40)
    _, info = env.reset(seed=0)
    terminated = False
    while not terminated:
        _, _, terminated, truncated, info = env.step(env.unwrapped.optimal_actions()[0])
    used = info["turns_used"]
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step("look")
        assert (obs, reward, terminated, truncated) == (GAME_OVER_TEXT, 0.0, True, False)
        assert info["turns_used"] == used and info["won"] is True


def test_an_env_without_text_observations_gets_its_last_observation_again():
    env = TurnBudget(gym.make("CartPole-v1", max_episode_steps=2), turn_budget=2)
    env.reset(seed=0)
    env.step(0)
    last, _, _, truncated, _ = env.step(0)
    assert truncated
    kept = last.copy()
    last[:] = 99.0  # the caller's copy is the caller's
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(1)
        assert np.array_equal(obs, kept) and (reward, terminated, truncated) == (0.0, False, True)
        assert info["turns_used"] == 2 and info["valid_action"] is False
        obs[:] = -1.0


class ShortText(gym.Env):
    """Observations too short to hold the game-over text."""

    observation_space = spaces.Text(max_length=8)
    action_space = spaces.Text(max_length=8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.turn = 0
        return "start", {}

    def step(self, action):
        self.turn += 1
        return f"turn{self.turn}", 1.0, False, False, {}


def test_a_text_space_too_short_for_the_game_over_text_gets_the_last_observation():
    env = TurnBudget(ShortText(), turn_budget=2)
    env.reset()
    env.step("a")
    env.step("a")
    obs, reward, terminated, truncated, info = env.step("a")
    assert (obs, reward, terminated, truncated) == ("turn2", 0.0, False, True)
    assert env.unwrapped.turn == 2 and info == {
        "valid_action": False, "turn_budget": 2, "turns_used": 2, "turns_left": 0,
    }  # fmt: skip


def test_a_new_observation_space_is_checked_again_for_the_game_over_text():
    env = TurnBudget(ShortText(), turn_budget=1)
    for space, expected in [
        (spaces.Text(max_length=8), "turn1"),  # too short: the last observation
        (spaces.Text(max_length=200, charset=PRINTABLE), GAME_OVER_TEXT),
        (spaces.Text(max_length=8), "turn1"),
    ]:
        env.env.observation_space = space
        env.reset()
        env.step("a")
        assert env.step("a")[0] == expected


@pytest.mark.parametrize("options", [{}, {"errors": {"rate": 0.5}}, {"record": True}])
@pytest.mark.parametrize("action", [123, None, b"look", ["look"]])
def test_a_step_after_the_end_refuses_what_is_no_command(options, action):
    """After the end the plain stack answered 123 with a game-over turn, where the game (and
    the stack with errors) raises TypeError, as guarantees.md says."""
    env = gym.make("turnbudget/Maze-Easy-v0", turn_budget=1, **options)
    env.reset(seed=0)
    assert env.step("look")[3]
    with pytest.raises(TypeError, match="Expect the action to be a str"):
        env.step(action)
    assert env.step("look")[3]  # (the refusal spent nothing: still after the end)
