"""What a teacher-forced probe costs on the native Medium games.

Question: how long does one probe take (planning its state, then driving an
agent through the forced prefix and the probe), so a probe set can be sized?

For each native Medium id: plan the probes of ``tasks`` task seeds (an optimal
plan per task, four prefixes, a slip and a setback per prefix, each checked to
raise the distance), then run them for ``OracleAgent(0.1)``; `probe` runs the
same probes for the random baseline (``baseline_repeats`` times). Prints
per-probe wall and CPU milliseconds for the planning and for the runs.

Run:
    python benchmarks/speed/probe_cost.py                 # 20 tasks per env
    python benchmarks/speed/probe_cost.py --tasks 2       # smoke
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import gymnasium as gym

import turnbudget  # noqa: F401 - registers the envs
from turnbudget.agents import OracleAgent
from turnbudget.eval.probes.run import ProbeConfig, plan_probes, probe


@dataclasses.dataclass
class Config:
    tasks: int = 20
    """task seeds per env"""
    baseline_repeats: int = 4
    """probes per state for the random baseline"""
    json_out: str = ""
    """also write the figures to this JSON file"""


def medium_ids() -> list[str]:
    return sorted(
        env_id
        for env_id, spec in gym.registry.items()
        if env_id.startswith("turnbudget/")
        and "-Medium-" in env_id
        and str(spec.kwargs.get("game_entry_point", "")).startswith("turnbudget.envs.native")
    )


def measure(env_id: str, config: Config) -> dict[str, float]:
    plan_config = ProbeConfig(
        labels=("oracle",), envs=(env_id,), agents=("OracleAgent(epsilon=0.1)",),
        tasks=tuple(range(config.tasks)),
    )  # fmt: skip
    wall, cpu = time.perf_counter(), time.process_time()
    specs = plan_probes(plan_config)
    plan_wall, plan_cpu = time.perf_counter() - wall, time.process_time() - cpu
    wall, cpu = time.perf_counter(), time.process_time()
    result = probe(
        env_id, OracleAgent(0.1), tasks=config.tasks,
        baseline_repeats=config.baseline_repeats, n_bootstrap=0,
    )  # fmt: skip
    total_wall, total_cpu = time.perf_counter() - wall, time.process_time() - cpu
    runs = len(result.records)  # probe episodes run: agent + baseline repeats
    run_wall, run_cpu = total_wall - plan_wall, total_cpu - plan_cpu
    return {
        "probe_states": len(specs),
        "probe_episodes": runs,
        "plan_ms_per_state": round(1e3 * plan_wall / len(specs), 3),
        "plan_cpu_ms_per_state": round(1e3 * plan_cpu / len(specs), 3),
        "run_ms_per_episode": round(1e3 * run_wall / runs, 3),
        "run_cpu_ms_per_episode": round(1e3 * run_cpu / runs, 3),
        "total_s": round(total_wall, 3),
    }


def main(config: Config) -> dict[str, dict[str, float]]:
    figures = {env_id: measure(env_id, config) for env_id in medium_ids()}
    print(
        "| env id | probe states | probe episodes | plan ms/state (CPU) | run ms/episode (CPU) | total s |"
    )
    print("|---|---|---|---|---|---|")
    for env_id, f in figures.items():
        print(
            f"| {env_id.split('/')[-1]} | {f['probe_states']} | {f['probe_episodes']} | "
            f"{f['plan_ms_per_state']:.2f} ({f['plan_cpu_ms_per_state']:.2f}) | "
            f"{f['run_ms_per_episode']:.2f} ({f['run_cpu_ms_per_episode']:.2f}) | {f['total_s']:.1f} |"
        )
    if config.json_out:
        with open(config.json_out, "w") as f:
            json.dump({"config": dataclasses.asdict(config), "figures": figures}, f, indent=1)
    return figures


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=Config.tasks)
    parser.add_argument("--baseline-repeats", type=int, default=Config.baseline_repeats)
    parser.add_argument("--json-out", default="")
    return Config(**vars(parser.parse_args(argv)))


if __name__ == "__main__":
    main(parse_args())
