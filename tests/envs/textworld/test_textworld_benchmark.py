"""Smoke test: the TextWorld benchmark runs with tiny settings on the shipped games."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "textworld_throughput.py"


def test_benchmark_runs_with_tiny_settings(shipped_cache, capsys, monkeypatch):
    spec = importlib.util.spec_from_file_location("textworld_throughput", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "textworld_throughput", bench)  # dataclasses need it
    spec.loader.exec_module(bench)
    rc = bench.main(
        ["--seconds", "0.05", "--env-ids", "turnbudget/TreasureHunter-Easy-v0",
         "--cache-dir", str(shipped_cache), "--cached-makes", "1", "--fresh-games", "0"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0
    assert "turnbudget/TreasureHunter-Easy-v0" in out and "adapter/raw ratio" in out
