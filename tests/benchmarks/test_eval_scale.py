"""Smoke test of benchmarks/speed/eval_scale.py (marker ``ray``: it starts a local Ray instance)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _support import HANG_GUARD

pytestmark = pytest.mark.ray
ray = pytest.importorskip("ray")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "speed" / "eval_scale.py"


def test_eval_scale_benchmark_smoke(tmp_path):
    """benchmarks/speed/eval_scale.py runs with tiny settings and reports every figure."""
    ray.shutdown()  # the script starts and stops its own instance
    out = tmp_path / "scale.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--tasks", "1", "--n", "2", "--runs", "1", "--repeats", "1",
         "--calls", "5", "--json-out", str(out)],
        capture_output=True, text=True, timeout=HANG_GUARD,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]  # the script's traceback, when it fails
    figures = json.loads(out.read_text())
    assert set(figures["episodes_per_second"]) == {
        "in-process",
        "pool x1",
        "pool x2",
        "ray x1",
        "ray x2",
        "ray x1 kept",
        "ray x2 kept",
    }
    assert all(v > 0 for v in figures["episodes_per_second"].values())
    assert {"ray x1 kept (reused)", "ray x2 kept (reused)"} <= set(figures["worker_start_seconds"])
    assert figures["steady_state_ray_kept_vs_pool_x2"] > 0
    assert figures["episodes_per_variant"] == 2 * 1 * 2
    assert figures["ray_init_seconds"] > 0 and figures["projection"]["episodes_per_second"] > 0
