"""Smoke test of benchmarks/speed/rl_speed.py with tiny settings (marker ``rl``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _support import HANG_GUARD

pytestmark = pytest.mark.rl
pytest.importorskip("sb3_contrib")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "speed" / "rl_speed.py"


def test_rl_speed_reports_every_setting():
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--steps", "64"],
        capture_output=True, text=True, check=True, timeout=HANG_GUARD,
    ).stdout  # fmt: skip
    rows = [line for line in out.splitlines() if line.startswith("| ") and "steps/s" not in line]
    assert len(rows) == 4, out
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[1].replace(",", "")) > 0 and cells[2].endswith("%"), row


def test_the_env_side_is_measured_against_the_bare_game():
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--env-side", "--steps", "8"],
        capture_output=True, text=True, check=True, timeout=1800,  # a hang guard
    ).stdout  # fmt: skip
    assert "env side" in out and "bare game" in out and out.rstrip().endswith("x"), out


@pytest.mark.parametrize("part", ["envs", "policy", "bare"])
def test_each_part_that_instructions_counts_runs(part):
    # --instructions runs these under callgrind (too slow for a test): here, without it.
    subprocess.run(
        [sys.executable, str(SCRIPT), "--count-part", part, "--steps", "3"],
        capture_output=True, text=True, check=True, timeout=HANG_GUARD,
    )  # fmt: skip
