"""The envs in the RL libraries users already run, with the real libraries (marker ``compat``).

Each test reaches the classic-RL stack the way that library's users do: by a
string id and keyword arguments (``"turnbudget:..."`` where workers start a
fresh interpreter, so they import the package before making the env).
Run with ``pytest -m compat`` after ``pip install -e ".[dev,rl,compat]"``.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import turnbudget  # noqa: F401  (registers the ids in this process)

pytestmark = pytest.mark.compat

MAZE = "turnbudget/Maze-Easy-v0"
# Fresh interpreters (forkserver, spawn) import the module before the ``:`` first.
MAZE_ANYWHERE = f"turnbudget:{MAZE}"
STACK = {"discrete_actions": 8, "text_features": 32}


def test_sb3_make_vec_env_in_subprocesses_and_maskable_ppo_learns():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.env_checker import check_env
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    check_env(gym.make(MAZE, **STACK))
    venv = make_vec_env(
        MAZE_ANYWHERE,  # SubprocVecEnv starts its workers with forkserver
        n_envs=2,
        seed=0,
        vec_env_cls=SubprocVecEnv,
        env_kwargs={**STACK, "budget_mix": [10, 30]},
    )
    try:
        assert venv.render_mode == "rgb_array"  # make_vec_env's default: accepted and drawn
        venv.reset()
        frame = venv.render()
        assert frame.dtype == np.uint8 and frame.ndim == 3
        model = MaskablePPO("MlpPolicy", venv, n_steps=128, batch_size=64, n_epochs=2, seed=0)
        model.learn(1024)
        logged = model.logger.name_to_value
        assert logged["train/n_updates"] > 0
        assert all(math.isfinite(logged[k]) for k in ("train/loss", "train/value_loss"))
        assert len(model.ep_info_buffer) > 0  # episodes ended (won or out of turns)
    finally:
        venv.close()


def test_torchrl_gym_env_single_and_vectorized():
    pytest.importorskip("torchrl")
    from torchrl.envs import GymEnv
    from torchrl.envs.utils import check_env_specs

    env = GymEnv(MAZE, **STACK)
    check_env_specs(env)
    assert env.rollout(10).batch_size == (10,)
    venv = GymEnv(MAZE_ANYWHERE, num_envs=2, max_episode_steps=6, **STACK)
    try:
        check_env_specs(venv)
        rollout = venv.rollout(25, break_when_any_done=False)
        assert rollout.batch_size == (2, 25)
        step = rollout["next"]
        assert step["won"].dtype.is_floating_point is False and step["action_mask"].shape[-1] == 8
        assert not (step["terminated"] & step["truncated"]).any()
        # max_episode_steps=6 became the turn budget: every episode is cut after 6 turns.
        ends = step["truncated"].reshape(2, 25).nonzero()[:, 1].tolist()
        assert ends == [5, 11, 17, 23] * 2
    finally:
        venv.close()


@pytest.mark.parametrize("vector", ["DummyVectorEnv", "SubprocVectorEnv"])
def test_tianshou_collectors_with_a_random_policy(vector):
    tianshou_env = pytest.importorskip("tianshou.env")
    from tianshou.algorithm.algorithm_base import RandomActionPolicy
    from tianshou.data import Collector, VectorReplayBuffer

    venv = getattr(tianshou_env, vector)([lambda: gym.make(MAZE, **STACK) for _ in range(2)])
    try:
        # Its random actor sends np.float32 indices, which DiscreteActions takes.
        policy = RandomActionPolicy(gym.make(MAZE, **STACK).action_space)
        buffer = VectorReplayBuffer(400, 2)
        collector = Collector(policy, venv, buffer)
        collector.reset()
        result = collector.collect(n_step=120)
        assert result.n_collected_steps == 120 and len(buffer) == 120
        info = buffer.info  # the replay buffer stacked every info key
        assert info.action_mask.shape == (400, 8) and info.action_mask.dtype == np.bool_
        assert info.turns_left.dtype == np.int64
        assert not (buffer.terminated & buffer.truncated).any()
        if vector == "SubprocVectorEnv":
            # DummyVectorEnv reads spaces from env.unwrapped (the text game): random=True
            # samples text there; its workers' `get_env_attr` is Tianshou's to fix.
            assert collector.collect(n_step=20, random=True).n_collected_steps == 20
    finally:
        venv.close()


def test_gymnasium_record_video_on_rgb_array(tmp_path):
    pytest.importorskip("moviepy")
    from gymnasium.wrappers import RecordVideo

    env = RecordVideo(
        gym.make(MAZE, render_mode="rgb_array", turn_budget=6, **STACK),
        str(tmp_path / "videos"),
        episode_trigger=lambda episode: True,
        disable_logger=True,
    )
    for seed in range(2):
        env.reset(seed=seed)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(0)
            done = terminated or truncated
    env.close()
    videos = sorted((tmp_path / "videos").glob("*.mp4"))
    assert len(videos) == 2 and all(v.stat().st_size > 1000 for v in videos)


def test_sb3_vec_env_with_max_episode_steps_never_sets_both_flags():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env(MAZE, n_envs=2, seed=0, env_kwargs={"max_episode_steps": 5, **STACK})
    venv.reset()
    ends = 0
    for _ in range(40):
        masks = np.stack(venv.env_method("action_masks"))
        actions = [int(np.flatnonzero(m)[0]) for m in masks]
        _, _, dones, infos = venv.step(np.array(actions))
        for done, info in zip(dones, infos):
            if done:
                ends += 1
                assert info["turns_used"] <= 5
                # SB3 reports a truncation as TimeLimit.truncated; a win is never one.
                assert not (info["won"] and info["TimeLimit.truncated"])
    assert ends >= 2
    venv.close()


def test_supersuit_vector_envs_and_sb3_ppo_on_a_team_game():
    """SuperSuit's conversion of a team game's numeric form, stepped, then SB3's PPO on it (issue 25)."""
    ss = pytest.importorskip("supersuit")
    from stable_baselines3 import PPO

    from turnbudget.multiagent import make_team

    env = make_team("vault_v0", discrete_actions=8, text_features=64, budget_mix=[6, 12])
    venv = ss.pettingzoo_env_to_vec_env_v1(env)  # one sub-env per agent: operator, runner
    venv = ss.concat_vec_envs_v1(venv, 2, num_cpus=0, base_class="stable_baselines3")
    try:
        assert venv.num_envs == 4
        obs, _ = venv.venv.reset(seed=0)  # SuperSuit's own reset seeds the games
        assert obs.shape == (4, 64) and obs.dtype == np.float32
        ends = 0
        for _ in range(30):  # past several budgets: the games end and restart inside
            obs, rewards, dones, infos = venv.step(np.zeros(4, dtype=np.int64))
            assert obs.shape == (4, 64) and rewards.shape == dones.shape == (4,)
            for info in infos:
                assert info["action_mask"].dtype == np.int8 and info["action_mask"].shape == (8,)
                assert info["turns_left"].dtype == np.int64
            ends += int(dones.sum())
        assert ends >= 4  # every agent of both games finished at least one episode
        # No PPO(seed=...): it calls VecEnv.seed, which SuperSuit's wrapper lacks.
        model = PPO("MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=1)
        model.learn(256)
        assert model.logger.name_to_value["train/n_updates"] > 0
    finally:
        venv.close()
