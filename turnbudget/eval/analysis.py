"""From episode records to Pass@(K,T) grids and the single-step / recovery analysis.

Everything here is computed from the episode records alone (so ``turnbudget
report`` can rebuild it from ``episodes.jsonl``), from integer counts, in a
fixed order (so results do not depend on how episodes were scheduled).

The definitions are `RecordStepOutcomes`'s (the per-step records carry the
same judgement in ``optimal``, ``error_self`` and ``phase``):

- a step is *optimal* when the agent's command starts a shortest plan from
  the state it saw;
- an injected error and the agent's command are judged apart; a
  *self-inflicted error* is a non-optimal command that increased the distance
  to goal; a *wasted* turn a valid non-optimal one that left it unchanged;
  invalid commands are counted on their own; a distance-increasing error
  (injected or self-inflicted) is *recovered* once the distance is back to its
  value before the error;
- a step is *on track* when no error is open, *right after an error* when the
  previous turn had a distance-increasing one.

Rates are pooled over steps (hits / steps over all episodes of a group).
``analysis[group]`` describes the runs at ``max(ts)`` from the episode records;
``analysis[group]["by_budget"]`` (built from the step records when the run
has them) repeats the table at every T of the grid, for all, successful and
failed episodes: in truncate mode from the runs at ``max(ts)`` cut at T (what
a budget-blind agent did in its first T turns), in rerun mode from the runs
made at T. These observational numbers have selection bias (errors happen in
particular states); `turnbudget.eval.probe` measures skill on fixed states.

Feasibility comes from the oracle: a task is *feasible* at T when its optimal
solution length d* (the records' ``initial_distance``) is at most T. A failure
at an infeasible T was made certain by the budget, not by a lack of skill, so
``analysis[group]["feasibility"]`` (`feasibility_analysis`) reports Pass@(K,T)
over the tasks feasible at each T beside the share of such tasks, Pass@K
against the budget in units of the optimal length (c = T / d*, in
`RATIO_BINS`), and the step regret of successes (turns beyond d*).

Episodes that *failed to run* (records with ``failed_to_run``: the agent or
env raised, the worker died, or the episode timed out, on every attempt) are
not the agent's failures: they are left out of every grid and statistic and
counted apart (``failed_to_run`` in the summary and per group). Pass@(K,T) of a
task is then the unbiased estimator over the ``n_i`` episodes that ran (its
``c_i`` successes among them), which stays unbiased when failures to run do
not depend on the outcome; a task left with fewer than ``max(ks)`` episodes
that ran (at some T, in rerun mode) cannot be scored at every K and is left
out of the grid, listed under ``tasks_dropped``. Where failing to run may
follow the outcome (an agent that raises when it is losing), ``bounds`` beside
them gives the grid over every task with each such episode counted as a loss,
then as a success: the agent's grid had it played on lies between the two.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import operator
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from turnbudget._checks import (
    Each,
    Items,
    brief,
    check_positive_int,
    field_problem,
    is_finite,
    is_listlike,
    is_whole,
)
from turnbudget.eval.estimator import (
    check_grid_values,
    difference_interval,
    estimate_from_task_grids,
    pass_at_k,
)
from turnbudget.records import BUDGET_COUNTERS
from turnbudget.records.files import episode_fields_problem, step_fields_problem

__all__ = [
    "ALL",
    "RATIO_BINS",
    "RunTally",
    "advantage_halving_budget",
    "budget_analysis",
    "budget_counts",
    "check_run_summary",
    "compare_runs",
    "failure_counts",
    "feasibility_analysis",
    "grid_problem",
    "length_buckets",
    "mode_gap",
    "step_stats",
    "summarize_run",
    "task_grid_arrays",
]

#: The group name for all envs of a run together.
ALL = "all"


#: What reading a malformed record raised (a ``KeyError: 'turns_used'`` named no record).
_READ_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError)


def _unreadable(
    record: Any, exc: Exception, ts: Sequence[int] | None = None, *, identity: bool = True
) -> ValueError:
    """The error for an episode record the analysis could not read (reading it raised
    ``exc``): what is wrong with it (or with a team record's role), as
    `episode_fields_problem` says (its env, seed and budget only with ``identity``), and
    which record."""
    key = exc.args[0] if isinstance(exc, KeyError) and exc.args else None
    missing = (key,) if isinstance(key, str) else ()
    problem = episode_fields_problem(record, ts, identity=identity, missing=missing)
    roles = record.get("roles") if problem is None and isinstance(record, Mapping) else None
    for role, member in roles.items() if isinstance(roles, Mapping) else ():
        problem = episode_fields_problem(member, identity=False, missing=missing)
        if problem is not None:
            problem = f"role {brief(role)}: {problem}"
            break
    problem = problem or f"{type(exc).__name__}: {brief(exc)}"
    episode_id = record.get("episode_id") if isinstance(record, Mapping) else None
    which = f" {brief(episode_id)}" if isinstance(episode_id, str) else ""
    return ValueError(f"Cannot read episode record{which}: {problem}")


def _checked(record: Any, ts: Sequence[int] | None = None, *, identity: bool = True) -> Any:
    """``record`` when `episode_fields_problem` finds nothing wrong with it, else the
    ``ValueError`` `_unreadable` gives. Checked before it is counted: a field of the wrong
    type read without an error (``success: "False"`` is truthy, ``"3"`` an int to ``int``)
    was counted as what it looked like."""
    if episode_fields_problem(record, ts, identity=identity) is not None:
        raise _unreadable(record, ValueError(), ts, identity=identity)
    return record


def _unreadable_step(steps: Iterable[Any], exc: Exception, owned: bool = False) -> ValueError:
    """`_unreadable` for step records (the first of ``steps`` with a problem is named; with
    ``owned``, a step without its ``episode_id`` is one)."""
    for step in steps:
        problem = step_fields_problem(step)
        if problem is None and owned and "episode_id" not in step:
            problem = "Expect `episode_id` to be a string, but it is missing"
        if problem is not None:
            return ValueError(f"Cannot read step record {brief(step, 120)}: {problem}")
    return ValueError(f"Cannot read the step records: {type(exc).__name__}: {brief(exc)}")


def _groups(config_envs: Sequence[str]) -> list[str]:
    return [*config_envs, ALL] if len(config_envs) > 1 else [*config_envs]


def _in_group(episode: Mapping[str, Any], group: str) -> bool:
    return group == ALL or episode["env_id"] == group


def _fst(episode: Mapping[str, Any]) -> int | None:
    if not episode.get("success"):
        return None
    turn = episode.get("first_success_turn")
    return int(turn) if turn is not None else int(episode["turns_used"])


def task_grid_arrays(
    episodes: Iterable[Mapping[str, Any]], ks: Sequence[int], ts: Sequence[int], mode: str
) -> tuple[np.ndarray, int]:
    """Per-task grids ``(n_tasks, len(ks), len(ts))`` and the fewest episodes of any task.

    ``truncate`` scores the runs at ``max(ts)`` at every T by their first-success
    turn; ``rerun`` scores column T by the runs made with budget T.
    """
    ks, ts = _checked_grid(ks, ts, mode)
    tasks: dict[tuple[str, int], _TaskTally] = {}
    for e in episodes:
        try:
            _task_of(tasks, _checked(e), ts).add(e)
        except _READ_ERRORS as exc:
            raise _unreadable(e, exc, ts) from None
    return _task_grids([tasks[key] for key in sorted(tasks)], ks, ts, mode)


def _checked_grid(
    ks: Sequence[int], ts: Sequence[int], mode: str
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``ks`` and ``ts`` checked (`check_grid_values`), and ``mode``, before any record is read
    (no budget was a bare 'max() arg is an empty sequence'; no K, an empty grid)."""
    if not isinstance(mode, str) or mode not in ("truncate", "rerun"):
        raise ValueError(f"Expect mode `truncate` or `rerun`, got {brief(mode)}")
    return check_grid_values(ks, "ks"), check_grid_values(ts, "ts")


class _TaskTally:
    """What the analysis reads of one task's episodes that ran, as counts: per budget run,
    the episodes, their successes and, per T, how many first succeeded within T turns; the
    first-success turns of its successes; its optimal length d* (from the record with the
    largest episode id that gives one, the batch analysis's last one in episode-id order; of
    records without ids, the largest d*: never the order they came in)."""

    __slots__ = ("index", "key", "length", "positive_length", "runs", "successes", "t_max")

    def __init__(self, key: tuple[str, int], ts: Sequence[int]):
        self.key = key
        self.index = {int(t): j for j, t in enumerate(ts)}
        self.runs: dict[int, list[int]] = {}  # budget -> [episodes, successes, hits at each T]
        # first-success turn -> episodes, of the runs at max(T) (what `analysis` describes: a
        # rerun's play at every budget counted once for each, and short wins weighed more)
        self.successes: dict[int, int] = defaultdict(int)
        self.t_max = max(self.index)
        self.length: tuple[str, int] | None = None  # (episode id, d*) with d* not None
        self.positive_length: tuple[str, int] | None = None  # ... with d* > 0

    def add(self, e: Mapping[str, Any]) -> None:
        row = self.runs.setdefault(int(e["turn_budget"]), [0] * (2 + len(self.index)))
        row[0] += 1
        fst = _fst(e)
        if fst is not None:
            row[1] += 1
            if int(e["turn_budget"]) == self.t_max:
                self.successes[fst] += 1
            for t, j in self.index.items():
                row[2 + j] += fst <= t
        d = e.get("initial_distance")
        if d is not None:  # (of equal ids the larger d*: the records' order may not matter)
            mark = (str(e.get("episode_id", "")), int(d))
            if self.length is None or mark >= self.length:
                self.length = mark
            if mark[1] > 0 and (self.positive_length is None or mark >= self.positive_length):
                self.positive_length = mark

    def count(self, budget: int) -> int:
        row = self.runs.get(budget)
        return row[0] if row else 0

    def hits(self, budget: int, t: int) -> int:
        """Episodes run at ``budget`` that first succeeded within ``t`` turns (t in ts)."""
        row = self.runs.get(budget)
        return row[2 + self.index[t]] if row else 0


def _task_of(
    tasks: dict[tuple[str, int], _TaskTally], e: Mapping[str, Any], ts: Sequence[int]
) -> _TaskTally:
    if not isinstance(e["env_id"], str):  # (sorted with the others' ids at the end)
        raise TypeError("env_id")
    key = (e["env_id"], int(e["seed"]))
    task = tasks.get(key)
    if task is None:
        task = tasks[key] = _TaskTally(key, ts)
    return task


def _task_grids(
    tasks: Sequence[_TaskTally], ks: Sequence[int], ts: Sequence[int], mode: str
) -> tuple[np.ndarray, int]:
    """`task_grid_arrays` of tallied tasks (in the order given)."""
    if not tasks:
        raise ValueError("Expect episode records, got none")
    t_max = max(ts)
    grids, n_min = [], None
    for task in tasks:
        if mode == "truncate":
            n = task.count(t_max)
            grid = _pass_grid(n, [task.hits(t_max, t) for t in ts], ks)
            counts = [n]
        elif mode == "rerun":
            counts = [task.count(t) for t in ts]
            grid = np.concatenate(
                [_pass_grid(n, [task.hits(t, t)], ks) for n, t in zip(counts, ts, strict=True)],
                axis=1,
            )
        else:
            raise ValueError(f"Expect mode `truncate` or `rerun`, got {mode!r}")
        grids.append(grid)
        n_min = min(counts) if n_min is None else min(n_min, *counts)
    return np.stack(grids), int(n_min or 0)


def _pass_grid(n: int, successes: Sequence[int], ks: Sequence[int]) -> np.ndarray:
    """`pass_at_kt`'s grid from counts: ``n`` episodes, ``successes[j]`` of them within ts[j]."""
    if n == 0:
        raise ValueError("Expect at least one episode per task, got none")
    return np.array([[_pass_at_k(n, c, k) for c in successes] for k in ks], dtype=np.float64)


#: `pass_at_k` of the few (n, c, k) a run's tasks share (each task asks for every (k, T)).
_pass_at_k = functools.lru_cache(maxsize=4096)(pass_at_k)


def _scorable(
    tasks: Sequence[_TaskTally],
    ks: Sequence[int],
    ts: Sequence[int],
    mode: str,
    unrun: Iterable[tuple[str, int]] = (),
) -> tuple[list[_TaskTally], list[str]]:
    """The tasks with at least ``max(ks)`` runs where the mode needs them, and the tasks
    (``"env_id|seed=S"``) left out for having fewer (some of their episodes failed to run),
    ``unrun`` among them: the keys of tasks none of whose episodes ran (they have no tally)."""
    need = (max(ts),) if mode == "truncate" else tuple(ts)
    short = {task.key for task in tasks if min(task.count(t) for t in need) < max(ks)}
    kept = [task for task in tasks if task.key not in short]
    return kept, [f"{env}|seed={seed}" for env, seed in sorted(short.union(unrun))]


def _failure_bounds(
    tasks: Sequence[_TaskTally],
    failed: Mapping[tuple[str, int], Mapping[int, int]],
    ks: Sequence[int],
    ts: Sequence[int],
    mode: str,
    *,
    n_bootstrap: int,
    confidence: float,
) -> dict[str, Any]:
    """Pass@(K,T) over every task with each episode that failed to run counted as a loss
    (``as_losses``) and as a success within every T (``as_successes``): what the run's grid
    would be at either extreme. The grid over the episodes that ran is unbiased only when
    failing to run does not depend on the outcome; an agent that raises, hangs or dies when
    it is losing fails exactly its lost episodes, and that grid then counts only its wins.
    These two bound the grid whatever the reason (a task with fewer than ``max(ks)`` planned
    episodes, possible only in an incomplete tally, is left out)."""
    need = (max(ts),) if mode == "truncate" else tuple(ts)
    lost, won, n_min = [], [], None
    for task in tasks:
        failures = failed.get(task.key, {})
        counts = [task.count(b) + failures.get(b, 0) for b in need]
        if min(counts) < max(ks):
            continue
        if mode == "truncate":
            (n,), extra = counts, failures.get(max(ts), 0)
            hits = [task.hits(max(ts), t) for t in ts]
            lost.append(_pass_grid(n, hits, ks))
            won.append(_pass_grid(n, [h + extra for h in hits], ks))
        else:
            hits = [task.hits(t, t) for t in ts]
            extras = [failures.get(t, 0) for t in ts]
            lost.append(np.concatenate([_pass_grid(n, [h], ks) for n, h in zip(counts, hits)], 1))
            won.append(
                np.concatenate(
                    [_pass_grid(n, [h + x], ks) for n, h, x in zip(counts, hits, extras)], 1
                )
            )
        n_min = min(counts) if n_min is None else min(n_min, *counts)
    if not lost:
        return {}
    return {
        name: estimate_from_task_grids(
            np.stack(grids), ks, ts, n_per_task=int(n_min or 0), n_bootstrap=n_bootstrap,
            confidence=confidence, seed=0,
        ).to_dict()
        for name, grids in (("as_losses", lost), ("as_successes", won))
    }  # fmt: skip


def failure_counts(episodes: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """How many episodes failed to run, by kind (``exception``, ``worker_lost``, ``timeout``)."""
    tally = _FailureTally()
    for e in episodes:
        try:
            if e.get("failed_to_run"):
                tally.add(e)
        except _READ_ERRORS as exc:
            raise _unreadable(e, exc, identity=False) from None
    return tally.counts()


class _FailureTally:
    """`failure_counts` as a running count of the episodes that failed to run."""

    def __init__(self) -> None:
        self.kinds: dict[str, int] = defaultdict(int)
        self.last_error = ""  # (what the last one failed with: for a run that cannot be scored)

    def add(self, e: Mapping[str, Any]) -> None:
        self.kinds[str(e.get("failure", "unknown"))] += 1
        error = e.get("error")
        if isinstance(error, str):
            self.last_error = error[:300]

    def counts(self) -> dict[str, Any]:
        return {"episodes": sum(self.kinds.values()), "by_kind": dict(sorted(self.kinds.items()))}


def mode_gap(truncate: Mapping[str, Any], rerun: Mapping[str, Any]) -> dict[str, Any]:
    """Rerun minus truncate, cell by cell (the bias of scoring a budget-aware agent by truncation).

    Raises:
        ValueError: a grid that is no summary's grid (`grid_problem`), or two grids over other
            ks or ts (a bare KeyError, or a gap broadcast over cells of other budgets).
    """
    for name, grid in (("truncate", truncate), ("rerun", rerun)):
        problem = grid_problem(grid, name, cells=("mean",))
        if problem is not None:
            raise ValueError(problem)
    for axis in ("ks", "ts"):
        if list(truncate[axis]) != list(rerun[axis]):
            raise ValueError(
                f"Expect `truncate` and `rerun` to be grids over the same {axis}, got "
                f"{brief(truncate[axis])} and {brief(rerun[axis])}"
            )
    diff = np.asarray(rerun["mean"], dtype=float) - np.asarray(truncate["mean"], dtype=float)
    return {
        "rerun_minus_truncate": np.round(diff, 6).tolist(),
        "max_abs": round(float(np.abs(diff).max()), 6),
        "mean_abs": round(float(np.abs(diff).mean()), 6),
    }


def length_buckets(initial_distances: Iterable[int], n_buckets: int = 3) -> list[tuple[int, int]]:
    """Split optimal-solution lengths into up to ``n_buckets`` ranges ``(lo, hi)`` by quantile."""
    n_buckets = check_positive_int(n_buckets, "n_buckets")
    if not is_listlike(initial_distances):
        raise ValueError(
            f"Expect `initial_distances` to be a list of ints >= 0, got {brief(initial_distances)}"
        )
    distances = [d for d in initial_distances if d is not None]
    for d in distances:  # (inf was an OverflowError, 1.5 a length of 1, "123" three lengths)
        if not (is_whole(d) and d >= 0):
            raise ValueError(f"Expect `initial_distances` to hold ints >= 0, got {brief(d)}")
    values = np.array(sorted({int(d) for d in distances}))
    if values.size == 0:
        return []
    if values.size <= n_buckets:  # a bucket per length (the quantiles merged 5 and 9)
        return [(int(v), int(v)) for v in values]
    edges = np.unique(np.quantile(values, np.linspace(0, 1, n_buckets + 1), method="lower"))
    buckets, lo = [], int(values[0])
    for hi in edges[1:-1]:
        if int(hi) >= lo:
            buckets.append((lo, int(hi)))
            lo = int(hi) + 1
    if lo <= int(values[-1]):
        buckets.append((lo, int(values[-1])))
    return buckets


def _bucket_table(
    tasks: Sequence[_TaskTally], ts: Sequence[int], mode: str
) -> list[dict[str, Any]]:
    """Pass@(1,T) by optimal-solution-length bucket: from the runs at max(T) by first
    success (truncate), or from the runs made at each T (rerun, exact for any agent)."""
    t_max = max(ts)
    known = [(task, task.length[1]) for task in tasks if task.length is not None]
    rows = []
    for lo, hi in length_buckets(d for _, d in known):
        members = [task for task, d in known if lo <= d <= hi]
        rates = {}
        for t in ts:
            if mode == "truncate":
                runs = sum(task.count(t_max) for task in members)
                hits = sum(task.hits(t_max, t) for task in members)
            else:
                runs = sum(task.count(t) for task in members)
                hits = sum(task.runs[t][1] for task in members if t in task.runs)
            rates[str(t)] = round(hits / runs, 6) if runs else None
        rows.append(
            {
                "optimal_length": [lo, hi],
                "tasks": len(members),
                "episodes": sum(task.count(t_max) for task in members),
                "success_rate": rates,
            }
        )
    return rows


def _rate(num: int | None, den: int) -> float | None:
    """``num / den`` to 6 places; None when ``den`` is 0 or ``num`` unknown."""
    return round(num / den, 6) if den and num is not None else None


#: The bins of the budget in units of the optimal length, c = T / d*: ``[lo, hi)``. Below 1
#: no agent can succeed (errors only add turns); the budgets of the native games' defaults
#: sit near 2-6.
RATIO_BINS: tuple[tuple[float, float], ...] = (
    (0.0, 1.0), (1.0, 1.25), (1.25, 1.5), (1.5, 2.0), (2.0, 3.0), (3.0, float("inf")),
)  # fmt: skip


def feasibility_analysis(
    episodes: Sequence[Mapping[str, Any]],
    ks: Sequence[int],
    ts: Sequence[int],
    mode: str,
    *,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
) -> dict[str, Any] | None:
    """Pass@(K,T) where the budget made success possible, and against T / d*.

    ``episodes`` are the scorable ones (every task with ``max(ks)`` runs where
    ``mode`` needs them). Returns None when no record gives a task's optimal
    length (no oracle, or records older than these fields). Otherwise:

    - ``tasks``: tasks with a known d*; ``feasible_tasks``: per T, how many have d* <= T;
    - ``feasible``: per T, Pass@(K,T) over the tasks feasible at T (``mean``,
      ``low``, ``high`` per K, bootstrap over those tasks; None where none is);
    - ``by_ratio``: per bin of `RATIO_BINS`, the (task, T) cells whose
      c = T / d* falls in it, their tasks, and their mean Pass@K per K;
    - ``step_regret``: over the successful episodes of the runs at max(T) (one play each,
      in every mode), turns to success minus d*.

    Example:
        >>> eps = [{"env_id": "e", "seed": s, "turn_budget": 10, "success": w,
        ...         "first_success_turn": f, "turns_used": f or 10, "initial_distance": d}
        ...        for s, w, f, d in [(0, True, 6, 4), (1, False, None, 12)]]
        >>> f = feasibility_analysis(eps, [1], [5, 10], "truncate", n_bootstrap=0)
        >>> f["feasible_tasks"], f["feasible"][1]["mean"]  # Pass@(1,10): 0.5 over all tasks
        ([1, 1], [1.0])
        >>> [(b["ratio"][0], b["cells"], b["mean"]) for b in f["by_ratio"] if b["cells"]]
        [(0.0, 2, [0.0]), (1.25, 1, [0.0]), (2.0, 1, [1.0])]
        >>> f["step_regret"]
        {'successes': 1, 'mean': 2.0, 'median': 2.0, 'max': 2}
    """
    ks, ts = _checked_grid(ks, ts, mode)
    tasks: dict[tuple[str, int], _TaskTally] = {}
    for e in episodes:
        try:
            _task_of(tasks, _checked(e), ts).add(e)
        except _READ_ERRORS as exc:
            raise _unreadable(e, exc, ts) from None
    return _feasibility(
        [tasks[key] for key in sorted(tasks)], ks, ts, mode, n_bootstrap=n_bootstrap,
        confidence=confidence,
    )  # fmt: skip


def _feasibility(
    tasks: Sequence[_TaskTally],
    ks: Sequence[int],
    ts: Sequence[int],
    mode: str,
    *,
    n_bootstrap: int,
    confidence: float,
) -> dict[str, Any] | None:
    """`feasibility_analysis` of tallied tasks (sorted by key)."""
    known = [task for task in tasks if task.positive_length is not None]
    if not known:
        return None
    grids, n_min = _task_grids(known, ks, ts, mode)
    d_star = np.array([task.positive_length[1] for task in known], dtype=np.float64)  # type: ignore[index]
    feasible = []
    for j, t in enumerate(ts):
        mask = d_star <= t
        entry: dict[str, Any] = {"t": int(t), "tasks": int(mask.sum())}
        if mask.any():
            est = estimate_from_task_grids(
                grids[mask][:, :, j : j + 1], ks, [t], n_per_task=n_min,
                n_bootstrap=n_bootstrap, confidence=confidence, seed=0,
            )  # fmt: skip
            for name in ("mean", "low", "high"):
                entry[name] = [round(float(x), 6) for x in getattr(est, name)[:, 0]]
        else:
            entry.update(mean=None, low=None, high=None)
        feasible.append(entry)
    ratio = np.asarray(ts, dtype=np.float64)[None, :] / d_star[:, None]  # (tasks, T)
    by_ratio = []
    for lo, hi in RATIO_BINS:
        task_of, column = np.nonzero((ratio >= lo) & (ratio < hi))
        cells = grids[task_of, :, column]  # (cells, K)
        by_ratio.append(
            {
                "ratio": [lo, None if np.isinf(hi) else hi],
                "cells": len(task_of),
                "tasks": len(set(task_of.tolist())),
                "mean": [round(float(x), 6) for x in cells.mean(axis=0)] if len(cells) else None,
            }
        )
    regrets: dict[int, int] = defaultdict(int)  # turns beyond d* -> successes
    for task in known:
        for fst, count in task.successes.items():
            regrets[fst - task.positive_length[1]] += count  # type: ignore[index]
    return {
        "ks": [int(k) for k in ks],
        "ts": [int(t) for t in ts],
        "tasks": len(known),
        "feasible_tasks": [entry["tasks"] for entry in feasible],
        "feasible": feasible,
        "by_ratio": by_ratio,
        "step_regret": {
            "successes": sum(regrets.values()),
            "mean": _mean_of_counts(regrets),
            "median": _median_of_counts(regrets),
            "max": max(regrets) if regrets else None,
        },
    }


def _mean_of_counts(counts: Mapping[int, int]) -> float | None:
    """``round(np.mean(values), 6)`` of the ints ``counts`` tallies (value -> how often)."""
    n = sum(counts.values())
    return round(sum(v * c for v, c in counts.items()) / n, 6) if n else None


def _median_of_counts(counts: Mapping[int, int]) -> float | None:
    """``np.median(values)`` of the ints ``counts`` tallies (value -> how often)."""
    n = sum(counts.values())
    if not n:
        return None
    middle, seen, low = ((n - 1) // 2, n // 2), 0, None
    for value in sorted(counts):
        seen += counts[value]
        if low is None and seen > middle[0]:
            low = value
        if seen > middle[1]:
            return (low + value) / 2  # type: ignore[operator]
    raise AssertionError("unreachable")


def _hits(rate: float | None, judged: int) -> int:
    """The integer count behind a rate the recorder stored as hits / judged."""
    return 0 if rate is None or not judged else round(float(rate) * judged)


def step_stats(episodes: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The single-step and recovery statistics of one group of episode records.

    Rates are pooled over steps (total hits / total steps), not averaged over
    episodes, and built from integer counts, so they do not depend on order.
    """
    totals = _StepTotals()
    for e in episodes:
        try:
            totals.add(_checked(e, identity=False))
        except _READ_ERRORS as exc:
            raise _unreadable(e, exc, identity=False) from None
    return totals.stats()


#: The episode record's counts `step_stats` sums as they are.
_SUMMED = (
    "n_errors_self", "n_errors_injected", "n_errors_injected_increasing", "n_wasted", "n_invalid",
    "n_recovered", "n_unrecovered",
)  # fmt: skip


#: `_StepTotals`' integer counters besides its per-key sums.
_STEP_SCALARS = (
    "episodes", "successes", "turns", "judged", "on_track", "after_error", "hits",
    "hits_on_track", "hits_after_error",
)  # fmt: skip


class _StepTotals:
    """`step_stats` as a running sum: `add` one episode record at a time."""

    def __init__(self, house: Sequence[str] = ()) -> None:
        # (the roles the house plays, for a team episode recorded without its `house` list:
        # run.json's, before the records listed them)
        self.house = house
        self.episodes = self.successes = self.turns = 0
        self.judged = self.on_track = self.after_error = 0
        self.hits = self.hits_on_track = self.hits_after_error = 0
        self.summed = dict.fromkeys(_SUMMED, 0)
        # (counts some episode's record lacks, as older records do: their totals are unknown,
        # where a missing count read as 0 reported no wasted turn beside a table of them)
        self.lacking: set[str] = set()
        self.recover: dict[int, int] = defaultdict(int)  # turns to recover -> errors

    def add(self, e: Mapping[str, Any]) -> None:
        self.episodes += 1
        self.successes += bool(e.get("success"))
        members = e.get("roles")
        if isinstance(members, Mapping) and members:  # a team episode: the step columns pool
            house = e.get("house", self.house)  # its members' turns (it counted none: zeros),
            house = set(house) if isinstance(house, list | tuple) else ()  # not the house's
            for role, member in members.items():
                if role not in house:
                    self._add_steps(member)
        else:
            self._add_steps(e)

    def _add_steps(self, e: Mapping[str, Any]) -> None:
        n_on = int(e.get("n_steps_on_track") or 0)
        n_after = int(e.get("n_steps_after_error") or 0)
        self.on_track += n_on
        self.after_error += n_after
        if "n_steps_judged" in e:  # the recorder's integer counts
            self.judged += int(e["n_steps_judged"])
            self.hits += int(e["n_optimal_steps"])
            self.hits_on_track += int(e["n_optimal_on_track"])
            self.hits_after_error += int(e["n_optimal_after_error"])
        else:  # older records: only the rates (hits / steps) were stored
            n = int(e["turns_used"]) if e.get("optimal_step_rate") is not None else 0
            self.judged += n
            self.hits += _hits(e.get("optimal_step_rate"), n)
            self.hits_on_track += _hits(e.get("optimal_step_rate_on_track"), n_on)
            self.hits_after_error += _hits(e.get("optimal_step_rate_after_error"), n_after)
        self.turns += int(e["turns_used"])
        for key in _SUMMED:
            count = e.get(key)
            if count is None:
                self.lacking.add(key)
            else:
                self.summed[key] += int(count)
        for t in e.get("turns_to_recover") or ():
            self.recover[int(t)] += 1

    @classmethod
    def merged(cls, parts: Iterable[_StepTotals]) -> _StepTotals:
        """The totals of several (integer sums: as if their episodes were added to one)."""
        total = cls()
        for part in parts:
            for name in _STEP_SCALARS:
                setattr(total, name, getattr(total, name) + getattr(part, name))
            for key, value in part.summed.items():
                total.summed[key] += value
            total.lacking |= part.lacking
            for t, errors in part.recover.items():
                total.recover[t] += errors
        return total

    def stats(self) -> dict[str, Any]:
        turns = self.turns
        c: dict[str, int | None] = {
            key: None if key in self.lacking else value for key, value in self.summed.items()
        }
        recovered, unrecovered = c["n_recovered"], c["n_unrecovered"]
        return {
            "episodes": self.episodes,
            "turns": turns,
            "success_rate": _rate(self.successes, self.episodes),
            "optimal_step_rate": _rate(self.hits, self.judged),
            "optimal_step_rate_on_track": _rate(self.hits_on_track, self.on_track),
            "optimal_step_rate_after_error": _rate(self.hits_after_error, self.after_error),
            "steps_judged": self.judged,
            "steps_on_track": self.on_track,
            "steps_after_error": self.after_error,
            "self_error_rate": _rate(c["n_errors_self"], turns),
            "injected_error_rate": _rate(c["n_errors_injected"], turns),
            "wasted_rate": _rate(c["n_wasted"], turns),
            "invalid_rate": _rate(c["n_invalid"], turns),
            "errors_self": c["n_errors_self"],
            "errors_injected": c["n_errors_injected"],
            "errors_injected_increasing": c["n_errors_injected_increasing"],
            "wasted": c["n_wasted"],
            "invalid": c["n_invalid"],
            "recovered": recovered,
            "unrecovered": unrecovered,
            "recovery_rate": (
                None
                if recovered is None or unrecovered is None
                else _rate(recovered, recovered + unrecovered)
            ),
            "turns_to_recover_mean": _mean_of_counts(self.recover),
            "turns_to_recover_median": _median_of_counts(self.recover),
            "turns_to_recover": [t for t in sorted(self.recover) for _ in range(self.recover[t])],
        }


def agent_usage(episodes: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Totals of the agents' own step accounts (an LLM's tokens, latency, retries) over
    episodes, with per-step means; None when no episode carries any. Sums are exact (then
    rounded), so they do not depend on the order of the episodes.

    Example:
        >>> agent_usage([{"agent": {"steps": 2, "tokens_in": 10, "admissible": 2}},
        ...              {"agent": {"steps": 2, "tokens_in": 30, "admissible": 1}}])
        {'steps': 4, 'tokens_in': 40, 'admissible': 3, 'tokens_in_per_step': 10.0, 'admissible_rate': 0.75}
    """
    totals = _UsageTotals()
    for e in episodes:
        try:
            totals.add(e)
        except _READ_ERRORS:
            agent = e.get("agent") if isinstance(e, Mapping) else e
            raise ValueError(
                f"Cannot read episode record: Expect `agent` to be an object of numbers, "
                f"got {brief(agent)}"
            ) from None
    return totals.usage()


class _UsageTotals:
    """`agent_usage` as a running sum (floats summed exactly, as fractions)."""

    def __init__(self) -> None:
        self.totals: dict[str, Any] = {}
        self.floats: set[str] = set()

    def add(self, e: Mapping[str, Any]) -> None:
        for key, value in (e.get("agent") or {}).items():
            if isinstance(value, float):
                self.floats.add(key)
                value = Fraction(value)
            self.totals[key] = self.totals.get(key, 0) + value

    def usage(self) -> dict[str, Any] | None:
        if not self.totals.get("steps"):
            return None
        totals = {k: round(float(v), 6) if k in self.floats else v for k, v in self.totals.items()}
        steps = totals["steps"]
        for key in ("tokens_in", "tokens_out", "latency_s", "retries"):
            if key in totals:
                totals[f"{key}_per_step"] = round(totals[key] / steps, 6)
        if "admissible" in totals:
            totals["admissible_rate"] = round(totals["admissible"] / steps, 6)
        return totals


#: Per-step counters of the budget analysis, in a fixed order (an episode record's
#: ``budget_counts`` holds one list of these per T).
_OUTCOMES = ("all", "success", "failure")


def _step_counts(step: Mapping[str, Any]) -> tuple[int, ...]:
    """One step's contribution to each of `BUDGET_COUNTERS` (records without a field count 0 there)."""
    optimal = step.get("optimal")
    judged = optimal is not None
    hit = optimal is True
    phase = step.get("phase")
    on_track, after_error = phase == "on_track", phase == "after_error"
    event = step.get("injected_error")
    injected = event is not None and event.get("applied", True)
    recoveries = step.get("recoveries") or ()
    return (
        1, judged, hit, judged and on_track, hit and on_track, judged and after_error,
        hit and after_error, step.get("error_self") is True, injected,
        injected and step.get("injection_increased") is True, step.get("wasted") is True,
        step.get("valid_action") is False, step.get("errors_opened") or 0, len(recoveries),
        sum(recoveries),
    )  # fmt: skip


def _budget_stats(counts: Sequence[int], episodes: int) -> dict[str, Any]:
    c = dict(zip(BUDGET_COUNTERS, (int(x) for x in counts), strict=True))
    unrecovered = c["errors_opened"] - c["recovered"]
    return {
        "episodes": episodes,
        "turns": c["turns"],
        "optimal_step_rate": _rate(c["optimal"], c["judged"]),
        "optimal_step_rate_on_track": _rate(c["optimal_on_track"], c["on_track"]),
        "optimal_step_rate_after_error": _rate(c["optimal_after_error"], c["after_error"]),
        "steps_judged": c["judged"],
        "steps_on_track": c["on_track"],
        "steps_after_error": c["after_error"],
        "self_error_rate": _rate(c["errors_self"], c["turns"]),
        "injected_error_rate": _rate(c["errors_injected"], c["turns"]),
        "wasted_rate": _rate(c["wasted"], c["turns"]),
        "invalid_rate": _rate(c["invalid"], c["turns"]),
        "errors_self": c["errors_self"],
        "errors_injected": c["errors_injected"],
        "errors_injected_increasing": c["errors_injected_increasing"],
        "wasted": c["wasted"],
        "invalid": c["invalid"],
        "recovered": c["recovered"],
        "unrecovered": unrecovered,
        "recovery_rate": _rate(c["recovered"], c["errors_opened"]),
        "turns_to_recover_mean": _rate(c["recover_turns"], c["recovered"]),
    }


def budget_counts(steps: Sequence[Mapping[str, Any]], ts: Sequence[int]) -> dict[str, list[int]]:
    """One episode's `BUDGET_COUNTERS` summed over its first T turns, for each T in ``ts``.

    Each episode record of the engine holds it (``budget_counts``, counted as the
    episode runs by `turnbudget.wrappers.RecordStepOutcomes`, which must agree with
    this function), so the per-budget analysis needs only ``episodes.jsonl``;
    `budget_analysis` falls back to the step records (this function) for logs
    written without it.

    Example:
        >>> steps = [{"turn": 1, "optimal": True, "phase": "on_track", "valid_action": True},
        ...          {"turn": 2, "optimal": False, "phase": "on_track", "wasted": True}]
        >>> budget_counts(steps, [1, 8])["8"][:5]
        [2, 2, 1, 2, 1]
    """
    # (as the recorder counts them: 0 and repeats are budgets too; 1.5 was budget '1')
    if not is_listlike(ts) or not all(is_whole(t) and t >= 0 for t in ts):
        raise ValueError(f"Expect `ts` to be a list of budgets (ints >= 0), got {brief(ts)}")
    for step in steps:  # (checked first: a turn "1" or 1.5 was read as 1, a count "3" raised)
        problem = step_fields_problem(step)
        if problem is not None:
            raise ValueError(f"Cannot read step record {brief(step, 120)}: {problem}")
    try:
        rows = sorted(steps, key=lambda s: s["turn"])
        turns = [int(s["turn"]) for s in rows]
        # Counter by counter (sums in C; once per episode, so no array to build).
        columns = list(zip(*map(_step_counts, rows))) or [()] * len(BUDGET_COUNTERS)
    except _READ_ERRORS as exc:
        raise _unreadable_step(steps, exc) from None
    out = {}
    for t in ts:
        upto = bisect.bisect_right(turns, int(t))
        out[str(int(t))] = [int(sum(column[:upto])) for column in columns]
    return out


def budget_analysis(
    config: Mapping[str, Any],
    episodes: Sequence[Mapping[str, Any]],
    steps: Iterable[Mapping[str, Any]] | None = None,
) -> dict[str, dict[str, dict[str, Any]]] | None:
    """``{group: {str(T): {"all" | "success" | "failure": stats}}}``, or None without the data.

    Truncate mode cuts the runs at ``max(ts)`` at each T (an episode is a
    success at T when its first success came within T turns); rerun mode
    (also used for ``both``) takes the runs made at T. Each episode's counts
    come from its record's ``budget_counts`` or else from ``steps`` (which
    must hold each episode's step records together, as the logs do).
    """
    counts = _counts_from_steps(config, episodes, steps)
    if counts is None:
        return None
    sums = _BudgetSums(config)
    for e in episodes:
        try:
            sums.add(e, e["budget_counts"] if "budget_counts" in e else counts[e["episode_id"]])
        except _READ_ERRORS as exc:
            raise _unreadable(e, exc, sums.ts) from None
    return sums.table()


class StepCountsError(ValueError):
    """Step records, each valid alone, whose counts for an episode cannot be (a part past
    its whole): the reader of the steps' file names it (`turnbudget.records.LogError`)."""


def _counts_from_steps(
    config: Mapping[str, Any],
    episodes: Sequence[Mapping[str, Any]],
    steps: Iterable[Mapping[str, Any]] | None,
) -> dict[str, Mapping[str, Sequence[int]]] | None:
    """`budget_counts` from ``steps`` of the episodes whose records lack them ({} when none
    does; None when some do and there are no steps)."""
    try:
        lacking = {e["episode_id"] for e in episodes if "budget_counts" not in e}
    except _READ_ERRORS as exc:
        bad = next(
            (e for e in episodes if not isinstance(e, Mapping) or "episode_id" not in e), None
        )
        raise _unreadable(bad, exc) from None
    if not lacking:
        return {}
    if steps is None:
        return None
    from turnbudget.records.files import budget_counts_problem

    ts = sorted(int(t) for t in config["ts"])
    counts: dict[str, Mapping[str, Sequence[int]]] = {}

    def owner(step: Any) -> Any:
        try:
            return step["episode_id"]
        except _READ_ERRORS as exc:
            raise _unreadable_step([step], exc, owned=True) from None

    for episode_id, rows in itertools.groupby(steps, key=owner):
        if episode_id in lacking and episode_id not in counts:
            counts[episode_id] = budget_counts(list(rows), ts)
            # (each step record can be valid and their sum not: 20 recoveries of 1 error)
            problem = budget_counts_problem(counts[episode_id], ts)
            if problem is not None:
                raise StepCountsError(
                    f"the step records of episode {episode_id!r} give counts that cannot "
                    f"be: {problem}"
                )
    return counts


class _BudgetSums:
    """`budget_analysis`'s sums of `BUDGET_COUNTERS`, per (group, T, outcome), as a running sum:
    per (env id, T, success or failure) as episodes come in (one row each), the groups and
    the outcome "all" added up from those in `table` (integer sums: the same totals)."""

    def __init__(self, config: Mapping[str, Any]):
        self.ts = sorted(int(t) for t in config["ts"])
        self.truncate = config["mode"] == "truncate"
        self.groups = _groups(config["envs"])
        self.sums: dict[tuple[str, int, str], list[int]] = {}
        self.n_eps: dict[tuple[str, int, str], int] = {}

    def add(self, e: Mapping[str, Any], counts: Mapping[str, Sequence[int]]) -> None:
        """Add one episode that ran, with its ``budget_counts``."""
        budget, ts = int(e["turn_budget"]), self.ts
        if self.truncate:
            targets = ts if budget == ts[-1] else []
        else:
            targets = [budget] if budget in ts else []
        fst, env = _fst(e), e["env_id"]
        for t in targets:
            snapshot = [int(x) for x in counts[str(t)]]
            key = (env, t, "success" if fst is not None and fst <= t else "failure")
            row = self.sums.get(key)
            if row is None:
                self.sums[key], self.n_eps[key] = snapshot, 1
            else:
                row[:] = map(operator.add, row, snapshot)
                self.n_eps[key] += 1

    def table(self) -> dict[str, dict[str, dict[str, Any]]]:
        width = len(BUDGET_COUNTERS)
        totals = {
            (g, t, o): [[0] * width, 0] for g in self.groups for t in self.ts for o in _OUTCOMES
        }
        for (env, t, outcome), row in self.sums.items():
            for g in self.groups:
                if g == ALL or env == g:
                    for o in ("all", outcome):
                        total = totals[g, t, o]
                        total[0] = list(map(operator.add, total[0], row))
                        total[1] += self.n_eps[env, t, outcome]
        return {
            g: {str(t): {o: _budget_stats(*totals[g, t, o]) for o in _OUTCOMES} for t in self.ts}
            for g in self.groups
        }


def _check_run_plan(cfg: dict[str, Any]) -> None:
    """A run configuration's ``envs`` (env ids), ``tasks`` (task seeds, or their number) and
    ``n``, as `RunTally` counts them (``tasks`` as a number becomes its seeds)."""
    envs, tasks, n = cfg["envs"], cfg["tasks"], cfg["n"]
    if not is_listlike(envs) or not envs or not all(isinstance(e, str) for e in envs):
        raise ValueError(f"Expect `config` envs to be a list of env ids, got {brief(envs)}")
    if is_whole(tasks) and tasks >= 1:
        cfg["tasks"] = tasks = list(range(int(tasks)))
    if not is_listlike(tasks) or not tasks or not all(is_whole(t) and t >= 0 for t in tasks):
        raise ValueError(
            f"Expect `config` tasks to be a list of task seeds (ints >= 0), got {brief(tasks)}"
        )
    if len(set(envs)) < len(envs) or len({int(t) for t in tasks}) < len(tasks):
        raise ValueError(f"Expect `config` envs and tasks without repeats, got {brief(cfg)}")
    if not is_whole(n) or n < 1:
        raise ValueError(f"Expect `config` n to be an int >= 1, got {brief(n)}")
    if n < max(cfg["ks"]):  # (every task was dropped, and the error blamed failures to run)
        raise ValueError(
            f"Expect `config` n ({n}) to be at least max(ks) ({max(cfg['ks'])}): Pass@K needs "
            "K episodes a task"
        )
    cfg["envs"], cfg["tasks"], cfg["n"] = list(envs), [int(t) for t in tasks], int(n)


#: What `RunTally` reads of a run's configuration.
_CONFIG_KEYS = ("label", "envs", "ks", "ts", "n", "tasks", "mode")
#: What every episode record holds for `RunTally` (checked before it counts any of it).
_NEEDED = frozenset(("env_id", "seed", "turn_budget"))


class RunTally:
    """The summary of one evaluation run, built as its episode records stream in.

    `add` folds one episode record (in any order) into counts: per task, its
    episodes and successes per budget run and T (the Pass@(K,T) grids, the
    feasibility and optimal-length tables are built from these at the end);
    per env group, the failures to run, the `step_stats` sums, and the
    per-budget sums of ``budget_counts``; for the run, the agents' usage.
    What it holds grows with the number of tasks, never with the number of
    episodes (the one list in the summary that does is ``turns_to_recover``,
    held as counts until `summary` writes it out). `summary` gives what
    `summarize_run` gives for the same records, whatever their order.

    Example:
        >>> tally = RunTally({"label": "a", "envs": ["e"], "ks": [1], "ts": [5, 10], "n": 2,
        ...                   "tasks": [0], "mode": "truncate"})
        >>> for rep, fst in enumerate([3, None]):
        ...     tally.add({"episode_id": f"e|seed=0|rep={rep}|T=10", "env_id": "e", "seed": 0,
        ...                "turn_budget": 10, "success": fst is not None,
        ...                "first_success_turn": fst, "turns_used": fst or 10})
        >>> tally.summary(n_bootstrap=0)["groups"]["e"]["truncate"]["mean"]
        [[0.5, 0.5]]
    """

    def __init__(self, config: Any):
        cfg = config.to_dict() if hasattr(config, "to_dict") else config
        if not isinstance(cfg, Mapping):
            raise TypeError(f"Expect `config` to be an EvalConfig or a dict, got {brief(config)}")
        cfg = dict(cfg)
        missing = [key for key in _CONFIG_KEYS if key not in cfg]
        if missing:  # (each was a bare KeyError)
            raise ValueError(
                f"Expect `config` to hold {', '.join(_CONFIG_KEYS)}; it lacks {missing}"
            )
        if cfg["mode"] not in ("truncate", "rerun", "both"):
            raise ValueError(
                f"Expect `config` mode truncate, rerun or both, got {brief(cfg['mode'])}"
            )
        check_grid_values(cfg["ks"], "ks")
        check_grid_values(cfg["ts"], "ts")
        cfg["ts"] = [int(t) for t in cfg["ts"]]  # (a NumPy array was no JSON summary)
        cfg["ks"] = [int(k) for k in cfg["ks"]]
        _check_run_plan(cfg)
        self.config = cfg
        # K = 1 always: every Pass@(1,T) the report shows and compares reads its row, and it
        # needs only one episode a task (a run of K = 2, 4 read its K = 2 row as Pass@1).
        self.ks, self.ts = sorted({1, *cfg["ks"]}), list(cfg["ts"])
        self.modes = ["truncate", "rerun"] if cfg["mode"] == "both" else [cfg["mode"]]
        self.groups = _groups(cfg["envs"])
        self.n_episodes = 0
        # The records of each planned (env, task, budget) cell: a record outside the plan,
        # or one past ``n`` in its cell (a duplicate), filled a missing one's place in the
        # count that says whether the run is complete.
        budgets = [max(self.ts)] if cfg["mode"] == "truncate" else self.ts
        self.planned: dict[tuple[str, int, int], int] = dict.fromkeys(
            itertools.product(cfg["envs"], (int(t) for t in cfg["tasks"]), budgets), 0
        )
        self.reps: dict[tuple[str, int, int], int] = {}  # cell -> a bit per rep counted
        self.failures = {g: _FailureTally() for g in [*self.groups, None]}  # None: the run
        self.tasks: dict[tuple[str, int], _TaskTally] = {}
        # per task with an episode that failed to run: how many failed, per budget run
        self.failed: dict[tuple[str, int], dict[int, int]] = {}
        self.steps: dict[str, _StepTotals] = {}  # per env id (the groups: merged at the end)
        self.budget: _BudgetSums | None = _BudgetSums(cfg)  # None once an episode lacks counts
        self.usage = _UsageTotals()

    def add(
        self,
        episode: Mapping[str, Any],
        budget_counts: Mapping[str, Sequence[int]] | None = None,
        *,
        checked: bool = False,
    ) -> None:
        """Fold in one episode record; ``budget_counts`` stands in for the record's own when
        it has none (older logs: computed from its step records). A record the analysis cannot
        read is a ``ValueError`` saying what is wrong with it. ``checked``: the record comes
        from a run's log, whose reader checked its fields (`turnbudget.records`), or from
        the engine that made it: they are not checked again (a third of a summary's time)."""
        if not isinstance(episode, Mapping) or not episode.keys() >= _NEEDED:
            missing = sorted(_NEEDED - episode.keys()) if isinstance(episode, Mapping) else []
            raise _unreadable(episode, KeyError(*missing[:1]), self.ts)  # (before any count)
        if not checked:
            _checked(episode, self.ts)
        cell = (episode["env_id"], int(episode["seed"]), int(episode["turn_budget"]))
        if cell not in self.planned:
            raise ValueError(
                f"Cannot count episode record {brief(episode.get('episode_id'))}: env "
                f"{brief(cell[0])}, task {cell[1]} at T={cell[2]} is no episode of run "
                f"{brief(self.config['label'])} (its envs, tasks and budgets are "
                f"{brief(self.config['envs'])}, {brief(self.config['tasks'])}, "
                f"{brief(sorted({b for _, _, b in self.planned}))})"
            )
        if self.planned[cell] >= self.config["n"]:
            raise ValueError(
                f"Cannot count episode record {brief(episode.get('episode_id'))}: env "
                f"{brief(cell[0])}, task {cell[1]} at T={cell[2]} already has the "
                f"{self.config['n']} episodes run {brief(self.config['label'])} plans for it "
                "(a record given twice?)"
            )
        rep = episode.get("rep")
        if rep is not None:  # (older records and hand-made ones may lack it)
            if not (is_whole(rep) and 0 <= rep < self.config["n"]):
                raise ValueError(
                    f"Cannot count episode record {brief(episode.get('episode_id'))}: its rep "
                    f"{brief(rep)} is no repeat of run {brief(self.config['label'])} (0 to "
                    f"{self.config['n'] - 1})"
                )
            bit = 1 << int(rep)  # (a bit per repeat: memory flat in the episodes)
            if self.reps.get(cell, 0) & bit:
                raise ValueError(
                    f"Cannot count episode record {brief(episode.get('episode_id'))}: env "
                    f"{brief(cell[0])}, task {cell[1]}, rep {rep} at T={cell[2]} was counted "
                    "already (a record given twice)"
                )
            self.reps[cell] = self.reps.get(cell, 0) | bit
        self.planned[cell] += 1
        try:
            self._add(episode, budget_counts)
        except _READ_ERRORS as exc:
            raise _unreadable(episode, exc, self.ts) from None

    def _add(
        self, episode: Mapping[str, Any], budget_counts: Mapping[str, Sequence[int]] | None
    ) -> None:
        self.n_episodes += 1
        self.usage.add(episode)
        groups = [g for g in self.groups if _in_group(episode, g)]
        if episode.get("failed_to_run"):
            for g in (*groups, None):
                self.failures[g].add(episode)
            if not isinstance(episode["env_id"], str):  # (as `_task_of` refuses it)
                raise TypeError("env_id")
            runs = self.failed.setdefault((episode["env_id"], int(episode["seed"])), {})
            budget = int(episode["turn_budget"])
            runs[budget] = runs.get(budget, 0) + 1
            return
        _task_of(self.tasks, episode, self.ts).add(episode)
        if int(episode["turn_budget"]) == max(self.ts):
            env = episode["env_id"]
            steps = self.steps.get(env)
            if steps is None:
                steps = self.steps[env] = _StepTotals(self.config.get("house") or ())
            steps.add(episode)
        counts = episode.get("budget_counts", budget_counts)
        if counts is None:
            self.budget = None
        elif self.budget is not None:
            self.budget.add(episode, counts)

    def summary(self, *, n_bootstrap: int = 1000, confidence: float = 0.95) -> dict[str, Any]:
        """The run's summary (see `summarize_run`); ``ValueError`` when the run is incomplete
        or an env group has no task left to score."""
        cfg, ks, ts, modes = self.config, self.ks, self.ts, self.modes
        expected = (
            len(cfg["envs"])
            * len(cfg["tasks"])
            * cfg["n"]
            * (1 if cfg["mode"] == "truncate" else len(ts))
        )
        if self.n_episodes != expected:
            raise ValueError(
                f"Run {cfg['label']!r} has {self.n_episodes} episode records, expected "
                f"{expected}: it is incomplete (rerun the same command to resume it)"
            )
        tasks = [self.tasks[key] for key in sorted(self.tasks)]
        groups: dict[str, Any] = {}
        analysis: dict[str, Any] = {}
        for group in self.groups:
            members = [task for task in tasks if group == ALL or task.key[0] == group]
            # (a task whose every episode failed to run has no tally, and is dropped too)
            unrun = [
                key for key in self.failed
                if key not in self.tasks and (group == ALL or key[0] == group)
            ]  # fmt: skip
            failures = self.failures[group].counts()
            failures["tasks_dropped"] = {}
            entry: dict[str, Any] = {}
            for mode in modes:
                scored, dropped = _scorable(members, ks, ts, mode, unrun)
                failures["tasks_dropped"][mode] = dropped
                if not scored:
                    last = self.failures[group].last_error
                    raise ValueError(
                        f"Run {cfg['label']!r}: no task of {group!r} has {max(ks)} episodes that "
                        f"ran ({failures['episodes']} failed to run: {failures['by_kind']}"
                        + (f"; the last with {last}" if last else "")
                        + "); fix what failed them, then rerun (into the same `out`, only "
                        "they are run again)"
                    )
                grids, n_min = _task_grids(scored, ks, ts, mode)
                entry[mode] = estimate_from_task_grids(
                    grids, ks, ts, n_per_task=n_min, n_bootstrap=n_bootstrap,
                    confidence=confidence, seed=0,
                ).to_dict()  # fmt: skip
            if failures["episodes"]:
                failures["bounds"] = {
                    mode: _failure_bounds(
                        [*members, *(_TaskTally(key, ts) for key in unrun)], self.failed,
                        ks, ts, mode, n_bootstrap=n_bootstrap, confidence=confidence,
                    )
                    for mode in modes
                }  # fmt: skip
            if len(modes) == 2:
                entry["gap"] = mode_gap(entry["truncate"], entry["rerun"])
                if failures["episodes"]:  # (each mode scores the episodes that ran in it:
                    # the gap then holds which failed, beside any budget awareness)
                    entry["gap"]["episodes_failed"] = failures["episodes"]
            groups[group] = entry
            envs = self.steps if group == ALL else [group]
            stats = _StepTotals.merged(self.steps[e] for e in envs if e in self.steps).stats()
            stats["by_optimal_length"] = _bucket_table(members, ts, modes[-1])
            scored, _ = _scorable(members, ks, ts, modes[-1])
            stats["feasibility"] = _feasibility(
                scored, ks, ts, modes[-1], n_bootstrap=n_bootstrap, confidence=confidence
            )
            stats["failed_to_run"] = failures
            analysis[group] = stats
        if self.budget is not None:  # failed-to-run episodes have no steps
            for group, table in self.budget.table().items():
                analysis[group]["by_budget"] = table
        summary = {
            "label": cfg["label"],
            "config": cfg,
            "n_episodes": self.n_episodes,
            "failed_to_run": self.failures[None].counts(),
            "groups": groups,
            "analysis": analysis,
        }
        usage = self.usage.usage()
        if usage is not None:
            summary["agent_usage"] = usage
        return summary


def summarize_run(
    config: Any,
    episodes: Iterable[Mapping[str, Any]],
    *,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    steps: Iterable[Mapping[str, Any]]
    | Callable[[list[Mapping[str, Any]]], Iterable[Mapping[str, Any]]]
    | None = None,
    checked: bool = False,
) -> dict[str, Any]:
    """The summary of one evaluation run: grids per env group and mode, and the analysis.

    Each group's analysis also gets ``by_budget`` (see `budget_analysis`) when
    the episode records carry ``budget_counts`` or ``steps`` are given.
    ``episodes`` may be any iterable (read once, one record at a time: see
    `RunTally`). ``steps``: the step records of the episodes whose records lack
    their ``budget_counts`` (older logs), or a function that reads them given
    those episodes (called only when some episode lacks them). Only those
    episodes' records are held until the steps are matched up. ``checked``: the records
    come from a run's log, whose reader checked them (`RunTally.add`).
    """
    tally = RunTally(config)
    lacking = []
    for e in episodes:
        if steps is not None and "budget_counts" not in e and not e.get("failed_to_run"):
            lacking.append(e)
        else:
            tally.add(e, checked=checked)
    if lacking:  # (a tally's summary is the same whatever the order its records came in)
        rows = steps(lacking) if callable(steps) else steps
        found = _counts_from_steps(tally.config, lacking, rows) or {}
        for e in lacking:
            tally.add(e, found.get(e["episode_id"]), checked=checked)
    return tally.summary(n_bootstrap=n_bootstrap, confidence=confidence)


def _interp_halving(ts: Sequence[int], adv: Sequence[float]) -> float | None:
    """Largest budget below max(T) at which the advantage has fallen to half its value at max(T)."""
    target = adv[-1] / 2.0
    for j in range(len(ts) - 1, 0, -1):
        hi_t, lo_t = ts[j], ts[j - 1]
        hi_a, lo_a = adv[j], adv[j - 1]
        if lo_a <= target:
            if hi_a == lo_a:
                return float(lo_t)
            return float(lo_t + (target - lo_a) * (hi_t - lo_t) / (hi_a - lo_a))
    return None


def advantage_halving_budget(
    ts: Sequence[int], better: Sequence[float], worse: Sequence[float]
) -> float | None:
    """The budget T at which ``better``'s Pass@(1,T) advantage over ``worse`` halves.

    The advantage at the largest budget is the reference; walking down the
    budgets (in any order given; each once), the first crossing of half of it is
    linearly interpolated. None when there is no advantage at max(T) or it never
    halves on the grid.

    Example:
        >>> advantage_halving_budget([10, 20, 40], [0.1, 0.5, 0.9], [0.0, 0.2, 0.1])
        24.0
    """
    rates = []
    for name, values in (("better", better), ("worse", worse)):
        values = list(values) if is_listlike(values) else values
        if not is_listlike(values) or not all(is_finite(v) and 0 <= v <= 1 for v in values):
            raise ValueError(
                f"Expect `{name}` to be a list of rates in [0, 1], got {brief(values)}"
            )
        rates.append(values)
    better, worse = rates
    if len(better) != len(worse):
        raise ValueError(
            f"Expect `better` and `worse` of one length, got {len(better)} and {len(worse)}"
        )
    adv = [b - w for b, w in zip(better, worse, strict=True)]
    ts = list(ts) if is_listlike(ts) else ts
    if is_listlike(ts) and len(ts) != len(
        adv
    ):  # (fewer budgets were an IndexError, more a quiet None)
        raise ValueError(
            f"Expect one budget in `ts` per value of `better` and `worse`, got {len(ts)} "
            f"budgets and {len(adv)} values"
        )
    if not adv:
        return None
    # (walked down from the largest budget: budgets given in another order were walked as
    # given, from the last one, and a budget given twice was two budgets)
    ts = list(check_grid_values(ts, "ts"))
    order = sorted(range(len(ts)), key=ts.__getitem__)
    ts, adv = [ts[j] for j in order], [adv[j] for j in order]
    if adv[-1] <= 0:
        return None
    return _interp_halving(ts, adv)


#: What a Pass@(K,T) grid of a summary holds (`grid_problem` checks the rest of its shape).
_GRID = {"ks": Items("count", least=1), "ts": Items("count", least=1)}
_CELLS = ("mean", "low", "high")


def grid_problem(
    grid: Any, where: str, *, cells: Sequence[str] = _CELLS, k1: bool = False
) -> str | None:
    """What is wrong with a summary's Pass@(K,T) grid (None: nothing), naming the field from
    ``where``: ``ks`` and ``ts`` distinct positive ints (with ``k1``, a K of 1), and each of
    ``cells`` a row per K of a value in [0, 1] per T.

    Example:
        >>> grid_problem({"ks": [1], "ts": [5, 9], "mean": [[0.5, 1.0]]}, "grid", cells=["mean"])
        >>> grid_problem({"ks": [1], "ts": [5, 9], "mean": [[0.5]]}, "grid", cells=["mean"])
        "Expect grid['mean'][0] to hold one value per budget in grid['ts'] (2), got 1"
    """
    problem = field_problem(grid, {**_GRID, **{c: Items(Items("number")) for c in cells}}, where)
    if problem is not None:
        return problem
    ks, ts = list(grid["ks"]), list(grid["ts"])
    for name, values in (("ks", ks), ("ts", ts)):
        if min(values) < 1 or len(set(values)) != len(values):
            return f"Expect {where}[{name!r}] to hold distinct positive ints, got {brief(values)}"
    if k1 and 1 not in ks:
        return f"Expect {where}['ks'] to hold 1 (the Pass@(1,T) row), got {brief(ks)}"
    for cell in cells:
        rows = grid[cell]
        if len(rows) != len(ks):
            return (
                f"Expect {where}[{cell!r}] to hold one row per K in {where}['ks'] ({len(ks)}), "
                f"got {len(rows)}"
            )
        for i, row in enumerate(rows):
            if len(row) != len(ts):
                return (
                    f"Expect {where}[{cell!r}][{i}] to hold one value per budget in "
                    f"{where}['ts'] ({len(ts)}), got {len(row)}"
                )
            for j, x in enumerate(row):
                if not 0 <= x <= 1:
                    return f"Expect {where}[{cell!r}][{i}][{j}] to be in [0, 1], got {brief(x)}"
    return None


def _groups_problem(groups: Any, where: str) -> str | None:
    """`field_problem`'s check of a summary's ``groups``: a grid per mode of each group."""
    for group, entry in groups.items():
        at = f"{where}[{brief(group)}]"
        if not isinstance(entry, Mapping) or not {"truncate", "rerun"} & entry.keys():
            return (
                f"Expect {at} to be a mapping with a 'truncate' or 'rerun' grid, got {brief(entry)}"
            )
        for mode in ("truncate", "rerun"):
            if mode in entry:
                problem = grid_problem(entry[mode], f"{at}[{mode!r}]", k1=True)
                if problem is not None:
                    return problem
    return None


#: What `compare_runs` (and the report's tables of runs) read of every run summary.
RUN_SUMMARY_BASE = {"config": {"ts": Items("count", least=1)}, "groups": Each("any", least=1)}


def check_run_summary(run: Any, where: str, spec: Mapping[str, Any] = RUN_SUMMARY_BASE) -> None:
    """A ValueError naming the field (its path from ``where``) when the run summary ``run``
    lacks what ``spec`` (a `turnbudget._checks.field_problem` spec) says it holds, or its
    ``groups`` are no grids over its config's budgets ``ts``."""
    problem = field_problem(run, spec, where) or _groups_problem(
        run["groups"], f"{where}['groups']"
    )
    if problem is None:
        ts = list(run["config"]["ts"])
        for group, entry in run["groups"].items():
            for mode in ("truncate", "rerun"):
                if mode in entry and list(entry[mode]["ts"]) != ts:
                    problem = (
                        f"Expect {where}['groups'][{brief(group)}][{mode!r}]['ts'] to be the "
                        f"budgets of {where}['config']['ts'], {brief(ts)}, "
                        f"got {brief(entry[mode]['ts'])}"
                    )
                    break
    if problem is not None:
        raise ValueError(problem)


def _check_runs(runs: Any, where: str, spec: Mapping[str, Any] = RUN_SUMMARY_BASE) -> None:
    """`check_run_summary` of each run of ``runs``, a mapping of str labels to run summaries."""
    if not isinstance(runs, Mapping):
        raise ValueError(
            f"Expect `{where}` to be a mapping of run labels to run summaries, got {brief(runs)}"
        )
    for label, run in runs.items():
        if not isinstance(label, str):
            raise ValueError(f"Expect the labels of `{where}` to be str, got {brief(label)}")
        check_run_summary(run, f"{where}[{brief(label)}]", spec)


def _condition(cfg: Mapping[str, Any]) -> str:
    """What makes two runs comparable, as written however they were given: envs and tasks in
    any order, errors and reveal as the wrappers read them (``0.1``, ``{"rate": 0.1}`` and
    ``0.10`` are one setting; a rate of 0 with no schedule and ``reveal="never"`` are no
    setting at all, as None is); a team game's difficulty and what counts as its success;
    the budgets as they are (their cells are compared in order)."""
    condition: dict[str, Any] = {"n": cfg.get("n"), "ts": cfg.get("ts")}
    for key in ("envs", "tasks"):
        value = cfg.get(key)
        condition[key] = sorted(value, key=str) if is_listlike(value) else value
    for key in ("difficulty", "success"):  # (a team run's: its envs name only the game)
        if key in cfg:
            condition[key] = cfg[key]
    try:
        from turnbudget.wrappers.stack import plan_stack

        layers = plan_stack(errors=cfg.get("errors"), reveal=cfg.get("reveal")).layers
        condition["wrappers"] = [
            [layer.wrapper.__name__, _as_floats(kwargs)]
            for layer, kwargs in layers
            if not _changes_nothing(layer.wrapper.__name__, kwargs)
        ]
    except (TypeError, ValueError):  # (a hand-made summary's setting: compared as written)
        condition["errors"], condition["reveal"] = cfg.get("errors"), cfg.get("reveal")
    return json.dumps(condition, sort_keys=True, default=str)


def _changes_nothing(wrapper: str, kwargs: Mapping[str, Any]) -> bool:
    """Whether a layer of `_condition` plays as its absence: errors at rate 0 with no schedule,
    or a budget revealed never."""
    if wrapper == "InjectErrors":
        return kwargs.get("rate", None) == 0 and not kwargs.get("schedule")
    return wrapper == "RevealBudget" and kwargs.get("mode") == "never"


def _as_floats(value: Any) -> Any:
    """``value`` with every int a float (``{"rate": 0}`` and ``{"rate": 0.0}`` are one setting)."""
    if isinstance(value, Mapping):
        return {k: _as_floats(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_floats(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def compare_runs(
    runs: Mapping[str, Mapping[str, Any]], min_advantage: float = 0.05
) -> list[dict[str, Any]]:
    """Pairwise Pass@(1,T) advantages between runs made under the same conditions.

    Runs are comparable when they share envs, tasks, budgets, n, errors and
    reveal. For each pair whose Pass@(1,T) curves (group "all", or the only
    env) differ by at least ``min_advantage`` somewhere, the *better* run is
    the one with the larger mean Pass@(1,T) over the budgets; the row gives
    its advantage at every T, at max(T) and at its peak, and the budget at
    which the advantage at max(T) halves (None when there is none at max(T),
    e.g. both runs saturate, or it never halves on the grid).

    Each advantage comes with its interval at the runs' confidence (95% unless they were
    summarized at another; runs at different levels are refused) (``advantage_interval_by_t``,
    ``advantage_at_max_t_interval``): `difference_interval` of the two cells'
    own intervals, conservative for runs on the same tasks (their cells are
    positively correlated). ``clear_at_max_t`` says whether the interval at
    max(T), the budget fixed before the data, lies above 0: the higher mean
    alone is no finding (two seeds of one agent differ too). ``lower_at_max_t`` says
    whether it lies below 0: the curves cross, and the run with the lower mean is the one
    clearly ahead at max(T). Where episodes failed to run (they may follow the outcome: an
    agent that raises when it is losing), either holds only if the run found ahead, with
    them counted as losses, is still clearly above the other with them counted as
    successes (their ``bounds``; ``bounded_by_failures`` says so).

    Raises:
        ValueError: ``runs`` is no mapping of labels to run summaries, or a summary lacks
            what is compared (`check_run_summary`: its config's ``ts``, and in each group a
            grid with a K = 1 row over those budgets), naming the run and the field.
    """
    _check_runs(runs, "runs")
    if not is_finite(min_advantage) or not 0 <= min_advantage <= 1:
        raise ValueError(
            f"Expect `min_advantage` to be a number in [0, 1], got {brief(min_advantage)}"
        )
    rows = []
    labels = sorted(runs)
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            ra, rb = runs[a], runs[b]
            if _condition(ra["config"]) != _condition(rb["config"]):
                continue
            group = ALL if ALL in ra["groups"] else next(iter(ra["groups"]))
            if group not in rb["groups"]:  # (the same envs make the same groups)
                raise ValueError(
                    f"Expect runs[{brief(b)}]['groups'] to hold the group {brief(group)}, as "
                    f"runs[{brief(a)}]['groups'] does (runs made under the same conditions), "
                    f"got {brief(list(rb['groups']))}"
                )
            _check_same_confidence(ra, rb, a, b, group)
            ts = ra["config"]["ts"]
            pa = _pass1(ra["groups"][group])
            pb = _pass1(rb["groups"][group])
            ca, cb = _pass1_cells(ra["groups"][group]), _pass1_cells(rb["groups"][group])
            if sum(pa) >= sum(pb):
                better, worse, p_better, p_worse, c_better, c_worse = a, b, pa, pb, ca, cb
            else:
                better, worse, p_better, p_worse, c_better, c_worse = b, a, pb, pa, cb, ca
            adv = [x - y for x, y in zip(p_better, p_worse, strict=True)]
            peak = max(range(len(ts)), key=lambda j: adv[j])
            if max(map(abs, adv)) < min_advantage:  # (either way: curves that cross too)
                continue
            intervals = [
                [round(low, 6), round(high, 6)]
                for _, low, high in map(difference_interval, c_better, c_worse)
            ]
            last = ts.index(max(ts))  # (the budgets in the config's order: not always sorted)
            # Episodes that failed to run may follow the outcome (an agent that raises when it
            # is losing): then "clear" holds only for the better run with them as losses and
            # the worse with them as successes (each run's bounds, where it has them).
            low_better = _bounded_cells(runs[better], group, "as_losses") or c_better
            high_worse = _bounded_cells(runs[worse], group, "as_successes") or c_worse
            bounded = low_better is not c_better or high_worse is not c_worse
            clear = difference_interval(low_better[last], high_worse[last])[1] > 0
            # Curves that cross: the run with the lower mean may be the one clearly ahead at
            # max(T), judged the same way from its side (the row said no clear difference).
            low_worse = _bounded_cells(runs[worse], group, "as_losses") or c_worse
            high_better = _bounded_cells(runs[better], group, "as_successes") or c_better
            bounded_lower = low_worse is not c_worse or high_better is not c_better
            lower = intervals[last][1] < 0 and (
                difference_interval(low_worse[last], high_better[last])[1] > 0
            )
            rows.append(
                {
                    "better": better,
                    "worse": worse,
                    "group": group,
                    "advantage_by_t": {str(t): round(x, 6) for t, x in zip(ts, adv, strict=True)},
                    "advantage_interval_by_t": dict(zip(map(str, ts), intervals, strict=True)),
                    "advantage_at_max_t": round(adv[last], 6),
                    "advantage_at_max_t_interval": intervals[last],
                    "clear_at_max_t": intervals[last][0] > 0 and clear,
                    "lower_at_max_t": lower,
                    "bounded_by_failures": bounded_lower if lower else bounded,
                    "peak_advantage": round(adv[peak], 6),
                    "peak_t": ts[peak],
                    "halving_budget": advantage_halving_budget(ts, p_better, p_worse),
                }
            )
    return rows


def _check_same_confidence(
    ra: Mapping[str, Any], rb: Mapping[str, Any], a: str, b: str, group: str
) -> None:
    """Both runs' Pass@(1,T) intervals at one confidence: the verdicts read them as they are,
    so runs summarized at other levels are refused (at 0.5, the same agent was clearly ahead
    of itself). A grid that does not say holds 95% intervals, `summarize_run`'s default."""
    levels = []
    for label, run in ((a, ra), (b, rb)):
        entry = run["groups"][group]
        grid = entry["rerun"] if "rerun" in entry else entry["truncate"]
        level = grid.get("confidence", 0.95) if isinstance(grid, Mapping) else 0.95
        if not is_finite(level) or not 0 < level < 1:
            raise ValueError(
                f"Expect runs[{brief(label)}]'s grid confidence to be a number in (0, 1), "
                f"got {brief(level)}"
            )
        levels.append(float(level))
    if abs(levels[0] - levels[1]) > 1e-9:
        raise ValueError(
            f"Expect runs summarized at one confidence to be compared, got "
            f"runs[{brief(a)}] at {levels[0]:g} and runs[{brief(b)}] at {levels[1]:g} "
            "(summarize both at the same level)"
        )


def _pass1_cells(entry: Mapping[str, Any]) -> list[tuple[float, float, float]]:
    """``(mean, low, high)`` of each Pass@(1,T) cell (`_pass1`'s, with their intervals)."""
    grid = entry["rerun"] if "rerun" in entry else entry["truncate"]
    row = grid["ks"].index(1)
    return list(zip(grid["mean"][row], grid["low"][row], grid["high"][row], strict=True))


def _bounded_cells(
    run: Mapping[str, Any], group: str, bound: str
) -> list[tuple[float, float, float]] | None:
    """`_pass1_cells` of a run's ``bound`` (``as_losses`` or ``as_successes``) in ``group``,
    in the mode its grids are read in; None when its episodes all ran (or the summary is
    older than the bounds)."""
    try:
        failed = run["analysis"][group]["failed_to_run"]
        if not failed.get("episodes"):
            return None
        mode = "rerun" if "rerun" in run["groups"][group] else "truncate"
        grid = failed["bounds"][mode][bound]
        cells = _pass1_cells({mode: grid})
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    # (only a bound over the run's own budgets, of finite rates: else it is not read)
    if grid["ts"] != run["config"]["ts"] or not all(
        all(is_finite(x) for x in cell) for cell in cells
    ):
        return None
    return cells


def _pass1(entry: Mapping[str, Any]) -> list[float]:
    grid = entry["rerun"] if "rerun" in entry else entry["truncate"]
    return list(grid["mean"][grid["ks"].index(1)])
