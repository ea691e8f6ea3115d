"""Every number of the report, recomputed from ``steps.jsonl`` (and ``run.json``) alone.

This recomputation shares no code with `turnbudget.eval.analysis`: it reads the
per-step records, rebuilds each episode (first success, budget, outcome),
the Pass@(K,T) grids with ``math.comb``, the step analysis at max(T) and at
every T, the length buckets, the feasibility tables (Pass@(K,T) over the tasks
with d* <= T, by T / d*, the step regret) and the pairwise advantages, and compares them
with ``summary.json``, key by key. Only the bootstrap intervals reuse the
estimator (`estimate_from_task_grids`, tested on its own) on the grids
recomputed here.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from turnbudget.agents import OracleAgent, RandomAgent
from turnbudget.eval.estimator import estimate_from_task_grids
from turnbudget.eval.report import build_report
from turnbudget.eval.run.evaluate import evaluate

ENVS = ["turnbudget/Maze-Medium-v0", "turnbudget/KeyQuest-Medium-v0"]
ALL = "all"


def r6(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def rate(a: int, b: int) -> float | None:
    return round(a / b, 6) if b else None


def load_episodes(run: Path) -> list[dict[str, Any]]:
    steps: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in (run / "steps.jsonl").read_text().splitlines():
        s = json.loads(line)
        steps[s["episode_id"]].append(s)
    episodes = []
    for eid, rows in sorted(steps.items()):
        rows.sort(key=lambda s: s["turn"])
        won = [s["turn"] for s in rows if s["won"]]
        episodes.append(
            {
                "id": eid, "env": rows[0]["env_id"], "seed": rows[0]["seed"],
                "budget": rows[0]["turn_budget"], "fst": won[0] if won else None, "steps": rows,
            }
        )  # fmt: skip
    return episodes


def pass_k(n: int, c: int, k: int) -> float:
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def grids(config: dict, episodes: list[dict], mode: str) -> tuple[np.ndarray, int]:
    ks, ts = config["ks"], config["ts"]
    tasks: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for e in episodes:
        tasks[(e["env"], e["seed"])].append(e)
    out, n_min = [], 10**9
    for key in sorted(tasks):
        grid = np.zeros((len(ks), len(ts)))
        for j, t in enumerate(ts):
            if mode == "truncate":
                runs = [e for e in tasks[key] if e["budget"] == max(ts)]
                c = sum(e["fst"] is not None and e["fst"] <= t for e in runs)
            else:
                runs = [e for e in tasks[key] if e["budget"] == t]
                c = sum(e["fst"] is not None for e in runs)
            n_min = min(n_min, len(runs))
            for i, k in enumerate(ks):
                grid[i, j] = pass_k(len(runs), c, k)
        out.append(grid)
    return np.stack(out), n_min


def step_table(episodes: list[dict], cut: int | None = None) -> dict[str, Any]:
    """The step analysis of some episodes (their first ``cut`` turns when given)."""
    c: dict[str, Any] = defaultdict(int)
    recover: list[int] = []
    for e in episodes:
        for s in e["steps"]:
            if cut is not None and s["turn"] > cut:
                break
            c["turns"] += 1
            if s["optimal"] is not None:
                c["judged"] += 1
                c["hits"] += s["optimal"]
                for phase in ("on_track", "after_error"):
                    if s["phase"] == phase:
                        c[phase] += 1
                        c[f"hits_{phase}"] += s["optimal"]
            applied = bool(s["injected_error"]) and s["injected_error"].get("applied", True)
            c["injected"] += applied
            c["injected_up"] += applied and s["injection_increased"]
            c["self"] += s["error_self"]
            c["wasted"] += s["wasted"]
            c["invalid"] += not s["valid_action"]
            c["opened"] += s["errors_opened"]
            recover += s["recoveries"]
    recovered = len(recover)
    return {
        "turns": c["turns"],
        "optimal_step_rate": rate(c["hits"], c["judged"]),
        "optimal_step_rate_on_track": rate(c["hits_on_track"], c["on_track"]),
        "optimal_step_rate_after_error": rate(c["hits_after_error"], c["after_error"]),
        "steps_judged": c["judged"],
        "steps_on_track": c["on_track"],
        "steps_after_error": c["after_error"],
        "self_error_rate": rate(c["self"], c["turns"]),
        "injected_error_rate": rate(c["injected"], c["turns"]),
        "wasted_rate": rate(c["wasted"], c["turns"]),
        "invalid_rate": rate(c["invalid"], c["turns"]),
        "errors_self": c["self"],
        "errors_injected": c["injected"],
        "errors_injected_increasing": c["injected_up"],
        "wasted": c["wasted"],
        "invalid": c["invalid"],
        "recovered": recovered,
        "unrecovered": c["opened"] - recovered,
        "recovery_rate": rate(recovered, c["opened"]),
        "turns_to_recover": sorted(recover),
    }


def buckets(lengths: list[int]) -> list[tuple[int, int]]:
    values = np.array(sorted(set(lengths)))
    edges = np.unique(np.quantile(values, np.linspace(0, 1, 4), method="lower"))
    out, lo = [], int(values[0])
    for hi in edges[1:-1]:
        if int(hi) >= lo:
            out.append((lo, int(hi)))
            lo = int(hi) + 1
    if lo <= values[-1]:
        out.append((lo, int(values[-1])))
    return out


def recompute_run(run: Path) -> dict[str, Any]:
    config = json.loads((run / "run.json").read_text())
    episodes = load_episodes(run)
    ts, t_max = config["ts"], max(config["ts"])
    modes = ["truncate", "rerun"] if config["mode"] == "both" else [config["mode"]]
    groups = [*config["envs"], ALL] if len(config["envs"]) > 1 else config["envs"]
    out: dict[str, Any] = {"groups": {}, "analysis": {}, "task_grids": {}}
    for g in groups:
        members = [e for e in episodes if g == ALL or e["env"] == g]
        out["groups"][g] = {}
        for mode in modes:
            task_grids, n_min = grids(config, members, mode)
            out["task_grids"][(g, mode)] = (task_grids, n_min)
            out["groups"][g][mode] = {"mean": np.round(task_grids.mean(axis=0), 6).tolist()}
        at_max = [e for e in members if e["budget"] == t_max]
        a = step_table(at_max)
        recover = a["turns_to_recover"]
        a.update(
            episodes=len(at_max),
            success_rate=rate(sum(e["fst"] is not None for e in at_max), len(at_max)),
            turns_to_recover_mean=r6(float(np.mean(recover))) if recover else None,
            turns_to_recover_median=float(np.median(recover)) if recover else None,
        )
        by_budget = {}
        for t in ts:
            if config["mode"] == "truncate":
                pool, cut = at_max, t
            else:
                pool, cut = [e for e in members if e["budget"] == t], None
            cell = {}
            for outcome in ("all", "success", "failure"):
                chosen = [
                    e for e in pool
                    if outcome == "all"
                    or (e["fst"] is not None and e["fst"] <= t) == (outcome == "success")
                ]  # fmt: skip
                row = step_table(chosen, cut)
                recovered = row.pop("turns_to_recover")
                row.update(
                    episodes=len(chosen),
                    turns_to_recover_mean=rate(sum(recovered), len(recovered)),
                )
                cell[outcome] = row
            by_budget[str(t)] = cell
        a["by_budget"] = by_budget
        lengths = {(e["env"], e["seed"]): e["steps"][0]["distance_before"] for e in members}
        rows = []
        for lo, hi in buckets(list(lengths.values())):
            inside = [e for e in members if lo <= lengths[(e["env"], e["seed"])] <= hi]
            success = {}
            for t in ts:
                if modes[-1] == "truncate":
                    runs = [e for e in inside if e["budget"] == t_max]
                    hits = sum(e["fst"] is not None and e["fst"] <= t for e in runs)
                else:
                    runs = [e for e in inside if e["budget"] == t]
                    hits = sum(e["fst"] is not None for e in runs)
                success[str(t)] = rate(hits, len(runs))
            rows.append(
                {
                    "optimal_length": [lo, hi],
                    "tasks": sum(lo <= d <= hi for d in lengths.values()),
                    "episodes": sum(e["budget"] == t_max for e in inside),
                    "success_rate": success,
                }
            )
        a["by_optimal_length"] = rows
        a["feasibility"] = feasibility(config, members, lengths, *out["task_grids"][(g, modes[-1])])
        a["failed_to_run"] = failed_to_run(config, run, members, g, modes)
        out["analysis"][g] = a
    out["config"] = config
    return out


def feasibility(
    config: dict, members: list[dict], lengths: dict, task_grids: np.ndarray, n_min: int
) -> dict[str, Any]:
    """Pass@(K,T) over the tasks with d* <= T, Pass@K by T / d*, and the step regret."""
    ks, ts = config["ks"], config["ts"]
    keys = sorted(lengths)  # the grids' task order
    d = [lengths[key] for key in keys]
    feasible = []
    for j, t in enumerate(ts):
        inside = [i for i, x in enumerate(d) if x <= t]
        cell: dict[str, Any] = {"t": t, "tasks": len(inside)}
        if inside:
            column = task_grids[inside][:, :, j : j + 1]
            est = estimate_from_task_grids(column, ks, [t], n_per_task=n_min, n_bootstrap=200)
            cell["mean"] = [r6(sum(task_grids[i, k, j] for i in inside) / len(inside))
                            for k in range(len(ks))]  # fmt: skip
            cell.update(low=est.low[:, 0].tolist(), high=est.high[:, 0].tolist())
        else:
            cell.update(mean=None, low=None, high=None)
        feasible.append(cell)
    by_ratio = []
    for lo, hi in ((0, 1), (1, 1.25), (1.25, 1.5), (1.5, 2), (2, 3), (3, None)):
        cells = [
            (i, j) for i in range(len(keys)) for j, t in enumerate(ts)
            if lo <= t / d[i] and (hi is None or t / d[i] < hi)
        ]  # fmt: skip
        by_ratio.append({
            "ratio": [lo, hi], "cells": len(cells), "tasks": len({i for i, _ in cells}),
            "mean": [r6(sum(task_grids[i, k, j] for i, j in cells) / len(cells))
                     for k in range(len(ks))] if cells else None,
        })  # fmt: skip
    regrets = [  # (the runs at max(T): a rerun's play at each budget counts once)
        e["fst"] - lengths[(e["env"], e["seed"])]
        for e in members
        if e["fst"] is not None and e["budget"] == max(ts)
    ]
    return {
        "ks": ks, "ts": ts, "tasks": len(keys), "feasible_tasks": [c["tasks"] for c in feasible],
        "feasible": feasible, "by_ratio": by_ratio,
        "step_regret": {
            "successes": len(regrets), "mean": r6(float(np.mean(regrets))) if regrets else None,
            "median": float(np.median(regrets)) if regrets else None,
            "max": max(regrets) if regrets else None,
        },
    }  # fmt: skip


def failed_to_run(
    config: dict, run: Path, members: list[dict], group: str, modes: list[str]
) -> dict[str, Any]:
    """Episodes logged as failed to run (they have no steps), by kind, and the tasks left
    with fewer than max(K) episodes that ran where the mode needs them."""
    logged = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    kinds = Counter(
        e["failure"] for e in logged
        if e.get("failed_to_run") and group in (ALL, e["env_id"])
    )  # fmt: skip
    ran = Counter((e["env"], e["seed"], e["budget"]) for e in members)
    tasks = sorted({(env, seed) for env, seed, _ in ran} | {
        (e["env_id"], e["seed"]) for e in logged if group in (ALL, e["env_id"])
    })  # fmt: skip
    dropped = {}
    for mode in modes:
        need = [max(config["ts"])] if mode == "truncate" else config["ts"]
        dropped[mode] = [
            f"{env}|seed={seed}" for env, seed in tasks
            if min(ran[(env, seed, t)] for t in need) < max(config["ks"])
        ]  # fmt: skip
    return {"episodes": sum(kinds.values()), "by_kind": dict(sorted(kinds.items())),
            "tasks_dropped": dropped}  # fmt: skip


def compare(expected: Any, actual: Any, where: str) -> None:
    if isinstance(expected, dict):
        assert isinstance(actual, dict), where
        assert set(expected) == set(actual), (where, set(expected) ^ set(actual))
        for key in expected:
            compare(expected[key], actual[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert len(expected) == len(actual), where
        for i, (x, y) in enumerate(zip(expected, actual, strict=True)):
            compare(x, y, f"{where}[{i}]")
    elif isinstance(expected, float) or isinstance(actual, float):
        assert actual == pytest.approx(expected, abs=1e-6), where
    else:
        assert expected == actual, where


def halving(ts: list[int], adv: list[float]) -> float | None:
    if adv[-1] <= 0:
        return None
    target = adv[-1] / 2
    for j in range(len(ts) - 1, 0, -1):
        if adv[j - 1] <= target:
            if adv[j] == adv[j - 1]:
                return float(ts[j - 1])
            return ts[j - 1] + (target - adv[j - 1]) * (ts[j] - ts[j - 1]) / (adv[j] - adv[j - 1])
    return None


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    common = dict(ks=[1, 2], ts=[16, 24, 48], n=2, tasks=5, errors=0.2, n_bootstrap=200)
    evaluate(ENVS, OracleAgent(0.3), out=root / "oracle", label="oracle", **common)
    evaluate(ENVS, RandomAgent(), out=root / "random", label="random", **common)
    evaluate(ENVS, OracleAgent(0.1), out=root / "rerun", label="rerun", mode="rerun", **common)
    build_report(root, plots=False, n_bootstrap=200)
    return root


def test_every_report_number_recomputes_from_steps(report_dir):
    summary = json.loads((report_dir / "summary.json").read_text())
    pass1, cells = {}, {}  # (cells: K = 1's (mean, low, high), the intervals checked above)
    for label in ("oracle", "random", "rerun"):
        mine = recompute_run(report_dir / label)
        theirs = summary["runs"][label]
        assert theirs["n_episodes"] == len(load_episodes(report_dir / label))
        compare(mine["analysis"], theirs["analysis"], f"{label}.analysis")
        for g, modes in mine["groups"].items():
            for mode, grid in modes.items():
                compare(grid["mean"], theirs["groups"][g][mode]["mean"], f"{label}.{g}.{mode}")
                task_grids, n_min = mine["task_grids"][(g, mode)]
                cfg = mine["config"]
                est = estimate_from_task_grids(
                    task_grids, cfg["ks"], cfg["ts"], n_per_task=n_min, n_bootstrap=200, seed=0
                ).to_dict()
                for key in ("low", "high", "n_tasks", "n_per_task"):
                    compare(est[key], theirs["groups"][g][mode][key], f"{label}.{g}.{mode}.{key}")
        g = ALL
        grid = theirs["groups"][g]["rerun" if "rerun" in theirs["groups"][g] else "truncate"]
        pass1[label] = mine["groups"][g]["rerun" if "rerun" in mine["groups"][g] else "truncate"]
        pass1[label] = pass1[label]["mean"][0]
        assert grid["mean"][0] == pass1[label]
        cells[label] = list(zip(grid["mean"][0], grid["low"][0], grid["high"][0], strict=True))
    ts = summary["runs"]["oracle"]["config"]["ts"]
    expected = []
    for a, b in (("oracle", "random"), ("oracle", "rerun"), ("random", "rerun")):
        better, worse = (a, b) if sum(pass1[a]) >= sum(pass1[b]) else (b, a)
        adv = [x - y for x, y in zip(pass1[better], pass1[worse], strict=True)]
        peak = max(range(len(ts)), key=lambda j: adv[j])
        if max(map(abs, adv)) < 0.05:  # (curves that differ anywhere, either way)
            continue
        # Newcombe's (MOVER) interval of each difference, from the two cells' own intervals.
        intervals = []
        for (p, lp, hp), (q, lq, hq) in zip(cells[better], cells[worse], strict=True):
            low = p - q - ((p - lp) ** 2 + (hq - q) ** 2) ** 0.5
            high = p - q + ((hp - p) ** 2 + (q - lq) ** 2) ** 0.5
            intervals.append([r6(max(-1.0, low)), r6(min(1.0, high))])
        expected.append(
            {
                "better": better, "worse": worse, "group": ALL,
                "advantage_by_t": {str(t): r6(x) for t, x in zip(ts, adv, strict=True)},
                "advantage_interval_by_t": dict(zip(map(str, ts), intervals, strict=True)),
                "advantage_at_max_t": r6(adv[-1]), "advantage_at_max_t_interval": intervals[-1],
                "clear_at_max_t": intervals[-1][0] > 0, "lower_at_max_t": intervals[-1][1] < 0,
                "peak_advantage": r6(adv[peak]),
                "peak_t": ts[peak], "halving_budget": halving(ts, adv),
                "bounded_by_failures": False,  # (every episode ran: no bounds to judge by)
            }
        )  # fmt: skip
    compare(expected, summary["comparisons"], "comparisons")
    assert expected  # the oracle beats random: at least one row was checked


def test_per_budget_analysis_from_steps_when_episodes_lack_counts(report_dir, tmp_path):
    """Logs written without `budget_counts` get the same per-budget tables from steps.jsonl."""
    import shutil

    from turnbudget.eval.report import load_run_summary

    run = tmp_path / "old"
    shutil.copytree(report_dir / "oracle", run)
    lines = (run / "episodes.jsonl").read_text().splitlines()
    stripped = []
    for line in lines:
        e = json.loads(line)
        del e["budget_counts"]
        stripped.append(json.dumps(e))
    (run / "episodes.jsonl").write_text("\n".join(stripped) + "\n")
    new = load_run_summary(report_dir / "oracle", n_bootstrap=200)
    old = load_run_summary(run, n_bootstrap=200)
    assert old["analysis"] == new["analysis"]
    (run / "steps.jsonl").unlink()
    assert "by_budget" not in load_run_summary(run, n_bootstrap=200)["analysis"]["all"]


def test_a_log_partly_without_counts_reads_the_steps_of_those_episodes_only(report_dir):
    """Episode records with and without `budget_counts` in one log: the steps are read for
    those without (and only then), and the summary is the one the full log gives."""
    from turnbudget.eval.analysis import summarize_run
    from turnbudget.eval.run.evaluate import load_run
    from turnbudget.records import read_steps

    run = report_dir / "oracle"
    config, log = load_run(run)
    full = summarize_run(config, log.stream(), n_bootstrap=50)

    def no_steps(lacking):
        raise AssertionError("the steps were read, though every record has its counts")

    assert summarize_run(config, log.stream(), n_bootstrap=50, steps=no_steps) == full
    episodes = list(log.stream())
    for e in episodes[::3]:
        del e["budget_counts"]
    asked = []

    def steps_of(lacking):
        asked.append(sorted(e["episode_id"] for e in lacking))
        return read_steps(run / "steps.jsonl", lacking)

    assert summarize_run(config, iter(episodes), n_bootstrap=50, steps=steps_of) == full
    assert asked == [sorted(e["episode_id"] for e in episodes[::3])]
    rows = read_steps(run / "steps.jsonl", episodes[::3])  # (the steps as a list: the same)
    assert summarize_run(config, iter(episodes), n_bootstrap=50, steps=rows) == full
