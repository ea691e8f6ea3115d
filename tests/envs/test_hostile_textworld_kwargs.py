"""Hostile constructor arguments and seeds of the TextWorld families: a clear error, early.

Nothing here generates a game: the refusals come before any generation, and
the one test that plays uses the shipped game 0 of CoinCollector-Easy.
"""

from __future__ import annotations

import os
import pickle
import warnings
from pathlib import Path

import gymnasium as gym
import pytest

pytest.importorskip("textworld")

from _support import copy_shipped_textworld_games

import turnbudget  # noqa: F401  (registers the ids)
from turnbudget.envs.textworld.generated import MAX_GAME_ID


@pytest.fixture
def shipped_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = copy_shipped_textworld_games(tmp_path / "cache")
    monkeypatch.setenv("TURNBUDGET_TEXTWORLD_CACHE", os.fspath(root))
    return root


@pytest.mark.parametrize("level", [151, 200, 234, 300])
def test_coin_collector_level_over_textworlds_room_limit_is_refused_at_make(level, tmp_path):
    # Before: made fine, then every reset raised TextWorld's own "more than 100 rooms" error.
    with pytest.raises(ValueError, match="Expect `level` to make at most 100 rooms"):
        gym.make("turnbudget/CoinCollector-Easy-v0", level=level, cache_dir=tmp_path)


@pytest.mark.parametrize("level", [1, 100, 101, 150, 201, 233])
def test_coin_collector_levels_within_the_room_limit_are_still_made(level, tmp_path):
    env = gym.make("turnbudget/CoinCollector-Easy-v0", level=level, cache_dir=tmp_path)
    assert env.unwrapped.level == level


@pytest.mark.parametrize("name", ["open", "cook", "cut", "drop"])
@pytest.mark.parametrize("value", ["no", "False", 0, 1, 0.5, None, [True]])
def test_cooking_switches_must_be_bools(name, value, tmp_path):
    # Before: bool(value), so cook="no" silently made a game with cooking.
    with pytest.raises(ValueError, match=f"Expect `{name}` to be True or False"):
        gym.make("turnbudget/Cooking-Easy-v0", cache_dir=tmp_path, **{name: value})


@pytest.mark.parametrize("go", [6.0, "6", True, 7])
def test_cooking_go_must_be_one_of_its_ints(go, tmp_path):
    with pytest.raises(ValueError, match="Expect `go` to be one of 1, 6, 9, 12"):
        gym.make("turnbudget/Cooking-Easy-v0", go=go, cache_dir=tmp_path)


def test_cooking_valid_switches_keep_their_settings(tmp_path):
    env = gym.make("turnbudget/Cooking-Medium-v0", cache_dir=tmp_path, drop=False)
    assert env.unwrapped.skills == {
        "recipe": 2, "take": 2, "go": 6, "open": True, "cook": True, "cut": True,
        "drop": False, "split": None,
    }  # fmt: skip


@pytest.mark.parametrize("game_file", [123, b"game.z8", [None], [Path("a.z8"), 3], {"a.z8"}])
def test_game_file_of_the_wrong_type_is_a_clear_type_error(game_file):
    # Before: "'int' object is not iterable" or "expected str, bytes or os.PathLike object".
    with pytest.raises(TypeError, match="Expect `game_file` to be a path"):
        gym.make("turnbudget/TextWorldFile-v0", game_file=game_file)


@pytest.mark.parametrize("cache_dir", [123, b"/tmp", ["/tmp"]])
def test_cache_dir_of_the_wrong_type_is_a_clear_type_error(cache_dir):
    with pytest.raises(TypeError, match="Expect `cache_dir` to be a directory path"):
        gym.make("turnbudget/CoinCollector-Easy-v0", cache_dir=cache_dir)


def test_empty_cache_dir_is_refused_not_the_working_directory():
    with pytest.raises(ValueError, match="Expect `cache_dir` to be a directory path"):
        gym.make("turnbudget/CoinCollector-Easy-v0", cache_dir="")


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("nul\0cache", "it holds a NUL character"),
        ("\udcff-cache", "it is not UTF-8 text"),  # (a name the file system takes)
        ("\ud800-cache", "it is not UTF-8 text"),
        ("x" * 5000, "File name too long"),
    ],
    ids=["nul", "not-utf8", "lone-surrogate", "too-long"],
)
def test_cache_dir_that_no_game_can_be_written_to_is_refused_when_made(name, says, tmp_path):
    """A NUL failed at reset with "embedded null byte", a name that is not UTF-8 after a game
    was generated (the interpreter opens UTF-8 paths only), one too long was a bare OSError."""
    cache_dir = f"{tmp_path}/{name}"
    with pytest.raises(ValueError, match=rf"game cache root .* cannot be used: {says}") as e:
        gym.make("turnbudget/CoinCollector-Easy-v0", cache_dir=cache_dir)
    assert len(str(e.value)) < 700  # (a path is shown up to PATH_CHARS = 512)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    "game_id",
    ["x", 1.5, True, None, -1, MAX_GAME_ID + 1, 10**5000],
    ids=["str", "float", "bool", "none", "negative", "past-32-bits", "10**5000"],
)
def test_a_game_id_that_is_no_textworld_seed_is_refused_before_the_cache_is_touched(
    game_id, tmp_path
):
    """pregenerate('x') was an AttributeError from inside TextWorld and left 'x.lock' in the
    cache; -1 a NumPy seed error; 10**5000 a ValueError about str() of long ints."""
    env = gym.make("turnbudget/CoinCollector-Easy-v0", cache_dir=tmp_path).unwrapped
    with pytest.raises(ValueError, match=r"Expect `game_id` to be an int in \[0, 4,294,967,295\]"):
        env.pregenerate(game_id)
    with pytest.raises(ValueError, match=r"Expect `game_id` to be an int in \[0, 4,294,967,295\]"):
        env.generate(game_id, tmp_path / "game.z8")
    assert list(tmp_path.iterdir()) == []


def test_seed_beyond_textworlds_32_bit_seeds_is_refused_before_anything_changes(shipped_cache):
    env = gym.make("turnbudget/CoinCollector-Easy-v0")
    game = env.unwrapped
    first, _ = env.reset(seed=0)
    after_step = game.step("look")
    # Before: numpy's "Seed must be between 0 and 2**32 - 1" from deep inside generation.
    with pytest.raises(ValueError, match="Expect `seed` to be at most 4,294,967,295"):
        game.reset(seed=MAX_GAME_ID + 1)
    # The running game is untouched (the same answer, the same move counter).
    again = game.step("look")
    assert again[0] == after_step[0]
    assert again[4]["textworld/moves"] == after_step[4]["textworld/moves"] + 1
    with pytest.raises(ValueError, match="Expect `seed` to be at most"):
        env.reset(seed=2**64 - 1)
    assert env.reset(seed=0)[0] == first


def test_large_seed_with_num_games_picks_a_game_by_modulo(shipped_cache):
    env = gym.make("turnbudget/CoinCollector-Easy-v0", num_games=1)
    assert env.reset(seed=2**40)[0] == env.reset(seed=0)[0]


@pytest.mark.parametrize(
    ("name", "value"),
    [("world_size", 101), ("world_size", 10**9), ("nb_objects", 151), ("nb_objects", 10**6),
     ("quest_length", 101), ("quest_length", 2**63)],
)  # fmt: skip
def test_custom_sizes_textworld_cannot_build_are_refused_at_make(name, value, tmp_path):
    # Before: made fine, then reset hung in TextWorld's generation (world_size=101,
    # quest_length=1000) or crashed inside it (nb_objects=1000: AttributeError).
    with pytest.raises(ValueError, match=f"Expect `{name}` to be a positive int of at most"):
        gym.make("turnbudget/TextWorldCustom-v0", cache_dir=tmp_path, **{name: value})


@pytest.mark.parametrize("value", [0, -1, True, 2.0, float("nan"), "5", None])
def test_custom_sizes_of_the_wrong_kind_are_refused(value, tmp_path):
    with pytest.raises(ValueError, match="Expect `world_size` to be a positive int"):
        gym.make("turnbudget/TextWorldCustom-v0", cache_dir=tmp_path, world_size=value)


def test_custom_sizes_at_the_limits_are_still_made(tmp_path):
    env = gym.make(
        "turnbudget/TextWorldCustom-v0", cache_dir=tmp_path, world_size=100, nb_objects=150,
        quest_length=100,
    )  # fmt: skip
    assert env.unwrapped._settings() == {"world_size": 100, "nb_objects": 150, "quest_length": 100}


def test_unpickling_a_closed_env_starts_no_interpreter(shipped_cache):
    # Before: the copy replayed the closed episode in a new interpreter process nobody used.
    from _support import child_pids

    env = gym.make("turnbudget/CoinCollector-Easy-v0").unwrapped
    first, _ = env.reset(seed=0)
    env.step("look")
    env.close()
    before = child_pids()
    copy = pickle.loads(pickle.dumps(env))
    assert child_pids() - before == set()
    with pytest.raises(gym.error.ResetNeeded):
        copy.step("look")
    assert copy.reset(seed=0)[0] == first
    copy.close()


def test_a_settings_override_under_the_ids_budget_is_said(tmp_path):
    """CoinCollector-Easy-v0 with level=50 (a coin 50 rooms away) played under the easy id's
    budget of 20 without a word: it still plays (the ids are starting points), with a warning
    naming the budget, and none when the caller sets the budget or changes no setting."""
    with pytest.warns(UserWarning, match=r"level=50 plays under the id's budget of 20 turns"):
        env = gym.make("turnbudget/CoinCollector-Easy-v0", level=50, cache_dir=tmp_path)
    assert env.unwrapped.spec.kwargs["level"] == 50
    with pytest.warns(UserWarning, match=r"go=6 plays under the id's budget of 30 turns"):
        gym.make("turnbudget/Cooking-Easy-v0", go=6, cache_dir=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym.make("turnbudget/CoinCollector-Easy-v0", level=50, turn_budget=200,
                 cache_dir=tmp_path)  # fmt: skip
        gym.make("turnbudget/CoinCollector-Easy-v0", level=5, num_games=3, cache_dir=tmp_path)
        gym.make("turnbudget/Cooking-Medium-v0", drop=False, cache_dir=tmp_path)  # its own
