"""HistoryFeatures: its features can be rebuilt from text alone, and it records what was executed."""

from __future__ import annotations

import numpy as np
import pytest

import turnbudget
from turnbudget.wrappers import InjectErrors
from turnbudget.wrappers.history_features import (
    FeatureEncoder,
    HistoryFeatures,
    text_features_vector,
)

IDS = ["turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0"]


def make(env_id: str, reveal: str | None = "always", **kwargs):
    env = turnbudget.make(env_id, turn_budget=20, reveal=reveal, discrete_actions=10,
                          text_features={"block_dim": 32}, info="text", **kwargs)  # fmt: skip
    return HistoryFeatures(env, history=3, command_dim=8, budget=reveal == "always")


@pytest.mark.parametrize("env_id", IDS)
def test_features_rebuilt_from_text_match_the_wrapper(env_id):
    env = make(env_id)
    spec = env.spec_dict()
    rng = np.random.default_rng(0)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        encoder = FeatureEncoder(spec["max_actions"], spec["history"], spec["command_dim"], True)
        goal = info["goal"]
        encoder.reset(goal)
        done = False
        while True:
            text = info["text_observation"]
            commands = sorted(info["admissible_actions"])[: spec["max_actions"]]
            base = text_features_vector(text, goal, info["admissible_actions"],
                                        spec["text_features"])  # fmt: skip
            rebuilt = np.concatenate([base, encoder.encode(text, commands, info["turns_left"],
                                                           info["turn_budget"])])  # fmt: skip
            np.testing.assert_array_equal(rebuilt, obs)
            if done:
                break
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            encoder.record(info["action_commands"][action])
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated


def test_a_slip_is_recorded_as_the_command_that_ran():
    env = turnbudget.make("turnbudget/Maze-Easy-v0", turn_budget=30)
    env = InjectErrors(env, schedule={1: "slip"})
    env = HistoryFeatures(turnbudget.make(env, reveal="never", discrete_actions=6, text_features=16,
                                          info="text"), history=2, command_dim=8)  # fmt: skip
    _, info = env.reset(seed=3)
    _, _, _, _, info = env.step(0)
    slip = info["injected_error"]
    assert slip["kind"] == "slip"
    if slip["applied"]:
        assert list(env.encoder._executed) == [slip["replaced_action"]]


def test_spec_round_trips_the_stack_settings():
    spec = make("turnbudget/Maze-Easy-v0").spec_dict()
    assert spec["text_features"] == {"dim": 32, "ngrams": 2, "include_goal": True,
                                     "include_admissible": False}  # fmt: skip
    assert spec["max_actions"] == 10 and spec["history"] == 3 and spec["budget"] is True
    assert spec["reveal"]["mode"] == "always"
    assert make("turnbudget/Maze-Easy-v0", reveal=None).spec_dict()["reveal"] is None


def test_bad_stacks_and_arguments_are_refused():
    with pytest.raises(ValueError, match="info='text'"):
        HistoryFeatures(turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=5,
                                        text_features=16))  # fmt: skip
    with pytest.raises(ValueError, match="DiscreteActions then TextFeatures"):
        HistoryFeatures(turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=5))
    with pytest.raises(ValueError, match="RevealBudget"):
        HistoryFeatures(turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=5,
                                        text_features=16, info="text"), budget=True)  # fmt: skip
    with pytest.raises(ValueError, match="`history` to be a positive int"):
        make_plain = turnbudget.make(
            "turnbudget/Maze-Easy-v0", discrete_actions=5, text_features=16, info="text"
        )
        HistoryFeatures(make_plain, history=0)


def test_revisits_show_in_the_memory_features():
    encoder = FeatureEncoder(max_actions=2, history=2, command_dim=4, budget=False)
    encoder.reset("Find the Amber Hall.")
    room_a, room_b = (
        "You are in Red Room. Exits lead north.",
        "You are in Blue Den. Exits lead south.",
    )
    first = encoder.encode(room_a, ["go north", "look"])
    encoder.record("go north")
    encoder.encode(room_b, ["go south", "look"])
    encoder.record("go south")
    back = encoder.encode(room_a, ["go north", "look"])
    memory = slice(2 * encoder.slot_size + 2 * 4, 2 * encoder.slot_size + 2 * 4 + 3)
    assert first[memory].tolist() == [0.0, 0.0, 0.0]  # nothing seen before
    assert back[memory][1] == pytest.approx(1.0)  # two turns ago: the same room
    assert back[memory][2] == pytest.approx(1.0)  # the best match anywhere in the episode
    assert back[memory][0] < 1.0
