"""Helpers shared by the test suite (importable as `_support`: tests/ is on pytest's pythonpath)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import turnbudget  # noqa: F401 - registers the envs

#: Seconds a test waits on a child process (or a reply) before calling it hung. Only a hang
#: reaches it: how long a sound child runs grows with the machine's load (a documentation
#: block that starts ten worker processes took over 300 s at a load of 30 on two cores), so
#: a tighter bound fails sound code on a busy machine. CI's own limit is 90 minutes.
HANG_GUARD = 1800


def nested(depth: int) -> list:
    """A list ``depth`` lists deep: past the interpreter's recursion limit for ~1,000 and more."""
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def run_child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with ``args``, its output captured as text; a hang
    (what a regression of a not-a-regular-file test does) ends at `HANG_GUARD`."""
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=HANG_GUARD
    )


def make_not_regular(path: Path, kind: str) -> None:
    """Put at ``path`` what a reader must refuse to read: a FIFO (``"fifo"``: reading it blocks
    for ever) or a link to /dev/zero (anything else: reading it never ends)."""
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


def native_env_ids() -> list[str]:
    """Every registered difficulty of a native (pure-Python) game (not the free ``-v0`` ids)."""
    return sorted(
        env_id
        for env_id, spec in gym.registry.items()
        if env_id.startswith("turnbudget/")
        and str(spec.kwargs.get("game_entry_point", "")).startswith("turnbudget.envs.native")
        and "difficulty" in spec.kwargs
    )


def rollout_digest(env_id: str, seed: int, steps: int = 60) -> str:
    """Hash of every observation, reward, flag and info of a seeded random rollout."""
    env = gym.make(env_id)
    rng = np.random.default_rng(seed)
    digest = hashlib.sha256()

    def feed(*items: Any) -> None:
        digest.update(json.dumps(items, sort_keys=True, default=str).encode())

    obs, info = env.reset(seed=seed)
    feed(obs, info)
    for _ in range(steps):
        actions = info["admissible_actions"] or ["look"]
        action = actions[int(rng.integers(len(actions)))]
        obs, reward, terminated, truncated, info = env.step(action)
        feed(obs, float(reward), terminated, truncated, info)
        if terminated or truncated:
            obs, info = env.reset()
            feed(obs, info)
    return digest.hexdigest()


SHIPPED_TEXTWORLD_GAMES = Path(__file__).resolve().parent / "data" / "textworld"


def copy_shipped_textworld_games(destination: Path) -> Path:
    """Copy the shipped TextWorld games (game 0 of every variant) into a cache root,
    so tests play them without generating anything and never write to tests/data."""
    shutil.copytree(SHIPPED_TEXTWORLD_GAMES, destination, dirs_exist_ok=True)
    return destination


def child_pids() -> set[int]:
    """This process's child processes, zombies included (Linux: /proc/<pid>/task/*/children).

    An env's closing reaps its interpreter process (``waitpid``), so a child
    still listed after ``close`` returned is one that outlived its env.
    """
    pids: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # (a thread that ended meanwhile)
            pids.update(int(pid) for pid in (task / "children").read_text().split())
    return pids


def broken_zip(member: str, payload: bytes, how: str) -> bytes:
    """A zip of one ``member`` that zipfile opens and then fails to read: ``"deflate"``, its
    compressed bytes overwritten (zlib.error), or ``"version"``, a version needed to extract
    that zipfile does not know (NotImplementedError)."""
    import io
    import struct
    import zipfile

    buffer = io.BytesIO()
    compression = zipfile.ZIP_DEFLATED if how == "deflate" else zipfile.ZIP_STORED
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        archive.writestr(member, payload)
    data = bytearray(buffer.getvalue())
    if how == "deflate":
        name_length, extra_length = struct.unpack("<HH", data[26:30])
        size = struct.unpack("<I", data[18:22])[0]
        start = 30 + name_length + extra_length
        data[start : start + size] = b"\xff" * size
    else:
        central = data.rfind(b"PK\x01\x02")
        data[central + 6 : central + 8] = struct.pack("<H", 92)
    return bytes(data)


class ElsewhereOracle:
    """Declares ``needs_oracle`` only in a process other than the one that made it (a pool
    worker, a sealed agent's process), and plays the oracle's first action when it is given
    one, else a seeded pick among the admissible commands (here, as in a sealed agent's
    process: it is importable by name)."""

    name = "elsewhere-oracle"
    budget_aware = False

    def __init__(self) -> None:
        self.maker = os.getpid()
        self.rng = np.random.default_rng(0)

    @property
    def needs_oracle(self) -> bool:
        return os.getpid() != self.maker

    def reset(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info.get("oracle_actions"):
            return sorted(info["oracle_actions"])[0]
        admissible = info["admissible_actions"] or ["wait"]
        return admissible[int(self.rng.integers(len(admissible)))]


def eps_oracle_reach(game: Any, observation: str, epsilons: list[float]) -> list[float]:
    """P(won within t turns), t = 1..len(epsilons), of an ε-oracle playing ``game`` (an
    unwrapped native game, in the state ``observation`` shows) with ε ``epsilons[t - 1]`` on
    turn t: each turn an optimal command with probability 1 - ε (uniform among them), else any
    admissible one (uniform, no-ops included). Exact: a Markov chain over the states a player
    tells apart (the observation's last paragraph), found by playing every admissible command
    on copies of the game; the won states absorb."""
    import copy

    import numpy as np

    from turnbudget.agents.controls import state_text

    states = {state_text(observation): 0}
    queue, rows, won = [(game, 0)], {}, []
    while queue:
        here_game, here = queue.pop()
        if here_game.distance_to_goal() == 0:
            won.append(here)
            continue
        admissible = here_game.admissible_actions()
        optimal = set(here_game.optimal_actions())
        rows[here] = []
        for command in admissible:
            child = copy.deepcopy(here_game)
            seen = state_text(child.step(command)[0])
            if seen not in states:
                states[seen] = len(states)
                queue.append((child, states[seen]))
            rows[here].append(
                (states[seen], 1 / len(admissible), (command in optimal) / len(optimal))
            )
    uniform, greedy = np.zeros((2, len(states), len(states)))
    for i in won:
        uniform[i, i] = greedy[i, i] = 1.0
    for i, row in rows.items():
        for j, u, g in row:
            uniform[i, j] += u
            greedy[i, j] += g
    p, reached = np.eye(len(states))[0], []
    for eps in epsilons:
        p = p @ (eps * uniform + (1 - eps) * greedy)
        reached.append(float(p[won].sum()))
    return reached


class BytesOracle:
    """The oracle, whose commands on the chosen episodes (by their seed) are bytes, not str
    (importable, so a sealed agent's process can build it)."""

    def __init__(self, epsilon: float, seeds: Any) -> None:
        from turnbudget.agents import OracleAgent

        self.oracle = OracleAgent(epsilon)
        self.needs_oracle = True
        self.seeds = frozenset(seeds)
        self.current: int | None = None

    def reset(self, seed: int) -> None:
        self.current = seed
        self.oracle.reset(seed)

    def act(self, observation: str, info: Any) -> Any:
        command = self.oracle.act(observation, info)
        return command.encode() if self.current in self.seeds else command
