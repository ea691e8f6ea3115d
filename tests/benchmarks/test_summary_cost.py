"""Smoke test of benchmarks/speed/summary_cost.py with tiny settings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_summary_cost_benchmark_smoke():
    proc = subprocess.run(
        [
            sys.executable, str(REPO / "benchmarks" / "speed" / "summary_cost.py"),
            "--envs", "turnbudget/Maze-Easy-v0", "--tasks", "3", "--n", "4", "--rounds", "1",
        ],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("12 episodes (turnbudget/Maze-Easy-v0, 3 tasks x n = 4")
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| . |")]
    assert len(rows) == 1
    summary_ms, per_episode, estimate_ms = (float(x) for x in rows[0].strip(" |").split(" | ")[1:])
    assert summary_ms > 0 and per_episode > 0 and estimate_ms > 0
