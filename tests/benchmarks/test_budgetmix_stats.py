"""The replication's statistics cover at the protocol's own sizes (benchmarks/budgetmix_report.py).

Simulated as in ``tests/eval/test_intervals.py``: success ~ Bernoulli(sigmoid(mu + seed + task)),
seed and task effects normal on the logit scale (seed sd 0.4 and 0.9: about 0.10 and 0.20
seed-to-seed near 0.5), 10 training seeds x 24 tasks x 8 episodes, an RL arm adding its own
seed spread; the truths are exact (Gauss-Hermite). Fixed seeds: deterministic.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SEEDS, TASKS, N = 10, 24, 8  # the protocol's design
SIMS = 600
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(60)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


@pytest.fixture
def report(load_script):
    return load_script(BENCHMARKS / "budgetmix_report.py")


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _rate(mu: float, sd: float) -> float:
    """E sigmoid(mu + sd Z), Z ~ N(0, 1): a population's success rate."""
    return float((_sigmoid(mu + sd * _NODES) * _WEIGHTS).sum())


def _draw(rng, logit):
    return rng.binomial(N, _sigmoid(logit)) / N


@pytest.mark.parametrize("seed_sd", [0.4, 0.9])
def test_the_finding_1_contrast_covers(report, seed_sd):
    """Δ(generous) − Δ(tight), Δ = arm − its own seed's base on the same tasks."""
    rng = np.random.default_rng(11)
    task_sd, rl_sd = 1.0, 0.5
    mu = {"tight": -1.4, "generous": 0.2}  # the base near 0.2 and 0.55 (the pilot's range)
    gain = {"tight": 0.6, "generous": 1.4}
    arm_sd, base_sd = np.hypot(np.hypot(seed_sd, rl_sd), task_sd), np.hypot(seed_sd, task_sd)
    truth = sum(
        sign * (_rate(mu[c] + gain[c], arm_sd) - _rate(mu[c], base_sd))
        for c, sign in (("generous", 1), ("tight", -1))
    )
    covered = 0
    for _ in range(SIMS):
        task = task_sd * rng.standard_normal((1, TASKS))
        base_seed = seed_sd * rng.standard_normal((SEEDS, 1))
        arm_seed = base_seed + rl_sd * rng.standard_normal((SEEDS, 1))
        d = {
            c: _draw(rng, mu[c] + gain[c] + arm_seed + task) - _draw(rng, mu[c] + base_seed + task)
            for c in mu
        }
        _, low, high = report.interval(d["generous"] - d["tight"], 0.05)
        covered += low <= truth <= high
    assert covered / SIMS >= 0.93, (seed_sd, covered / SIMS)


@pytest.mark.parametrize("seed_sd", [0.4, 0.9])
def test_the_worst_case_regret_interval_covers_every_arm_at_once(report, seed_sd):
    """Finding 3: three arms over five budgets, one best at tight budgets, one at generous
    ones, one (BudgetMix-like) never far from either; every arm's interval holds its true
    worst-case regret in the same draw."""
    rng = np.random.default_rng(12)
    task_sd = 1.0
    mus = np.array([-1.4, -0.8, -0.2, 0.6, 1.2])  # the base's logit at c = 1.5 .. 10
    gains = {"tight": [1.2, 1.2, 1.0, 0.8, 0.6], "generous": [0.6, 0.8, 1.0, 1.2, 1.4],
             "mix": [1.0, 1.1, 1.0, 1.1, 1.2]}  # fmt: skip
    sd = np.hypot(seed_sd, task_sd)
    rates = {a: np.array([_rate(m + g, sd) for m, g in zip(mus, gs)]) for a, gs in gains.items()}
    best = np.max(np.stack(list(rates.values())), axis=0)
    truth = {a: float(np.max(best - r)) for a, r in rates.items()}
    assert truth["mix"] > 0 and truth["tight"] > truth["mix"]  # the case finding 3 is about
    covered = 0
    for _ in range(SIMS // 2):
        task = task_sd * rng.standard_normal((1, TASKS, 1))
        p = {
            a: _draw(rng, mus + np.asarray(g) + seed_sd * rng.standard_normal((SEEDS, 1, 1)) + task)
            for a, g in gains.items()
        }
        intervals = {a: report.worst_case_regret(p, a, 0.05) for a in p}
        covered += all(low <= truth[a] <= high for a, (_, low, high) in intervals.items())
    assert covered / (SIMS // 2) >= 0.93, (seed_sd, covered / (SIMS // 2))


def test_intervals_leave_out_tasks_without_a_probe_and_refuse_nothing(report):
    x = np.full((SEEDS, 16), 0.1)
    x[:, 3] = np.nan  # no recovery probe applied on task 3
    x += np.random.default_rng(0).normal(0, 0.05, x.shape)
    mean, low, high = report.interval(x, 0.05)
    assert low < 0.1 < high and np.isfinite(mean)
    assert np.isnan(report.interval(np.full((SEEDS, 4), np.nan), 0.05)[0])


def test_the_verdict_rules(report):
    assert report.verdict((0.2, 0.05, 0.35), 0.1)[0] == "replicates"
    assert report.verdict((-0.2, -0.3, -0.1), 0.1) == ("does not replicate", "interval below 0: the opposite")  # fmt: skip
    assert report.verdict((0.0, -0.05, 0.08), 0.1)[0] == "does not replicate"
    assert report.verdict((0.05, -0.05, 0.15), 0.1)[0] == "inconclusive"
    assert report.verdict((float("nan"),) * 3, 0.1)[0] == "untestable"


def test_the_protocols_power_is_what_the_simulation_says(report):
    """The MDE of a contrast shrinks with seeds (the power table's premise), and an effect at
    the MDE is detected about 80% of the time."""
    args = dict(tasks=24, seed_sd=0.1, task_sd=0.1, noise_sd=0.28, sims=200)
    mde3, mde10 = report.simulated_mde(3, **args), report.simulated_mde(10, **args)
    assert mde10 < mde3 / 1.5
    power = report.simulated_power(mde10, 10, 24, 0.1, 0.1, 0.28, sims=400, seed=5)
    assert 0.7 <= power <= 0.92


def test_finding_2_reads_each_gain_on_its_own_range(report, monkeypatch, tmp_path):
    """The single-step gain is divided by 1 - p_random, so it reaches past 1 (an arm near
    perfect over a base below chance); read on (-1, 1), such a gain failed the report with
    "Expect the mean of `x` to lie within `bounds` (-1.0, 1.0)"."""
    from types import SimpleNamespace

    rng = np.random.default_rng(0)
    single = (rng.uniform(0.9, 1.0, (2, 16)) - rng.uniform(0.1, 0.3, (2, 16))) / 0.7
    deltas = {"single": single, "recovery": rng.uniform(-0.1, 0.3, (2, 16)), "single_chance": 0.3}
    monkeypatch.setattr(report, "probe_deltas", lambda *args: deltas)
    config = SimpleNamespace(envs=["turnbudget/Maze-Easy-v0"], arms=["budgetmix"], alpha=0.05,
                             margin=0.05, seeds=(0, 1))  # fmt: skip
    lines, verdicts = report._finding2(config, tmp_path, probes={})
    mean, low, high = verdicts["Maze-Easy/budgetmix"]["single"]
    assert mean > 1.0 and low < mean < high <= 1 / 0.7
    assert any("Maze-Easy" in line for line in lines)
