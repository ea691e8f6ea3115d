"""Smoke test of benchmarks/speed/eval_memory.py with tiny settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_eval_memory_benchmark_smoke(tmp_path):
    out = tmp_path / "memory.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "speed" / "eval_memory.py"), "--sizes", "40,80",
         "--tasks", "10", "--n-bootstrap", "10", "--json-out", str(out)],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(out.read_text())
    assert [(r["episodes"], r["tasks"], r["n"]) for r in figures["runs"]] == [
        (40, 10, 4),
        (80, 10, 8),
    ]
    assert all(r["peak_mib"] > 0 for r in [figures["baseline"], *figures["runs"]])


def test_eval_memory_benchmark_resumes_each_run(tmp_path):
    """``--resume``: each run, finished, is resumed in a process of its own (which runs no
    episode: its summary is the same run's) and its peak reported beside the run's."""
    out = tmp_path / "memory.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "speed" / "eval_memory.py"), "--sizes", "40",
         "--tasks", "10", "--n-bootstrap", "10", "--resume", "--json-out", str(out)],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (run,) = json.loads(out.read_text())["runs"]
    assert run["episodes"] == 40 and run["resume_peak_mib"] > 0
    assert "resume MiB" in proc.stdout
