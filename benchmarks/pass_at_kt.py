"""The main job: do RL's gains survive a tight turn budget, and where do they come from?

Question (the research's findings 1 and 2, on the policies the package
ships): the zoo's base (behaviour cloning), fixed-budget and BudgetMix
policies (`policy:zoo/<family>/<arm>/seed<k>`, ``turnbudget list --zoo``),
several training seeds each, with random and ε-oracles as reference rows.

1. **Pass@(K,T)**: one `turnbudget.eval.evaluate` run per agent (into
   ``OUT/<label>/``) on the zoo's game; every policy is budget-blind, so one
   episode at max T scores every budget: the absolute grid ``ts`` and budgets
   relative to each task's optimal length d*, T = floor(c · d*) for c in
   ``ratios``.
2. **Probes** (`turnbudget.eval.probe`, into ``OUT/probe/``): single-step and
   recovery-specific skill of every policy and of the control agents
   (`turnbudget.eval.probes.validate.control_agents`) on the same states; the
   controls' checks (``turnbudget validate``'s) must pass.
3. **Report** (``OUT/report.md``, ``OUT/summary.json``, ``OUT/main_job.png``):
   Pass@(K,T) per arm with 95% intervals over training seeds
   (`turnbudget.eval.estimator.crossed_mean`, paired against each seed's own
   base), and a verdict with its interval for finding 1 (RL's gain over the
   base shrinks at tight budgets) and finding 2 (the gain is in
   recovery-specific skill more than in single-step skill).

Needs no torch: the zoo's policies play from NumPy arrays.

Run:
    python benchmarks/pass_at_kt.py --out runs/main --figure docs/main_job.png   # the full job
    python benchmarks/pass_at_kt.py --out runs/tiny --seeds 0,1 --tasks 4 --n 2 --ks 1,2 \\
        --probe-tasks 4                                                        # smoke (CI)

Rerunning the same command resumes: finished episodes are skipped.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from pass_at_kt_report import (  # benchmarks/: the script's folder
    controls_verdict,
    per_task_grids,
    plot,
    task_table,
    write_report,
)

from turnbudget.agents import OracleAgent, RandomAgent
from turnbudget.agents.policy import PolicyAgent, zoo_card, zoo_policies
from turnbudget.cli.flags import parse_config
from turnbudget.eval import evaluate, probe
from turnbudget.eval.probes.summary import per_task
from turnbudget.eval.probes.validate import control_agents, control_checks, format_checks
from turnbudget.eval.report import check_plotting


@dataclasses.dataclass
class Config:
    out: str = "runs/main"
    """output directory; rerunning with the same settings resumes"""
    family: str = "maze-easy"
    """the zoo family (`turnbudget list --zoo`); its cards name the game"""
    arms: tuple[str, ...] = ("base", "fixed-tight", "fixed-generous", "budgetmix")
    """the zoo's arms; the first is the base every other arm is compared with"""
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    """training seeds of the zoo's policies"""
    epsilons: tuple[float, ...] = (0.1, 0.3)
    """OracleAgent epsilons of the reference rows"""
    ks: tuple[int, ...] = (1, 2, 4, 8)
    """K values of the grid"""
    ts: tuple[int, ...] = (6, 9, 12, 16, 24, 40, 60)
    """absolute turn budgets T (the largest is each episode's budget)"""
    ratios: tuple[float, ...] = (1.0, 1.5, 2.0, 3.0, 4.0)
    """budgets relative to each task's optimal length: T = floor(c · d*)"""
    tight_t: int = 9
    """finding 1's tight absolute budget, one of --ts below the largest, fixed before the
    data (the smallest T at which the base's Pass@1 reached 0.1 in an earlier run; chosen
    from the same run's base, its noise chose it and the verdict's false positives rose)"""
    tight_ratio: float = 1.5
    """finding 1's tight relative budget, one of --ratios below the largest (as --tight-t)"""
    n: int = 8
    """episodes per task (>= max K)"""
    tasks: int = 32
    """evaluation task seeds 0..tasks-1"""
    probe_tasks: int = 24
    """task seeds for the probes"""
    workers: int = 2
    """worker processes (results do not depend on it)"""
    seed: int = 0
    """base seed of the agents and the probes"""
    plots: bool = True
    """write the figure (needs matplotlib)"""
    figure: str = ""
    """also write the headline figure here (the README's: docs/main_job.png)"""
    progress: bool = True
    """show a progress bar per run"""
    overwrite: bool = False
    """discard previous runs in OUT instead of resuming"""


def parse_args(argv: list[str] | None = None) -> Config:
    """Command-line flags from the `Config` fields (``--tasks 10``, ``--no-plots``, ``--ks 1,2``)."""
    return parse_config(Config, argv, __doc__.split("\n\n")[0])


def zoo_agents(config: Config) -> tuple[str, dict[str, dict[int, PolicyAgent]]]:
    """The game and ``{arm: {seed: PolicyAgent}}`` of the zoo policies the job plays."""
    shipped = set(zoo_policies())
    specs = {(a, s): f"zoo/{config.family}/{a}/seed{s}" for a in config.arms for s in config.seeds}
    missing = sorted(spec for spec in specs.values() if spec not in shipped)
    if missing:
        raise ValueError(f"The zoo has no {missing}; it has {sorted(shipped)}")
    envs = {zoo_card(spec)["env_id"] for spec in specs.values()}
    if len(envs) != 1:
        raise ValueError(f"Expect the zoo family {config.family!r} to hold one game, got {envs}")
    agents = {a: {s: PolicyAgent(specs[(a, s)]) for s in config.seeds} for a in config.arms}
    return envs.pop(), agents


def _check_grid_flags(config: Config) -> None:
    """The flags the findings read, checked before anything runs: the report takes K = 1 as
    the first K, the generous budget as the last (the tight ones are --tight-t and
    --tight-ratio, among the others), and "base" as the arm every other is compared with
    (unsorted values turned a verdict upside down, or labelled Pass@2 as Pass@1; a bad value
    failed after the whole job)."""
    for flag, values in (("--ks", config.ks), ("--ts", config.ts), ("--ratios", config.ratios)):
        if list(values) != sorted(set(values)):
            raise SystemExit(f"error: {flag} {list(values)}: give distinct values, increasing")
        if min(values) <= 0:
            raise SystemExit(f"error: {flag} {list(values)}: every value must be positive")
    for flag, tight, values in (("--tight-t", config.tight_t, config.ts),
                                ("--tight-ratio", config.tight_ratio, config.ratios)):  # fmt: skip
        if tight not in values[:-1]:
            raise SystemExit(
                f"error: {flag} {tight:g} must be one of the budgets below the largest, "
                f"{list(values[:-1])}"
            )
    if config.ks[0] != 1:
        raise SystemExit(f"error: --ks {list(config.ks)} must hold 1 (the findings read Pass@1)")
    if "base" not in config.arms or len(set(config.arms)) < 2:
        raise SystemExit(
            f"error: --arms {list(config.arms)} must hold base and another arm, which is "
            "compared with it"
        )
    if len(set(config.seeds)) < len(config.seeds):
        raise SystemExit(f"error: --seeds {list(config.seeds)} repeats a seed")
    if config.probe_tasks < 1 or config.tasks < 1:
        raise SystemExit("error: --tasks and --probe-tasks must be at least 1")
    if not all(0 <= e <= 1 for e in config.epsilons):
        raise SystemExit(f"error: --epsilons {list(config.epsilons)} must lie in [0, 1]")


def _check_relative_budgets(config: Config, env_id: str) -> None:
    """Every relative budget floor(c · d*) of every task within 1..max(--ts): the episodes run
    to max(--ts) only, and Pass@1 at a larger T was read off episodes cut short."""
    import gymnasium as gym

    env = gym.make(env_id)
    lengths = []
    for task in range(config.tasks):
        env.reset(seed=task)
        lengths.append(env.unwrapped.distance_to_goal())
    env.close()
    top = max(math.floor(max(config.ratios) * d) for d in lengths)
    if top > max(config.ts):
        raise SystemExit(
            f"error: --ratios up to {max(config.ratios):g} ask for T = {top} on a task of d* = "
            f"{max(lengths)}, past max(--ts) {max(config.ts)}, where the episodes stop: raise "
            "max(--ts) or lower the ratios"
        )
    if min(math.floor(min(config.ratios) * d) for d in lengths) < 1:
        raise SystemExit(f"error: --ratios {list(config.ratios)} give a budget of 0 turns")


def main(config: Config, argv: list[str] | None = None) -> dict[str, Any]:
    if max(config.ks) > config.n:
        raise SystemExit(
            f"error: --n {config.n} is below max(--ks) {max(config.ks)}; Pass@K needs n >= K"
        )
    if len(config.seeds) < 2:
        raise SystemExit("error: intervals over training seeds need at least 2 --seeds")
    _check_grid_flags(config)
    # (checked before the job runs: its end raised a bare FileNotFoundError, or, with
    # --no-plots, wrote no figure without a word)
    if config.figure and not config.plots:
        raise SystemExit("error: --figure needs the plots (drop --no-plots)")
    if config.figure and not Path(config.figure).resolve().parent.is_dir():
        raise SystemExit(f"error: --figure {config.figure}: its folder does not exist")
    if config.plots:
        try:
            check_plotting()
        except ImportError as exc:
            raise SystemExit(f"error: {exc}") from None
    try:
        env_id, zoo = zoo_agents(config)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    _check_relative_budgets(config, env_id)
    out = Path(config.out)
    if out.exists() and not out.is_dir():
        raise SystemExit(f"error: --out {out} is a file, not a directory: choose another --out")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # (a traceback: a folder under a file, in /proc, or not writable)
        raise SystemExit(f"error: --out {out}: {exc.strerror}: choose another --out") from None
    started, cpu_started = time.perf_counter(), time.process_time()
    timings: dict[str, Any] = {}
    reference = {"random": RandomAgent(), **{f"oracle-eps{e:g}": OracleAgent(e) for e in config.epsilons}}  # fmt: skip
    runs = [(label, agent) for label, agent in reference.items()]
    runs += [(f"{arm}-seed{s}", agent) for arm, by in zoo.items() for s, agent in by.items()]
    results = {}
    t0 = time.perf_counter()
    try:
        for label, agent in runs:
            results[label] = evaluate(
                env_id, agent, ks=config.ks, ts=config.ts, n=config.n, tasks=config.tasks,
                mode="truncate", workers=config.workers, seed=config.seed, out=out / label,
                label=label, record_steps=False, progress=config.progress,
                overwrite=config.overwrite, n_bootstrap=200,
            )  # fmt: skip
    except ValueError as exc:  # a bad setting, or OUT holds a job with other settings
        raise SystemExit(f"error: {exc}") from None
    timings["evaluate"] = {
        "seconds": round(time.perf_counter() - t0, 3),
        "episodes_run": sum(r.n_run for r in results.values()),
    }
    grids = {label: per_task_grids(r.episodes, config.ks, config.ts, config.ratios)
             for label, r in results.items()}  # fmt: skip
    by_seed = {arm: {s: grids[f"{arm}-seed{s}"] for s in config.seeds} for arm in config.arms}

    t0 = time.perf_counter()
    policies = [agent for by in zoo.values() for agent in by.values()]
    controls = control_agents()
    result = probe(
        env_id, [*policies, *controls], tasks=config.probe_tasks, seed=config.seed,
        out=out / "probe", progress=config.progress, workers=config.workers, n_bootstrap=500,
    )  # fmt: skip
    checks = control_checks(
        result.config.to_dict(), result.records, result.summary, n_bootstrap=500
    )
    timings["probe"] = {
        "seconds": round(time.perf_counter() - t0, 3),
        "probes": len(result.records),
    }
    agents_summary = result.summary["agents"]

    def skill(label: str) -> dict[str, float]:
        g = agents_summary[label][env_id]
        return {k: g[k]["mean"] for k in ("single_step_skill", "recovery_specific_skill")}

    skills = {arm: {s: skill(zoo[arm][s].name) for s in config.seeds} for arm in config.arms}
    reference_skills = {label: skill(label) for label in reference}
    # Each policy's counts per probe task, and the random baseline's: finding 2's intervals
    # resample the tasks, which every seed shares.
    probe_tasks = sorted({(r["env_id"], int(r["task_seed"])) for r in result.records})
    probe_tables = (
        {arm: {s: task_table(per_task(result.records, zoo[arm][s].name), probe_tasks)
               for s in config.seeds} for arm in config.arms},
        task_table(per_task(result.records, "", role="baseline"), probe_tasks),
    )  # fmt: skip

    figure = out / "main_job.png" if config.plots else None
    command = "python benchmarks/pass_at_kt.py " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    summary = write_report(
        out, {**dataclasses.asdict(config), "env": env_id}, by_seed,
        {label: grids[label] for label in reference}, skills, reference_skills,
        [dataclasses.asdict(c) for c in checks], format_checks(checks), command.strip(), figure,
        probe_tables,
    )  # fmt: skip
    if figure is not None:
        plot(out, summary, figure)
        if config.figure:
            Path(config.figure).write_bytes(figure.read_bytes())
    timings["total"] = {
        "seconds": round(time.perf_counter() - started, 3),
        "cpu_seconds_main_process": round(time.process_time() - cpu_started, 3),
        "workers": config.workers,
    }
    # Timings vary from run to run; they live apart from summary.json, which does not.
    (out / "timings.json").write_text(json.dumps(timings, indent=1) + "\n")
    print(f"wrote {out / 'report.md'} in {timings['total']['seconds']:.1f}s")
    for scale in ("rel", "abs"):
        print(f"  finding 1 ({scale}): {summary['finding_1'][scale]['verdict']}")
    print(f"  finding 2: {summary['finding_2']['verdict']}")
    print(f"  controls: {controls_verdict(summary['controls']).lower()}")
    return summary


if __name__ == "__main__":
    try:
        main(parse_args(sys.argv[1:]))
    except KeyboardInterrupt:  # (one line, as `turnbudget eval` says it: what ran is saved)
        print("pass_at_kt.py: interrupted: rerun the same command to resume", file=sys.stderr)
        sys.exit(130)
