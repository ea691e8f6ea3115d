"""Smoke test: benchmarks/speed/textworld_throughput.py runs with tiny settings on the shipped games."""

from __future__ import annotations

from pathlib import Path

SPEED = Path(__file__).resolve().parents[2] / "benchmarks" / "speed"


def test_benchmark_runs_with_tiny_settings(shipped_cache, capsys, load_script):
    bench = load_script(SPEED / "textworld_throughput.py")
    rc = bench.main(
        ["--seconds", "0.05", "--env-ids", "turnbudget/TreasureHunter-Easy-v0",
         "--cache-dir", str(shipped_cache), "--cached-makes", "1", "--fresh-games", "0"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0
    assert "turnbudget/TreasureHunter-Easy-v0" in out and "adapter/raw ratio" in out
