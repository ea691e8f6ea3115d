"""Smoke test of benchmarks/speed/eval_cost.py with tiny settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_eval_cost_benchmark_smoke(tmp_path):
    out = tmp_path / "cost.json"
    proc = subprocess.run(
        [
            sys.executable, str(REPO / "benchmarks" / "speed" / "eval_cost.py"), "--tasks", "2",
            "--n", "2", "--ks", "1,2", "--ts", "8,16", "--repeats", "1", "--json-out", str(out),
        ],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(out.read_text())
    assert (
        figures["episodes"]["rerun grid, 1 worker"]
        == 2 * figures["episodes"]["sweep at max(T), 1 worker"]
    )
    for key in ("truncate_grid_over_sweep", "rerun_grid_over_sweep", "speedup_2_workers"):
        assert figures[key] > 0
