"""The ``pool`` backend: episodes in chunks over local worker processes."""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection as mpc
import os
import pickle
import signal
import socket
import time
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from turnbudget.eval.run.backends import (
    MAX_LOCAL_WORKERS,
    Backend,
    RunnerFactory,
    WorkersUnavailable,
    close_runner,
    named,
    ready_deadline,
)
from turnbudget.eval.run.backends.supervisor import Workers, chunk_size, supervise, units
from turnbudget.eval.run.driver import Driver, describe, interrupts_ignored
from turnbudget.eval.run.episodes import evaluation_runner
from turnbudget.eval.run.frames import FrameReader, Late, send_frame
from turnbudget.eval.run.lock import exit_with_parent, kill_tree

__all__ = ["PoolBackend"]


def _serve(
    conn: mpc.Connection, parent_end: socket.socket, agent: Any, config: Any,
    serialize: bool, make_runner: RunnerFactory,
) -> None:  # fmt: skip
    """A worker process: one runner (its envs reused across chunks), chunks in, outcomes out.

    It ends when the parent closes the pipe or dies (``recv`` then raises
    ``EOFError``), which needs the copy of the parent's end a fork inherits closed.
    A runner that cannot be built (the agent's ``ready()`` raised) is reported to the
    parent in one line, not as a traceback from every worker.
    """
    parent_end.close()
    exit_with_parent()  # no orphaned worker when the evaluator is killed mid-episode
    # Ctrl-C reaches the whole process group: it is the evaluator's to handle (it stops the
    # workers), not a traceback from each of them.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    interrupts_ignored()
    try:
        try:
            runner = make_runner(agent, config, serialize)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                conn.send(("failed", describe(exc)))
            return
        try:
            # (a plain agent's driver plays a chunk in order: the parent then knows which
            # episodes of a lost chunk never started)
            conn.send(("ready", isinstance(runner, Driver) and not runner.batch))
            while True:
                try:
                    chunk = conn.recv()
                except (EOFError, OSError):
                    return
                if chunk is None:
                    return
                _play(conn, runner, chunk)
        finally:
            close_runner(runner)
    finally:
        _close_sealed(agent)


def _play(conn: mpc.Connection, runner: Any, chunk: list[Any]) -> None:
    """Send each of ``chunk``'s outcomes as its episode ends, as ``(position, outcome)``, so
    a worker lost mid-chunk loses only what it was playing (a runner without ``stream``:
    the whole chunk's outcomes at its end, in one list)."""
    stream = getattr(runner, "stream", None)
    if stream is None:
        conn.send(runner.run(chunk))
        return
    positions: dict[int, deque[int]] = {}
    for i, job in enumerate(chunk):
        positions.setdefault(id(job), deque()).append(i)
    for job, outcome in stream(chunk):
        conn.send((positions[id(job)].popleft(), outcome))


def _close_sealed(agent: Any) -> None:
    """End the processes of the sealed agents this worker started (before it exits, so
    none is left to outlive the run)."""
    from turnbudget.eval.run.sealed import Sealed

    for one in getattr(agent, "agents", (agent,)):
        if isinstance(one, Sealed):
            one.close()


class _Processes(Workers):
    """Worker processes on pipes, forked where the platform allows (the agent is then
    inherited, not pickled; under spawn it is pickled once per process).

    A worker writes with a ``Connection``; this side reads its frames as they come
    (`FrameReader`), never waiting for the rest of one: ``recv`` read a whole frame once any
    of it was there, and a worker that sent part of one (stopped, or killed while a process
    it forked held its pipe) held the run for ever, whatever its timeout."""

    def __init__(self, size: int, args: tuple[Any, Any, bool, RunnerFactory]):
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        self._ctx = multiprocessing.get_context(method)
        self._args = args
        self.size = size
        self.slots = list(range(size))
        self._procs: list[Any] = [None] * size
        self._conns: list[Any] = [None] * size
        self._frames: list[Any] = [None] * size
        self._pidfds: list[int | None] = [None] * size  # (see `_end`)
        self._busy: set[int] = set()
        self._in_order = [False] * size  # (whether its outcomes come in the chunk's order)
        # slot -> the size of the chunk it runs, and the outcomes it sent of it by position
        self._chunk: dict[int, tuple[int, dict[int, Any]]] = {}
        try:
            for slot in range(size):
                self._start(slot)
            for slot in range(size):
                self._ready(slot)
        except BaseException:  # (one failed to start, or an interrupt): none is left behind
            # Killed, not asked to stop: a worker still starting reads no request until it is
            # ready, and each was waited for in turn (5 s a worker after Ctrl-C).
            self._busy.update(s for s in range(size) if self._procs[s] is not None)
            self.close()
            raise

    def _start(self, slot: int) -> None:
        parent, child = socket.socketpair()  # (what ``Pipe()`` makes here, its ends as ours)
        child.setblocking(True)  # (a new socket is not, under socket.setdefaulttimeout())
        worker_end = mpc.Connection(child.detach())
        try:
            proc = self._ctx.Process(
                target=_serve, args=(worker_end, parent, *self._args), daemon=True
            )
            proc.start()
        finally:
            worker_end.close()
        parent.setblocking(False)  # (this side: reads take what came, never wait)
        self._procs[slot], self._conns[slot] = proc, parent
        self._frames[slot] = FrameReader(parent)
        if hasattr(os, "pidfd_open"):
            with contextlib.suppress(OSError):  # (a kernel without pidfds: the sentinel)
                self._pidfds[slot] = os.pidfd_open(proc.pid)

    def _end(self, slot: int) -> int:
        """What becomes readable when the worker in ``slot`` ends: its pidfd (Linux), else
        multiprocessing's sentinel, a pipe that a process the worker forked holds open too
        (then the worker's death went unseen, and the run waited for that process)."""
        pidfd = self._pidfds[slot]
        return self._procs[slot].sentinel if pidfd is None else pidfd

    def _next(self, slot: int, block: bool = False) -> Any:
        """The next message of the worker in ``slot``: None while there is none (``block``:
        wait for one), EOFError once it died and all it sent was read. Never a bare ``recv``
        on a dead worker: a process it forked may hold the pipe open, and ``recv`` then
        waited for as long as that process lived (for ever, for a server)."""
        conn, proc = self._conns[slot], self._procs[slot]
        if block:
            mpc.wait([conn, self._end(slot)])
        alive = proc.is_alive()  # (asked first: what it sent before it died is there now)
        frame = self._frames[slot].take()
        if frame is not None:
            return pickle.loads(frame)
        if alive:
            return None
        raise EOFError

    def _ready(self, slot: int) -> None:
        """Wait for the worker in ``slot`` to say it is ready: at most `ready_deadline`
        seconds (an agent whose ``ready()`` hung in it stalled the whole run)."""
        limit = ready_deadline(self._args[0])
        deadline = time.monotonic() + limit
        try:
            message = None
            while message is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._stop(slot, kill=True)
                    raise WorkersUnavailable(
                        f"A pool worker did not become ready in {limit:g}s: the agent "
                        f"{named(self._args[0])} (its ready() or its process's start) hung"
                    )
                mpc.wait([self._conns[slot], self._end(slot)], timeout=min(left, 1.0))
                message = self._next(slot)
        except (EOFError, OSError):
            message = None
        if isinstance(message, tuple) and len(message) == 2 and message[0] == "ready":
            self._in_order[slot] = bool(message[1])
            return
        self._procs[slot].join(1)
        if isinstance(message, tuple) and len(message) == 2 and message[0] == "failed":
            raise WorkersUnavailable(
                f"A pool worker failed to start: the agent {named(self._args[0])} could not "
                f"be made ready in it ({message[1]})"
            )
        raise WorkersUnavailable(
            f"A pool worker failed to start (exit code {self._procs[slot].exitcode}); "
            "run with the local backend to see the error"
        )

    def submit(self, slot: int, chunk: Sequence[Any]) -> None:
        # A worker that died while idle (the OOM killer, an outside kill, an agent's own
        # thread) is replaced before it is handed a chunk: the send raised BrokenPipeError,
        # which ended the whole run, and its death went unseen (only busy workers are watched).
        try:
            if not self._procs[slot].is_alive():
                raise BrokenPipeError
            self._send(slot, list(chunk))
        except OSError:
            self.replace(slot)
            self._send(slot, list(chunk))
        self._chunk[slot] = (len(chunk), {})
        self._busy.add(slot)

    def _send(self, slot: int, message: Any) -> None:
        """Send ``message`` to the worker in ``slot`` (idle: it takes it at once)."""
        send_frame(self._conns[slot], pickle.dumps(message, pickle.HIGHEST_PROTOCOL), None)

    def wait(self, timeout: float | None) -> list[tuple[int, Any]]:
        by_conn = {self._conns[s]: s for s in self._busy}
        by_sentinel = {self._end(s): s for s in self._busy}
        ready = mpc.wait([*by_conn, *by_sentinel], timeout)
        slots = sorted({by_conn.get(r, by_sentinel.get(r)) for r in ready})  # type: ignore[arg-type]
        finished = []
        for slot in slots:
            outcome = self._receive(slot)
            if outcome is not None:
                self._busy.discard(slot)
                finished.append((slot, outcome))
        return finished

    def _receive(self, slot: int) -> Any:
        """What the worker in ``slot`` sent: its chunk's outcomes once all came, a message
        when it died, else None (the outcomes so far are kept for `salvage`)."""
        size, sent = self._chunk[slot]
        try:
            while (message := self._next(slot)) is not None:
                if isinstance(message, list):  # (a runner without ``stream``: all at once)
                    return message
                position, outcome = message
                sent[position] = outcome
                if len(sent) == size:
                    return [sent[i] for i in range(size)]
            return None
        except (EOFError, OSError):
            self._procs[slot].join(1)
            return f"its worker process died (exit code {self._procs[slot].exitcode})"

    def salvage(self, slot: int) -> tuple[dict[int, Any], int | None]:
        size, sent = self._chunk.get(slot, (0, {}))
        if not self._in_order[slot]:
            return dict(sent), None
        return dict(sent), next((i for i in range(size) if i not in sent), None)

    def replace(self, slot: int) -> bool:
        self._stop(slot, kill=True)
        self._start(slot)
        self._ready(slot)
        return True

    def _stop(self, slot: int, kill: bool) -> None:
        proc, conn = self._procs[slot], self._conns[slot]
        self._busy.discard(slot)
        self._chunk.pop(slot, None)
        if proc is None:
            return
        if kill:  # with what it started (a sealed agent's process and its children)
            kill_tree(proc.pid)
        else:
            with contextlib.suppress(OSError, Late):  # the worker may have died already
                send_frame(conn, pickle.dumps(None), time.monotonic() + 5)
            mpc.wait([self._end(slot)], 5)  # (not ``join(5)``: it waits on the sentinel)
            if proc.is_alive():
                kill_tree(proc.pid)
        proc.join()
        conn.close()
        pidfd, self._pidfds[slot] = self._pidfds[slot], None
        if pidfd is not None:
            os.close(pidfd)
        self._procs[slot] = self._conns[slot] = self._frames[slot] = None

    def close(self) -> None:
        for slot in range(self.size):
            # A worker still busy (the run was interrupted) is killed: its results are not wanted.
            self._stop(slot, kill=slot in self._busy)


class PoolBackend(Backend):
    """Runs episodes on up to ``workers`` processes (forked where the platform allows).

    The agent is sent to each worker once, so it must be picklable where
    processes are spawned. Chunks are small enough to balance the load (about
    eight per worker, at most 16 episodes) and never smaller than a
    `BatchAgent`'s ``max_batch_size``; a batch agent's are counted in agent
    episodes, each whole (in rerun mode a task's budgets share one and are
    played in turn). The processes start with the first
    `run`, never more than it has chunks (`processes`), and serve every later
    `run` until `close`. ``workers`` is at most `MAX_LOCAL_WORKERS`. A worker
    sends each outcome as its episode ends; one that dies or runs past the
    timeout is replaced, and only what it had not finished of its chunk comes
    back as `EpisodeFailure` (a plain agent's: the episode it was playing; those
    it had not started are played again).
    """

    name = "pool"
    max_workers = MAX_LOCAL_WORKERS

    def __init__(self, workers: int = 1, *, timeout: float | None = None):
        super().__init__(workers, timeout=timeout)
        self._procs: _Processes | None = None
        self._args: tuple[Any, Any, bool, RunnerFactory] | None = None
        self._width = 1

    def start(
        self, agent: Any, config: Any, *, serialize: bool, runner: RunnerFactory = evaluation_runner
    ) -> PoolBackend:
        self._width = max(1, int(getattr(agent, "max_batch_size", 1)))
        self._args = (agent, config, serialize, runner)
        return self

    def processes(self, n_specs: int) -> int:
        """The worker processes a first `run` of ``n_specs`` units (`units`: jobs, a batch
        agent's agent episodes) starts: ``workers``, but never more than it has chunks (a
        process without one would only cost its start).

        Example:
            >>> PoolBackend(workers=8).processes(3), PoolBackend(workers=8).processes(1000)
            (3, 8)
        """
        if n_specs <= 0:
            return 0
        size = chunk_size(n_specs, self.workers, self._width, self.timeout)
        return min(self.workers, -(-n_specs // size))

    def run(self, specs: Sequence[Any]) -> Iterator[list[Any]]:
        if self._args is None:
            raise RuntimeError("PoolBackend.run() before start()")
        if not len(specs):
            return
        count = units(specs, self._width)  # (a batch agent's chunks: whole agent episodes)
        if self._procs is None:  # (the retries' runs reuse them)
            self._procs = _Processes(self.processes(count), self._args)
        size = chunk_size(count, self.workers, self._width, self.timeout)
        yield from supervise(self._procs, specs, size=size, width=self._width, timeout=self.timeout)

    def close(self) -> None:
        self._args = None
        if self._procs is not None:
            self._procs.close()
            self._procs = None
