"""Smoke test of benchmarks/finding_1_tails.py with tiny settings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

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
        assert set(row["counts"]) == {
            "finding_1", "seeds t", "johnson t", "hall t", "sign flip", "label perm"
        }  # fmt: skip
        assert row["counts"]["sign flip"] == [0, 0]  # (1/32 a side: never below 2.5%)
    assert "| exchangeable | abs | 0.5 |" in capsys.readouterr().out


def test_the_skew_corrected_intervals_invert_their_statistics(load_script):
    """Each bound of Johnson's and Hall's intervals is the μ at which the corrected t equals
    ±t(4), found here by bisection on μ (not by the closed forms); a right-skewed sample's
    interval lies above Student's t, the same width or wider."""
    tails = load_script(BENCHMARKS / "finding_1_tails.py")
    y = np.array([0.01, -0.02, 0.03, 0.15, 0.0])
    n, mean, s = 5, y.mean(), y.std(ddof=1)
    gamma, q = np.mean((y - mean) ** 3) / s**3, 2.7764451
    corrected = {
        "johnson": lambda t: t + gamma * (1 + 2 * t**2) / (6 * np.sqrt(n)),
        "hall": lambda t: (
            t
            + gamma / (6 * np.sqrt(n))
            + gamma * t**2 / (3 * np.sqrt(n))
            + gamma**2 * t**3 / (27 * n)
        ),
    }

    def mu_at(g, target, low, high):  # g(T(μ)) falls as μ rises on [low, high]
        for _ in range(100):
            mid = (low + high) / 2
            low, high = (mid, high) if g(np.sqrt(n) * (mean - mid) / s) > target else (low, mid)
        return low

    student = (mean - q * s / np.sqrt(n), mean + q * s / np.sqrt(n))
    np.testing.assert_allclose(tails._skew_corrected(y, "seeds"), student, atol=1e-6)
    for method, g in corrected.items():
        low, high = tails._skew_corrected(y, method)
        assert low == pytest.approx(mu_at(g, q, -1, mean), abs=1e-6)
        assert low > student[0] and high - low >= student[1] - student[0]
        if np.isfinite(high):
            assert high == pytest.approx(mu_at(g, -q, mean, 1), abs=1e-6)
    # Johnson's quadratic never falls to -t(4) here: no upper bound
    assert tails._skew_corrected(y, "johnson")[1] == np.inf
    assert tails._skew_corrected(y, "hall")[1] == pytest.approx(0.37623, abs=1e-5)


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
