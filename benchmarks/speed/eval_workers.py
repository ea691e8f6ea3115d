"""Two pool workers against one: the wall-clock ratio and where the CPU goes (issue 26).

Question: does a 2-worker ``pool`` finish a grid of a few thousand episodes
1.6x as fast as a 1-worker pool (target >= 1.6)? On a shared 2-core machine
the wall ratio mostly measures the neighbours, so the script also reports the
CPU time per episode of the driver (this process: receiving the chunks,
writing the logs, reading them back and summarising) and of the workers
(playing the episodes, encoding their records): the driver's share is what
keeps two workers from a 2x speedup on two cores.

Both measurements are one full `evaluate` call (``backend="pool"``, logs
into a fresh temporary directory, the summary with 1,000 bootstrap
resamples), in ``rounds`` interleaved rounds; medians are reported, with the
1-minute load average before and after. ``--roots`` runs the same rounds
against other versions of the library (see ``versions.py``).

Run:
    python benchmarks/speed/eval_workers.py                                 # 2,400 episodes x 2 x 3 rounds
    python benchmarks/speed/eval_workers.py --tasks 2 --n 2 --ks 1,2 --rounds 1  # smoke
    python benchmarks/speed/eval_workers.py --roots /tmp/before,.           # before/after, interleaved
"""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from turnbudget.agents import make_agent
from turnbudget.cli.flags import parse_config
from turnbudget.eval.run.evaluate import evaluate


@dataclasses.dataclass
class Config:
    envs: str = "turnbudget/KeyQuest-Medium-v0,turnbudget/Maze-Medium-v0"
    """comma-separated env ids"""
    agent: str = "random"
    """agent spec (random: every episode runs to max T)"""
    ks: str = "1,2,4,8"
    """K values"""
    ts: str = "16,24,32,48,64,96,128"
    """turn budgets T (truncate mode: one run per episode at max T)"""
    n: int = 8
    """episodes per task"""
    tasks: int = 150
    """task seeds per env"""
    rounds: int = 3
    """interleaved rounds; medians are reported"""
    json_out: str = ""
    """also write the figures to this JSON file"""
    roots: str = ""
    """compare library versions: comma-separated source roots (see versions.py)"""


WORKERS = (1, 2)


def parse_args(argv: list[str] | None = None) -> Config:
    return parse_config(Config, argv, __doc__)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # the workers, once joined
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def run_once(config: Config, workers: int) -> dict[str, float]:
    """One pool `evaluate` call: wall seconds, episodes, driver and worker CPU seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        main0, kids0 = _cpu()
        t0 = time.perf_counter()
        result = evaluate(
            config.envs.split(","), make_agent(config.agent), ks=_ints(config.ks),
            ts=_ints(config.ts), n=config.n, tasks=config.tasks, mode="truncate",
            backend="pool", workers=workers, out=Path(tmp) / "run", n_bootstrap=1000,
        )  # fmt: skip
        wall = time.perf_counter() - t0
        main1, kids1 = _cpu()
        return {
            "wall_s": wall, "episodes": result.n_run,
            "driver_cpu_s": main1 - main0, "workers_cpu_s": kids1 - kids0,
        }  # fmt: skip


def _row(samples: list[dict[str, float]]) -> dict[str, float]:
    episodes = samples[0]["episodes"]
    return {
        "episodes": episodes,
        "wall_s": statistics.median(s["wall_s"] for s in samples),
        "driver_cpu_ms_per_episode": statistics.median(
            1e3 * s["driver_cpu_s"] / episodes for s in samples
        ),
        "workers_cpu_ms_per_episode": statistics.median(
            1e3 * s["workers_cpu_s"] / episodes for s in samples
        ),
    }


def main(config: Config) -> dict[str, Any]:
    if config.roots:
        return compare(config)
    load_before = os.getloadavg()[0]
    samples: dict[int, list[dict[str, float]]] = {w: [] for w in WORKERS}
    for _ in range(config.rounds):  # interleaved: both see the same neighbours
        for workers in WORKERS:
            samples[workers].append(run_once(config, workers))
    rows = {str(w): _row(s) for w, s in samples.items()}
    figures = {
        "config": dataclasses.asdict(config),
        "cpu_count": os.cpu_count(),
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "rows": rows,
        "speedup_2_workers": rows["1"]["wall_s"] / rows["2"]["wall_s"],
    }
    report({"": figures})
    if config.json_out:
        Path(config.json_out).write_text(json.dumps(figures, indent=2) + "\n")
    return figures


def compare(config: Config) -> dict[str, Any]:
    from versions import run_versions

    argv = [
        f"--{f.name.replace('_', '-')}={getattr(config, f.name)}"
        for f in dataclasses.fields(config)
        if f.name not in ("roots", "rounds", "json_out")
    ]
    load_before = os.getloadavg()[0]
    runs = run_versions(__file__, config.roots.split(","), config.rounds, [*argv, "--rounds=1"])
    versions = {}
    for root, rounds in runs.items():
        rows = {}
        for w in map(str, WORKERS):
            rows[w] = {
                key: statistics.median(r["rows"][w][key] for r in rounds)
                for key in rounds[0]["rows"][w]
            }
        versions[root] = {
            "rows": rows,
            "speedup_2_workers": statistics.median(r["speedup_2_workers"] for r in rounds),
            "load_average_1min": [r["load_average_1min"] for r in rounds],
        }
    figures = {
        "config": dataclasses.asdict(config),
        "cpu_count": os.cpu_count(),
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "versions": versions,
    }
    report(versions)
    if config.json_out:
        Path(config.json_out).write_text(json.dumps(figures, indent=2) + "\n")
    return figures


def report(versions: dict[str, dict[str, Any]]) -> None:
    print(
        f"{'version':24}{'workers':>8}{'episodes':>9}{'wall s':>8}{'driver ms/ep':>14}"
        f"{'workers ms/ep':>15}{'1w/2w wall':>12}"
    )
    for root, figures in versions.items():
        for w, row in figures["rows"].items():
            ratio = f"{figures['speedup_2_workers']:.2f}x" if w == "2" else ""
            print(
                f"{root[-24:]:24}{w:>8}{row['episodes']:>9.0f}{row['wall_s']:>8.2f}"
                f"{row['driver_cpu_ms_per_episode']:>14.3f}"
                f"{row['workers_cpu_ms_per_episode']:>15.3f}{ratio:>12}"
            )
    print("target: 1w/2w wall >= 1.6 (CPU per episode: driver = this process, workers = the pool)")


if __name__ == "__main__":
    main(parse_args(sys.argv[1:]))
