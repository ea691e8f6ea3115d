"""``turnbudget train`` without the rl extra: the help, a clear error, a light import."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from _support import HANG_GUARD

from turnbudget.cli import main

# Python with torch and SB3 made unimportable (a None entry in sys.modules stops an import).
WITHOUT_RL = (
    "import sys\n"
    "for name in ('torch', 'stable_baselines3', 'sb3_contrib'):\n"
    "    sys.modules[name] = None\n"
)


def run_without_rl(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_RL + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )


def test_help_works_without_torch_and_says_how_to_install_it():
    out = run_without_rl("from turnbudget.cli import main; main(['train', '--help'])")
    assert out.returncode == 0, out.stderr
    assert "pip install -e '.[rl]' in the turnbudget checkout" in out.stdout
    flags = ("--algo", "--budget-mix", "--budget-schedule", "--process-reward", "--init",
             "--bc-episodes")  # fmt: skip
    for flag in flags:
        assert flag in out.stdout
    assert "Directory for the saved policy" in out.stdout  # the field docs are the flags' help


def test_a_run_without_torch_stops_with_the_install_command(tmp_path):
    out = run_without_rl(
        f"""
        from turnbudget.cli import main
        sys.exit(main(['train', '--algo', 'bc', '--out', {str(tmp_path / "bc")!r}]))
        """
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("turnbudget train: error: Training needs the rl extra")
    assert "pip install -e '.[rl]' in the turnbudget checkout" in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "bc").exists()  # nothing written before the check


def test_train_takes_an_env_id_without_its_namespace_as_every_subcommand_does(tmp_path):
    """``--env-id Maze-Easy-v0`` was refused ("did you mean 'turnbudget/Maze-Easy-v0'?")
    where eval, probe and play take it: here it gets as far as the missing rl extra."""
    out = run_without_rl(
        f"""
        from turnbudget.cli import main
        sys.exit(main(['train', '--algo', 'bc', '--env-id', 'Maze-Easy-v0',
                       '--out', {str(tmp_path / "bc")!r}]))
        """
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("turnbudget train: error: Training needs the rl extra")


def test_importing_the_package_loads_neither_torch_nor_sb3():
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, turnbudget, turnbudget.train, turnbudget.cli.train; "
            "print(sorted(m for m in ('torch', 'stable_baselines3', 'sb3_contrib') "
            "if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_bad_setting_is_a_one_line_error(tmp_path, capsys):
    code = main(["train", "--algo", "sft", "--out", str(tmp_path / "x")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "turnbudget train: error: Expect `algo` to be one of ('ppo', 'bc'), got 'sft'"
    )
    assert not (tmp_path / "x").exists()


def test_the_command_line_reads_only_the_config_until_a_run_starts():
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from turnbudget.cli import build_parser; "
            "build_parser(); print(sorted(m for m in sys.modules if m.startswith('turnbudget.train')))",
        ],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['turnbudget.train', 'turnbudget.train.config']"


def test_a_tuple_flag_with_an_empty_default_takes_its_type_from_the_annotation():
    """``--budget-schedule`` (default ``()``): the parser used to index the empty default and
    fail, taking every ``turnbudget`` subcommand's help down with it."""
    from turnbudget.cli.flags import config_from_args, config_parser
    from turnbudget.train import TrainConfig

    parser = config_parser(TrainConfig, "train")
    args = parser.parse_args(["--budget-schedule", "uniform:12-20,uniform:21-40"])
    config = config_from_args(TrainConfig, args)
    assert config.budget_schedule == ("uniform:12-20", "uniform:21-40")
    assert config_from_args(TrainConfig, parser.parse_args([])).budget_schedule == ()


@pytest.mark.parametrize(
    "flag, phases",
    [
        ("choice:8,12,choice:30,40", ("choice:8,12", "choice:30,40")),
        ("choice:8,12,uniform:20-30,40", ("choice:8,12", "uniform:20-30", "40")),
        ("12,20", ("12", "20")),  # (two fixed budgets)
        ("10,20;30,40", ("10,20", "30,40")),
        # (spelt as BudgetMix.parse reads it: three phases, the choice's 12 alone)
        ("Choice :8,12,uniform:30-40", ("Choice :8,12", "uniform:30-40")),
    ],
)
def test_a_budget_schedules_phases_keep_their_own_commas(flag, phases):
    """Every comma split the schedule: "choice:8,12,choice:30,40" trained four phases of fixed
    budgets 8, 12, 30 and 40, a quarter of the steps each, without a word."""
    from turnbudget.cli.flags import config_from_args, config_parser
    from turnbudget.train import TrainConfig

    parser = config_parser(TrainConfig, "train")
    config = config_from_args(TrainConfig, parser.parse_args(["--budget-schedule", flag]))
    assert config.budget_schedule == phases


def test_an_empty_phase_of_a_budget_schedule_is_a_usage_error(capsys):
    from turnbudget.cli.flags import config_parser
    from turnbudget.train import TrainConfig

    with pytest.raises(SystemExit):
        config_parser(TrainConfig, "train").parse_args(["--budget-schedule", "uniform:8-12,,20"])
    assert "with no empty item" in capsys.readouterr().err
