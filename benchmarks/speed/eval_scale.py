"""Scaling out: episodes per second in-process, on a local pool and on Ray; Ray's own costs.

Questions (issue 12):

1. How many episodes per second does each backend deliver on this machine:
   in-process (``local``), ``pool`` and ``ray`` with 1 and 2 workers? (ratios
   against in-process, all measured in the same run)
2. What does Ray cost to start (a local instance; the actors of one run), and
   what does the Ray path add per episode?
3. From those per-episode costs: what would a 1,000-core cluster do with the
   main job (``benchmarks/pass_at_kt.py``) at 100x its size?

The workload is the main job shrunk to ``tasks`` task seeds per env: its six
runs (random, oracle eps 0.1 and 0.3, each without and with injected errors;
KeyQuest-Medium + Maze-Medium; n = 8; T up to 128; truncate mode), each a full
`evaluate` call writing its logs into a temporary directory. Every variant runs
all six, in ``repeats`` interleaved rounds, and keeps its fastest round. One
local Ray instance (started and timed first) serves the Ray variants. The
``ray`` variants start their own actors in every run, which the figures
include and report; the ``ray kept`` ones keep them between runs
(``keep_workers=True``), as a long-lived cluster attach does, so what they show
is Ray at steady state, set beside the pool in episodes/s and in CPU per episode.

Run:
    python benchmarks/speed/eval_scale.py                        # defaults below, a few minutes
    python benchmarks/speed/eval_scale.py --tasks 1 --repeats 1  # smoke
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from turnbudget.cli.flags import parse_config


@dataclasses.dataclass
class Config:
    envs: str = "turnbudget/KeyQuest-Medium-v0,turnbudget/Maze-Medium-v0"
    """comma-separated env ids (the main job's)"""
    tasks: int = 4
    """task seeds per env (the main job has 50); marginal costs also run twice as many"""
    n: int = 8
    """episodes per task"""
    ts: str = "16,24,32,48,64,96,128"
    """turn budgets (truncate mode runs each episode once at the largest)"""
    error_rate: float = 0.05
    """injected error rate of the +errors runs"""
    runs: int = 6
    """how many of the main job's six runs to play (fewer for a smoke run)"""
    repeats: int = 2
    """interleaved rounds; each variant keeps its fastest"""
    calls: int = 200
    """Ray round trips timed to measure the per-call latency"""
    cores: int = 1000
    """cores of the cluster in the projection"""
    scale: int = 100
    """size of the projected job, in main jobs"""
    main_job_episodes: int = 4800
    """episodes of the main job (6 runs x 2 envs x 50 tasks x 8)"""
    json_out: str = ""
    """also write the figures to this JSON file"""


def parse_args(argv: list[str] | None = None) -> Config:
    return parse_config(Config, argv, __doc__)


def _runs(config: Config) -> list[tuple[str, Any, float | None]]:
    """The main job's six runs: (label, agent, error rate)."""
    from turnbudget.agents import OracleAgent, RandomAgent

    agents = [("random", RandomAgent()), ("oracle-eps0.1", OracleAgent(0.1))]
    agents.append(("oracle-eps0.3", OracleAgent(0.3)))
    return [
        (label if errors is None else f"{label}+errors", agent, errors)
        for errors in (None, config.error_rate)
        for label, agent in agents
    ][: config.runs]


def _cpu_self() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def _descendants_cpu() -> dict[int, float]:
    """CPU seconds of each live descendant of this process (a local Ray instance's raylet,
    GCS and actors; a pool's workers), by process id."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[tuple[int, float]]] = {}
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text() if entry.isdigit() else ""
        except OSError:  # (a process that ended meanwhile)
            continue
        if stat:
            fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) "
            cpu = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
            children.setdefault(int(fields[1]), []).append((int(entry), cpu))
    found, parents = {}, [os.getpid()]
    while parents:
        for pid, cpu in children.get(parents.pop(), []):
            found[pid] = cpu
            parents.append(pid)
    return found


def _cpu_waited() -> float:
    """CPU seconds of this process and of its children that ended and were waited for."""
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    return _cpu_self() + waited.ru_utime + waited.ru_stime


def _figure(value: float) -> float | None:
    """A figure for the JSON file: None where it could not be measured (NaN)."""
    return None if math.isnan(value) else round(value, 3)


def run_job(
    config: Config, backend: str, workers: int, tasks: int, options: dict[str, Any] | None = None
) -> tuple[float, int, float, float]:
    """The six runs on one backend: wall seconds, episodes, this process's CPU seconds, and
    the CPU seconds of every process involved, or NaN where one of them ended unwaited
    during the run (a Ray actor killed at its end) and took its CPU time with it."""
    from turnbudget.eval.run.evaluate import evaluate

    ts = [int(t) for t in config.ts.split(",")]
    ks = [k for k in (1, 2, 4, 8) if k <= config.n]
    episodes = 0
    before, waited0 = _descendants_cpu(), _cpu_waited()
    cpu0, t0 = _cpu_self(), time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for label, agent, errors in _runs(config):
            result = evaluate(
                config.envs.split(","), agent, ks=ks, ts=ts, n=config.n,
                tasks=tasks, mode="truncate", errors=errors, backend=backend,
                backend_options=options, workers=workers, out=Path(tmp) / label, label=label, n_bootstrap=100,
            )  # fmt: skip
            episodes += result.n_run
    wall, cpu = time.perf_counter() - t0, _cpu_self() - cpu0
    after, waited = _descendants_cpu(), _cpu_waited() - waited0
    if before.keys() - after.keys():
        return wall, episodes, cpu, float("nan")
    return wall, episodes, cpu, waited + sum(c - before.get(pid, 0.0) for pid, c in after.items())


def start_and_close(config: Config, backend: str, workers: int, **options: Any) -> float:
    """Seconds to start a backend's workers for a run and close them, playing nothing."""
    from turnbudget.agents import OracleAgent
    from turnbudget.eval.run.backends import make_backend
    from turnbudget.eval.run.plan import make_config

    eval_config = make_config(
        config.envs.split(","), OracleAgent(0.1), ks=[1], ts=[16], n=1, tasks=1,
        mode="truncate", reveal=None, errors=None, seed=0, label=None, record_steps=True,
    )  # fmt: skip
    t0 = time.perf_counter()
    with make_backend(backend, workers, **options).start(
        OracleAgent(0.1), eval_config, serialize=True
    ):
        pass
    return time.perf_counter() - t0


def start_costs(config: Config, repeats: int) -> dict[str, float]:
    """Seconds to start and close each backend's workers for one run (fastest of ``repeats``)."""
    from turnbudget.eval.run.backends.ray import release_workers

    costs: dict[str, float] = {}
    for name, workers in (("pool", 1), ("pool", 2), ("ray", 1), ("ray", 2)):
        best = float("inf")
        for _ in range(repeats):
            release_workers()  # these start their own actors: none kept from before
            best = min(best, start_and_close(config, name, workers))
        costs[f"{name} x{workers}"] = best
    # Kept actors: the first run starts them, every later one reuses them.
    for workers in (1, 2):
        start_and_close(config, "ray", workers, keep_workers=True)
        best = min(
            start_and_close(config, "ray", workers, keep_workers=True) for _ in range(repeats)
        )
        costs[f"ray x{workers} kept (reused)"] = best
    release_workers()
    return costs


def call_latency(calls: int) -> float:
    """Seconds per round trip of an empty actor call (what a chunk pays on top of its work)."""
    import ray

    @ray.remote(num_cpus=1)
    class Echo:
        def ping(self, x: Any) -> Any:
            return x

    actor = Echo.remote()
    ray.get(actor.ping.remote(0))
    t0 = time.perf_counter()
    for i in range(calls):
        ray.get(actor.ping.remote(i))
    latency = (time.perf_counter() - t0) / calls
    ray.kill(actor)
    return latency


def idle_driver_cpu(seconds: float = 5.0) -> float:
    """CPU seconds per second that an idle Ray driver spends (its background threads): part
    of the driver's CPU per episode here is this, paid per second of wall time, not per episode."""
    cpu0 = _cpu_self()
    time.sleep(seconds)
    return (_cpu_self() - cpu0) / seconds


def main(config: Config) -> dict:
    import ray

    from turnbudget.eval.run.backends.ray import OBJECT_STORE_BYTES, release_workers

    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    ray.init(
        address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
        object_store_memory=OBJECT_STORE_BYTES,
    )  # fmt: skip
    ray_init = time.perf_counter() - t0
    kept = {"keep_workers": True}
    variants: dict[str, tuple[str, int, dict[str, Any] | None]] = {
        "in-process": ("local", 1, None),
        "pool x1": ("pool", 1, None),
        "pool x2": ("pool", 2, None),
        "ray x1": ("ray", 1, None),
        "ray x2": ("ray", 2, None),
        "ray x1 kept": ("ray", 1, kept),
        "ray x2 kept": ("ray", 2, kept),
    }
    # Marginal costs come from the same variants at twice the tasks: the difference is
    # free of what a run pays once (starting workers, checking envs, the bootstrap).
    doubled = {f"{name} (2x tasks)": v for name, v in variants.items() if name != "pool x1"}
    rows: dict[str, tuple[float, int, float, float]] = {}
    try:
        for _ in range(config.repeats):
            for name, (backend, workers, options) in {**variants, **doubled}.items():
                tasks = config.tasks * (2 if name in doubled else 1)
                if backend == "ray" and not options:
                    release_workers()  # a run that starts its own actors reuses none
                elif options:  # kept actors are up before the run, as on a long-lived attach
                    start_and_close(config, backend, workers, **options)
                sample = run_job(config, backend, workers, tasks, options)
                if name not in rows or sample[0] < rows[name][0]:
                    rows[name] = sample
        starts = start_costs(config, config.repeats)
        latency = call_latency(config.calls)
        idle = idle_driver_cpu()
    finally:
        release_workers()
        t0 = time.perf_counter()
        ray.shutdown()
        ray_shutdown = time.perf_counter() - t0

    episodes = rows["in-process"][1]
    runs = len(_runs(config))
    per_episode = {name: r[0] / r[1] for name, r in rows.items() if name in variants}

    def marginal(name: str, column: int) -> float:
        small, large = rows[name], rows[f"{name} (2x tasks)"]
        extra = (large[column] - small[column]) / (large[1] - small[1])
        # With few episodes the noise can swamp the difference (even make it negative):
        # then the average per episode of the larger run stands in, an upper bound.
        return extra if extra > 0 else large[column] / large[1]

    # In-process, the driver plays every episode: its CPU time per extra episode is what one
    # core spends on one (CPU time, unlike wall time, barely moves with the neighbours' load).
    local = marginal("in-process", 2)
    # What the Ray path adds per episode, in wall time (round trips, (de)serialising, idling).
    ray_overhead = max(0.0, marginal("ray x1", 0) - marginal("in-process", 0))
    # The driver's CPU per extra episode (receive, write logs), less what its background
    # threads spend meanwhile whatever they do (that part shrinks with the wall time per episode).
    driver_cpu_raw = marginal("ray x2", 2)
    driver_cpu = max(driver_cpu_raw - idle * marginal("ray x2", 0), 0.05 * driver_cpu_raw)
    # Steady state: Ray with its actors kept between runs (a long-lived attach) against the
    # pool, 2 workers each, in episodes/s of the larger runs. (Not the marginal cost: the
    # difference of two noisy times swings by more than the gap it would measure.)
    larger = {name: rows[f"{name} (2x tasks)"] for name in ("pool x2", "ray x2", "ray x2 kept")}
    steady = (larger["ray x2 kept"][1] / larger["ray x2 kept"][0]) / (
        larger["pool x2"][1] / larger["pool x2"][0]
    )
    # The same in CPU time of every process involved: what the two cost the machine per
    # episode, which moves far less with other jobs' load than wall time does.
    steady_cpu = (larger["pool x2"][3] / larger["pool x2"][1]) / (
        larger["ray x2 kept"][3] / larger["ray x2 kept"][1]
    )
    # Projection: a core plays an episode in (local + overhead); the one driver handles all.
    big = config.scale * config.main_job_episodes
    rate = min(config.cores / (local + ray_overhead), 1.0 / driver_cpu)
    bound = "the driver" if 1.0 / driver_cpu < config.cores / (local + ray_overhead) else "cores"
    projected = runs * starts["ray x2"] + big / rate
    figures = {
        "cpu_count": os.cpu_count(),
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "config": dataclasses.asdict(config),
        "episodes_per_variant": episodes,
        "seconds": {name: round(r[0], 3) for name, r in rows.items()},
        "episodes": {name: r[1] for name, r in rows.items()},
        "episodes_per_second": {name: round(1 / t, 1) for name, t in per_episode.items()},
        "ratio_to_in_process": {
            name: round(per_episode["in-process"] / t, 3) for name, t in per_episode.items()
        },
        "driver_cpu_seconds": {name: round(r[2], 3) for name, r in rows.items()},
        "all_cpu_seconds": {name: _figure(r[3]) for name, r in rows.items()},
        "ray_init_seconds": round(ray_init, 3),
        "ray_shutdown_seconds": round(ray_shutdown, 3),
        "worker_start_seconds": {k: round(v, 3) for k, v in starts.items()},
        "ray_call_latency_ms": round(latency * 1e3, 3),
        "episodes_per_second_2x_tasks": {name: round(r[1] / r[0], 1) for name, r in larger.items()},
        "all_cpu_ms_per_episode_2x_tasks": {
            # (not "ray x2": its actors die unwaited at each run's end, with their CPU time)
            name: _figure(larger[name][3] / larger[name][1] * 1e3)
            for name in ("pool x2", "ray x2 kept")
        },
        "steady_state_ray_kept_vs_pool_x2_cpu": round(steady_cpu, 3),
        "steady_state_ray_kept_vs_pool_x2": round(steady, 3),
        "cpu_ms_per_episode_in_process": round(local * 1e3, 3),
        "ray_overhead_ms_per_episode": round(ray_overhead * 1e3, 3),
        "ray_driver_cpu_ms_per_episode": round(driver_cpu * 1e3, 3),
        "ray_driver_cpu_ms_per_episode_raw": round(driver_cpu_raw * 1e3, 3),
        "ray_driver_idle_cpu_per_second": round(idle, 4),
        "projection": {
            "episodes": big,
            "cores": config.cores,
            "episodes_per_second": round(rate, 1),
            "bound_by": bound,
            "seconds": round(projected, 1),
        },
    }
    print(f"{episodes} episodes per variant (the main job's 6 runs at {config.tasks} tasks/env)")
    print(
        f"{'variant':<12} {'wall s':>8} {'episodes/s':>11} {'vs in-process':>14} {'driver cpu s':>13}"
    )
    for name, t in per_episode.items():
        wall, _, cpu, _ = rows[name]
        print(
            f"{name:<12} {wall:>8.2f} {1 / t:>11.1f} "
            f"{per_episode['in-process'] / t:>14.3f} {cpu:>13.2f}"
        )
    print(f"ray.init (local instance): {ray_init:.2f} s   ray.shutdown: {ray_shutdown:.2f} s")
    print(
        "workers' start + close per run: " + ", ".join(f"{k} {v:.2f} s" for k, v in starts.items())
    )
    print(f"empty actor call round trip: {latency * 1e3:.2f} ms")
    print(
        "2 workers, 2x tasks: "
        + ", ".join(f"{k} {v:.1f}" for k, v in figures["episodes_per_second_2x_tasks"].items())
        + f" episodes/s; steady state, Ray (kept actors) vs pool: {steady:.2f}x "
        + "(all processes' CPU per episode: "
        + ", ".join(
            f"{k} {v:.2f} ms" for k, v in figures["all_cpu_ms_per_episode_2x_tasks"].items()
        )
        + f"; pool/Ray {steady_cpu:.2f}x)"
    )
    print(
        f"marginal per episode (1x vs 2x tasks): {local * 1e3:.2f} ms CPU in-process; the Ray "
        f"path adds {ray_overhead * 1e3:.2f} ms wall; Ray driver CPU {driver_cpu * 1e3:.2f} ms "
        f"({driver_cpu_raw * 1e3:.2f} ms less {idle:.3f} CPU s/s of idle background threads)"
    )
    print(
        f"projection: {big:,} episodes on {config.cores} cores -> "
        f"min({config.cores}/{(local + ray_overhead) * 1e3:.2f} ms, 1/{driver_cpu * 1e3:.2f} ms) "
        f"= {rate:,.0f} episodes/s (bound by {bound}); {projected:,.0f} s with "
        f"{runs} actor starts"
    )
    print(f"cpus {os.cpu_count()}, 1-min load average before/after {figures['load_average_1min']}")
    if config.json_out:
        Path(config.json_out).write_text(json.dumps(figures, indent=1) + "\n")
    return figures


if __name__ == "__main__":
    main(parse_args())
