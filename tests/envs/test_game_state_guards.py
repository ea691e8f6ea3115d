"""A game's world is only ever the one its last successful reset made: a refused reset or a
check of its settings never leaves a half-built or another world to play; its messages say
what is so; bad arguments to its helpers name themselves."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import turnbudget  # noqa: F401 - registers the envs
from turnbudget.envs.native.crafting import Crafting
from turnbudget.envs.native.keyquest import KeyQuest
from turnbudget.envs.native.maze import Maze
from turnbudget.envs.native.sokoban import Sokoban


def test_a_refused_reset_leaves_no_world_to_play():
    """Seed 1 cannot make this world: the reset is refused, and the next step played a world
    half rebuilt by the failed try (a stone sword's goal, a ladder's target, distance 18 where
    the settings allow 7)."""
    game = Crafting("medium", min_distance=7, max_distance=7, max_head_start=3, max_goal_count=1)
    game.reset(seed=0)
    with pytest.raises(ValueError):
        game.reset(seed=1)
    with pytest.raises(gym.error.ResetNeeded):
        game.step("look")
    with pytest.raises(gym.error.ResetNeeded):
        game.distance_to_goal()
    _, info = game.reset(seed=0)  # (a seed it can make: playable again)
    assert game.distance_to_goal() == 7 and info["admissible_actions"]


def test_checking_the_settings_mid_episode_leaves_the_world_as_it_was():
    game = Maze()
    game.reset(seed=5)
    before = (game.goal, game.distance_to_goal(), game.optimal_actions())
    state = game.np_random.bit_generator.state
    game.check_generates()
    assert (game.goal, game.distance_to_goal(), game.optimal_actions()) == before
    assert game.np_random.bit_generator.state == state


def test_unlocking_an_open_door_says_it_is_open_not_that_the_key_is_missing():
    game = KeyQuest("easy")
    game.reset(seed=0)
    while True:
        command = game.optimal_actions()[0]
        game.step(command)
        if command.startswith("unlock"):
            break
    observation, *_ = game.step(command)
    assert observation.startswith(f"The {command.split()[1]} door is already open.")
    assert "without its key" not in observation


def test_a_results_page_that_cannot_fit_one_observation_is_refused_at_make_time():
    """1,000 results a page were cut at 8,192 characters, mid-line, with view commands
    admissible for products the agent could not see."""
    with pytest.raises(ValueError, match=r"`page_size` to be from 1 to 100"):
        gym.make("turnbudget/Shop-v0", page_size=1000, catalog=3000)
    env = gym.make("turnbudget/Shop-v0", page_size=100, catalog=3000)
    env.reset(seed=0)
    words = [a for a in env.unwrapped._admissible() if a.startswith("search ")]
    longest = 0
    for word in words:
        env.reset(seed=0)
        observation, _, _, _, info = env.step(word)
        longest = max(longest, len(observation))
        assert "Still to buy" in observation
        for command in info["admissible_actions"]:
            if command.startswith("view "):
                assert f"[{command[5:]}]" in observation
    assert longest > 3000  # (full pages were shown)


def test_the_list_answer_above_a_full_page_fits_one_observation_or_is_refused():
    """50 items and 100 results a page each fit alone, but `list` on a results page put the
    whole list above the page: 8,192 characters cut mid-line, 14 of 100 admissible view
    commands naming products the agent could not see."""
    shop = dict(catalog=2000, near_misses=3, min_distance=1, max_distance=1000)
    with pytest.raises(ValueError, match=r"fit in one observation .* items=50 and page_size=100"):
        gym.make("turnbudget/Shop-v0", items=50, page_size=100, **shop)
    env = gym.make("turnbudget/Shop-v0", items=50, page_size=40, **shop)
    longest = 0
    for seed in range(3):
        env.reset(seed=seed)
        for word in ("hoodie", "Pinecrest", "headphones", "cotton"):
            env.step(f"search {word}")
            observation, _, _, _, info = env.step("list")
            longest = max(longest, len(observation))
            assert observation.endswith("(type `list` to see the list).")
            views = [c[5:] for c in info["admissible_actions"] if c.startswith("view ")]
            assert views and all(f"[{code}]" in observation for code in views)
    assert longest > 6000  # (long lists above full pages were shown)


@pytest.mark.parametrize("level", [5, None, b"#@$.#"])
def test_load_level_refuses_what_is_no_text_by_name(level):
    game = Sokoban()
    game.reset(seed=0)
    with pytest.raises(TypeError, match=r"Expect `text` to be a level as a str"):
        game.load_level(level)


def test_a_huge_command_is_drawn_from_its_first_screenful():
    """The whole command went through textwrap (quadratic in a word's length: 10 million
    characters took 55 s a frame) though only a screenful can show."""
    pytest.importorskip("PIL")
    from turnbudget.envs.render import COLUMNS, ROWS, text_frame

    command = "x" * (COLUMNS * ROWS) + "y" * 10**6
    assert np.array_equal(
        text_frame("You look.", command), text_frame("You look.", command[: COLUMNS * ROWS])
    )
