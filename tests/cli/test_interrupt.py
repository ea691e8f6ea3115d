"""Ctrl-C: one line saying what was saved, exit code 130, no traceback.

The interrupt is raised in-process where the command's work runs. (A real SIGINT sent to a
running `eval` in its own session hung CI once, the interrupt swallowed mid-run: that case
is open, see the stop's note.)
"""

from __future__ import annotations

from turnbudget.cli import main
from turnbudget.records import EPISODES_FILE

MAZE = "turnbudget/Maze-Easy-v0"


def test_ctrl_c_during_eval_is_one_line(monkeypatch, capsys, tmp_path):
    from turnbudget import eval as eval_package

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(eval_package, "evaluate", interrupted)
    out = tmp_path / "run"
    argv = ["eval", "--env", MAZE, "--k", "1", "--t", "3", "--tasks", "1", "--out", str(out)]
    assert main([*argv, "--quiet", "--no-plots"]) == 130
    assert capsys.readouterr().err == (
        f"turnbudget eval: interrupted: 0 episodes saved in {out}; "
        "rerun the same command to resume\n"
    )


def test_ctrl_c_during_validate_is_one_line(monkeypatch, capsys):
    from turnbudget.eval.probes import validate

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(validate, "validate", interrupted)
    assert main(["validate", "--env", MAZE, "--tasks", "1", "--quiet"]) == 130
    err = capsys.readouterr().err
    assert err.startswith("turnbudget validate: interrupted: no probe result saved")
    assert err.count("\n") == 1


def test_ctrl_c_in_any_other_command_is_one_line(monkeypatch, capsys):
    from turnbudget.cli import list as list_command

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(list_command, "run", interrupted)
    assert main(["list"]) == 130
    assert capsys.readouterr().err == "turnbudget list: interrupted: stopped\n"


def test_the_interrupt_message_counts_only_whole_episode_lines(tmp_path):
    from turnbudget.cli.eval import _saved_episodes

    assert _saved_episodes(tmp_path / "none").startswith("0 episodes saved")
    (tmp_path / EPISODES_FILE).write_bytes(b'{"a": 1}\n{"b": 2}\n{"torn')
    assert _saved_episodes(tmp_path) == (
        f"2 episodes saved in {tmp_path}; rerun the same command to resume"
    )
