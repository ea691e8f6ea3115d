"""`TrainConfig` refuses a bad setting when it is made (a ValueError naming the field), and
``turnbudget train`` turns that into a one-line error, exit code 2, with nothing written."""

from __future__ import annotations

import json
import math
import re

import pytest
from _support import run_child

from turnbudget.cli import main
from turnbudget.train import TrainConfig

BAD = [
    ("bc_episodes", 0, "`bc_episodes` to be a positive int"),
    ("bc_episodes", -1, "`bc_episodes` to be a positive int"),
    ("bc_epochs", 0, "`bc_epochs` to be a positive int"),
    ("n_envs", 0, "`n_envs` to be a positive int"),
    ("torch_threads", 0, "`torch_threads` to be a positive int"),
    ("batch_size", 0, "`batch_size` to be a positive int"),
    ("total_steps", True, "`total_steps` to be a positive int"),
    ("seed", -1, "`seed` to be an int >= 0"),
    ("task_pool", -3, "`task_pool` to be an int >= 0"),
    ("gamma", math.nan, "`gamma` to be a number in (0, 1]"),
    ("gamma", 2.0, "`gamma` to be a number in (0, 1]"),
    ("gamma", 0.0, "`gamma` to be a number in (0, 1]"),
    ("bc_epsilon", math.nan, "`bc_epsilon` to be a number in [0, 1]"),
    ("bc_epsilon", 2.0, "`bc_epsilon` to be a number in [0, 1]"),
    ("learning_rate", math.inf, "`learning_rate` to be a finite number > 0"),
    ("learning_rate", 0.0, "`learning_rate` to be a finite number > 0"),
    # An int past float's range: an OverflowError that named no field.
    ("gamma", 10**400, "`gamma` to be a number in (0, 1]"),
    ("learning_rate", 10**400, "`learning_rate` to be a finite number > 0"),
    ("ent_coef", 10**400, "`ent_coef` to be a finite number >= 0"),
    # (accepted, then refused as `ProcessReward`'s `scale` once the envs were built)
    ("process_scale", -1.0, "`process_scale` to be a finite number > 0"),
    ("process_scale", 0.0, "`process_scale` to be a finite number > 0"),
    ("process_scale", 1e308, "`process_scale` to be a finite number > 0 and at most 1,000,000"),
    # Counts far past any run, that never ended or crashed (10**20 envs were made until killed).
    ("n_envs", 10**20, "`n_envs` to be at most 1,024"),
    ("bc_episodes", 10**20, "`bc_episodes` to be at most 10,000,000"),
    ("bc_epochs", 10**20, "`bc_epochs` to be at most 100,000"),
    ("n_epochs", 10**20, "`n_epochs` to be at most 10,000"),
    ("total_steps", 10**20, "`total_steps` to be at most"),
    ("net_arch", (64, 10**20), "every layer size in `net_arch` to be at most 65,536"),
    ("init", 5, "`init` to be a policy directory"),
    ("ent_coef", math.nan, "`ent_coef` to be a finite number >= 0"),
    ("net_arch", (), "`net_arch` to be a non-empty sequence of positive ints"),
    ("net_arch", (-5,), "every layer size in `net_arch` to be a positive int"),
    ("net_arch", (64, 0), "every layer size in `net_arch` to be a positive int"),
    ("net_arch", "64", "`net_arch` to be a non-empty sequence of positive ints"),
    ("env_id", "Nope-v0", "`env_id` to be a registered env id"),
    ("env_id", "", "`env_id` to be a non-empty string"),
    ("out", "", "`out` to be a non-empty string"),
    # Accepted, then: shaping on ("no" is truthy), a hidden budget shown, a crash mid-setup.
    ("env_id", "CartPole-v1", "`env_id` to be one of this package's text games"),
    ("process_reward", "no", "`process_reward` to be True or False"),
    ("progress", "yes", "`progress` to be True or False"),
    ("reveal", "bogus", "`reveal` to be 'never', 'always' or 'final=k'"),
    ("reveal", None, "`reveal` to be 'never', 'always' or 'final=k'"),
    ("budget_mix", "garbage", "`budget_mix` to be a BudgetMix string or '': Cannot parse"),
    ("budget_mix", 5, "`budget_mix` to be a BudgetMix string or ''"),
    ("seed", 2**32, "`seed` to be an int from 0 to 4,294,967,295"),
    ("task_seed_base", 2**64, "`task_seed_base` + `task_pool` to be at most"),
    (
        "budget_schedule",
        5,
        "`budget_schedule` to be a sequence (a list or tuple) of BudgetMix strings",
    ),
    (
        "budget_schedule",
        b"12",
        "`budget_schedule` to be a sequence (a list or tuple)",
    ),  # (was ('49', '50'))
    ("budget_schedule", "uniform:5-9", "`budget_schedule` to be a sequence (a list or tuple)"),
    ("budget_schedule", ["uniform:5-9", 7], "`budget_schedule` to be a sequence (a list or tuple)"),
    # A pool of 0 draws 2**31 seeds: accepted here, then refused by `TaskSeeds` after `out` was made.
    ("task_seed_base", 2**64 - 2**31 + 1, "`task_seed_base` + `task_pool` to be at most"),
    # A minibatch of one sample: MaskablePPO's advantages became NaN, then the weights.
    ("batch_size", 1, "`batch_size` to leave no minibatch of one sample"),
    ("batch_size", 3, "`batch_size` to leave no minibatch of one sample"),  # 16 x 64 = 3 x 341 + 1
    # Accepted, then "embedded null byte" (naming no field) once the envs were built.
    ("out", "runs/a\x00b", "`out` to be a path without a NUL character, got 'runs/a\\x00b'"),
    ("init", "runs/\x00", "`init` to be a path without a NUL character"),
    # A bad phase's error named neither the field nor the phase.
    (
        "budget_schedule",
        ("uniform:5-9", "uniform:40-12"),
        "every phase of `budget_schedule` to be a BudgetMix string, got 'uniform:40-12' (phase 2)",
    ),
]


@pytest.mark.parametrize(
    ("field", "value", "message"), BAD, ids=[f"{f}={v!r}"[:60] for f, v, _ in BAD]
)
def test_a_bad_field_is_a_value_error_naming_it(field, value, message):
    with pytest.raises(ValueError, match=re.escape(f"Expect {message}")):
        TrainConfig(**{field: value})


def test_an_unregistered_id_says_how_to_list_the_ids_and_suggests_the_prefix():
    with pytest.raises(ValueError, match="`turnbudget list` shows the ids"):
        TrainConfig(env_id="Nope-v0")
    with pytest.raises(ValueError, match="did you mean 'turnbudget/Maze-Easy-v0'"):
        TrainConfig(env_id="Maze-Easy-v0")


def test_the_last_seeds_and_a_batch_size_that_divides_the_rollout_are_kept():
    assert TrainConfig(task_seed_base=2**64 - 2**31).task_seed_base == 2**64 - 2**31
    assert TrainConfig(task_seed_base=2**64 - 5, task_pool=5).task_pool == 5
    assert TrainConfig(batch_size=1024).batch_size == 1024  # (16 x 64: one minibatch)
    assert TrainConfig(algo="bc", batch_size=1).batch_size == 1  # (BC fits, no advantages)


def test_a_ppo_run_with_a_minibatch_of_one_is_refused_before_writing(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["train", "--n-envs", "1", "--n-steps", "8", "--batch-size", "7",
                 "--total-steps", "8", "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "`batch_size` to leave no minibatch of one sample" in err
    assert not out.exists()


def test_good_settings_are_kept():
    config = TrainConfig(gamma=1, bc_epsilon=0, net_arch=[32], seed=0, task_pool=0)
    assert (config.gamma, config.bc_epsilon, config.net_arch) == (1, 0, (32,))


def test_numpy_numbers_are_kept_as_what_config_json_can_hold():
    """NumPy's float32 passed every check, then `json.dumps` of the config (config.json, written
    once `out` was made) raised "Object of type float32 is not JSON serializable"."""
    import dataclasses

    import numpy as np

    config = TrainConfig(
        gamma=np.float32(0.5), bc_epsilon=np.float32(0.25), learning_rate=np.float32(0.5),
        ent_coef=np.float16(0), process_scale=np.float32(2), seed=np.int64(3),
        n_envs=np.int32(2), net_arch=(np.int64(8),),
    )  # fmt: skip
    saved = json.loads(json.dumps(dataclasses.asdict(config)))
    assert (saved["gamma"], saved["bc_epsilon"], saved["process_scale"]) == (0.5, 0.25, 2.0)
    assert (saved["seed"], saved["n_envs"], saved["net_arch"]) == (3, 2, [8])
    assert type(config.gamma) is float and type(config.seed) is int


@pytest.mark.rl
def test_a_numpy_number_set_after_the_config_was_made_is_trained_with_as_a_float(tmp_path):
    """`train` checked a copy of the config, then ran the config itself: a float32 set after
    it was made failed writing config.json (a TypeError, once `out` was made)."""
    pytest.importorskip("sb3_contrib")
    import numpy as np

    from turnbudget.train import train

    config = TrainConfig(algo="bc", bc_episodes=1, bc_epochs=1, n_envs=1, out=str(tmp_path / "run"))
    config.gamma = np.float32(0.5)  # (checked again by `train`, but kept as it was)
    train(config)
    assert json.loads((tmp_path / "run" / "config.json").read_text())["gamma"] == 0.5


# (a run these tests fail to stop is short: one demonstration episode, one epoch)
CHEAP = ["--algo", "bc", "--bc-episodes", "1", "--bc-epochs", "1", "--n-envs", "1"]

FLAGS = [
    (["--bc-episodes", "0"], "`bc_episodes`"),
    (["--bc-episodes", "-1"], "`bc_episodes`"),
    (["--bc-epochs", "0"], "`bc_epochs`"),
    (["--n-envs", "0"], "`n_envs`"),
    (["--torch-threads", "0"], "`torch_threads`"),
    (["--batch-size", "0"], "`batch_size`"),
    (["--seed", "-1"], "`seed`"),
    (["--gamma", "nan"], "`gamma`"),
    (["--gamma", "2"], "`gamma`"),
    (["--bc-epsilon", "nan"], "`bc_epsilon`"),
    (["--bc-epsilon", "2"], "`bc_epsilon`"),
    (["--learning-rate", "inf"], "`learning_rate`"),
    (["--net-arch", "-5"], "`net_arch`"),
    (["--net-arch", "0"], "`net_arch`"),
    (["--net-arch", ""], "`net_arch`"),
    (["--env-id", "Nope-v0"], "`turnbudget list`"),
    (["--env-id", ""], "`env_id`"),
    (["--task-seed-base", str(2**64 - 1)], "`task_seed_base`"),
    # (ProcessReward's refusal, once the envs were built, named `scale`, which no flag is)
    (["--process-scale", "1e308"], "`process_scale`"),
]


def _without(argv: list[str], option: str) -> list[str]:
    """``argv`` of options each followed by its value, without ``option`` and its value."""
    pairs = zip(argv[::2], argv[1::2], strict=True)
    return [part for name, value in pairs if name != option for part in (name, value)]


@pytest.mark.parametrize(("flags", "named"), FLAGS, ids=[" ".join(f) for f, _ in FLAGS])
def test_the_command_line_refuses_it_in_one_line_before_writing(tmp_path, capsys, flags, named):
    out = tmp_path / "run"
    cheap = _without(CHEAP, flags[0])  # (an option given twice is refused before its value)
    code = main(["train", *cheap, "--out", str(out), *flags])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("turnbudget train: error: Expect ") and named in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("text", ["1,,2", "64,", ",64"])
def test_a_list_flag_with_an_empty_item_is_refused(tmp_path, capsys, text):
    with pytest.raises(SystemExit) as exit_:
        main(["train", *CHEAP, "--out", str(tmp_path / "run"), "--net-arch", text])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --net-arch: expect a comma-separated list of int with no empty item" in err


def test_a_schedule_with_an_empty_phase_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["train", *CHEAP, "--out", str(tmp_path / "run"),
              "--budget-schedule", "uniform:5-9,,uniform:10-20"])  # fmt: skip
    assert exit_.value.code == 2
    assert (
        "argument --budget-schedule: expect a comma-separated list of str"
        in capsys.readouterr().err
    )
    from turnbudget.cli.flags import config_from_args, config_parser

    args = config_parser(TrainConfig, "train").parse_args(["--budget-schedule", ""])
    assert config_from_args(TrainConfig, args).budget_schedule == ()  # (empty: no schedule)


# -- the Python entry points: `config` and their own arguments, checked before any work ----


def _entry_points():
    from turnbudget.train import behaviour_clone, collect_demos, make_env, train, train_ppo

    return [train, train_ppo, behaviour_clone, collect_demos, make_env]


@pytest.mark.parametrize("config", [None, 5, "ppo", {"algo": "ppo"}, TrainConfig])
def test_every_entry_point_refuses_what_is_not_a_train_config(config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for entry in _entry_points():
        with pytest.raises(TypeError, match="Expect `config` to be a TrainConfig"):
            entry(config)
    assert list(tmp_path.iterdir()) == []


def test_a_field_changed_after_the_config_was_made_is_checked_again(tmp_path):
    config = TrainConfig(out=str(tmp_path / "run"))
    config.seed = -1
    for entry in _entry_points():
        with pytest.raises(ValueError, match="`seed` to be an int >= 0"):
            entry(config)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("epsilon", [-0.1, 1.5, math.nan, True, "0.3"])
def test_collect_demos_refuses_a_bad_epsilon(epsilon):
    from turnbudget.train import collect_demos

    with pytest.raises(ValueError, match="`epsilon` to be a number in"):
        collect_demos(TrainConfig(bc_episodes=1), epsilon=epsilon)


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"index": -1}, "`index` to be an int >= 0"),
        ({"index": 1.5}, "`index` to be an int >= 0"),
        ({"index": True}, "`index` to be an int >= 0"),
        ({"process_reward": "yes"}, "`process_reward` to be True or False"),
        ({"batched": 1}, "`batched` to be True or False"),
    ],
)
def test_make_env_refuses_bad_arguments(kwargs, says):
    from turnbudget.train import make_env

    with pytest.raises(ValueError, match=says):
        make_env(TrainConfig(), **kwargs)


@pytest.mark.parametrize(
    ("base", "pool", "seed", "says"),
    [
        (-1, 10, 0, "`base` to be an int from 0"),
        (0.5, 10, 0, "`base` to be an int from 0"),
        (0, -1, 0, "`pool` to be an int >= 0"),
        (0, 10, -1, "`seed` to be an int from 0"),
        (0, 10, True, "`seed` to be an int from 0"),
        (2**64 - 5, 10, 0, "`base` \\+ `pool` to stay at most"),
        (2**64 - 5, 0, 0, "`base` \\+ `pool` to stay at most"),  # (0: 2**31 seeds)
    ],
)
def test_task_seeds_refuses_seeds_out_of_range(base, pool, seed, says):
    import gymnasium as gym

    from turnbudget.train import TaskSeeds

    with pytest.raises(ValueError, match=says):
        TaskSeeds(gym.make("turnbudget/Maze-Easy-v0"), base, pool, seed)


def test_task_seeds_draws_within_its_range_and_checks_the_reset_seed():
    import gymnasium as gym

    from turnbudget.train import TaskSeeds

    env = TaskSeeds(gym.make("turnbudget/Maze-Easy-v0"), 2**64 - 10, 10, 0)
    env.reset(seed=3)  # (the top of the seed range is reachable, never passed)
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=-1)


def test_an_init_without_a_policy_is_refused_when_ppo_starts(tmp_path):
    """Not when the config is made: a plan of runs makes its PPO arms' configs before their
    base is trained (benchmarks/train_zoo.py, benchmarks/budgetmix.py)."""
    from turnbudget.train import train_ppo

    config = TrainConfig(algo="ppo", init=str(tmp_path / "base"), out=str(tmp_path / "ppo"))
    with pytest.raises(ValueError, match=re.escape("`init` (--init) to be a directory holding")):
        train_ppo(config)
    assert not (tmp_path / "ppo").exists()


_HUGE_CONFIG_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # (a read of it whole: MemoryError)
from turnbudget.train import TrainConfig
from turnbudget.train.config import check_out
try:
    check_out(TrainConfig(out=sys.argv[1]))
except ValueError as exc:
    print("ValueError:", exc)
"""


def test_an_out_holding_a_huge_config_json_is_refused_without_reading_it_whole(tmp_path):
    """check_out read the config.json it found whole: an 8 GB file filled the memory before
    it was found to be no training config. (A sparse file: no disk is spent.)"""
    out = tmp_path / "run"
    out.mkdir()
    with open(out / "config.json", "wb") as f:
        f.truncate(2**33)
    done = run_child(_HUGE_CONFIG_CHILD, str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "holds a config.json that is no training config" in done.stdout


def test_an_out_whose_config_json_is_a_folder_is_refused_and_kept(tmp_path):
    """A folder named config.json in `out`, with nothing else of a run there, was taken, and
    the run's start removed it with everything in it."""
    from turnbudget.train._sb3 import start_out
    from turnbudget.train.config import check_out

    config = TrainConfig(out=str(tmp_path / "out"))
    kept = tmp_path / "out" / "config.json" / "notes.txt"
    kept.parent.mkdir(parents=True)
    kept.write_text("mine")
    with pytest.raises(ValueError, match=r"holds a config\.json that is no file"):
        check_out(config)
    check_out(config, overwrite=True)  # (asked to replace it: taken)
    assert kept.read_text() == "mine"
    kept.parent.rename(tmp_path / "moved")
    (tmp_path / "out" / "config.json").symlink_to(tmp_path / "nowhere")  # a dangling link
    with pytest.raises(ValueError, match=r"holds a config\.json that is no file"):
        check_out(config)
    (tmp_path / "out" / "config.json").unlink()
    check_out(config)  # an empty folder: taken
    assert start_out(config) == tmp_path / "out"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        # each count within its own cap; their products were not capped: 2**32 weights to
        # initialise orthogonally (hours), or a rollout of 825 billion floats
        ({"text_dim": 2**20, "net_arch": (4096,)}, "networks to hold at most 134,217,728 weights"),
        ({"max_actions": 4096, "command_dim": 2**10, "history": 64}, "at most 134,217,728 weights"),
        ({"text_dim": 2**16, "n_envs": 1024, "n_steps": 4096, "batch_size": 2**20},
         "rollout to hold at most 1,073,741,824 floats"),
        # BC's demonstrations were not capped: 152 GB accepted, a traceback once out was made
        ({"algo": "bc", "bc_episodes": 10**7},
         "BC's demonstrations to hold at most 1,073,741,824 floats"),
        ({"algo": "bc", "bc_episodes": 10**5, "budget_mix": "choice:8,4000"},
         r"up to 4,000 turns"),
    ],
)  # fmt: skip
def test_settings_whose_network_or_rollout_cannot_fit_are_refused(settings, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**settings)
    defaults = TrainConfig()
    assert defaults.most_features() >= 412  # (the default stack's 412 features: a bound)
    TrainConfig(text_dim=4096, net_arch=(1024, 1024))  # a large real run still passes
    TrainConfig(algo="bc", bc_episodes=10_000, budget_mix="uniform:12-40")  # and a large BC


def test_out_holding_an_exported_policy_is_refused_without_overwrite(tmp_path):
    """An exported policy's weights.npz is read before a policy.zip: training into its folder
    was taken, and the new run's name then played the old policy."""
    import shutil
    from importlib import resources

    from turnbudget.train import check_out

    out = tmp_path / "policy"
    shutil.copytree(resources.files("turnbudget") / "zoo/maze-easy/base/seed0", out)
    config = TrainConfig(env_id="turnbudget/Maze-Easy-v0", out=str(out))
    with pytest.raises(
        ValueError, match=r"holds a policy or a run \(weights.npz, encoding.json, card.json\)"
    ):
        check_out(config)
    check_out(config, overwrite=True)  # (asked for: start_out then clears them)
    for name in ("weights.npz", "card.json"):
        (out / name).unlink()
    with pytest.raises(ValueError, match=r"holds a policy or a run \(encoding.json\)"):
        check_out(config)


def test_bc_refuses_a_budget_schedule():
    """The schedule's phases split PPO's steps (total_steps / n_envs): BC's demonstrations
    all played the first phase's budgets, silently."""
    with pytest.raises(ValueError, match="Expect no `budget_schedule` with algo 'bc'"):
        TrainConfig(algo="bc", budget_schedule=("uniform:12-20", "uniform:21-40"))
    TrainConfig(algo="ppo", budget_schedule=("uniform:12-20", "uniform:21-40"))


def test_out_holding_another_tools_tensorboard_events_is_refused_without_overwrite(tmp_path):
    """The run clears TensorBoard's event files in `out`: another tool's went without a word."""
    from turnbudget.train import check_out

    out = tmp_path / "logs"
    out.mkdir()
    (out / "events.out.tfevents.1700000000.host.123.0").write_text("theirs\n")
    (out / "notes.txt").write_text("mine\n")
    config = TrainConfig(env_id="turnbudget/Maze-Easy-v0", out=str(out))
    with pytest.raises(ValueError, match=r"holds a policy or a run \(events.out.tfevents"):
        check_out(config)
    (out / "events.out.tfevents.1700000000.host.123.0").unlink()
    check_out(config)  # (unrelated files alone are taken, and kept)


def test_init_and_out_in_one_directory_are_refused_with_or_without_overwrite(tmp_path, monkeypatch):
    """``--init X --out X --overwrite`` removed X's policy (the run's start clears `out`)
    before the new one was saved: a run stopped or diverged left neither."""
    from turnbudget.train.config import check_out

    base = tmp_path / "base"
    base.mkdir()
    for name in ("policy.zip", "encoding.json", "config.json"):
        (base / name).write_text("{}")
    monkeypatch.chdir(tmp_path)
    for init in (str(base), "base", "./base/"):
        config = TrainConfig(out=str(base), init=init)
        for overwrite in (False, True):
            with pytest.raises(ValueError, match=r"`init` and `out` are one directory"):
                check_out(config, overwrite=overwrite)
    assert sorted(p.name for p in base.iterdir()) == ["config.json", "encoding.json", "policy.zip"]
    check_out(TrainConfig(out=str(tmp_path / "new"), init=str(base)))  # (another out: taken)
