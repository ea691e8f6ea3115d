"""Feedback that echoes a player's words stays in the observation space, in every native game."""

from __future__ import annotations

import gymnasium as gym
import pytest

import turnbudget  # noqa: F401  (registers the ids)
from turnbudget.envs.native.keyquest import KeyQuest

NATIVE_IDS = sorted(
    spec.id
    for spec in gym.registry.values()
    if spec.id.startswith("turnbudget/")
    and spec.id.split("/")[1].split("-")[0] in {"Maze", "KeyQuest", "Crafting", "Shop", "Sokoban"}
)
# Characters outside `string.printable` that survive the engine's normalization.
SUFFIXES = ["\ud800", "caf\u00e9", "\x00", "\u202e", "\uff21\uff22", "\x1b[2J", "\x7f"]


@pytest.mark.parametrize("env_id", NATIVE_IDS)
def test_invalid_commands_naming_odd_things_get_printable_feedback(env_id):
    env = gym.make(env_id).unwrapped
    _, info = env.reset(seed=1)
    verbs = sorted({a.split()[0] for a in info["admissible_actions"]} | {"take", "drop"})
    for verb in verbs:
        for suffix in SUFFIXES:
            for command in (f"{verb} {suffix}", f"{verb} red {suffix}"):
                observation, _, terminated, truncated, _ = env.step(command)
                assert env.observation_space.contains(observation), (command, observation[:80])
                if terminated or truncated:
                    env.reset(seed=1)


def test_keyquest_echoes_an_unknown_thing_printable_and_whole():
    # Before: "You don't see a caf\u00e9 here." (outside the observation space).
    env = KeyQuest()
    env.reset(seed=0)
    assert env.step("take caf\u00e9\x00")[0].startswith("You don't see a caf?? here.")
    assert env.step("drop \ud800 key")[0].startswith("You aren't carrying a ? key.")
    # Printable words are echoed as before, however long.
    long_name = "very " * 30 + "shiny coin"
    assert env.step(f"take {long_name}")[0].startswith(f"You don't see a {long_name} here.")
