"""Smoke test: benchmarks/speed/wrapper_overhead.py runs with tiny settings and reports every figure."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from _support import HANG_GUARD

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "speed" / "wrapper_overhead.py"


def test_wrapper_overhead_runs_with_tiny_settings():
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--seconds", "0.05", "--rounds", "1",
         "--env-ids", "turnbudget/Maze-Easy-v0", "--sink", "jsonl"],
        capture_output=True, text=True, check=True, timeout=HANG_GUARD,
    ).stdout  # fmt: skip
    for config in ("bare", "mix+reveal", "+records", "+errors", "full"):
        assert config in out
    summary = re.search(
        r"mix\+reveal [+-][\d.]+ \(([\d.]+)x, (meets|MISSES) the 1.3x target\)", out
    )
    assert summary is not None and float(summary.group(1)) > 0
    assert re.search(r"oracle share of the extra (-?\d+%|n/a)", out)


def test_bad_sink_is_refused():
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--sink", "s3"],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert result.returncode == 2 and "--sink must be" in result.stderr
