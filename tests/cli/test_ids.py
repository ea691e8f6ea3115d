"""Ids as users type them: every subcommand takes what ``turnbudget list`` prints (issue 25)."""

from __future__ import annotations

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
