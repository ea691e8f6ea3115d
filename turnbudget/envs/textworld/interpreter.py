"""The Z-machine interpreter in a process of its own: no story file can hang or end ours.

jericho's frotz, the interpreter under TextWorld, is C code that runs inside
the process that loads it. On a story file that loops forever its ``step``
never returns: no Python code runs meanwhile, so no signal handler (the local
backend's SIGALRM) and no timeout can stop it. On a story file it cannot run,
it calls ``exit()``. `Interpreter` therefore runs a ``jericho.FrotzEnv`` in a
forked child process and forwards TextWorld's calls to it over a pipe:

- a call waits at most `STEP_TIMEOUT` seconds, or less when the episode's
  deadline (`turnbudget.envs.deadline`, which the evaluator sets from
  ``--timeout``) comes sooner; a call still running then is stopped with its
  process and raises `StepTimeout`;
- a child that dies (frotz exited) raises `InterpreterError` (`StoryFileError`
  while loading a game) with the interpreter's last words;
- anything else that interrupts the wait (a SIGALRM, Ctrl-C) stops the child
  too: its state is unknown.

A stopped interpreter is replaced when the env next loads a game (on reset).
One process serves every game an env loads: the price is a pipe round trip per
TextWorld step (``python benchmarks/speed/textworld_step_guard.py`` measures it).
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import sys
import tempfile
import threading
import time
import warnings
import weakref
from multiprocessing.connection import Connection
from typing import Any, NoReturn

from turnbudget.envs.deadline import StepTimeout, time_left
from turnbudget.envs.textworld.storyfile import StoryFileError

__all__ = ["STEP_TIMEOUT", "Interpreter", "InterpreterError", "start_game"]

#: Seconds one interpreter call may take when no episode deadline is nearer (a TextWorld
#: step takes milliseconds, loading a game well under a second).
STEP_TIMEOUT = 30.0


class InterpreterError(RuntimeError):
    """The interpreter process ended, or was stopped before (reset the env for a new one)."""


class Interpreter:
    """A ``jericho.FrotzEnv`` in a child process, answering the calls TextWorld makes on one.

    ``load``, ``reset``, ``step``, ``seed`` and ``close`` (which frees the
    game, not the process) are forwarded, and so is any other public method of
    ``FrotzEnv`` (``get_state``, ``victory``, ...). `terminate` ends the process;
    so does garbage collection and the end of this process. POSIX only (jericho is).
    """

    def __init__(self) -> None:
        import jericho  # imported before forking: the child imports nothing

        self.is_fully_supported = False
        self._owner = os.getpid()
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()
        # The child's stdout and stderr (frotz's last words); closed with the process.
        log = tempfile.TemporaryFile()  # noqa: SIM115
        with warnings.catch_warnings():
            # Python >= 3.12 warns about forking a threaded process; the child runs
            # only this module's loop and jericho, which take no lock another thread holds.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            _child(jericho, requests_read, replies_write, log.fileno(), self._owner)
        os.close(requests_read)
        os.close(replies_write)
        self.pid = pid
        self._log = log
        self._requests = Connection(requests_write, readable=False)
        self._replies = Connection(replies_read, writable=False)
        self._answer = select.poll()  # (a persistent poll: the cheapest wait for the reply)
        self._answer.register(replies_read, select.POLLIN)
        self._end = weakref.finalize(
            self, _end, pid, self._owner, (self._requests, self._replies, log)
        )

    @property
    def alive(self) -> bool:
        """Whether the process runs and belongs to this process (not to a fork's copy)."""
        if not (self._end.alive and os.getpid() == self._owner):
            return False
        try:  # (not reaped here: WNOWAIT; a process killed between calls is not alive)
            ended = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return False
        return ended is None

    def terminate(self) -> None:
        """End the process (killed: nothing in it is worth keeping). Safe to call twice."""
        self._end()

    # -- the FrotzEnv calls ----------------------------------------------------

    def load(self, story_file: str, seed: int | None = None) -> None:
        self.is_fully_supported = self._call("load", story_file, seed)

    def reset(self) -> tuple[str, dict[str, Any]]:
        return self._call("reset")

    def step(self, action: str) -> tuple[str, int, bool, dict[str, Any]]:
        return self._call("step", action)

    def seed(self, seed: int | None = None) -> int:
        return self._call("seed", seed)

    def close(self) -> None:
        """Free the game (``FrotzEnv.close``); the process stays for the next one."""
        if self.alive:
            self._call("close")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return functools.partial(self._call, name)

    def _call(self, name: str, *args: Any) -> Any:
        if not self.alive:
            raise InterpreterError(
                f"Cannot run {_show(name, args)}: the interpreter process was stopped or "
                "ended; reset the env to start a new one"
            )
        limit, episode_limit = STEP_TIMEOUT, None
        left = time_left()
        if left is not None and left[0] < limit:
            limit, episode_limit = max(left[0], 0.0), left[1]
        try:
            self._requests.send((name, args))
            reply = self._replies.recv() if self._answer.poll(limit * 1000) else None
        except (EOFError, BrokenPipeError):  # the child died: nothing to read, or to write to
            words = self._last_words()
            error = StoryFileError if name == "load" else InterpreterError
            raise error(
                f"The interpreter process ended during {_show(name, args)}: {words}"
            ) from None
        except BaseException:  # interrupted (a SIGALRM, Ctrl-C): the game's state is unknown
            self.terminate()
            raise
        if reply is None:
            self.terminate()
            if episode_limit is not None:
                raise StepTimeout(
                    f"ran past the timeout of {episode_limit:g}s; the interpreter, still "
                    f"running {_show(name, args)}, was stopped"
                )
            raise StepTimeout(
                f"The interpreter did not answer {_show(name, args)} within {STEP_TIMEOUT:g} s "
                "(STEP_TIMEOUT) and was stopped: a story file that loops forever?"
            )
        ok, result = reply
        if not ok:
            raise result
        return result

    def _last_words(self) -> str:
        """What the ended child printed (frotz's "Fatal error: ..."), or its exit status."""
        try:
            self._log.seek(0)
            text = self._log.read()[-4000:].decode("utf-8", "replace")
        except (OSError, ValueError):
            text = ""
        status = self._end()  # reaps the child
        text = " ".join(text.split())[-300:]
        if text or status is None:
            return text or "no message"
        return f"exit status {os.waitstatus_to_exitcode(status)}"


def _show(name: str, args: tuple[Any, ...]) -> str:
    return f"{name}({', '.join(map(repr, args))})"[:200]


def start_game(path: str | os.PathLike[str], request_infos: Any, interpreter: Interpreter) -> Any:
    """What ``textworld.start(path, request_infos)`` builds for a Z-machine game, with the
    interpreter in ``interpreter``'s process instead of this one."""
    from textworld.envs.wrappers.tw_inform7 import TWInform7
    from textworld.envs.zmachine.jericho import JerichoEnv

    env = JerichoEnv(request_infos)
    env._jericho = interpreter  # JerichoEnv.load then loads into it instead of its own frotz
    if TWInform7.compatible(os.fspath(path)):
        env = TWInform7(env)
    try:
        env.load(os.fspath(path))
    finally:
        _forget_parse_failure()
    return env


def _forget_parse_failure() -> None:
    """Drop the failure TextWorld's game-logic parser keeps from its last parse (one parser a
    process, tatsu's, which clears it when it parses again): the exception's traceback held
    the frames that loaded the game, and so the env, and a process's first env to parse new
    game logic, dropped unclosed, kept its interpreter process alive."""
    parser = getattr(sys.modules.get("textworld.logic"), "_PARSER", None)
    if getattr(parser, "_furthest_exception", None) is not None:
        parser._furthest_exception = None


def _end(pid: int, owner: int, files: tuple[Any, ...]) -> int | None:
    """Kill and reap the child (from its parent only); return its wait status."""
    for f in files:
        with contextlib.suppress(OSError):
            f.close()
    if os.getpid() != owner:  # a forked copy of the parent: the child is not ours
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return None


def _child(jericho: Any, requests: int, replies: int, log: int, parent: int) -> NoReturn:
    """The child's whole life: serve calls until the parent closes the pipe or dies."""
    code = 1
    try:
        os.dup2(log, 1)
        os.dup2(log, 2)
        _close_all_but(0, 1, 2, requests, replies)  # no copy of the parent's pipes or sockets
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
        warnings.simplefilter("ignore")  # (jericho's UnsupportedGameWarning on every load)
        threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()
        _serve(jericho, Connection(requests, writable=False), Connection(replies, readable=False))
        code = 0
    finally:
        os._exit(code)


def _close_all_but(*keep: int) -> None:
    try:
        fds = [int(fd) for fd in os.listdir("/dev/fd")]  # the open ones (Linux, macOS)
    except OSError:
        fds = list(range(min(os.sysconf("SC_OPEN_MAX"), 1 << 16)))
    for fd in set(fds) - set(keep):
        with contextlib.suppress(OSError):  # (the listing's own, closed already)
            os.close(fd)


def _exit_with(parent: int) -> None:
    """End the child when its parent is gone, even while frotz loops (it holds no GIL)."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _serve(jericho: Any, requests: Connection, replies: Connection) -> None:
    game = None
    while True:
        try:
            name, args = requests.recv()
        except EOFError:
            return
        try:
            if name == "load":
                if game is None:
                    game = jericho.FrotzEnv(*args)
                else:
                    game.load(*args)
                reply = (True, bool(game.is_fully_supported))
            elif name == "close" and game is None:  # (TextWorld closes a game that never loaded)
                reply = (True, None)
            else:
                reply = (True, getattr(game, name)(*args))
        except Exception as e:
            reply = (False, e)
        try:
            replies.send(reply)
        except Exception as e:  # a result or an exception that does not pickle
            replies.send((False, InterpreterError(f"{name}: {type(e).__name__}: {e}")))
