"""render_mode: "ansi" (text), "human" (printed), "rgb_array" (the screen drawn, for video recorders)."""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np
import pytest
from _support import native_env_ids

import turnbudget
from turnbudget.envs import render

pytest.importorskip("PIL", reason="rgb_array needs the plot extra")


@pytest.mark.parametrize("env_id", native_env_ids())
def test_rgb_array_frames_have_one_shape_and_show_the_turn(env_id):
    env = gym.make(env_id, render_mode="rgb_array", discrete_actions=6)
    env.reset(seed=0)
    first = env.render()
    assert first.dtype == np.uint8 and first.ndim == 3 and first.shape[2] == 3
    assert first.shape[0] % 16 == 0 and first.shape[1] % 16 == 0
    assert first.std() > 0  # something is drawn
    frames = [first]
    for action in range(5):
        env.step(action)
        frames.append(env.render())
    assert {f.shape for f in frames} == {first.shape}
    assert any(not np.array_equal(first, f) for f in frames[1:])


def test_the_screen_is_the_last_observation_and_its_command():
    env = gym.make("turnbudget/Maze-Easy-v0", render_mode="rgb_array")
    obs, _ = env.reset(seed=0)
    game = env.unwrapped
    assert np.array_equal(env.render(), render.text_frame(obs))
    obs, *_ = env.step("look")
    assert np.array_equal(env.render(), render.text_frame(obs, "look"))
    long = "word " * 5000  # overflowing text keeps the frame's size
    assert render.text_frame(long).shape == env.render().shape
    assert game.render_mode == "rgb_array"


def test_ansi_and_human(capsys):
    env = gym.make("turnbudget/Maze-Easy-v0", render_mode="ansi")
    obs, _ = env.reset(seed=0)
    assert env.render() == obs
    env = gym.make("turnbudget/Maze-Easy-v0", render_mode="human")
    obs, _ = env.reset(seed=0)
    assert env.render() is None and capsys.readouterr().out == obs + "\n" + obs + "\n"
    with pytest.raises(ValueError, match="render_mode"):
        gym.make("turnbudget/Maze-Easy-v0", render_mode="rgb")


def test_human_mode_shows_each_screen_as_it_is_played(capsys):
    """Gymnasium's "human": rendered during reset and step, render() need not be called.
    Nothing was shown until render() was called."""
    env = gym.make("turnbudget/Maze-Easy-v0", render_mode="human")
    screens = [env.reset(seed=0)[0]]
    screens += [env.step(command)[0] for command in ("look", "go north", "inventory")]
    assert capsys.readouterr().out == "".join(screen + "\n" for screen in screens)


def test_human_mode_shows_no_screen_of_a_slip_s_trial_copy(capsys):
    """InjectErrors plays a slip on a copy first (Sokoban: can it deadlock?): the copy's
    screens were printed too, moves never played."""
    env = gym.make("turnbudget/Sokoban-Easy-v0", render_mode="human",
                   errors={"rate": 1.0, "kinds": ["slip"]})  # fmt: skip
    env.reset(seed=0)
    for _ in range(3):
        env.step("look")
    assert capsys.readouterr().out.count("Boxes on targets") == 4  # (the reset, three steps)


@pytest.mark.parametrize("mode, frame_type", [("ansi_list", str), ("rgb_array_list", np.ndarray)])
def test_list_render_modes_collect_every_screen(mode, frame_type):
    """gym.make applies its RenderCollection for a ``_list`` mode when the entry point lists
    the base mode: every id refused both ("Expect render_mode to be one of ...")."""
    env = gym.make("turnbudget/Maze-Easy-v0", render_mode=mode)
    env.reset(seed=0)
    env.step("look")
    env.step("go north")
    frames = env.render()
    assert len(frames) == 3 and all(isinstance(f, frame_type) for f in frames)
    again = gym.make(env.spec)  # (the spec makes the same mode)
    again.reset(seed=0)
    assert len(again.render()) == 1
    with pytest.raises(ValueError, match="render_mode"):
        gym.make("turnbudget/Maze-Easy-v0", render_mode="human_list")


def test_vector_env_renders_every_sub_env():
    envs = gym.make_vec("turnbudget/Maze-Easy-v0", num_envs=2, render_mode="rgb_array")
    envs.reset(seed=0)
    frames = envs.render()
    assert len(frames) == 2 and frames[0].shape == frames[1].shape
    envs.close()


def test_without_the_plot_extra_the_first_frame_says_what_to_install(monkeypatch):
    env = turnbudget.make("turnbudget/Maze-Easy-v0", make_kwargs={"render_mode": "rgb_array"})
    env.reset(seed=0)  # making and playing never need Pillow
    render._font.cache_clear()
    monkeypatch.setitem(sys.modules, "PIL", None)
    try:
        with pytest.raises(
            gym.error.DependencyNotInstalled,
            match=r"pip install -e \"\.\[plot\]\" in the turnbudget checkout",
        ):
            env.render()
    finally:
        render._font.cache_clear()
