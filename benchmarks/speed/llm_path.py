"""The LLM path: `serve-local` against llama.cpp in this process, on the same GGUF and prompts.

Question: how close to the hardware does an LLM agent run? The same
`evaluate` (Maze-Easy, ``tasks`` episodes of ``turns`` turns, the agent's
prompts append-only) is played by the same `ChatAgent` on:

- ``in-process``: llama.cpp's ``Llama`` in this process (``llm:local``) with
  llama.cpp's GBNF grammar over the admissible commands: the reference;
- ``in-process trie``: ``llm:local`` with its default constrained choice, a
  token trie of the admissible commands (no grammar over the vocabulary);
- ``serve-local``: ``llama_cpp.server`` without logits for every prompt token
  and without a prompt cache (``--cache-mb 0``), GBNF grammar;
- ``serve-local cache``: as `LocalServer` starts it by default, the same with a
  64 MiB prompt cache whose entries keep no logits (`turnbudget.agents.llama_server`);
- ``serve-local (old)``: the server as it was started before issue 26 (the
  server's default ``logits_all``, a 256 MiB prompt cache), GBNF grammar;

each at ``concurrency`` 1 and 4 episodes in flight, in interleaved rounds in
this one run (the median round is reported, and its ratio to in-process at
one episode in flight). Beside decisions/s of wall time, each row reports CPU
seconds per decision (this process plus the server's, read from ``/proc``):
on a loaded machine CPU time is the steadier figure. Every model runs on one
thread.

Then a long run: ``long_decisions`` decisions at 4 in flight against each
server, with its resident memory (RSS) sampled after every episode batch: the
first, last and peak.

Run:
    python benchmarks/speed/llm_path.py                   # 3 rounds, 4 x 4-turn episodes per point (~15 min)
    python benchmarks/speed/llm_path.py --rounds 1 --tasks 1 --turns 2 --long-decisions 4   # smoke
"""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import turnbudget  # noqa: F401 - registers the envs
from turnbudget.cli.flags import parse_config

PATHS = ("in-process", "in-process trie", "serve-local", "serve-local cache", "serve-local (old)")


@dataclasses.dataclass
class Config:
    env_id: str = "turnbudget/Maze-Easy-v0"
    """the game played"""
    tasks: int = 4
    """episodes per measurement (task seeds 0..tasks-1)"""
    turns: int = 4
    """turns per episode (the turn budget T)"""
    concurrency: tuple[int, ...] = (1, 4)
    """episodes in flight"""
    paths: tuple[str, ...] = PATHS
    """the paths measured (names as in the docstring)"""
    rounds: int = 3
    """interleaved rounds; the median is reported"""
    history: int = 4
    """past turns in the prompt"""
    long_decisions: int = 100
    """decisions of the long run per server (0: none)"""
    rss_limit_mib: int = 4096
    """stop a server's long run early once its RSS passes this (the old one grows)"""
    out: str = ""
    """write the figures as JSON here ('' : print only)"""


def parse_args(argv: list[str] | None = None) -> Config:
    return parse_config(Config, argv, __doc__.split("\n\n")[0])


def _cpu(pid: int | None) -> float:
    """CPU seconds of this process (pid None) or of process ``pid``."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class _OldServer:
    """`LocalServer` started as before issue 26: logits for every prompt token, a 256 MiB cache."""

    def __new__(cls, **kwargs: Any) -> Any:
        from turnbudget.agents.local_server import LocalServer

        class Old(LocalServer):
            def command(self) -> list[str]:
                command = super().command()
                at = command.index("--logits_all")
                return command[:at] + command[at + 2 :]  # the server's default: true

        return Old(cache_mb=256, **kwargs)


def _agents(config: Config, servers: dict[str, Any]) -> dict[str, Any]:
    from turnbudget.agents import make_agent

    agents = {}
    for path in config.paths:
        options = {"history": config.history, "max_tokens": 8}
        if path == "in-process":
            agents[path] = make_agent("llm:local", constrain="grammar", **options)
        elif path == "in-process trie":
            agents[path] = make_agent("llm:local", constrain="guided_choice", **options)
        else:
            server = servers[path]
            agents[path] = make_agent(
                f"llm:{server.model}", base_url=server.base_url, constrain="grammar", **options
            )
    return agents


def _measure(config: Config, agent: Any, concurrency: int, pid: int | None) -> dict[str, Any]:
    from turnbudget.eval import evaluate

    cpu0, server0, t0 = _cpu(None), (_cpu(pid) if pid else 0.0), time.perf_counter()
    result = evaluate(
        config.env_id, agent, ks=(1,), ts=(config.turns,), n=1, tasks=config.tasks,
        concurrency=concurrency, seed=0,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    cpu = _cpu(None) - cpu0 + ((_cpu(pid) - server0) if pid else 0.0)
    notes = [s["agent"] for s in result.steps]
    return {
        "decisions_per_s": len(notes) / wall,
        "cpu_s_per_decision": cpu / max(len(notes), 1),
        "tokens_in_per_decision": sum(n["tokens_in"] for n in notes) / max(len(notes), 1),
        "decisions": len(notes),
        "commands": [s["action"] for s in result.steps],
    }


def main(config: Config) -> dict[str, Any]:
    from turnbudget.agents.local_server import LocalServer

    unknown = sorted(set(config.paths) - set(PATHS))
    if unknown:
        raise SystemExit(f"error: unknown path(s) {unknown}; expect some of {list(PATHS)}")
    servers: dict[str, Any] = {}
    try:
        if "serve-local" in config.paths:
            servers["serve-local"] = LocalServer(cache_mb=0).start()
        if "serve-local cache" in config.paths:
            servers["serve-local cache"] = LocalServer(cache_mb=64).start()
        if "serve-local (old)" in config.paths:
            servers["serve-local (old)"] = _OldServer().start()
        agents = _agents(config, servers)
        for agent in agents.values():  # loads the in-process model, warms the servers
            _measure(dataclasses.replace(config, tasks=1, turns=1), agent, 1, None)
        rows: dict[str, list[dict[str, Any]]] = {}
        for _ in range(config.rounds):
            for concurrency in config.concurrency:
                for path in config.paths:  # interleaved: every path sees the same load
                    server = servers.get(path)
                    figures = _measure(config, agents[path], concurrency, server and server.pid)
                    rows.setdefault(f"{path} x{concurrency}", []).append(figures)
        table = {label: _median(runs) for label, runs in rows.items()}
        reference = next(iter(table.values()))["commands"]
        for row in table.values():
            row["same_commands_as_first_path"] = row.pop("commands") == reference
        memory = {path: _long_run(config, agents[path], server) for path, server in servers.items()}
    finally:
        for server in servers.values():
            server.stop()
    figures = {"config": dataclasses.asdict(config), "table": table, "server_rss_mib": memory}
    _print(config, figures)
    if config.out:
        Path(config.out).parent.mkdir(parents=True, exist_ok=True)
        Path(config.out).write_text(json.dumps(figures, indent=1) + "\n")
    return figures


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("decisions_per_s", "cpu_s_per_decision", "tokens_in_per_decision")
    row = {k: round(statistics.median(r[k] for r in runs), 4) for k in keys}
    row["decisions"] = runs[0]["decisions"]
    row["same_commands_every_round"] = all(r["commands"] == runs[0]["commands"] for r in runs)
    row["commands"] = runs[0]["commands"]
    return row


def _long_run(config: Config, agent: Any, server: Any) -> dict[str, float]:
    """RSS of ``server`` over ``long_decisions`` decisions at 4 in flight (MiB)."""
    from turnbudget.eval import evaluate

    samples = [_rss_mib(server.pid)]
    done, seed = 0, 1000
    while done < config.long_decisions:
        result = evaluate(
            config.env_id, agent, ks=(1,), ts=(config.turns,), n=1, tasks=4, concurrency=4,
            seed=seed,
        )  # fmt: skip
        done += len(result.steps)
        seed += 1
        samples.append(_rss_mib(server.pid))
        if samples[-1] > config.rss_limit_mib:
            break
    return {
        "decisions": done,
        "first": round(samples[0], 1),
        "last": round(samples[-1], 1),
        "peak": round(max(samples), 1),
    }


def _print(config: Config, figures: dict[str, Any]) -> None:
    table = figures["table"]
    base = table.get(f"in-process x{min(config.concurrency)}")
    print(
        f"\n{config.env_id}, {config.tasks} episodes x {config.turns} turns per point, "
        f"median of {config.rounds} interleaved round(s), 1 thread"
    )
    print(
        "| path | in flight | decisions/s | vs in-process x1 | CPU s/decision | prompt tokens/decision |"
    )
    print("|---|---|---|---|---|---|")
    for label, row in table.items():
        path, _, concurrency = label.rpartition(" x")
        ratio = f"{row['decisions_per_s'] / base['decisions_per_s']:.2f}x" if base else "-"
        print(
            f"| {path} | {concurrency} | {row['decisions_per_s']:.2f} | {ratio} | "
            f"{row['cpu_s_per_decision']:.3f} | {row['tokens_in_per_decision']:.0f} |"
        )
    for path, memory in figures["server_rss_mib"].items():
        print(
            f"{path}: RSS over {memory['decisions']} decisions at 4 in flight: "
            f"{memory['first']:.0f} -> {memory['last']:.0f} MiB (peak {memory['peak']:.0f})"
        )


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop the servers on kill too
    main(parse_args(sys.argv[1:]))
