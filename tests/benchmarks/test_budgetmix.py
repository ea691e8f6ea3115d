"""Smoke test of benchmarks/budgetmix.py: the quick replication end to end (marker ``rl``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _support import HANG_GUARD

pytestmark = pytest.mark.rl
pytest.importorskip("sb3_contrib")

from turnbudget.agents.policy import PolicyAgent  # noqa: E402

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_quick_replication_end_to_end(tmp_path):
    out = tmp_path / "bm"  # a timeout to guard a hang only: it takes 3-4 min on an idle machine
    script = [sys.executable, str(BENCHMARKS / "budgetmix.py"), "--out", str(out)]
    subprocess.run([*script, "--quick"], check=True, timeout=HANG_GUARD, capture_output=True)
    report = (out / "report" / "report.md").read_text()
    for heading in ("Engineering bar", "Finding 1", "Finding 2", "Finding 3", "Finding 4"):
        assert heading in report
    for arm in ("base", "fixed-generous", "fixed-tight", "budgetmix", "budgetmix+pr"):
        assert (out / "policies" / "Maze-Easy" / f"{arm}-s0" / "policy.zip").is_file()
        assert PolicyAgent(out / "policies" / "Maze-Easy" / f"{arm}-s0").budget_aware
    figures = ["pass1_Maze-Easy.png", "heatmap_Maze-Easy.png", "delta_Maze-Easy.png",
               "probe_skills.png"]  # fmt: skip
    for figure in figures:
        assert (out / "report" / figure).stat().st_size > 1000
    # --report-only rebuilds the same bytes from the logs and the run's own config.json.
    (out / "report").rename(out / "first")
    subprocess.run([*script, "--report-only", "--tasks", "99"], check=True, timeout=HANG_GUARD,
                   capture_output=True)  # fmt: skip
    for name in ("report.md", "summary.json", "timings.json", *figures):
        assert (out / "report" / name).read_bytes() == (out / "first" / name).read_bytes(), name
