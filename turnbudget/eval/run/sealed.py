"""Sealed agents: an agent in a process of its own, that sees only its view of each turn.

An agent run in the evaluator's process is an object beside the env: nothing
but good manners keeps it from walking its caller's frames (``sys._getframe``,
``inspect``) to the env and its oracle (``optimal_actions()``), reading a hidden
budget there, or finding every live env with ``gc.get_objects()``. Such an
agent scores Pass@1 = 1.0 with a hidden budget (the tests show it). `seal`
runs the agent in a child process instead and gives the engine a proxy that
speaks the same protocol (`turnbudget.agents.base`): ``reset`` / ``act`` /
``step_note`` / ``observe`` for an `Agent`, ``reset_episode`` / ``act_batch`` /
``step_notes`` / ``end_episode`` / ``observe_batch`` for a `BatchAgent`, an
`AsyncAgent` driven in the child through `in_flight`. What crosses:

- to the child: the agent (pickled), or a spec that only the child builds
  (`turnbudget.agents.make_agent`: the agent's code then never runs in the
  evaluator), the evaluator's ``sys.path``, and each call's arguments: the
  observation and the filtered, copied ``info`` of `agent_view` (the budget
  keys only when visible, the oracle's actions only for ``needs_oracle``);
- back: JSON only (commands, step notes, the agent's profile, an error's type
  name and message), at most `MAX_REPLY` bytes per reply. Nothing the agent
  sends is unpickled, so nothing it sends can run code in the evaluator.

The child is a fresh interpreter (``subprocess``, never ``fork``: a forked
child holds a copy of the evaluator's memory, envs included, where ``gc``
finds them), with only the pipe among the evaluator's file descriptors. It
ends with its parent (`exit_with_parent`, SIGKILL: an agent that ignores SIGTERM
or holds the GIL ends too) and ignores Ctrl-C (the evaluator stops it). Its
environment is the evaluator's without the variables named like secrets or
holding a URL with credentials (an LLM server's), but those its agent reads:
the API key its options name, its URL (`_agent_environment`). The child is two
processes: a `warden` that runs none of the agent's code, leads a session of
its own and keeps every process below it (Linux: a subreaper, so a double fork
or a new session stays in its tree), and below it the agent's (`serve`). When
the agent's process ends, or the evaluator does, the warden ends all the
agent started, then itself; ending the child (`close`, a timeout, a failed
call) kills the warden's whole tree and session, so nothing the agent spawned
outlives the run. A proxy pickles without its child and starts one lazily in the
process that calls it (a pool worker, a Ray actor); one inherited through a
fork is left to its owner.

Faults are the agent's, as in-process: an exception in the agent comes back as
`SealedAgentError` ("RuntimeError: ..."), a child that dies mid-call (``os._exit``,
a crash, a kill) as `SealedAgentError` naming its exit code, and a wait is
interruptible, so the backend's timeout ends a hung agent (its child is killed).
Each ends the episode it came from (an `EpisodeFailure`); the next call starts
a fresh child. A well-behaved agent gives the same records, byte for byte, as
in-process. What sealing does not do: it separates memory, not the machine.
The child runs as the same user, so a hostile agent can still read files (a
run directory), and read the evaluator's memory where the OS lets a process
trace its parent (``/proc/PID/mem`` under ``kernel.yama.ptrace_scope = 0``);
for code you must not trust at all, add an OS sandbox (a container) around
the whole run.

Example:
    >>> from turnbudget.agents import OracleAgent
    >>> with seal(OracleAgent(0.0)) as agent:
    ...     agent.reset(0)
    ...     agent.act("You are in a room.", {"oracle_actions": ["north"], "admissible_actions": ["north", "look"]})
    'north'
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import re
import select
import signal
import socket
import subprocess
import sys
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnbudget.eval.run.frames import FrameReader, FrameTooLong, Late, milliseconds, send_frame

__all__ = [
    "MAX_REPLY",
    "Sealed",
    "SealedAgent",
    "SealedAgentError",
    "SealedBatchAgent",
    "driven_form",
    "seal",
]

#: The most bytes one reply of a sealed agent may hold (a longer one fails the call).
MAX_REPLY = 16 * 1024**2

# The refusals of an agent's preflight that cross back as themselves (`Sealed.preflight`).
_REFUSALS: dict[str, type[Exception]] = {
    "ImportError": ImportError,
    "ConnectionError": ConnectionError,
}

#: Seconds a child may take to start and load its agent (an import that hangs fails then).
START_SECONDS = 120.0
#: Seconds the agent's own ``ready()`` or ``preflight()`` may take (a model to load, a server
#: to reach): both run outside an episode's clock, and one that hung stalled the whole run.
READY_SECONDS = 600.0
#: Seconds `close` waits for the child to shut its agent down before killing it.
CLOSE_SECONDS = 5.0

# What the child's two processes run (`warden`, then `serve` below it): the package's folder
# first, so each can import this module before it has the evaluator's sys.path (which the
# first message brings).
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[2]); from turnbudget.eval.run.sealed import {0}; "
    "{0}(int(sys.argv[1]), int(sys.argv[3]))"
)
#: Environment variables named like secrets, which an agent's process does not get (but those
#: its own options name: `_secret_names_kept`).
_SECRET_NAME = re.compile(
    r"(?i)passw|passphrase|sshpass|_pwd?(?:_|$)|(?:^|_)(?:api_?key|keys?|tokens?|secrets?|"
    r"secret_?key|credentials?|creds?|auth|pass|pat|jwt|webhook|cookies?|dsn)(?:_|$)"
)  # (a word of the name: TOKENIZERS_PARALLELISM and TIKTOKEN_CACHE_DIR are no secrets; and
# DB_PASS, GITHUB_PAT, DB_SECRETS, SERVICE_CREDS, AWS_SECRETKEY, SLACK_WEBHOOK_URL, MYSQL_PWD,
# DB_PW, CI_JOB_JWT and SSHPASS are; the shell's PWD is not)
_ROOT = str(Path(__file__).resolve().parents[3])  # the folder that holds `turnbudget`

# The calls a child answers; anything else is refused.
_METHODS = frozenset(
    {"load", "preflight", "ready", "reset", "act", "observe", "reset_episode", "act_batch",
     "end_episode", "observe_batch", "close"}
)  # fmt: skip


class SealedAgentError(RuntimeError):
    """A sealed agent's call failed: the agent raised (its type and message follow), its
    process died, or it answered something that is not a reply."""


@dataclass(frozen=True)
class _Profile:
    """What the engine reads of an agent without calling it, as its own process saw it."""

    name: str
    repr: str
    needs_oracle: bool
    budget_aware: bool
    needs_house: bool
    batch: bool  # the driven form is a BatchAgent (an AsyncAgent becomes one: `in_flight`)
    max_batch_size: int
    observes: bool  # it has the observe hook of its form
    readies: bool  # it has its own ``ready()`` (called in its process: one round trip each)

    @classmethod
    def from_reply(cls, value: Any) -> _Profile:
        if not isinstance(value, dict) or set(value) != set(cls.__dataclass_fields__):
            raise SealedAgentError(f"the sealed agent's process sent a bad profile: {value!r:.200}")
        kinds = {"name": str, "repr": str, "max_batch_size": int}
        for key, want in kinds.items():
            if not isinstance(value[key], want) or isinstance(value[key], bool):
                raise SealedAgentError(f"the sealed agent's profile has a bad {key!r}")
        if not all(isinstance(value[k], bool) for k in set(value) - set(kinds)):
            raise SealedAgentError("the sealed agent's profile has a flag that is not a bool")
        return cls(**value)

    def form(self) -> tuple[bool, int, bool]:
        return self.batch, self.max_batch_size, self.observes


# --------------------------------------------------------------------------- the parent


def _exit_code(proc: subprocess.Popen) -> int | None:
    """The child's exit code (negative: the signal), None while it runs, without reaping it:
    until `_reap` waits for it, its pid and session id cannot name another process."""
    if proc.returncode is not None or not hasattr(os, "waitid"):
        return proc.poll()
    try:
        status = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # (reaped elsewhere)
        return proc.poll()
    if status is None:
        return None
    return status.si_status if status.si_code == os.CLD_EXITED else -status.si_status


def _reap(proc: subprocess.Popen, conn: Any, pidfd: int | None, owner: int) -> None:
    """Kill a child with every process it started (in the process that started it only),
    reap it and close its pipe."""
    if os.getpid() == owner:
        if proc.returncode is None:  # not reaped: its pid and session are still its own
            from turnbudget.eval.run.lock import kill_tree

            with contextlib.suppress(OSError):  # (what left its tree is still in its session)
                os.killpg(proc.pid, signal.SIGSTOP)
            kill_tree(proc.pid)
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    conn.close()
    if pidfd is not None:
        os.close(pidfd)


class _Child:
    """One child process holding an agent, and the pipe to it (usable by its owner only).

    The pipe carries `multiprocessing.connection`'s frames (a 4-byte length, then the
    message), which the child reads and writes with a ``Connection``; this side sends and
    reads them itself, on a non-blocking socket, so that a call's ``wait`` bounds the whole
    exchange: ``recv_bytes`` read a whole frame once any of it was there, and a child that
    sent part of one (or stopped reading a long call) held the evaluator past every limit."""

    def __init__(self, load: tuple[Any, ...], keep: frozenset[str] = frozenset()):
        if os.name != "posix" or not sys.executable:
            raise SealedAgentError(
                "sealed agents need a POSIX system and a known sys.executable (the agent's "
                "process is a fresh interpreter handed its pipe)"
            )
        parent, child = socket.socketpair()  # (what ``multiprocessing.Pipe()`` makes here)
        # The child's end blocking, as Pipe() makes it: under socket.setdefaulttimeout() a new
        # socket is non-blocking, and its process's first read ended it (exit code 0).
        child.setblocking(True)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT.format("warden"), str(child.fileno()),
                 _ROOT, str(os.getpid())],
                pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL, start_new_session=True,
                env=_agent_environment(keep),
            )  # fmt: skip
        finally:
            child.close()
        parent.setblocking(False)  # (this side only: every wait is a poll with a deadline)
        self.conn = parent
        self._frames = FrameReader(parent, MAX_REPLY)
        self.owner = os.getpid()
        self.pidfd: int | None = None
        if hasattr(os, "pidfd_open"):  # (Linux): readable once the child has ended
            try:
                self.pidfd = os.pidfd_open(self.proc.pid)
            except OSError:
                self.pidfd = None
        # One poll object for every call: a reply, or the child's end, wakes it.
        self._poll = select.poll()
        for fd in (parent.fileno(), self.pidfd):
            if fd is not None:
                self._poll.register(fd, select.POLLIN)
        self._reaper = weakref.finalize(self, _reap, self.proc, self.conn, self.pidfd, self.owner)
        try:
            reply = self.call("load", list(sys.path), *load, wait=START_SECONDS)
            self.profile = _Profile.from_reply(reply)
        except BaseException:
            self.kill()
            raise

    @property
    def alive(self) -> bool:
        return self._reaper.alive and os.getpid() == self.owner and _exit_code(self.proc) is None

    def kill(self) -> None:
        self._reaper()

    def call(self, method: str, *args: Any, wait: float | None = None) -> Any:
        """Send one call and wait for its whole reply, at most ``wait`` seconds in all (None:
        as long as it takes; the backend's timeout interrupts it). Any exception while
        waiting kills the child: its state is unknown, and a fresh one starts on the next
        call."""
        message = pickle.dumps((method, args), protocol=pickle.HIGHEST_PROTOCOL)
        deadline = None if wait is None else time.monotonic() + wait
        try:
            # (a signal's handler that raises, as a timeout's does, ends the wait)
            send_frame(self.conn, message, deadline)
            data = self._receive(deadline)
        except ConnectionError:  # its end of the pipe closed
            data = None
        except Late:
            self.kill()
            who = f" {self.profile.name!r}" if hasattr(self, "profile") else ""  # (once loaded)
            raise SealedAgentError(
                f"the sealed agent{who} did not answer {method}() in {wait:g}s"
            ) from None
        except FrameTooLong:
            self.kill()
            raise SealedAgentError(
                f"the sealed agent's reply to {method}() was over {MAX_REPLY:,} bytes"
            ) from None
        except BaseException:  # a timeout's signal, Ctrl-C: the call is abandoned
            self.kill()
            raise
        if data is None:  # its end of the pipe closed: it is ending (or closed it itself)
            code = self._ended(CLOSE_SECONDS)
            self.kill()
            how = (
                "it closed its pipe" if code is None
                else f"exit code {code}" if code >= 0 else f"killed by signal {-code}"
            )  # fmt: skip
            raise SealedAgentError(f"the sealed agent's process ended during {method}() ({how})")
        try:
            reply = json.loads(data)
        except (ValueError, RecursionError):
            reply = None
        if isinstance(reply, list) and len(reply) == 2 and reply[0] == "ok":
            return reply[1]
        if (
            isinstance(reply, list) and len(reply) == 3 and reply[0] == "error"
            and isinstance(reply[1], str) and isinstance(reply[2], str)
        ):  # fmt: skip
            name, text = reply[1][:100], reply[2][:2000]
            raise SealedAgentError(f"{name}: {text}" if text else name)
        self.kill()
        raise SealedAgentError(f"the sealed agent's process sent a bad reply to {method}()")

    def _ended(self, seconds: float) -> int | None:
        """The child's exit code once it ends, None if it still runs after ``seconds``."""
        if self.pidfd is None:
            try:
                return self.proc.wait(seconds)
            except subprocess.TimeoutExpired:
                return None
        ended = select.poll()
        ended.register(self.pidfd, select.POLLIN)
        ended.poll(seconds * 1000)
        return _exit_code(self.proc)

    def close(self) -> None:
        """Ask the child to close its agent and end; kill it if it does not in time."""
        if self.alive:
            deadline = time.monotonic() + CLOSE_SECONDS
            try:
                send_frame(self.conn, pickle.dumps(("close", ())), deadline)
                self._wait(deadline)  # (its reply, or its end)
            except (OSError, Late):
                pass
        self.kill()

    def _receive(self, deadline: float | None) -> bytes | None:
        """One reply: its bytes, or None when the child's end closed (or it ended) first."""
        while True:
            try:
                frame = self._frames.take()
            except EOFError:
                return None
            if frame is not None:
                return frame
            if self.conn.fileno() not in self._wait(deadline):
                return None  # (it ended; a process it started holds its end of the pipe)

    def _wait(self, deadline: float | None) -> set[int]:
        """The descriptors ready: the pipe (readable), the child's pidfd (it ended); `Late`
        when neither is by ``deadline``."""
        ready = {fd for fd, _ in self._poll.poll(milliseconds(deadline))}
        if not ready:
            raise Late
        return ready


class Sealed:
    """The base of both proxies (`SealedAgent`, `SealedBatchAgent`): the agent's load
    message, its profile (``name``, ``needs_oracle``, ``budget_aware``, ``needs_house``
    and ``repr`` as its own process saw them), and the child process."""

    def __init__(self, load: tuple[Any, ...], child: _Child, keep: frozenset[str]):
        self._load = load
        self._keep = keep  # (the secret-named variables its process gets: `_agent_environment`)
        self._profile = child.profile
        self._child: _Child | None = child
        profile = child.profile
        self.name = profile.name
        self.needs_oracle = profile.needs_oracle
        self.budget_aware = profile.budget_aware
        self.needs_house = profile.needs_house

    def __repr__(self) -> str:  # the agent's own: a run's configuration is the same sealed or not
        return self._profile.repr

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_child": None}

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ready(self) -> None:
        """Start the agent's process here unless it runs already (the driver calls this
        outside an episode's clock; any call does it too), then call the agent's own
        ``ready()`` there, as the driver calls it in process (an agent without one pays
        no round trip)."""
        child = self._live()
        if self._profile.readies:
            child.call("ready", wait=READY_SECONDS)

    def preflight(self) -> None:
        """The agent's own ``preflight`` (`turnbudget.agents.base.preflight`), run in its
        process: the evaluator calls it once, before the first episode. A refusal is raised
        here as the agent raised it when it is an ``ImportError`` (a missing extra) or a
        ``ConnectionError`` (a server that is down; its type name leads the message), as
        `SealedAgentError` otherwise."""
        reply = self._live().call("preflight", wait=READY_SECONDS)
        if reply is None:
            return
        if not (
            isinstance(reply, list) and len(reply) == 2 and reply[0] in _REFUSALS
            and isinstance(reply[1], str)
        ):  # fmt: skip
            raise SealedAgentError("the sealed agent's process sent a bad reply to preflight()")
        raise _REFUSALS[reply[0]](reply[1][:2000])

    def _call(self, method: str, *args: Any) -> Any:
        return self._live().call(method, *args)

    def _live(self) -> _Child:
        child = self._child
        if child is None or not child.alive:
            if child is not None and child.owner == os.getpid():
                child.kill()  # (reap a child that died between calls)
            self._child = None  # (one inherited through a fork is its owner's)
            child = _Child(self._load, self._keep)
            if child.profile.form() != self._profile.form():
                child.kill()
                raise SealedAgentError(
                    f"the agent built in a new process differs from the one sealed "
                    f"({child.profile.form()} != {self._profile.form()})"
                )
            self._child = child
        return child

    def close(self) -> None:
        """End the child process (the agent's own ``close``, if `in_flight` made its batch
        form, runs first); a later call starts a new one."""
        if self._child is not None and self._child.owner == os.getpid():
            self._child.close()
        self._child = None


class SealedAgent(Sealed):
    """An `Agent` in its own process (see the module doc); made by `seal`."""

    _note: Any = None

    def reset(self, seed: int) -> None:
        self._call("reset", seed)

    def act(self, observation: str, info: Mapping[str, Any]) -> Any:
        reply = self._call("act", observation, info)
        if not (isinstance(reply, list) and len(reply) == 2):
            raise SealedAgentError("the sealed agent's process sent a bad reply to act()")
        action, self._note = reply
        return action

    def step_note(self) -> Any:
        """The agent's ``step_note()`` for its last command (it came back with the command)."""
        note, self._note = self._note, None
        return note

    def observe(self, observation: str, info: Mapping[str, Any], executed: str) -> None:
        if self._profile.observes:
            self._call("observe", observation, info, executed)


class SealedBatchAgent(Sealed):
    """A `BatchAgent` (or an `AsyncAgent` in its `in_flight` form) in its own process; made by
    `seal`."""

    def __init__(self, load: tuple[Any, ...], child: _Child, keep: frozenset[str]):
        super().__init__(load, child, keep)
        self.max_batch_size = child.profile.max_batch_size
        self._notes: dict[str, Any] = {}

    def reset_episode(self, episode_id: str, seed: int) -> None:
        self._call("reset_episode", episode_id, seed)

    def act_batch(
        self,
        episode_ids: Sequence[str],
        observations: Sequence[str],
        infos: Sequence[Mapping[str, Any]],
    ) -> list[Any]:
        ids = list(episode_ids)
        reply = self._call("act_batch", ids, list(observations), list(infos))
        if not (isinstance(reply, list) and len(reply) == 2 and isinstance(reply[0], list)):
            raise SealedAgentError("the sealed agent's process sent a bad reply to act_batch()")
        actions, notes = reply
        if notes is not None and not (isinstance(notes, list) and len(notes) == len(ids)):
            raise SealedAgentError("the sealed agent's process sent a bad reply to act_batch()")
        self._notes = {} if notes is None else dict(zip(ids, notes, strict=True))
        return actions

    def step_notes(self, episode_ids: Sequence[str]) -> list[Any]:
        """Each episode's step note for its last command (they came back with the commands)."""
        return [self._notes.get(e) for e in episode_ids]

    def end_episode(self, episode_id: str) -> None:
        if self._child is not None and self._child.alive:  # (a lost child took it along)
            self._call("end_episode", episode_id)

    def observe_batch(
        self,
        episode_ids: Sequence[str],
        observations: Sequence[str],
        infos: Sequence[Mapping[str, Any]],
        executed_actions: Sequence[str],
    ) -> None:
        if self._profile.observes:
            self._call(
                "observe_batch", list(episode_ids), list(observations), list(infos),
                list(executed_actions),
            )  # fmt: skip


def seal(
    agent: Any,
    *,
    concurrency: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> SealedAgent | SealedBatchAgent:
    """Run ``agent`` in a process of its own; return the proxy an engine drives instead.

    The child starts now (it reports the agent's name, flags and form) and is
    used by this process; a copy of the proxy sent to a worker starts its own
    there. Close the proxy (or use it as a context manager) to end the child;
    one left open ends with its process.

    Args:
        agent: an `Agent`, `BatchAgent` or `AsyncAgent` (picklable: its class
            importable by module, not defined in ``__main__``), or a spec of
            `turnbudget.agents.make_agent` (``"mypackage.agents:MyAgent"``),
            built in the child only, so none of its code runs here. A name
            registered with `register_agent` in this process is unknown there.
            A proxy is returned as it is.
        concurrency: episodes in flight for an async agent (as `in_flight`,
            which runs in the child).
        options: keyword options for the spec's factory (``llm``: ``base_url``, ...).

    Raises:
        ValueError: the agent cannot be pickled, or not be built in the child (the
            child's error follows).
    """
    from turnbudget.agents.secrets import redact, redact_start, remember, url_secrets

    if isinstance(agent, Sealed):
        if concurrency is not None or options:
            raise ValueError(
                f"{agent!r} is sealed already: give `concurrency` and `options` when sealing it"
            )
        return agent
    if isinstance(agent, str):
        from turnbudget.agents.registry import spec_source

        if spec_source(agent) == "registered":
            raise ValueError(
                f"Cannot seal {agent!r}: its name was registered with register_agent in this "
                "process, and a sealed agent is built in a fresh one, which knows only the "
                "built-in names, entry points and MODULE:ATTR or PATH.py:ATTR specs; seal the "
                "agent object, or give its MODULE:ATTR"
            )
        from turnbudget.agents.registry import remember_spec_args

        remember_spec_args(agent)  # (its errors and notes are written here)
        options, published = _publish_credentials(dict(options or {}))
        load: tuple[Any, ...] = ("spec", (agent, options, published), concurrency)
        keep = _secret_names_kept(agent, options.get("api_key_env"), published.values())
        # The key is registered here too, where the run's errors are shown and written: the
        # agent that registers it is built in the child (an llm spec's default key was not:
        # `llm:KEY`, the key given as the model, was shown whole when the child refused it).
        keys = _secret_names_kept(agent, options.get("api_key_env"), ())
        remember(*(os.environ.get(name) for name in keys))
        if _is_llm_spec(agent) and options.get("base_url") is None and not published:
            from turnbudget.agents.llm import BASE_URL_ENV

            keep |= {BASE_URL_ENV}  # (its URL when none is given, credentials and all)
            with contextlib.suppress(ValueError):  # (a malformed URL: the child says so)
                remember(*url_secrets(os.environ.get(BASE_URL_ENV)))
    else:
        if options:
            raise ValueError("Expect `options` only with an agent spec (a string)")
        try:
            payload = pickle.dumps(agent, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise ValueError(
                f"Expect a picklable agent to seal (or a MODULE:ATTR spec), got {agent!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        from turnbudget.agents.registry import AGENT_FILE_MODULE

        # The files of PATH.py agents' modules (`make_agent` names them `_turnbudget_agent_...`):
        # no import finds them in the child, where unpickling the agent failed on its class.
        # Each is loaded there only if the agent's pickle names it (`_Unpickler`).
        files = {
            name: module.__file__
            for name, module in list(sys.modules.items())
            if name.startswith(AGENT_FILE_MODULE) and getattr(module, "__file__", None)
        }
        load = ("object", (payload, files), concurrency)
        # (a `ChatAgent` reads its URL's credentials from the variable its pickle names)
        url_env = getattr(agent, "_url_env", None)
        url_envs = (url_env,) if isinstance(url_env, str) else ()
        keep = _secret_names_kept(None, getattr(agent, "api_key_env", None), url_envs)
    try:
        child = _Child(load, keep)
    except SealedAgentError as exc:
        hint = ""
        if getattr(type(agent), "__module__", None) == "__main__":
            hint = " (its class is defined in __main__: move it to a module the child can import)"
        shown = redact_start(repr(agent), 200)  # (blanked before it is cut)
        raise ValueError(redact(f"Cannot start the sealed agent {shown}: {exc}{hint}")) from exc
    proxy = SealedBatchAgent if child.profile.batch else SealedAgent
    return proxy(load, child, keep)


def _secret_names_kept(spec: str | None, key_env: Any, published: Any) -> frozenset[str]:
    """The secret-named environment variables an agent's process gets: the API key's that its
    options name (``api_key_env``; an ``llm`` spec's default without one) and the URLs with
    credentials `_publish_credentials` moved there for it."""
    if _is_llm_spec(spec) and not isinstance(key_env, str):
        from turnbudget.agents.llm import DEFAULT_API_KEY_ENV

        key_env = DEFAULT_API_KEY_ENV
    names = set(published)
    if isinstance(key_env, str):
        names.add(key_env.strip())
    return frozenset(names)


_LLM_SPECS = ("llm", "turnbudget.agents.llm")  # (the name, and the module its factory is in)


def _is_llm_spec(spec: Any) -> bool:
    return isinstance(spec, str) and spec.strip().partition(":")[0].lower() in _LLM_SPECS


def _agent_environment(keep: frozenset[str]) -> dict[str, str]:
    """The evaluator's environment as an agent's process gets it: without the variables named
    like secrets (`_SECRET_NAME`: an API key, a token, a password) or holding a URL with
    credentials (`_holds_credentials`: but the URLs it is given) but those in ``keep``. A
    sealed agent is code the evaluator does not trust with its keys."""
    given = {os.environ[name] for name in keep if name in os.environ}
    return {
        name: value
        for name, value in os.environ.items()
        if name in keep
        or not (_SECRET_NAME.search(name) or (value not in given and _holds_credentials(value)))
    }


def _holds_credentials(value: str) -> bool:
    """Whether ``value`` is a URL with credentials (user info, a query), whatever its
    variable's name: the URLs of LLM servers are in such variables (``OPENAI_BASE_URL``, the
    ones a `ChatAgent` or `seal` sets for worker processes), and an agent read them and wrote
    them into its step notes."""
    from turnbudget.agents.secrets import url_secrets

    # The value as one URL (a password may hold ",", ";" or "'", where the search below cuts
    # it), then every URL in it: pip's PIP_EXTRA_INDEX_URL lists several, separated by
    # spaces, and uv's UV_INDEX names one (``corp=https://user:pw@host``).
    for url in (value, *_URL.findall(value)):
        try:
            if url_secrets(url):
                return True
        except ValueError:  # (a malformed port or host: no URL)
            continue
    return False


#: A URL inside a variable's value: a scheme, then everything up to a space or a separator.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s,;|\"'<>]+")


def _publish_credentials(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``options`` without the URLs that carry credentials (``base_url`` with a password or a
    query key), and for each such option the environment variable that now holds its URL: a
    proxy's pickle (sent to workers) names the variable, never the credentials, as a
    `ChatAgent`'s does. Each credential is registered for blanking here, where the run's
    lock and errors are written (the agent that registers them is built in the child)."""
    from turnbudget.agents.secrets import remember, url_secrets

    published = {}
    for name, value in list(options.items()):
        if isinstance(value, str) and "://" in value and url_secrets(value):
            remember(*url_secrets(value))
            published[name] = f"TURNBUDGET_SEALED_{name.upper()}_{os.urandom(4).hex().upper()}"
            os.environ[published[name]] = value  # (the child and forked workers inherit it)
            del options[name]
    return options, published


def _published_options(published: Mapping[str, str]) -> dict[str, Any]:
    """The options `_publish_credentials` moved into this process's environment."""
    missing = [env for env in published.values() if env not in os.environ]
    if missing:
        raise ValueError(
            f"The sealed agent's options with credentials are in the environment variables "
            f"{missing}, which this process does not have (set by the process that sealed the "
            "agent: a worker on another host does not inherit them)"
        )
    return {name: os.environ[env] for name, env in published.items()}


def driven_form(agent: Any, *, concurrency: int | None = None, sealed: bool = False) -> Any:
    """The form an engine drives ``agent`` in: `seal` when ``sealed``, else `in_flight`."""
    from turnbudget._checks import check_bool
    from turnbudget.agents.base import in_flight

    if check_bool(sealed, "sealed"):
        return seal(agent, concurrency=concurrency)
    return in_flight(agent, concurrency)


# --------------------------------------------------------------------------- the child


def _error(exc: BaseException) -> list[str]:
    """The reply for ``exc`` (`exception_message`: whatever the agent's exception does)."""
    from turnbudget.eval.run.driver import exception_message

    return ["error", type(exc).__name__, exception_message(exc)[:2000]]


class _Unpickler(pickle.Unpickler):
    """Unpickles an agent, loading the PATH.py file of a module it names that no import
    finds (``files``: module name -> path) first, and only those: an unrelated file the
    parent once loaded, since deleted, failed every sealed agent."""

    def __init__(self, data: io.BytesIO, files: Mapping[str, str]) -> None:
        super().__init__(data)
        self._files = files

    def find_class(self, module: str, name: str) -> Any:
        if module not in sys.modules and module in self._files:
            from turnbudget.agents.registry import load_agent_file

            load_agent_file(self._files[module], self._files[module])
        return super().find_class(module, name)


class _Host:
    """The child's side: the agent, and one method per call of the protocol."""

    def __init__(self) -> None:
        self.agent: Any = None
        self.driven: Any = None

    def load(self, paths: list[str], kind: str, data: Any, concurrency: int | None) -> dict:
        from turnbudget._checks import agent_flag, check_agent
        from turnbudget.agents.base import agent_flags, in_flight
        from turnbudget.eval.run.plan import _agent_repr

        sys.path[:] = paths
        if kind == "spec":
            from turnbudget.agents.registry import make_agent

            spec, options, published = data
            self.agent = make_agent(spec, **options, **_published_options(published))
        else:
            payload, files = data
            self.agent = _Unpickler(io.BytesIO(payload), files).load()
        check_agent(self.agent)  # (its flags and batch size, as the parent checks its own)
        self.driven = in_flight(self.agent, concurrency)
        needs_oracle, budget_aware = agent_flags(self.agent)
        batch = hasattr(self.driven, "act_batch")
        return {
            "name": str(getattr(self.agent, "name", None) or type(self.agent).__name__),
            "repr": _agent_repr(self.agent), "needs_oracle": needs_oracle,
            "budget_aware": budget_aware,
            "needs_house": agent_flag(self.agent, "needs_house"), "batch": batch,
            "max_batch_size": int(getattr(self.driven, "max_batch_size", 1)) if batch else 1,
            "observes": hasattr(self.driven, "observe_batch" if batch else "observe"),
            "readies": callable(getattr(self.agent, "ready", None)),
        }  # fmt: skip

    def ready(self) -> None:
        self.agent.ready()

    def preflight(self) -> list[str] | None:
        from turnbudget.agents.base import preflight

        try:
            preflight(self.agent)
        except ImportError as exc:
            return ["ImportError", str(exc)]
        except ConnectionError as exc:
            return ["ConnectionError", f"{type(exc).__name__}: {exc}"]
        return None

    def reset(self, seed: int) -> None:
        self.driven.reset(seed)

    def act(self, observation: str, info: dict[str, Any]) -> list[Any]:
        action = self.driven.act(observation, info)
        note = getattr(self.driven, "step_note", None)
        return [action, note() if note is not None else None]

    def observe(self, observation: str, info: dict[str, Any], executed: str) -> None:
        self.driven.observe(observation, info, executed)

    def reset_episode(self, episode_id: str, seed: int) -> None:
        self.driven.reset_episode(episode_id, seed)

    def act_batch(self, ids: list[str], observations: list[str], infos: list[Any]) -> list[Any]:
        from turnbudget.eval.run.driver import one_each

        # (checked here, as the driver checks an agent in its process: list() played a str
        # one character an episode, and a dict by its keys)
        name = type(self.driven).__name__
        actions = one_each(
            self.driven.act_batch(ids, observations, infos), len(ids), f"{name}.act_batch",
            "commands",
        )  # fmt: skip
        notes_of = getattr(self.driven, "step_notes", None)
        if notes_of is None:
            return [actions, None]
        return [actions, one_each(notes_of(ids), len(ids), f"{name}.step_notes", "notes")]

    def end_episode(self, episode_id: str) -> None:
        end = getattr(self.driven, "end_episode", None)  # (optional, as in process: the driver's
        if end is not None:  # `_end_episode`)
            end(episode_id)

    def observe_batch(self, *args: list[Any]) -> None:
        self.driven.observe_batch(*args)

    def close(self) -> None:
        if self.driven is not None and self.driven is not self.agent:
            self.driven.close()  # the AsyncBatch `in_flight` made: its loop and clients


def _keep_descendants() -> None:
    """Become a subreaper (Linux): a process the agent starts stays below this one even
    when its own parent ends (a double fork), where ending this child's tree finds it."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            pr_set_child_subreaper = 36
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_child_subreaper, 1)


def warden(fd: int, parent: int) -> None:
    """The first process of a sealed agent's: it starts the agent's own below it (`serve`,
    handed the pipe ``fd``), keeps every process that one starts below itself (a
    subreaper), and when the agent's process ends, or the evaluator (``parent``) does, ends
    them all and then itself, as the agent's process ended (its exit code or signal).

    The agent's own process cannot be trusted to end what it started: it may undo its
    death signal and its watcher, and processes it starts in a session of their own left
    its tree, and the evaluator's reach, when it died first. No agent code runs here."""
    import turnbudget.eval.run.lock  # noqa: F401 (`_end_descendants`'s, loaded before any
    # signal or thread may need it: an import half done in one raised in the other)

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the evaluator's to handle
    _keep_descendants()
    agent = subprocess.Popen(
        [sys.executable, "-c", _BOOT.format("serve"), str(fd), _ROOT, str(os.getpid())],
        pass_fds=(fd,), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(fd)  # (the agent's process holds the pipe: its end is the evaluator's EOF)

    def end_all(*_: Any) -> None:
        _end_descendants()
        os._exit(1)

    signal.signal(signal.SIGTERM, end_all)
    _watch_parent(parent, end_all)
    code = agent.wait()
    _end_descendants()
    if code < 0:  # (killed by a signal: so is this process, as the evaluator reads it)
        with contextlib.suppress(OSError):  # (SIGKILL's handler cannot be set: it is default)
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code if code >= 0 else 128 - code)


def _end_descendants() -> None:
    """Kill every process below this one and reap them (a subreaper's orphans are its own)."""
    from turnbudget.eval.run.lock import kill_tree

    kill_tree(os.getpid(), include_root=False)
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _watch_parent(parent: int, end: Any) -> None:
    """Call ``end`` when the process ``parent`` is no longer this one's parent (it died):
    SIGTERM on its death where Linux sends it, and a thread that looks twice a second."""
    import threading
    import time

    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGTERM))

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        end()

    threading.Thread(target=watch, name="turnbudget-sealed-warden", daemon=True).start()


def serve(fd: int, parent: int | None = None) -> None:
    """The child process: answer calls on the pipe ``fd`` until it closes (or ``close``);
    ``parent``: the evaluator's pid (the child ends when that process does)."""
    import multiprocessing.connection as mpc

    from turnbudget.eval.run.driver import json_number
    from turnbudget.eval.run.lock import exit_with_parent

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the evaluator's to handle
    exit_with_parent(signum=signal.SIGKILL, parent_pid=parent)
    _keep_descendants()
    conn = mpc.Connection(fd)
    host = _Host()
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return
        method = None
        try:
            method, args = pickle.loads(data)
            if method not in _METHODS:
                raise ValueError(f"unknown call {method!r}")
            reply: list[Any] = ["ok", getattr(host, method)(*args)]
        except BaseException as exc:  # (the agent's: SystemExit too) reported, not fatal
            reply = _error(exc)
        try:
            text = json.dumps(reply, default=json_number)
        except BaseException as exc:  # (``json_number`` runs the agent's ``item()``: anything)
            why = _error(exc)
            text = json.dumps(
                ["error", "TypeError", f"{method}() returned what cannot be sent as JSON: "
                 f"{why[1]}: {why[2]}"]
            )  # fmt: skip
        conn.send_bytes(text.encode())
        if method == "close":
            return
