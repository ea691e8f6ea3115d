"""Smoke test of the main job, benchmarks/pass_at_kt.py, with tiny settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _support import HANG_GUARD

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "pass_at_kt.py"
TINY = [
    "--tasks",
    "2",
    "--n",
    "2",
    "--ks",
    "1,2",
    "--ts",
    "16,64",
    "--workers",
    "2",
    "--probe-tasks",
    "2",
    "--no-progress",
]


def run(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out), *TINY, *extra],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip


def test_main_job_smoke(tmp_path):
    out = tmp_path / "main"
    proc = run(out)
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    labels = {"random", "oracle-eps0.1", "oracle-eps0.3"}
    assert set(summary["runs"]) == labels | {f"{lbl}+errors" for lbl in labels}
    for label, r in summary["runs"].items():
        assert r["config"]["mode"] == "truncate"
        assert set(r["groups"]) == {
            "turnbudget/KeyQuest-Medium-v0",
            "turnbudget/Maze-Medium-v0",
            "all",
        }
        assert r["n_episodes"] == 2 * 2 * 2
        assert (r["config"]["errors"] is not None) == label.endswith("+errors")
    heatmaps = sorted(out.glob("heatmap_*.png"))
    assert len(heatmaps) == 6 * 3
    for name in (
        "pass_at_1_curve.png", "recovery.png", "recovery_by_budget.png", "report.md",
        "timings.json", "probe/probe_summary.json", "probe/probes.jsonl",
    ):  # fmt: skip
        assert (out / name).stat().st_size > 0
    report = (out / "report.md").read_text()
    assert "## Single steps and recovery" in report
    assert "## Single steps and recovery by budget" in report
    assert "## Probes: single-step and recovery skill" in report
    assert "### Observational rates beside probe skills" in report
    # Each run is paired with the probe skills of its agent (with and without errors).
    assert {row["run"] for row in summary["paired"]} == set(summary["runs"])
    for r in summary["runs"].values():
        assert set(r["analysis"]["all"]["by_budget"]) == {"16", "64"}
    # Rerunning resumes: nothing left to run, same tables.
    before = (out / "summary.json").read_text()
    again = run(out, "--no-plots")
    assert again.returncode == 0, again.stderr
    timings = json.loads((out / "timings.json").read_text())
    assert all(timings[label]["episodes_run"] == 0 for label in summary["runs"])
    assert (out / "summary.json").read_text() == before
    # Other settings into the same directory: a clear refusal, not a traceback.
    other = run(out, "--error-rate", "0.2", "--no-plots")
    assert other.returncode == 1 and "differs in: errors" in other.stderr
    assert "Traceback" not in other.stderr


def test_main_job_rejects_k_above_n(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path), "--n", "2", "--ks", "1,4"],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode != 0 and "n >= K" in proc.stderr


@pytest.mark.slow
def test_main_job_full_settings_within_five_minutes(tmp_path):
    """The README's first command, default settings: the job must finish within 5 minutes on
    its 2 workers' cores. Measured in CPU seconds (the job's processes, workers included),
    not on the wall clock, which a busy machine stretches."""
    import resource

    def cpu_of_children() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    cpu0 = cpu_of_children()
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path / "main"), "--no-progress"],
        capture_output=True, text=True, check=False, cwd=REPO, timeout=HANG_GUARD,
    )  # fmt: skip
    cpu = cpu_of_children() - cpu0
    assert proc.returncode == 0, proc.stderr
    assert cpu / 2 < 300, f"the main job needs {cpu:.0f} CPU seconds"
    summary = json.loads((tmp_path / "main" / "summary.json").read_text())
    assert all(r["n_episodes"] == 2 * 50 * 8 for r in summary["runs"].values())
    assert len(list((tmp_path / "main").glob("heatmap_*.png"))) == 18
