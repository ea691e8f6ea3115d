"""Smoke test of benchmarks/finding_2_tails.py with tiny settings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_finding_2_tails_smoke(load_script, capsys):
    tails = load_script(BENCHMARKS / "finding_2_tails.py")
    config = tails.Config(
        draws=3, policy_sd=(0.15,), scenarios=("exchangeable", "observed"), truth_size=20_000
    )
    rows = tails.main(config)
    assert [r["scenario"] for r in rows] == ["exchangeable", "observed"]
    assert rows[0]["truth"] == 0.0 and rows[1]["truth"] < -0.4
    assert all(sum(r["counts"][:2]) <= r["draws"] for r in rows)
    assert "| exchangeable | 0.15 |" in capsys.readouterr().out


def test_the_simulated_jobs_have_the_main_jobs_design_and_gains(load_script):
    """Each policy's table has the job's probe counts, and the observed scenario's true gains
    are the committed job's pooled ones (within 0.02)."""
    tails = load_script(BENCHMARKS / "finding_2_tails.py")
    tables, baseline = tails._job(np.random.default_rng(0), 5, 0.15, tails.SCENARIOS["observed"])
    assert sorted(tables) == sorted(tails.ARMS) and all(len(by) == 5 for by in tables.values())
    for table in (t for by in tables.values() for t in by.values()):
        assert table.shape == (24, 4) and (table[:, 1] <= tails.STATES).all()
        np.testing.assert_array_equal(table[:, 3], tails.PAIRS)
        assert (np.abs(table[:, 2]) <= table[:, 3]).all()  # (a pair's share difference: [-1, 1])
    assert (baseline[:, 1] <= tails.STATES * tails.BASELINE_REPEATS).all()
    summary = json.loads((BENCHMARKS / "results" / "main" / "summary.json").read_text())
    pooled = summary["finding_2"]["arms"]["RL (arms pooled)"]
    d_single, d_recovery = tails._truth(tails.SCENARIOS["observed"], 0.15)
    assert abs(d_single - pooled["d_single"]["mean"]) < 0.02
    assert abs(d_recovery - pooled["d_recovery"]["mean"]) < 0.02
