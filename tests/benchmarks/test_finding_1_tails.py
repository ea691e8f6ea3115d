"""Smoke test of benchmarks/finding_1_tails.py with tiny settings."""

from __future__ import annotations

from pathlib import Path

import numpy as np

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_finding_1_tails_smoke(load_script, capsys):
    tails = load_script(BENCHMARKS / "finding_1_tails.py")
    config = tails.Config(draws=3, policy_sd=(0.5,), scenarios=("exchangeable", "power-abs"))
    rows = tails.main(config)
    assert [(r["scenario"], r["scale"]) for r in rows] == [
        ("exchangeable", "abs"), ("exchangeable", "rel"), ("power-abs", "abs")
    ]  # fmt: skip
    assert rows[0]["truth"] == 0.0 and rows[2]["truth"] < -0.03
    for row in rows:
        assert set(row["counts"]) == {"finding_1", "sign flip", "label perm"}
        assert row["counts"]["sign flip"] == [0, 0]  # (1/32 a side: never below 2.5%)
    assert "| exchangeable | abs | 0.5 |" in capsys.readouterr().out


def test_the_simulated_grids_are_per_task_grids_at_k_1(load_script):
    """The script's success fractions by T are the report's Pass@1 of the same turns."""
    tails = load_script(BENCHMARKS / "finding_1_tails.py")
    report = load_script(BENCHMARKS / "pass_at_kt_report.py")
    rng = np.random.default_rng(0)
    config = tails.Config(seeds=1, tasks=6, n=4)
    # the turns back from one policy's draw, replayed through per_task_grids
    state = rng.bit_generator.state
    grid = tails._grids(rng, config, 0.5, 0.0, tails.BETA)["base"][0]
    rng.bit_generator.state = state
    d = rng.choice(tails.OPTIMAL, config.tasks).astype(float)[:, None]
    tau = rng.standard_normal((config.tasks, 1))
    theta = 0.5 * rng.standard_normal()
    u = rng.logistic(size=(config.tasks, config.n))
    turn = np.maximum(d, np.ceil(d * np.exp((u - theta - tau - tails.ALPHA) / tails.BETA)))
    episodes = [
        {"seed": j, "initial_distance": int(d[j, 0]),
         "first_success_turn": int(t) if t <= max(tails.TS) else None}
        for j in range(config.tasks) for t in turn[j]
    ]  # fmt: skip
    expected = report.per_task_grids(episodes, [1], tails.TS, tails.RATIOS)
    np.testing.assert_allclose(grid["abs"], expected["abs"])
    np.testing.assert_allclose(grid["rel"], expected["rel"])
