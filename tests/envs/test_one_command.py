"""One turn is one command in the native games too: joined commands never play two actions."""

from __future__ import annotations

import copy
import itertools
import pickle

import gymnasium as gym
import numpy as np
import pytest
from _support import native_env_ids

# Every way a text parser might join two commands, with spacing and case variants.
JOINERS = [", ", ",", ". ", ".", " then ", " THEN ", " and ", "; ", ";", "\n", " && ", " | "]
# Caches a refused turn may fill (Maze spells a room on first sight, Sokoban's solver
# memoizes what any probe asked it, Sokoban each state's view, Crafting what each set of
# held tools allows), and the screen (the last observation and the command shown with it):
# feedback, not game state.
_SCRATCH = {
    "_last_observation",
    "_screen_command",
    "_admissible_cache",
    "_text_cache",
    "_np_random",
    "_room_view",
    "_solver",
    "_views",  # Sokoban memoizes each state's view per world
    "_by_tools",  # Crafting: the commands each set of held tools allows, per world
}
_CONSTANT = {"observation_space", "action_space", "spec", "config"}
# Every ordered pair up to 16 admissible commands (all of Maze, KeyQuest, Crafting, Sokoban).
_MAX_PAIRS = 256
# Shop's larger stores (~6 s of the ~9 s) join their commands in the `slow` suite; Shop-Easy
# runs the same rules in the default one.
LARGE = {"turnbudget/Shop-Medium-v0", "turnbudget/Shop-Hard-v0"}


def _world(game: gym.Env) -> dict[str, bytes]:
    """The game's state (what a refused turn may change, feedback and caches, left out)."""
    return {k: pickle.dumps(v) for k, v in vars(game).items() if k not in _SCRATCH | _CONSTANT}


def _after(game: gym.Env, command: str) -> dict[str, bytes]:
    twin = copy.deepcopy(game)
    twin.step(command)
    return _world(twin)


@pytest.mark.parametrize(
    "env_id",
    [pytest.param(i, marks=pytest.mark.slow) if i in LARGE else i for i in native_env_ids()],
)
def test_joined_admissible_commands_advance_the_game_by_at_most_one_command(env_id):
    env = gym.make(env_id, turn_budget=10**6)
    env.reset(seed=0)
    game = env.unwrapped
    for _ in range(3):  # the start and two states along an optimal plan
        commands = game.admissible_actions()
        before = _world(game)
        single = {c: _after(game, c) for c in commands}
        saved = copy.deepcopy(vars(game))
        pairs = list(itertools.product(commands, repeat=2))
        if len(pairs) > _MAX_PAIRS:  # Shop lists ~50 searches: a seeded sample of its pairs
            picks = np.random.default_rng(0).choice(len(pairs), _MAX_PAIRS, replace=False)
            pairs = [pairs[i] for i in sorted(picks)]
        for (a, b), joiner in itertools.product(pairs, JOINERS):
            for text in (a + joiner + b, (a + joiner + b).upper()):
                _, _, _, _, info = game.step(text)
                after = _world(game)
                if after == before:
                    assert info["valid_action"] is False, text
                    continue
                assert after in (single[a], single[b]), text  # one command played: undo it
                vars(game).update(copy.deepcopy(saved))
        env.step(game.optimal_actions()[0])
