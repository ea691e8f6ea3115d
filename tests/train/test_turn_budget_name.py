"""`TrainConfig.turn_budget` and ``--turn-budget``: one name per idea (issue 25), the old ``budget``
accepted with a deprecation for one release."""

from __future__ import annotations

import dataclasses

import pytest

import turnbudget.train
from turnbudget.cli import main
from turnbudget.train import TrainConfig


def test_train_config_says_turn_budget_and_takes_the_old_name_with_a_warning():
    assert "turn_budget" in {f.name for f in dataclasses.fields(TrainConfig)}
    assert TrainConfig(turn_budget=12).turn_budget == 12
    with pytest.warns(DeprecationWarning, match=r"TrainConfig\(budget=\) is deprecated"):
        config = TrainConfig(budget=12)
    assert config.turn_budget == 12
    assert "budget" not in dataclasses.asdict(config)  # config.json says turn_budget only
    assert dataclasses.replace(config, seed=1).turn_budget == 12
    with pytest.raises(TypeError, match="pass `turn_budget`"):
        TrainConfig(turn_budget=40, budget=20)


def test_the_command_line_says_turn_budget_and_takes_the_old_flag(monkeypatch, tmp_path, capsys):
    seen = []
    monkeypatch.setattr(turnbudget.train, "train", lambda config, **_: seen.append(config) or {})
    out = str(tmp_path / "run")
    assert main(["train", "--turn-budget", "12", "--out", out]) == 0
    assert main(["train", "--budget", "14", "--out", out]) == 0
    assert [config.turn_budget for config in seen] == [12, 14]
    assert "--budget is deprecated: use --turn-budget" in capsys.readouterr().err
    assert main(["train", "--budget", "14", "--turn-budget", "12", "--out", out]) == 2
    assert "pass --turn-budget" in capsys.readouterr().err
    # (the default's own value given: the old flag won over it, silently)
    assert main(["train", "--budget", "20", "--turn-budget", "30", "--out", out]) == 2
    assert "pass --turn-budget" in capsys.readouterr().err
    assert main(["train", "--out", out]) == 0 and seen[-1].turn_budget == TrainConfig.turn_budget
