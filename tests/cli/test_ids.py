"""Ids as users type them: every subcommand takes what ``turnbudget list`` prints (issue 25)."""

from __future__ import annotations

import io

import pytest

from turnbudget.cli import main


def test_eval_takes_a_bare_id_as_play_does(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["eval", "--env", "Maze-Easy-v0", "--agent", "random", "--k", "1", "--t", "4",
                 "--tasks", "1", "--out", str(out), "--no-plots", "--quiet"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert "turnbudget/Maze-Easy-v0" in (out / "run.json").read_text()


@pytest.mark.parametrize("command", ["play", "eval"])
def test_a_team_game_as_listed_is_answered_with_its_route(command, capsys):
    pytest.importorskip("pettingzoo")
    assert main(["list", "--team", "--seeds", "0"]) == 0
    listed = capsys.readouterr().out.splitlines()[1].split()[0]
    argv = [command, listed] if command == "play" else ["eval", "--env", listed, "--no-plots"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"turnbudget.multiagent.make_team({listed!r})" in err
    assert "evaluate_team" in err


@pytest.mark.parametrize("typed", ["Maze-Easy", "turnbudget/Maze-Easy"])
@pytest.mark.parametrize("command", ["play", "train", "eval"])
def test_an_unversioned_id_is_its_latest_version_in_every_subcommand(
    command, typed, tmp_path, capsys, monkeypatch
):
    """gym.make plays an unversioned id at its latest version, and eval took it; play said
    "Unknown env id" and train "Expect `env_id` to be a registered env id"."""
    out = str(tmp_path / "out")
    argv = {
        "play": ["play", typed, "--seed", "0"],
        "train": ["train", "--env-id", typed, "--total-steps", "16", "--n-envs", "1",
                  "--out", out],
        "eval": ["eval", "--env", typed, "--agent", "random", "--k", "1", "--t", "4",
                 "--tasks", "1", "--out", out, "--no-plots", "--quiet"],
    }[command]  # fmt: skip
    if command == "train":
        pytest.importorskip("sb3_contrib")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # (play: the player types nothing)
    assert main(argv) == 0, capsys.readouterr().err
    if command == "play":
        assert "[30 turns left]" in capsys.readouterr().out  # (Maze-Easy-v0's budget)
    else:
        config = "config.json" if command == "train" else "run.json"
        assert "turnbudget/Maze-Easy-v0" in (tmp_path / "out" / config).read_text()


@pytest.mark.parametrize("command", ["play", "train", "eval", "probe"])
def test_a_relative_module_in_an_id_is_one_line(command, tmp_path, capsys):
    """'..:x' made import_module raise TypeError: a traceback from eval."""
    argv = {
        "play": ["play", "..:x"],
        "train": ["train", "--env-id", "..:x", "--out", str(tmp_path / "t")],
        "eval": ["eval", "--env", "..:x", "--agent", "random", "--no-plots"],
        "probe": ["probe", "--env", "..:x", "--agent", "random"],
    }[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'..' is relative" in err, err
