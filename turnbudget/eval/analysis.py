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
out of the grid, listed under ``tasks_dropped``.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from turnbudget.eval.estimator import estimate_from_task_grids, pass_at_kt
from turnbudget.records import BUDGET_COUNTERS

__all__ = [
    "ALL",
    "RATIO_BINS",
    "advantage_halving_budget",
    "budget_analysis",
    "budget_counts",
    "compare_runs",
    "failure_counts",
    "feasibility_analysis",
    "length_buckets",
    "mode_gap",
    "step_stats",
    "summarize_run",
    "task_grid_arrays",
]

#: The group name for all envs of a run together.
ALL = "all"


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
    episodes: Sequence[Mapping[str, Any]], ks: Sequence[int], ts: Sequence[int], mode: str
) -> tuple[np.ndarray, int]:
    """Per-task grids ``(n_tasks, len(ks), len(ts))`` and the fewest episodes of any task.

    ``truncate`` scores the runs at ``max(ts)`` at every T by their first-success
    turn; ``rerun`` scores column T by the runs made with budget T.
    """
    by_task: dict[tuple[str, int], dict[int, list[int | None]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for e in episodes:
        by_task[(e["env_id"], int(e["seed"]))][int(e["turn_budget"])].append(_fst(e))
    if not by_task:
        raise ValueError("Expect episode records, got none")
    t_max = max(ts)
    grids, n_min = [], None
    for key in sorted(by_task):
        runs = by_task[key]
        if mode == "truncate":
            fst = runs.get(t_max, [])
            grid = pass_at_kt(fst, ks, ts)
            counts = [len(fst)]
        elif mode == "rerun":
            grid = np.concatenate([pass_at_kt(runs.get(t, []), ks, [t]) for t in ts], axis=1)
            counts = [len(runs.get(t, [])) for t in ts]
        else:
            raise ValueError(f"Expect mode `truncate` or `rerun`, got {mode!r}")
        grids.append(grid)
        n_min = min(counts) if n_min is None else min(n_min, *counts)
    return np.stack(grids), int(n_min or 0)


def _scorable(
    episodes: Sequence[Mapping[str, Any]], ks: Sequence[int], ts: Sequence[int], mode: str
) -> tuple[list[Mapping[str, Any]], list[str]]:
    """The episodes of tasks with at least ``max(ks)`` runs where the mode needs them, and the
    tasks (``"env_id|seed=S"``) left out for having fewer (some of their episodes failed to run)."""
    need = (max(ts),) if mode == "truncate" else tuple(ts)
    counts: dict[tuple[str, int], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for e in episodes:
        counts[(e["env_id"], int(e["seed"]))][int(e["turn_budget"])] += 1
    short = {key for key, by_t in counts.items() if min(by_t.get(t, 0) for t in need) < max(ks)}
    kept = [e for e in episodes if (e["env_id"], int(e["seed"])) not in short]
    return kept, [f"{env}|seed={seed}" for env, seed in sorted(short)]


def failure_counts(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """How many episodes failed to run, by kind (``exception``, ``worker_lost``, ``timeout``)."""
    failed = [e for e in episodes if e.get("failed_to_run")]
    kinds: dict[str, int] = defaultdict(int)
    for e in failed:
        kinds[str(e.get("failure", "unknown"))] += 1
    return {"episodes": len(failed), "by_kind": dict(sorted(kinds.items()))}


def mode_gap(truncate: Mapping[str, Any], rerun: Mapping[str, Any]) -> dict[str, Any]:
    """Rerun minus truncate, cell by cell (the bias of scoring a budget-aware agent by truncation)."""
    diff = np.asarray(rerun["mean"]) - np.asarray(truncate["mean"])
    return {
        "rerun_minus_truncate": np.round(diff, 6).tolist(),
        "max_abs": round(float(np.abs(diff).max()), 6),
        "mean_abs": round(float(np.abs(diff).mean()), 6),
    }


def length_buckets(initial_distances: Iterable[int], n_buckets: int = 3) -> list[tuple[int, int]]:
    """Split optimal-solution lengths into up to ``n_buckets`` ranges ``(lo, hi)`` by quantile."""
    values = np.array(sorted({int(d) for d in initial_distances if d is not None}))
    if values.size == 0:
        return []
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
    episodes: Sequence[Mapping[str, Any]], ts: Sequence[int], mode: str
) -> list[dict[str, Any]]:
    """Pass@(1,T) by optimal-solution-length bucket: from the runs at max(T) by first
    success (truncate), or from the runs made at each T (rerun, exact for any agent)."""
    t_max = max(ts)
    length = {
        (e["env_id"], e["seed"]): e.get("initial_distance")
        for e in episodes
        if e.get("initial_distance") is not None
    }
    rows = []
    for lo, hi in length_buckets(length.values()):
        members = [
            e
            for e in episodes
            if length.get((e["env_id"], e["seed"])) is not None
            and lo <= length[(e["env_id"], e["seed"])] <= hi
        ]
        rates = {}
        for t in ts:
            if mode == "truncate":
                runs = [_fst(e) for e in members if int(e["turn_budget"]) == t_max]
                hits = sum(f is not None and f <= t for f in runs)
            else:
                runs = [_fst(e) for e in members if int(e["turn_budget"]) == t]
                hits = sum(f is not None for f in runs)
            rates[str(t)] = round(hits / len(runs), 6) if runs else None
        rows.append(
            {
                "optimal_length": [lo, hi],
                "tasks": sum(lo <= d <= hi for d in length.values()),
                "episodes": sum(int(e["turn_budget"]) == t_max for e in members),
                "success_rate": rates,
            }
        )
    return rows


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 6) if den else None


#: The bins of the budget in units of the optimal length, c = T / d*: ``[lo, hi)``. Below 1
#: no agent can succeed (errors only add turns); the budgets of the native games' defaults
#: sit near 2-6.
RATIO_BINS: tuple[tuple[float, float], ...] = (
    (0.0, 1.0), (1.0, 1.25), (1.25, 1.5), (1.5, 2.0), (2.0, 3.0), (3.0, float("inf")),
)  # fmt: skip


def _optimal_lengths(episodes: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int], int]:
    """Each task's optimal solution length d* (> 0) where the records give it."""
    lengths: dict[tuple[str, int], int] = {}
    for e in episodes:
        d = e.get("initial_distance")
        if d is not None and int(d) > 0:
            lengths[(e["env_id"], int(e["seed"]))] = int(d)
    return lengths


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
    - ``step_regret``: over successful episodes, turns to success minus d*.

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
    lengths = _optimal_lengths(episodes)
    known = [e for e in episodes if (e["env_id"], int(e["seed"])) in lengths]
    if not known:
        return None
    grids, n_min = task_grid_arrays(known, ks, ts, mode)
    keys = sorted({(e["env_id"], int(e["seed"])) for e in known})  # task_grid_arrays' order
    d_star = np.array([lengths[key] for key in keys], dtype=np.float64)
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
    regrets = [
        fst - lengths[(e["env_id"], int(e["seed"]))] for e in known if (fst := _fst(e)) is not None
    ]
    return {
        "ks": [int(k) for k in ks],
        "ts": [int(t) for t in ts],
        "tasks": len(keys),
        "feasible_tasks": [entry["tasks"] for entry in feasible],
        "feasible": feasible,
        "by_ratio": by_ratio,
        "step_regret": {
            "successes": len(regrets),
            "mean": round(float(np.mean(regrets)), 6) if regrets else None,
            "median": float(np.median(regrets)) if regrets else None,
            "max": int(max(regrets)) if regrets else None,
        },
    }


def _hits(rate: float | None, judged: int) -> int:
    """The integer count behind a rate the recorder stored as hits / judged."""
    return 0 if rate is None or not judged else round(float(rate) * judged)


def step_stats(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The single-step and recovery statistics of one group of episode records.

    Rates are pooled over steps (total hits / total steps), not averaged over
    episodes, and built from integer counts, so they do not depend on order.
    """
    judged = on_track = after_error = 0
    hits = hits_on_track = hits_after_error = 0
    for e in episodes:
        n_on = int(e.get("n_steps_on_track") or 0)
        n_after = int(e.get("n_steps_after_error") or 0)
        on_track += n_on
        after_error += n_after
        if "n_steps_judged" in e:  # the recorder's integer counts
            judged += int(e["n_steps_judged"])
            hits += int(e["n_optimal_steps"])
            hits_on_track += int(e["n_optimal_on_track"])
            hits_after_error += int(e["n_optimal_after_error"])
        else:  # older records: only the rates (hits / steps) were stored
            n = int(e["turns_used"]) if e.get("optimal_step_rate") is not None else 0
            judged += n
            hits += _hits(e.get("optimal_step_rate"), n)
            hits_on_track += _hits(e.get("optimal_step_rate_on_track"), n_on)
            hits_after_error += _hits(e.get("optimal_step_rate_after_error"), n_after)
    turns = sum(int(e["turns_used"]) for e in episodes)
    n_self = sum(int(e.get("n_errors_self") or 0) for e in episodes)
    n_injected = sum(int(e.get("n_errors_injected") or 0) for e in episodes)
    n_injected_up = sum(int(e.get("n_errors_injected_increasing") or 0) for e in episodes)
    n_wasted = sum(int(e.get("n_wasted") or 0) for e in episodes)
    n_invalid = sum(int(e.get("n_invalid") or 0) for e in episodes)
    n_recovered = sum(int(e.get("n_recovered") or 0) for e in episodes)
    n_unrecovered = sum(int(e.get("n_unrecovered") or 0) for e in episodes)
    recover = sorted(int(t) for e in episodes for t in (e.get("turns_to_recover") or ()))
    return {
        "episodes": len(episodes),
        "turns": turns,
        "success_rate": _rate(sum(bool(e.get("success")) for e in episodes), len(episodes)),
        "optimal_step_rate": _rate(hits, judged),
        "optimal_step_rate_on_track": _rate(hits_on_track, on_track),
        "optimal_step_rate_after_error": _rate(hits_after_error, after_error),
        "steps_judged": judged,
        "steps_on_track": on_track,
        "steps_after_error": after_error,
        "self_error_rate": _rate(n_self, turns),
        "injected_error_rate": _rate(n_injected, turns),
        "wasted_rate": _rate(n_wasted, turns),
        "invalid_rate": _rate(n_invalid, turns),
        "errors_self": n_self,
        "errors_injected": n_injected,
        "errors_injected_increasing": n_injected_up,
        "wasted": n_wasted,
        "invalid": n_invalid,
        "recovered": n_recovered,
        "unrecovered": n_unrecovered,
        "recovery_rate": _rate(n_recovered, n_recovered + n_unrecovered),
        "turns_to_recover_mean": round(float(np.mean(recover)), 6) if recover else None,
        "turns_to_recover_median": float(np.median(recover)) if recover else None,
        "turns_to_recover": recover,
    }


def agent_usage(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Totals of the agents' own step accounts (an LLM's tokens, latency, retries) over
    episodes, with per-step means; None when no episode carries any.

    Example:
        >>> agent_usage([{"agent": {"steps": 2, "tokens_in": 10, "admissible": 2}},
        ...              {"agent": {"steps": 2, "tokens_in": 30, "admissible": 1}}])
        {'steps': 4, 'tokens_in': 40, 'admissible': 3, 'tokens_in_per_step': 10.0, 'admissible_rate': 0.75}
    """
    totals: dict[str, Any] = {}
    for e in episodes:
        for key, value in (e.get("agent") or {}).items():
            totals[key] = totals.get(key, 0) + value
    if not totals.get("steps"):
        return None
    totals = {k: round(v, 6) if isinstance(v, float) else v for k, v in totals.items()}
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

    The engine stores this in each episode record (``budget_counts``), so the
    per-budget analysis needs only ``episodes.jsonl``; `budget_analysis` falls
    back to the step records for logs written without it.

    Example:
        >>> steps = [{"turn": 1, "optimal": True, "phase": "on_track", "valid_action": True},
        ...          {"turn": 2, "optimal": False, "phase": "on_track", "wasted": True}]
        >>> budget_counts(steps, [1, 8])["8"][:5]
        [2, 2, 1, 2, 1]
    """
    width = len(BUDGET_COUNTERS)
    rows = sorted(steps, key=lambda s: s["turn"])
    turns = [s["turn"] for s in rows]
    counts = np.array([_step_counts(s) for s in rows], dtype=np.int64).reshape(-1, width)
    cumulative = np.cumsum(counts, axis=0)
    out = {}
    for t in ts:
        upto = int(np.searchsorted(turns, int(t), side="right"))
        snapshot = cumulative[upto - 1] if upto else np.zeros(width, dtype=np.int64)
        out[str(int(t))] = [int(x) for x in snapshot]
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
    ts = sorted(int(t) for t in config["ts"])
    t_max = ts[-1]
    truncate = config["mode"] == "truncate"
    groups = _groups(config["envs"])
    counts: dict[str, Mapping[str, Sequence[int]]] = {
        e["episode_id"]: e["budget_counts"] for e in episodes if "budget_counts" in e
    }
    if len(counts) < len(episodes):
        if steps is None:
            return None
        by_id = {e["episode_id"] for e in episodes}
        for episode_id, rows in itertools.groupby(steps, key=lambda s: s["episode_id"]):
            if episode_id in by_id and episode_id not in counts:
                counts[episode_id] = budget_counts(list(rows), ts)
    width = len(BUDGET_COUNTERS)
    sums = {
        (g, t, o): np.zeros(width, dtype=np.int64) for g in groups for t in ts for o in _OUTCOMES
    }
    n_eps = dict.fromkeys(sums, 0)
    for e in episodes:
        budget = int(e["turn_budget"])
        targets = (ts if budget == t_max else []) if truncate else [budget] if budget in ts else []
        fst = _fst(e)
        for t in targets:
            snapshot = np.asarray(counts[e["episode_id"]][str(t)], dtype=np.int64)
            outcome = "success" if fst is not None and fst <= t else "failure"
            for g in groups:
                if _in_group(e, g):
                    for o in ("all", outcome):
                        sums[(g, t, o)] += snapshot
                        n_eps[(g, t, o)] += 1
    return {
        g: {
            str(t): {o: _budget_stats(sums[(g, t, o)], n_eps[(g, t, o)]) for o in _OUTCOMES}
            for t in ts
        }
        for g in groups
    }


def summarize_run(
    config: Any,
    episodes: Sequence[Mapping[str, Any]],
    *,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    steps: Iterable[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The summary of one evaluation run: grids per env group and mode, and the analysis.

    Each group's analysis also gets ``by_budget`` (see `budget_analysis`) when
    the episode records carry ``budget_counts`` or ``steps`` are given.
    """
    cfg = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    ks, ts = list(cfg["ks"]), list(cfg["ts"])
    t_max = max(ts)
    modes = ["truncate", "rerun"] if cfg["mode"] == "both" else [cfg["mode"]]
    episodes = sorted(episodes, key=lambda e: e["episode_id"])
    expected = (
        len(cfg["envs"])
        * len(cfg["tasks"])
        * cfg["n"]
        * (1 if cfg["mode"] == "truncate" else len(ts))
    )
    if len(episodes) != expected:
        raise ValueError(
            f"Run {cfg['label']!r} has {len(episodes)} episode records, expected {expected}: "
            "it is incomplete (rerun the same command to resume it)"
        )
    ran = [e for e in episodes if not e.get("failed_to_run")]
    at_max = [e for e in ran if int(e["turn_budget"]) == t_max]
    groups: dict[str, Any] = {}
    analysis: dict[str, Any] = {}
    for group in _groups(cfg["envs"]):
        members = [e for e in ran if _in_group(e, group)]
        failures = failure_counts([e for e in episodes if _in_group(e, group)])
        failures["tasks_dropped"] = {}
        entry: dict[str, Any] = {}
        for mode in modes:
            scored, dropped = _scorable(members, ks, ts, mode)
            failures["tasks_dropped"][mode] = dropped
            if not scored:
                raise ValueError(
                    f"Run {cfg['label']!r}: no task of {group!r} has {max(ks)} episodes that ran "
                    f"({failures['episodes']} failed to run: {failures['by_kind']}); rerun the "
                    "same command to retry them"
                )
            grids, n_min = task_grid_arrays(scored, ks, ts, mode)
            entry[mode] = estimate_from_task_grids(
                grids,
                ks,
                ts,
                n_per_task=n_min,
                n_bootstrap=n_bootstrap,
                confidence=confidence,
                seed=0,
            ).to_dict()
        if len(modes) == 2:
            entry["gap"] = mode_gap(entry["truncate"], entry["rerun"])
        groups[group] = entry
        group_at_max = [e for e in at_max if _in_group(e, group)]
        stats = step_stats(group_at_max)
        stats["by_optimal_length"] = _bucket_table(members, ts, modes[-1])
        scored, _ = _scorable(members, ks, ts, modes[-1])
        stats["feasibility"] = feasibility_analysis(
            scored, ks, ts, modes[-1], n_bootstrap=n_bootstrap, confidence=confidence
        )
        stats["failed_to_run"] = failures
        analysis[group] = stats
    by_budget = budget_analysis(cfg, ran, steps)  # failed-to-run episodes have no steps
    for group, table in (by_budget or {}).items():
        analysis[group]["by_budget"] = table
    summary = {
        "label": cfg["label"],
        "config": cfg,
        "n_episodes": len(episodes),
        "failed_to_run": failure_counts(episodes),
        "groups": groups,
        "analysis": analysis,
    }
    usage = agent_usage(episodes)
    if usage is not None:
        summary["agent_usage"] = usage
    return summary


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
    budgets, the first crossing of half of it is linearly interpolated. None
    when there is no advantage at max(T) or it never halves on the grid.

    Example:
        >>> advantage_halving_budget([10, 20, 40], [0.1, 0.5, 0.9], [0.0, 0.2, 0.1])
        24.0
    """
    adv = [b - w for b, w in zip(better, worse, strict=True)]
    if not adv or adv[-1] <= 0:
        return None
    return _interp_halving(list(ts), adv)


def _condition(cfg: Mapping[str, Any]) -> str:
    return json.dumps(
        {k: cfg.get(k) for k in ("envs", "tasks", "ts", "errors", "reveal", "n")}, sort_keys=True
    )


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
    """
    rows = []
    labels = sorted(runs)
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            ra, rb = runs[a], runs[b]
            if _condition(ra["config"]) != _condition(rb["config"]):
                continue
            group = ALL if ALL in ra["groups"] else next(iter(ra["groups"]))
            ts = ra["config"]["ts"]
            pa = _pass1(ra["groups"][group])
            pb = _pass1(rb["groups"][group])
            if sum(pa) >= sum(pb):
                better, worse, p_better, p_worse = a, b, pa, pb
            else:
                better, worse, p_better, p_worse = b, a, pb, pa
            adv = [x - y for x, y in zip(p_better, p_worse, strict=True)]
            peak = max(range(len(ts)), key=lambda j: adv[j])
            if adv[peak] < min_advantage:
                continue
            rows.append(
                {
                    "better": better,
                    "worse": worse,
                    "group": group,
                    "advantage_by_t": {str(t): round(x, 6) for t, x in zip(ts, adv, strict=True)},
                    "advantage_at_max_t": round(adv[-1], 6),
                    "peak_advantage": round(adv[peak], 6),
                    "peak_t": ts[peak],
                    "halving_budget": advantage_halving_budget(ts, p_better, p_worse),
                }
            )
    return rows


def _pass1(entry: Mapping[str, Any]) -> list[float]:
    grid = entry["rerun"] if "rerun" in entry else entry["truncate"]
    return list(grid["mean"][grid["ks"].index(1)]) if 1 in grid["ks"] else list(grid["mean"][0])
