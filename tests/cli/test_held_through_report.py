"""The command line holds its output directory across a run and its report: released in
between, a second evaluation took the directory while the first plotted, and the folder
ended with one run's summary beside the other's curve."""

from __future__ import annotations

import json

import pytest

import turnbudget.eval.report as report_module
from turnbudget.agents import RandomAgent
from turnbudget.cli import main
from turnbudget.eval import evaluate, probe
from turnbudget.eval.run.lock import OutputDirInUse

MAZE = "turnbudget/Maze-Easy-v0"


def _refused_meanwhile(monkeypatch, name, second):
    """Patch the report writer ``name`` to try ``second()`` first; the error it met."""
    met = []
    write = getattr(report_module, name)

    def trying_first(*args, **kwargs):
        with pytest.raises(OutputDirInUse) as refused:
            second()
        met.append(str(refused.value))
        return write(*args, **kwargs)

    monkeypatch.setattr(report_module, name, trying_first)
    return met


def test_eval_holds_its_directory_while_it_writes_its_report(tmp_path, monkeypatch):
    out = tmp_path / "run"
    met = _refused_meanwhile(
        monkeypatch, "build_report",
        lambda: evaluate(MAZE, RandomAgent(), ks=[1], ts=[3], tasks=1, out=out, overwrite=True),
    )  # fmt: skip
    argv = ["eval", "--env", MAZE, "--k", "1", "--t", "4", "--n", "1", "--tasks", "2"]
    assert main([*argv, "--out", str(out), "--no-plots", "--quiet"]) == 0
    assert met and "is in use by another evaluation" in met[0]
    assert json.loads((out / "run.json").read_text())["ts"] == [4]  # (its own run, whole)
    assert main([*argv, "--out", str(out), "--no-plots", "--quiet"]) == 0  # (released after)


def test_probe_holds_its_directory_while_it_writes_its_report(tmp_path, monkeypatch):
    out = tmp_path / "probes"
    met = _refused_meanwhile(
        monkeypatch, "write_probe_report",
        lambda: probe(MAZE, RandomAgent(), tasks=1, baseline_repeats=1, n_bootstrap=0, out=out),
    )  # fmt: skip
    argv = ["probe", "--env", MAZE, "--tasks", "1", "--baseline-repeats", "1"]
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    assert met and "is in use by another evaluation" in met[0]
    assert (out / "probe_report.md").is_file()
