"""Smoke test: benchmarks/speed/openenv_server.py runs with tiny settings and reports every figure."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from _support import HANG_GUARD

pytestmark = pytest.mark.llmrl
pytest.importorskip("openenv")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "speed" / "openenv_server.py"


@pytest.mark.timeout(600, method="thread")
def test_openenv_server_benchmark_runs_with_tiny_settings():
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--steps", "30", "--rounds", "1", "--sessions", "2",
         "--env-id", "turnbudget/Maze-Easy-v0"],
        capture_output=True, text=True, check=True, timeout=HANG_GUARD,
    ).stdout  # fmt: skip
    for label in ("in-process", "environment", "server x1", "server x2"):
        rate = re.search(rf"^  {re.escape(label)} +([\d,]+) ", out, re.MULTILINE)
        assert rate is not None and int(rate.group(1).replace(",", "")) > 0, out


def test_bad_settings_are_refused():
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--sessions", "0"],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert result.returncode == 2 and "--sessions must be >= 1, got 0" in result.stderr
