"""What a run's summary costs once its episodes have played (issue 26), across library versions.

`evaluate` ends with the run's summary: its episode records read back and checked, a
Pass@(K,T) grid per env group with a bootstrap interval per cell, and the feasibility
analysis, which estimates one grid per budget T. That is serial work after the episodes
(with two workers, time in which neither plays), and `turnbudget report` pays it for
every run it reads. Prints, per library version (``--roots``; ``.`` is this tree):

- ``summary ms``: CPU time of `load_run_summary` on one run directory (made once, here,
  by the version this script runs under: a random agent on ``--envs`` over a K x T grid),
  and that per episode;
- ``estimate ms``: CPU time of one `estimate_from_task_grids` (1,000 resamples) on a grid
  of ``--tasks`` tasks, 3 K values and 4 budgets.

Each figure is the median of ``--rounds`` rounds; the versions alternate round by round
(`versions.run_versions`), each round in a fresh process.

Example::

    mkdir -p /tmp/before && git archive HEAD~1 turnbudget | tar -x -C /tmp/before
    python benchmarks/speed/summary_cost.py --roots /tmp/before,. --rounds 5
    python benchmarks/speed/summary_cost.py --tasks 4 --n 4 --rounds 1        # smoke
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

KS, TS = [1, 2, 4], [8, 16, 32, 64]


def make_run(out: Path, envs: list[str], tasks: int, n: int) -> int:
    """A random agent's run in ``out`` over the K x T grid; its number of episodes."""
    from turnbudget.agents import make_agent
    from turnbudget.eval.run.evaluate import evaluate

    result = evaluate(
        envs, make_agent("random"), ks=KS, ts=TS, n=n, tasks=tasks, mode="truncate", out=out,
        n_bootstrap=0,
    )  # fmt: skip
    return result.n_run


def measure(run_dir: Path, tasks: int) -> dict[str, float]:
    """CPU ms of the run's summary and of one grid estimate, in this process (one round)."""
    from turnbudget.eval.estimator import estimate_from_task_grids
    from turnbudget.eval.report.build import load_run_summary

    grids = np.random.default_rng(0).integers(0, 9, size=(tasks, len(KS), len(TS))) / 8.0
    load_run_summary(run_dir)  # (imports and first calls: not part of the figures)
    start = time.process_time()
    load_run_summary(run_dir)
    summary = time.process_time() - start
    start = time.process_time()
    estimate_from_task_grids(grids, KS, TS, n_per_task=8, n_bootstrap=1000)
    return {"summary_ms": 1e3 * summary, "estimate_ms": 1e3 * (time.process_time() - start)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default="turnbudget/Maze-Easy-v0,turnbudget/KeyQuest-Easy-v0")
    parser.add_argument(
        "--tasks", type=int, default=200, help="task seeds per env (and of the grid)"
    )
    parser.add_argument(
        "--n", type=int, default=8, help="episodes per task and budget (at least the largest K, 4)"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--roots", default="", help="comma-separated library roots to compare")
    parser.add_argument("--run-dir", default="", help=argparse.SUPPRESS)  # (one version's process)
    parser.add_argument("--json-out", default="", help="also write the figures here")
    args = parser.parse_args(argv)
    if args.run_dir:  # one round of one version (`versions.run_versions`)
        figures = measure(Path(args.run_dir), args.tasks)
        Path(args.json_out).write_text(json.dumps(figures))
        return figures
    from versions import run_versions

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        episodes = make_run(run_dir, args.envs.split(","), args.tasks, args.n)
        roots = args.roots.split(",") if args.roots else ["."]
        by_root = run_versions(
            __file__, roots, args.rounds, [f"--run-dir={run_dir}", f"--tasks={args.tasks}"]
        )
    print(
        f"{episodes:,} episodes ({args.envs}, {args.tasks} tasks x n = {args.n}, K {KS}, T {TS});"
        f" median of {args.rounds} alternating rounds, CPU time"
    )
    print("| root | summary ms | summary µs/episode | estimate ms (1,000 resamples) |")
    print("|---|---|---|---|")
    figures: dict[str, Any] = {"episodes": episodes, "roots": {}}
    for root, rounds in by_root.items():
        summary = statistics.median(r["summary_ms"] for r in rounds)
        estimate = statistics.median(r["estimate_ms"] for r in rounds)
        figures["roots"][root] = {"summary_ms": summary, "estimate_ms": estimate}
        print(f"| {root} | {summary:.1f} | {1e3 * summary / episodes:.0f} | {estimate:.1f} |")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=2) + "\n")
    return figures


if __name__ == "__main__":
    main()
