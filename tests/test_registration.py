"""Registration: every id from the families' data, above envs and wrappers, variants by kwargs."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
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


def test_an_unreachable_distance_range_is_a_clear_error_on_reset():
    # 3 doors, each behind the one before: 3 keys, 3 unlocks, the treasure, the drop and a
    # step through each door are 11 turns at least, so 5..10 is out of reach
    env = gym.make("turnbudget/KeyQuest-v0", doors=3, max_distance=10)
    with pytest.raises(RuntimeError, match=r"widen \[min_distance, max_distance\]"):
        env.reset(seed=0)


def test_the_readme_variant_examples_run():
    env = gym.make("turnbudget/Maze-v0", difficulty="hard", width=12, height=12, max_distance=80)
    env.reset(seed=0)
    env = gym.make("turnbudget/KeyQuest-v0", difficulty="medium", doors=3, turn_budget=80)
    _, info = env.reset(seed=0)
    assert info["turn_budget"] == 80 and len(env.unwrapped._door_colors) == 3
