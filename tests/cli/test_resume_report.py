"""A finished run's resume returns at once, and report writing is announced (issue 25)."""

from __future__ import annotations

import pytest

import turnbudget.eval.report
from turnbudget.cli import main

RUN = ["eval", "--env", "Maze-Easy-v0", "--k", "1", "--t", "4", "--tasks", "2", "--no-plots"]


@pytest.fixture
def builds(monkeypatch):
    """The run directories `build_report` was called on."""
    calls = []
    build = turnbudget.eval.report.build_report
    monkeypatch.setattr(
        turnbudget.eval.report,
        "build_report",
        lambda out, **kw: calls.append(out) or build(out, **kw),
    )
    return calls


def test_resuming_a_finished_run_does_not_rebuild_its_report(tmp_path, builds, capsys):
    out = tmp_path / "run"
    assert main([*RUN, "--out", str(out)]) == 0
    assert "writing the report" in capsys.readouterr().err  # said while it is written
    assert main([*RUN, "--out", str(out)]) == 0
    assert builds == [out]  # the second call found it up to date
    assert "(0 run now)" in capsys.readouterr().out
    (out / "report.md").unlink()
    assert main([*RUN, "--out", str(out), "--quiet"]) == 0
    assert builds == [out, out] and (out / "report.md").exists()
