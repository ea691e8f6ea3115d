"""Honest intervals: none collapses at 0 or 1, and each covers at the design's own sizes.

Coverage is checked by simulation (fixed seeds, so the tests are deterministic):
tasks are drawn from a population of per-task success rates (smooth spreads,
and mixtures with rare hard tasks, the case a bootstrap over tasks misses most),
their outcomes drawn, and the interval must hold the population's value in at
least 93% of the draws for a nominal 95%. Rates and Pass@(K,T) cells are checked
on their score part alone (``n_bootstrap=0``): the reported intervals contain
it, so they cover at least as often; the recovery-specific skill as reported.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from turnbudget.eval.estimator import (
    bootstrap_seeds_tasks,
    clustered_rate,
    crossed_mean,
    difference_interval,
    estimate_from_task_grids,
    estimate_grid,
    paired_difference,
    pass_at_k,
    wilson_interval,
)
from turnbudget.eval.probes.summary import _single_skill, _specific

#: (name, population of per-task rates): means from 0.05 to 0.995.
POPULATIONS = {
    "uniform": lambda rng, size: rng.beta(1.0, 1.0, size),
    "high": lambda rng, size: rng.beta(4.5, 0.5, size),
    "near-one": lambda rng, size: rng.beta(9.7, 0.3, size),
    "low": lambda rng, size: rng.beta(0.25, 4.75, size),
    "rare-hard-tasks": lambda rng, size: np.where(rng.random(size) < 0.05, 0.2, 1.0),
    "some-impossible": lambda rng, size: np.where(rng.random(size) < 0.1, 0.0, 1.0),
    # The ε = 0.1 oracle's Pass@(1,9) on Maze-Easy (exact, from its Markov chain over rooms):
    # most tasks just below 1, a few with d* near 9 far below, and some past it at 0. Its
    # intervals covered 86-92%: the easy tasks' 8 of 8 counted as 8 trials each.
    "few-hard-easy-near-one": lambda rng, size: np.where(
        (u := rng.random(size)) < 0.015, 0.0, np.where(u < 0.1, 0.65, rng.beta(40.0, 1.0, size))
    ),
    # A few tasks far harder (or easier) than the rest, each rest still below 1 (above 0):
    # with 16+ episodes a task every easy one shows a spread, and a sample that drew none of
    # the hard ones claimed hundreds of trials (10 tasks x 32: 0.81, 0.87).
    "some-harder": lambda rng, size: np.where(rng.random(size) < 0.15, 0.6, 0.95),
    "fifth-half-rest-high": lambda rng, size: np.where(rng.random(size) < 0.2, 0.5, 0.97),
    "fifth-half-rest-low": lambda rng, size: np.where(rng.random(size) < 0.2, 0.5, 0.03),
}
SIZES = [(40, 5), (25, 8)]  # tasks x probes (or episodes) per task: the probes' and main job's
SIMS = 1500


def _population(name: str, rng: np.random.Generator) -> np.ndarray:
    return POPULATIONS[name](rng, 100_000)


@pytest.mark.parametrize(("m", "n"), SIZES)
@pytest.mark.parametrize("name", sorted(POPULATIONS))
def test_clustered_rate_covers(name, m, n):
    rng = np.random.default_rng(1)
    population = _population(name, rng)
    truth = float(population.mean())
    covered = 0
    for _ in range(SIMS):
        hits = rng.binomial(n, rng.choice(population, m))
        _, low, high = clustered_rate(hits, np.full(m, n))
        covered += low <= truth <= high
    assert covered / SIMS >= 0.93, (name, m, n, covered / SIMS)


@pytest.mark.parametrize("m", [5, 10])  # `evaluate`'s default is 10 tasks
@pytest.mark.parametrize("name", ["uniform", "high", "low", "few-hard-easy-near-one"])
def test_clustered_rate_covers_at_few_tasks(name, m):
    """A handful of tasks: the effective number of trials must shrink for the tasks' few
    degrees of freedom ((z / t)², Student's t at m - 1); with z alone, 90% at 5 tasks."""
    rng = np.random.default_rng(1)
    population = _population(name, rng)
    truth = float(population.mean())
    covered = 0
    for _ in range(SIMS):
        hits = rng.binomial(8, rng.choice(population, m))
        _, low, high = clustered_rate(hits, np.full(m, 8))
        covered += low <= truth <= high
    assert covered / SIMS >= 0.93, (name, m, covered / SIMS)


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize(
    "name", ["uniform", "near-one", "rare-hard-tasks", "some-impossible", "few-hard-easy-near-one"]
)
def test_pass_at_kt_cell_interval_covers(name, k):
    m, n = 25, 8  # the main job's tasks per env and episodes per task
    rng = np.random.default_rng(2)
    population = _population(name, rng)
    truth = float(np.mean(1.0 - (1.0 - population) ** k))
    covered = 0
    for _ in range(SIMS // 3):
        successes = rng.binomial(n, rng.choice(population, m))
        grids = np.array([pass_at_k(n, int(c), k) for c in successes]).reshape(m, 1, 1)
        est = estimate_from_task_grids(grids, [k], [1], n_per_task=n, n_bootstrap=0)
        covered += est.low.item() <= truth <= est.high.item()
    assert covered / (SIMS // 3) >= 0.93, (name, k, covered / (SIMS // 3))


MANY_EPISODES = [(10, 16), (10, 32), (25, 32), (25, 64), (40, 64)]


@pytest.mark.parametrize(("m", "n"), MANY_EPISODES)
@pytest.mark.parametrize(
    "name", ["few-hard-easy-near-one", "some-harder", "fifth-half-rest-high", "fifth-half-rest-low",
             "high", "low", "near-one"],
)  # fmt: skip
def test_pass_at_kt_cell_interval_covers_with_many_episodes_a_task(name, m, n):
    """More episodes a task sharpen each task's rate, not what the sample says about the
    tasks it did not draw: counted as independent trials, they covered 72-89% (`evaluate`'s
    default 10 tasks with --n 32; the main job's 25 tasks with 32 or 64 episodes)."""
    rng = np.random.default_rng(4)
    population = _population(name, rng)
    truth = float(population.mean())
    covered, sims = 0, SIMS // 2
    for _ in range(sims):
        successes = rng.binomial(n, rng.choice(population, m))
        grids = (successes / n).reshape(m, 1, 1)
        est = estimate_from_task_grids(grids, [1], [1], n_per_task=n, n_bootstrap=0)
        covered += est.low.item() <= truth <= est.high.item()
    assert covered / sims >= 0.93, (name, m, n, covered / sims)


#: tasks x trials a task: the probes' baseline (16 judged answers a task), an agent probed
#: with ``repeats=4`` or 16, at `evaluate`'s 10 tasks, the probes' 20 and 40.
MANY_TRIALS = [(10, 16), (20, 16), (20, 64), (40, 16)]
MANY_TRIALS_POPULATIONS = [
    "few-hard-easy-near-one", "some-harder", "fifth-half-rest-high", "fifth-half-rest-low",
    "high", "low", "near-one", "uniform",
]  # fmt: skip


@pytest.mark.parametrize(("m", "n"), MANY_TRIALS)
@pytest.mark.parametrize("name", MANY_TRIALS_POPULATIONS)
def test_clustered_rate_covers_with_many_trials_a_task(name, m, n):
    """A probe rate (or any rate) of many trials a task: counted in full, they covered 86-92%
    (some tasks far harder than the rest, a sample that drew none of them), as the episodes
    of a Pass@(K,T) cell did before `MAX_TRIALS_PER_TASK`."""
    rng = np.random.default_rng(6)
    population = _population(name, rng)
    truth = float(population.mean())
    covered, sims = 0, SIMS // 2
    for _ in range(sims):
        hits = rng.binomial(n, rng.choice(population, m))
        _, low, high = clustered_rate(hits, np.full(m, n))
        covered += low <= truth <= high
    assert covered / sims >= 0.93, (name, m, n, covered / sims)


#: tasks x episodes a task x steps an episode.
STEP_SIZES = [(10, 8, 32), (25, 32, 64), (40, 64, 32)]


@pytest.mark.parametrize(("m", "episodes", "steps"), STEP_SIZES)
@pytest.mark.parametrize(
    "name", ["few-hard-easy-near-one", "some-harder", "fifth-half-rest-high", "near-one", "low"]
)
def test_clustered_rate_covers_a_step_rate(name, m, episodes, steps):
    """A rate over steps (e.g. optimal steps among steps), steps of one episode alike: each
    episode's rate is Beta around its task's (5 pseudo-trials). Hundreds of steps a task
    counted in full covered 67-92% for a nominal 95% (10 tasks x 8 x 32 where 15% of tasks
    sit at 0.6 among tasks at 0.95: 0.80)."""
    rng = np.random.default_rng(7)
    population = _population(name, rng)
    truth = float(population.mean())
    covered, sims = 0, SIMS // 2
    for _ in range(sims):
        rates = np.repeat(rng.choice(population, m), episodes)
        inner = np.clip(rates, 1e-9, 1 - 1e-9) * 5.0
        episode_rates = np.where((rates > 0) & (rates < 1), rng.beta(inner, 5.0 - inner), rates)
        hits = rng.binomial(steps, episode_rates).reshape(m, episodes).sum(axis=1)
        _, low, high = clustered_rate(hits, np.full(m, episodes * steps))
        covered += low <= truth <= high
    assert covered / sims >= 0.93, (name, m, episodes, steps, covered / sims)


def test_zero_failure_cell_has_a_lower_bound_below_one():
    """25 tasks x 8 episodes, all successful: the bootstrap over tasks said [1, 1]."""
    tasks = {("env", seed): [1] * 8 for seed in range(25)}
    est = estimate_grid(tasks, ks=[1, 4], ts=[1, 8])
    assert np.all(est.mean == 1.0) and np.all(est.high == 1.0)
    assert np.all(est.low < 1.0)
    assert est.low[0, 1] == pytest.approx(25 / (25 + 1.959964**2), abs=1e-4)  # Wilson, 25 tasks
    # and at 0: every episode failed
    none = estimate_grid({("env", s): [None] * 8 for s in range(25)}, ks=[1], ts=[8])
    assert none.low.item() == 0.0 < none.high.item()


@pytest.mark.parametrize(("m", "n"), [SIZES[0], pytest.param(*SIZES[1], marks=pytest.mark.slow)])
@pytest.mark.parametrize(
    ("name", "delta", "common"),
    [("uniform", 0.0, 0.9), ("uniform", 0.0, 0.0), ("near-one", 0.0, 1.0), ("uniform", 0.2, 0.8),
     ("near-one", -0.05, 1.0), ("low", 0.03, 0.9), ("rare-hard-tasks", 0.0, 0.9)],
)  # fmt: skip
def test_recovery_specific_interval_covers(name, delta, common, m, n):
    """Pairs (after an error, control) whose outcomes share the agent's draws with probability
    ``common`` (common random numbers); ``delta``: the true recovery-specific skill."""
    rng = np.random.default_rng(3)
    population = _population(name, rng)
    truth = float(np.mean(np.clip(population + delta, 0.0, 1.0) - population))
    covered, sims = 0, SIMS // 2
    for _ in range(sims):
        rates = rng.choice(population, m)
        u = rng.random((m, n))
        v = np.where(rng.random((m, n)) < common, u, rng.random((m, n)))
        after = (u < np.clip(rates + delta, 0, 1)[:, None]).sum(axis=1)
        control = (v < rates[:, None]).sum(axis=1)
        table = np.stack([after, control, after, control, np.full(m, n)], axis=1).astype(float)
        specific, _, _ = _specific(table, n_bootstrap=100)
        covered += specific[1] <= truth <= specific[2]
    assert covered / sims >= 0.93, (name, delta, common, covered / sims)


#: tasks x recovery pairs a task: `probe`'s defaults (20 tasks, 4 prefixes x 2 kinds), per
#: kind (4), `validate`'s 40 tasks, the baseline's 4 repeats (32), repeats=2 (16), 10 tasks.
MANY_PAIRS = [(10, 8), (10, 16), (20, 4), (20, 8), (20, 16), (40, 8), (40, 32)]
#: Per task (win rate after the error, in the control), ``share`` of the tasks at
#: ``(after, control)``, the rest at one rate for both (null: Beta(0.3, 6), rare wins).
PAIR_POPULATIONS = {
    "null-rare-wins": (0.0, (0.0, 0.0)),
    "tenth-half": (0.1, (0.52, 0.02)),
    "twentieth-huge": (0.05, (0.05, 0.95)),
    "fifth-half": (0.2, (0.1, 0.6)),
    "tenth-either-sign": (0.1, (0.3, 0.8)),
}


@pytest.mark.parametrize(("m", "n"), MANY_PAIRS)
@pytest.mark.parametrize("name", sorted(PAIR_POPULATIONS))
def test_paired_difference_covers_with_many_pairs_a_task(name, m, n):
    """A few tasks with a large difference among tasks with none: counting all of a task's
    pairs in the floor, a sample that drew none of them covered 65-92% (10 x 16, a twentieth
    at 0.9: 0.65). ``tenth-either-sign``: another tenth of the tasks at the opposite difference."""
    rng = np.random.default_rng(8)
    share, (after, control) = PAIR_POPULATIONS[name]
    size = 100_000
    base = rng.beta(0.3, 6.0, size)
    a, c = base.copy(), base.copy()
    odd = rng.random(size)
    a[odd < share], c[odd < share] = after, control
    if name == "tenth-either-sign":
        a[(odd >= share) & (odd < 2 * share)] = control
        c[(odd >= share) & (odd < 2 * share)] = after
    truth = float(np.mean(a - c))
    covered, sims = 0, SIMS // 2
    for _ in range(sims):
        j = rng.integers(0, size, m)
        wins = rng.random((m, n)) < a[j, None]
        control_wins = rng.random((m, n)) < c[j, None]
        _, low, high = paired_difference((wins.sum(1) - control_wins.sum(1)), np.full(m, n))
        covered += low <= truth <= high
    assert covered / sims >= 0.93, (name, m, n, covered / sims)


@pytest.mark.parametrize("m", [1, 2, 3, 20])
@pytest.mark.parametrize("lift", [-1.0, 0.0, 0.5])
def test_single_step_skill_interval_covers_at_few_tasks(m, lift):
    """The single-step skill (p - r) / (1 - r) of an agent whose rate of optimal answers on a
    task is r_t + lift (1 - r_t), clipped (lift -1: always wrong, as a ping-pong agent is),
    against a uniform baseline whose rate r_t varies between tasks: 4 judged answers of the
    agent's and 16 of the baseline's a task, as `probe`'s defaults give. The score part held
    the baseline's rate fixed: an agent always wrong on one task had a lower bound equal to
    its estimate, and covered 67% at 1 task, 84% at 2 (every miss above the truth)."""
    rng = np.random.default_rng(5)
    population = rng.beta(2.0, 4.0, 100_000)
    agent_rates = np.clip(population + lift * (1.0 - population), 0.0, 1.0)
    truth = (agent_rates.mean() - population.mean()) / (1.0 - population.mean())
    covered, sims = 0, SIMS // 2
    for _ in range(sims):
        tasks = rng.integers(0, len(population), m)
        table = np.stack(
            [rng.binomial(4, agent_rates[tasks]), np.full(m, 4),
             rng.binomial(16, population[tasks]), np.full(m, 16)], axis=1
        ).astype(float)  # fmt: skip
        skill = _single_skill(table, n_bootstrap=200)
        if skill is None:  # (a baseline right every time: no skill to tell)
            continue
        assert skill[1] < skill[0] or skill[0] == -np.inf or skill[1] == skill[0] == 1.0
        covered += skill[1] <= truth <= skill[2]
    assert covered / sims >= 0.93, (m, lift, covered / sims)


def test_score_intervals_never_collapse():
    assert wilson_interval(1.0, 40)[0] < 1.0 and wilson_interval(0.0, 40)[1] > 0.0
    _, low, high = clustered_rate([5] * 40, [5] * 40)
    assert low < 1.0 == high
    d, low, high = difference_interval((1.0, 0.95, 1.0), (1.0, 0.95, 1.0))
    assert low < d == 0.0 < high
    table = np.array([[5.0, 5.0, 5.0, 5.0, 5.0]] * 40)  # every pair won on both sides
    specific, after, control = _specific(table, n_bootstrap=200)
    assert specific[0] == 0.0 and specific[1] < 0.0 < specific[2]
    assert after[1] < 1.0 and control[1] < 1.0
    # The two-way bootstrap too: every seed and task at 1 (or at 0) said [1, 1] (or [0, 0]).
    for value in (1.0, 0.0):
        cells = np.full((3, 24), value)
        mean, low, high = bootstrap_seeds_tasks(cells, n_bootstrap=100, bounds=(0, 1))
        assert mean == value and low < high and low <= value <= high
    mean, low, high = bootstrap_seeds_tasks(np.ones((10, 24)), n_bootstrap=100, bounds=(0, 1))
    assert 0.5 < low < 1.0 == high  # (the rule of three over 10 seeds: 1 - ln(40) / 10)


# -- training seeds crossed with tasks (the replication's and the main job's intervals) --------

#: (seeds, tasks, episodes per task): the replication's protocol, the main job's zoo, the fewest.
SEED_DESIGNS = [(10, 24, 8), (5, 24, 8), (3, 24, 8)]
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(40)  # E[f(Z)], Z ~ N(0, 1)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _over_seeds(logit, seed_sd):
    """E over the seed effect of the success rate: a Gauss-Hermite mean (exact to 1e-9)."""
    z = np.asarray(logit, dtype=float)[..., None] + seed_sd * _NODES
    return (_sigmoid(z) * _WEIGHTS).sum(axis=-1)


@pytest.mark.parametrize("tasks", ["fixed", "random"])
# logit scale: 0.10, 0.20 and 0.28 seed-to-seed near 0.5 (at 2.0, 0.38, 3 seeds cover 92-93%:
# `crossed_mean` says so)
@pytest.mark.parametrize("seed_sd", [0.4, 0.9, 1.3])
@pytest.mark.parametrize(("seeds", "m", "n"), [*SEED_DESIGNS, (2, 24, 8), (3, 48, 8)])
def test_crossed_mean_covers(seeds, m, n, seed_sd, tasks):
    """Rates: success ~ Bernoulli(sigmoid(mu + seed + task)), seeds and tasks normal on the logit.
    Tasks random, 2-3 seeds whose spread dominates covered 88-92% (Satterthwaite's df of the sum
    exceeded the seeds' own in the samples whose seeds came out close)."""
    rng = np.random.default_rng(7)
    mu, task_sd = 0.3, 1.5
    population = float((_over_seeds(mu + task_sd * _NODES, seed_sd) * _WEIGHTS).sum())
    covered = 0
    for _ in range(SIMS):
        task_effect = task_sd * rng.standard_normal(m)
        logit = mu + seed_sd * rng.standard_normal((seeds, 1)) + task_effect
        x = rng.binomial(n, _sigmoid(logit)) / n
        truth = (
            population
            if tasks == "random"
            else float(_over_seeds(mu + task_effect, seed_sd).mean())
        )
        _, low, high = crossed_mean(x, tasks=tasks, bounds=(0, 1))
        covered += low <= truth <= high
    assert covered / SIMS >= 0.93, (seeds, m, n, seed_sd, tasks, covered / SIMS)


@pytest.mark.parametrize("seed_sd", [0.4, 0.9, 1.3, 2.0])
@pytest.mark.parametrize(("seeds", "m", "n"), [*SEED_DESIGNS, (2, 24, 8)])
def test_crossed_mean_covers_a_paired_gain(seeds, m, n, seed_sd):
    """An RL arm minus its own seed's base, on the same tasks: the gain's interval covers."""
    rng = np.random.default_rng(8)
    mu, gain, task_sd = -0.5, 0.8, 1.2
    grid = task_sd * _NODES
    population = float(
        ((_over_seeds(mu + gain + grid, np.hypot(seed_sd, 0.5)) - _over_seeds(mu + grid, seed_sd))
         * _WEIGHTS).sum()
    )  # fmt: skip
    covered = 0
    for _ in range(SIMS):
        task = task_sd * rng.standard_normal(m)
        base_seed = seed_sd * rng.standard_normal((seeds, 1))
        arm_seed = base_seed + 0.5 * rng.standard_normal((seeds, 1))  # RL adds its own spread
        base = rng.binomial(n, _sigmoid(mu + base_seed + task)) / n
        arm = rng.binomial(n, _sigmoid(mu + gain + arm_seed + task)) / n
        _, low, high = crossed_mean(arm - base)
        covered += low <= population <= high
    assert covered / SIMS >= 0.93, (seeds, m, n, seed_sd, covered / SIMS)


#: Per-task rates near a bound: Beta(mean, concentration κ) (κ = 2: a few tasks carry all the
#: successes, or all the failures). The t-interval alone covered 73-93% of these.
BOUNDARY = [(mean, kappa) for mean in (0.02, 0.98) for kappa in (2.0, 10.0)] + [
    (0.05, 10.0), (0.95, 10.0)
]  # fmt: skip


def _beta_logits(rng, mean, kappa, size):
    p = rng.beta(mean * kappa, (1 - mean) * kappa, size)
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return np.log(p) - np.log1p(-p)


@pytest.mark.parametrize(("mean", "kappa"), BOUNDARY)
@pytest.mark.parametrize(("seeds", "m", "n"), [(10, 24, 8), (5, 32, 8)])
def test_crossed_mean_covers_a_rate_near_a_bound(seeds, m, n, mean, kappa):
    """Rates near 0 or 1, tasks random (the replication's and the main job's designs): the
    interval holds the population's rate, where the t-interval alone missed on the far side
    whenever the tasks drawn under-represented the few that ever succeed (or fail)."""
    rng = np.random.default_rng(11)
    seed_sd = 0.4
    population = float(_over_seeds(_beta_logits(rng, mean, kappa, 200_000), seed_sd).mean())
    covered = 0
    for _ in range(SIMS):
        logit = _beta_logits(rng, mean, kappa, m) + seed_sd * rng.standard_normal((seeds, 1))
        x = rng.binomial(n, _sigmoid(logit)) / n
        _, low, high = crossed_mean(x, tasks="random", bounds=(0, 1))
        covered += low <= population <= high
    assert covered / SIMS >= 0.93, (seeds, m, n, mean, kappa, covered / SIMS)


@pytest.mark.parametrize("gain", [0.0, 0.3, 0.7])  # logit scale: +0.000 to +0.011 near a bound
@pytest.mark.parametrize(("mean", "kappa"), [(0.02, 2.0), (0.98, 2.0), (0.02, 10.0)])
def test_crossed_mean_covers_a_paired_gain_near_a_bound(mean, kappa, gain):
    """An arm minus its seed's base near a bound, 10 seeds by 24 tasks: mostly cells of 0,
    whose t-interval collapsed around the few that moved (80-84% at gain 0.7)."""
    rng = np.random.default_rng(12)
    seeds, m, n, seed_sd = 10, 24, 8, 0.4
    tasks = _beta_logits(rng, mean, kappa, 200_000)
    arm_sd = np.hypot(0.5 * seed_sd, np.sqrt(0.75) * seed_sd)  # (= seed_sd: the same spread)
    population = float((_over_seeds(tasks + gain, arm_sd) - _over_seeds(tasks, seed_sd)).mean())
    covered = 0
    for _ in range(SIMS):
        task = _beta_logits(rng, mean, kappa, m)
        base_seed = seed_sd * rng.standard_normal((seeds, 1))
        arm_seed = 0.5 * base_seed + np.sqrt(0.75) * seed_sd * rng.standard_normal((seeds, 1))
        base = rng.binomial(n, _sigmoid(task + base_seed)) / n
        arm = rng.binomial(n, _sigmoid(task + gain + arm_seed)) / n
        _, low, high = crossed_mean(arm - base)
        covered += low <= population <= high
    assert covered / SIMS >= 0.93, (mean, kappa, gain, covered / SIMS)


def test_crossed_mean_of_a_rate_has_no_jump_at_the_first_success():
    """Every cell 0 gave [0, ln(40) / S] (0.37 at 10 seeds), one success in 1,920 episodes
    [0, 0.0016]: the same data but one episode, intervals 230 times apart."""
    none = np.zeros((10, 24))
    one = none.copy()
    one[0, 0] = 1 / 8
    _, _, high_none = crossed_mean(none, bounds=(0, 1))
    _, _, high_one = crossed_mean(one, bounds=(0, 1))
    assert 0.5 < high_one / high_none < 2, (high_none, high_one)


def test_crossed_mean_never_collapses_and_refuses_bad_input():
    _, low, high = crossed_mean(np.ones((10, 24)), bounds=(0, 1))
    assert high == 1.0 and low < 1.0
    with pytest.raises(ValueError, match="at least 2 seeds"):
        crossed_mean([[0.5, 0.5]])
    with pytest.raises(ValueError, match="NaN"):
        crossed_mean([[0.5, np.nan], [0.5, 0.5]])
    with pytest.raises(ValueError, match="'random' or 'fixed'"):
        crossed_mean(np.ones((2, 2)), tasks="all")


# -- a control whose Pass@(1,T) is known exactly ------------------------------------------------


def _exact_pass_at_1(env_id: str, seed: int, epsilon: float, budgets: list[int]) -> list[float]:
    """P(won within T turns) of the memoryless ε-oracle on one task, for each T of ``budgets``
    (exact: `eps_oracle_reach`)."""
    import gymnasium as gym
    from _support import eps_oracle_reach

    env = gym.make(env_id)
    observation, _ = env.reset(seed=seed)
    reached = eps_oracle_reach(env.unwrapped, observation, [epsilon] * max(budgets))
    env.close()
    return [reached[t - 1] for t in budgets]


@pytest.mark.parametrize("epsilon", [0.1, 0.5])
def test_an_eps_oracles_pass_at_1t_interval_holds_its_exact_value(epsilon):
    """The ε-oracle on Maze-Easy, whose Pass@(1,T) on each task is known exactly: `evaluate`'s
    interval holds the mean over these tasks at every T, near 0, in between and near 1.
    (At random tasks, 400 runs of 32 tasks x 8 episodes at ε = 0.1 covered the population's
    value 89.5% at T = 9 while a task at 0 or 1 counted all its episodes, 96-100% since.)"""
    from turnbudget.agents import OracleAgent
    from turnbudget.eval import evaluate

    env_id, tasks, ts = "turnbudget/Maze-Easy-v0", list(range(8)), [5, 7, 9, 12, 16]
    exact = np.mean([_exact_pass_at_1(env_id, s, epsilon, ts) for s in tasks], axis=0)
    result = evaluate(
        env_id, OracleAgent(epsilon), ks=[1], ts=ts, n=32, tasks=tasks, mode="truncate",
        record_steps=False, n_bootstrap=200, seed=3,
    )  # fmt: skip
    cell = result.summary["groups"][env_id]["truncate"]
    low, mean, high = (np.array(cell[name][0]) for name in ("low", "mean", "high"))
    assert (low <= exact + 1e-9).all() and (exact <= high + 1e-9).all(), (low, exact, high)
    assert np.abs(mean - exact).max() < 0.1, (mean, exact)


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 7, 8, 9, 10, 13, 25, 32, 40, 64])
def test_all_or_nothing_tasks_cover_next_to_0_and_1(m):
    """Pass@8 of 8 episodes is 0 or 1 a task: the score interval (``n_bootstrap=0``, as the
    probes' rates and `crossed_mean`'s) is then Wilson's at the m tasks, which covers 84% for a
    rate just past 0 or just below 1 at any m (a Pass@8 of 0.97 to 0.995 at 25-40 tasks), and
    79-89% at one to four tasks (a rate of 0.2 against [0, 0.79] when the one task failed).
    Exact coverage (the binomial over how many tasks succeed), every rate on a fine grid."""
    rates = np.linspace(0.0005, 0.9995, 2000)
    counts = np.arange(m + 1)
    pmf = np.exp(  # P(x of m tasks succeed), each row a rate
        np.array([math.lgamma(m + 1) - math.lgamma(x + 1) - math.lgamma(m - x + 1) for x in counts])
        + np.log(rates)[:, None] * counts
        + np.log1p(-rates)[:, None] * (m - counts)
    )
    bounds = []
    for x in counts:
        grids = np.array([1.0] * x + [0.0] * (m - x)).reshape(m, 1, 1)  # each task's Pass@8
        cell = estimate_from_task_grids(grids, [8], [1], n_per_task=8, n_bootstrap=0)
        bounds.append((cell.low.item(), cell.high.item()))
    low, high = np.array(bounds).T
    coverage = (pmf * ((low <= rates[:, None]) & (rates[:, None] <= high))).sum(axis=1)
    worst = int(coverage.argmin())
    assert coverage.min() >= 0.91, (m, round(float(rates[worst]), 4), float(coverage.min()))
    assert coverage.mean() >= 0.95, (m, float(coverage.mean()))
