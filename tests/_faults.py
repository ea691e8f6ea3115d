"""Agents that fail on purpose, for the fault tests of every backend.

Each wraps a real `OracleAgent` and misbehaves only on the episodes whose
agent seed is in ``seeds`` (the seeds come from `turnbudget.eval.run.plan.agent_seed`),
so every other episode is exactly the oracle's and can be compared with a
clean run. They live in a module of their own so Ray can be told to pickle it
by value (its workers cannot import the test suite).

Nothing here races the clock: a hanging agent blocks for good (only a timeout
ends its episode), a worker is killed by its own agent mid-chunk, and a run a
test must interrupt is held open by an agent that waits on a file (`GatedOracle`),
so every fault lands where the test says, whatever the machine's load.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from turnbudget.agents import OracleAgent
from turnbudget.envs.native.maze import Maze
from turnbudget.eval.run.plan import agent_seed


def timeout_clear_of(clean_run_seconds: float) -> float:
    """The per-episode timeout for a test whose hanging episodes end only by it.

    30 times the wall time of the whole clean run the test just made (every episode of it,
    so each sound episode gets hundreds of times its own need), and at least 2 s. It grows
    with the machine's load as the sound episodes do, instead of racing a fixed number.
    """
    return max(2.0, 30.0 * clean_run_seconds)


def seeds_of(seed: int, episodes: Iterable[tuple[str, int, int]]) -> frozenset[int]:
    """The agent seeds of ``(env_id, task_seed, rep)`` episodes under base seed ``seed``."""
    return frozenset(agent_seed(seed, env, task, rep) for env, task, rep in episodes)


class _Faulty(OracleAgent):
    """The oracle, with a fault on chosen episodes (subclasses say which)."""

    def __init__(self, epsilon: float, seeds: Iterable[int]):
        super().__init__(epsilon)
        self.seeds = frozenset(seeds)
        self.current: int | None = None

    def reset(self, seed: int | None = None) -> None:
        self.current = seed
        super().reset(seed)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seeds={sorted(self.seeds)})"


class RaisingAgent(_Faulty):
    """Raises on its first command of the chosen episodes."""

    name = "raising"

    def act(self, observation: str, info: Any) -> str:
        if self.current in self.seeds:
            raise RuntimeError(f"agent bug on the episode with seed {self.current}")
        return super().act(observation, info)


class ExitingAgent(_Faulty):
    """Calls ``sys.exit(3)`` (or raises ``interrupt``, e.g. KeyboardInterrupt) on its first
    command of the chosen episodes."""

    name = "exiting"

    def __init__(self, epsilon: float, seeds: Iterable[int], interrupt: type | None = None):
        super().__init__(epsilon, seeds)
        self.interrupt = interrupt

    def act(self, observation: str, info: Any) -> str:
        if self.current in self.seeds:
            if self.interrupt is not None:
                raise self.interrupt()
            sys.exit(3)
        return super().act(observation, info)


class HangingAgent(_Faulty):
    """Never answers on the chosen episodes (blocks for good, as an agent stuck on a server
    would): only a timeout ends them, however slow the machine."""

    name = "hanging"

    def act(self, observation: str, info: Any) -> str:
        if self.current in self.seeds:
            block_forever()
        return super().act(observation, info)


class HangsInReady(OracleAgent):
    """Never returns from ``ready()`` (a model load stuck on a network drive)."""

    name = "hangs-in-ready"

    def ready(self) -> None:
        block_forever()


class GatedReady(OracleAgent):
    """The oracle, whose first ``ready()`` creates ``dir/entered`` and then returns only once
    ``dir/go`` exists (a slow model load, released by the test)."""

    name = "gated-ready"

    def __init__(self, directory: str):
        super().__init__(0.0)
        self.dir = Path(directory)
        self._loaded = False

    def ready(self) -> None:
        if not self._loaded:
            (self.dir / "entered").write_text("")
            wait_until((self.dir / "go").exists)
            self._loaded = True


class ReadyOnlyHere(OracleAgent):
    """The oracle, whose ``ready()`` fails in any process but the one that built it (a licence
    server only there), after adding a line to ``log`` if given (how often it was tried)."""

    def __init__(self, log: str = "") -> None:
        super().__init__(0.0)
        self.home, self.log = os.getpid(), log

    def ready(self) -> None:
        if os.getpid() != self.home:
            if self.log:
                with open(self.log, "a") as out:
                    out.write("ready\n")
            raise RuntimeError("no license server in a worker")


class HangsInReadyDeafToAlarms(HangsInReady):
    """Never returns from ``ready()``, with SIGALRM blocked (as C code that retries on
    signals would be): nothing in its own process can interrupt it."""

    def ready(self) -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        block_forever()


class HangsInPreflight(OracleAgent):
    """Never returns from ``preflight()`` (a server that accepts and never answers)."""

    name = "hangs-in-preflight"

    def preflight(self) -> None:
        block_forever()


class SendsPartOfAReply(OracleAgent):
    """In its sealed process, writes the length of a 1 MiB reply and three bytes of it on
    its pipe, and nothing more, in ``hook``: ``ready`` or ``preflight`` (which then return:
    the process answers, its answer short of that length, and waits for the next call), or
    ``load`` (as it is unpickled there; then it blocks)."""

    name = "sends-part-of-a-reply"

    def __init__(self, hook: str):
        super().__init__(0.0)
        self.hook = hook

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self.hook == "load":
            self._send_part()
            block_forever()

    def ready(self) -> None:
        if self.hook == "ready":
            self._send_part()

    def preflight(self) -> None:
        if self.hook == "preflight":
            self._send_part()

    @staticmethod
    def _send_part() -> None:
        pipe = int(sys.argv[1])  # (the sealed process's command line names its pipe)
        os.write(pipe, (2**20).to_bytes(4, "big") + b"abc")


class SendsPartOfAnOutcome(_Faulty):
    """In a pool worker, writes the length of a 1 MiB message and three bytes of it on the
    worker's pipe to the evaluator, where the worker's outcome goes, on its first command of
    the chosen episodes; then it ``"hangs"``, or it forks a process that holds the pipe open
    until ``dir/stop`` exists and ``"dies"`` (its worker ends, exit code 3)."""

    name = "sends-part-of-an-outcome"

    def __init__(self, seeds: Iterable[int], then: str, directory: str = ""):
        super().__init__(0.0, seeds)
        self.then, self.dir = then, Path(directory)

    def act(self, observation: str, info: Any) -> str:
        if self.current in self.seeds:
            os.write(_worker_pipe(), (2**20).to_bytes(4, "big") + b"abc")
            if self.then == "hangs":
                block_forever()
            if os.fork() == 0:
                while not (self.dir / "stop").exists():
                    time.sleep(0.05)
                os._exit(0)
            os._exit(3)
        return super().act(observation, info)


class SendsPartOfReady(OracleAgent):
    """In a pool worker, writes the length of a 1 MiB message and three bytes of it on the
    worker's pipe in ``ready()``, then blocks (deaf to SIGALRM, as `HangsInReadyDeafToAlarms`)."""

    name = "sends-part-of-ready"

    def ready(self) -> None:
        os.write(_worker_pipe(), (2**20).to_bytes(4, "big") + b"abc")
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        block_forever()


def _worker_pipe() -> int:
    """The descriptor of the pool worker's pipe to the evaluator (a local of its loop)."""
    frame = sys._getframe()
    while frame is not None:
        if frame.f_code.co_name in ("_serve", "_play") and "conn" in frame.f_locals:
            return frame.f_locals["conn"].fileno()
        frame = frame.f_back
    raise RuntimeError("not in a pool worker")


def block_forever() -> None:
    """Sleep until the process is killed (or a signal's handler raises, as a timeout's does)."""
    while True:
        time.sleep(3600)


def wait_until(condition: Callable[[], bool], proc: subprocess.Popen | None = None) -> bool:
    """Poll ``condition`` until it holds (True), or until ``proc`` has ended (then whether it
    holds). No deadline: what a test waits for here is an event it has made certain (an agent
    that blocks, a process that cannot end before); the test's timeout mark guards a bug."""
    while not condition():
        if proc is not None and proc.poll() is not None:
            return condition()
        time.sleep(0.01)
    return True


def claim(path: Path) -> bool:
    """Create ``path`` holding this process's id, unless it exists (then False): one process
    of many wins. The file appears whole (written aside, then hard-linked into place): a test
    that waits for it to exist and reads it read an empty file now and then, when it looked
    between the creation and the write."""
    draft = path.with_name(f".{path.name}.{os.getpid()}")
    draft.write_text(str(os.getpid()))
    try:
        os.link(draft, path)  # (fails if path exists: the claim and its content at once)
    except FileExistsError:
        return False
    finally:
        draft.unlink()
    return True


class KillOnceOracle(OracleAgent):
    """The oracle, in ``workers`` worker processes one of which SIGKILLs itself on its first
    command (the one that claims ``pid_dir/victim``), mid-chunk.

    Each process leaves its pid in ``pid_dir`` when it starts playing; the others then wait
    until one more process than ``workers`` has (the killed worker's replacement), so the
    replacement always gets episodes to play, however the machine schedules the workers.
    """

    name = "kill-once"

    def __init__(self, epsilon: float, pid_dir: str, workers: int):
        super().__init__(epsilon)
        self.pid_dir = pid_dir
        self.workers = workers
        self._started = False

    def act(self, observation: str, info: Any) -> str:
        if not self._started:
            self._started = True
            pid_dir = Path(self.pid_dir)
            (pid_dir / str(os.getpid())).write_text("")
            if claim(pid_dir / "victim"):
                os.kill(os.getpid(), signal.SIGKILL)
            wait_until(lambda: len(list(pid_dir.glob("[0-9]*"))) > self.workers)
        return super().act(observation, info)

    def __repr__(self) -> str:
        return "KillOnceOracle()"


class GatedOracle(OracleAgent):
    """The oracle (its name and repr too, so a run of it resumes as the oracle's), except that
    the first process to start an episode once the file ``log`` holds ``after`` lines stops
    there: it claims ``gate/blocked`` and waits until ``gate/open`` exists (for good if no
    one makes it). A run of it cannot end before the test has done what it waits to do.
    """

    def __init__(self, epsilon: float, gate: str, log: str, after: int):
        super().__init__(epsilon)
        self.gate, self.log, self.after = gate, log, after

    def reset(self, seed: int) -> None:
        super().reset(seed)
        gate = Path(self.gate)
        if (gate / "blocked").exists() or _lines(Path(self.log)) < self.after:
            return
        if claim(gate / "blocked"):
            wait_until((gate / "open").exists)

    @classmethod
    def from_spec(cls, arg: str = "") -> GatedOracle:  # type: ignore[override]
        """``gated:EPSILON,GATE,LOG,AFTER``."""
        epsilon, gate, log, after = arg.split(",")
        return cls(float(epsilon), gate, log, int(after))


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


#: The turnbudget CLI in a fresh process (the tests' folder on its PYTHONPATH) that also knows
#: the agent ``gated:EPSILON,GATE,LOG,AFTER`` (`GatedOracle`); append the CLI's arguments.
GATED_CLI = [
    sys.executable, "-c",
    "import sys, _faults\n"
    "from turnbudget.agents import register_agent\n"
    "from turnbudget.cli import main\n"
    "register_agent('gated', _faults.GatedOracle.from_spec)\n"
    "sys.exit(main(sys.argv[1:]))",
]  # fmt: skip


class CountingOracle(OracleAgent):
    """The oracle, leaving a file in ``trace_dir`` each time a copy of it is unpickled
    (to check how often an engine ships the agent)."""

    name = "counting"

    def __init__(self, epsilon: float, trace_dir: str):
        super().__init__(epsilon)
        self.trace_dir = trace_dir

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        import uuid

        (Path(self.trace_dir) / f"{os.getpid()}-{uuid.uuid4().hex}").write_text("")


class BatchRaisingAgent:
    """A `BatchAgent` of oracles whose ``act_batch`` raises while a chosen episode is in it
    (taking its batch mates down with it, as a failed batched LLM request would)."""

    name = "batch-raising"
    needs_oracle = True
    budget_aware = False

    def __init__(self, epsilon: float, seeds: Iterable[int], max_batch_size: int = 4):
        self.epsilon = epsilon
        self.seeds = frozenset(seeds)
        self.max_batch_size = max_batch_size
        self._agents: dict[str, tuple[int, OracleAgent]] = {}

    def __repr__(self) -> str:
        return f"BatchRaisingAgent(seeds={sorted(self.seeds)})"

    def reset_episode(self, episode_id: str, seed: int) -> None:
        agent = OracleAgent(self.epsilon)
        agent.reset(seed)
        self._agents[episode_id] = (seed, agent)

    def act_batch(self, episode_ids: Any, observations: Any, infos: Any) -> list[str]:
        if any(self._agents[e][0] in self.seeds for e in episode_ids):
            raise RuntimeError("batched request failed")
        return [
            self._agents[e][1].act(o, i)
            for e, o, i in zip(episode_ids, observations, infos, strict=True)
        ]

    def end_episode(self, episode_id: str) -> None:
        self._agents.pop(episode_id, None)


class BatchEndRaisingAgent(BatchRaisingAgent):
    """A `BatchAgent` of oracles that plays every episode to its end, but whose
    ``end_episode`` raises for the chosen ones."""

    name = "batch-end-raising"

    def __repr__(self) -> str:
        return f"BatchEndRaisingAgent(seeds={sorted(self.seeds)})"

    def act_batch(self, episode_ids: Any, observations: Any, infos: Any) -> list[str]:
        return [
            self._agents[e][1].act(o, i)
            for e, o, i in zip(episode_ids, observations, infos, strict=True)
        ]

    def end_episode(self, episode_id: str) -> None:
        seed, _ = self._agents.pop(episode_id)
        if seed in self.seeds:
            raise RuntimeError("end_episode failed")


class UnshippableAgent(OracleAgent):
    """An oracle that cannot be rebuilt in another process (its code is missing there)."""

    def __setstate__(self, state: dict[str, Any]) -> None:
        raise ImportError("No module named 'my_private_agents'")


class BatchHangingAgent(BatchRaisingAgent):
    """A `BatchAgent` of oracles whose ``act_batch`` never answers while a chosen episode
    is in it (a batched request stuck on a server)."""

    name = "batch-hanging"

    def __repr__(self) -> str:
        return f"BatchHangingAgent(seeds={sorted(self.seeds)})"

    def act_batch(self, episode_ids: Any, observations: Any, infos: Any) -> list[str]:
        if any(self._agents[e][0] in self.seeds for e in episode_ids):
            block_forever()
        return super().act_batch(episode_ids, observations, infos)


class CrashingAgent(_Faulty):
    """Crashes its process (SIGSEGV, as a broken C extension does) on its first command of
    the chosen episodes: its worker is lost, with every episode of its chunk."""

    name = "crashing"

    def act(self, observation: str, info: Any) -> str:
        if self.current in self.seeds:
            import ctypes
            import faulthandler

            faulthandler.disable()  # (pytest's dump of every thread would only fill CI's log)
            ctypes.string_at(0)
        return super().act(observation, info)


class ShippedHouseAgent:
    """A random player that declares ``needs_house`` only once shipped (unpickled in a worker
    or a sealed agent's process), and leaves a file in ``trace_dir`` for each turn it is
    shown the house's move (the next step of its own role's shortest plan)."""

    name = "shipped-house"
    needs_house = False

    def __init__(self, trace_dir: str):
        self.trace_dir = trace_dir
        self._rng = random.Random(0)

    def __repr__(self) -> str:
        return "ShippedHouseAgent()"

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.needs_house = True

    def reset(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed)

    def act(self, observation: str, info: Any) -> str:
        if "house_action" in info:
            (Path(self.trace_dir) / f"{os.getpid()}-{uuid.uuid4().hex}").write_text("")
            return str(info["house_action"])
        return self._rng.choice(list(info["admissible_actions"]))


class QuitsWhenLosing(OracleAgent):
    """An ε-oracle that raises on its last turn at the largest budget: it fails to run exactly
    the episodes it has not won by then, so every episode it leaves in the run is a win."""

    def __init__(self, epsilon: float, last_turn: int):
        super().__init__(epsilon)
        self.last_turn = last_turn
        self.turns = 0

    def reset(self, seed: int | None = None) -> None:
        self.turns = 0
        super().reset(seed)

    def act(self, observation: str, info: Any) -> str:
        self.turns += 1
        if self.turns == self.last_turn:
            raise RuntimeError("losing: giving up")
        return super().act(observation, info)


class QuitsWhenWrong(OracleAgent):
    """An ε-oracle that raises instead of playing a command that is not optimal: every probe
    it leaves in a run was answered optimally throughout."""

    def act(self, observation: str, info: Any) -> str:
        command = super().act(observation, info)
        if command not in (info.get("oracle_actions") or ()):
            raise RuntimeError("would answer wrong: giving up")
        return command


class CloseRaisingMaze(Maze):
    """Maze-Easy whose close() raises once it has played (as a TextWorld env's did, whose
    interpreter was killed between two calls)."""

    played = False

    def _play(self, action: str) -> Any:
        self.played = True
        return super()._play(action)

    def close(self) -> None:
        super().close()
        if self.played:
            raise RuntimeError("close failed: the game's process is gone")
