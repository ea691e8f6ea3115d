"""Smoke test of benchmarks/recovery_bias.py with tiny settings."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_recovery_bias_benchmark_smoke():
    proc = subprocess.run(
        [
            sys.executable, str(REPO / "benchmarks" / "recovery_bias.py"),
            "--env", "turnbudget/Maze-Easy-v0", "--tasks", "4", "--reps", "2", "--workers", "1",
        ],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "turnbudget/Maze-Easy-v0: 2 replicates of 4 tasks, 95% intervals"
    rows = [line for line in lines if line.startswith("| oracle-eps")]
    assert [row.split(" | ")[0] for row in rows] == ["| oracle-eps0.3", "| oracle-eps0.5"]
    for row in rows:
        above, below, covers = re.match(r"\| \S+ \| (\d+) \| (\d+) \| ([\d.]+) ", row).groups()
        assert int(above) + int(below) + round(float(covers) * 2) == 2, row


def test_recovery_bias_refuses_bad_flags():
    for flag in ("--reps", "--workers", "--tasks"):
        proc = subprocess.run(
            [sys.executable, str(REPO / "benchmarks" / "recovery_bias.py"), flag, "0"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert proc.returncode == 2 and f"{flag} must be at least 1" in proc.stderr
