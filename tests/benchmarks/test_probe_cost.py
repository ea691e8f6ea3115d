"""Smoke test of benchmarks/speed/probe_cost.py with tiny settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_probe_cost_benchmark_smoke(tmp_path):
    out = tmp_path / "probe_cost.json"
    proc = subprocess.run(
        [
            sys.executable, str(REPO / "benchmarks" / "speed" / "probe_cost.py"), "--tasks", "2",
            "--baseline-repeats", "1", "--json-out", str(out),
        ],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(out.read_text())["figures"]
    assert {"turnbudget/KeyQuest-Medium-v0", "turnbudget/Maze-Medium-v0"} <= set(figures)
    for f in figures.values():
        assert f["probe_states"] > 0 and f["run_ms_per_episode"] > 0
