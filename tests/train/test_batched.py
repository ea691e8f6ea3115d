"""The learner's vector env featurises its sub-envs in one batch (`turnbudget.train.batched`):
its vectors are those of the per-env stack (`make_env`), bit for bit (issue 26)."""

from __future__ import annotations

import numpy as np
import pytest

from turnbudget.train import TrainConfig, make_env
from turnbudget.train.batched import TRAINING_INFO_KEYS
from turnbudget.wrappers._common import find_wrapper
from turnbudget.wrappers.discrete_actions import DiscreteActions

pytestmark = pytest.mark.rl
pytest.importorskip("stable_baselines3")

CONFIGS = {
    # short budgets: most episodes end at the budget, a few sub-envs at a time
    "maze-mix": dict(env_id="turnbudget/Maze-Easy-v0", budget_mix="uniform:3-9", seed=0),
    "maze-schedule": dict(  # BudgetSchedule outside TurnInputs: 3, then 4-6, then 9 turns
        env_id="turnbudget/Maze-Easy-v0",
        budget_schedule=("3", "uniform:4-6", "9"),
        total_steps=240,
        seed=4,
    ),
    "maze-hidden": dict(
        env_id="turnbudget/Maze-Easy-v0", budget_mix="uniform:4-7", reveal="never", seed=1
    ),
    "keyquest-final": dict(
        env_id="turnbudget/KeyQuest-Easy-v0", budget_mix="uniform:4-12", reveal="final=3", seed=2
    ),
    "crafting-shaped-subproc": dict(
        env_id="turnbudget/Crafting-Easy-v0",
        budget_mix="uniform:3-8",
        process_reward=True,
        max_actions=4,  # fewer slots than admissible commands
        seed=3,
        vec_env="subproc",
    ),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_batched_vectors_are_the_per_env_stacks(name):
    from turnbudget.train import _sb3

    config = TrainConfig(n_envs=4, text_dim=32, command_dim=8, history=3, **CONFIGS[name])
    venv = _sb3.vec_env(config)
    stacks = [make_env(config, i) for i in range(config.n_envs)]
    rng = np.random.default_rng(7)
    try:
        assert venv.observation_space == stacks[0].observation_space
        assert venv.venv.observation_space.shape == (0,)  # the sub-envs hand up their turns
        obs = venv.reset()
        expected = [stack.reset()[0] for stack in stacks]
        np.testing.assert_array_equal(obs, np.array(expected))
        truncations, partial_resets = 0, 0
        returns, lengths = [0.0] * len(stacks), [0] * len(stacks)
        for _ in range(60):
            masks = venv.env_method("action_masks")
            for mask, stack in zip(masks, stacks):
                np.testing.assert_array_equal(
                    mask, find_wrapper(stack, DiscreteActions).action_masks()
                )
            actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in masks])
            obs, rewards, dones, infos = venv.step(actions)
            assert obs.dtype == np.float32
            for i, stack in enumerate(stacks):
                vector, reward, terminated, truncated, info = stack.step(int(actions[i]))
                assert (rewards[i], dones[i]) == (pytest.approx(reward), terminated or truncated)
                # what the learner reads of the infos: the small keys, SB3's and Monitor's
                assert {key: infos[i][key] for key in TRAINING_INFO_KEYS} == {
                    key: info[key] for key in TRAINING_INFO_KEYS
                }
                assert infos[i]["TimeLimit.truncated"] == (truncated and not terminated)
                returns[i] += float(reward)
                lengths[i] += 1
                if dones[i]:
                    assert infos[i]["terminal_observation"].tobytes() == vector.tobytes()
                    episode = infos[i]["episode"]
                    assert (episode["r"], episode["l"]) == (round(returns[i], 6), lengths[i])
                    returns[i], lengths[i] = 0.0, 0
                    truncations += truncated and not terminated
                    vector, _ = stack.reset()
                else:
                    assert "episode" not in infos[i]
                assert obs[i].tobytes() == vector.tobytes(), f"step vector of sub-env {i}"
                assert "turn_inputs" not in infos[i]
            partial_resets += 0 < dones.sum() < len(dones)
        assert truncations >= 3 and partial_resets >= 3, (truncations, partial_resets)
    finally:
        venv.close()
        for stack in stacks:
            stack.close()


def test_a_turn_before_the_first_reset_is_refused():
    from turnbudget.train.batched import Turn
    from turnbudget.train.stack import batch_encoder

    encoder = batch_encoder(TrainConfig(n_envs=2))
    with pytest.raises(ValueError, match="before its first reset"):
        encoder.encode([1], [Turn("You are in a hall.", ["look"], ["look"], 3, 5, executed="look")])


def test_no_turns_make_no_rows():
    from turnbudget.train.stack import batch_encoder

    encoder = batch_encoder(TrainConfig(n_envs=2))
    rows = encoder.encode([], [])
    assert rows.shape == (0, encoder.space.shape[0]) and rows.dtype == np.float32
    with pytest.raises(ValueError, match="one turn per sub-env"):
        encoder.encode([0, 1], [])


@pytest.mark.parametrize(
    "form",
    [
        lambda a: a,  # int64, as the learner sends them: played as Python ints
        lambda a: a.astype(np.uint8),
        lambda a: a.astype(np.float32),  # whole floats: played as they are
        lambda a: a.reshape(-1, 1),  # one-element rows
        lambda a: [np.int32(x) for x in a],  # not an array
    ],
)
def test_every_form_of_the_actions_plays_the_same_episodes(form):
    from turnbudget.train import _sb3

    config = TrainConfig(n_envs=3, budget_mix="uniform:3-6", seed=5)
    plain, other = _sb3.vec_env(config), _sb3.vec_env(config)
    rng = np.random.default_rng(1)
    try:
        np.testing.assert_array_equal(plain.reset(), other.reset())
        for _ in range(20):
            masks = plain.env_method("action_masks")
            actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in masks])
            expected, got = plain.step(actions), other.step(form(actions))
            for want, have in zip(expected[:3], got[:3]):
                np.testing.assert_array_equal(want, have)
            assert [set(info) for info in expected[3]] == [set(info) for info in got[3]]
        with pytest.raises(ValueError):  # one action too few
            other.step(np.zeros(2, dtype=np.int64))
    finally:
        plain.close()
        other.close()


def _ignores_ctrl_c(pid: int) -> bool:
    """Whether process ``pid`` ignores SIGINT (its SigIgn mask, from /proc)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            mask = next(line for line in f if line.startswith("SigIgn:")).split()[1]
    except (OSError, StopIteration):
        return False
    return bool(int(mask, 16) & (1 << (2 - 1)))  # (bit n - 1 for signal n; SIGINT is 2)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


@pytest.mark.timeout(600, method="thread")  # a guard: the waits have no deadline
def test_ctrl_c_during_training_in_sub_env_processes_is_one_line_and_exit_130(tmp_path):
    """A terminal's Ctrl-C reaches every process of its group: the sub-envs died with it, and
    the trainer's close of them raised EOFError over the KeyboardInterrupt (70 lines, exit
    1; the default in-process envs said one line, exit 130). The interrupt lands once both
    sub-env processes run (they ignore it), an event, not a time."""
    import os
    import signal
    import subprocess
    import sys

    from _faults import wait_until
    from _support import HANG_GUARD

    code = (
        "import signal, sys\n"  # (Python's own handler, as from a terminal: see test_interrupt)
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from turnbudget.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    command = [sys.executable, "-c", code, "train", "--vec-env", "subproc", "--n-envs", "2",
               "--n-steps", "64", "--batch-size", "64", "--total-steps", "100000000",
               "--log", "none", "--out", str(tmp_path / "run")]  # fmt: skip
    proc = subprocess.Popen(command, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        started = wait_until(
            lambda: len(kids := _children(proc.pid)) >= 2 and all(map(_ignores_ctrl_c, kids)),
            proc,
        )
        assert started, proc.communicate(timeout=HANG_GUARD)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=HANG_GUARD)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=HANG_GUARD)
    assert proc.returncode == 130, err[-3000:]
    assert err == "turnbudget train: interrupted: stopped\n", err[-3000:]
