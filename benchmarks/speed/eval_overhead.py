"""What `evaluate` costs over the games: a hand-written loop over the bare env, over the stack, and `evaluate`.

Questions (issue 26):

1. What does the evaluation's wrapper stack (turn budget, injected errors,
   step records with the oracle) cost over the bare registered env?
   (target: stack / bare <= 2, with errors and records on)
2. What does `evaluate` (the episode driver, the agent's view, records built
   and written, the summary) cost over a hand-written loop over that same
   stack? (target: evaluate / stack <= 1.2)

The variants play the same episodes (``tasks`` task seeds x ``n``
repeats, one env id at a time, every episode at budget ``t``) with the same
agent, reset with the same seeds:

- ``bare``: ``gym.make(id)`` (the game under its `TurnBudget`), driven by a
  plain ``reset`` / ``act`` / ``step`` loop;
- ``stack``: the stack `evaluate` builds (`build_env`: errors at rate
  ``errors``, `RecordStepOutcomes` with the oracle, records to a list that
  each episode clears), driven by the same loop;
- ``stack+log``: the same, and each episode's records written to JSONL
  files as `evaluate` writes them (its step records through
  `turnbudget.records.dumps_lines`, one write per episode, its episode record
  to a file of its own): what a hand-written loop that keeps its records pays (not a target;
  ``eval/log`` is what `evaluate` costs beyond writing its records);
- ``stack+view+log``: the same, and the agent shown what `evaluate` shows it
  (`agent_info`: a private copy of what a player may see, and the command
  executed): a hand-written loop that plays by the project's rules (not a
  target; ``eval/view`` is what `evaluate` costs beyond it: its driver, its
  episode records and its summary);
- ``evaluate``: `evaluate` in truncate mode at the one budget, one worker,
  writing its JSONL logs into a fresh temporary directory, with its summary.

The variants run in ``rounds`` interleaved rounds, in CPU time of this process
and in wall time (on a shared machine the CPU-time ratios are the steadier
ones). The ms per episode are each variant's median round; each ratio is the
median of its per-round ratios (the variants of one round run back to back, so
a ratio is taken between runs under the same load). Each timed run follows an
untimed one of the same variant on 2 tasks (``--no-warmup`` to time from cold).

``--instructions`` counts, instead, the instructions each variant executes per
episode under ``valgrind --tool=callgrind`` (one process per variant and size,
``PYTHONHASHSEED=0``, one BLAS thread, after an uncounted run that writes the
bytecode; the count of ``--count-tasks`` tasks minus that of 2 tasks, so start-up
and imports cancel out; one process counted again agrees to a few thousand instructions,
two runs of this script to about 1%): the same figures on a busy machine as on a
quiet one, where time-based ratios move by more than a change does. Needs
valgrind (Debian's ``valgrind`` package); about 50x slower than a timed run.

Run:
    python benchmarks/speed/eval_overhead.py                        # defaults below, about a minute
    python benchmarks/speed/eval_overhead.py --tasks 4 --n 1 --rounds 1   # smoke
    python benchmarks/speed/eval_overhead.py --instructions         # callgrind counts, ~6 min
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

import turnbudget  # noqa: F401 - registers the envs
from turnbudget.agents import make_agent
from turnbudget.cli.flags import parse_config
from turnbudget.eval.run.agent_view import agent_info, executed_action
from turnbudget.eval.run.episodes import build_env
from turnbudget.eval.run.evaluate import evaluate
from turnbudget.eval.run.plan import make_config, plan_episodes
from turnbudget.records import dumps

try:
    from turnbudget.records import dumps_lines
except ImportError:  # (a version before it, measured with --roots: as its `evaluate` wrote)

    def dumps_lines(records: list[dict[str, Any]]) -> str:
        return "".join(dumps(r) + "\n" for r in records)


@dataclasses.dataclass
class Config:
    envs: str = "turnbudget/Maze-Medium-v0,turnbudget/KeyQuest-Medium-v0"
    """comma-separated env ids, measured one at a time"""
    agent: str = "random"
    """agent spec (random: every episode runs to its budget, the heaviest)"""
    t: int = 128
    """the turn budget of every episode"""
    tasks: int = 125
    """task seeds per env"""
    n: int = 2
    """episodes per task"""
    errors: float = 0.05
    """injected error rate of the stack and of evaluate (0: none)"""
    record_steps: bool = True
    """keep step records (``--no-record-steps``: the stack and `evaluate` keep only the episode
    records, as `evaluate(record_steps=False)` does)"""
    rounds: int = 3
    """interleaved rounds; the median is reported"""
    warmup: bool = True
    """play each variant once on 2 tasks before its timed run, in the same process: what a
    process pays once (imports on first use: `evaluate`'s run lock, progress bar and
    analysis, ~35 ms) stays out of the per-episode figures"""
    json_out: str = ""
    """also write the figures to this JSON file"""
    roots: str = ""
    """compare library versions: comma-separated source roots (``git archive COMMIT
    turnbudget | tar -x -C DIR``; ``.`` for this tree), one process per root per round,
    rounds interleaved, medians per root (see `versions.py`)"""
    instructions: bool = False
    """count instructions per episode under callgrind instead of timing (see above)"""
    count_tasks: int = 22
    """tasks per env of the larger counted run (the smaller has 2)"""
    count_variant: str = ""
    """(internal) run this one variant once, untimed: what ``--instructions`` counts"""


VARIANTS = ("bare", "stack", "stack+log", "stack+view+log", "evaluate")
#: The reported ratios: name -> (numerator, denominator).
RATIOS = {
    "stack/bare": ("stack", "bare"),
    "eval/stack": ("evaluate", "stack"),
    "eval/log": ("evaluate", "stack+log"),
    "eval/view": ("evaluate", "stack+view+log"),
    "eval/bare": ("evaluate", "bare"),
}


def _ratios(per_episode: dict[str, float]) -> dict[str, float]:
    return {name: per_episode[a] / per_episode[b] for name, (a, b) in RATIOS.items()}


def _median_ratios(rounds: list[dict[str, float]]) -> dict[str, float]:
    """The median over rounds of each round's ratios (one round: ms per episode by variant)."""
    per_round = [_ratios(r) for r in rounds]
    return {name: statistics.median(r[name] for r in per_round) for name in RATIOS}


def parse_args(argv: list[str] | None = None) -> Config:
    return parse_config(Config, argv, __doc__)


def _settings(config: Config, env_id: str) -> dict[str, Any]:
    return dict(
        ks=[1], ts=[config.t], n=config.n, tasks=config.tasks, mode="truncate",
        errors=config.errors or None, record_steps=config.record_steps,
    )  # fmt: skip


def _loop(env: gym.Env, agent: Any, specs: list, per_repeat: bool, on_end: Any = None) -> int:
    """A hand-written evaluation loop; the number of steps played."""
    steps = 0
    for spec in specs:
        options: dict[str, Any] = {"turn_budget": spec.turn_budget, "episode_id": spec.episode_id}
        if per_repeat:
            options["repeat"] = spec.rep
        obs, info = env.reset(seed=spec.task_seed, options=options)
        agent.reset(spec.agent_seed)
        while True:
            obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
            steps += 1
            if terminated or truncated:
                break
        if on_end is not None:
            on_end()
    return steps


class _PlayerView:
    """``agent``, shown what `evaluate` shows it: `agent_info` of each info (no budget, the
    command executed on the turn before)."""

    def __init__(self, agent: Any):
        self.agent = agent
        self._last: str | None = None  # (the command it chose on the turn before)

    def reset(self, seed: int) -> None:
        self._last = None
        self.agent.reset(seed)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        executed = None if self._last is None else executed_action(self._last, info)
        view = agent_info(info, show_budget=False, executed=executed)
        self._last = self.agent.act(observation, view)
        return self._last


def run_once(config: Config, env_id: str, variant: str) -> tuple[float, float, int]:
    """One variant over every episode of ``env_id``: (wall s, CPU s, episodes)."""
    agent = make_agent(config.agent)
    eval_config = make_config(
        [env_id], agent, **_settings(config, env_id), reveal=None, seed=0, label=None
    )  # fmt: skip
    specs = plan_episodes(eval_config)
    with tempfile.TemporaryDirectory() as tmp:
        if variant == "evaluate":
            wall0, cpu0 = time.perf_counter(), time.process_time()
            result = evaluate([env_id], agent, **_settings(config, env_id), out=Path(tmp) / "run")
            episodes = result.n_run  # (not len(result.episodes): that reads the log back)
        else:
            records: list[dict[str, Any]] = []
            if variant == "bare":
                env, per_repeat, on_end = gym.make(env_id), False, None
            else:
                env = build_env(env_id, eval_config, records.append)
                per_repeat, on_end = eval_config.error_draws == "per_repeat", records.clear
            if variant == "stack+view+log":
                agent = _PlayerView(agent)
            logs = None
            if variant.endswith(
                "+log"
            ):  # each episode's records, written as `evaluate` writes them
                logs = [(Path(tmp) / name).open("a") for name in ("steps.jsonl", "episodes.jsonl")]

                def on_end() -> None:
                    *steps, episode = records  # (the episode record comes last)
                    logs[0].write(dumps_lines(steps))
                    logs[1].write(dumps(episode) + "\n")
                    for log in logs:
                        log.flush()
                    records.clear()

            wall0, cpu0 = time.perf_counter(), time.process_time()
            _loop(env, agent, specs, per_repeat, on_end)
            env.close()
            for log in logs or ():
                log.close()
            episodes = len(specs)
        return time.perf_counter() - wall0, time.process_time() - cpu0, episodes


def main(config: Config) -> dict[str, Any]:
    if config.count_variant:
        run_once(config, config.envs, config.count_variant)
        return {}
    if config.instructions:
        return count_instructions(config)
    if config.roots:
        return compare(config)
    load_before = os.getloadavg()[0]
    rows = []
    for env_id in config.envs.split(","):
        rounds: dict[str, list[dict[str, float]]] = {"wall": [], "cpu": []}
        for _ in range(config.rounds):  # interleaved: every variant sees the same neighbours
            wall, cpu = {}, {}
            for variant in VARIANTS:
                if config.warmup:
                    run_once(dataclasses.replace(config, tasks=2, n=1), env_id, variant)
                w, c, episodes = run_once(config, env_id, variant)
                wall[variant], cpu[variant] = 1e3 * w / episodes, 1e3 * c / episodes
            rounds["wall"].append(wall)
            rounds["cpu"].append(cpu)
        rows.append({"env_id": env_id, "episodes": episodes, **_summary(rounds)})
    figures = {
        "config": dataclasses.asdict(config),
        "cpu_count": os.cpu_count(),
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "rows": rows,
    }
    report(figures)
    if config.json_out:
        Path(config.json_out).write_text(json.dumps(figures, indent=2) + "\n")
    return figures


def _summary(rounds: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    """Per clock: each variant's median ms per episode, the median per-round ratios, and the
    rounds themselves."""
    out: dict[str, Any] = {}
    for clock, per_round in rounds.items():
        out[f"{clock}_ms_per_episode"] = {
            v: statistics.median(r[v] for r in per_round) for v in VARIANTS
        }
        out[f"{clock}_ratios"] = _median_ratios(per_round)
        out[f"{clock}_rounds"] = per_round
    return out


def report(figures: dict[str, Any]) -> None:
    c = figures["config"]
    print(
        f"agent {c['agent']}, T = {c['t']}, {c['tasks']} tasks x n = {c['n']}, errors {c['errors']}; "
        f"median of {c['rounds']} interleaved rounds"
        f"{', each after a warm-up run' if c.get('warmup', False) else ', from cold'}; "
        f"load {figures['load_average_1min']}"
    )
    head = (
        f"{'env id':32}{'clock':>6}{'bare ms/ep':>12}{'stack ms/ep':>13}{'+log ms/ep':>12}"
        f"{'+view ms/ep':>13}{'evaluate ms/ep':>16}{'stack/bare':>12}{'eval/stack':>12}"
        f"{'eval/log':>10}{'eval/view':>11}{'eval/bare':>11}"
    )
    print(head)
    for row in figures["rows"]:
        for clock in ("cpu", "wall"):
            ms, ratio = row[f"{clock}_ms_per_episode"], row[f"{clock}_ratios"]
            print(
                f"{row['env_id']:32}{clock:>6}{ms['bare']:>12.2f}{ms['stack']:>13.2f}"
                f"{ms['stack+log']:>12.2f}{ms['stack+view+log']:>13.2f}{ms['evaluate']:>16.2f}"
                f"{ratio['stack/bare']:>11.2f}x{ratio['eval/stack']:>11.2f}x"
                f"{ratio['eval/log']:>9.2f}x{ratio['eval/view']:>10.2f}x{ratio['eval/bare']:>10.2f}x"
            )
    print(
        "ratios: the median of each round's ratio; "
        "targets: stack/bare <= 2 (errors and records on), eval/stack <= 1.2"
    )


def _flag(name: str, value: Any) -> str:
    flag = name.replace("_", "-")
    if isinstance(value, bool):
        return f"--{flag}" if value else f"--no-{flag}"
    return f"--{flag}={value}"


def compare(config: Config) -> dict[str, Any]:
    """The figures of each root (`versions.run_versions`), median per root, env and variant."""
    from versions import run_versions

    roots = config.roots.split(",")
    argv = [
        _flag(f.name, getattr(config, f.name))
        for f in dataclasses.fields(config)
        if f.name not in ("roots", "rounds", "json_out", "instructions", "count_variant")
    ]
    load_before = os.getloadavg()[0]
    runs = run_versions(__file__, roots, config.rounds, [*argv, "--rounds=1"])
    versions = {}
    for root, rounds in runs.items():
        rows = []
        for i, first in enumerate(rounds[0]["rows"]):
            per_round = {
                clock: [r["rows"][i][f"{clock}_ms_per_episode"] for r in rounds]
                for clock in ("wall", "cpu")
            }
            rows.append(
                {"env_id": first["env_id"], "episodes": first["episodes"], **_summary(per_round)}
            )
        versions[root] = rows
    figures = {
        "config": dataclasses.asdict(config),
        "cpu_count": os.cpu_count(),
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "versions": versions,
    }
    for root, rows in versions.items():
        print(f"== {root}")
        report({**figures, "rows": rows})
    if config.json_out:
        Path(config.json_out).write_text(json.dumps(figures, indent=2) + "\n")
    return figures


_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _count(
    root: str | None, config: Config, env_id: str, variant: str, tasks: int, counted: bool = True
) -> int:
    """Instructions callgrind counts in one process running ``variant`` once on ``tasks`` tasks
    (``counted=False``: the same process without valgrind, returning 0)."""
    argv = [
        _flag(f.name, getattr(config, f.name))
        for f in dataclasses.fields(config)
        if f.name in ("agent", "t", "n", "errors", "record_steps")
    ]
    # One BLAS thread: OpenBLAS's idle threads spin, and callgrind counts their spinning, which
    # depends on scheduling (counts of one process spread over ~15M instructions; with one, ~2k).
    env = {**os.environ, "PYTHONHASHSEED": "0", **dict.fromkeys(_BLAS_THREADS, "1")}
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(root).resolve()), env.get("PYTHONPATH", "")])
    callgrind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    done = subprocess.run(
        [*(callgrind if counted else []), sys.executable, __file__, *argv, f"--envs={env_id}",
         f"--tasks={tasks}", f"--count-variant={variant}"],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    if not counted and done.returncode == 0:
        return 0
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind run of {variant} on {env_id} failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def count_instructions(config: Config) -> dict[str, Any]:
    """Instructions per episode of each variant (`_count` of ``count_tasks`` tasks minus 2),
    per env and per root; runs as many callgrind processes at once as there are cores."""
    from concurrent.futures import ThreadPoolExecutor

    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind on the PATH (apt install valgrind)")
    if config.count_tasks <= 2:
        raise SystemExit("--count-tasks must be more than 2 (the smaller run has 2 tasks)")
    roots: list[str | None] = list(config.roots.split(",")) if config.roots else [None]
    env_ids = config.envs.split(",")
    jobs = [
        (root, env_id, variant, tasks)
        for root in roots
        for env_id in env_ids
        for variant in VARIANTS
        for tasks in (2, config.count_tasks)
    ]
    # One uncounted run of each job first, one at a time: a clean checkout's first process
    # compiles and writes the bytecode of every module it imports (and two processes at once
    # may both do it), millions of instructions that must not land in one count and not the other.
    for root, env_id, variant, tasks in jobs:
        if tasks == 2:
            _count(root, config, env_id, variant, tasks, counted=False)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        counts = dict(zip(jobs, pool.map(lambda job: _count(job[0], config, *job[1:]), jobs)))
    episodes = (config.count_tasks - 2) * config.n
    versions = {}
    for root in roots:
        rows = []
        for env_id in env_ids:
            per_episode = {
                v: (counts[root, env_id, v, config.count_tasks] - counts[root, env_id, v, 2])
                / episodes
                for v in VARIANTS
            }
            rows.append(
                {"env_id": env_id, "episodes": episodes, "instructions_per_episode": per_episode,
                 "instruction_ratios": _ratios(per_episode)}
            )  # fmt: skip
        versions[root or "."] = rows
    figures = {"config": dataclasses.asdict(config), "versions": versions}
    c = config
    print(
        f"instructions per episode (callgrind): agent {c.agent}, T = {c.t}, "
        f"{c.count_tasks} - 2 tasks x n = {c.n}, errors {c.errors}"
    )
    print(
        f"{'root':20}{'env id':32}{'bare':>12}{'stack':>12}{'+log':>12}{'+view':>12}"
        f"{'evaluate':>12}" + "".join(f"{name:>12}" for name in RATIOS)
    )
    for root, rows in versions.items():
        for row in rows:
            n, ratio = row["instructions_per_episode"], row["instruction_ratios"]
            print(
                f"{root:20}{row['env_id']:32}"
                + "".join(f"{n[v] / 1e6:>11.2f}M" for v in VARIANTS)
                + "".join(f"{ratio[name]:>11.2f}x" for name in RATIOS)
            )
    if config.json_out:
        Path(config.json_out).write_text(json.dumps(figures, indent=2) + "\n")
    return figures


if __name__ == "__main__":
    main(parse_args())
