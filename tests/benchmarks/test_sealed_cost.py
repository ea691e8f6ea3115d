"""Smoke test of benchmarks/speed/sealed_cost.py with tiny settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_sealed_cost_benchmark_smoke(tmp_path):
    out = tmp_path / "cost.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "speed" / "sealed_cost.py"), "--tasks", "1",
         "--n", "1", "--t", "8", "--rounds", "1", "--json-out", str(out)],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(out.read_text())
    assert figures["start_s"] > 0 and set(figures["envs"]) == {
        "turnbudget/Maze-Easy-v0",
        "turnbudget/KeyQuest-Medium-v0",
    }
    for row in figures["envs"].values():
        assert row["steps"] > 0 and row["sealed_us_per_step"] > 0
