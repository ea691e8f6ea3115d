"""Smoke test of benchmarks/speed/copy_layout.py with tiny settings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_copy_layout_benchmark_smoke():
    proc = subprocess.run(
        [
            sys.executable, str(REPO / "benchmarks" / "speed" / "copy_layout.py"),
            "--env-ids", "turnbudget/Maze-Easy-v0,turnbudget/Sokoban-Easy-v0",
            "--episodes", "3", "--rounds", "1",
        ],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| turnbudget/")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| turnbudget/Maze-Easy-v0",
        "| turnbudget/Sokoban-Easy-v0",
    ]
    for row in rows:
        steps, ratio = row.strip(" |").split(" | ")[1:]
        assert int(steps) > 0 and float(ratio.rstrip("x")) > 0
