"""DiscreteActions and TextFeatures: spaces, masks, stable features, Gymnasium's checker."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from _wrapper_stub import STUB_ID
from gymnasium.utils.env_checker import check_env

import turnbudget
from turnbudget.wrappers import DiscreteActions, TextFeatures
from turnbudget.wrappers.text_features import hashed_ngrams


def test_indices_map_to_sorted_admissible_commands_with_a_mask():
    env = DiscreteActions(gym.make(STUB_ID, length=10, trap=False), max_actions=5)
    _, info = env.reset(seed=1)
    assert info["action_commands"] == sorted(info["admissible_actions"])
    assert env.action_masks().tolist() == [True] * len(info["action_commands"]) + [False] * (
        5 - len(info["action_commands"])
    )
    assert (info["action_mask"] == env.action_masks()).all()
    forward = info["action_commands"].index("forward")
    pos = env.unwrapped.pos
    _, _, _, _, info = env.step(forward)
    assert env.unwrapped.pos == pos + 1 and info["valid_action"]


def test_masked_index_costs_a_turn_and_bad_index_raises():
    env = DiscreteActions(gym.make(STUB_ID, length=10, trap=False), max_actions=6)
    env.reset(seed=0)
    _, _, _, _, info = env.step(5)
    assert info["valid_action"] is False and info["turns_used"] == 1
    for bad in (-1, 6, 1.5, "0", True):
        with pytest.raises(ValueError, match=r"Discrete\(6\)"):
            env.step(bad)
    env.step(np.int64(0))
    env.step(np.array(0))


def test_a_final_observation_keeps_a_mask_to_sample_from():
    """Gymnasium's next-step autoreset (and TorchRL) draw an action from the final observation:
    an all-False mask there crashed TorchRL's ``ActionMask`` ("invalid multinomial distribution")."""
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    env = turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=8)
    _, info = env.reset(seed=8)
    terminated = False
    for _ in range(100):  # the shortest way to the goal
        action = info["action_commands"].index(sorted(env.unwrapped.optimal_actions())[0])
        _, _, terminated, _, info = env.step(action)
        if terminated:
            break
    assert terminated and info["action_commands"] == []
    assert info["action_mask"].tolist() == [True] + [False] * 7  # one slot open, never played
    observation, reward, terminated, _, _ = env.step(0)  # the game is over: nothing is played
    assert terminated and reward == 0.0 and "reset()" in observation

    def make():
        return turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=8)

    venv = SyncVectorEnv([make], autoreset_mode=AutoresetMode.NEXT_STEP)
    _, infos = venv.reset(seed=8)
    rng = np.random.default_rng(0)
    for _ in range(300):  # random masked play through several episode ends
        assert infos["action_mask"].any(axis=1).all()
        action = rng.choice(np.flatnonzero(infos["action_mask"][0]))
        _, _, _, _, infos = venv.step(np.array([action]))
    venv.close()


def test_commands_past_max_actions_are_dropped():
    env = DiscreteActions(gym.make(STUB_ID, length=10), max_actions=2)
    _, info = env.reset(seed=1)
    assert info["action_commands"] == sorted(info["admissible_actions"])[:2]
    assert env.action_masks().all()


@pytest.mark.parametrize("max_actions", [0, -3, 2.0, True])
def test_bad_max_actions(max_actions):
    with pytest.raises(ValueError, match="`max_actions` to be a positive int"):
        DiscreteActions(gym.make(STUB_ID), max_actions=max_actions)


def test_text_features_shape_goal_and_admissible_blocks():
    env = TextFeatures(gym.make(STUB_ID), block_dim=32, include_admissible=True)
    obs, info = env.reset(seed=0)
    assert obs.shape == (96,) and obs.dtype == np.float32 and env.observation_space.contains(obs)
    assert (obs[32:64] == hashed_ngrams(info["goal"], 32)).all()
    assert (obs[64:] == hashed_ngrams("\n".join(info["admissible_actions"]), 32)).all()
    assert info["text_observation"].startswith("Walk to the end.")
    obs2, *_ = env.step("forward")
    assert not np.array_equal(obs[:32], obs2[:32]) and (obs[32:64] == obs2[32:64]).all()


def test_features_are_the_same_in_another_process():
    here = hashed_ngrams("You are in the Amber Hall. Exits lead north and east.", 64)
    code = (
        "from turnbudget.wrappers.text_features import hashed_ngrams;"
        "print(hashed_ngrams('You are in the Amber Hall. Exits lead north and east.', 64).tolist())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert eval(out.stdout) == here.tolist()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"block_dim": 0}, "block_dim"), ({"size": 0}, "size"), ({"ngrams": 0}, "ngrams")],
)
def test_bad_text_features(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TextFeatures(gym.make(STUB_ID), **kwargs)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_adapted_maze_passes_the_gymnasium_checker():
    env = turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=8, text_features=64)
    assert isinstance(env.action_space, gym.spaces.Discrete)
    check_env(env, skip_render_check=True)


def test_adapters_work_in_a_vector_env():
    def make():
        return turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=8, text_features=64)

    venv = gym.vector.SyncVectorEnv([make] * 2)
    obs, info = venv.reset(seed=0)
    assert obs.shape == (2, 64) and info["action_mask"].shape == (2, 8)
    masks = np.stack(venv.call("action_masks"))
    assert (masks == info["action_mask"]).all()
    obs, *_ = venv.step(np.array([0, 0]))
    venv.close()


def test_every_form_of_an_index_gives_the_same_command():
    from turnbudget.wrappers.discrete_actions import CommandSlots

    slots = CommandSlots(4)
    slots.update(["look", "go north", "take key"])
    for index, expected in enumerate(["go north", "look", "take key", ""]):  # the last masked
        for form in (int, np.int64, np.uint8, np.float32, float, lambda i: np.array([i])):
            assert slots.command(form(index)) == expected
    for bad in (-1, 4, True, 1.5, "1"):
        with pytest.raises(ValueError, match="Discrete"):
            slots.command(bad)
    slots.update(["e", "d", "c", "b", "a"])  # one past the slots: dropped
    assert slots.commands == ["a", "b", "c", "d"] and slots.command(3) == "d"


@pytest.mark.parametrize("bad", ["look", None, 5, {"look": 1}, ["look", 1], [None]], ids=repr)
def test_an_admissible_list_that_holds_no_commands_is_refused_naming_it(bad):
    """A str of commands filled the slots with its characters (index 0 played 'k' of 'look'),
    and a list with a None passed DiscreteActions and failed in HistoryFeatures with
    AttributeError: 'NoneType' object has no attribute 'lower'."""
    from turnbudget.wrappers.discrete_actions import CommandSlots

    slots = CommandSlots(4)
    with pytest.raises(TypeError, match=r"Expect info\['admissible_actions'\] to"):
        slots.update(bad)
    slots.update(("look", "go north"))  # any sequence of str
    assert slots.commands == ["go north", "look"]
