"""An LLM agent on a small suite: Pass@(K,T) with the budget hidden and revealed, against random.

Questions:

1. How does an LLM agent (`ChatAgent`) do on a small suite (the native Easy
   games and one TextWorld game) in Pass@(K,T), against `RandomAgent` on the
   same tasks?
2. Does seeing its budget change it? The same agent with the budget hidden
   (budget-blind: truncate mode is exact) and revealed every turn (rerun
   mode: one run per T); the gap is revealed minus hidden, per T.
3. How fast is it? Decisions/s and tokens/s against the number of episodes in
   flight (``concurrency``): a batching server (vLLM, SGLang) gains from
   more; llama-cpp-python's server answers one request at a time.

4. Probe skills: teacher-forced single-step and recovery probes
   (`turnbudget.eval.probe`) on the native games, normalized against random
   (0: chance, 1: the oracle), the LLM driven with ``concurrency`` probes in
   flight.

By default the script starts the local server (`turnbudget serve-local`:
llama_cpp.server with Gemma 3 270M, a weak base model) and stops it at the
end; ``--base-url`` points it at any OpenAI-compatible server instead:

    python benchmarks/llm_agent.py --out runs/llm                        # local Gemma 3 270M
    python benchmarks/llm_agent.py --out runs/llm --tasks 2 --n 2 --ks 1,2 --ts 6,12   # quick
    OPENAI_API_KEY=... python benchmarks/llm_agent.py --out runs/llm-vllm \\
        --base-url http://gpu-box:8000/v1 --model Qwen/Qwen2.5-7B-Instruct --concurrency 32

Outputs: one run directory per (agent, budget visibility, suite) under
``OUT``, ``OUT/report.md`` and ``OUT/summary.json`` across them, and
``OUT/llm_agent.json`` with the figures printed here. Rerunning the same
command resumes finished runs.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent_runs import Run, evaluate_runs  # benchmarks/: the script's folder

import turnbudget  # noqa: F401 - registers the envs
from turnbudget.agents import RandomAgent
from turnbudget.cli.flags import parse_config
from turnbudget.eval import evaluate
from turnbudget.eval.report import build_report

REPO = Path(__file__).resolve().parents[1]
SHIPPED_TEXTWORLD = REPO / "tests" / "data" / "textworld"


@dataclasses.dataclass
class Config:
    out: str = "runs/llm_agent"
    """output directory; rerunning with the same settings resumes"""
    base_url: str = ""
    """OpenAI-compatible server root; empty: start the local Gemma 3 270M server"""
    model: str = "gemma-3-270m"
    """model name on the server"""
    api_key_env: str = "OPENAI_API_KEY"
    """environment variable holding the API key (never written anywhere)"""
    native_envs: tuple[str, ...] = ("turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0")
    """native games (task seeds 0..tasks-1)"""
    textworld_env: str = "turnbudget/TreasureHunter-Easy-v0"
    """one TextWorld game, played from the games shipped in tests/data (task seed 0); '' skips"""
    tasks: int = 3
    """task seeds per native game"""
    n: int = 2
    """episodes per task (>= max K)"""
    ks: tuple[int, ...] = (1, 2)
    """K values of the grid"""
    ts: tuple[int, ...] = (8, 16)
    """turn budgets T"""
    concurrency: int = 4
    """episodes in flight for the Pass@(K,T) runs"""
    sweep: tuple[int, ...] = (1, 2, 4)
    """concurrency values of the throughput sweep"""
    sweep_episodes: int = 4
    """episodes per sweep point (Maze-Easy, 3 turns each)"""
    probe_tasks: int = 2
    """task seeds per native game for the probes (0: no probes)"""
    probe_prefixes: tuple[float, ...] = (0.5,)
    """probe prefixes, as fractions of each task's optimal plan"""
    history: int = 4
    """past turns in the prompt"""
    parse: str = "lenient"
    """reply parsing: strict or lenient"""
    constrain: str = "auto"
    """constrained decoding: auto, grammar, guided_choice, json_schema or none"""
    max_tokens: int = 16
    """reply token cap"""
    threads: int = 1
    """CPU threads of the local server"""
    seed: int = 0
    """base seed of the agents"""
    progress: bool = True
    """show a progress bar per run"""


def parse_args(argv: list[str] | None = None) -> Config:
    """Command-line flags from the `Config` fields (``--tasks 2``, ``--ts 6,12``, ``--no-progress``)."""
    return parse_config(Config, argv, __doc__.split("\n\n")[0])


def _pass1(result: Any) -> list[float]:
    grid = result.grid()
    return [round(float(x), 4) for x in grid["mean"][grid["ks"].index(min(grid["ks"]))]]


def _suites(config: Config) -> list[tuple[str, list[str], tuple[int, ...]]]:
    suites = [("native", list(config.native_envs), tuple(range(config.tasks)))]
    if config.textworld_env:
        suites.append(("textworld", [config.textworld_env], (0,)))
    return suites


def main(config: Config) -> dict[str, Any]:
    from turnbudget.agents.llm import ChatAgent

    if max(config.ks) > config.n:
        raise SystemExit(f"error: --n {config.n} is below max(--ks) {max(config.ks)}")
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    server = None
    tw_cache = None
    figures: dict[str, Any] = {"config": dataclasses.asdict(config), "pass_at_1": {}}
    started = time.perf_counter()
    try:
        base_url = config.base_url or None
        if base_url is None:
            from turnbudget.agents.local_server import LocalServer

            server = LocalServer(n_threads=config.threads, log_path=out / "server.log").start()
            base_url, model = server.base_url, server.model
            print(f"local server: {model} at {base_url}")
        else:
            model = config.model
        if (
            config.textworld_env
        ):  # the shipped games, copied: nothing is generated or written to tests/
            tw_cache = tempfile.mkdtemp(prefix="turnbudget-tw-")
            shutil.copytree(SHIPPED_TEXTWORLD, tw_cache, dirs_exist_ok=True)
            os.environ["TURNBUDGET_TEXTWORLD_CACHE"] = tw_cache

        def llm(concurrency: int) -> ChatAgent:
            return ChatAgent(
                model, base_url=base_url, api_key_env=config.api_key_env, history=config.history,
                parse=config.parse, constrain=config.constrain, max_tokens=config.max_tokens,
                concurrency=concurrency,
            )  # fmt: skip

        # 1 + 2: Pass@(K,T), hidden and revealed, against random.
        plan = [
            ("llm-hidden", lambda: llm(config.concurrency), None, "truncate"),
            ("llm-revealed", lambda: llm(config.concurrency), "always", "rerun"),
            ("random", RandomAgent, None, "truncate"),
        ]
        runs = [
            Run(f"{label}-{suite}", make(), {"envs": envs, "tasks": tasks, "mode": mode,
                                             "reveal": reveal})
            for (label, make, reveal, mode), (suite, envs, tasks) in itertools.product(
                plan, _suites(config)
            )
        ]  # fmt: skip
        played = evaluate_runs(
            runs, out, ks=config.ks, ts=config.ts, n=config.n, seed=config.seed,
            progress=config.progress,
        )  # fmt: skip
        for label, run in played.items():
            result = run.result
            entry = {"pass_at_1": _pass1(result), "seconds": round(run.seconds, 1)}
            entry["agent_usage"] = result.summary.get("agent_usage")
            analysis = result.summary["analysis"]
            steps = analysis.get("all") or next(iter(analysis.values()))
            for key in ("optimal_step_rate", "self_error_rate"):
                entry[key] = steps[key]
            figures["pass_at_1"][label] = entry

        # 3: throughput against concurrency.
        sweep = {}
        for concurrency in config.sweep:
            t0 = time.perf_counter()
            result = evaluate(
                "turnbudget/Maze-Easy-v0", llm(concurrency), ks=(1,), ts=(3,), n=1,
                tasks=config.sweep_episodes, concurrency=concurrency, seed=config.seed,
            )  # fmt: skip
            wall = time.perf_counter() - t0
            steps = [s["agent"] for s in result.steps]
            tokens = sum(s["tokens_in"] + s["tokens_out"] for s in steps)
            sweep[concurrency] = {
                "decisions_per_s": round(len(steps) / wall, 3),
                "tokens_per_s": round(tokens / wall, 1),
                "decisions": len(steps),
            }
        figures["throughput"] = sweep
        figures["probes"] = _probes(config, llm(config.concurrency), out / "probes")
    finally:
        if server is not None:
            server.stop()
        if tw_cache is not None:
            shutil.rmtree(tw_cache, ignore_errors=True)
    build_report(out, plots=False)
    figures["seconds"] = round(time.perf_counter() - started, 1)
    (out / "llm_agent.json").write_text(json.dumps(figures, indent=1) + "\n")
    _print(config, figures)
    return figures


def _probes(config: Config, agent: Any, out: Path) -> dict[str, Any] | str:
    """Single-step and recovery skill of ``agent`` on the native games (slip errors)."""
    if not config.probe_tasks:
        return "skipped (--probe-tasks 0)"
    from turnbudget.agents import in_flight
    from turnbudget.eval import probe

    result = probe(
        list(config.native_envs), in_flight(agent), tasks=config.probe_tasks,
        prefixes=config.probe_prefixes, kinds=("slip",), seed=config.seed, label=agent.name,
        out=out, progress=config.progress,
    )  # fmt: skip
    groups = result.summary["agents"][agent.name]
    skills = groups.get("all") or next(iter(groups.values()))
    return {
        key: skills[key]["mean"]
        for key in ("single_step_skill", "noop_rate", "recovery_specific_skill")
        if key in skills
    }


def _print(config: Config, figures: dict[str, Any]) -> None:
    ts = config.ts
    print(
        f"\nPass@(1,T) at T = {', '.join(map(str, ts))}; optimal-step and self-error rates "
        "at the largest T (observational)"
    )
    rows = figures["pass_at_1"]
    for label, entry in rows.items():
        usage = entry["agent_usage"] or {}
        extra = (
            f"  admissible {usage['admissible_rate']:.2f}, {usage['tokens_in_per_step']:.0f} tokens in/step"
            if usage
            else ""
        )
        rates = (
            f"  optimal {entry['optimal_step_rate']:.2f}, self-error {entry['self_error_rate']:.2f}"
        )
        print(f"  {label:<24} {'  '.join(f'{x:.3f}' for x in entry['pass_at_1'])}{rates}{extra}")
    for suite, *_ in _suites(config):
        hidden, revealed = rows[f"llm-hidden-{suite}"], rows[f"llm-revealed-{suite}"]
        gap = [round(r - h, 3) for h, r in zip(hidden["pass_at_1"], revealed["pass_at_1"])]
        print(f"  gap revealed - hidden ({suite}): {gap}")
    print("decisions/s and tokens/s against concurrency")
    base = figures["throughput"][min(figures["throughput"])]["decisions_per_s"]
    for c, row in figures["throughput"].items():
        print(
            f"  {c:>3}: {row['decisions_per_s']:.2f} decisions/s, {row['tokens_per_s']:.0f} tokens/s "
            f"({row['decisions_per_s'] / base:.2f}x)"
        )
    print(f"probe skills: {figures['probes']}")
    print(f"total {figures['seconds']:.0f} s; report: {Path(config.out) / 'report.md'}")


if __name__ == "__main__":
    main(parse_args(sys.argv[1:]))
