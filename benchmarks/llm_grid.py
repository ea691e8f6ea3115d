"""An LLM grid that separates agents: Pass@(K,T) of the local model against random and an ε-oracle.

Questions:

1. Does the grid tell agents apart? Random and `OracleAgent(0.3)` (the
   ε-oracle control) on the same tasks and budgets: their 95% intervals must
   be disjoint at two budgets or more, or the grid is too small to say
   anything about the model between them.
2. Where does the local model (``llm:local``: Gemma 3 270M in process) lie,
   in Pass@(K,T) with intervals, and in teacher-forced probes (single-step and
   recovery-specific skill, `turnbudget.eval.probe`)?
3. Does seeing its budget change it? The budget hidden (budget-blind:
   truncate mode is exact) against revealed every turn (rerun mode, one run
   per T), paired per (task, repeat), gap per T with an interval.
4. Does truncating after the fact mispredict a budget-aware agent? The
   budget-visible agent scored both ways (``mode="both"``: one long run cut at
   each T, and a genuine run at each T), the gap per T with an interval.

Design. Tasks are the first ``tasks`` seeds at which every env's optimal
length d* is at most ``max_optimal``: one seed set for all envs, so each
agent is one `evaluate` call and the "all" group pools the envs. Budgets are
absolute and never below any task's d* (`check_design` refuses a design that
has one): one T for every task keeps the runs at max(T) shared between the
two scoring modes and pairs every cell across agents, while a narrow band of
d* keeps ``c = T / d*`` narrow at each T (the report gives its range). With
the defaults: Maze-Easy, 40 seeds (0-43 but 4) with d* of 5-7, T = 7, 10, 14
(c = 1-1.4, 1.4-2, 2-2.8). Maze alone, because Shop-Easy's 52 admissible commands
and long pages make prompts of 1,600-2,600 tokens: 60 s an episode against Maze's
7.5 s, so a Maze + Shop grid needs about two hours here, not 35 minutes.

    python benchmarks/llm_grid.py --out runs/llm_grid --results benchmarks/results/llm_grid
    python benchmarks/llm_grid.py --out runs/llm_grid --results benchmarks/results/llm_grid --workers 2
    python benchmarks/llm_grid.py --report-only --out runs/llm_grid --results benchmarks/results/llm_grid
    python benchmarks/llm_grid.py --out /tmp/g --tasks 1 --ts 7 --ks 1 --n 1 --probe-tasks 1   # tiny

Outputs: one run directory per agent under ``OUT`` (rerunning the same
command resumes them), ``OUT/probes/``, and ``report.md``, ``summary.json``,
``pass_at_1.png`` and ``gaps.png`` in ``OUT`` and in ``--results``.
The report is rewritten after each run; ``--report-only`` rebuilds it and the figures
from ``OUT/summary.json``, adding the tasks an unfinished model run has finished (a
stopped grid's partial view, marked as such).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_runs import Run, evaluate_runs  # benchmarks/: the script's folder

import turnbudget
from turnbudget.agents import OracleAgent, RandomAgent
from turnbudget.cli.flags import parse_config
from turnbudget.eval.estimator import clustered_rate, difference_interval, paired_difference
from turnbudget.records import EPISODES_FILE, STEPS_FILE, read_jsonl

SUMMARY = "summary.json"
REPORT = "report.md"
FIGURES = ("pass_at_1.png", "gaps.png")


@dataclasses.dataclass
class Config:
    out: str = "runs/llm_grid"
    """output directory; rerunning with the same settings resumes the runs"""
    results: str = ""
    """also copy report.md, summary.json and the figures here ('' : only OUT)"""
    report_only: bool = False
    """rebuild the report and figures from OUT/summary.json; run nothing"""
    agent: str = "llm:local"
    """agent spec of the model (llm:local: Gemma 3 270M in this process)"""
    temperature: float = 0.7
    """the model's sampling temperature (> 0, so its n episodes of a task differ)"""
    history: int = 4
    """past turns in the model's prompt (16 overflowed llm:local's 4096-token context on
    Shop-Easy pages late in a 14-turn episode: prompts of 4,072 tokens, llama_decode failed)"""
    envs: tuple[str, ...] = ("turnbudget/Maze-Easy-v0",)
    """env ids; every task seed is played on each"""
    tasks: int = 40
    """task seeds (per env): the first seeds with every env's d* <= max_optimal"""
    max_optimal: int = 7
    """the longest optimal length d* a task may have"""
    ts: tuple[int, ...] = (7, 10, 14)
    """turn budgets T; each >= every task's d* (checked)"""
    ks: tuple[int, ...] = (1, 2)
    """K values of the model's grid"""
    n: int = 2
    """the model's episodes per task (>= max K)"""
    baseline_ks: tuple[int, ...] = (1, 2, 4, 8)
    """K values of the baselines' grid"""
    baseline_n: int = 8
    """the baselines' episodes per task"""
    probe_tasks: int = 24
    """probe task seeds per env, from the drawn tasks (0: no probes)"""
    probe_prefixes: tuple[float, ...] = (0.5,)
    """probe prefixes, as fractions of each task's optimal plan"""
    seed: int = 0
    """base seed of the agents"""
    workers: int = 1
    """processes that play the episodes and probes (the pool backend), each with its own copy
    of the model (one core, ~0.3 GB): the records are the same whatever the number"""
    progress: bool = True
    """show a progress bar per run"""


def parse_args(argv: list[str] | None = None) -> Config:
    """Command-line flags from the `Config` fields (``--tasks 2``, ``--ts 7,10``, ``--no-progress``)."""
    return parse_config(Config, argv, __doc__.split("\n\n")[0])


# --------------------------------------------------------------------------- design


def draw_tasks(
    envs: Sequence[str], count: int, max_optimal: int, *, scan: int = 10_000
) -> dict[str, dict[int, int]]:
    """The first ``count`` seeds (from 0) at which every env's d* is at most ``max_optimal``.

    Returns env id -> {seed: d*}. Raises ``ValueError`` when ``scan`` seeds hold fewer.
    """
    if count < 1:
        raise ValueError(f"Expect `tasks` to be a positive int, got {count!r}")
    built = {env_id: turnbudget.make(env_id) for env_id in envs}
    lengths: dict[str, dict[int, int]] = {env_id: {} for env_id in envs}
    try:
        for seed in range(scan):
            found = {}
            for env_id, env in built.items():
                env.reset(seed=seed)
                found[env_id] = env.unwrapped.distance_to_goal()
            if all(d is not None and d <= max_optimal for d in found.values()):
                for env_id, d in found.items():
                    lengths[env_id][seed] = int(d)
                if len(lengths[envs[0]]) == count:
                    return lengths
    finally:
        for env in built.values():
            env.close()
    raise ValueError(
        f"Expect {count} seeds with d* <= {max_optimal} on {list(envs)} among the first "
        f"{scan}, found {len(lengths[envs[0]])}: raise `max_optimal` or lower `tasks`"
    )


def check_design(lengths: Mapping[str, Mapping[int, int]], ts: Sequence[int]) -> None:
    """Refuse a design with a budget below some task's optimal length d*.

    Below d* even the exact oracle fails: such a cell measures the task, not the
    agent. ``lengths`` is env id -> {seed: d*}, as `draw_tasks` returns it.

    Example:
        >>> check_design({"turnbudget/Maze-Easy-v0": {0: 6, 3: 7}}, ts=[7, 10])
        >>> check_design({"turnbudget/Maze-Easy-v0": {0: 6, 3: 7}}, ts=[6, 10])
        Traceback (most recent call last):
        ...
        ValueError: Expect every budget T >= each task's optimal length d*, got T = 6 below d* = 7 of task turnbudget/Maze-Easy-v0 seed 3
    """
    if not ts:
        raise ValueError("Expect at least one budget T, got none")
    t_min = min(int(t) for t in ts)
    for env_id, seeds in lengths.items():
        for seed, d in seeds.items():
            if d is None or d > t_min:
                raise ValueError(
                    "Expect every budget T >= each task's optimal length d*, got T = "
                    f"{t_min} below d* = {d} of task {env_id} seed {seed}"
                )


# --------------------------------------------------------------------------- runs


def baseline_runs(config: Config, seeds: Sequence[int]) -> list[Run]:
    """Random and the ε-oracle (ε = 0.3): budget-blind, truncate mode."""
    settings = {"envs": list(config.envs), "tasks": list(seeds), "mode": "truncate",
                "ks": config.baseline_ks, "n": config.baseline_n}  # fmt: skip
    return [
        Run("random", RandomAgent(), settings),
        Run("oracle-eps0.3", OracleAgent(0.3), settings),
    ]


def model_runs(config: Config, seeds: Sequence[int], agent: Any) -> list[Run]:
    """The model with its budget hidden (truncate) and revealed every turn (both modes)."""
    common = {"envs": list(config.envs), "tasks": list(seeds), "ks": config.ks, "n": config.n}
    return [
        Run("llm-hidden", agent, {**common, "mode": "truncate"}),
        Run("llm-visible", agent, {**common, "mode": "both", "reveal": "always"}),
    ]


def make_model(config: Config) -> Any:
    from turnbudget.agents import make_agent

    return make_agent(config.agent, history=config.history, temperature=config.temperature)


# --------------------------------------------------------------------------- statistics


def cells(grid: Mapping[str, Any], k: int = 1) -> list[list[float]]:
    """``[[mean, low, high], ...]`` per T of a grid's row K = ``k``."""
    i = list(grid["ks"]).index(k)
    return [[grid[key][i][j] for key in ("mean", "low", "high")] for j in range(len(grid["ts"]))]


def separated(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> list[bool]:
    """Per T: whether two agents' ``(mean, low, high)`` cells have disjoint intervals."""
    return [ha < lb or hb < la for (_, la, ha), (_, lb, hb) in zip(a, b, strict=True)]


def successes(
    episodes: Iterable[Mapping[str, Any]], ts: Sequence[int], mode: str
) -> dict[tuple[str, int, int], list[int]]:
    """(env id, seed, repeat) -> success (0/1) at each T, scored in ``mode``.

    ``truncate``: the run at max(T), a success at T when its first success came
    within T turns; ``rerun``: the run made at T. Episodes that failed to run are left out.
    """
    t_max = max(ts)
    out: dict[tuple[str, int, int], list[int]] = defaultdict(lambda: [0] * len(ts))
    for e in episodes:
        if e.get("failed_to_run"):
            continue
        key = (e["env_id"], int(e["seed"]), int(e["rep"]))
        if mode == "truncate" and e["turn_budget"] == t_max:
            first = e["first_success_turn"]
            out[key] = [int(first is not None and first <= t) for t in ts]
        elif mode == "rerun" and e["turn_budget"] in ts:
            out[key][list(ts).index(e["turn_budget"])] = int(bool(e["success"]))
    return dict(out)


def paired_gap(
    a: Mapping[tuple[str, int, int], list[int]],
    b: Mapping[tuple[str, int, int], list[int]],
    n_ts: int,
) -> list[list[float]]:
    """Per T, ``[mean, low, high]`` of a - b over the (task, repeat) pairs both have,
    differences summed per task (`paired_difference`: clustered in tasks)."""
    per_task: dict[tuple[str, int], list[list[int]]] = defaultdict(list)
    for key in sorted(set(a) & set(b)):
        per_task[key[:2]].append([x - y for x, y in zip(a[key], b[key], strict=True)])
    if not per_task:
        return [[0.0, -1.0, 1.0] for _ in range(n_ts)]
    pairs = [len(rows) for rows in per_task.values()]
    return [
        [round(x, 4) for x in paired_difference(
            [sum(row[j] for row in rows) for rows in per_task.values()], pairs)]
        for j in range(n_ts)
    ]  # fmt: skip


def partial(run_dir: Path, ts: Sequence[int], n: int, mode: str) -> dict[str, Any]:
    """Pass@(1,T) of an unfinished run over the tasks it has finished (every episode of the
    task played: n at max(T) in truncate mode, n per T in rerun mode), with the library's
    clustered score interval. Tasks are not finished in random order: a partial view."""
    episodes = [e for e in read_jsonl(run_dir / EPISODES_FILE)[0] if not e.get("failed_to_run")]
    wanted = set(ts) if mode == "rerun" else {max(ts)}
    counts = Counter((e["env_id"], e["seed"]) for e in episodes if e["turn_budget"] in wanted)
    done = {task for task, c in counts.items() if c == n * len(wanted)}
    hits: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0] * len(ts))
    for (env_id, seed, _), row in successes(episodes, ts, mode).items():
        if (env_id, seed) in done:
            hits[env_id, seed] = [a + b for a, b in zip(hits[env_id, seed], row, strict=True)]
    rows = [
        [round(x, 4) for x in clustered_rate([h[j] for h in hits.values()], [n] * len(hits))]
        for j in range(len(ts))
    ] if hits else []  # fmt: skip
    steps = run_dir / STEPS_FILE
    decisions = len(read_jsonl(steps)[0]) if steps.exists() else None
    return {"tasks": sorted(f"{env_id} seed {seed}" for env_id, seed in done),
            "episodes": len(episodes), "decisions": decisions, "pass_at_1": rows}  # fmt: skip


# --------------------------------------------------------------------------- the job


def main(config: Config) -> dict[str, Any]:
    out = Path(config.out)
    if config.report_only:
        summary = json.loads((out / SUMMARY).read_text())
        cfg = summary["config"]
        summary["partial"] = {}
        for label, mode in (("llm-hidden", "truncate"), ("llm-visible", "rerun")):
            if label not in summary["finished"] and (out / label / EPISODES_FILE).exists():
                summary["partial"][label] = partial(out / label, cfg["ts"], cfg["n"], mode)
        (out / SUMMARY).write_text(json.dumps(summary, indent=1) + "\n")  # recomputed each time
        write_report(summary, out, config.results)
        return summary
    for name, ks, n in (("", config.ks, config.n), ("baseline_", config.baseline_ks,
                                                      config.baseline_n)):  # fmt: skip
        if max(ks) > n:
            raise SystemExit(f"error: --{name}n {n} is below max(--{name}ks) {max(ks)}")
    started = time.perf_counter()
    load = [os.getloadavg()[0]]
    lengths = draw_tasks(config.envs, config.tasks, config.max_optimal)
    check_design(lengths, config.ts)
    seeds = sorted(lengths[config.envs[0]])
    out.mkdir(parents=True, exist_ok=True)
    common = {"ts": config.ts, "seed": config.seed, "progress": config.progress,
              "workers": config.workers}  # fmt: skip
    agent = make_model(config)
    played: dict[str, Any] = {}
    probes: dict[str, Any] = {}
    # One run at a time, the report rewritten after each: a run stopped early keeps a
    # report of what finished (and rerunning the command resumes the rest).
    stages = [*baseline_runs(config, seeds), *model_runs(config, seeds, agent), None]
    cpu: dict[str, float] = {}  # CPU seconds per stage, its workers' too (the machine is shared)
    for run in stages:
        cpu_started = cpu_seconds()
        if run is None:
            probes = run_probes(config, agent, seeds, out / "probes")
        else:
            played.update(evaluate_runs([run], out, **common))
        cpu["probes" if run is None else run.label] = round(cpu_seconds() - cpu_started, 1)
        load.append(os.getloadavg()[0])
        summary = summarize(config, lengths, played, probes)
        timing = summary["timing"]
        timing["total_seconds"] = round(time.perf_counter() - started, 1)
        timing["load_average_1min"] = [round(x, 2) for x in load]
        timing["cpu_seconds"] = cpu
        model_cpu = sum(cpu.get(label, 0.0) for label in ("llm-hidden", "llm-visible"))
        timing["decisions_per_cpu_s"] = (
            round(timing["model_decisions"] / model_cpu, 3) if model_cpu else None
        )
        (out / SUMMARY).write_text(json.dumps(summary, indent=1) + "\n")
        write_report(summary, out, config.results)
    return summary


def cpu_seconds() -> float:
    """CPU time of this process and of its ended children (the pool's workers)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def run_probes(config: Config, agent: Any, seeds: Sequence[int], out: Path) -> dict[str, Any]:
    """Single-step and recovery-specific skill (slip errors) against random, with intervals."""
    if not config.probe_tasks:
        return {"skipped": "--probe-tasks 0"}
    from turnbudget.eval import probe

    started = time.perf_counter()
    tasks = list(seeds[: config.probe_tasks])
    result = probe(
        list(config.envs), agent, tasks=tasks, prefixes=config.probe_prefixes, kinds=("slip",),
        seed=config.seed, label="llm", out=out, progress=config.progress, workers=config.workers,
    )  # fmt: skip
    groups = result.summary["agents"]["llm"]
    skills = groups.get("all") or next(iter(groups.values()))
    keys = ("single_step_skill", "noop_rate", "recovery_specific_skill")
    return {
        "tasks": len(tasks) * len(config.envs),
        "probes": len(result.records),
        "seconds": round(time.perf_counter() - started, 1),
        **{key: skills[key] for key in keys if key in skills},
    }


def summarize(
    config: Config, lengths: Mapping[str, Mapping[int, int]], played: Mapping[str, Any],
    probes: Mapping[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """Everything the report shows, from the runs finished so far (JSON-ready)."""
    ts = list(config.ts)
    all_d = [d for seeds in lengths.values() for d in seeds.values()]
    grids = {label: run.result.grid(None, "truncate") for label, run in played.items()}
    if "llm-visible" in played:
        grids["llm-visible-rerun"] = played["llm-visible"].result.grid(None, "rerun")
    rows = {label: cells(grid) for label, grid in grids.items()}
    summary: dict[str, Any] = {
        "config": dataclasses.asdict(config),
        "design": {
            "tasks": {env: {str(s): d for s, d in seeds.items()} for env, seeds in lengths.items()},
            "n_tasks": len(all_d),
            "optimal_length": [min(all_d), max(all_d)],
            "c_range": [[round(t / max(all_d), 2), round(t / min(all_d), 2)] for t in ts],
        },
        "finished": list(played) + (["probes"] if probes else []),
        "pass_at_1": rows,
        "grids": grids,
    }
    if {"random", "oracle-eps0.3"} <= set(rows):
        summary["baselines_separate"] = separated(rows["random"], rows["oracle-eps0.3"])
    if {"random", "llm-hidden"} <= set(rows):
        summary["llm_minus_random"] = [
            [round(x, 4) for x in difference_interval(a, b)]
            for a, b in zip(rows["llm-hidden"], rows["random"], strict=True)
        ]
    if {"llm-hidden", "llm-visible"} <= set(played):
        hidden = successes(played["llm-hidden"].result.episodes, ts, "truncate")
        visible = played["llm-visible"].result.episodes
        rerun = successes(visible, ts, "rerun")
        summary["visible_minus_hidden"] = paired_gap(rerun, hidden, len(ts))
        summary["rerun_minus_truncate"] = paired_gap(
            rerun, successes(visible, ts, "truncate"), len(ts)
        )
    summary["probes"] = dict(probes)
    timing: dict[str, Any] = {"runs": {}}
    for label, run in played.items():
        analysis = run.result.summary["analysis"]
        turns = (analysis.get("all") or next(iter(analysis.values())))["turns"]
        usage = run.result.summary.get("agent_usage") or {}
        timing["runs"][label] = {"seconds": round(run.seconds, 1), "episodes_run": run.result.n_run,
                                 "turns": turns, "usage": usage}  # fmt: skip
    # Only runs this invocation played are timed: a resumed run (nothing left to play) took
    # its time in an earlier one. A decision is a request to the model ("turns" counts one
    # scoring mode only: the visible run's reruns at each T are decisions too).
    model = [
        timing["runs"][k] for k in ("llm-hidden", "llm-visible")
        if k in timing["runs"] and timing["runs"][k]["episodes_run"]
    ]  # fmt: skip
    decisions = sum(r["usage"].get("requests", r["turns"]) for r in model)
    seconds = sum(r["seconds"] for r in model)
    timing["resumed"] = [k for k, r in timing["runs"].items() if not r["episodes_run"]]
    timing["model_decisions"] = decisions
    timing["model_seconds"] = round(seconds, 1)
    timing["decisions_per_s"] = round(decisions / seconds, 3) if seconds else None
    summary["timing"] = timing
    return summary


# --------------------------------------------------------------------------- report

LABELS = {
    "random": "random",
    "oracle-eps0.3": "OracleAgent(0.3)",
    "llm-hidden": "LLM, budget hidden",
    "llm-visible-rerun": "LLM, budget visible (rerun: exact)",
    "llm-visible": "LLM, budget visible, scored by truncation",
}


GAPS = (
    ("llm_minus_random", "LLM (hidden) - random"),
    ("visible_minus_hidden", "LLM visible (rerun) - hidden, paired"),
    ("rerun_minus_truncate", "LLM visible: rerun - truncate, paired"),
)


def _cell(c: Sequence[float]) -> str:
    return f"{c[0]:.2f} [{c[1]:.2f}, {c[2]:.2f}]"


def _signed(c: Sequence[float]) -> str:
    return f"{c[0]:+.2f} [{c[1]:+.2f}, {c[2]:+.2f}]"


def _verdict(c: Sequence[float]) -> str:
    """A difference's sign, only where its interval excludes 0."""
    if c[1] > 0:
        return "positive (the interval excludes 0)"
    if c[2] < 0:
        return "negative (the interval excludes 0)"
    return "does not separate from 0"


def write_report(summary: Mapping[str, Any], out: Path, results: str = "") -> None:
    """``report.md`` and the figures in ``out`` (and copies in ``results``)."""
    cfg, design, ts = summary["config"], summary["design"], summary["config"]["ts"]
    command = f"python benchmarks/llm_grid.py --report-only --out {cfg['out']}" + (
        f" --results {results}" if results else ""
    )
    plots = _plot(summary, out)
    head = " | ".join(f"T={t}" for t in ts)
    lines = [
        "# LLM grid: the local model against random and an ε-oracle",
        "",
        f"Envs {', '.join(cfg['envs'])}; {design['n_tasks']} tasks (seeds "
        f"{min(int(s) for s in next(iter(design['tasks'].values())))}.."
        f"{max(int(s) for s in next(iter(design['tasks'].values())))}, the first {cfg['tasks']} "
        f"with d* <= {cfg['max_optimal']} on every env); optimal lengths d* "
        f"{design['optimal_length'][0]}-{design['optimal_length'][1]}; budgets T = "
        f"{', '.join(map(str, ts))}, never below any task's d* (checked), i.e. c = T / d* in "
        + ", ".join(f"[{lo}, {hi}]" for lo, hi in design["c_range"])
        + f". Model `{cfg['agent']}`, temperature {cfg['temperature']}, history {cfg['history']}, "
        f"n = {cfg['n']} episodes per task; baselines n = {cfg['baseline_n']}. "
        "Intervals: 95%, the library's (bootstrap over tasks widened to Wilson's score "
        "interval at the effective number of trials; paired gaps: `paired_difference` over "
        "tasks; differences of unpaired cells: `difference_interval`).",
        "",
        "## Pass@(1,T)",
        "",
        f"| agent | {head} |",
        "|---|" + "---|" * len(ts),
    ]
    for label, name in LABELS.items():
        if label in summary["pass_at_1"]:
            lines.append(
                f"| {name} | " + " | ".join(map(_cell, summary["pass_at_1"][label])) + " |"
            )
    sep = summary.get("baselines_separate")
    if sep is not None:
        lines += [
            "",
            f"Random and OracleAgent(0.3) have disjoint intervals at {sum(sep)} of {len(ts)} "
            f"budgets (T = {', '.join(str(t) for t, s in zip(ts, sep, strict=True) if s) or 'none'}).",
        ]
    lines.append("")
    if FIGURES[0] in plots:
        lines += [f"![Pass@(1,T)]({FIGURES[0]})", "", f"Regenerate: `{command}`", ""]
    k_max = max(cfg["ks"])
    model = [label for label in ("llm-hidden", "llm-visible-rerun") if label in summary["grids"]]
    if k_max > 1 and model:
        lines += [f"Pass@({k_max},T) of the model:", ""]
        for label in model:
            row = cells(summary["grids"][label], k_max)
            lines.append(f"- {LABELS[label]}: " + "; ".join(
                f"T={t}: {_cell(c)}" for t, c in zip(ts, row, strict=True)))  # fmt: skip
        lines.append("")
    gaps = [(key, name) for key, name in GAPS if key in summary]
    if gaps:
        lines += ["## Gaps, per T (95% intervals)", "", f"| gap | {head} |",
                  "|---|" + "---|" * len(ts)]  # fmt: skip
        for key, name in gaps:
            lines.append(f"| {name} | " + " | ".join(map(_signed, summary[key])) + " |")
        lines.append("")
        for key, name in gaps:
            verdicts = [_verdict(c) for c in summary[key]]
            lines.append(f"- {name}: " + "; ".join(
                f"T={t}: {v}" for t, v in zip(ts, verdicts, strict=True)) + ".")  # fmt: skip
        lines.append("")
    if FIGURES[1] in plots:
        lines += [f"![gaps]({FIGURES[1]})", "", f"Regenerate: `{command}`", ""]
    probes = summary["probes"]
    lines += ["## Probes (teacher-forced; slip errors; against random on the same states)", ""]
    if not probes:
        lines.append("Not run yet.")
    elif "skipped" in probes:
        lines.append(f"Skipped ({probes['skipped']}).")
    else:
        lines += [f"{probes['tasks']} tasks, {probes['probes']} probes, prefix "
                  f"{cfg['probe_prefixes']} of the optimal plan.", ""]  # fmt: skip
        for key in ("single_step_skill", "noop_rate", "recovery_specific_skill"):
            c = probes.get(key) or {}
            if c.get("mean") is not None:
                lines.append(f"- {key}: {c['mean']:.2f} [{c['low']:.2f}, {c['high']:.2f}]")
    for label, part in (summary.get("partial") or {}).items():
        lines += ["", f"## Unfinished: {LABELS[label]}", "",
                  f"The run was stopped after {part['episodes']} episodes "
                  f"({part.get('decisions')} decisions); {len(part['tasks'])} tasks finished "
                  "(in the run's order, env by env: not a random sample of the tasks)."]  # fmt: skip
        if part["pass_at_1"]:
            lines += ["", f"| Pass@(1,T) on those tasks | {head} |", "|---|" + "---|" * len(ts),
                      "| " + LABELS[label] + " | " + " | ".join(map(_cell, part["pass_at_1"]))
                      + " |"]  # fmt: skip
    timing = summary["timing"]
    lines += [
        "",
        "## Timing",
        "",
        f"Finished stages ({', '.join(summary['finished'])}): {timing.get('total_seconds')} s"
        + (
            f" (resumed, so timed by an earlier invocation, not here: "
            f"{', '.join(timing['resumed'])})"
            if timing.get("resumed")
            else ""
        )
        + f"; the model's {timing['model_decisions']} decisions "
        f"in {timing['model_seconds']} s of Pass@(K,T) runs ({timing['decisions_per_s']} "
        f"decisions/s; {timing.get('decisions_per_cpu_s')} per CPU second); "
        f"probes {probes.get('seconds', 0)} s; CPU seconds per stage {timing.get('cpu_seconds')}; "
        f"1-minute load average at the start and after each stage "
        f"{timing.get('load_average_1min')}.",
        "",
        f"Regenerate this report: `{command}`",
        "",
    ]
    (out / REPORT).write_text("\n".join(lines))
    if results:
        target = Path(results)
        target.mkdir(parents=True, exist_ok=True)
        for name in (REPORT, SUMMARY, *plots):
            if (out / name).exists() and (out / name).resolve() != (target / name).resolve():
                shutil.copyfile(out / name, target / name)


def _plot(summary: Mapping[str, Any], out: Path) -> list[str]:
    """``pass_at_1.png`` (curves with intervals) and, once there are gaps, ``gaps.png``;
    [] without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    ts = summary["config"]["ts"]
    figures = [
        (FIGURES[0], "Pass@(1,T)", [(name, summary["pass_at_1"].get(label))
                                    for label, name in LABELS.items()]),
        (FIGURES[1], "difference in Pass@(1,T)", [(name, summary.get(key))
                                                  for key, name in GAPS]),
    ]  # fmt: skip
    written = []
    for name, ylabel, series in figures:
        series = [(label, row) for label, row in series if row is not None]
        if not series:
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for i, (label, row) in enumerate(series):
            x = [t + (i - len(series) / 2) * 0.12 for t in ts]  # side by side at each T
            err = [[c[0] - c[1] for c in row], [c[2] - c[0] for c in row]]
            ax.errorbar(x, [c[0] for c in row], yerr=err, marker="o", capsize=3, label=label)
        if name == FIGURES[0]:
            ax.set_ylim(-0.02, 1.02)
        else:
            ax.axhline(0, color="grey", lw=0.8)
        ax.set(xlabel="turn budget T", ylabel=ylabel, xticks=ts)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / name, dpi=120)
        plt.close(fig)
        written.append(name)
    return written


if __name__ == "__main__":
    try:
        main(parse_args(sys.argv[1:]))
    except KeyboardInterrupt:  # (one line, as `turnbudget eval` says it: what ran is saved)
        print("llm_grid.py: interrupted: rerun the same command to resume", file=sys.stderr)
        sys.exit(130)
