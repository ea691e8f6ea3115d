"""Smoke tests of benchmarks/budgetmix.py: the quick replication end to end, resume after a
kill, and the Ray backend (markers ``rl`` and ``ray``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from _support import HANG_GUARD

pytestmark = pytest.mark.rl
pytest.importorskip("sb3_contrib")

from turnbudget.agents.policy import PolicyAgent  # noqa: E402

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPT = [sys.executable, str(BENCHMARKS / "budgetmix.py")]
MAZE = "turnbudget/Maze-Easy-v0"
VERDICTS = {"replicates", "does not replicate", "inconclusive", "untestable"}


def test_quick_replication_end_to_end(tmp_path):
    out = tmp_path / "bm"  # a timeout to guard a hang only: minutes on an idle machine
    script = [*SCRIPT, "--out", str(out)]
    subprocess.run([*script, "--quick"], check=True, timeout=HANG_GUARD, capture_output=True)
    report = (out / "report" / "report.md").read_text()
    for heading in ("Engineering bar", "Finding 1", "Finding 2", "Finding 3", "Finding 4"):
        assert heading in report
    policies = out / "policies" / "Maze-Easy"
    for arm in ("base", "fixed-generous", "fixed-tight", "budgetmix", "budgetmix+pr",
                "progressive"):  # fmt: skip
        assert PolicyAgent(policies / f"{arm}-s1").budget_aware, arm
    for arm in ("base-hidden", "budgetmix-hidden"):  # the budget in no feature, from BC on
        assert not PolicyAgent(policies / f"{arm}-s1").budget_aware, arm
    # Every finding: a verdict with its interval, or "untestable" with the reason.
    summary = json.loads((out / "report" / "summary.json").read_text())
    cells = [*summary["finding1"].values(), *summary["finding2"].values(),
             *summary["finding3"].values()]  # fmt: skip
    assert len(cells) == 1 + 6 + 1
    for cell in cells:
        assert cell["verdict"] in VERDICTS and cell["why"], cell
        if cell["verdict"] != "untestable":
            interval = cell.get("contrast") or cell["regret"]["budgetmix"]
            assert interval[1] <= interval[0] <= interval[2], cell
        assert f"**{cell['verdict']}** ({cell['why']})" in report
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


def test_a_killed_run_continues_where_it_stopped(tmp_path):
    """Killed (SIGKILL) as soon as it reports its first finished PPO job, the run started
    again skips every finished job and trains the rest."""
    out = tmp_path / "bm"
    args = [*SCRIPT, "--quick", "--out", str(out), "--arms", "fixed-tight,budgetmix",
            "--stages", "train", "--workers", "1"]  # fmt: skip
    first = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, start_new_session=True)
    finished = []
    try:
        for line in first.stdout:  # the event: the script's own line for a finished job
            if line.startswith("done"):
                finished.append(line.split()[-1])
            if line.startswith("done ppo"):
                os.killpg(first.pid, signal.SIGKILL)
                break
    finally:
        first.stdout.close()
        first.wait(timeout=HANG_GUARD)
    assert first.returncode == -signal.SIGKILL
    assert len(finished) == 3  # the two bases and one arm; three arms were left
    stamps = {job: (Path(job) / "policy.zip").stat().st_mtime_ns for job in finished}

    again = subprocess.run(args, check=True, timeout=HANG_GUARD, capture_output=True, text=True)
    skipped = [ln.split()[-1] for ln in again.stdout.splitlines() if ln.startswith("skipped")]
    done = [ln.split()[-1] for ln in again.stdout.splitlines() if ln.startswith("done")]
    assert sorted(skipped) == sorted(finished)
    assert len(done) == 3 and not set(done) & set(finished)
    assert all((Path(job) / "policy.zip").stat().st_mtime_ns == t for job, t in stamps.items())
    for arm in ("fixed-tight", "budgetmix"):
        for seed in (0, 1):
            assert (out / "policies" / "Maze-Easy" / f"{arm}-s{seed}" / "summary.json").is_file()
    # With other settings the run is refused, its config.json kept (a rerun reused its
    # policies and rewrote it: every later --report-only said the new settings).
    saved = (out / "config.json").read_bytes()
    changed = subprocess.run([*args, "--steps", "4096"], timeout=HANG_GUARD, capture_output=True,
                             text=True, check=False)  # fmt: skip
    assert changed.returncode != 0 and "other settings (steps)" in changed.stderr
    assert (out / "config.json").read_bytes() == saved


@pytest.mark.ray
def test_the_ray_backend_gives_the_pool_s_results(tmp_path, load_script):
    """The same evaluation jobs on Ray (a local instance) and in this process: equal records."""
    ray = pytest.importorskip("ray")
    bm = load_script(BENCHMARKS / "budgetmix.py")
    config = bm.Config(quick=True, seeds=(0, 1), tasks=3, cs=(1.5, 2.0), generous_c=2.0,
                       ks=(1, 2))  # fmt: skip

    def job(backend: str, i: int) -> dict:
        out = str(tmp_path / backend / str(i))
        return {"config": config, "env_id": MAZE, "agent": "random", "lengths": lengths,
                "label": f"random-{i}", "errors": False, "out": out}  # fmt: skip

    lengths = bm.optimal_lengths(MAZE, config.tasks)
    jobs = {backend: [job(backend, i) for i in range(2)] for backend in ("pool", "ray")}
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = bm.run_jobs(bm._job_eval, jobs["ray"], 2, "eval", backend="ray")
    finally:
        ray.shutdown()
    local = bm.run_jobs(bm._job_eval, jobs["pool"], 1, "eval")
    assert [r["episodes"] for r in on_ray] == [r["episodes"] for r in local]
    assert all(r["episodes"] > 0 for r in local)
    for i in range(2):
        for d in sorted(p.name for p in (tmp_path / "pool" / str(i)).iterdir()):
            a = (tmp_path / "pool" / str(i) / d / "episodes.jsonl").read_text()
            b = (tmp_path / "ray" / str(i) / d / "episodes.jsonl").read_text()
            assert _outcomes(a) == _outcomes(b)


def _outcomes(text: str) -> list[tuple]:
    rows = [json.loads(line) for line in text.splitlines()]
    return sorted((r["episode_id"], r["success"], r["turns_used"]) for r in rows)
