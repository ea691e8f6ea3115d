from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnbudget.eval.estimator import (
    estimate_from_task_grids,
    estimate_grid,
    pass_at_k,
    pass_at_kt,
)


def brute_pass_at_k(outcomes: list[bool], k: int) -> float:
    """Fraction of all k-subsets of the episodes that hold at least one success."""
    subsets = list(itertools.combinations(range(len(outcomes)), k))
    return sum(any(outcomes[i] for i in s) for s in subsets) / len(subsets)


def test_pass_at_k_matches_brute_force_enumeration_on_many_random_cases():
    rng = np.random.default_rng(1234)
    for _ in range(300):
        n = int(rng.integers(1, 11))
        outcomes = list(rng.random(n) < rng.random())
        k = int(rng.integers(1, n + 1))
        assert pass_at_k(n, sum(outcomes), k) == pytest.approx(
            brute_pass_at_k(outcomes, k), abs=1e-12
        )


@given(n=st.integers(1, 12), data=st.data())
@settings(max_examples=200, deadline=None)
def test_pass_at_k_matches_binomial_form(n, data):
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    expected = 1.0 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_is_stable_for_large_n():
    # C(1000, 500) overflows a float; the product form does not.
    value = pass_at_k(1000, 3, 500)
    expected = 1.0 - math.comb(997, 500) / math.comb(1000, 500)
    assert value == pytest.approx(expected, rel=1e-9)
    assert pass_at_k(1000, 0, 500) == 0.0


@pytest.mark.parametrize(
    "n,c,k", [(10**12, 10**11, 5), (10**20, 10**19, 1), (3 * 10**6, 2 * 10**6, 40)]
)
def test_pass_at_k_with_a_huge_number_of_successes_needs_k_terms(n, c, k):
    """With c near 1e9 the product over the c successes allocated gigabytes (1e11: a
    MemoryError of 745 GiB; 1e19: NumPy's "Maximum allowed size exceeded")."""
    expected = 1.0 - float(
        np.prod([(n - c - j) / (n - j) for j in range(k)])
    )  # C(n - c, k) / C(n, k), k terms
    assert pass_at_k(n, c, k) == pytest.approx(expected, rel=1e-9)
    assert pass_at_k(1000, 1000, 1) == 1.0


def test_pass_at_kt_matches_brute_force_over_budgets():
    rng = np.random.default_rng(7)
    for _ in range(100):
        n = int(rng.integers(1, 9))
        turns = [None if rng.random() < 0.4 else int(rng.integers(1, 30)) for _ in range(n)]
        ks = sorted({int(k) for k in rng.integers(1, n + 1, size=3)})
        ts = sorted({int(t) for t in rng.integers(1, 35, size=4)})
        grid = pass_at_kt(turns, ks, ts)
        for i, k in enumerate(ks):
            for j, t in enumerate(ts):
                outcomes = [x is not None and x <= t for x in turns]
                assert grid[i, j] == pytest.approx(brute_pass_at_k(outcomes, k), abs=1e-12)


def test_grid_is_monotone_in_k_and_t():
    rng = np.random.default_rng(3)
    turns = [None if rng.random() < 0.3 else int(rng.integers(1, 50)) for _ in range(16)]
    grid = pass_at_kt(turns, [1, 2, 4, 8, 16], [5, 10, 20, 40, 80])
    assert np.all(np.diff(grid, axis=0) >= -1e-12)
    assert np.all(np.diff(grid, axis=1) >= -1e-12)


@pytest.mark.parametrize(
    ("n", "c", "k", "match"),
    [
        (3, 1, 4, "n=3 < k=4"),
        (3, 1, 0, "positive int"),
        (3, 4, 1, "0 <= c <= n"),
        (0, 0, 1, "positive"),
    ],
)
def test_pass_at_k_rejects_bad_arguments(n, c, k, match):
    with pytest.raises(ValueError, match=match):
        pass_at_k(n, c, k)


def test_estimate_grid_errors_when_k_exceeds_episodes():
    with pytest.raises(ValueError, match="n=2 < k=4"):
        estimate_grid({"a": [1, None], "b": [3, 4, 5]}, ks=[1, 4], ts=[5])


def test_estimate_grid_averages_tasks_and_ci_brackets_mean():
    rng = np.random.default_rng(0)
    tasks = {
        s: [None if rng.random() < 0.5 else int(rng.integers(1, 20)) for _ in range(8)]
        for s in range(30)
    }
    est = estimate_grid(tasks, ks=[1, 4], ts=[5, 10, 20], n_bootstrap=500, seed=1)
    manual = np.mean([pass_at_kt(tasks[s], [1, 4], [5, 10, 20]) for s in range(30)], axis=0)
    np.testing.assert_allclose(est.mean, manual)
    assert np.all(est.low <= est.mean + 1e-12) and np.all(est.mean <= est.high + 1e-12)
    assert np.any(est.high - est.low > 0.01)
    again = estimate_grid(tasks, ks=[1, 4], ts=[5, 10, 20], n_bootstrap=500, seed=1)
    np.testing.assert_array_equal(est.low, again.low)
    assert est.n_tasks == 30 and est.n_per_task == 8
    d = est.to_dict()
    assert d["ks"] == [1, 4] and len(d["mean"]) == 2 and len(d["mean"][0]) == 3


def test_estimate_from_task_grids_checks_shape():
    with pytest.raises(ValueError, match="shape"):
        estimate_from_task_grids(np.zeros((2, 3, 3)), [1, 2], [5, 6, 7], n_per_task=2)


def _one_resample_at_a_time(grids: np.ndarray, n_bootstrap: int, seed: int) -> np.ndarray:
    """The bootstrap means as the estimator drew them before it drew blocks: a resample of the
    tasks per call (the reference the blocks must reproduce bit for bit)."""
    rng = np.random.default_rng(seed)
    n_tasks = len(grids)
    return np.stack(
        [grids[rng.integers(0, n_tasks, size=n_tasks)].mean(axis=0) for _ in range(n_bootstrap)]
    )


@pytest.mark.parametrize("block_values", [1, 7, 64, 1 << 16, 1 << 20])
@pytest.mark.parametrize("shape", [(2, 1, 1), (9, 1, 1), (125, 1, 1), (17, 3, 4), (300, 2, 5)])
def test_the_bootstrap_in_blocks_is_one_resample_at_a_time_bit_for_bit(
    monkeypatch, shape, block_values
):
    """Blocks of one resample or of many, a last block cut short or not: the same draws and
    the same means, so the same interval as one resample at a time, exactly."""
    import turnbudget.eval.estimator as estimator

    monkeypatch.setattr(estimator, "_BOOTSTRAP_BLOCK_VALUES", block_values)
    rng = np.random.default_rng(shape[0])
    grids = rng.integers(0, 9, size=shape) / 8.0  # (rates with ties, as real grids have)
    ks, ts = list(range(1, shape[1] + 1)), list(range(4, 4 + shape[2]))
    n_bootstrap, confidence, seed = 203, 0.9, 11
    # (many episodes per task: the score interval as narrow as the tasks' spread allows)
    est = estimate_from_task_grids(
        grids, ks, ts, n_per_task=10**6, n_bootstrap=n_bootstrap, confidence=confidence,
        seed=seed,
    )  # fmt: skip
    without = estimate_from_task_grids(
        grids, ks, ts, n_per_task=10**6, n_bootstrap=0, confidence=confidence
    )
    boot = _one_resample_at_a_time(grids, n_bootstrap, seed)
    alpha = (1.0 - confidence) / 2.0
    boot_low, boot_high = np.quantile(boot, [alpha, 1.0 - alpha], axis=0)
    assert np.array_equal(est.low, np.minimum(without.low, boot_low))
    assert np.array_equal(est.high, np.maximum(without.high, boot_high))
    if shape[0] > 9:  # (the bootstrap counted: with few tasks the score interval holds it)
        assert (est.low < without.low).any() or (est.high > without.high).any()


def test_seed_task_bootstrap_leaves_out_resamples_with_no_scored_cell():
    """A resample that drew only NaN cells made every bound NaN (3 seeds x 24 tasks, one seed
    scoring 2 tasks: (0.498, nan, nan)); an all-NaN array gave (nan, nan, nan) with a warning."""
    import warnings

    from turnbudget.eval.estimator import bootstrap_seeds_tasks

    x = np.random.default_rng(0).random((3, 24))
    x[0, 2:] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no "Mean of empty slice" either)
        mean, low, high = bootstrap_seeds_tasks(x, n_bootstrap=2000, bounds=(0, 1))
    assert np.isfinite([mean, low, high]).all() and 0 <= low <= mean <= high <= 1
    with pytest.raises(ValueError, match="at least one cell that is not NaN"):
        bootstrap_seeds_tasks([[np.nan, np.nan]] * 2)


@pytest.mark.timeout(120, method="thread")  # (a guard: the call took a minute before)
def test_pass_at_k_keeps_tiny_values_and_huge_counts(monkeypatch):
    """pass@1 of 1 success in 1e17 episodes was 0.0 (1 minus a product next to 1); counts of
    1e30 took a minute a call (a product of 1e10 terms) and lost the fifth digit."""
    from turnbudget.eval import estimator

    assert pass_at_k(10**17, 1, 1) == pytest.approx(1e-17, rel=1e-12)
    assert pass_at_k(10**17, 3, 2) == pytest.approx(6e-17, rel=1e-9)  # (6n - 12) / n(n - 1)
    # c k / n = 1e-5, every other term of the log below 1e-14 of it
    assert pass_at_k(10**30, 10**15, 10**10) == pytest.approx(-math.expm1(-1e-5), rel=1e-12)
    assert pass_at_k(10**30, 10**10, 10**15) == pass_at_k(10**30, 10**15, 10**10)
    assert pass_at_k(10**6, 0, 5) == 0.0 and pass_at_k(4, 1, 1) == 0.25
    # Euler-Maclaurin against the summed log, where both run
    for m, a, b in [(5000, 1e5, 1e12), (20000, 3.0, 1e9), (10**5, 40.0, 1e8)]:
        summed = estimator._log_ratio(m, a, b)
        monkeypatch.setattr(estimator, "_SUMMED_TERMS", 100)
        assert estimator._log_ratio(m, a, b) == pytest.approx(summed, rel=1e-12)
        monkeypatch.undo()


def test_a_cluster_of_no_trials_is_no_task_of_the_sample():
    """Clusters with no trials counted as tasks that agreed: 1 hit of 1 trial beside 99 empty
    clusters gave [0.96, 1] where the one trial alone gives [0.21, 1]."""
    from turnbudget.eval.estimator import clustered_rate, paired_difference

    assert clustered_rate([1] + [0] * 99, [1] + [0] * 99) == clustered_rate([1], [1])
    assert clustered_rate([0, 2, 0, 3], [0, 4, 0, 5]) == clustered_rate([2, 3], [4, 5])
    assert paired_difference([1] + [0] * 99, [1] + [0] * 99) == paired_difference([1], [1])
    assert paired_difference([0, 1, 0, -2], [0, 3, 0, 4]) == paired_difference([1, -2], [3, 4])


def test_paired_differences_and_interval_differences_refuse_what_they_cannot_be():
    """Sums past their pairs, NaN and malformed estimates gave a mean outside its own interval
    or NaN, silently (paired_difference([5, 0], [2, 2]) was (1.25, -1.0, 1.0))."""
    from turnbudget.eval.estimator import difference_interval, paired_difference

    for differences, pairs in (([5, 0], [2, 2]), ([np.nan, 0], [2, 2]), ([0, 0], [-1, 2])):
        with pytest.raises(ValueError, match="a sum of that many differences in"):
            paired_difference(differences, pairs)
    for a in ((np.nan, 0, 1), (0.5, 0.6, 0.4), None, (0.5, 0.4), "abc"):
        with pytest.raises(ValueError, match="Expect `a` to be"):
            difference_interval(a, (0.5, 0.4, 0.6))
    with pytest.raises(ValueError, match="Expect `correlation`"):
        difference_interval((0.5, 0.4, 0.6), (0.5, 0.4, 0.6), correlation=np.nan)
    assert paired_difference([1, -1], [2, 2])[0] == 0.0


@pytest.mark.parametrize(
    "n,c,k", [(10**18, 10**17, 10**17), (10**18, 10**12, 10**12), (10**15, 3 * 10**6, 3 * 10**6)]
)
def test_pass_at_k_with_huge_counts_takes_bounded_memory(n, c, k):
    """With c and k both past a million the product allocated 8 bytes a term (10**17: a
    MemoryError of 711 PiB; 10**12: 7.28 TiB)."""
    expected = -math.expm1(k * math.log1p(-c / n))  # (1 - c/n)**k: the ratio to 1e-6 here
    assert pass_at_k(n, c, k) == pytest.approx(expected, rel=1e-5)
    assert pass_at_k(np.int64(10**10), np.int64(10**9), np.int64(10**9)) == 1.0  # (no wrap)


def test_score_intervals_refuse_what_would_break_them():
    """A confidence within 2**-53 of 1, ints past a float, sums past a float and tiny sums
    were a StatisticsError, an OverflowError, a NaN rate, a ZeroDivisionError; a cell past
    `bounds` (or bounds upside down) gave an interval that missed its mean; a difference of
    skills below -1 was cut at -1, above its own high bound."""
    from turnbudget.eval.estimator import (
        GridEstimate,
        bootstrap_seeds_tasks,
        check_grid_values,
        clustered_rate,
        crossed_mean,
        difference_interval,
        paired_difference,
        wilson_interval,
    )

    for call, says in (
        (lambda: estimate_grid({"a": [1]}, [1], [1], confidence=1 - 1e-16), "`confidence`"),
        (lambda: wilson_interval(0.5, 10, 1 - 1e-16), "`confidence`"),
        (lambda: clustered_rate([10**400], [10**400]), "`hits` to be numbers"),
        (lambda: crossed_mean([[10**400], [1]]), "`x` to be numbers"),
        (lambda: crossed_mean([["a"], ["b"]]), "`x` to be numbers"),
        (lambda: bootstrap_seeds_tasks([[10**400], [1]]), "`x` to be numbers"),
        (
            lambda: estimate_from_task_grids(np.full((1, 1, 1), 0.5 + 1j), [1], [1], n_per_task=1),
            "`grids` to be numbers",
        ),
        (lambda: clustered_rate([1e308, 1e308], [1e308, 1e308]), "sum of `trials`"),
        (lambda: paired_difference([0, 0], [1e308, 1e308]), "sum of `pairs`"),
        (lambda: crossed_mean([[5.0], [6.0]], bounds=(0, 1)), "within `bounds`"),
        (lambda: crossed_mean([[0.5], [0.6]], bounds=(1, 0)), "`bounds`"),
        (lambda: crossed_mean([[0.5], [0.6]], bounds=None), "`bounds`"),
        (lambda: bootstrap_seeds_tasks([[np.inf], [0.0]]), "within `bounds`"),
        (lambda: bootstrap_seeds_tasks([[5.0], [6.0]], bounds=(0, 1)), "within `bounds`"),
        (lambda: bootstrap_seeds_tasks([[1.0]], bounds=(math.nan, 1)), "`bounds`"),
        (
            lambda: difference_interval((1e308, -1e308, 1e308), (-1e308, -1e308, 1e308)),
            "differ by a finite amount",
        ),
        (lambda: check_grid_values(np.array(3), "ks"), "`ks` to be a list"),
        (lambda: pass_at_kt([1], [1], np.array(2)), "`ts` to be a list"),
        (lambda: GridEstimate.from_dict({"ks": [1]}), "without \\['ts'"),
        (lambda: GridEstimate.from_dict(None), "grid estimate's dict"),
    ):
        with pytest.raises(ValueError, match=says):
            call()
    for tiny in (1e-320, 5e-324):
        assert clustered_rate([tiny, 0.0], [tiny, tiny])[0] == 0.5
        assert paired_difference([tiny, 0.0], [tiny, tiny])[0] == 0.5
        assert wilson_interval(0.5, tiny) == (0.0, 1.0)
    for a, b in (((-50.0, -60.0, -40.0), (0.0, -1.0, 1.0)), ((0.8, 0.5, 1.0), (-0.7, -1, -0.3))):
        d, low, high = difference_interval(a, b)
        assert low <= d <= high
    assert difference_interval((1.0, 0.95, 1.0), (0.0, 0.0, 0.05))[2] == 1.0  # (rates: cut)


_COUNTS = st.lists(st.one_of(st.none(), st.integers(0, 30)), min_size=1, max_size=8)


@given(
    tasks=st.lists(_COUNTS, min_size=1, max_size=5),
    confidence=st.floats(0.01, 0.999),
    n_bootstrap=st.sampled_from([0, 50]),
)
@settings(max_examples=150, deadline=None)
def test_every_estimate_lies_in_its_interval_within_0_and_1(tasks, confidence, n_bootstrap):
    """For any valid input the estimate lies in its interval, in [0, 1], monotone in K and T,
    and lists, tuples and NumPy arrays of the same values give the same estimate."""
    from turnbudget.eval.estimator import clustered_rate, wilson_interval

    n_min = min(len(t) for t in tasks)
    ks, ts = list(range(1, n_min + 1)), [1, 5, 10, 31]
    est = estimate_grid(
        {i: t for i, t in enumerate(tasks)}, ks, ts, n_bootstrap=n_bootstrap,
        confidence=confidence,
    )  # fmt: skip
    assert np.isfinite([est.mean, est.low, est.high]).all()
    assert (est.low >= 0).all() and (est.low <= est.mean).all()
    assert (est.mean <= est.high).all() and (est.high <= 1).all()
    assert (np.diff(est.mean, axis=0) >= -1e-12).all() and (
        np.diff(est.mean, axis=1) >= -1e-12
    ).all()
    for form in (tuple, np.array):
        again = estimate_grid(
            {i: form(t) for i, t in enumerate(tasks)}, form(ks), form(ts),
            n_bootstrap=n_bootstrap, confidence=confidence,
        )  # fmt: skip
        assert again.to_dict() == est.to_dict()
    hits = [sum(x is not None for x in t) for t in tasks]
    trials = [len(t) for t in tasks]
    rate, low, high = clustered_rate(hits, trials, confidence)
    assert 0 <= low <= rate <= high <= 1
    assert clustered_rate(np.array(hits), tuple(trials), confidence) == (rate, low, high)
    low, high = wilson_interval(rate, sum(trials), confidence)
    assert 0 <= low <= rate <= high <= 1


def test_a_cells_score_interval_counts_disjoint_groups_of_k_episodes_of_the_fewest_run():
    """The effective trials behind a Pass@k cell are at most n_tasks * (n // k), n the fewest
    episodes of a task, and at most `MAX_TRIALS_PER_TASK` a task: neither every episode (k
    ignored) nor the most episodes of a task (a task of 2 episodes among tasks of 100) may
    narrow it."""
    from turnbudget.eval.estimator import MAX_TRIALS_PER_TASK, wilson_interval

    # 30 tasks of 8 episodes whose Pass@k barely differs: the cap binds.
    turns = {s: [1] * 4 + [None] * 4 for s in range(29)}
    turns[29] = [1] * 3 + [None] * 5
    est = estimate_grid(turns, ks=[1, 2], ts=[5], n_bootstrap=0)
    for i, k in enumerate((1, 2)):
        rate = est.mean[i, 0]
        cap = 30 * min(8 // k, MAX_TRIALS_PER_TASK)
        assert est.low[i, 0] == pytest.approx(wilson_interval(rate, cap)[0], abs=1e-9)
    uneven = estimate_grid({**turns, "short": [1, None]}, ks=[1, 2], ts=[5], n_bootstrap=0)
    assert uneven.n_per_task == 2
    rate = uneven.mean[1, 0]
    assert uneven.low[1, 0] == pytest.approx(wilson_interval(rate, 31 * 1)[0], abs=1e-9)
