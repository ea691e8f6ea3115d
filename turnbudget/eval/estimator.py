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
tasks for the confidence interval. Comparisons of trained agents add a level:
`bootstrap_seeds_tasks` resamples training seeds and tasks together, so an
interval covers the spread between training runs too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from turnbudget._checks import is_whole

__all__ = [
    "GridEstimate",
    "bootstrap_seeds_tasks",
    "estimate_from_task_grids",
    "estimate_grid",
    "pass_at_k",
    "pass_at_kt",
    "task_grids",
]


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
        raise ValueError(f"Expect n to be a positive int, got {n!r}")
    if not 0 <= c <= n:
        raise ValueError(f"Expect 0 <= c <= n, got c={c!r}, n={n}")
    _check_k(n, k)
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1, dtype=np.float64)))


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
    n = len(first_success_turns)
    if n == 0:
        raise ValueError("Expect at least one episode per task, got none")
    turns = np.array(
        [np.inf if t is None else float(t) for t in first_success_turns], dtype=np.float64
    )
    grid = np.empty((len(ks), len(ts)), dtype=np.float64)
    for j, t in enumerate(ts):
        c = int(np.count_nonzero(turns <= t))
        for i, k in enumerate(ks):
            grid[i, j] = pass_at_k(n, c, k)
    return grid


def task_grids(
    tasks: Mapping[object, Sequence[int | None]], ks: Sequence[int], ts: Sequence[int]
) -> np.ndarray:
    """Stack the per-task grids, shape ``(n_tasks, len(ks), len(ts))``, in sorted task order."""
    if not tasks:
        raise ValueError("Expect at least one task, got none")
    return np.stack([pass_at_kt(tasks[key], ks, ts) for key in sorted(tasks, key=repr)])


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
        return cls(
            tuple(d["ks"]), tuple(d["ts"]), np.asarray(d["mean"]), np.asarray(d["low"]),
            np.asarray(d["high"]), int(d["n_tasks"]), int(d["n_per_task"]), float(d["confidence"]),
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
    """Average the per-task Pass@(K,T) grids and bootstrap a CI by resampling tasks.

    Args:
        tasks: task key -> first-success turn (or None) of each of its episodes.
        ks: the K values; each must be <= the number of episodes of every task.
        ts: the turn budgets T.
        n_bootstrap: bootstrap resamples (0 gives a degenerate interval at the mean).
        confidence: two-sided coverage of the percentile interval.
        seed: seed of the bootstrap generator (results are deterministic).

    Example:
        >>> est = estimate_grid({"a": [1, None], "b": [None, None]}, ks=[1, 2], ts=[1])
        >>> est.mean.tolist()
        [[0.25], [0.5]]
    """
    ks = tuple(int(k) for k in ks)
    ts = tuple(int(t) for t in ts)
    n_min = min(len(v) for v in tasks.values()) if tasks else 0
    for k in ks:
        _check_k(n_min, k)
    return estimate_from_task_grids(
        task_grids(tasks, ks, ts),
        ks,
        ts,
        n_per_task=n_min,
        n_bootstrap=n_bootstrap,
        confidence=confidence,
        seed=seed,
    )


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
    """Average per-task grids ``(n_tasks, len(ks), len(ts))``; percentile bootstrap over tasks.

    Rerun mode builds each task's grid column by column (one set of runs per
    T) and comes here; `estimate_grid` is the truncate-mode shortcut.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"Expect `confidence` in (0, 1), got {confidence!r}")
    if not is_whole(n_bootstrap) or n_bootstrap < 0:
        raise ValueError(f"Expect `n_bootstrap` to be a non-negative int, got {n_bootstrap!r}")
    grids = np.asarray(grids, dtype=np.float64)
    if grids.ndim != 3 or grids.shape[1:] != (len(ks), len(ts)) or len(grids) == 0:
        raise ValueError(
            f"Expect task grids of shape (n_tasks>0, {len(ks)}, {len(ts)}), got {grids.shape}"
        )
    mean = grids.mean(axis=0)
    if n_bootstrap > 0 and len(grids) > 1:
        rng = np.random.default_rng(seed)
        boot = np.empty((n_bootstrap, *mean.shape))
        for b in range(n_bootstrap):  # one resample at a time keeps memory flat
            boot[b] = grids[rng.integers(0, len(grids), size=len(grids))].mean(axis=0)
        alpha = (1.0 - confidence) / 2.0
        low, high = np.quantile(boot, [alpha, 1.0 - alpha], axis=0)
    else:
        low, high = mean.copy(), mean.copy()
    return GridEstimate(
        tuple(int(k) for k in ks),
        tuple(int(t) for t in ts),
        mean,
        low,
        high,
        len(grids),
        int(n_per_task),
        float(confidence),
    )


def bootstrap_seeds_tasks(
    x: ArrayLike, n_bootstrap: int = 1000, *, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """``(mean, low, high)`` of ``x`` [training seed, task] with a two-way percentile bootstrap.

    Each resample draws the training seeds and the tasks with replacement and
    averages ``x`` over their cross product, so the interval covers the spread
    between training runs as well as between tasks. NaN cells (a task a seed
    could not score) are left out of every mean. For a paired comparison pass
    the per-cell difference (arm trained from seed s minus its base s, on the
    same tasks).

    Args:
        x: shape ``(n_seeds, n_tasks)``, e.g. per-task Pass@(1,T) of each training seed.
        n_bootstrap: resamples (at least 1).
        confidence: two-sided coverage of the percentile interval.
        seed: seed of the bootstrap generator (results are deterministic).

    Example:
        >>> x = [[0.0, 0.5, 1.0], [0.5, 0.5, 1.0]]
        >>> mean, low, high = bootstrap_seeds_tasks(x, n_bootstrap=200)
        >>> round(mean, 4), bool(0.0 <= low <= mean <= high <= 1.0)
        (0.5833, True)
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or 0 in x.shape:
        raise ValueError(
            f"Expect `x` to be an array [seed, task] with at least one of each, got shape {x.shape}"
        )
    if not is_whole(n_bootstrap) or n_bootstrap < 1:
        raise ValueError(f"Expect `n_bootstrap` to be a positive int, got {n_bootstrap!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"Expect `confidence` in (0, 1), got {confidence!r}")
    mean = float(np.nanmean(x))
    rng = np.random.default_rng(seed)
    n_seeds, n_tasks = x.shape
    stats = np.empty(n_bootstrap)
    for b in range(n_bootstrap):
        seeds = rng.integers(n_seeds, size=n_seeds)
        tasks = rng.integers(n_tasks, size=n_tasks)
        stats[b] = np.nanmean(x[np.ix_(seeds, tasks)])
    # In percent, (100 -/+ 100·confidence) / 2 is exact (2.5 and 97.5 at 0.95), where
    # (1 - confidence) / 2 is not.
    low, high = np.percentile(stats, [(100 - 100 * confidence) / 2, (100 + 100 * confidence) / 2])
    return mean, float(low), float(high)
