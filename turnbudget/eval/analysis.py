"""From episode records to Pass@(K,T) grids and the single-step / recovery analysis.

Everything here is computed from the episode records alone (so ``turnbudget
report`` can rebuild it from ``episodes.jsonl``), from integer counts, in a
fixed order (so results do not depend on how episodes were scheduled).

The definitions are `RecordStepOutcomes`'s (the per-step records carry the
same judgement in ``optimal``, ``error_self`` and ``phase``):

- a step is *optimal* when the agent's command starts a shortest plan;
- an *error* is an injected error or a step whose own command increased the
  distance to goal (*self-inflicted*); a distance-increasing error is
  *recovered* once the distance is back to its value before the error;
- a step is *on track* when no error is open, *right after an error* when the
  previous turn had one.

Rates are pooled over steps (hits / steps over all episodes of a group).
The step analysis uses the runs at ``max(ts)`` (in rerun mode the other runs
only feed the grid), so it describes the agent with its most generous budget.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from turnbudget.eval.estimator import estimate_from_task_grids, pass_at_kt

__all__ = [
    "ALL",
    "advantage_halving_budget",
    "compare_runs",
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
        "errors_self": n_self,
        "errors_injected": n_injected,
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


def summarize_run(
    config: Any,
    episodes: Sequence[Mapping[str, Any]],
    *,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """The summary of one evaluation run: grids per env group and mode, and the analysis."""
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
    at_max = [e for e in episodes if int(e["turn_budget"]) == t_max]
    groups: dict[str, Any] = {}
    analysis: dict[str, Any] = {}
    for group in _groups(cfg["envs"]):
        members = [e for e in episodes if _in_group(e, group)]
        entry: dict[str, Any] = {}
        for mode in modes:
            grids, n_min = task_grid_arrays(members, ks, ts, mode)
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
        analysis[group] = stats
    summary = {
        "label": cfg["label"],
        "config": cfg,
        "n_episodes": len(episodes),
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
