"""What sealing an agent costs: per step, and once per process, against running it in-process.

A sealed agent (`turnbudget.eval.run.sealed.seal`, ``evaluate(..., sealed=True)``,
``turnbudget eval --sealed``) runs in a process of its own and answers over a pipe,
so each turn pays a round trip (pickling the view, the child's reply as JSON, two
context switches), and each worker pays one interpreter start. This script
measures both, in the same run, on the local backend:

- **per step**: the same `evaluate` call (records written into a fresh run
  directory) in-process and sealed, in interleaved rounds; the extra wall time
  of the sealed call divided by its steps (turns played), median over the
  rounds. The sealed agent's process is started before the clock (the proxy is
  made by `seal` outside it and reused by every sealed call), so the per-step
  figure holds no start-up.
- **CPU per step**: the same, in CPU time (this process's, plus the agent
  process's, read from ``/proc`` on Linux), which a busy machine disturbs less
  than wall time (wall time also pays for the neighbours' turns between the two
  processes' hand-overs).
- **start**: the wall time of `seal(agent)` (a fresh interpreter importing
  turnbudget and the agent, then loading it), median over the rounds.

Run:
    python benchmarks/speed/sealed_cost.py                     # defaults below: about 1.5 minutes
    python benchmarks/speed/sealed_cost.py --tasks 4 --rounds 1   # quick look
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from turnbudget.agents import make_agent
from turnbudget.cli.flags import parse_config
from turnbudget.eval.run.evaluate import evaluate
from turnbudget.eval.run.sealed import seal


@dataclasses.dataclass
class Config:
    envs: str = "turnbudget/Maze-Easy-v0,turnbudget/KeyQuest-Medium-v0"
    """comma-separated env ids, each measured on its own"""
    agent: str = "oracle:0.1"
    """agent spec (built in; sealed by seal(make_agent(spec)))"""
    tasks: int = 100
    """task seeds per env"""
    n: int = 4
    """episodes per task"""
    t: int = 64
    """the turn budget (one T: truncate mode)"""
    rounds: int = 3
    """interleaved rounds (in-process, sealed); figures are their medians"""
    json_out: str = ""
    """also write the figures to this JSON file"""


def parse_args(argv: list[str] | None = None) -> Config:
    return parse_config(Config, argv, __doc__)


def child_cpu(agent: object) -> float:
    """CPU seconds the sealed agent's process has used (0 where ``/proc`` is missing)."""
    child = getattr(agent, "_child", None)
    try:
        fields = Path(f"/proc/{child.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (AttributeError, OSError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def timed(config: Config, env_id: str, agent: object, root: Path) -> tuple[float, float, int]:
    """One `evaluate` call into a fresh run directory: wall and CPU seconds (this process's
    and the agent process's), and the steps played."""
    out = Path(tempfile.mkdtemp(dir=root))
    cpu0, start = time.process_time() + child_cpu(agent), time.perf_counter()
    result = evaluate(
        env_id, agent, ks=[1], ts=[config.t], n=config.n, tasks=config.tasks, out=out,
        n_bootstrap=0,
    )  # fmt: skip
    wall, cpu = time.perf_counter() - start, time.process_time() + child_cpu(agent) - cpu0
    return wall, cpu, sum(int(e["turns_used"]) for e in result.episodes)


def main(config: Config) -> dict:
    envs = [e.strip() for e in config.envs.split(",") if e.strip()]
    load_before = os.getloadavg()[0]
    samples: dict[str, dict[str, list[float]]] = {
        env: {k: [] for k in ("in_process_s", "sealed_s", "in_process_cpu", "sealed_cpu", "steps")}
        for env in envs
    }
    starts = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(config.rounds):
            t0 = time.perf_counter()
            sealed = seal(make_agent(config.agent))
            starts.append(time.perf_counter() - t0)
            try:
                for env in envs:
                    wall, cpu, steps = timed(config, env, make_agent(config.agent), Path(tmp))
                    sealed_wall, sealed_cpu, sealed_steps = timed(config, env, sealed, Path(tmp))
                    assert steps == sealed_steps, "sealed and in-process runs differ"
                    for key, value in (
                        ("in_process_s", wall), ("sealed_s", sealed_wall),
                        ("in_process_cpu", cpu), ("sealed_cpu", sealed_cpu), ("steps", steps),
                    ):  # fmt: skip
                        samples[env][key].append(value)
            finally:
                sealed.close()
    rows = {}
    for env, s in samples.items():
        steps = s["steps"][0]
        extra, extra_cpu = (
            [
                (b - a) / steps * 1e6
                for a, b in zip(s[f"in_process_{k}"], s[f"sealed_{k}"], strict=True)
            ]
            for k in ("s", "cpu")
        )
        rows[env] = {
            "steps": steps,
            "in_process_us_per_step": round(statistics.median(s["in_process_s"]) / steps * 1e6, 1),
            "sealed_us_per_step": round(statistics.median(s["sealed_s"]) / steps * 1e6, 1),
            "extra_us_per_step": round(statistics.median(extra), 1),
            "extra_us_per_step_per_round": [round(x, 1) for x in extra],
            "in_process_cpu_us_per_step": round(
                statistics.median(s["in_process_cpu"]) / steps * 1e6, 1
            ),
            "extra_cpu_us_per_step": round(statistics.median(extra_cpu), 1),
            "sealed_over_in_process": round(
                statistics.median(s["sealed_s"]) / statistics.median(s["in_process_s"]), 2
            ),
        }
    figures = {
        "cpu_count": os.cpu_count(),
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "config": dataclasses.asdict(config),
        "start_s": round(statistics.median(starts), 3),
        "start_s_per_round": [round(x, 3) for x in starts],
        "envs": rows,
    }
    print(
        f"{'env id':<30} {'steps':>6} {'in-proc µs/step':>15} {'sealed µs/step':>14} "
        f"{'extra µs/step':>13} {'ratio':>6} {'in-proc cpu':>11} {'extra cpu':>9}"
    )
    for env, r in rows.items():
        print(
            f"{env:<30} {r['steps']:>6} {r['in_process_us_per_step']:>15.1f} "
            f"{r['sealed_us_per_step']:>14.1f} {r['extra_us_per_step']:>13.1f} "
            f"{r['sealed_over_in_process']:>6.2f} {r['in_process_cpu_us_per_step']:>11.1f} "
            f"{r['extra_cpu_us_per_step']:>9.1f}"
        )
    print(f"start of a sealed agent's process: {figures['start_s']:.3f} s (median)")
    print(
        f"cpus {figures['cpu_count']}, 1-min load average before/after "
        f"{figures['load_average_1min']}"
    )
    if config.json_out:
        Path(config.json_out).write_text(json.dumps(figures, indent=1) + "\n")
    return figures


if __name__ == "__main__":
    main(parse_args(sys.argv[1:]))
