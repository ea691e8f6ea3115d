"""Memory against the number of episodes: the peak RSS of whole evaluations (issue 26).

Question: does the driver's peak memory stay flat as a run grows from
thousands to millions of episodes? Each size is one `evaluate` call (a fast
trivial agent, small budgets, no step records, logs written into a temporary
run directory, the summary computed from them) in a fresh Python process of
its own, whose peak resident set (``ru_maxrss``) is read when it ends; the
figure of an empty call (a one-task run) is the baseline every process pays
for its imports. Sizes grow ``n`` (episodes per task) at a fixed number of
tasks, so only the number of episodes changes; a second sweep (``--grow
tasks``) grows the tasks instead, where a run keeps a few integers per task
(its per-task Pass@(K,T) counts and grids).

Run:
    python benchmarks/speed/eval_memory.py                               # 10k, 100k: ~5 min here
    python benchmarks/speed/eval_memory.py --sizes 10000,100000,1000000  # + 1M: ~30 min more
    python benchmarks/speed/eval_memory.py --sizes 200,400 --tasks 20    # smoke
    python benchmarks/speed/eval_memory.py --resume --ts 16,32 --sizes 4000,16000  # resume
"""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from turnbudget.cli.flags import parse_config


@dataclasses.dataclass
class Config:
    env: str = "turnbudget/Maze-Easy-v0"
    """env id"""
    agent: str = "random"
    """agent spec (`turnbudget.agents.make_agent`)"""
    sizes: str = "10000,100000"
    """comma-separated episode counts, one process each"""
    tasks: int = 100
    """task seeds (each size is tasks x n episodes; the first size sets the tasks when growing them)"""
    grow: str = "n"
    """what grows with the size: ``n`` (episodes per task, tasks fixed) or ``tasks`` (n fixed at 8)"""
    ks: str = "1,2,4,8"
    """K values"""
    ts: str = "2,4"
    """turn budgets T (truncate mode: one run per episode at max(T))"""
    n_bootstrap: int = 200
    """bootstrap resamples of the summary"""
    resume: bool = False
    """record steps too, and resume each finished run in a fresh process of its own: its
    peak beside the run's (a resume reads and checks both logs before it appends)"""
    json_out: str = ""
    """also write the figures to this JSON file"""


def parse_args(argv: list[str] | None = None) -> Config:
    return parse_config(Config, argv, __doc__)


def _shape(config: Config, size: int) -> tuple[int, int]:
    """(tasks, n) of a run of ``size`` episodes."""
    if config.grow == "n":
        return config.tasks, max(1, size // config.tasks)
    if config.grow == "tasks":
        return max(1, size // 8), 8
    raise ValueError(f"Expect `grow` to be `n` or `tasks`, got {config.grow!r}")


def child(config: Config, tasks: int, n: int, out: str = "") -> dict[str, Any]:
    """One evaluation in this process: its episodes, seconds and peak RSS (MiB). With
    ``out``, the run is kept there, or resumed there when it holds one."""
    from turnbudget.agents import make_agent
    from turnbudget.eval.run.evaluate import evaluate

    ks = [k for k in (int(k) for k in config.ks.split(",")) if k <= n]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = evaluate(
            config.env, make_agent(config.agent), ks=ks, ts=[int(t) for t in config.ts.split(",")],
            n=n, tasks=tasks, mode="truncate", record_steps=config.resume,
            out=Path(out or tmp) / "run", n_bootstrap=config.n_bootstrap,
        )  # fmt: skip
        episodes = result.summary["n_episodes"]
    seconds = time.perf_counter() - t0
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {
        "episodes": episodes,
        "seconds": round(seconds, 2),
        "peak_mib": round(peak_kib / 1024, 1),
    }


def measure(config: Config, tasks: int, n: int, out: str = "") -> dict[str, Any]:
    """`child` in a fresh interpreter (its peak is its own)."""
    argv = [
        sys.executable, __file__, "--child", json.dumps([dataclasses.asdict(config), tasks, n, out])
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"The run of {tasks} x {n} episodes failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(config: Config) -> dict[str, Any]:
    sizes = [int(s) for s in config.sizes.split(",")]
    baseline = measure(config, 1, 8)
    rows = []
    for size in sizes:
        tasks, n = _shape(config, size)
        with tempfile.TemporaryDirectory() as out:
            row = {"tasks": tasks, "n": n, **measure(config, tasks, n, out)}
            if config.resume:  # (the same run, finished: resume reads it all, runs nothing)
                row["resume_peak_mib"] = measure(config, tasks, n, out)["peak_mib"]
        row["over_baseline_mib"] = round(row["peak_mib"] - baseline["peak_mib"], 1)
        rows.append(row)
    figures = {
        "cpu_count": os.cpu_count(),
        "config": dataclasses.asdict(config),
        "baseline": baseline,
        "runs": rows,
    }
    resumed = f" {'resume MiB':>11}" if config.resume else ""
    print(
        f"{'episodes':>10} {'tasks':>6} {'n':>7} {'seconds':>8} {'peak MiB':>9} {'over base':>10}"
        + resumed
    )
    print(f"{baseline['episodes']:>10} {1:>6} {8:>7} {baseline['seconds']:>8.1f} "
          f"{baseline['peak_mib']:>9.1f} {'(baseline)':>10}")  # fmt: skip
    for r in rows:
        resumed = f" {r['resume_peak_mib']:>11.1f}" if config.resume else ""
        print(f"{r['episodes']:>10} {r['tasks']:>6} {r['n']:>7} {r['seconds']:>8.1f} "
              f"{r['peak_mib']:>9.1f} {r['over_baseline_mib']:>10.1f}" + resumed)  # fmt: skip
    if config.json_out:
        Path(config.json_out).write_text(json.dumps(figures, indent=1) + "\n")
    return figures


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        fields, tasks, n, out = json.loads(sys.argv[2])
        print(json.dumps(child(Config(**fields), tasks, n, out)))
    else:
        main(parse_args(sys.argv[1:]))
