"""Registration: every id from the families' data, above envs and wrappers, variants by kwargs."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import turnbudget
from turnbudget.envs import VARIANTS
from turnbudget.envs.native.maze import CONFIGS


def test_every_declared_variant_is_registered_with_its_budget():
    for variant in VARIANTS:
        spec = gym.registry[f"turnbudget/{variant.name}"]
        # The game alone; its registered wrapper puts TurnBudget (and the stack) on it last,
        # after gymnasium's own wrappers, so that max_episode_steps can become the budget.
        assert spec.entry_point == "turnbudget.registration:make_game"
        assert [w.entry_point for w in spec.additional_wrappers] == [
            "turnbudget.registration:budget_stack"
        ]
        assert spec.kwargs == {
            "game_entry_point": variant.entry_point,
            "turn_budget": variant.turn_budget,
            **variant.kwargs,
        }


def test_the_games_import_nothing_above_them():
    """envs never import wrappers, agents, eval, the cli or the registration (import-linter
    enforces this in CI; this reads the imports directly)."""
    envs = Path(turnbudget.__file__).parent / "envs"
    above = ("turnbudget.wrappers", "turnbudget.agents", "turnbudget.eval", "turnbudget.cli",
             "turnbudget.registration", "turnbudget.stack", "turnbudget.utils")  # fmt: skip
    for path in envs.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            bad = [n for n in names if n == "turnbudget" or n.startswith(above)]
            assert not bad, f"{path.relative_to(envs.parent)} imports {bad}"


def test_the_namespaced_make_imports_the_package():
    code = "import gymnasium as gym; print(gym.make('turnbudget:turnbudget/Maze-Easy-v0').spec.id)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "turnbudget/Maze-Easy-v0"


@pytest.mark.parametrize("family", ["Maze", "KeyQuest"])
def test_free_variants_take_config_fields_and_budgets_follow(family):
    env = gym.make(f"turnbudget/{family}-v0")
    assert env.unwrapped.difficulty == "easy" and env.get_wrapper_attr("turn_budget") == 30
    env = gym.make(f"turnbudget/{family}-v0", difficulty="hard", max_distance=80, min_distance=40)
    assert env.get_wrapper_attr("turn_budget") == 160  # twice the longest optimal solution
    env.reset(seed=0)
    assert 40 <= env.unwrapped.distance_to_goal() <= 80
    env = gym.make(f"turnbudget/{family}-v0", difficulty="medium", turn_budget=7)
    assert env.get_wrapper_attr("turn_budget") == 7


def test_a_bigger_maze_by_kwargs():
    env = gym.make("turnbudget/Maze-v0", width=12, height=3, min_distance=10, max_distance=20)
    assert env.unwrapped.config == CONFIGS["easy"].__class__(12, 3, 2, 10, 20)
    env.reset(seed=1)
    assert 10 <= env.unwrapped.distance_to_goal() <= 20


@pytest.mark.parametrize(
    "env_id, kwargs, error, message",
    [
        ("turnbudget/Maze-v0", {"sise": 3}, TypeError, "unexpected argument.*sise.*width, height"),
        ("turnbudget/Maze-v0", {"width": -1}, ValueError, "`width` to be a non-negative int"),
        ("turnbudget/Maze-v0", {"width": True}, ValueError, "`width` to be a non-negative int"),
        (
            "turnbudget/KeyQuest-v0",
            {"min_distance": 9, "max_distance": 3},
            ValueError,
            "min_distance",
        ),
        ("turnbudget/KeyQuest-v0", {"doors": 9}, ValueError, "1 <= `doors` <= 8"),
        ("turnbudget/Maze-v0", {"width": 1, "height": 1}, ValueError, "at least 2 rooms"),
        ("turnbudget/Maze-Easy-v0", {"difficulty": "brutal"}, ValueError, "easy', 'medium', 'hard"),
        (
            "turnbudget/CoinCollector-Easy-v0",
            {"lvl": 3},
            TypeError,
            "unexpected argument.*lvl.*level",
        ),
    ],
)
def test_unknown_or_bad_kwargs_are_clear_errors(env_id, kwargs, error, message):
    with pytest.raises(error, match=message):
        gym.make(env_id, **kwargs)


def test_an_unreachable_distance_range_is_a_clear_error_when_made():
    # 3 doors, each behind the one before: 3 keys, 3 unlocks, the treasure, the drop and a
    # step through each door are 11 turns at least, so 5..10 is out of reach. (It was a
    # RuntimeError at the first reset; the guide promises a ValueError at make time.)
    from turnbudget.envs.native.keyquest import KeyQuest

    with pytest.raises(ValueError, match=r"widen \[min_distance, max_distance\]"):
        gym.make("turnbudget/KeyQuest-v0", doors=3, max_distance=10)
    game = KeyQuest(doors=3, max_distance=10)  # the class itself: at its first reset
    with pytest.raises(ValueError, match=r"widen \[min_distance, max_distance\]"):
        game.reset(seed=0)


def test_the_readme_variant_examples_run():
    env = gym.make("turnbudget/Maze-v0", difficulty="hard", width=12, height=12, max_distance=80)
    env.reset(seed=0)
    env = gym.make("turnbudget/KeyQuest-v0", difficulty="medium", doors=3, turn_budget=80)
    _, info = env.reset(seed=0)
    assert info["turn_budget"] == 80 and len(env.unwrapped._door_colors) == 3


def _stack(env: gym.Env):
    """``env`` and every env under it."""
    while True:
        yield env
        if not hasattr(env, "env"):
            return
        env = env.env


def _config_ints(env_id: str) -> list[tuple[str, str]]:
    """(id, field) for every int field of a free variant's config."""
    game = gym.make(env_id).unwrapped
    return [
        (env_id, f.name)
        for f in dataclasses.fields(game.config)
        if isinstance(getattr(game.config, f.name), int)
    ]


# Every int argument of gym.make on a turnbudget id (the stack's, then the games' configs);
# turnbudget.make passes the same ones through, and its own `turn_budget`.
INT_ARGUMENTS = [
    ("turnbudget/Maze-Easy-v0", name)
    for name in ("turn_budget", "max_episode_steps", "env_index", "discrete_actions",
                 "text_features")
] + [
    pair
    for env_id in ("turnbudget/Maze-v0", "turnbudget/KeyQuest-v0", "turnbudget/Sokoban-v0")
    for pair in _config_ints(env_id)
]  # fmt: skip
# What `True` and `False` switch for the two options that are also switches (True: the
# wrapper's defaults, False: no wrapper); everywhere else a bool is refused, never a 1 or a 0.
SWITCHES = {"discrete_actions": "max_actions", "text_features": "size"}


@pytest.mark.parametrize("env_id, name", INT_ARGUMENTS, ids=[n for _, n in INT_ARGUMENTS])
@pytest.mark.parametrize("value", [True, False, 2.5, -1, 1e6], ids=repr)
def test_int_arguments_refuse_bools_floats_and_negatives_when_made(env_id, name, value):
    if name == "max_episode_steps" and value == -1:  # Gymnasium's "no TimeLimit"
        assert gym.make(env_id, max_episode_steps=-1).reset(seed=0)[1]["turn_budget"] == 30
        return
    if name in SWITCHES and isinstance(value, bool):
        wrappers = [type(w).__name__ for w in _stack(gym.make(env_id, **{name: value}))]
        wrapper = "DiscreteActions" if name == "discrete_actions" else "TextFeatures"
        assert (wrapper in wrappers) is value  # True: the wrapper, with its defaults
        inner = SWITCHES[name]  # the wrapper's own argument refuses a bool
        with pytest.raises(ValueError, match=f"`{inner}` to be a positive int, got {value}"):
            gym.make(env_id, **{name: {inner: value}})
        return
    named = f"({name}|{SWITCHES[name]})" if name in SWITCHES else name  # (the scalar shortcut's)
    with pytest.raises((ValueError, TypeError), match=f"`{named}`"):
        gym.make(env_id, **{name: value})
    if name == "turn_budget":
        with pytest.raises(ValueError, match="`turn_budget`"):
            turnbudget.make(env_id, turn_budget=value)


def test_switches_take_their_defaults_not_one():
    """``text_features=True`` is the wrapper with its defaults, not ``size=1``."""
    env = gym.make("turnbudget/Maze-Easy-v0", text_features=True, discrete_actions=True)
    assert env.observation_space.shape == (512,) and env.action_space.n == 16


@pytest.mark.timeout(60, method="thread")  # a 200x200 maze used to take seconds to fail on reset
@pytest.mark.parametrize("env_id, name", INT_ARGUMENTS, ids=[n for _, n in INT_ARGUMENTS])
def test_a_million_is_refused_when_made_with_its_limit_or_plays(env_id, name):
    try:
        env = gym.make(env_id, **{name: 10**6})
    except ValueError as error:
        assert "Expect" in str(error) and "1000000" in str(error).replace(",", "")
        return
    _, info = env.reset(seed=0)  # accepted: then it plays, at once
    env.step(0 if name == "discrete_actions" else "look")
    assert name in ("turn_budget", "max_episode_steps", "env_index", "max_distance",
                    "extra_passages", "discrete_actions", "text_features")  # fmt: skip


@pytest.mark.parametrize("seed", [np.int64(3), np.uint32(3)], ids=repr)
def test_a_numpy_seed_is_refused_saying_to_pass_a_python_int(seed):
    """A NumPy integer is refused, as Gymnasium's own np_random refuses it, but the message
    said "an int >= 0" of np.int64(3), which is one: it now says Python int and the fix."""
    env = gym.make("turnbudget/Maze-Easy-v0")
    with pytest.raises(ValueError, match=r"a Python int >= 0 or None .*: pass int\(seed\)"):
        env.reset(seed=seed)
    assert env.reset(seed=int(seed)) == gym.make("turnbudget/Maze-Easy-v0").reset(seed=3)


@pytest.mark.parametrize("asked", ["hard", "Medium"])
def test_an_id_that_names_a_difficulty_refuses_another(asked):
    """Maze-Easy-v0 with difficulty="hard" played hard mazes (optimal 35 to 60 turns) under
    the easy id's budget of 30, so no task fitted, and records named them easy."""
    message = (
        r"other than 'easy' for turnbudget/Maze-Easy-v0 .*"
        rf"make turnbudget/Maze-{asked.capitalize()}-v0 or turnbudget/Maze-v0 with"
    )
    with pytest.raises(ValueError, match=message):
        gym.make("turnbudget/Maze-Easy-v0", difficulty=asked)
    env = gym.make("turnbudget/Maze-Easy-v0", difficulty="Easy")  # its own, in any case
    assert env.reset(seed=0)[1]["turn_budget"] == 30 and env.unwrapped.difficulty == "easy"
    env = gym.make("turnbudget/Maze-v0", difficulty=asked)  # the free id takes any
    assert env.unwrapped.difficulty == asked.lower()
    assert gym.make(env.spec).unwrapped.difficulty == asked.lower()


@pytest.mark.parametrize(
    "env_id, kwargs",
    [
        ("turnbudget/Maze-Easy-v0", {"width": 10, "height": 10, "min_distance": 35,
                                     "max_distance": 60}),
        ("turnbudget/KeyQuest-Hard-v0", {"doors": 1}),
        ("turnbudget/Sokoban-Medium-v0", {"boxes": 1, "turn_budget": 500}),
    ],
)  # fmt: skip
def test_an_id_that_names_a_difficulty_refuses_a_config_override(env_id, kwargs):
    """Maze-Easy-v0 with width=10, height=10, min_distance=35 played 10x10 mazes (optimal 35
    to 60 turns) under the easy budget of 30, and records named them easy, as a difficulty
    override did: the free id takes the config, under a budget that follows it."""
    family, difficulty = env_id.split("/")[1].split("-")[:2]
    config = ", ".join(f"{k}={v}" for k, v in kwargs.items() if k != "turn_budget")
    message = (
        rf"Expect no config override for {env_id} .*got {config}: make "
        rf"turnbudget/{family}-v0 with difficulty='{difficulty.lower()}', {config} instead"
    )
    with pytest.raises(ValueError, match=message):
        gym.make(env_id, **kwargs)
    game = {k: v for k, v in kwargs.items() if k != "turn_budget"}
    with pytest.raises(ValueError, match=message):  # (turn_budget is make's own)
        turnbudget.make(env_id, turn_budget=kwargs.get("turn_budget"), make_kwargs=game)
    env = gym.make(f"turnbudget/{family}-v0", difficulty=difficulty.lower(), **game)
    assert all(getattr(env.unwrapped.config, k) == v for k, v in game.items())


def test_a_config_override_of_an_ids_own_value_still_plays():
    env = gym.make("turnbudget/Maze-Easy-v0", width=4, height=4)  # easy's own
    assert env.reset(seed=0)[1]["turn_budget"] == 30


def test_a_game_entry_point_override_is_refused(tmp_path):
    """game_entry_point= replaced the id's game: Maze-Easy-v0 played Sokoban under its name, and
    Maze-v0 with game_entry_point="subprocess:Popen" ran its args=... command."""
    witness = tmp_path / "ran"
    with pytest.raises(ValueError, match="Expect `game_entry_point` to be the game of a regis"):
        gym.make("turnbudget/Maze-v0", game_entry_point="subprocess:Popen",
                 args=["touch", str(witness)])  # fmt: skip
    assert not witness.exists()
    with pytest.raises(ValueError, match=r"no `game_entry_point` other than .*maze:Maze' for"):
        gym.make(
            "turnbudget/Maze-Easy-v0", game_entry_point="turnbudget.envs.native.sokoban:Sokoban"
        )
