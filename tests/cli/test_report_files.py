"""``turnbudget report`` writes each file whole or not at all, escapes text UTF-8 cannot hold,
and gives every run's heatmap a file of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnbudget.agents import OracleAgent
from turnbudget.cli import main
from turnbudget.eval.report import REPORT_FILE, build_report
from turnbudget.eval.report.plots import PASS1_CURVE_FILE
from turnbudget.eval.run.evaluate import evaluate
from turnbudget.records import RUN_FILE

pytest.importorskip("matplotlib")

MAZE = "turnbudget/Maze-Easy-v0"


def _run(out: Path, label: str) -> Path:
    evaluate(MAZE, OracleAgent(0.0), ks=[1], ts=[8], n=1, tasks=2, out=out, label=label,
             n_bootstrap=0, progress=False)  # fmt: skip
    return out


def _relabel(run: Path, label: str) -> Path:
    """Give a run a label `evaluate` now refuses, as a run logged before labels were checked."""
    config = json.loads((run / RUN_FILE).read_text())
    (run / RUN_FILE).write_text(json.dumps({**config, "label": label}))
    return run


def _heatmaps(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("heatmap_*.png"))


def test_a_label_with_a_lone_surrogate_is_escaped_not_a_truncated_report(tmp_path, capsys):
    # (a shell's undecodable byte 0xff)
    run = _relabel(_run(tmp_path / "run", "xy"), "x\udcffy")
    assert main(["report", str(run)]) == 0, capsys.readouterr().err
    report = (run / REPORT_FILE).read_text(encoding="utf-8")
    assert "x\\udcffy" in report
    assert _heatmaps(run) == ["heatmap_x-y_Maze-Easy.png"]


def test_a_plot_that_fails_midway_leaves_the_previous_file(tmp_path, capsys, monkeypatch):
    from matplotlib.figure import Figure

    run = _run(tmp_path / "run", "oracle")
    assert main(["report", str(run)]) == 0
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.suffix in (".md", ".png")}

    def full_disk(self, fname, *args, **kwargs):
        Path(fname).write_bytes(b"half a png")
        raise OSError(28, "No space left on device", str(fname))

    monkeypatch.setattr(Figure, "savefig", full_disk)
    assert main(["report", str(run)]) == 2
    assert "No space left on device" in capsys.readouterr().err
    after = {p.name: p.read_bytes() for p in run.iterdir() if p.suffix in (".md", ".png")}
    assert after.keys() == before.keys()  # (no temporary file left behind)
    assert after[PASS1_CURVE_FILE] == before[PASS1_CURVE_FILE]
    assert all(after[name] == data for name, data in before.items() if name.endswith(".png"))


def test_labels_that_sanitise_alike_get_a_heatmap_each(tmp_path):
    for i, label in enumerate(["a/b", "a-b", "c"]):
        _run(tmp_path / f"run{i}", label)
    build_report(tmp_path, n_bootstrap=0)
    names = _heatmaps(tmp_path)
    assert len(names) == 3 and "heatmap_c_Maze-Easy.png" in names
    assert sum(name.startswith("heatmap_a-b_Maze-Easy-") for name in names) == 2


def test_a_very_long_label_gets_a_short_file_name(tmp_path, capsys):
    run = _relabel(_run(tmp_path / "run", "long"), "L" * 300)
    assert main(["report", str(run)]) == 0, capsys.readouterr().err
    (name,) = _heatmaps(run)
    assert len(name) < 100 and name.startswith("heatmap_" + "L" * 60 + "_")


def test_a_run_moved_inside_another_runs_directory_is_named_not_left_out(tmp_path, capsys):
    """`evaluate` refuses to nest a run in another's directory, but a run moved there was
    left out of the outer run's report without a word."""
    grid = dict(ks=[1], ts=[4], n=1, tasks=2, n_bootstrap=0)
    evaluate("turnbudget/Maze-Easy-v0", OracleAgent(0.3), out=tmp_path / "outer", **grid)
    evaluate("turnbudget/KeyQuest-Easy-v0", OracleAgent(0.3), out=tmp_path / "other", **grid)
    (tmp_path / "other").rename(tmp_path / "outer" / "inner")
    assert main(["report", str(tmp_path / "outer"), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "holds another run" in err and "inner" in err
    assert not (tmp_path / "outer" / REPORT_FILE).exists()


def test_a_rebuilt_report_leaves_no_plot_of_a_run_it_no_longer_has(tmp_path, capsys):
    """A report rebuilt after a run was removed kept that run's heatmap beside it."""
    pytest.importorskip("matplotlib")
    grid = dict(ks=[1], ts=[4], n=1, tasks=2, n_bootstrap=0)
    evaluate("turnbudget/Maze-Easy-v0", OracleAgent(0.3), out=tmp_path / "a", **grid)
    evaluate("turnbudget/KeyQuest-Easy-v0", OracleAgent(0.1), out=tmp_path / "b", **grid)
    assert main(["report", str(tmp_path)]) == 0
    heatmaps = sorted(p.name for p in tmp_path.glob("heatmap_*.png"))
    assert len(heatmaps) == 2
    (tmp_path / "b" / RUN_FILE).unlink()
    for name in ("episodes.jsonl", "steps.jsonl"):
        (tmp_path / "b" / name).unlink()
    assert main(["report", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.glob("heatmap_*.png")) == [
        h for h in heatmaps if "KeyQuest" not in h
    ]


def test_a_report_rebuilt_without_plots_over_other_records_drops_the_old_plots(tmp_path):
    """`report --no-plots` over a folder whose runs changed left the earlier report's PNGs
    beside the new tables, showing figures of runs it no longer has."""
    grid = dict(ks=[1], ts=[4], n=1, tasks=2, n_bootstrap=0, progress=False)
    evaluate(MAZE, OracleAgent(0.3), out=tmp_path / "a", **grid)
    assert main(["report", str(tmp_path)]) == 0
    plots = sorted(p.name for p in tmp_path.glob("*.png"))
    assert PASS1_CURVE_FILE in plots and _heatmaps(tmp_path)
    assert main(["report", str(tmp_path), "--no-plots"]) == 0  # (the same runs: plots stay)
    assert sorted(p.name for p in tmp_path.glob("*.png")) == plots
    evaluate(MAZE, OracleAgent(0.0), out=tmp_path / "b", label="other", **grid)
    assert main(["report", str(tmp_path), "--no-plots"]) == 0
    assert sorted(tmp_path.glob("*.png")) == []
    assert "other" in (tmp_path / REPORT_FILE).read_text()
