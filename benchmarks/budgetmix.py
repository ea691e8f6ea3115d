"""BudgetMix replication: does what multi-turn RL buys survive a tight turn budget? (CPU scale)

The research's setting, shrunk to a 2-core CPU, run to the protocol written
before it (``benchmarks/results/budgetmix/protocol.md``):

1. **Base** ("the pre-RL model"): behaviour cloning from ε-oracle
   demonstrations (``bc_epsilon``: deliberately imperfect), one per training seed.
2. **RL arms** from each base, MaskablePPO with the same env steps (``arms``):
   ``fixed-generous`` (T = ``generous``), ``fixed-tight`` (T = ``tight``),
   ``budgetmix`` (T ~ ``mix`` per episode), ``budgetmix+pr`` (BudgetMix with
   `ProcessReward`), ``progressive`` (a progressive horizon, as ScalingInter-RL:
   the phases of ``progressive`` in order, short budgets first) and
   ``budgetmix-hidden`` (BudgetMix with the budget never shown). Every other arm
   sees its budget (`RevealBudget`, numeric budget features).
3. **Evaluation** of the bases, the arms and `RandomAgent` through
   `turnbudget.eval.evaluate` at budgets relative to each task's optimal length,
   T = ceil(c · d*) for c in ``cs`` (tasks with the same d* share a run), on
   task seeds ``0..tasks-1`` (training worlds use seeds >= 1,000,000); and
   through the teacher-forced probes (`turnbudget.eval.probe`).
4. **Report** in ``--results`` (default ``OUT/report``): a verdict with an
   interval for every finding, from `turnbudget.eval.estimator.crossed_mean`
   (a t-interval over training seeds, tasks crossed, paired by seed).

Jobs (BC, PPO, evaluation, probes) run ``workers`` at a time in a process
pool with one torch thread each, or on a Ray cluster (``--backend ray``:
every node must see ``--out``, a shared file system). Finished jobs are
skipped, so a killed run started again continues where it stopped (an
evaluation also resumes inside its run). Results are a pure function of the
settings: seeds are in the configuration, and nothing depends on the worker
count or the backend.

Example::

    python benchmarks/budgetmix.py --quick --out /tmp/bm      # a few minutes: smoke test
    nice -n 10 python benchmarks/budgetmix.py --out runs/budgetmix \\
        --results benchmarks/results/budgetmix --workers 2      # the protocol
    RAY_ADDRESS=auto python benchmarks/budgetmix.py --backend ray --workers 64 \\
        --out /shared/budgetmix                                 # on a Ray cluster
    python benchmarks/budgetmix.py --report-only --out runs/budgetmix   # the report, from the logs
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from budgetmix_report import (  # the script's folder
    ARM_BASE,
    ARMS,
    bases,
    budgets_for,
    family,
    write_report,
)

from turnbudget.cli.flags import SPLIT_FLAG, config_parser
from turnbudget.train import TrainConfig, train
from turnbudget.wrappers.sample_turn_budget import split_budget_mixes

__all__ = [
    "ARMS",
    "Config",
    "load_config",
    "main",
    "optimal_lengths",
    "parse_args",
    "rebuild_report",
    "run",
    "run_jobs",
]


@dataclasses.dataclass
class Config:
    """The replication (every field is a flag; ``--quick`` shrinks everything for a smoke test)."""

    out: str = "runs/budgetmix"
    """Where policies, evaluation logs and (by default) the report go."""
    results: str = ""
    """Directory for the report and figures (default: OUT/report)."""
    quick: bool = False
    """Tiny settings (two seeds, a few thousand steps): a smoke test."""
    envs: tuple[str, ...] = ("turnbudget/Maze-Easy-v0",)
    """The game families."""
    seeds: tuple[int, ...] = tuple(range(10))
    """Training seeds (each: its own BC base and one run per arm)."""
    arms: tuple[str, ...] = ARMS
    """The RL arms to train and evaluate (a subset of the six keeps the others' logs unused)."""
    steps: int = 50_000
    """PPO env steps per arm and seed (equal for every arm)."""
    ent_coef: float = 0.0
    """PPO entropy bonus of the arms (0: fine-tuning a BC policy that already explores)."""
    generous: int = 40
    """Fixed generous training budget (fixed-generous)."""
    tight: int = 12
    """Fixed tight training budget (fixed-tight)."""
    mix: str = "uniform:12-40"
    """BudgetMix training distribution (budgetmix, budgetmix+pr, budgetmix-hidden)."""
    progressive: tuple[str, ...] = dataclasses.field(
        default=("uniform:12-20", "uniform:21-30", "uniform:31-40"),
        metadata={SPLIT_FLAG: split_budget_mixes},
    )
    """The progressive arm's phases, in training order (together they cover ``mix``)."""
    bc_episodes: int = 200
    """Demonstration episodes for the base."""
    bc_epsilon: float = 0.3
    """The demonstrator's ε (random admissible command with this probability)."""
    cs: tuple[float, ...] = (1.5, 2.0, 3.0, 6.0, 10.0)
    """Evaluation budgets relative to each task's optimal length: T = ceil(c · d*)."""
    tight_c: float = 2.0
    """The tight evaluation budget of finding 1 (one of ``cs``)."""
    generous_c: float = 6.0
    """The generous evaluation budget of findings 1 and the engineering bar (one of ``cs``)."""
    ks: tuple[int, ...] = (1, 2, 4, 8)
    """K values (n = max K episodes per task)."""
    tasks: int = 24
    """Evaluation task seeds 0..tasks-1."""
    error_rate: float = 0.1
    """Injected-error rate per turn in the "errors" evaluation."""
    conditions: tuple[str, ...] = ("clean",)
    """Evaluation conditions: ``clean`` and/or ``errors`` (injected errors)."""
    probe_tasks: int = 16
    """Task seeds for the probes."""
    workers: int = 2
    """Jobs at a time (processes of the pool, or Ray tasks in flight)."""
    backend: str = "pool"
    """``pool`` (this machine) or ``ray`` (a cluster: ``RAY_ADDRESS``; ``out`` on shared storage)."""
    stages: str = "train,eval,probe,report"
    """Stages to run (finished jobs are skipped anyway, so a rerun resumes)."""
    alpha: float = 0.05
    """Two-sided level of every interval (finding 3's simultaneous ones are Bonferroni-adjusted)."""
    margin: float = 0.10
    """Finding 3: BudgetMix is robust when its worst-case regret is below this."""

    def __post_init__(self) -> None:
        unknown = set(self.arms) - set(ARMS)
        if unknown:
            raise ValueError(f"Expect `arms` from {ARMS}, got unknown {sorted(unknown)}")
        for name in ("tight_c", "generous_c"):
            if getattr(self, name) not in self.cs:
                raise ValueError(
                    f"Expect `{name}` to be one of `cs` {self.cs}, got {getattr(self, name)}"
                )
        if self.backend not in ("pool", "ray"):
            raise ValueError(f"Expect `backend` to be 'pool' or 'ray', got {self.backend!r}")
        if len(self.seeds) < 2:
            raise ValueError(
                f"Expect at least 2 training seeds (intervals over seeds), got {self.seeds}"
            )
        unknown = set(self.conditions) - {"clean", "errors"}
        if unknown:
            raise ValueError(f"Unknown conditions {sorted(unknown)}; expect clean, errors")
        # (a bad one failed deep inside the report, after the whole run, and was then kept in
        # config.json, where every --report-only read it again)
        for name in ("steps", "tasks", "probe_tasks", "bc_episodes"):
            if not (isinstance(getattr(self, name), int) and getattr(self, name) >= 1):
                raise ValueError(f"Expect `{name}` to be an int >= 1, got {getattr(self, name)!r}")
        for name in ("alpha", "margin"):
            if not 0 < getattr(self, name) < 1:
                raise ValueError(f"Expect `{name}` in (0, 1), got {getattr(self, name)!r}")


QUICK = {
    "seeds": (0, 1),
    "steps": 2048,
    "bc_episodes": 20,
    "cs": (1.5, 2.0, 6.0),
    "ks": (1, 2),
    "tasks": 4,
    "probe_tasks": 4,
}


# --------------------------------------------------------------------------- jobs


def _train_config(config: Config, env_id: str, seed: int, arm: str) -> TrainConfig:
    """The `TrainConfig` of a base (`bases`) or of an arm (from its base, `ARM_BASE`)."""
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
    if arm in ("base", "base-hidden"):
        hidden = {"reveal": "never"} if arm == "base-hidden" else {}
        return TrainConfig(algo="bc", out=str(fam_dir / f"{arm}-s{seed}"), **base, **hidden)
    arm_kwargs = {
        "fixed-generous": {"budget_mix": "", "turn_budget": config.generous},
        "fixed-tight": {"budget_mix": "", "turn_budget": config.tight},
        "budgetmix": {},
        "budgetmix+pr": {"process_reward": True},
        "progressive": {"budget_schedule": tuple(config.progressive)},
        "budgetmix-hidden": {"reveal": "never"},
    }[arm]
    return TrainConfig(
        algo="ppo",
        out=str(fam_dir / f"{arm}-s{seed}"),
        init=str(fam_dir / f"{ARM_BASE.get(arm, 'base')}-s{seed}"),
        **{**base, **arm_kwargs},
    )


def _job_train(tc: TrainConfig) -> dict[str, Any]:
    os.environ["OMP_NUM_THREADS"] = "1"
    done = Path(tc.out) / "summary.json"  # written last, atomically: the job finished
    if done.is_file() and (Path(tc.out) / "policy.zip").is_file():
        saved = json.loads((Path(tc.out) / "config.json").read_text())
        wanted = json.loads(json.dumps(dataclasses.asdict(tc)))
        differ = sorted(k for k in wanted if saved.get(k) != wanted[k])
        if differ:  # (the old policy was reused, the report saying the new settings)
            raise ValueError(
                f"{tc.out} holds a policy trained with other settings ({', '.join(differ)}): "
                "remove it, or give another --out"
            )
        return {**json.loads(done.read_text()), "out": tc.out, "resumed": True}
    return {**train(tc), "out": tc.out}


def _agent(spec: str) -> Any:
    from turnbudget.agents import RandomAgent
    from turnbudget.agents.policy import PolicyAgent

    return RandomAgent() if spec == "random" else PolicyAgent(spec)


def optimal_lengths(env_id: str, tasks: int) -> tuple[int, ...]:
    """d* of evaluation tasks ``0..tasks-1``: the oracle's distance from each start state."""
    import gymnasium as gym

    env = gym.make(env_id)
    try:
        lengths = []
        for seed in range(tasks):
            env.reset(seed=seed)
            lengths.append(int(env.unwrapped.distance_to_goal()))
        return tuple(lengths)
    finally:
        env.close()


def _job_eval(job: dict[str, Any]) -> dict[str, Any]:
    """One agent in one condition: one `evaluate` run per optimal length d*, at T = ceil(c·d*)."""
    from turnbudget.eval import evaluate

    start = time.perf_counter()
    config: Config = job["config"]
    agent = _agent(job["agent"])
    episodes = 0
    for d, tasks in sorted(_by_length(job["lengths"]).items()):
        result = evaluate(
            job["env_id"],
            agent,
            ks=config.ks,
            ts=budgets_for(config.cs, d),
            tasks=tasks,
            errors=config.error_rate if job["errors"] else None,
            reveal="always",
            workers=1,
            out=str(Path(job["out"]) / f"d{d}"),
            seed=0,
            label=job["label"],
            record_steps=False,
            n_bootstrap=0,
        )
        episodes += len(result.episodes)
    return {
        "out": job["out"],
        "episodes": episodes,
        "wall_s": round(time.perf_counter() - start, 2),
    }


def _by_length(lengths: tuple[int, ...]) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for task, d in enumerate(lengths):
        groups.setdefault(d, []).append(task)
    return groups


def _job_probe(job: dict[str, Any]) -> dict[str, Any]:
    from turnbudget.eval import probe

    start = time.perf_counter()
    config: Config = job["config"]
    if (Path(job["out"]) / "probe_summary.json").is_file():  # written last: the job finished
        return {"out": job["out"], "resumed": True}
    agents = [_agent(spec) for spec in job["agents"]]
    probe(
        job["env_id"],
        agents,
        tasks=config.probe_tasks,
        seed=0,
        out=job["out"],
        n_bootstrap=200,
        label=None,
    )
    return {"out": job["out"], "wall_s": round(time.perf_counter() - start, 2)}


def run_jobs(
    fn: Callable[[Any], dict[str, Any]],
    jobs: list[Any],
    workers: int,
    desc: str,
    backend: str = "pool",
    fresh: bool = True,
) -> list[dict[str, Any]]:
    """``fn`` over ``jobs``, ``workers`` at a time, in a process pool (``fresh``: a new process
    per job) or as Ray tasks; prints ``done DESC OUT`` as each finishes; results in job order."""
    results: list[dict[str, Any] | None] = [None] * len(jobs)

    def finished(i: int, result: dict[str, Any]) -> None:
        results[i] = result
        state = "skipped (finished before)" if result.get("resumed") else "done"
        print(f"{state} {desc} {result.get('out', i)}", flush=True)

    if backend == "ray":
        _run_on_ray(fn, jobs, workers, finished)
    elif workers <= 1 or len(jobs) <= 1:
        for i, job in enumerate(jobs):
            finished(i, fn(job))
    else:
        ctx = multiprocessing.get_context(
            "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        )
        with ctx.Pool(workers, maxtasksperchild=1 if fresh else None) as pool:
            for i, result in pool.imap_unordered(functools.partial(_indexed, fn), enumerate(jobs)):
                finished(i, result)
    return results  # type: ignore[return-value]


def _indexed(fn: Callable[[Any], dict[str, Any]], item: tuple[int, Any]) -> tuple[int, Any]:
    return item[0], fn(item[1])


def _run_on_ray(
    fn: Callable[[Any], dict[str, Any]],
    jobs: list[Any],
    workers: int,
    finished: Callable[[int, dict[str, Any]], None],
) -> None:
    """Ray tasks (one CPU each), at most ``workers`` in flight; the cluster of ``RAY_ADDRESS``
    (a local one when unset). The jobs read and write ``out``: shared storage on a cluster."""
    import sys

    import ray

    # The jobs live in this script and its report module, which a worker cannot import:
    # ship them by value (the library itself is installed on every node).
    for name in {fn.__module__, "budgetmix_report"}:
        if name != "__main__" and name in sys.modules:
            ray.cloudpickle.register_pickle_by_value(sys.modules[name])
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS"), include_dashboard=False,
                 log_to_driver=False)  # fmt: skip
    task = ray.remote(num_cpus=1, max_retries=2)(fn)
    pending: dict[Any, int] = {}
    todo = list(enumerate(jobs))
    while todo or pending:
        while todo and len(pending) < max(1, workers):
            i, job = todo.pop(0)
            pending[task.remote(job)] = i
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            finished(pending.pop(ref), ray.get(ref))


#: Settings that do not change a run's results: another value of these resumes it.
_HOW_IT_RUNS = frozenset({"out", "results", "workers", "backend", "stages"})


def _check_same_settings(config: Config, saved_path: Path) -> None:
    """A run in ``--out`` resumes only under its own settings: a rerun with other --steps or
    --tight reused its policies and rewrote its config.json, and every later --report-only
    said the new settings."""
    if not saved_path.is_file():
        return
    saved = json.loads(saved_path.read_text())
    wanted = json.loads(json.dumps(dataclasses.asdict(config)))
    differ = sorted(k for k in wanted if k not in _HOW_IT_RUNS and saved.get(k) != wanted[k])
    if differ:
        raise SystemExit(
            f"error: {saved_path.parent} holds a run with other settings ({', '.join(differ)}): "
            "give another --out, or the same settings to resume it"
        )


def run(config: Config) -> dict[str, Any]:
    """Train, evaluate and report; returns the timings."""
    out = Path(config.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # (a traceback: a file, a folder under one, or not writable)
        raise SystemExit(f"error: --out {out}: {exc.strerror}: choose another --out") from None
    _check_same_settings(config, out / "config.json")
    (out / "config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2) + "\n")
    timings: dict[str, Any] = {}

    stages = set(config.stages.split(","))
    unknown = stages - {"train", "eval", "probe", "report"}
    if unknown:
        raise ValueError(f"Unknown stages {sorted(unknown)}; expect train, eval, probe, report")
    old = out / "timings.json"
    if old.is_file():  # a resumed run keeps the timings of the stages it does not rerun
        timings.update(json.loads(old.read_text()))
    for name, stage in (("train", _train_stage), ("eval", _eval_stage), ("probe", _probe_stage)):
        if name in stages:
            stage(config, out, timings)
            (out / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    if "report" in stages:
        write_report(config, out, _results_dir(config), timings, _lengths(config))
    return timings


def _lengths(config: Config) -> dict[str, tuple[int, ...]]:
    return {env_id: optimal_lengths(env_id, config.tasks) for env_id in config.envs}


def _results_dir(config: Config) -> Path:
    return Path(config.results) if config.results else Path(config.out) / "report"


def load_config(out: Path) -> Config:
    """The `Config` a run in ``out`` was made with (its ``config.json``); SystemExit with one
    line when there is none (``--report-only`` before the run)."""
    if not (out / "config.json").is_file():
        raise SystemExit(
            f"error: {out} holds no budgetmix run ({out / 'config.json'} is missing): run "
            "budgetmix.py without --report-only first, with the same --out"
        )
    saved = json.loads((out / "config.json").read_text())
    return Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in saved.items()})


def rebuild_report(out: Path, results: Path | None = None) -> Path:
    """Rebuild the report of the finished run in ``out`` from its logs and its own settings
    (``out/config.json``), into ``results`` (default: the run's ``results``); report.md's path."""
    config = load_config(out)
    timings_file = out / "timings.json"
    timings = json.loads(timings_file.read_text()) if timings_file.is_file() else {}
    return write_report(config, out, results or _results_dir(config), timings, _lengths(config))


def _timed(config: Config, timings: dict[str, Any], name: str, fn: Any, jobs: list[Any],
           fresh: bool = True) -> None:  # fmt: skip
    start = time.perf_counter()
    timings[name] = run_jobs(fn, jobs, config.workers, name, config.backend, fresh)
    timings[f"{name}_wall_s"] = round(time.perf_counter() - start, 1)


def _train_stage(config: Config, out: Path, timings: dict[str, Any]) -> None:
    jobs = [
        _train_config(config, e, s, b) for e in config.envs for s in config.seeds
        for b in bases(config.arms)
    ]  # fmt: skip
    _timed(config, timings, "bc", _job_train, jobs)
    # Seed-major order: an interrupted run leaves whole seeds (every arm) finished.
    arms = [
        _train_config(config, e, s, a)
        for e in config.envs
        for s in config.seeds
        for a in config.arms
    ]
    _timed(config, timings, "ppo", _job_train, arms)


def _eval_stage(config: Config, out: Path, timings: dict[str, Any]) -> None:
    jobs = []
    lengths = _lengths(config)
    for env_id in config.envs:
        fam = family(env_id)
        agents = [("random", "random")] + [
            (f"{arm}-s{s}", str(out / "policies" / fam / f"{arm}-s{s}"))
            for s in config.seeds
            for arm in (*bases(config.arms), *config.arms)
        ]
        flags = [c == "errors" for c in config.conditions]
        for (label, spec), errors in itertools.product(agents, flags):
            condition = "errors" if errors else "clean"
            jobs.append(
                {
                    "config": config,
                    "env_id": env_id,
                    "agent": spec,
                    "lengths": lengths[env_id],
                    "label": label,
                    "errors": errors,
                    "out": str(out / "eval" / fam / condition / label),
                }
            )
    # Workers are reused: each loads torch once (PolicyAgent loads the zip, then acts in NumPy).
    _timed(config, timings, "eval", _job_eval, jobs, fresh=False)


def _probe_stage(config: Config, out: Path, timings: dict[str, Any]) -> None:
    # One job per (family, seed, policy): every policy probed on the same states (the random
    # baseline's probes are a pure function of the states: every job computes the same), and
    # a run with more arms adds jobs without redoing the finished ones.
    jobs = []
    for env_id in config.envs:
        fam = family(env_id)
        for s in config.seeds:
            for g in (*bases(config.arms), *config.arms):
                spec = str(out / "policies" / fam / f"{g}-s{s}")
                job_out = str(out / "probe" / fam / f"s{s}" / g)
                jobs.append({"config": config, "env_id": env_id, "agents": [spec], "out": job_out})
    _timed(config, timings, "probe", _job_probe, jobs)


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
    try:
        main()
    except KeyboardInterrupt:  # (one line, as `turnbudget eval` says it: what ran is saved)
        print("budgetmix.py: interrupted: rerun the same command to resume", file=sys.stderr)
        sys.exit(130)
