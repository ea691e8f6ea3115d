"""Smoke test: benchmarks/speed/before_after.py measures two revisions with tiny settings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "speed" / "before_after.py"


def test_both_revisions_are_measured_and_tabled():
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--before", "HEAD", "--rounds", "1", "--seconds", "0.05",
         "--figures", "vs-trivial:turnbudget/Maze-Easy-v0"],
        capture_output=True, text=True, check=True, timeout=600,  # a hang guard
    ).stdout  # fmt: skip
    row = next(line for line in out.splitlines() if line.startswith("| vs-trivial:"))
    before, after = (float(cell) for cell in row.strip("|").split("|")[1:3])
    assert before > 0 and after > 0, out


def test_an_unknown_figure_is_a_clear_error():
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--figures", "speed:turnbudget/Maze-Easy-v0"],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert out.returncode == 2 and "expect figures like vs-trivial:<id>" in out.stderr
