"""The Pass@(K,T) estimator.

pass@k is the unbiased estimator of Chen et al. (2021): with ``n`` independent
episodes of one task, ``c`` of them successful,

    pass@k = 1 - C(n - c, k) / C(n, k),

the probability that a random k-subset of the n episodes holds at least one
success. It is computed in its numerically stable product form

    1 - prod_{i = n - c + 1}^{n} (1 - k / i),

which never forms a binomial coefficient. Pass@(K,T) adds the turn budget: an
episode counts as a success at budget ``T`` when its first success came within
``T`` turns, so one set of first-success turns gives the whole K x T grid.
Grids are averaged over tasks (env id + seed) with a percentile bootstrap over
tasks for the confidence interval, widened where needed to Wilson's score
interval at the cell's effective number of independent trials
(`clustered_rate`), so a cell at 0 or 1 keeps an interval of honest width: a
bootstrap of 25 tasks that all succeeded says [1, 1], which no finite sample
can support. Comparisons of trained agents add a level: `crossed_mean` gives
a t-interval over training seeds (seeds crossed with tasks, from the two-way
variance components), whose coverage holds at a handful of seeds, where
`bootstrap_seeds_tasks`, a percentile bootstrap over both, runs short.

Score intervals (`wilson_interval`, `clustered_rate`, `difference_interval`)
serve every rate and skill of the package: Wilson's interval never collapses
at 0 or 1, the effective number of trials accounts for outcomes clustered in
tasks, and differences combine the intervals of their terms (MOVER).
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from turnbudget._checks import (
    brief,
    check_probability,
    check_seed,
    is_finite,
    is_listlike,
    is_real,
    is_whole,
)

__all__ = [
    "FLOOR_PAIRS_PER_TASK",
    "MAX_BOOTSTRAP",
    "MAX_TRIALS_PER_TASK",
    "GridEstimate",
    "bootstrap_seeds_tasks",
    "check_grid_values",
    "clustered_rate",
    "crossed_mean",
    "difference_interval",
    "estimate_from_task_grids",
    "estimate_grid",
    "paired_difference",
    "pass_at_k",
    "pass_at_kt",
    "task_grids",
    "wilson_interval",
]

#: The most bootstrap resamples: each is held until the quantiles are taken (8 bytes per
#: resample and grid cell, or per resample, task and column for the probes' skills), and
#: 10,000 already pin a 95% percentile interval far below the width of the interval itself.
MAX_BOOTSTRAP = 100_000
_MAX_VALUES = 10_000  # K values or budgets T in one grid
#: Task-grid values resampled at once by the bootstrap (512 KiB of floats, at most as many
#: indices: a large grid is still resampled one resample at a time, as before).
_BOOTSTRAP_BLOCK_VALUES = 1 << 16


def check_n_bootstrap(value: object, *, least: int = 0) -> int:
    """``n_bootstrap`` as an int when it is a whole number from ``least`` to `MAX_BOOTSTRAP`.

    Example:
        >>> check_n_bootstrap(10**9)
        Traceback (most recent call last):
        ...
        ValueError: Expect `n_bootstrap` to be an int from 0 to 100,000, got 1000000000
    """
    if not is_whole(value) or not least <= value <= MAX_BOOTSTRAP:  # type: ignore[operator]
        raise ValueError(
            f"Expect `n_bootstrap` to be an int from {least} to {MAX_BOOTSTRAP:,}, "
            f"got {brief(value)}"
        )
    return int(value)  # type: ignore[call-overload]


def check_grid_values(values: object, name: str) -> tuple[int, ...]:
    """K values or budgets T: distinct whole numbers >= 1, as ints, in the order given."""
    if not is_listlike(values):
        raise ValueError(f"Expect `{name}` to be a list of positive ints, got {brief(values)}")
    out = tuple(itertools.islice(values, _MAX_VALUES + 1))
    if not out:
        raise ValueError(f"Expect `{name}` to hold at least one value, got none")
    if len(out) > _MAX_VALUES:
        raise ValueError(f"Expect at most {_MAX_VALUES:,} values in `{name}`, got more")
    for v in out:
        if not is_whole(v) or v < 1:
            raise ValueError(f"Expect `{name}` to hold positive ints, got {brief(v)}")
    ints = tuple(int(v) for v in out)
    if len(set(ints)) != len(ints):
        raise ValueError(f"Expect `{name}` values to be distinct, got {brief(list(ints))}")
    return ints


def _first_success_turns(turns: object) -> np.ndarray:
    """One task's first-success turns (None or inf: no success) as floats, inf for None."""
    if isinstance(turns, np.ndarray) and turns.ndim == 1:
        turns = turns.tolist()
    if isinstance(turns, (str, bytes, Mapping)) or not isinstance(turns, Sequence):
        raise ValueError(
            "Expect the first-success turns of a task to be a list (a whole number >= 0 or "
            f"None per episode), got {brief(turns)}"
        )
    out = np.empty(len(turns), dtype=np.float64)
    for i, t in enumerate(turns):
        if t is None or (is_real(t) and t == np.inf):
            out[i] = np.inf
        elif is_whole(t) and t >= 0:
            out[i] = float(t)
        else:
            raise ValueError(
                f"Expect every first-success turn to be a whole number >= 0 or None, got {brief(t)}"
            )
    return out


def _check_k(n: int, k: int) -> None:
    if not is_whole(k) or k < 1:
        raise ValueError(f"Expect k to be a positive int, got {k!r}")
    if k > n:
        raise ValueError(
            f"Pass@k needs at least k episodes per task: got n={n} < k={k}. "
            f"Run more episodes per task (n >= max(K)) or drop K={k}."
        )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task with ``c`` successes among ``n`` episodes.

    Example:
        >>> pass_at_k(n=4, c=1, k=1)
        0.25
        >>> pass_at_k(n=4, c=1, k=4)
        1.0
        >>> round(pass_at_k(n=10, c=3, k=2), 6)  # 1 - C(7,2)/C(10,2)
        0.533333
    """
    if not is_whole(n) or n < 1:
        raise ValueError(f"Expect n to be a positive int, got {brief(n)}")
    if not is_whole(c) or not 0 <= c <= n:
        raise ValueError(f"Expect 0 <= c <= n with c a whole number, got c={brief(c)}, n={n}")
    _check_k(n, k)
    return _pass_at_k(int(n), int(c), int(k))  # (ints: c * k of NumPy ints wraps around)


# Most terms of `_pass_at_k`'s product taken at once (8 MB of float64).
_PRODUCT_TERMS = 1_000_000
# C(n - c, k) / C(n, k) <= (1 - c / n)**k <= exp(-c k / n), which a float holds as 0 past
# exp(-745): pass@k is then 1.0 exactly, with no product (of up to 1e17 terms) to take.
_UNDERFLOW = 750
# Below this, pass@k is taken from the product's log (1 - a product next to 1 lost it to
# rounding: pass@1 of 1 success in 1e17 episodes was 0.0).
_PRECISE = 1e-6
# Most terms of that log summed one by one; past them, the sum by Euler-Maclaurin.
_SUMMED_TERMS = 10_000_000


def _pass_at_k(n: int, c: int, k: int) -> float:
    """`pass_at_k` of arguments checked already (ints): 1 - C(n - c, k) / C(n, k)."""
    if c == 0:
        return 0.0
    if n - c < k or c * k > _UNDERFLOW * n:
        return 1.0
    if c <= _PRODUCT_TERMS:  # (the common case: one NumPy product)
        j = np.arange(c, dtype=np.float64)
        out = 1.0 - float(np.prod(1.0 - k / (float(n - c + 1) + j)))
    elif k <= _PRODUCT_TERMS:  # (c terms would not fit in memory: k do, the same ratio)
        j = np.arange(k, dtype=np.float64)
        out = 1.0 - float(np.prod((float(n - c) - j) / (float(n) - j)))
    else:
        out = 0.0
    if out >= _PRECISE:
        return out
    # The ratio is symmetric in c and k: the product over the fewer of them, in logs.
    m, a, b = (c, k, n - c + 1) if c <= k else (k, c, n - k + 1)
    return -math.expm1(_log_ratio(m, float(a), float(b)))


def _log_ratio(m: int, a: float, b: float) -> float:
    """The sum of ``log1p(-a / (b + j))`` over j < m (b > a > 0): summed, `_PRODUCT_TERMS`
    at a time, up to `_SUMMED_TERMS` terms; past them (a run of 1e10 took a minute), by
    Euler-Maclaurin: the integral from its series in ``a / b`` (below 1e-4 there, as
    ``c * k <= _UNDERFLOW * n``) and the first correction terms, exact to a float's precision
    at such sizes (checked against the sum in the tests)."""
    if m <= _SUMMED_TERMS:
        total = 0.0
        for start in range(0, m, _PRODUCT_TERMS):
            j = np.arange(start, min(m, start + _PRODUCT_TERMS), dtype=np.float64)
            total += float(np.sum(np.log1p(-a / (b + j))))
        return total
    # The integral of log(1 - a / y) for y from b to b + m: -sum over p of a^p / p times
    # the integral of y^-p, each term a * r^(p - 1) / (p (p - 1)) * (1 - (1 + m/b)^(1 - p)).
    ratio, span = a / b, math.log1p(m / b)
    integral = -a * span
    for p in range(2, 64):
        term = a * ratio ** (p - 1) / (p * (p - 1)) * -math.expm1((1 - p) * span)
        integral -= term
        if term <= 1e-17 * abs(integral):
            break

    def f(x: float) -> float:
        return math.log1p(-a / (b + x))

    def slope(x: float) -> float:
        return a / ((b + x) * (b + x - a))

    return integral + (f(0.0) - f(float(m))) / 2 + (slope(float(m)) - slope(0.0)) / 12


def pass_at_kt(
    first_success_turns: Sequence[int | None], ks: Sequence[int], ts: Sequence[int]
) -> np.ndarray:
    """Pass@(K,T) grid, shape ``(len(ks), len(ts))``, for one task.

    ``first_success_turns`` has one entry per episode: the turn of its first
    success, or None when it never succeeded.

    Example:
        >>> pass_at_kt([3, None, 9, None], ks=[1, 2], ts=[5, 10]).tolist()
        [[0.25, 0.5], [0.5, 0.8333333333333333]]
    """
    return _pass_at_kt(
        first_success_turns, check_grid_values(ks, "ks"), check_grid_values(ts, "ts")
    )


def _pass_at_kt(
    first_success_turns: object, ks: tuple[int, ...], ts: tuple[int, ...]
) -> np.ndarray:
    """`pass_at_kt` with ``ks`` and ``ts`` checked already (`check_grid_values`)."""
    turns = _first_success_turns(first_success_turns)
    n = len(turns)
    if n == 0:
        raise ValueError("Expect at least one episode per task, got none")
    for k in ks:
        _check_k(n, k)
    grid = np.empty((len(ks), len(ts)), dtype=np.float64)
    for j, t in enumerate(ts):
        c = int(np.count_nonzero(turns <= t))
        for i, k in enumerate(ks):
            grid[i, j] = _pass_at_k(n, c, k)
    return grid


def task_grids(
    tasks: Mapping[object, Sequence[int | None]], ks: Sequence[int], ts: Sequence[int]
) -> np.ndarray:
    """Stack the per-task grids, shape ``(n_tasks, len(ks), len(ts))``, in sorted task order."""
    if not isinstance(tasks, Mapping):
        raise ValueError(
            f"Expect `tasks` to map each task to its first-success turns, got {brief(tasks)}"
        )
    if not tasks:
        raise ValueError("Expect at least one task, got none")
    ks_t, ts_t = check_grid_values(ks, "ks"), check_grid_values(ts, "ts")
    return np.stack([_pass_at_kt(tasks[key], ks_t, ts_t) for key in sorted(tasks, key=repr)])


@dataclass(frozen=True)
class GridEstimate:
    """A Pass@(K,T) grid averaged over tasks, with a bootstrap confidence interval."""

    ks: tuple[int, ...]
    ts: tuple[int, ...]
    mean: np.ndarray  # (len(ks), len(ts))
    low: np.ndarray
    high: np.ndarray
    n_tasks: int
    n_per_task: int  # smallest number of episodes of any task
    confidence: float

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GridEstimate:
        """The estimate `to_dict` gave."""
        if not isinstance(d, Mapping):
            raise ValueError(f"Expect a grid estimate's dict (`to_dict`), got {brief(d)}")
        missing = [name for name in cls.__dataclass_fields__ if name not in d]
        if missing:
            raise ValueError(
                f"Expect a grid estimate's dict (`to_dict`), got one without {missing}"
            )
        ks, ts = check_grid_values(d["ks"], "ks"), check_grid_values(d["ts"], "ts")
        confidence = check_confidence(d["confidence"])
        counts = {}
        for name in ("n_tasks", "n_per_task"):
            if not is_whole(d[name]) or d[name] < 1:
                raise ValueError(f"Expect `{name}` to be an int >= 1, got {brief(d[name])}")
            counts[name] = int(d[name])
        cells = {}
        for name in ("mean", "low", "high"):
            try:
                cells[name] = np.asarray(d[name], dtype=np.float64)
            except (TypeError, ValueError):
                cells[name] = None
            a = cells[name]
            if a is None or a.shape != (len(ks), len(ts)) or not np.all((a >= 0) & (a <= 1)):
                raise ValueError(
                    f"Expect `{name}` to be a grid of {len(ks)} x {len(ts)} rates in [0, 1] "
                    f"(one per K and T), got {brief(d[name])}"
                )
        # (an interval that does not hold its estimate was read as one; `to_dict` rounds)
        if not np.all(cells["low"] <= cells["mean"] + _ROUNDING) or not np.all(
            cells["mean"] <= cells["high"] + _ROUNDING
        ):
            raise ValueError(
                "Expect each cell's interval to hold its estimate (low <= mean <= high), got "
                f"low {brief(d['low'])}, mean {brief(d['mean'])}, high {brief(d['high'])}"
            )
        return cls(
            ks, ts, cells["mean"], cells["low"], cells["high"], counts["n_tasks"],
            counts["n_per_task"], confidence,
        )  # fmt: skip

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict; grids are nested lists indexed ``[k][t]``."""
        return {
            "ks": list(self.ks),
            "ts": list(self.ts),
            "mean": _round(self.mean),
            "low": _round(self.low),
            "high": _round(self.high),
            "n_tasks": self.n_tasks,
            "n_per_task": self.n_per_task,
            "confidence": self.confidence,
        }


def _round(a: np.ndarray) -> list[list[float]]:
    return np.round(a, 6).tolist()


def estimate_grid(
    tasks: Mapping[object, Sequence[int | None]],
    ks: Sequence[int],
    ts: Sequence[int],
    *,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> GridEstimate:
    """Average the per-task Pass@(K,T) grids, with intervals (see `estimate_from_task_grids`).

    Args:
        tasks: task key -> first-success turn (or None) of each of its episodes.
        ks: the K values; each must be <= the number of episodes of every task.
        ts: the turn budgets T.
        n_bootstrap: bootstrap resamples (0: the score interval alone).
        confidence: two-sided coverage of the interval.
        seed: seed of the bootstrap generator (results are deterministic).

    Example:
        >>> est = estimate_grid({"a": [1, None], "b": [None, None]}, ks=[1, 2], ts=[1])
        >>> est.mean.tolist()
        [[0.25], [0.5]]
    """
    if not isinstance(tasks, Mapping):
        raise ValueError(
            f"Expect `tasks` to map each task to its first-success turns, got {brief(tasks)}"
        )
    ks, ts = check_grid_values(ks, "ks"), check_grid_values(ts, "ts")
    n_bootstrap = check_n_bootstrap(n_bootstrap)
    check_confidence(confidence)
    check_seed(seed)
    grids = task_grids(tasks, ks, ts)  # (checks every task's turns)
    n_min = min(len(v) for v in tasks.values())
    for k in ks:
        _check_k(n_min, k)
    return estimate_from_task_grids(
        grids,
        ks,
        ts,
        n_per_task=n_min,
        n_bootstrap=n_bootstrap,
        confidence=confidence,
        seed=seed,
    )


#: The most independent trials one task counts for in a Pass@(K,T) cell's interval. The
#: sample's spread over tasks stands for the population's; with 16 or more episodes a task,
#: trusting it fully covered 72-89% for a nominal 95% where a few tasks are far harder than
#: the rest and the sample drew none of them (10 tasks: 15% at 0.6 among 0.95, 0.81; the
#: epsilon-oracle's Maze population at 25 x 32, 0.89). At 4 every population checked from 5
#: to 100 tasks and 8 to 64 episodes covers 93% or more, but for tasks never solved, which
#: covers as at 8 episodes (docs/guides/evaluation.md; `tests/eval/test_intervals.py`).
MAX_TRIALS_PER_TASK = 4
#: The most pairs a task counts for in `paired_difference`'s floor (the rule of three over
#: pairs): with 4, a twentieth of tasks at a difference of 0.9 among tasks with none still
#: covered 88-92% at 40 tasks x 8-32 pairs; with 2, 94% or more everywhere simulated.
FLOOR_PAIRS_PER_TASK = 2


def estimate_from_task_grids(
    grids: np.ndarray,
    ks: Sequence[int],
    ts: Sequence[int],
    *,
    n_per_task: int,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> GridEstimate:
    """Average per-task grids ``(n_tasks, len(ks), len(ts))``, with an interval per cell.

    The interval is the percentile bootstrap over tasks, widened to contain
    Wilson's score interval at the cell's effective number of independent
    trials (`clustered_rate`; at most ``n_tasks * min(n_per_task // k,
    MAX_TRIALS_PER_TASK)``: the disjoint groups of k episodes, of which a task
    scoring 0 or 1 holds one, and never more than `MAX_TRIALS_PER_TASK` a task),
    so it never collapses where every task scores 0 or 1. ``n_bootstrap=0`` leaves
    the score interval alone. ``n_per_task`` (the fewest episodes of a task) must
    be at least every K, as for `pass_at_k`.

    Rerun mode builds each task's grid column by column (one set of runs per
    T) and comes here; `estimate_grid` is the truncate-mode shortcut.

    Example:
        >>> est = estimate_from_task_grids(np.ones((25, 1, 1)), [1], [8], n_per_task=8)
        >>> est.mean.item(), round(est.low.item(), 3)  # 25 tasks, every episode succeeded
        (1.0, 0.867)
    """
    confidence = check_confidence(confidence)
    n_bootstrap = check_n_bootstrap(n_bootstrap)
    check_seed(seed)
    ks, ts = check_grid_values(ks, "ks"), check_grid_values(ts, "ts")
    if not is_whole(n_per_task) or n_per_task < 1:
        raise ValueError(f"Expect `n_per_task` to be a positive int, got {brief(n_per_task)}")
    for k in ks:  # (no task's grid can hold Pass@k with fewer than k episodes)
        _check_k(int(n_per_task), k)
    grids = _floats(grids, "grids")
    if grids.ndim != 3 or grids.shape[1:] != (len(ks), len(ts)) or len(grids) == 0:
        raise ValueError(
            f"Expect task grids of shape (n_tasks>0, {len(ks)}, {len(ts)}), got {grids.shape}"
        )
    if not np.all((grids >= 0.0) & (grids <= 1.0)):  # (NaN fails both)
        raise ValueError("Expect every cell of the task grids to be a rate in [0, 1]")
    n_tasks = len(grids)
    mean = grids.mean(axis=0)
    low, high = np.empty_like(mean), np.empty_like(mean)
    ones = np.ones(n_tasks)
    z = _z(confidence)
    for i, k in enumerate(ks):
        trials = n_tasks * max(1, min(int(n_per_task) // int(k), MAX_TRIALS_PER_TASK))
        for j in range(len(ts)):
            _, low[i, j], high[i, j] = _clustered_rate(
                grids[:, i, j], ones, confidence, z, float(trials)
            )
    if n_bootstrap > 0 and n_tasks > 1:
        rng = np.random.default_rng(seed)
        boot = np.empty((n_bootstrap, *mean.shape))
        # Resamples a block at a time: one NumPy call per block, not per resample (a run's
        # summary estimates a grid per T; issue 26), and memory bounded by the block. The
        # draws and the means are those of one resample at a time, bit for bit.
        block = max(1, _BOOTSTRAP_BLOCK_VALUES // grids.size)
        for start in range(0, n_bootstrap, block):
            picks = rng.integers(0, n_tasks, size=(min(block, n_bootstrap - start), n_tasks))
            boot[start : start + len(picks)] = grids[picks].mean(axis=1)
        alpha = (1.0 - confidence) / 2.0
        boot_low, boot_high = np.quantile(boot, [alpha, 1.0 - alpha], axis=0)
        low, high = np.minimum(low, boot_low), np.maximum(high, boot_high)
    return GridEstimate(
        tuple(int(k) for k in ks),
        tuple(int(t) for t in ts),
        mean,
        low,
        high,
        n_tasks,
        int(n_per_task),
        float(confidence),
    )


# --------------------------------------------------------------------------- score intervals


def check_confidence(confidence: object) -> float:
    """``confidence`` (an interval's two-sided coverage) as a float when it lies in (0, 1)."""
    # (past 1 - 2**-53, 0.5 + confidence / 2 rounds to 1: no finite normal quantile)
    if not is_real(confidence) or not (0 < confidence < 1 and 0.5 + confidence / 2.0 < 1.0):
        raise ValueError(f"Expect `confidence` in (0, 1), got {brief(confidence)}")
    return float(confidence)


def _z(confidence: float) -> float:
    """The standard normal quantile of a two-sided ``confidence``."""
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def _floats(values: object, name: str) -> np.ndarray:
    """``values`` as a float64 array; ``ValueError`` for text or what is not numbers."""
    # (NumPy makes None a NaN, a complex array real with a warning, and an int past a float's
    # range an OverflowError)
    message = f"Expect `{name}` to be numbers, got {brief(values)}"
    if values is None or isinstance(values, (str, bytes)):
        raise ValueError(message)
    try:
        if np.iscomplexobj(values):
            raise ValueError(message)
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(message) from None
    return array


def _mean_in_bounds(x: np.ndarray, bounds: object) -> tuple[float, float]:
    """``bounds`` as two floats, low < high, with the mean of ``x`` (NaN left out) between
    them: an interval clipped to bounds its mean broke (or to bounds upside down) missed it.
    A cell may lie past them (a contrast of two gains, cut to the range of one)."""
    pair = tuple(bounds) if is_listlike(bounds) else ()
    if not (len(pair) == 2 and all(is_finite(b) for b in pair) and pair[0] < pair[1]):
        raise ValueError(
            f"Expect `bounds` to be (low, high), finite, low < high; got {brief(bounds)}"
        )
    low, high = float(pair[0]), float(pair[1])
    cells = x[~np.isnan(x)]
    with np.errstate(over="ignore", invalid="ignore"):  # (cells near 1e308: their mean is inf)
        mean = float(cells.mean()) if cells.size else low
    if not low <= mean <= high:
        raise ValueError(
            f"Expect the mean of `x` to lie within `bounds` ({low}, {high}), got {mean}"
        )
    return low, high


#: Below it a sum of trials or pairs is rescaled to 1 for its variance, whose formula squares
#: it (a float's square underflows to 0 below about 1e-162).
_TINY = 1e-100


def _t_within(t: float, df: int) -> float:
    """P(|T| < t) for Student's t with integer ``df`` (Abramowitz and Stegun 26.7.3-4)."""
    theta = float(np.arctan(t / np.sqrt(df)))
    c2, sin_theta = float(np.cos(theta)) ** 2, float(np.sin(theta))
    term, total = 1.0, 1.0
    if df % 2:  # odd: (2/π)(θ + sin θ cos θ (1 + 2/3 cos² θ + ...))
        for i in range(2, df - 1, 2):
            term *= i / (i + 1) * c2
            total += term
        series = sin_theta * float(np.cos(theta)) * total if df > 1 else 0.0
        return 2.0 / np.pi * (theta + series)
    for i in range(1, df - 2, 2):  # even: sin θ (1 + 1/2 cos² θ + 1·3/(2·4) cos⁴ θ + ...)
        term *= i / (i + 1) * c2
        total += term
    return sin_theta * total


def _t_quantile(q: float, df: float) -> float:
    """Student's t quantile for ``q`` in (1/2, 1), by bisection on the exact distribution
    function. A fractional df (Satterthwaite's) is rounded down: the wider, safe side."""
    return _t_quantile_int(float(q), max(1, int(df)))


@functools.lru_cache(maxsize=1024)
def _t_quantile_int(q: float, df: int) -> float:
    within = 2.0 * q - 1.0
    low, high = 0.0, 1.0
    while _t_within(high, df) < within:
        high *= 2.0
    for _ in range(60):
        mid = (low + high) / 2.0
        low, high = (mid, high) if _t_within(mid, df) < within else (low, mid)
    return (low + high) / 2.0


def wilson_interval(p: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval for a proportion ``p`` seen over ``n`` trials.

    ``n`` may be an effective (fractional) number of trials. Unlike the
    normal-approximation or a bootstrap, it never collapses: at ``p = 1`` its
    lower bound is ``n / (n + z²)``. With ``n <= 0`` (no data) it is [0, 1].

    Example:
        >>> [round(x, 4) for x in wilson_interval(1.0, 25)]  # 25 successes out of 25
        [0.8668, 1.0]
        >>> [round(x, 4) for x in wilson_interval(0.5, 100)]
        [0.4038, 0.5962]
    """
    z = _z(check_confidence(confidence))
    p = check_probability(p, "p")
    if not is_finite(n):
        raise ValueError(f"Expect `n` to be a finite number of trials, got {brief(n)}")
    return _wilson(p, float(n), z)


def _wilson(p: float, n: float, z: float) -> tuple[float, float]:
    """`wilson_interval` of checked arguments, ``z`` the normal quantile of its confidence."""
    if not n > 0:
        return 0.0, 1.0
    p = min(1.0, max(0.0, float(p)))
    z2n = z * z / n
    if z2n == float("inf"):  # (n so small, below 1e-300, that the interval is all of [0, 1])
        return 0.0, 1.0
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * np.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n)) / (1.0 + z2n)
    low = 0.0 if p == 0.0 else max(0.0, float(centre - half))  # exact at the ends (no rounding)
    return low, 1.0 if p == 1.0 else min(1.0, float(centre + half))


#: How far an estimate may lie past its interval's bound: summaries round both to 6 decimals.
_ROUNDING = 1e-6
#: Below this many (effective) trials a rate of none or all gets the exact bound.
_EXACT_ENDS_BELOW = 16


def _score_bounds(p: float, n: float, z: float, confidence: float) -> tuple[float, float]:
    """Wilson's interval at ``n`` (effective) trials, its bound next to 0 (or 1) taken from the
    Poisson where ``p n`` (or ``(1 - p) n``) is up to 2 (3 past 50 trials): the modified Wilson
    of Brown, Cai and DasGupta (2001, section 4.1.1); at none (or all) at least the exact
    bound. Wilson's alone covers 84% next to 0 and 1 at any n from 8 to 200 (its lower bound
    at one success, about 0.18 / n, lies above a true rate just below it, where a success is
    seen 16% of the time), and 79% at one trial; this keeps the exact coverage at 91.1% or
    more at every rate for 1 to 100 trials (``tests/eval/test_intervals.py``)."""
    low, high = _wilson(p, n, z)
    if not n > 0:
        return low, high
    q = (1.0 - confidence) / 2.0
    # At none or all, below 16 trials: the exact bound, 1 - q^(1/n) (Wilson's at one trial,
    # 0.79, covered a rate of 0.2 79% of the time; from 16 on Wilson's covers as documented).
    if n < _EXACT_ENDS_BELOW:
        if p == 0.0:
            high = max(high, 1.0 - q ** (1.0 / n))
        elif p == 1.0:
            low = min(low, q ** (1.0 / n))
    ends = (2.0 if n <= 50 else 3.0) + 1e-9
    successes, failures = p * n, (1.0 - p) * n
    # (on either side of 1/2: at 2 of 3 trials Wilson's lower bound, 0.21, covered 0.2 89%)
    if 0.0 < successes <= ends and p < 1.0:  # (at all: the exact bound, above)
        low = min(low, _poisson_lower(successes, q) / n)
    if 0.0 < failures <= ends and p > 0.0:
        high = max(high, 1.0 - _poisson_lower(failures, q) / n)
    return low, high


@functools.lru_cache(maxsize=1024)
def _poisson_lower(events: float, q: float) -> float:
    """The Poisson mean below which ``events`` or more are seen with chance ``q`` at most:
    the Gamma(``events``, 1) quantile at ``q`` (``events`` > 0, fractional too), by bisection on
    the regularized incomplete gamma's series (short: ``events`` <= 3 and the mean below it)."""

    def below(mean: float) -> float:  # P(Gamma(events, 1) <= mean)
        term = total = 1.0 / events
        k = 0
        while term > 1e-17 * total:
            k += 1
            term *= mean / (events + k)
            total += term
        return total * math.exp(events * math.log(mean) - mean - math.lgamma(events))

    low, high = 0.0, events
    for _ in range(60):
        mid = (low + high) / 2.0
        low, high = (mid, high) if below(mid) < q else (low, mid)
    return low


def clustered_rate(
    hits: ArrayLike,
    trials: ArrayLike,
    confidence: float = 0.95,
    *,
    max_trials: float | None = None,
) -> tuple[float, float, float]:
    """``(rate, low, high)``: the pooled rate ``sum(hits) / sum(trials)`` over m clusters
    (tasks, drawn from a population of tasks), with Wilson's interval at the effective number
    of independent trials.

    Outcomes of one task are alike, so ``sum(trials)`` overstates the
    information. The effective number is Kish's ``rate (1 - rate) / v``, ``v``
    the between-task variance of the ratio estimate, shrunk by ``(z / t)²`` for
    the tasks' degrees of freedom (as Korn and Graubard do), and kept between m
    and ``max_trials`` (default: each task's trials, at most `MAX_TRIALS_PER_TASK`
    a task), of which a task whose outcomes are all alike (hits 0, or all its
    trials) holds one trial only: its outcomes cannot tell a rate of 0.97 from 1 (a
    few hard tasks among easy ones just below 1 covered 86-92% at 25-40 tasks of 5-8
    trials when every trial counted). A task's many trials (a step rate's hundreds
    of steps, a probe's repeats) sharpen its own rate, not what the sample says about
    the tasks it did not draw: counted in full, 16 or more a task covered 37-92% for a
    nominal 95% where a few tasks are far harder than the rest (10 tasks x 16 with a
    fifth of them at 0.5 among tasks at 0.97: 0.87). When
    the tasks show no spread at all (every outcome the same: a rate of 0 or 1),
    the data cannot tell how often tasks outside the sample would differ, and the
    effective number is m: 25 tasks that all succeeded give [0.87, 1], not [1, 1].
    ``hits`` may be fractional (a task's Pass@k, with ``trials`` 1 each and
    ``max_trials`` the independent trials behind the cell). With one to three effective
    successes (or failures) the bound on that side is the Poisson's (the modified Wilson
    of Brown, Cai and DasGupta): Wilson's alone covered 84% next to 0 and 1.

    Example:
        >>> rate, low, high = clustered_rate([8] * 25, [8] * 25)  # 200 of 200, in 25 tasks
        >>> rate, round(low, 3), high
        (1.0, 0.867, 1.0)
        >>> rate, low, high = clustered_rate([4, 0] * 5, [4] * 10)  # all-or-nothing tasks
        >>> rate, round(high - low, 2)  # the width of 10 trials (the tasks), not of 40
        (0.5, 0.53)
    """
    confidence = check_confidence(confidence)
    h = _floats(hits, "hits").ravel()
    n = _floats(trials, "trials").ravel()
    if max_trials is not None and (not is_finite(max_trials) or not max_trials > 0):
        raise ValueError(
            f"Expect `max_trials` to be a finite number > 0 or None, got {brief(max_trials)}"
        )
    if h.shape == n.shape and not np.all((h >= 0.0) & (h <= n) & np.isfinite(n)):
        raise ValueError(
            "Expect every cluster's `hits` to be a finite number from 0 to its `trials`, got "
            f"hits={brief(h.tolist())}, trials={brief(n.tolist())}"
        )
    return _clustered_rate(
        h, n, confidence, _z(confidence), None if max_trials is None else float(max_trials)
    )


def _clustered_rate(
    h: np.ndarray, n: np.ndarray, confidence: float, z: float, max_trials: float | None
) -> tuple[float, float, float]:
    """`clustered_rate` of checked arrays (``h``, ``n`` flat), ``z`` its normal quantile."""
    with np.errstate(over="ignore"):  # (a sum past a float's range: refused below)
        total = float(n.sum())
    if h.shape != n.shape or total <= 0:
        raise ValueError(
            f"Expect `hits` and `trials` of one length with trials, got {h.shape}, {n.shape}"
        )
    if not np.isfinite(total):  # (finite trials whose sum is not: the rate was inf / inf)
        raise ValueError(f"Expect the sum of `trials` to be a finite number, got {total}")
    rate = float(h.sum()) / total
    # (a cluster of no trials is no task of the sample: counted, it narrowed the interval as
    # one more task that agreed, 1 hit in 1 trial beside 99 empty tasks giving [0.96, 1])
    h, n = h[n > 0.0], n[n > 0.0]
    m = len(n)
    # A task counts for `MAX_TRIALS_PER_TASK` trials at most, as in a Pass@(K,T) cell: its
    # trials sharpen its own rate, not what the sample says about the tasks it did not draw
    # (counted in full, 16+ a task covered 37-92% where a few tasks are far harder).
    counted = np.minimum(n, MAX_TRIALS_PER_TASK)
    cap = max(float(m), float(counted.sum()) if max_trials is None else float(max_trials))
    # Only a task whose outcomes differ shows how far from 0 or 1 its rate lies; one at 0 or 1
    # counts as one trial (`crossed_mean`'s rule, trials for seeds). Else a sample that drew
    # none of a few hard tasks (easy ones just below 1) claimed its hundreds of episodes.
    informative = float(counted[(h > 0.0) & (h < n)].sum())
    cap = min(cap, float(m) + cap * informative / float(counted.sum()))
    n_eff = float(m)
    if total < _TINY:  # (the variance is the same at any scale; total**2 underflowed to 0)
        h, n, total = h / total, n / total, 1.0
    var = m / (m - 1) * float(np.sum((h - rate * n) ** 2)) / total**2 if m > 1 else 0.0
    if 0.0 < rate < 1.0 and var > 0:
        q = 0.5 + confidence / 2.0
        shrink = (z / _t_quantile(q, m - 1)) ** 2
        n_eff = min(cap, max(float(m), rate * (1.0 - rate) / var * shrink))
    low, high = _score_bounds(rate, n_eff, z, confidence)
    return rate, low, high


def paired_difference(
    differences: ArrayLike, pairs: ArrayLike, confidence: float = 0.95
) -> tuple[float, float, float]:
    """``(mean, low, high)`` of paired differences in [-1, 1], summed per cluster (task).

    ``differences[i]`` is the sum of the differences of task i's ``pairs[i]``
    pairs (m tasks, drawn from a population). The interval is Student's t on
    the between-task variance of the ratio estimate, never narrower than ``±
    ln(2 / α) / N`` (α = 1 - confidence), the rule of three over N, where a task
    counts for at most `FLOOR_PAIRS_PER_TASK` (2) pairs, and for one when its pairs
    all agree as far as its sum tells (a sum of 0, or of ±1 in every pair). A task's
    many pairs sharpen its own difference, not what the sample says about the tasks
    it did not draw: counting every pair, a sample that drew none of a few tasks with a
    large difference (among tasks with none) covered 65-92% for a nominal 95% (10
    tasks x 16 pairs, a twentieth of them at 0.9: 0.65); a cap of 4 still covered
    0.88-0.92 at 40 tasks. When every difference is the same the data cannot tell how
    often tasks outside the sample would differ: the half-width is then ``ln(2 / α) /
    m``, the two-sided rule of three over tasks (a share of tasks with a difference
    that no sample of m would miss more often than α/2). It never collapses.

    Example:
        >>> mean, low, high = paired_difference([0, 0, 0, 0], [50, 50, 50, 50])  # all agree
        >>> mean, round(low, 3), round(high, 3)
        (0.0, -0.922, 0.922)
        >>> mean, low, high = paired_difference([0] * 39 + [1], [5] * 40)  # one pair of 200 differs
        >>> round(mean, 3), round(low, 3), round(high, 3)
        (0.005, -0.085, 0.095)
    """
    confidence = check_confidence(confidence)
    d = _floats(differences, "differences").ravel()
    n = _floats(pairs, "pairs").ravel()
    with np.errstate(over="ignore"):  # (a sum past a float's range: refused below)
        total = float(n.sum())
    if d.shape != n.shape or not total > 0:
        raise ValueError(
            f"Expect `differences` and `pairs` of one length with pairs, got {d.shape}, {n.shape}"
        )
    if not (np.isfinite(d).all() and np.isfinite(n).all() and (n >= 0).all()
            and (np.abs(d) <= n).all()):  # fmt: skip
        raise ValueError(
            "Expect each task's `pairs` to be a count >= 0 and its `differences` a sum of "
            "that many differences in [-1, 1], finite"
        )
    if not np.isfinite(total):  # (finite pairs whose sum is not: the mean was inf / inf)
        raise ValueError(f"Expect the sum of `pairs` to be a finite number, got {total}")
    mean = float(d.sum()) / total
    d, n = d[n > 0.0], n[n > 0.0]  # (a task of no pairs is none of the sample: as above)
    m = len(n)
    if total < _TINY:  # (the variance is the same at any scale; total**2 underflowed to 0)
        d, n, total = d / total, n / total, 1.0
    var = m / (m - 1) * float(np.sum((d - mean * n) ** 2)) / total**2 if m > 1 else 0.0
    rule = float(np.log(2.0 / (1.0 - confidence)))
    if var > 0:
        # A task's pairs beyond a couple tell its own difference, not whether the sample
        # missed tasks that differ (counted in full, 8-16 pairs a task covered 65-92%); one
        # whose pairs all agree (as far as its sum tells) cannot tell 0 from a small share.
        agree = (d == 0.0) | (np.abs(d) == n)
        counted = float(
            np.where(agree, np.minimum(n, 1.0), np.minimum(n, FLOOR_PAIRS_PER_TASK)).sum()
        )
        t = _t_quantile(0.5 + confidence / 2.0, m - 1)
        half = max(t * float(np.sqrt(var)), rule / min(total, counted))
    else:
        half = rule / m
    return mean, max(-1.0, mean - half), min(1.0, mean + half)


def difference_interval(
    a: Sequence[float], b: Sequence[float], correlation: float = 0.0
) -> tuple[float, float, float]:
    """``(a - b, low, high)`` from two estimates given as ``(estimate, low, high)``.

    The MOVER of Zou and Donner (2008): each bound of the difference recovers
    the variances from the terms' own bounds, so with Wilson intervals it is
    Newcombe's score interval for a difference of proportions, and it keeps
    their width at 0 and 1. ``correlation`` (of the two estimates; paired
    outcomes are usually positively correlated) narrows it; 0 is conservative
    then. The interval is cut to [-1, 1] when both terms are rates (every value
    in [0, 1]); the difference of two skills, which may lie past either, is not cut.

    Example:
        >>> d, low, high = difference_interval((1.0, 0.95, 1.0), (1.0, 0.95, 1.0))
        >>> d, round(low, 4), round(high, 4)
        (0.0, -0.05, 0.05)
    """
    terms = []
    for name, term in (("a", a), ("b", b)):
        values = tuple(term) if is_listlike(term) else ()
        if not (len(values) == 3 and all(is_finite(v) for v in values)
                and values[1] <= values[0] + _ROUNDING
                and values[0] <= values[2] + _ROUNDING):  # fmt: skip
            raise ValueError(
                f"Expect `{name}` to be (estimate, low, high), finite, low <= estimate <= "
                f"high; got {brief(term)}"
            )
        terms.append(tuple(float(v) for v in values))
    (pa, la, ua), (pb, lb, ub) = terms
    if not is_finite(correlation):
        raise ValueError(f"Expect `correlation` to be a finite number, got {brief(correlation)}")
    r = min(1.0, max(-1.0, float(correlation)))
    d = pa - pb
    low = d - np.sqrt(max(0.0, (pa - la) ** 2 + (ub - pb) ** 2 - 2 * r * (pa - la) * (ub - pb)))
    high = d + np.sqrt(max(0.0, (ua - pa) ** 2 + (pb - lb) ** 2 - 2 * r * (ua - pa) * (pb - lb)))
    if not np.isfinite([d, low, high]).all():  # (finite terms near 1e308 apart)
        raise ValueError(
            f"Expect `a` and `b` to differ by a finite amount, got {brief(a)}, {brief(b)}"
        )
    # (only a difference of rates lies in [-1, 1]: a skill's below -1 was cut off its interval)
    if all(0.0 <= v <= 1.0 for v in (pa, la, ua, pb, lb, ub)):
        low, high = max(-1.0, low), min(1.0, high)
    return d, float(low), float(high)


def crossed_mean(
    x: ArrayLike,
    confidence: float = 0.95,
    *,
    tasks: str = "random",
    bounds: tuple[float, float] = (-1.0, 1.0),
) -> tuple[float, float, float]:
    """``(mean, low, high)`` of ``x`` [training seed, task]: a t-interval at the level of
    training seeds, with the tasks crossed with them.

    The unit of replication is the training seed: each seed's policy plays
    the same tasks. From the two-way mean squares (seeds ``MS_S``, tasks
    ``MS_T``, residual ``MS_E``, S seeds by m tasks) the variance of the grand
    mean is

    - ``tasks="fixed"``: ``MS_S / (S m)`` with S - 1 degrees of freedom, which
      is Student's t over the seeds' means (the estimand: these tasks);
    - ``tasks="random"``: ``(MS_S + MS_T - MS_E) / (S m)``, never below either
      of its one-factor parts, with Satterthwaite's degrees of freedom (the
      estimand: the population the tasks were drawn from).

    When every cell is equal the data cannot tell how far another seed would
    land: the half-width is then ``ln(2 / α) / S``, the two-sided rule of
    three over seeds, as in `paired_difference`. The interval is clipped to
    ``bounds`` ((0, 1) for a rate, (-1, 1) for a paired difference).

    Near 0 or 1, with tasks random, the t-interval alone covered 73-93% at the
    replication's sizes: when the tasks drawn under-represent the few that ever
    succeed (or fail), the mean and its spread shrink together and the interval
    misses on the far side. So, with ``tasks="random"``:

    - a rate (``bounds=(0, 1)``) keeps the t-interval widened to hold Wilson's
      interval at the effective number of cells (Kish's ``p (1 - p) / var``, scaled
      by ``(z / t)²``), kept at least m and at most ``m + S·k``, k the tasks whose
      cells are not all 0 or all 1 (the tasks that tell anything about the rate's
      spread); every cell equal: Wilson's at m (`clustered_rate`'s rule, at two levels,
      its Poisson bounds next to 0 and 1 too);
    - a paired difference (``bounds=(-1, 1)``) never has a half-width under one
      cell's rule of three, ``ln(2 / α) / (S m)`` (`paired_difference`'s floor).

    Coverage at the replication's and the main job's sizes is simulated in
    ``tests/eval/test_intervals.py``, near the bounds too: over per-task rates Beta
    with means 0.02 to 0.98, rates cover 94-100%. With tasks random the seeds' and the
    tasks' parts each have at least their own t quantile (S - 1 and m - 1 degrees of
    freedom): Satterthwaite's alone covered 88-92% at 2-3 seeds whose spread dominates.
    Left short: a paired gain of about +0.03 where the base's mean is 0.05-0.1 or
    0.9-0.95 covers 92-93% at 10 seeds by 24 tasks (a MOVER interval from both arms would
    need them apart); and at 3 seeds spread 2 logits apart (seed rates from about 0.1 to
    0.9), rates cover 92-93%, these tasks or their population (3 seeds' means are far from
    normal there).

    Args:
        x: shape ``(n_seeds, n_tasks)``, at least 2 seeds, no NaN: e.g. each seed's
            per-task Pass@(1,T), or an arm minus its own seed's base on the same tasks.
        confidence: two-sided coverage.
        tasks: ``"random"`` or ``"fixed"`` (see above).
        bounds: the range of a cell.

    Example:
        >>> x = [[0.2, 0.6, 0.9], [0.3, 0.5, 1.0], [0.1, 0.7, 0.8]]
        >>> [round(v, 3) for v in crossed_mean(x, tasks="fixed")]  # these three tasks
        [0.567, 0.484, 0.649]
        >>> [round(v, 3) for v in crossed_mean(x, bounds=(0, 1))]  # tasks like them: far wider
        [0.567, 0.0, 1.0]
        >>> [round(v, 3) for v in crossed_mean([[1.0, 1.0], [1.0, 1.0]], bounds=(0, 1))]
        [1.0, 0.158, 1.0]
    """
    confidence = check_confidence(confidence)
    x = _floats(x, "x")
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 1 or not np.all(np.isfinite(x)):
        raise ValueError(
            "Expect `x` to be a finite array [seed, task] with at least 2 seeds and 1 task, "
            f"got shape {x.shape}" + ("" if np.all(np.isfinite(x)) else " with NaN or inf")
        )
    if not isinstance(tasks, str) or tasks not in ("random", "fixed"):
        raise ValueError(f"Expect `tasks` to be 'random' or 'fixed', got {brief(tasks)}")
    low_bound, high_bound = _mean_in_bounds(x, bounds)
    n_seeds, n_tasks = x.shape
    mean = float(x.mean())
    seed_means, task_means = x.mean(axis=1), x.mean(axis=0)
    ms_seeds = n_tasks * float(np.sum((seed_means - mean) ** 2)) / (n_seeds - 1)
    variance, df = ms_seeds / x.size, float(n_seeds - 1)
    if tasks == "random" and n_tasks > 1:
        ms_tasks = n_seeds * float(np.sum((task_means - mean) ** 2)) / (n_tasks - 1)
        resid = x - seed_means[:, None] - task_means[None, :] + mean
        df_resid = (n_seeds - 1) * (n_tasks - 1)
        ms_resid = float(np.sum(resid**2)) / df_resid
        combined = max(ms_seeds + ms_tasks - ms_resid, ms_seeds, ms_tasks)
        variance = combined / x.size
        if combined == ms_seeds + ms_tasks - ms_resid:  # Satterthwaite's df of the sum
            denominator = (
                ms_seeds**2 / (n_seeds - 1) + ms_tasks**2 / (n_tasks - 1) + ms_resid**2 / df_resid
            )
            df = combined**2 / denominator if denominator > 0 else df
        else:
            df = float(n_seeds - 1 if combined == ms_seeds else n_tasks - 1)
    t = _t_quantile(0.5 + confidence / 2.0, df)
    if variance > 0 and tasks == "random" and n_tasks > 1:
        # At least each part at its own t (seeds at S - 1 df, tasks at m - 1): where the seeds'
        # mean square dominates, Satterthwaite's df exceed S - 1 in just the samples whose seeds
        # came out close, and at 2-3 seeds the interval covered 88-92% (seed spread 0.9-2 logits).
        level = 0.5 + confidence / 2.0
        parts = _t_quantile(level, n_seeds - 1) ** 2 * ms_seeds + _t_quantile(
            level, n_tasks - 1
        ) ** 2 * max(ms_tasks - ms_resid, 0.0)
        t = max(t, float(np.sqrt(parts / x.size / variance)))
    if variance > 0:
        half = t * float(np.sqrt(variance))
    else:
        half = float(np.log(2.0 / (1.0 - confidence))) / n_seeds
    low, high = mean - half, mean + half
    if tasks == "random" and (low_bound, high_bound) == (0.0, 1.0):
        low, high = _with_wilson(x, mean, variance, t, confidence, (low, high))
    elif tasks == "random" and (low_bound, high_bound) == (-1.0, 1.0):
        floor = float(np.log(2.0 / (1.0 - confidence))) / x.size
        low, high = min(low, mean - floor), max(high, mean + floor)
    return mean, max(low_bound, low), min(high_bound, high)


def _with_wilson(
    x: np.ndarray,
    mean: float,
    variance: float,
    t: float,
    confidence: float,
    interval: tuple[float, float],
) -> tuple[float, float]:
    """A rate's t-``interval`` over cells ``x`` [seed, task] widened to hold Wilson's at its
    effective number of cells (see `crossed_mean`); every cell equal: Wilson's at the tasks."""
    n_seeds, n_tasks = x.shape
    z = _z(confidence)
    if variance > 0 and 0.0 < mean < 1.0:
        informative = int(np.sum(~(np.all(x == 0.0, axis=0) | np.all(x == 1.0, axis=0))))
        kish = mean * (1.0 - mean) / variance * (z / t) ** 2
        n_eff = min(max(kish, n_tasks), max(n_tasks, min(x.size, n_tasks + n_seeds * informative)))
        low, high = _score_bounds(mean, n_eff, z, confidence)
        return min(interval[0], low), max(interval[1], high)
    return _score_bounds(mean, float(n_tasks), z, confidence)


def bootstrap_seeds_tasks(
    x: ArrayLike,
    n_bootstrap: int = 1000,
    *,
    confidence: float = 0.95,
    seed: int = 0,
    bounds: tuple[float, float] = (-1.0, 1.0),
) -> tuple[float, float, float]:
    """``(mean, low, high)`` of ``x`` [training seed, task] with a two-way percentile bootstrap.

    Each resample draws the training seeds and the tasks with replacement and
    averages ``x`` over their cross product, so the interval covers the spread
    between training runs as well as between tasks. NaN cells (a task a seed
    could not score) are left out of every mean. For a paired comparison pass
    the per-cell difference (arm trained from seed s minus its base s, on the
    same tasks). When every resample agrees (every cell equal, say all 1) the interval
    would have no width, which no finite sample supports: it is then ``mean`` +/-
    ``ln(2 / α) / S``, the rule of three over the S seeds (as `crossed_mean`), within
    ``bounds``.

    Args:
        x: shape ``(n_seeds, n_tasks)``, e.g. per-task Pass@(1,T) of each training seed.
        n_bootstrap: resamples (at least 1).
        confidence: two-sided coverage of the percentile interval.
        seed: seed of the bootstrap generator (results are deterministic).
        bounds: the range of a cell ((0, 1) for a rate, (-1, 1) for a paired difference).

    Example:
        >>> x = [[0.0, 0.5, 1.0], [0.5, 0.5, 1.0]]
        >>> mean, low, high = bootstrap_seeds_tasks(x, n_bootstrap=200)
        >>> round(mean, 4), bool(0.0 <= low <= mean <= high <= 1.0)
        (0.5833, True)
        >>> [round(v, 3) for v in bootstrap_seeds_tasks([[1.0] * 24] * 3, bounds=(0, 1))]
        [1.0, 0.0, 1.0]
    """
    x = _floats(x, "x")
    if x.ndim != 2 or 0 in x.shape:
        raise ValueError(
            f"Expect `x` to be an array [seed, task] with at least one of each, got shape {x.shape}"
        )
    n_bootstrap = check_n_bootstrap(n_bootstrap, least=1)
    check_confidence(confidence)
    check_seed(seed)
    low_bound, high_bound = _mean_in_bounds(x, bounds)
    if np.isnan(x).all():
        raise ValueError("Expect `x` to hold at least one cell that is not NaN, got none")
    mean = float(np.nanmean(x))
    rng = np.random.default_rng(seed)
    n_seeds, n_tasks = x.shape
    stats = np.empty(n_bootstrap)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # ("Mean of empty slice": dropped below)
        for b in range(n_bootstrap):
            seeds = rng.integers(n_seeds, size=n_seeds)
            tasks = rng.integers(n_tasks, size=n_tasks)
            stats[b] = np.nanmean(x[np.ix_(seeds, tasks)])
    # A resample that drew only NaN cells has no mean: it is left out, as a NaN cell is.
    stats = stats[~np.isnan(stats)] if np.isnan(stats).any() else stats
    if stats.size == 0:
        stats = np.array([mean])
    # In percent, (100 -/+ 100·confidence) / 2 is exact (2.5 and 97.5 at 0.95), where
    # (1 - confidence) / 2 is not.
    low, high = np.percentile(stats, [(100 - 100 * confidence) / 2, (100 + 100 * confidence) / 2])
    if high <= low:  # (every resample agrees)
        half = float(np.log(2.0 / (1.0 - confidence))) / n_seeds
        low, high = max(low_bound, mean - half), min(high_bound, mean + half)
    return mean, float(low), float(high)
