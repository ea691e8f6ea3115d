"""Smoke test of benchmarks/validate_error_rate.py with tiny settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_validate_error_rate_benchmark_smoke(tmp_path):
    out = tmp_path / "figures.json"
    proc = subprocess.run(
        [
            sys.executable, str(REPO / "benchmarks" / "validate_error_rate.py"),
            "--envs", "turnbudget/Maze-Easy-v0", "--tasks", "4", "--reps", "2", "--workers", "1",
            "--json-out", str(out),
        ],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("turnbudget/Maze-Easy-v0: 2 replicates of 4 tasks each")
    figures = json.loads(out.read_text())
    assert [row["rep"] for row in figures["replicates"]] == [0, 1]
    for row in figures["replicates"]:
        failed = row["failed"]
        # a simultaneous interval holds the 95% one: it fails only checks the 95% one fails
        assert set(failed["simultaneous"]) <= set(failed["each"])
        assert set(failed["simultaneous"]) <= set(failed["all"])
        assert set(failed["each"]) <= set(failed["all_before"])
        assert set(failed["all"]) - set(failed["simultaneous"]) <= set(failed["all_before"])
    for verdict, v in figures["verdicts"].items():
        runs = sum(bool(row["failed"][verdict]) for row in figures["replicates"])
        assert v["runs_failed"] == runs and v["low"] <= v["rate"] <= v["high"], verdict


def test_validate_error_rate_refuses_bad_flags_before_it_runs(tmp_path):
    """--reps 0 was a ZeroDivisionError, --workers/--tasks 0 and an unknown env tracebacks from
    the pool, and a --json-out in no folder lost the whole run after its last replicate."""
    base = [sys.executable, str(REPO / "benchmarks" / "validate_error_rate.py"), "--tasks", "4",
            "--reps", "1", "--envs", "turnbudget/Maze-Easy-v0"]  # fmt: skip
    for flags, says in (
        (["--reps", "0"], "--reps must be at least 1"),
        (["--workers", "0"], "--workers must be at least 1"),
        (["--envs", "nope"], "names no registered env: ['nope']"),
        (["--json-out", str(tmp_path / "no" / "x.json")], "its folder does not exist"),
    ):
        proc = subprocess.run([*base, *flags], capture_output=True, text=True, check=False)
        assert proc.returncode != 0 and says in proc.stderr and "Traceback" not in proc.stderr
