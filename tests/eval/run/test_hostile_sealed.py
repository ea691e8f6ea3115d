"""Hostile sealed agents: what they start ends with the run, and what they raise is recorded.

The agents live in a module written to ``tmp_path`` (the child imports it through the
evaluator's ``sys.path``). Nothing here waits on the clock: a spawned process reports its
pid through a file written before the agent answers, and the one hang ends by a timeout
sized from a clean run (`timeout_clear_of`).
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path

import pytest
from _faults import timeout_clear_of

from turnbudget.agents import OracleAgent
from turnbudget.eval.run.evaluate import evaluate

MAZE = "turnbudget/Maze-Easy-v0"
GRID = dict(ks=[1], ts=[10], tasks=2, n_bootstrap=0, retries=0)

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

HOSTILE = '''
import ctypes, os, signal, subprocess, sys
from turnbudget.agents import OracleAgent


class Spawner(OracleAgent):
    """Starts a long-lived process on its first command (``how``: plain, own session, or a
    double fork whose middle process exits) and notes its pid in ``path`` first."""

    def __init__(self, path, how):
        super().__init__(0.0)
        self.path, self.how, self.done = path, how, False

    def act(self, observation, info):
        if not self.done:
            self.done = True
            if self.how == "double_fork":
                r, w = os.pipe()
                middle = os.fork()
                if middle == 0:
                    os.setsid()
                    pid = os.fork()
                    if pid == 0:
                        signal.pause()
                        os._exit(0)
                    os.write(w, str(pid).encode())
                    os._exit(0)
                os.close(w)
                pid = int(os.read(r, 64))
                os.waitpid(middle, 0)
            else:
                pid = subprocess.Popen(
                    [sys.executable, "-c", "import signal; signal.pause()"],
                    start_new_session=self.how == "session",
                ).pid
            with open(self.path, "a") as f:
                f.write(f"{pid}\\n")
        return super().act(observation, info)


class Stubborn(OracleAgent):
    """On the run's first command (the one that creates ``path``): notes its pid, ignores
    SIGTERM and blocks in C holding the GIL (no Python thread of its process runs again).
    Every other command is the oracle's."""

    def __init__(self, path):
        super().__init__(0.0)
        self.path = path

    def act(self, observation, info):
        try:  # (creating the file is the one atomic test: two workers may both ask first)
            with open(self.path, "x") as f:
                f.write(str(os.getpid()))
        except FileExistsError:
            return super().act(observation, info)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        ctypes.PyDLL(None).pause()


class Unreadable(Exception):
    def __str__(self):
        raise RuntimeError("no message")


class Code:
    def __repr__(self):
        raise RuntimeError("no repr")


class BadMessages(OracleAgent):
    """Raises what cannot be printed: an exception whose ``__str__`` raises, or
    ``sys.exit`` with a code whose ``__repr__`` raises."""

    def __init__(self, how):
        super().__init__(0.0)
        self.how = how

    def act(self, observation, info):
        if self.how == "exit":
            sys.exit(Code())
        raise Unreadable()
'''


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    folder = tmp_path / "agents"
    folder.mkdir()
    name = f"hostile_agents_{abs(hash(str(tmp_path)))}"
    (folder / f"{name}.py").write_text(HOSTILE)
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    return importlib.import_module(name)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


@linux
@pytest.mark.parametrize("how", ["plain", "session", "double_fork"])
@pytest.mark.parametrize("workers", [1, 2])
def test_what_a_sealed_agent_starts_ends_with_the_run(hostile, tmp_path, how, workers):
    pids_file = tmp_path / "pids"
    agent = hostile.Spawner(str(pids_file), how)
    result = evaluate(MAZE, agent, sealed=True, workers=workers, **GRID)
    assert result.summary["failed_to_run"]["episodes"] == 0
    pids = [int(p) for p in pids_file.read_text().split()]
    assert pids  # (each process the run used spawned one)
    assert [p for p in pids if _running(p)] == []


@pytest.mark.slow  # (it waits out a timeout clear of a whole clean run: ~100 s)
@linux
def test_a_sealed_agent_that_ignores_sigterm_and_holds_the_gil_is_ended_by_a_pool_timeout(
    hostile, tmp_path
):
    start = time.monotonic()
    evaluate(MAZE, OracleAgent(0.0), sealed=True, workers=2, **GRID)
    timeout = timeout_clear_of(time.monotonic() - start)
    pid_file = tmp_path / "stubborn.pid"
    result = evaluate(
        MAZE, hostile.Stubborn(str(pid_file)), sealed=True, workers=2, timeout=timeout,
        out=tmp_path / "run", **GRID,
    )  # fmt: skip
    episodes = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").open()]
    failed = [e for e in episodes if e.get("failed_to_run")]
    assert len(episodes) == 2 and [e["failure"] for e in failed] == ["timeout"]
    assert result.summary["failed_to_run"]["episodes"] == 1
    assert not _running(int(pid_file.read_text()))  # its worker's death took it along


@pytest.mark.parametrize("sealed", [False, True])
@pytest.mark.parametrize("how", ["str", "exit"])
def test_an_exception_that_cannot_be_printed_is_a_recorded_failure(hostile, tmp_path, sealed, how):
    with pytest.raises(ValueError, match="no task"):  # (every episode failed to run)
        evaluate(MAZE, hostile.BadMessages(how), sealed=sealed, out=tmp_path / "run", **GRID)
    episodes = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").open()]
    assert len(episodes) == 2
    name = "SystemExit" if how == "exit" else "Unreadable"
    for e in episodes:
        assert e["failure"] == "exception"
        assert f"{name}: <its message could not be read: RuntimeError>" in e["error"]
