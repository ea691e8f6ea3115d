"""The games through GEM's door (`gem.make`), in a venv with the ``gem`` extra; skipped without it.

GEM must never be installed next to turnbudget's own test venv (its games seed the global
RNG): run these in a throwaway one, e.g.
``python3 -m venv /tmp/peers && /tmp/peers/bin/pip install gem-llm textarena pytest hypothesis -e .``
then ``/tmp/peers/bin/python -m pytest tests/adapters/test_gem.py``.
"""

from __future__ import annotations

import logging
import pickle
import random
import re

import gymnasium as gym
import numpy as np
import pytest

gem = pytest.importorskip("gem")
logging.disable(logging.INFO)  # gem's import sets the root logger to INFO

from turnbudget.adapters.gem import BOXED_INSTRUCTION, GemEnv, gem_id, register_all  # noqa: E402
from turnbudget.utils import CHECKS, check_group_seeding  # noqa: E402

MAZE = "turnbudget:Maze-Easy-v0"


def test_every_turnbudget_id_is_registered_under_gems_naming():
    ids = register_all()
    ours = sorted(i for i in gym.registry if i.startswith("turnbudget/"))
    assert ids == [gem_id(i) for i in ours] and MAZE in ids
    assert register_all() == ids  # again: nothing new, no "already registered" error
    env = gem.make(MAZE)
    assert isinstance(env, gem.Env) and env.env_id == MAZE


def test_the_game_plays_as_through_gymnasium_with_boxed_commands():
    register_all()
    env = gem.make(MAZE)
    obs, info = env.reset(seed=3)
    plain, plain_info = gym.make("turnbudget/Maze-Easy-v0").reset(seed=3)
    assert obs == f"{plain}\n\n{BOXED_INSTRUCTION}" and info == plain_info
    command = info["admissible_actions"][0]
    obs, reward, terminated, truncated, info = env.step(f"Let me think.\\boxed{{{command}}}")
    assert info["parsed_action"] == command and info["valid_action"]
    assert isinstance(reward, float) and not terminated and not truncated
    assert env.sample_random_action().startswith("\\boxed{")


def test_the_budget_truncates_without_terminating_and_the_oracle_wins():
    register_all()
    env = gem.make(MAZE, turn_budget=3, boxed=False)
    env.reset(seed=0)
    flags = [env.step("look")[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]
    env = gem.make(MAZE, boxed=False)
    env.reset(seed=0)
    game = env.env.unwrapped
    while True:
        _, reward, terminated, truncated, info = env.step(game.optimal_actions()[0])
        if terminated or truncated:
            break
    assert terminated and not truncated and reward == 1.0 and info["won"]


def test_the_gem_door_passes_the_group_seeding_check():
    """The checker on the env GEM's trainers get: unlike GEM's own games, nothing touches
    the global RNG, and the cap truncates without terminating."""
    register_all()
    report = check_group_seeding(lambda: gem.make(MAZE), idle_actions=["\\boxed{look}"])
    assert report.passed, str(report)
    assert report.checks == dict.fromkeys(CHECKS, "passed")


def test_gems_vector_env_seeds_each_env_and_leaves_the_global_rng():
    register_all()
    random.seed(1)
    np.random.seed(1)
    state = (random.getstate(), np.random.get_state()[1].copy())
    envs = gem.make_vec([MAZE, MAZE], seed=5)
    obs, _ = envs.reset(seed=5)
    assert obs[0] == gem.make(MAZE).reset(seed=5)[0]
    assert obs[1] == gem.make(MAZE).reset(seed=6)[0]
    assert random.getstate() == state[0] and (np.random.get_state()[1] == state[1]).all()


def test_an_autoreset_after_a_seeded_reset_plays_on_and_never_replays_the_first_seed():
    """After ``reset(seed=s)`` a reset without one replayed the constructor's seed, where
    Gymnasium continues the seeded RNG: GEM's vector env (which makes every env with a seed
    and autoresets without one) played each env's first task again after ``reset(seed=0)``,
    and the training seeds 0 and 1 after ``reset(seed=100)``."""
    register_all()
    envs = gem.make_vec([MAZE, MAZE], turn_budget=2)  # (made with seeds 0 and 1)
    first, _ = envs.reset(seed=100)
    for _ in range(2):  # T = 2: both truncate and autoreset
        obs, *_ = envs.step(["\\boxed{look}"] * 2)
    plain = gym.make("turnbudget/Maze-Easy-v0")
    for i in range(2):
        plain.reset(seed=100 + i)
        assert obs[i] == f"{plain.reset()[0]}\n\n{BOXED_INSTRUCTION}"  # Gymnasium's next
        assert obs[i] not in (first[i], gem.make(MAZE).reset(seed=i)[0])
    env = gem.make(MAZE, seed=7)  # the constructor's seed still starts a seedless first reset
    assert env.reset()[0] == gem.make(MAZE).reset(seed=7)[0]


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"seed": "7"}, "Expect `seed` to be an int"),
        ({"seed": 1.5}, "Expect `seed` to be an int"),
        ({"seed": -1}, "Expect `seed` to be an int"),
        ({"boxed": "no"}, "Expect `boxed` to be"),
    ],
)
def test_a_bad_seed_or_boxed_is_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        GemEnv("turnbudget/Maze-Easy-v0", **kwargs)


def test_spawn_and_bad_ids():
    register_all()
    env = gem.make(MAZE, turn_budget=7)
    env.reset(seed=2)
    env.step("\\boxed{look}")
    copy = env.spawn(same_state=True)
    assert copy.step("\\boxed{look}")[4]["turns_used"] == 2
    fresh = env.spawn()
    assert fresh.reset(seed=2)[1]["turn_budget"] == 7
    with pytest.raises(ValueError, match="Expect a turnbudget id"):
        gem_id("Maze-Easy-v0")
    with pytest.raises(TypeError, match="unexpected keyword argument 'budget'"):
        GemEnv("turnbudget/Maze-Easy-v0", budget=3)


def test_spawn_with_the_other_budget_form_replaces_the_budget_made_with():
    """A turn_budget and a budget_mix are refused together: spawning a budget_mix from an
    env made with a turn_budget (or the reverse) passed both."""
    register_all()
    mixed = GemEnv("turnbudget/Maze-Easy-v0", turn_budget=20).spawn(budget_mix=[8, 16])
    assert mixed.reset(seed=0)[1]["turn_budget"] in (8, 16)
    fixed = GemEnv("turnbudget/Maze-Easy-v0", budget_mix=[8, 16]).spawn(turn_budget=12)
    assert fixed.reset(seed=0)[1]["turn_budget"] == 12


@pytest.mark.parametrize("bad", [None, 5, b"turnbudget/Maze-Easy-v0"])
def test_gem_id_of_a_value_that_is_no_str_is_a_clear_error(bad):
    """A ValueError naming `env_id`, not an AttributeError from inside (``.startswith``)."""
    with pytest.raises(ValueError, match=f"as `env_id`, got {re.escape(repr(bad))}"):
        gem_id(bad)


@pytest.mark.parametrize(
    "bad",
    [None, 5, "CartPole-v1", "os:Nope-v0", "turnbudget/Nope-v0", "turnbudget/" + "x" * 10**6],
    ids=["none", "int", "other-game", "module", "unknown", "huge"],
)
def test_an_id_that_is_no_registered_turnbudget_id_is_refused_by_name(bad, monkeypatch):
    """gym.make's own errors: "os:Nope-v0" imported `os`, CartPole-v1 made an env whose
    actions are no text, and a 1 MB id was repeated whole."""
    imported = []
    monkeypatch.setattr(gym.envs.registration.importlib, "import_module", imported.append)
    with pytest.raises(ValueError, match=r"Expect `turnbudget_id` to be a registered") as info:
        GemEnv(bad)
    assert len(str(info.value)) < 500 and imported == []


def test_a_gem_name_plays_its_own_id_and_refuses_another():
    """`gem.make(MAZE, turnbudget_id=...)` replaced the name's registered id: Maze's name
    played Sokoban's game."""
    register_all()
    with pytest.raises(
        ValueError, match=r"Expect no `turnbudget_id` other than .*Maze-Easy"
    ) as info:
        gem.make(MAZE, turnbudget_id="turnbudget/Sokoban-Easy-v0")
    assert "turnbudget:Maze-Easy-v0" in str(info.value)
    env = gem.make(MAZE, turnbudget_id="turnbudget/Maze-Easy-v0", boxed=False)  # its own: fine
    assert env.turnbudget_id == "turnbudget/Maze-Easy-v0" and env.env_id == MAZE
    env.reset(seed=0)
    assert env.env.unwrapped.spec.id == "turnbudget/Maze-Easy-v0"
    assert pickle.loads(pickle.dumps(gem.envs.registration.ENV_REGISTRY[MAZE].entry_point))
