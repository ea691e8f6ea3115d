"""The episode driver: how every kind of run plays its episodes, written once.

An episode is a *program*: a generator that drives its envs and yields to the
driver whenever an agent must answer:

- `Act` (``seat``, ``observation``, ``info``): the agent in that seat chooses a
  command; the program receives ``(command, note)``, ``note`` being the
  agent's own account of the call (its ``step_note()``, or its entry of
  ``step_notes()``; None when it keeps none);
- `Observe` (``seat``, ``observation``, ``info``, ``executed``): a forced turn
  (a probe's prefix, a slip played for the agent): the agent hears what was
  executed for it (its optional ``observe`` hook); the program receives None.

What the program returns is the episode's outcome. A *kind* of run (`Kind`:
evaluation episodes, probe episodes, team rounds) says who plays each seat of
a job (`Player`: which agent, the episode id it knows, its seed) and builds
the program; the driver owns everything else once:

- the agent protocol: ``reset`` / ``act`` for an `Agent`, ``reset_episode`` /
  ``act_batch`` / ``end_episode`` for a `BatchAgent`, whose calls gather every
  episode in flight (up to its ``max_batch_size``), and the observe hooks. A
  batch agent never has two episodes with one id in flight: a job whose id is
  in use waits for that episode to end (kinds give the same id to episodes the
  agent must not tell apart, such as one task at two hidden budgets);
- faults: an exception from an agent or an env ends only the job it came
  from, as an `EpisodeFailure`, and the kind forgets the env it went through
  (``discard``). When a batch call fails, every job it served is replayed on
  its own, so only a job that fails again fails;
- timeouts (`alarm`): per episode, or per batch turn until the earliest
  deadline of the episodes in flight. An agent's optional ``ready()`` (a
  sealed agent's: it starts the agent's process) runs when the driver is
  built and before each episode or turn, outside the driver's clock (the local
  backend's). A pool or Ray worker's clock is its parent's, which runs from the
  chunk's start: a sealed agent's process that died in one episode is started
  again inside the next one's time there (see docs/guides/agents.md).

Backends build one driver per worker (``Driver(agents, config, serialize,
kind=...)``, the runner hook of `turnbudget.eval.run.backends`) and call
``run(chunk)`` or ``stream(chunk)``; results depend only on the jobs, never on
the chunking, the batch width or the order episodes end.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import threading
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from turnbudget._checks import brief, escaped_controls, is_listlike
from turnbudget.agents.base import observe, observe_batch
from turnbudget.agents.secrets import redact
from turnbudget.envs.deadline import StepTimeout, step_deadline
from turnbudget.records import MAX_RECORD_TEXT, cap_strings

__all__ = [
    "EPISODE_ERRORS",
    "FAILURE_KINDS",
    "MAX_NOTE_DEPTH",
    "STOPS_RUN",
    "Act",
    "AgentNotReady",
    "AgentSet",
    "Driver",
    "EpisodeFailure",
    "EpisodeTimeout",
    "Kind",
    "Observe",
    "Player",
    "alarm",
    "can_interrupt",
    "describe",
    "exception_message",
    "interrupts_ignored",
    "one_each",
    "start_up",
]

logger = logging.getLogger(__name__)

#: Why an episode failed to run: the agent or env raised, its worker died, it ran too long.
FAILURE_KINDS = ("exception", "worker_lost", "timeout")

#: What stops the run instead of ending an episode: Ctrl-C. Every handler of `EPISODE_ERRORS`
#: lets it through first. Nothing in a worker that ignores Ctrl-C (`interrupts_ignored`).
STOPS_RUN: tuple[type[BaseException], ...] = (KeyboardInterrupt,)
#: What ends only the episode it came from (a failed-to-run record, the same on every backend):
#: anything but `STOPS_RUN`, as a sealed agent's process reports it. ``SystemExit`` (``sys.exit``
#: in an agent), ``GeneratorExit`` and an agent's own subclass of ``BaseException`` each ended
#: a local run once, but only a worker of a pool run (lost, with a traceback).
EPISODE_ERRORS = (BaseException,)

#: The deepest a step note's lists and dicts may nest (one nested 500 deep ended its episode
#: with a RecursionError from the records' writer).
MAX_NOTE_DEPTH = 64
#: The most bytes a step note takes as JSON: its step's line holds it (a note of 17,000
#: strings of 4,096 characters made a 70 MB line, which the records' reader refuses, and
#: the finished run could not be resumed or reported).
MAX_NOTE_BYTES = 2**20
#: The key under which an episode record counts its step notes (`turnbudget.eval.run.episodes`).
NOTES_COUNT_KEY = "steps"


class EpisodeTimeout(BaseException):
    """Raised inside an episode that ran past its time limit (where the backend can interrupt it).

    A `BaseException`, as `asyncio.CancelledError` is: the agent's code it interrupts often
    guards its calls with ``except Exception`` (a client that retries, a fallback command),
    which caught it and kept the episode playing past its timeout, or for ever, on the local
    backend only (a pool or Ray worker is killed instead).
    """


class AgentNotReady(RuntimeError):
    """An agent's ``ready()`` or ``preflight()``, run in this process, did not return within
    `turnbudget.eval.run.sealed.READY_SECONDS` (`start_up`)."""


@dataclass(frozen=True)
class EpisodeFailure:
    """An episode that did not run to its end: nothing of it is logged.

    Attributes:
        spec: the job (an `EpisodeSpec`, a probe job, a team episode).
        kind: one of `FAILURE_KINDS`.
        error: what happened, one line (``"ValueError: bad command"``).
    """

    spec: Any
    kind: str
    error: str


def exception_message(exc: BaseException) -> str:
    """What ``exc`` says, on one line (for ``sys.exit``, the call). An agent's exception is
    the agent's code: its ``__str__`` (or its exit code's ``__repr__``) may raise or return
    anything, and then the message says so instead of raising in turn."""
    try:
        # (a sys.exit() in an episode, or while the agent was built: "during the episode" was
        # said of both)
        text = f"sys.exit({exc.code!r}) was called" if isinstance(exc, SystemExit) else str(exc)
        if not isinstance(text, str):
            raise TypeError("__str__ returned a non-string")
        # (str's own split: a str subclass's may be the agent's code too, and raise)
        return " ".join(str.split(text))
    except STOPS_RUN:
        raise
    except EPISODE_ERRORS as err:
        return f"<its message could not be read: {type(err).__name__}>"


def json_number(value: Any) -> Any:
    """``json.dumps``' ``default`` for the NumPy scalars an agent may put in a note
    (``np.float32(0.5)``): their plain value; anything else is not JSON (`TypeError`)."""
    item = getattr(value, "item", None)
    if callable(item):
        plain = item()
        if isinstance(plain, (bool, int, float, str)):
            return plain
    raise TypeError(f"{type(value).__name__} is not JSON")


def interrupts_ignored() -> None:
    """Say that this process ignores Ctrl-C (a pool's worker: it is the evaluator's to handle),
    so a KeyboardInterrupt here is an agent's own raise: it ends its episode, as in a sealed
    agent's process, where it killed the worker (lost, with a multiprocessing traceback)."""
    global STOPS_RUN
    STOPS_RUN = ()


def plain_note(note: Any) -> dict[str, Any] | None:
    """An agent's step note as the records keep it, and as a sealed agent's arrives: through
    JSON (its keys strings, as JSON writes ``3``, ``True`` or ``None``; its tuples lists; its
    NumPy scalars plain numbers), every secret in it blanked. None stays None. `TypeError`
    (which ends only the episode) for a note that is not a mapping, holds what JSON cannot
    write, nests deeper than `MAX_NOTE_DEPTH`, takes more than `MAX_NOTE_BYTES` as JSON,
    or holds the key the episode record counts the notes under (`NOTES_COUNT_KEY`: the
    agent's own sum under it was lost)."""
    if note is None:
        return None
    if not isinstance(note, Mapping):
        raise TypeError(f"Expect a step note to be a mapping or None, got {type(note).__name__}")
    try:
        text = json.dumps(note, default=json_number)  # (ASCII: a character is a byte)
        plain = json.loads(text)
    except STOPS_RUN:
        raise
    except EPISODE_ERRORS as exc:  # (json_number runs the agent's ``item()``: anything)
        raise TypeError(
            f"Expect a step note that JSON can write, got one it cannot ({describe(exc)})"
        ) from None
    if _depth(plain) > MAX_NOTE_DEPTH:  # (the records' writers and readers recurse)
        raise TypeError(f"Expect a step note nested at most {MAX_NOTE_DEPTH} deep")
    # (as its step records keep it: each string cut to MAX_RECORD_TEXT characters)
    if (
        len(text) > MAX_NOTE_BYTES
        and (size := len(json.dumps(cap_strings(plain)))) > MAX_NOTE_BYTES
    ):
        raise TypeError(
            f"Expect a step note of at most {MAX_NOTE_BYTES:,} bytes as JSON once its strings "
            f"are cut to {MAX_RECORD_TEXT:,} characters, got {size:,}"
        )
    if NOTES_COUNT_KEY in plain:
        raise TypeError(
            f"Expect a step note without the key {NOTES_COUNT_KEY!r}: the episode record "
            "counts the notes under it"
        )
    return _redacted(plain)


def _redacted(value: Any) -> Any:
    """JSON ``value`` with every secret in its strings (keys too) blanked (`redact`): a note
    goes into steps.jsonl, and an agent's own key in one was written there as it was."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k): _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value


def _depth(value: Any) -> int:
    """How deep JSON ``value``'s lists and dicts nest (0: an atom), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, depth + 1)
            stack.extend(
                (v, depth + 1) for v in (value.values() if isinstance(value, dict) else value)
            )
    return deepest


def describe(exc: BaseException) -> str:
    """``"TypeName: message"`` on one line, short enough for a log record, with every
    secret blanked (`turnbudget.agents.secrets`: it is recorded and logged)."""
    # (the class is the agent's code too: its name may hold what a terminal acts on)
    name = "SystemExit" if isinstance(exc, SystemExit) else escaped_controls(type(exc).__name__)
    text = escaped_controls(redact(exception_message(exc)))  # (logged to a terminal)
    text = f"{name}: {text}" if text else name
    return text if len(text) <= 500 else text[:497] + "..."


def failure(job: Any, exc: BaseException) -> EpisodeFailure:
    """The `EpisodeFailure` of ``job`` that ``exc`` ended."""
    kind = "timeout" if isinstance(exc, (EpisodeTimeout, StepTimeout)) else "exception"
    return EpisodeFailure(job, kind, describe(exc))


def can_interrupt() -> bool:
    """Whether `alarm` can interrupt Python code here (SIGALRM: the main thread, POSIX)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def start_up(agent: Any, hook: str) -> None:
    """Call ``agent``'s optional start-up hook ``hook`` (``"ready"``, ``"preflight"``: an
    attribute of that name that is no method is the agent's state, never called), within
    `turnbudget.eval.run.sealed.READY_SECONDS`, as a sealed agent's: past it, `AgentNotReady`
    naming the agent. Both run outside any episode's clock, and one that hung in this
    process stalled the whole run. A hook is interrupted where `alarm` can (the main thread
    of a POSIX process, with no timer of the caller's running: C code that retries on
    signals is not); a sealed agent's process keeps its own deadline."""
    from turnbudget.eval.run import sealed

    method = getattr(agent, hook, None)
    if not callable(method):
        return
    if (
        isinstance(agent, sealed.Sealed) or not can_interrupt()
        or signal.getitimer(signal.ITIMER_REAL)[0] > 0
    ):  # fmt: skip
        method()
        return
    seconds = sealed.READY_SECONDS
    try:
        with _sigalrm(seconds, seconds):
            method()
    except EpisodeTimeout as exc:
        from turnbudget.eval.run.plan import agent_name

        raise AgentNotReady(
            f"The agent {agent_name(agent)!r} did not return from {hook}() in {seconds:g}s (READY_SECONDS "
            "in turnbudget.eval.run.sealed: raise it there for a slow start)"
        ) from exc


@contextlib.contextmanager
def alarm(seconds: float | None, *, limit: float | None = None) -> Iterator[None]:
    """Stop the block after ``seconds``; ``limit`` is the per-episode timeout messages name.

    Env steps that can be stopped from outside (TextWorld's interpreter process)
    stop at that deadline in any thread (`step_deadline`; they raise
    `StepTimeout`). Everything else is interrupted with `EpisodeTimeout` by a
    SIGALRM, where `can_interrupt` (the main thread of a POSIX process).
    """
    if seconds is None:
        yield
        return
    limit = seconds if limit is None else limit
    with step_deadline(seconds, limit=limit):
        if not can_interrupt():
            yield
            return
        with _sigalrm(seconds, limit):
            yield


#: Seconds between the SIGALRMs of a block that runs on past its timeout (see `_sigalrm`).
REFIRE_SECONDS = 1.0


@contextlib.contextmanager
def _sigalrm(seconds: float, limit: float) -> Iterator[None]:
    armed, fired = True, False
    message = f"ran past the timeout of {limit:g}s"

    def fire(signum: int, frame: Any) -> None:
        nonlocal fired
        if armed:  # the block may have ended just as the timer fired
            fired = True
            raise EpisodeTimeout(message)

    previous = signal.signal(signal.SIGALRM, fire)
    # (0 would disarm it.) It fires again while the block runs on: the first raise can land
    # where it stops only part of it, as in an async agent's call that blocks its event loop
    # (the next episode's call then blocked for ever).
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3), REFIRE_SECONDS)
    try:
        yield
    except (EpisodeTimeout, StepTimeout, *STOPS_RUN):
        raise
    except BaseException as exc:
        if fired:  # the agent caught the timeout and raised something else instead
            raise EpisodeTimeout(f"{message} (then raised {describe(exc)})") from exc
        raise
    else:
        # Code that catches every exception (``except BaseException: pass``) kept the episode
        # playing past its timeout, and it was recorded as if it had run in time.
        if fired:
            raise EpisodeTimeout(f"{message} (its code caught the timeout and played on)")
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# Requests are named tuples, not frozen dataclasses: one is built per turn, and a
# frozen dataclass's ``__init__`` costs several times a tuple's.


class Act(NamedTuple):
    """A request for the command of the agent in ``seat``."""

    seat: int
    observation: str
    info: dict[str, Any]


class Observe(NamedTuple):
    """A forced turn: the agent in ``seat`` is told that ``executed`` ran in ``observation``."""

    seat: int
    observation: str
    info: dict[str, Any]
    executed: str


Request = Act | Observe
Program = Generator[Request, Any, Any]


@dataclass(frozen=True)
class Player:
    """Who plays one seat of a job: the index of an agent the driver holds, the episode id
    a `BatchAgent` knows the episode by, and the seed the agent is reset with."""

    agent: int
    episode_id: str
    seed: int


@dataclass(frozen=True)
class AgentSet:
    """Several agents as one backend agent (probes compare agents; a team has one per
    role): the widest `BatchAgent`'s ``max_batch_size`` sets how many jobs a worker is
    handed at once."""

    agents: tuple[Any, ...]

    @property
    def max_batch_size(self) -> int:
        return max(int(getattr(a, "max_batch_size", 1)) for a in self.agents)


class Kind(Protocol):
    """A kind of run: built in each worker as ``kind(agents, config, serialize)``."""

    def players(self, job: Any) -> Sequence[Player]:
        """Who plays each seat of ``job``, seat by seat."""

    def program(self, job: Any, slot: int) -> Program:
        """The episode ``job`` as a program, on the envs of ``slot`` (one per job in flight)."""

    def discard(self, job: Any, slot: int) -> None:
        """Forget the envs of ``slot``: a failure went through them."""

    def close(self) -> None:
        """Close every env the kind made (called by `Driver.close`)."""


def _is_batch(agent: Any) -> bool:
    return hasattr(agent, "act_batch")


class Driver:
    """Plays jobs of one `Kind` with the agents it holds (one worker's share of a run).

    Args:
        agents: one agent, or an `AgentSet`.
        config: the run's configuration, handed to the kind.
        serialize: ask the kind for outcomes ready to send between processes.
        kind: the `Kind` class.
    """

    def __init__(self, agents: Any, config: Any, serialize: bool = False, *, kind: Any):
        self.agents: tuple[Any, ...] = agents.agents if isinstance(agents, AgentSet) else (agents,)
        self.kind = kind(self.agents, config, serialize)
        batch = [a for a in self.agents if _is_batch(a)]
        # (as `check_agent` reads it: a batch agent without the attribute takes one at a time)
        self.width = max((max(1, int(getattr(a, "max_batch_size", 1))) for a in batch), default=1)
        self.batch = bool(batch)
        self._ready()

    def _ready(self) -> None:
        """Call the agents' optional ``ready()`` (a sealed agent starts its process). An agent's
        own attribute of that name that is no method (``self.ready = True``) is its state, not
        the hook: calling it failed every episode after the first, or the run."""
        for agent in self.agents:
            start_up(agent, "ready")

    def run(self, jobs: Sequence[Any]) -> list[Any]:
        """Play ``jobs``; one outcome or `EpisodeFailure` per job, in the same order."""
        outcomes = dict(self.stream(jobs))
        return [outcomes[job] for job in jobs]

    def stream(
        self, jobs: Sequence[Any], *, timeout: float | None = None
    ) -> Iterator[tuple[Any, Any]]:
        """Play ``jobs``, yielding ``(job, outcome or EpisodeFailure)`` as each ends (batch
        agents finish them out of order), so a run that fails midway has handed over what
        finished. ``timeout``: seconds per episode (see `alarm`)."""
        if self.batch:
            yield from self._run_batch(jobs, timeout)
        else:
            for job in jobs:
                yield job, self._run_one(job, timeout)

    # -- one job at a time (every agent an `Agent`) -----------------------------------

    def _run_one(self, job: Any, timeout: float | None) -> Any:
        try:
            self._ready()
            with alarm(timeout):  # (a timer firing as the episode ends counts as a timeout)
                return self._play(job)
        except STOPS_RUN:
            raise
        except EPISODE_ERRORS as exc:  # (the agent's or env's: it ends this episode only)
            self._discard(job, 0)
            return failure(job, exc)

    def _play(self, job: Any) -> Any:
        players = self.kind.players(job)
        for player in players:
            self.agents[player.agent].reset(player.seed)
        seated = [self.agents[player.agent] for player in players]  # (each seat's agent)
        program = self.kind.program(job, 0)
        send, answer_of = program.send, self._answer  # (looked up once, used every turn)
        answer = None
        try:
            while True:
                try:
                    request = send(answer)
                except StopIteration as stop:
                    return stop.value
                answer = answer_of(seated[request.seat], request)
        finally:
            _abandon(program)

    @staticmethod
    def _answer(agent: Any, request: Request) -> Any:
        """An `Agent`'s answer to ``request``."""
        if isinstance(request, Observe):
            observe(agent, request.observation, request.info, request.executed)
            return None
        _, observation, info = request  # (an `Act`: unpacked, cheaper than two attribute reads)
        action = agent.act(observation, info)
        note = getattr(agent, "step_note", None)
        return action, (plain_note(note()) if note is not None else None)

    def _discard(self, job: Any, slot: int) -> None:
        try:
            self.kind.discard(job, slot)
        except STOPS_RUN:
            raise
        except EPISODE_ERRORS:  # (a broken env may fail to close too; it is dropped)
            logger.debug("discarding a failed job's envs raised", exc_info=True)

    def close(self) -> None:
        """Close the envs the kind made (backends call it when a run ends); safe to call twice.
        An env that fails to close is logged, not raised: the run's episodes are played and
        kept (the local backend raised after the last episode, and a run without ``out``
        lost every result, where a pool run returned them)."""
        close = getattr(self.kind, "close", None)
        if close is None:
            return
        try:
            close()
        except STOPS_RUN:
            raise
        except EPISODE_ERRORS as exc:
            logger.warning("closing the run's envs raised %s", describe(exc))

    # -- many jobs in flight (a `BatchAgent` among the players) ------------------------

    def _run_batch(self, jobs: Sequence[Any], timeout: float | None) -> Iterator[tuple[Any, Any]]:
        # Slots stay full: a job starts on a slot as soon as the one before it ends.
        flight = _Flight(self, jobs)
        alone: list[Any] = []
        while flight.has_pending() or flight.live:
            seconds = None
            if timeout is not None:  # the turn may run until the earliest episode's deadline
                now = time.monotonic()
                ends = [flight.started[s] + timeout for s in flight.live]
                if flight.has_pending() and flight.free:
                    ends.append(now + timeout)
                seconds = min(ends) - now
            try:
                self._ready()
                with alarm(seconds, limit=timeout):
                    flight.turn()
            except STOPS_RUN:
                raise
            except EPISODE_ERRORS as exc:  # a batch call (or the clock) fails every job in flight
                for slot in list(flight.live):
                    job = flight.drop(slot)
                    if len(jobs) > 1:  # replay it on its own: was it this job's fault?
                        alone.append(job)
                    else:
                        flight.done.append((job, failure(job, exc)))
            yield from flight.take_done()  # handed over as they end, even in a failed turn
        for job in alone:  # a job depends on itself only, not on its batch mates
            yield from self._run_batch([job], timeout)


def one_each(values: Any, n: int, call: str, what: str) -> list[Any]:
    """A batch call's answer as a list of ``n`` values, one an episode, in order; else
    TypeError (a str or a mapping is one value, not ``n``: played item by item, "look" was
    the commands "l", "o", "o", "k")."""
    if not is_listlike(values) or isinstance(values, AbstractSet):  # (a set has no order)
        raise TypeError(
            f"Expect {call} to return a list of {what}, one for each of its {n} episodes, "
            f"got {brief(values)}"
        )
    values = list(values)
    if len(values) != n:
        raise TypeError(f"{call} returned {len(values)} {what} for {n} episodes")
    return values


def _abandon(program: Program | None) -> None:
    """Close a program left midway (its agent failed, the run was interrupted), so that what
    its ``finally`` blocks release (a probe's env) is released now, not when it is collected."""
    if program is None:
        return
    try:
        program.close()
    except STOPS_RUN:
        raise
    except EPISODE_ERRORS:  # (a broken env may fail to close too; it is dropped)
        logger.debug("closing an abandoned episode raised", exc_info=True)


_DONE = object()  # (the end of the jobs)


def _end_episode(agent: Any) -> Any:
    """A batch agent's ``end_episode``, or None: it is optional, as `check_agent` takes a batch
    agent (one without it spun the driver forever, its episode ended and never freed)."""
    return getattr(agent, "end_episode", None) if _is_batch(agent) else None


class _Flight:
    """The jobs in flight in `Driver._run_batch`, each on its slot, with its pending request."""

    def __init__(self, driver: Driver, jobs: Sequence[Any]):
        self.driver = driver
        self.agents = driver.agents
        self.kind = driver.kind
        # The jobs not started, in order: those looked at so far, then the rest, taken from
        # ``jobs`` only as slots need them (a plan makes its jobs when asked for).
        self.pending: list[Any] = []
        self._rest = iter(jobs)
        self.free = list(range(driver.width))[::-1]
        # slot -> (job, players, program, the request waiting for a batch agent)
        self.live: dict[int, tuple[Any, Sequence[Player], Program, Request | None]] = {}
        self.started: dict[int, float] = {}
        # What the jobs in flight hold (`_claims`): (batch agent, episode id), (plain agent, None).
        self.in_use: set[tuple[int, str | None]] = set()
        self.done: list[
            tuple[Any, Any]
        ] = []  # (job, outcome or EpisodeFailure), not yet handed over

    def take_done(self) -> list[tuple[Any, Any]]:
        done, self.done = self.done, []
        return done

    def has_pending(self) -> bool:
        """Whether a job is left to start."""
        return bool(self.pending) or self._take()

    def _take(self) -> bool:
        """Look at one more job of ``jobs``; False when none is left."""
        job = next(self._rest, _DONE)
        if job is _DONE:
            return False
        self.pending.append(job)
        return True

    def turn(self) -> None:
        """Start jobs on free slots, then serve the batch agents' requests once."""
        while self.free and self.has_pending():
            found = self._startable()
            if found is None:  # every pending job waits for an agent or an id in flight
                break
            index, players, claims = found
            job, slot = self.pending.pop(index), self.free.pop()
            self.started[slot] = time.monotonic()
            self.in_use |= claims
            self.live[slot] = (job, players, None, None)  # in flight from here
            for player in players:
                agent = self.agents[player.agent]
                if _is_batch(agent):
                    agent.reset_episode(player.episode_id, player.seed)
                else:
                    agent.reset(player.seed)
            self.live[slot] = (job, players, self.kind.program(job, slot), None)
            self._advance(slot, None)
        waiting = [s for s in sorted(self.live) if self.live[s][3] is not None]
        forced = [s for s in waiting if isinstance(self.live[s][3], Observe)]
        if forced:  # forced turns first: they need no command
            for agent_index, slots in self._by_agent(forced).items():
                requests = [self.live[s][3] for s in slots]
                observe_batch(
                    self.agents[agent_index],
                    [self._player(s).episode_id for s in slots],
                    [r.observation for r in requests],
                    [r.info for r in requests],
                    [r.executed for r in requests],  # type: ignore[union-attr]
                )
                for s in slots:
                    self._advance(s, None)
            return
        for agent_index, slots in self._by_agent(waiting).items():
            agent = self.agents[agent_index]
            ids = [self._player(s).episode_id for s in slots]
            requests = [self.live[s][3] for s in slots]
            actions = one_each(
                agent.act_batch(ids, [r.observation for r in requests], [r.info for r in requests]),
                len(slots), f"{type(agent).__name__}.act_batch", "commands",
            )  # fmt: skip
            notes_of = getattr(agent, "step_notes", None)
            notes = (
                one_each(notes_of(ids), len(slots), f"{type(agent).__name__}.step_notes", "notes")
                if notes_of is not None
                else [None] * len(slots)
            )
            for s, action, note in zip(slots, actions, notes, strict=True):
                self._advance(s, (action, plain_note(note)))

    def _claims(self, players: Sequence[Player]) -> set[tuple[int, str | None]]:
        """What a job holds while in flight: each batch agent's episode id, and each plain
        agent whole (it plays one episode at a time: beside a batch agent in a team, a second
        job's ``reset`` restarted the first's episode, and their turns interleaved)."""
        return {
            (p.agent, p.episode_id if _is_batch(self.agents[p.agent]) else None) for p in players
        }

    def _startable(self) -> tuple[int, Sequence[Player], set[tuple[int, str | None]]] | None:
        """The next pending job (in order) whose claims (`_claims`) are free: its index in
        ``pending``, its players and those claims; None when every pending job must wait."""
        index = 0
        while index < len(self.pending) or self._take():
            players = self.kind.players(self.pending[index])
            claims = self._claims(players)
            if not claims & self.in_use:
                return index, players, claims
            index += 1
        return None

    def _player(self, slot: int) -> Player:
        job, players, _, request = self.live[slot]
        assert request is not None
        return players[request.seat]

    def _by_agent(self, slots: list[int]) -> dict[int, list[int]]:
        groups: dict[int, list[int]] = {}
        for s in slots:
            groups.setdefault(self._player(s).agent, []).append(s)
        return groups

    def _advance(self, slot: int, answer: Any) -> None:
        """Send ``answer`` to the slot's program and run it to its next batch request
        (an `Agent`'s requests are answered on the way) or its end."""
        job, players, program, _ = self.live[slot]
        try:
            while True:
                try:
                    request = program.send(answer)
                except StopIteration as stop:
                    outcome = stop.value
                    try:
                        self._end(slot)
                    except STOPS_RUN:
                        raise
                    except EPISODE_ERRORS as exc:  # the agent's end_episode: it fails the job
                        outcome = failure(job, exc)
                    self.done.append((job, outcome))
                    return
                agent = self.agents[players[request.seat].agent]
                if _is_batch(agent):
                    self.live[slot] = (job, players, program, request)
                    return
                answer = Driver._answer(agent, request)
        except (EpisodeTimeout, StepTimeout):  # the turn's deadline: `_run_batch` decides
            raise
        except STOPS_RUN:
            raise
        except EPISODE_ERRORS as exc:  # this job's own program (its env) or plain agent
            self.drop(slot)
            self.done.append((job, failure(job, exc)))

    def _end(self, slot: int) -> None:
        """Free ``slot`` of a job that ended, then tell its batch agents the episode ended.
        The slot is freed first: an ``end_episode`` that raised kept it, and once every slot
        was kept so the run spun for ever."""
        job, players, _, _ = self.live.pop(slot)
        self.in_use -= self._claims(players)
        self.started.pop(slot, None)
        self.free.append(slot)
        for player in players:
            end = _end_episode(self.agents[player.agent])
            if end is not None:
                end(player.episode_id)

    def drop(self, slot: int) -> Any:
        """Take the job off ``slot`` after a failure: its envs are discarded and its batch
        agents told the episode ended; return the job."""
        job, players, program, _ = self.live.pop(slot)
        self.in_use -= self._claims(players)
        _abandon(program)
        self.driver._discard(job, slot)
        for player in players:
            end = _end_episode(self.agents[player.agent])
            if end is not None:
                try:
                    end(player.episode_id)
                except STOPS_RUN:
                    raise
                except EPISODE_ERRORS:  # (cleanup of an agent that already failed)
                    logger.debug("end_episode after a failure raised", exc_info=True)
        self.started.pop(slot, None)
        self.free.append(slot)
        return job
