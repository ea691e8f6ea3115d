"""How often `turnbudget validate` fails a sound metric: its verdict's error rate, measured.

Every control of `validate` has a known truth, and the probe metrics are sound on the
games measured here (each check's 95% interval covers its truth: the slow tests and
`docs/guides/probes.md`). A run's verdict, "all checks passed", still fails whenever one
of its 50 checks (34 of them null checks, for the default envs) misses by chance. This
script repeats `validate`'s design ``--reps`` times, each replicate on its own ``--tasks``
task seeds (replicate r: seeds ``r * tasks`` to ``(r + 1) * tasks - 1``, and ``--seed``
r), and counts the replicates in which some check failed:

- ``95% each``: the null checks (``0``, ``≈0``, ``≤0``, ``exact``) judged on their own 95%
  intervals (what `validate` did before they read simultaneous intervals);
- ``simultaneous``: the null checks judged as `validate` judges them now
  (`family_confidence`: Bonferroni over the run's null checks; the target: at most
  `FAMILY_ERROR`, 5%);
- ``all checks``: every verdict of the run, the ``+`` and ``−`` checks on their 95%
  intervals and the checks on means (``+mean``, ``1``, ``≥0.9``) too: how often
  ``turnbudget validate`` exits 1 on a sound metric;
- ``all, before``: the same, with the null checks on their 95% intervals: how often it
  exited 1 before.

Each rate comes with Wilson's 95% interval over the replicates, and the failures are
counted per check.

Run:
    python benchmarks/validate_error_rate.py                     # 200 replicates, 2 workers: ~27 min
    python benchmarks/validate_error_rate.py --reps 4 --tasks 6  # smoke: ~10 s
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from turnbudget.cli.flags import parse_config
from turnbudget.cli.validate import DEFAULT_ENVS
from turnbudget.eval.estimator import wilson_interval
from turnbudget.eval.probes.validate import FAMILY_ERROR, NULL_CHECKS, judge, validate


@dataclasses.dataclass
class Config:
    envs: str = ",".join(DEFAULT_ENVS)
    """comma-separated env ids, validated together in each replicate (`validate`'s default)"""
    tasks: int = 40
    """task seeds per replicate (`validate`'s default)"""
    reps: int = 200
    """replicates"""
    workers: int = 2
    """replicates run at once, one process each"""
    json_out: str = ""
    """also write the figures, and each replicate's failed checks, to this JSON file"""


def replicate(envs: list[str], tasks: int, rep: int) -> dict[str, Any]:
    """One `validate` run on its own tasks: the checks each verdict fails."""
    result = validate(envs, tasks=list(range(rep * tasks, (rep + 1) * tasks)), seed=rep)
    failed: dict[str, list[str]] = {"each": [], "simultaneous": [], "all": [], "all_before": []}
    for check in result.checks:
        name = f"{check.group.split('/')[-1]} | {check.control} | {check.metric} | {check.expected}"
        if check.expected in NULL_CHECKS:
            if judge(check.expected, check.value, check.truth) is False:
                failed["each"].append(name)
                failed["all_before"].append(name)
            if check.ok is False:
                failed["simultaneous"].append(name)
        elif check.ok is False:
            failed["all_before"].append(name)
        if check.ok is False:
            failed["all"].append(name)
    return {"rep": rep, "failed": failed}


def check_config(config: Config) -> list[str]:
    """The env ids, once the flags are checked (before the pool starts: a bad one failed in a
    worker, or, for --json-out, after every replicate had run)."""
    import gymnasium as gym

    for name in ("reps", "workers", "tasks"):
        if getattr(config, name) < 1:
            raise SystemExit(f"error: --{name} must be at least 1, got {getattr(config, name)}")
    envs = config.envs.split(",")
    unknown = [env for env in envs if env not in gym.registry]
    if unknown:
        raise SystemExit(f"error: --envs names no registered env: {unknown}")
    if config.json_out and not Path(config.json_out).resolve().parent.is_dir():
        raise SystemExit(f"error: --json-out {config.json_out}: its folder does not exist")
    return envs


def main(config: Config) -> dict[str, Any]:
    envs = check_config(config)
    rows = []
    with ProcessPoolExecutor(config.workers) as pool:
        futures = [pool.submit(replicate, envs, config.tasks, r) for r in range(config.reps)]
        for done, future in enumerate(as_completed(futures), 1):
            rows.append(future.result())
            print(f"\r{done}/{config.reps} replicates", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    rows.sort(key=lambda row: row["rep"])
    figures: dict[str, Any] = {"config": dataclasses.asdict(config), "verdicts": {}}
    for verdict in ("each", "simultaneous", "all", "all_before"):
        runs = sum(bool(row["failed"][verdict]) for row in rows)
        low, high = wilson_interval(runs / len(rows), len(rows))
        checks = Counter(name for row in rows for name in row["failed"][verdict])
        figures["verdicts"][verdict] = {
            "runs_failed": runs, "rate": runs / len(rows), "low": low, "high": high,
            "checks_failed": dict(checks.most_common()),
        }  # fmt: skip
    report(figures, len(rows))
    if config.json_out:
        Path(config.json_out).write_text(json.dumps({**figures, "replicates": rows}, indent=1))
    return figures


def report(figures: dict[str, Any], reps: int) -> None:
    c = figures["config"]
    print(
        f"{c['envs']}: {reps} replicates of {c['tasks']} tasks each (target <= {FAMILY_ERROR:.0%})"
    )
    names = {
        "each": "95% each", "simultaneous": "simultaneous", "all": "all checks",
        "all_before": "all, before",
    }  # fmt: skip
    for verdict, v in figures["verdicts"].items():
        print(
            f"  {names[verdict]:13} runs with a failed check {v['runs_failed']:4d} "
            f"= {v['rate']:.3f} [{v['low']:.3f}, {v['high']:.3f}]"
        )
        for name, n in v["checks_failed"].items():
            print(f"      {n:4d}  {name}")


if __name__ == "__main__":
    main(parse_config(Config, None, __doc__))
