"""The main job: Pass@(K,T) of the baseline agents on KeyQuest and Maze at Medium.

Question: how does success depend on sampling breadth K and interaction depth
T, and what do single-step quality and error recovery look like, for a random
agent and an oracle with epsilon noise, with and without injected errors?

Runs (one `turnbudget.eval.evaluate` call each, into ``OUT/<label>/``):
``random``, ``oracle-eps<E>`` for each epsilon, and the same with
``+errors`` (InjectErrors at ``error_rate`` per turn: slips, transient
failures and setbacks), drawn per (task, repeat, turn): the 8 attempts at a
task are independent, and all agents face the same draws. All agents are
budget-blind, so Pass@(K,T) is scored in truncate mode (one run per episode at
max(T)). Then teacher-forced probes of the three agents against a random
baseline (`turnbudget.eval.probe`, into ``OUT/probe/``): single-step and
recovery skill on fixed states, normalized so that chance scores 0. Then
``OUT/report.md``, ``OUT/summary.json``, a K x T heatmap per run and env group,
``OUT/pass_at_1_curve.png``, ``OUT/recovery.png`` and
``OUT/recovery_by_budget.png``.

Run:
    python benchmarks/pass_at_kt.py --out runs/main      # the full job (< 5 min on 2 cores)
    python benchmarks/pass_at_kt.py --out runs/tiny --tasks 2 --n 2 --ks 1,2 --ts 16,64

Rerunning the same command resumes: finished episodes are skipped, so an
interrupted job picks up where it stopped. ``turnbudget report OUT`` rebuilds
the report from the logs.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

from agent_runs import Run, evaluate_runs  # benchmarks/: the script's folder

from turnbudget.agents import OracleAgent, RandomAgent
from turnbudget.cli.flags import parse_config
from turnbudget.eval import probe
from turnbudget.eval.report import build_report, check_plotting


@dataclasses.dataclass
class Config:
    out: str = "runs/main"
    """output directory; rerunning with the same settings resumes"""
    envs: tuple[str, ...] = ("turnbudget/KeyQuest-Medium-v0", "turnbudget/Maze-Medium-v0")
    """env ids (any registered ids work: ``--envs turnbudget/Sokoban-Medium-v0,...``)"""
    epsilons: tuple[float, ...] = (0.1, 0.3)
    """OracleAgent epsilons (probability of a random admissible action)"""
    ks: tuple[int, ...] = (1, 2, 4, 8)
    """K values of the grid"""
    ts: tuple[int, ...] = (16, 24, 32, 48, 64, 96, 128)
    """turn budgets T of the grid (64 is the Medium default)"""
    n: int = 8
    """episodes per task (>= max K)"""
    tasks: int = 50
    """task seeds per env (seeds 0..tasks-1)"""
    error_rate: float = 0.05
    """per-turn probability of an injected error in the +errors runs"""
    probe_tasks: int = 25
    """task seeds per env for the probes (0 skips them)"""
    workers: int = 2
    """worker processes (results do not depend on it)"""
    seed: int = 0
    """base seed of the agents"""
    steps: bool = True
    """write per-step records (steps.jsonl) as well as per-episode ones"""
    plots: bool = True
    """write the PNGs (needs matplotlib)"""
    progress: bool = True
    """show a progress bar per run"""
    overwrite: bool = False
    """discard previous runs in OUT instead of resuming"""


def parse_args(argv: list[str] | None = None) -> Config:
    """Command-line flags from the `Config` fields (``--tasks 10``, ``--no-plots``, ``--ks 1,2``)."""
    return parse_config(Config, argv, __doc__.split("\n\n")[0])


def runs(config: Config) -> list[Run]:
    """Every run of the job: each agent without injected errors, then each with them."""
    agents: list[tuple[str, object]] = [("random", RandomAgent())]
    agents += [(f"oracle-eps{e:g}", OracleAgent(e)) for e in config.epsilons]
    return [
        Run(name if errors is None else f"{name}+errors", agent, {"errors": errors})
        for errors in (None, config.error_rate)
        for name, agent in agents
    ]


def main(config: Config) -> dict:
    if max(config.ks) > config.n:
        raise SystemExit(
            f"error: --n {config.n} is below max(--ks) {max(config.ks)}; Pass@K needs n >= K"
        )
    if config.plots:
        try:
            check_plotting()
        except ImportError as exc:
            raise SystemExit(f"error: {exc}") from None
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        played = evaluate_runs(
            runs(config), out, envs=list(config.envs), ks=config.ks, ts=config.ts, n=config.n,
            tasks=config.tasks, mode="auto", workers=config.workers, seed=config.seed,
            record_steps=config.steps, progress=config.progress, overwrite=config.overwrite,
        )  # fmt: skip
    except ValueError as exc:  # a bad setting, or OUT holds a job with other settings
        raise SystemExit(f"error: {exc}") from None
    timings = {
        label: {"seconds": round(run.seconds, 3), "episodes_run": run.result.n_run}
        for label, run in played.items()
    }
    # Each run's summary, so the report does not recompute it from the logs.
    summaries = {out / label: run.result.summary for label, run in played.items()}
    if config.probe_tasks > 0:
        t0 = time.perf_counter()
        agents = [RandomAgent(), *(OracleAgent(e) for e in config.epsilons)]
        result = probe(
            list(config.envs), agents, tasks=config.probe_tasks, seed=config.seed,
            out=out / "probe", progress=config.progress,
        )  # fmt: skip
        timings["probe"] = {
            "seconds": round(time.perf_counter() - t0, 3),
            "probes": len(result.records),
        }
    t0 = time.perf_counter()
    summary = build_report(out, plots=config.plots, summaries=summaries)
    timings["report"] = {"seconds": round(time.perf_counter() - t0, 3)}
    timings["total"] = {
        "seconds": round(time.perf_counter() - started, 3),
        "workers": config.workers,
    }
    # Timings vary from run to run; they live apart from summary.json, which does not.
    (out / "timings.json").write_text(json.dumps(timings, indent=1) + "\n")
    print(
        f"wrote {out / 'report.md'} ({len(summary['runs'])} runs) in {timings['total']['seconds']:.1f}s"
    )
    for row in summary["comparisons"]:
        halves = row["halving_budget"]
        print(
            f"  {row['better']} over {row['worse']}: +{row['advantage_at_max_t']:.2f} Pass@1 at "
            f"T={max(config.ts)} (peak +{row['peak_advantage']:.2f} at T={row['peak_t']}), "
            f"halved by T={'n/a' if halves is None else f'{halves:.1f}'}"
        )
    return summary


if __name__ == "__main__":
    main(parse_args(sys.argv[1:]))
