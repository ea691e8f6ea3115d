"""A ``str`` subclass is played as the plain ``str`` it holds: its own ``__eq__``,
``__hash__`` or ``__str__`` neither crash a game nor change what the command does."""

from __future__ import annotations

import gymnasium as gym
import pytest
from _support import native_env_ids

import turnbudget


class AlwaysEq(str):
    __eq__ = lambda self, other: True  # noqa: E731
    __ne__ = lambda self, other: False  # noqa: E731
    __hash__ = str.__hash__


class RaisesOnEq(str):
    def __eq__(self, other):
        raise RuntimeError("__eq__ called")

    __hash__ = str.__hash__


class Disguised(str):
    def __str__(self):
        return "go north"

    def lower(self):
        return "go north"

    def split(self, *args):
        raise RuntimeError("split called")


SUBCLASSES = [AlwaysEq, RaisesOnEq, Disguised]


def play(env: gym.Env, seed: int, wrap: type | None) -> list:
    """A seeded run cycling through the admissible commands and a few others, each sent as
    ``wrap(command)``."""
    _, info = env.reset(seed=seed)
    out = []
    extra = ["look", "dance", "", "N", "take the red key", "go north"]
    for turn in range(30):
        commands = sorted(info["admissible_actions"]) + extra
        command = commands[(turn * 7) % len(commands)]
        obs, reward, terminated, truncated, info = env.step(
            command if wrap is None else wrap(command)
        )
        out.append((obs, reward, terminated, truncated, info))
        if terminated or truncated:
            break
    return out


@pytest.mark.parametrize("wrap", SUBCLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("env_id", native_env_ids())
def test_a_str_subclass_plays_as_its_plain_str(env_id, wrap):
    for seed in (0, 1):
        assert play(gym.make(env_id), seed, wrap) == play(gym.make(env_id), seed, None)


@pytest.mark.parametrize("wrap", SUBCLASSES, ids=lambda c: c.__name__)
def test_the_wrappers_that_read_the_command_judge_the_plain_str(wrap):
    """InjectErrors (slips, valid_as_seen) and RecordStepOutcomes (optimality) compare the
    command too: the records and the run are those of the plain commands."""
    options = {"errors": {"rate": 0.5}, "record": True}
    runs = {}
    for kind in (wrap, None):
        env = turnbudget.make("turnbudget/KeyQuest-Easy-v0", **options)
        runs[kind] = (play(env, 1, kind), env.get_wrapper_attr("records"))
    assert runs[wrap] == runs[None]


def test_the_reported_case():
    env = gym.make("turnbudget/KeyQuest-Easy-v0")
    env.reset(seed=1)
    _, _, _, _, info = env.step(AlwaysEq("look"))
    assert info["valid_action"] is True
