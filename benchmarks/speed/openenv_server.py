"""OpenEnv server speed: steps/s through `turnbudget serve-env` against stepping in process.

Question: what does a trainer pay per turn for reaching the games over OpenEnv
(a WebSocket round trip, JSON and pydantic on both sides, a thread hop on the
server), with one session and with N sessions at once?

A uniform-random agent over ``info["admissible_actions"]`` (pre-drawn numbers,
so the agent costs the same everywhere) plays ``steps`` turns per session,
resetting (seed + episode index) when an episode ends; resets are counted in
the time, not as steps. Configurations, measured in interleaved rounds in this
one run (the median round is reported):

- ``in-process``: the env stack itself (`turnbudget.make(env_id)`);
- ``environment``: `TextGameEnvironment` in process (the server's per-session
  object: the stack, the agent view and the pydantic observation), no network;
- ``server x1``: one session through the server (`TextGameEnv`, async);
- ``server xN``: N sessions at once from one asyncio loop (total steps/s).

Beside steps/s of wall time, each configuration reports CPU microseconds per
step in this process (the client; the env itself for the first two) and in the
server's (read from ``/proc``, Linux): CPU time hardly depends on the machine's
load, wall time does.

The server runs in its own process (`EnvServer`, ``turnbudget serve-env``);
the client side (N sessions) runs in this one. On a 2-core machine the two
processes share both cores with whatever else runs.

Run:
    python benchmarks/speed/openenv_server.py                     # Maze-Medium, 2000 steps, 4 sessions, 3 rounds
    python benchmarks/speed/openenv_server.py --steps 50 --rounds 1 --sessions 2   # smoke
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import turnbudget
from turnbudget.cli.flags import parse_config


@dataclasses.dataclass
class Config:
    env_id: str = "turnbudget/Maze-Medium-v0"
    """the id played"""
    steps: int = 2000
    """turns per session per measurement"""
    sessions: int = 4
    """N, the concurrent sessions of the last configuration"""
    rounds: int = 3
    """interleaved rounds; the median is reported"""
    seed: int = 0
    """seed of the first episode and of the random agent"""


CONFIGS = ("in-process", "environment", "server x1", "server xN")


def picks(config: Config, session: int) -> list[float]:
    return np.random.default_rng([config.seed, session]).random(config.steps).tolist()


@dataclasses.dataclass
class Clock:
    """Wall time, and CPU time of this process and of the server's (seconds), from `start`."""

    server_pid: int | None = None

    def start(self) -> None:
        self.wall, self.cpu, self.server = time.perf_counter(), time.process_time(), self._server()

    def stop(self, steps: int) -> dict[str, float]:
        """steps/s of wall time, and CPU microseconds per step here and in the server."""
        wall = time.perf_counter() - self.wall
        return {
            "rate": steps / wall,
            "client_us": 1e6 * (time.process_time() - self.cpu) / steps,
            "server_us": 1e6 * (self._server() - self.server) / steps,
        }

    def _server(self) -> float:
        """The server's CPU seconds so far (Linux: /proc; elsewhere 0)."""
        if self.server_pid is None:
            return 0.0
        try:
            fields = Path(f"/proc/{self.server_pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def in_process(config: Config) -> dict[str, float]:
    env = turnbudget.make(config.env_id)
    _, info = env.reset(seed=config.seed)
    episode, clock = 0, Clock()
    clock.start()
    for p in picks(config, 0):
        actions = info["admissible_actions"] or ["look"]
        _, _, terminated, truncated, info = env.step(actions[int(p * len(actions))])
        if terminated or truncated:
            episode += 1
            _, info = env.reset(seed=config.seed + episode)
    return clock.stop(config.steps)


def environment(config: Config) -> dict[str, float]:
    from turnbudget.adapters.openenv import TextGameAction, TextGameEnvironment

    env = TextGameEnvironment(config.env_id)
    obs = env.reset(seed=config.seed)
    episode, clock = 0, Clock()
    clock.start()
    for p in picks(config, 0):
        actions = obs.info["admissible_actions"] or ["look"]
        obs = env.step(TextGameAction(command=actions[int(p * len(actions))]))
        if obs.done:
            episode += 1
            obs = env.reset(seed=config.seed + episode)
    env.close()
    return clock.stop(config.steps)


async def _session(
    base_url: str, config: Config, session: int, connected: asyncio.Queue, go: asyncio.Event
) -> None:
    from turnbudget.adapters.openenv import TextGameEnv

    try:
        async with TextGameEnv(base_url=base_url) as env:
            seed = config.seed + 1000 * session
            result = await env.reset(seed=seed)
            connected.put_nowait(None)
            await go.wait()  # every session has connected: the clock starts
            episode = 0
            for p in picks(config, session):
                actions = result.observation.info["admissible_actions"] or ["look"]
                result = await env.step(actions[int(p * len(actions))])
                if result.done:
                    episode += 1
                    result = await env.reset(seed=seed + episode)
    except Exception as exc:
        connected.put_nowait(exc)
        raise


async def _served(server: Any, config: Config, sessions: int) -> dict[str, float]:
    base_url = server.base_url
    connected: asyncio.Queue = asyncio.Queue()
    go = asyncio.Event()
    tasks = [
        asyncio.create_task(_session(base_url, config, s, connected, go)) for s in range(sessions)
    ]
    for _ in range(sessions):
        if isinstance(failure := await connected.get(), Exception):
            go.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise failure
    clock = Clock(server.pid)
    clock.start()
    go.set()
    await asyncio.gather(*tasks)
    return clock.stop(sessions * config.steps)


def measure(config: Config) -> dict[str, dict[str, float]]:
    """Per configuration, the median over rounds of each figure of `Clock.stop`."""
    from turnbudget.adapters.openenv import EnvServer

    samples: dict[str, list[dict[str, float]]] = {c: [] for c in CONFIGS}
    with EnvServer(config.env_id, max_sessions=config.sessions) as server:
        for _ in range(config.rounds):
            samples["in-process"].append(in_process(config))
            samples["environment"].append(environment(config))
            samples["server x1"].append(asyncio.run(_served(server, config, 1)))
            samples["server xN"].append(asyncio.run(_served(server, config, config.sessions)))
    return {c: {k: statistics.median(s[k] for s in v) for k in v[0]} for c, v in samples.items()}


def report(figures: dict[str, dict[str, float]], config: Config) -> None:
    print(
        f"{config.env_id}: random agent, {config.steps} steps per session, N = {config.sessions}; "
        f"median of {config.rounds} round(s)"
    )
    base = figures["in-process"]
    print(f"  {'':14} {'steps/s':>10} {'slower':>8} {'CPU us/step: client':>20} {'server':>8}")
    for name in CONFIGS:
        f = figures[name]
        label = name.replace("xN", f"x{config.sessions}")
        print(
            f"  {label:14} {f['rate']:>10,.0f} {base['rate'] / f['rate']:>7.1f}x "
            f"{f['client_us']:>20,.0f} {f['server_us']:>8,.0f}"
        )


def main(argv: list[str] | None = None) -> int:
    config = parse_config(Config, argv, __doc__)
    for name in ("steps", "sessions", "rounds"):
        if getattr(config, name) < 1:
            print(f"--{name} must be >= 1, got {getattr(config, name)}", file=sys.stderr)
            return 2
    report(measure(config), config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
