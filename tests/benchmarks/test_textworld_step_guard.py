"""Smoke test: benchmarks/speed/textworld_step_guard.py runs with tiny settings on the shipped games."""

from __future__ import annotations

from pathlib import Path

SPEED = Path(__file__).resolve().parents[2] / "benchmarks" / "speed"


def test_step_guard_benchmark_runs_with_tiny_settings(shipped_cache, capsys, load_script):
    bench = load_script(SPEED / "textworld_step_guard.py")
    rc = bench.main(["--steps", "20", "--rounds", "1", "--env-ids",
                     "turnbudget/TreasureHunter-Easy-v0", "--cache-dir", str(shipped_cache)])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0
    assert "turnbudget/TreasureHunter-Easy-v0" in out and "own process / in-process" in out
