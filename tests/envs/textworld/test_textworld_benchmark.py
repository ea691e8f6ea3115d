"""Smoke tests: the TextWorld benchmarks run with tiny settings on the shipped games."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


def _load(name: str, monkeypatch):
    """Import ``benchmarks/<name>.py`` as its own run does (benchmarks/ on sys.path)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, bench)  # dataclasses need it
    spec.loader.exec_module(bench)
    return bench


def test_benchmark_runs_with_tiny_settings(shipped_cache, capsys, monkeypatch):
    bench = _load("textworld_throughput", monkeypatch)
    rc = bench.main(
        ["--seconds", "0.05", "--env-ids", "turnbudget/TreasureHunter-Easy-v0",
         "--cache-dir", str(shipped_cache), "--cached-makes", "1", "--fresh-games", "0"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0
    assert "turnbudget/TreasureHunter-Easy-v0" in out and "adapter/raw ratio" in out


def test_step_guard_benchmark_runs_with_tiny_settings(shipped_cache, capsys, monkeypatch):
    bench = _load("textworld_step_guard", monkeypatch)
    rc = bench.main(["--steps", "20", "--rounds", "1", "--env-ids",
                     "turnbudget/TreasureHunter-Easy-v0", "--cache-dir", str(shipped_cache)])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0
    assert "turnbudget/TreasureHunter-Easy-v0" in out and "own process / in-process" in out
