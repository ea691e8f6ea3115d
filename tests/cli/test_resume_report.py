"""A finished run's resume returns at once, and report writing is announced (issue 25)."""

from __future__ import annotations

from pathlib import Path

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


@pytest.mark.parametrize("name", ["report.md", "summary.json"])
def test_a_report_file_that_is_a_directory_is_no_current_report(name, tmp_path, capsys):
    """A finished run whose report.md (or summary.json) was a directory, newer than its logs:
    the resumed run found its report current and announced the directory as its report,
    exit code 0. Now it rebuilds the report, which names the file it cannot write."""
    out = tmp_path / "run"
    assert main([*RUN, "--out", str(out), "--quiet"]) == 0
    (out / name).unlink()
    (out / name).mkdir()
    capsys.readouterr()
    assert main([*RUN, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(out / name) in err and "Is a directory" in err, err


def test_a_report_stopped_while_plotting_is_rebuilt_whole_on_resume(tmp_path, monkeypatch):
    """Ctrl-C between two plots, then the same command again: every plot is the new run's.
    The curve `report_is_current` reads was written before the recovery plots, so a stop
    between them left an earlier run's recovery plots, and the rerun kept them (exit 0)."""
    import turnbudget.eval.report.plots as plots

    out = tmp_path / "run"
    first = ["eval", "--env", "Maze-Easy-v0", "--k", "1", "--t", "4,8", "--tasks", "2",
             "--errors", "0.3", "--out", str(out), "--quiet"]  # fmt: skip
    assert main([*first, "--agent", "random"]) == 0
    second = [*first, "--agent", "oracle:0.2", "--overwrite"]
    plot_recovery = plots.plot_recovery

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(plots, "plot_recovery", interrupted)
    assert main(second) != 0
    monkeypatch.setattr(plots, "plot_recovery", plot_recovery)
    second = [arg for arg in second if arg != "--overwrite"]  # the rerun the message asks for
    assert main(second) == 0
    written = (out / "summary.json").stat().st_mtime_ns
    for png in ("recovery.png", "pass_at_1_curve.png"):
        assert (out / png).stat().st_mtime_ns >= written, png


def test_overwrite_discards_the_old_run_s_report_and_only_it(tmp_path, monkeypatch):
    """--overwrite starts afresh: the old run's summary, tables and plots go with its logs
    (they described the old agent beside the new run.json until the new report, and the old
    label's heatmap stayed for good); a file of the user's stays. And every file a report
    writes is one `REPORT_FILES` or `REPORT_HEATMAPS` names, so none is left behind."""
    from turnbudget.records.files import REPORT_FILES, REPORT_HEATMAPS

    out = tmp_path / "run"
    run = ["eval", "--env", "Maze-Easy-v0", "--k", "1", "--t", "4,8", "--tasks", "2",
           "--errors", "0.3", "--out", str(out), "--quiet"]  # fmt: skip
    assert main([*run, "--agent", "random", "--label", "old"]) == 0
    logs = {"run.json", "episodes.jsonl", "steps.jsonl"}
    written = {p.name for p in out.iterdir() if not p.name.startswith(".")} - logs
    assert "recovery_by_budget.png" in written and "heatmap_old_Maze-Easy.png" in written
    assert all(name in REPORT_FILES or Path(name).match(REPORT_HEATMAPS) for name in written)
    (out / "notes.txt").write_text("mine")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    # the new run stops (Ctrl-C) before its report: what is left beside its logs?
    with monkeypatch.context() as patch:
        patch.setattr(turnbudget.eval.report, "build_report", interrupted)
        assert main([*run, "--agent", "oracle:0.2", "--label", "new", "--overwrite"]) == 130
    left = {p.name for p in out.iterdir() if not p.name.startswith(".")}
    assert left == logs | {"notes.txt"}, left
    assert main([*run, "--agent", "oracle:0.2", "--label", "new"]) == 0
    assert not (out / "heatmap_old_Maze-Easy.png").exists()
    assert (out / "heatmap_new_Maze-Easy.png").exists() and (out / "notes.txt").exists()
