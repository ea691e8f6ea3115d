"""BudgetMix replication: does what multi-turn RL buys survive a tight turn budget? (CPU scale)

The research's setting, shrunk to a 2-core CPU:

1. **Base** ("the pre-RL model"): behaviour cloning from ε-oracle
   demonstrations (``bc_epsilon``: deliberately imperfect), one per training seed.
2. **Four RL arms** from each base, MaskablePPO with the same env steps:
   (a) ``fixed-generous`` (T = ``generous``), (b) ``fixed-tight`` (T = ``tight``),
   (c) ``budgetmix`` (T ~ ``mix`` per episode), (d) ``budgetmix+pr``
   (BudgetMix with `ProcessReward`). The budget is visible to every policy
   (`RevealBudget`, numeric budget features), so each can adapt to T.
3. **Evaluation** of the bases, the arms and `RandomAgent` through
   `turnbudget.eval.evaluate` on a K × T grid, without and with injected
   errors, on task seeds ``0..tasks-1`` (training worlds use seeds >= 1,000,000);
   and through the teacher-forced probes (`turnbudget.eval.probe`):
   single-step and recovery-specific skill.
4. **Report** in ``--results`` (default ``OUT/report``): Pass@(K,T)
   heatmaps, Pass@(1,T) curves per arm with intervals over training seeds ×
   tasks, ΔPass@(1,T) over the base, probe-skill bars, and one paragraph per
   finding saying whether it replicates.

Every job (BC, PPO, evaluation) runs in a process pool of ``workers``
processes with one torch thread each. Results are a pure function of the
command line: seeds are in the configuration, and evaluation does not depend
on the worker count.

Example::

    python benchmarks/budgetmix.py --quick --out /tmp/bm      # ~2 min smoke test (CI)
    python benchmarks/budgetmix.py --out runs/budgetmix --results benchmarks/results/budgetmix
    python benchmarks/budgetmix.py --report-only --out runs/budgetmix   # the report, from the logs
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

from budgetmix_report import ARMS, family, write_report  # benchmarks/: the script's folder

from turnbudget.cli.flags import config_parser
from turnbudget.train import TrainConfig, train

__all__ = ["ARMS", "Config", "main", "parse_args", "rebuild_report", "run"]


@dataclasses.dataclass
class Config:
    """The replication (every field is a flag; ``--quick`` shrinks everything for a smoke test)."""

    out: str = "runs/budgetmix"
    """Where policies, evaluation logs and (by default) the report go."""
    results: str = ""
    """Directory for the report and figures (default: OUT/report)."""
    quick: bool = False
    """Tiny settings (one family, one seed, a few thousand steps): a smoke test."""
    envs: tuple[str, ...] = ("turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0")
    """The game families."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Training seeds (each: its own BC base and one run per arm)."""
    steps: int = 50_000
    """PPO env steps per arm and seed (equal for every arm)."""
    ent_coef: float = 0.0
    """PPO entropy bonus of the arms (0: fine-tuning a BC policy that already explores)."""
    generous: int = 40
    """Fixed generous training budget (arm a)."""
    tight: int = 12
    """Fixed tight training budget (arm b)."""
    mix: str = "uniform:12-40"
    """BudgetMix training distribution (arms c, d): covers tight..generous."""
    bc_episodes: int = 200
    """Demonstration episodes for the base."""
    bc_epsilon: float = 0.3
    """The demonstrator's ε (random admissible command with this probability)."""
    ts: tuple[int, ...] = (6, 9, 12, 16, 24, 40, 60)
    """Evaluation budgets: below the tightest to above the most generous training budget."""
    ks: tuple[int, ...] = (1, 2, 4, 8)
    """K values (n = max K episodes per task)."""
    tasks: int = 24
    """Evaluation task seeds 0..tasks-1."""
    error_rate: float = 0.1
    """Injected-error rate per turn in the "errors" evaluation."""
    conditions: tuple[str, ...] = ("clean", "errors")
    """Evaluation conditions to run now (the report needs both; finished ones are reused)."""
    probe_tasks: int = 16
    """Task seeds for the probes."""
    workers: int = 2
    """Processes for the jobs."""
    stages: str = "train,eval,probe,report"
    """Stages to run (finished jobs are skipped anyway, so a rerun resumes)."""
    n_bootstrap: int = 1000
    """Bootstrap resamples for the intervals."""


QUICK = {
    "envs": ("turnbudget/Maze-Easy-v0",),
    "seeds": (0,),
    "steps": 2048,
    "bc_episodes": 20,
    "ts": (6, 12, 40, 60),
    "ks": (1, 2),
    "tasks": 4,
    "probe_tasks": 4,
    "n_bootstrap": 100,
}


# --------------------------------------------------------------------------- jobs


def _train_config(config: Config, env_id: str, seed: int, arm: str | None) -> TrainConfig:
    """The `TrainConfig` of the base (arm None) or of one arm."""
    fam_dir = Path(config.out) / "policies" / family(env_id)
    base = dict(
        env_id=env_id,
        seed=seed,
        total_steps=config.steps,
        ent_coef=config.ent_coef,
        budget_mix=config.mix,
        bc_episodes=config.bc_episodes,
        bc_epsilon=config.bc_epsilon,
        log="csv",
    )
    if arm is None:
        return TrainConfig(algo="bc", out=str(fam_dir / f"base-s{seed}"), **base)
    arm_kwargs = {
        "fixed-generous": {"budget_mix": "", "turn_budget": config.generous},
        "fixed-tight": {"budget_mix": "", "turn_budget": config.tight},
        "budgetmix": {},
        "budgetmix+pr": {"process_reward": True},
    }[arm]
    return TrainConfig(
        algo="ppo",
        out=str(fam_dir / f"{arm}-s{seed}"),
        init=str(fam_dir / f"base-s{seed}"),
        **{**base, **arm_kwargs},
    )


def _job_train(tc: TrainConfig) -> dict[str, Any]:
    os.environ["OMP_NUM_THREADS"] = "1"
    done = Path(tc.out) / "summary.json"
    if done.is_file() and (Path(tc.out) / "policy.zip").is_file():
        return {**json.loads(done.read_text()), "out": tc.out}  # resume: already trained
    return {**train(tc), "out": tc.out}


def _agent(spec: str) -> Any:
    from turnbudget.agents import RandomAgent
    from turnbudget.agents.policy import PolicyAgent

    return RandomAgent() if spec == "random" else PolicyAgent(spec)


def _job_eval(job: dict[str, Any]) -> dict[str, Any]:
    from turnbudget.eval import evaluate

    start = time.perf_counter()
    config: Config = job["config"]
    result = evaluate(
        job["env_id"],
        _agent(job["agent"]),
        ks=config.ks,
        ts=config.ts,
        tasks=config.tasks,
        errors=config.error_rate if job["errors"] else None,
        reveal="always",
        workers=1,
        out=job["out"],
        seed=0,
        label=job["label"],
        record_steps=False,
        n_bootstrap=50,
    )
    wall = round(time.perf_counter() - start, 2)
    return {
        "out": job["out"],
        "episodes": len(result.episodes),
        "n_run": result.n_run,
        "wall_s": wall,
    }


def _job_probe(job: dict[str, Any]) -> dict[str, Any]:
    from turnbudget.eval import probe

    start = time.perf_counter()
    config: Config = job["config"]
    agents = [_agent(spec) for spec in job["agents"]]
    probe(
        job["env_id"],
        agents,
        tasks=config.probe_tasks,
        seed=0,
        out=job["out"],
        n_bootstrap=config.n_bootstrap,
        label=None,
    )
    return {"out": job["out"], "wall_s": round(time.perf_counter() - start, 2)}


def _pool_map(fn: Any, jobs: list[Any], workers: int, desc: str, fresh: bool = True) -> list[Any]:
    """``fn`` over ``jobs`` in ``workers`` processes; ``fresh``: a new process per job."""
    from tqdm.auto import tqdm

    if workers <= 1 or len(jobs) <= 1:
        return [fn(j) for j in tqdm(jobs, desc=desc, unit="job")]
    ctx = multiprocessing.get_context(
        "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    )
    with ctx.Pool(workers, maxtasksperchild=1 if fresh else None) as pool:
        return list(tqdm(pool.imap(fn, jobs), total=len(jobs), desc=desc, unit="job"))


def run(config: Config) -> dict[str, Any]:
    """Train, evaluate and report; returns the timings."""
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2) + "\n")
    timings: dict[str, Any] = {}

    stages = set(config.stages.split(","))
    unknown = stages - {"train", "eval", "probe", "report"}
    if unknown:
        raise ValueError(f"Unknown stages {sorted(unknown)}; expect train, eval, probe, report")
    old = out / "timings.json"
    if old.is_file():  # a resumed run keeps the timings of the stages it does not rerun
        timings.update(json.loads(old.read_text()))
    if "train" in stages:
        _train_stage(config, timings)
    if "eval" in stages:
        _eval_stage(config, out, timings)
    if "probe" in stages:
        _probe_stage(config, out, timings)
    (out / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    if "report" in stages:
        write_report(config, out, _results_dir(config), timings)
    return timings


def _results_dir(config: Config) -> Path:
    return Path(config.results) if config.results else Path(config.out) / "report"


def rebuild_report(out: Path, results: Path | None = None) -> Path:
    """Rebuild the report of the finished run in ``out`` from its logs and its own settings
    (``out/config.json``), into ``results`` (default: the run's ``results``); report.md's path."""
    saved = json.loads((out / "config.json").read_text())
    config = Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in saved.items()})
    timings_file = out / "timings.json"
    timings = json.loads(timings_file.read_text()) if timings_file.is_file() else {}
    return write_report(config, out, results or _results_dir(config), timings)


def _train_stage(config: Config, timings: dict[str, Any]) -> None:
    t = time.perf_counter()
    bases = [_train_config(config, e, s, None) for e in config.envs for s in config.seeds]
    timings["bc"] = _pool_map(_job_train, bases, config.workers, "bc")
    timings["bc_wall_s"] = round(time.perf_counter() - t, 1)

    t = time.perf_counter()
    arms = [_train_config(config, e, s, a) for e in config.envs for s in config.seeds for a in ARMS]
    timings["ppo"] = _pool_map(_job_train, arms, config.workers, "ppo")
    timings["ppo_wall_s"] = round(time.perf_counter() - t, 1)


def _eval_stage(config: Config, out: Path, timings: dict[str, Any]) -> None:
    t = time.perf_counter()
    jobs = []
    for env_id in config.envs:
        fam = family(env_id)
        agents = [("random", "random")] + [
            (f"{arm}-s{s}", str(out / "policies" / fam / f"{arm}-s{s}"))
            for arm in ("base", *ARMS)
            for s in config.seeds
        ]
        unknown = set(config.conditions) - {"clean", "errors"}
        if unknown:
            raise ValueError(f"Unknown conditions {sorted(unknown)}; expect clean, errors")
        flags = [c == "errors" for c in config.conditions]
        for (label, spec), errors in itertools.product(agents, flags):
            condition = "errors" if errors else "clean"
            jobs.append(
                {
                    "config": config,
                    "env_id": env_id,
                    "agent": spec,
                    "label": label,
                    "errors": errors,
                    "out": str(out / "eval" / fam / condition / label),
                }
            )
    # Workers are reused: each loads torch once (PolicyAgent loads the zip, then acts in NumPy).
    timings["eval"] = _pool_map(_job_eval, jobs, config.workers, "eval", fresh=False)
    timings["eval_wall_s"] = round(time.perf_counter() - t, 1)


def _probe_stage(config: Config, out: Path, timings: dict[str, Any]) -> None:
    t = time.perf_counter()
    # One job per (family, seed): the base and its four arms, probed on the same states
    # (the random baseline's probes are a pure function of the states, so every job
    # computes the same baseline).
    probe_jobs = []
    for env_id in config.envs:
        fam = family(env_id)
        for s in config.seeds:
            specs = [str(out / "policies" / fam / f"{arm}-s{s}") for arm in ("base", *ARMS)]
            job_out = str(out / "probe" / fam / f"s{s}")
            probe_jobs.append({"config": config, "env_id": env_id, "agents": specs, "out": job_out})
    timings["probe"] = _pool_map(_job_probe, probe_jobs, config.workers, "probe")
    timings["probe_wall_s"] = round(time.perf_counter() - t, 1)


# --------------------------------------------------------------------------- command line


def _parse(argv: list[str] | None) -> tuple[Config, bool]:
    """The `Config` of the command line, and whether ``--report-only`` was given."""
    parser = config_parser(Config, __doc__.split("\n\n")[0], unset_is_none=True)
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="rebuild the report of the finished run in --out from its logs and its own "
        "config.json (other flags but --results are ignored)",
    )
    args = {k: v for k, v in vars(parser.parse_args(argv)).items() if v is not None}
    report_only = args.pop("report_only")
    base = {**QUICK} if args.get("quick") else {}
    return Config(**{**base, **args}), report_only


def parse_args(argv: list[str] | None = None) -> Config:
    """Flags from the `Config` fields; ``--quick`` replaces the defaults of the fields it shrinks."""
    return _parse(argv)[0]


def main(argv: list[str] | None = None) -> None:
    config, report_only = _parse(argv)
    if report_only:
        results = Path(config.results) if config.results else None
        print(f"report in {rebuild_report(Path(config.out), results)}")
        return
    start = time.perf_counter()
    timings = run(config)
    print(json.dumps({k: v for k, v in timings.items() if k.endswith("wall_s")}))
    print(f"total {time.perf_counter() - start:.1f} s; report in {_results_dir(config)}")


if __name__ == "__main__":
    main()
