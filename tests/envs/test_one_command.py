"""One turn is one command in the native games too: joined commands never play two actions."""

from __future__ import annotations

import copy
import itertools
import pickle

import gymnasium as gym
import pytest
from _support import native_env_ids

# Every way a text parser might join two commands, with spacing and case variants.
JOINERS = [", ", ",", ". ", ".", " then ", " THEN ", " and ", "; ", ";", "\n", " && ", " | "]
_SCRATCH = {"_last_observation", "_admissible_cache", "_text_cache", "_np_random"}
_CONSTANT = {"observation_space", "action_space", "spec", "config"}


def _world(game: gym.Env) -> dict[str, bytes]:
    """The game's state (what a refused turn may change, feedback and caches, left out)."""
    return {k: pickle.dumps(v) for k, v in vars(game).items() if k not in _SCRATCH | _CONSTANT}


def _after(game: gym.Env, command: str) -> dict[str, bytes]:
    twin = copy.deepcopy(game)
    twin.step(command)
    return _world(twin)


@pytest.mark.parametrize("env_id", native_env_ids())
def test_joined_admissible_commands_advance_the_game_by_at_most_one_command(env_id):
    env = gym.make(env_id, turn_budget=10**6)
    env.reset(seed=0)
    game = env.unwrapped
    for _ in range(3):  # the start and two states along an optimal plan
        commands = game.admissible_actions()
        before = _world(game)
        single = {c: _after(game, c) for c in commands}
        saved = copy.deepcopy(vars(game))
        for (a, b), joiner in itertools.product(itertools.product(commands, repeat=2), JOINERS):
            for text in (a + joiner + b, (a + joiner + b).upper()):
                _, _, _, _, info = game.step(text)
                after = _world(game)
                if after == before:
                    assert info["valid_action"] is False, text
                    continue
                assert after in (single[a], single[b]), text  # one command played: undo it
                vars(game).update(copy.deepcopy(saved))
        env.step(game.optimal_actions()[0])
