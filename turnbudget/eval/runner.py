"""The episode runner: one agent playing planned episodes on envs built by `turnbudget.make`.

Every backend (in-process, process pool, and any new one) runs episodes
through an `EpisodeRunner`, so they all produce the same records. A runner
keeps one env per (env id, slot) and reuses it across episodes; a
`BatchAgent` (one with ``act_batch``) gets up to ``max_batch_size`` episodes in
flight at once.

An exception raised by the agent or the env ends only the episode it came
from (``SystemExit`` too: an agent calling ``sys.exit`` fails its episode the
same way on every backend; ``KeyboardInterrupt`` still stops the run): it
comes back as `EpisodeFailure`, the env it ran on is rebuilt, and the
runner goes on. (A `BatchAgent`'s ``act_batch`` serves several episodes at
once; when it raises, each episode then in flight is replayed on its own, so
only the one that raises again fails.) Deciding whether to retry is the caller's job
(`turnbudget.eval.backends.run_with_retries`).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from turnbudget.agents.secrets import redact
from turnbudget.envs.deadline import StepTimeout, step_deadline
from turnbudget.eval.agent_view import agent_info, budget_visible, executed_action
from turnbudget.eval.analysis import budget_counts, usage_number
from turnbudget.eval.logs import dumps
from turnbudget.eval.plan import EpisodeSpec, EvalConfig
from turnbudget.wrappers.record_step_outcomes import cap_strings

__all__ = [
    "AGENT_KEY",
    "EPISODE_ERRORS",
    "FAILURE_KINDS",
    "EpisodeFailure",
    "EpisodeOutcome",
    "EpisodeResult",
    "EpisodeRunner",
    "EpisodeTimeout",
    "alarm",
    "build_env",
    "can_interrupt",
    "check_envs",
]

logger = logging.getLogger(__name__)

#: The key under which an agent's own account of a step (its ``step_note()``: an LLM's raw
#: reply, parse outcome, tokens, latency, retries) joins the step record, each string in
#: it cut to `MAX_RECORD_TEXT` characters (`cap_text`); the episode record holds the sums
#: of its numbers and the counts of its flags.
AGENT_KEY = "agent"

#: Why an episode failed to run: the agent or env raised, its worker died, it ran too long.
FAILURE_KINDS = ("exception", "worker_lost", "timeout")

#: What the agent or the env may raise that ends only its episode (as kind ``exception``):
#: any ``Exception``, and ``SystemExit`` (``sys.exit`` in an agent would otherwise end a
#: local run but only a worker of a pool or Ray run). ``KeyboardInterrupt`` stops the run.
EPISODE_ERRORS = (Exception, SystemExit)


class EpisodeTimeout(Exception):
    """Raised inside an episode that ran past its time limit (where the backend can interrupt it)."""


@dataclass(frozen=True)
class EpisodeFailure:
    """An episode that did not run to its end: nothing of it is logged.

    Attributes:
        spec: the episode.
        kind: one of `FAILURE_KINDS`.
        error: what happened, one line (``"ValueError: bad command"``).
    """

    spec: EpisodeSpec
    kind: str
    error: str


def describe(exc: BaseException) -> str:
    """``"TypeName: message"`` on one line, short enough for a log record, with every
    secret blanked (`turnbudget.agents.secrets`: it is recorded and logged)."""
    if isinstance(exc, SystemExit):
        return redact(f"SystemExit: sys.exit({exc.code!r}) was called during the episode")[:500]
    text = redact(" ".join(str(exc).split()))
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text if len(text) <= 500 else text[:497] + "..."


def _failure(spec: EpisodeSpec, exc: BaseException) -> EpisodeFailure:
    kind = "timeout" if isinstance(exc, (EpisodeTimeout, StepTimeout)) else "exception"
    return EpisodeFailure(spec, kind, describe(exc))


def can_interrupt() -> bool:
    """Whether `alarm` can interrupt Python code here (SIGALRM: the main thread, POSIX)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


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


@contextlib.contextmanager
def _sigalrm(seconds: float, limit: float) -> Iterator[None]:
    armed = True

    def fire(signum: int, frame: Any) -> None:
        if armed:  # the block may have ended just as the timer fired
            raise EpisodeTimeout(f"ran past the timeout of {limit:g}s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))  # 0 would disarm it
    try:
        yield
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def build_env(env_id: str, config: EvalConfig, sink: Callable[[dict[str, Any]], None]) -> Any:
    """The env stack for ``env_id`` under ``config``, sending its records to ``sink``."""
    from turnbudget.wrappers.stack import make

    return make(
        env_id,
        reveal=config.reveal,
        errors=config.errors,
        record={"callback": sink, "record_steps": config.record_steps},
        env_index=config.envs.index(env_id),
    )


def _deterministic(record: dict[str, Any]) -> dict[str, Any]:
    """Drop ``episode_index``: it counts episodes per env object, so it depends on scheduling."""
    record.pop("episode_index", None)
    return record


def check_envs(config: EvalConfig) -> None:
    """Build each env once, so an unknown id or a bad wrapper setting fails before any episode."""
    import gymnasium as gym

    for env_id in config.envs:
        try:
            build_env(env_id, config, lambda record: None).close()
        except gym.error.Error as exc:
            raise ValueError(
                f"Cannot make {env_id!r}: {exc} (`turnbudget list` shows the registered ids)"
            ) from exc
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"Cannot build {env_id!r} with errors={config.errors!r}, "
                f"reveal={config.reveal!r}: {exc}"
            ) from exc


# An episode's record, and its step records (as dicts, or as JSON lines ready to write).
EpisodeResult = tuple[dict[str, Any], "list[dict[str, Any]] | str"]
# What a backend yields for one episode.
EpisodeOutcome = "EpisodeResult | EpisodeFailure"


def _tally(notes: Sequence[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """Per-episode totals of the agent's step notes: numbers summed, flags counted."""
    present = [n for n in notes if n]
    if not present:
        return None
    totals: dict[str, Any] = {}
    for note in present:
        for key, value in note.items():
            if isinstance(value, bool):  # a flag: counted
                value = int(value)
            if usage_number(value):  # (not NaN, inf or a number too large to sum)
                totals[key] = totals.get(key, 0) + value
    totals = {k: round(v, 6) if isinstance(v, float) else int(v) for k, v in totals.items()}
    totals["steps"] = len(present)
    return totals


class _Slot:
    """One env, the records it emits and the agent's step notes for the episode in flight."""

    def __init__(self, env_id: str, config: EvalConfig):
        self.records: list[dict[str, Any]] = []
        self.notes: list[Mapping[str, Any] | None] = []
        self.env = build_env(env_id, config, self.records.append)
        self.per_repeat = config.error_draws == "per_repeat"
        self.ts = config.ts

    def reset(self, spec: EpisodeSpec) -> tuple[str, dict[str, Any]]:
        self.records.clear()
        self.notes.clear()
        options = {"turn_budget": spec.turn_budget, "episode_id": spec.episode_id}
        if self.per_repeat:  # InjectErrors draws per (task seed, repeat, turn)
            options["repeat"] = spec.rep
        return self.env.reset(seed=spec.task_seed, options=options)

    def collect(self, spec: EpisodeSpec, record_steps: bool, serialize: bool) -> EpisodeResult:
        episodes = [r for r in self.records if r.get("record") == "episode"]
        if len(episodes) != 1 or episodes[0].get("episode_id") != spec.episode_id:
            raise RuntimeError(
                f"Expect exactly one episode record for {spec.episode_id!r} from "
                f"RecordStepOutcomes, got {len(episodes)}"
            )
        episode = _deterministic(episodes[0])
        episode.update(rep=spec.rep, agent_seed=spec.agent_seed)
        totals = _tally(self.notes)
        if totals is not None:
            episode[AGENT_KEY] = totals
        steps = (
            [_deterministic(r) for r in self.records if r.get("record") == "step"]
            if record_steps
            else []
        )
        if totals is not None:
            for step in steps:  # turn t was decided by the t-th call for a command
                turn = int(step["turn"])
                if turn <= len(self.notes) and self.notes[turn - 1]:
                    step[AGENT_KEY] = cap_strings(self.notes[turn - 1])
        if steps:  # the per-budget analysis then needs only the episode records
            episode["budget_counts"] = budget_counts(steps, self.ts)
        self.records.clear()
        self.notes.clear()
        if serialize:  # encode where the episode ran: in parallel, and cheap to send back
            return episode, "".join(dumps(r) + "\n" for r in steps)
        return episode, steps


class EpisodeRunner:
    """Runs chunks of episodes with one agent and its own envs: one per process (or actor).

    ``serialize=True`` returns each episode's step records as JSON lines,
    encoded where the episode ran (in parallel, and cheap to send back).
    """

    def __init__(self, agent: Any, config: EvalConfig, serialize: bool = False):
        self.agent = agent
        self.config = config
        self.serialize = serialize
        self.batch = hasattr(agent, "act_batch")
        self.show_budget = config.budget_aware or budget_visible(config.reveal)
        self._slots: dict[tuple[str, int], _Slot] = {}

    def _slot(self, env_id: str, index: int) -> _Slot:
        key = (env_id, index)
        if key not in self._slots:
            self._slots[key] = _Slot(env_id, self.config)
        return self._slots[key]

    def _drop(self, env_id: str, index: int) -> None:
        """Forget an env an exception went through: its state is unknown, the next episode
        gets a fresh one."""
        slot = self._slots.pop((env_id, index), None)
        if slot is not None:
            try:
                slot.env.close()
            except EPISODE_ERRORS:  # (a broken env may fail to close too; it is dropped)
                logger.debug("closing a failed env raised", exc_info=True)

    def _view(self, slot: _Slot, info: dict[str, Any], executed: str | None) -> dict[str, Any]:
        """What the agent may see of ``info`` (see `turnbudget.eval.agent_view`)."""
        oracle = slot.env.unwrapped.optimal_actions if self.config.needs_oracle else None
        return agent_info(info, show_budget=self.show_budget, oracle=oracle, executed=executed)

    def run(self, specs: Sequence[EpisodeSpec]) -> list[EpisodeResult | EpisodeFailure]:
        """Play ``specs``; one result or `EpisodeFailure` per spec, in the same order."""
        outcomes = dict(self.stream(specs))
        return [outcomes[spec] for spec in specs]

    def stream(
        self, specs: Sequence[EpisodeSpec], *, timeout: float | None = None
    ) -> Iterator[tuple[EpisodeSpec, EpisodeResult | EpisodeFailure]]:
        """Play ``specs``, yielding each episode's result or `EpisodeFailure` as soon as it
        ends (a batch agent finishes them out of order), so a run that fails midway has
        handed over what finished.

        ``timeout`` (seconds per episode) is enforced by `alarm`: env steps that can be
        stopped (TextWorld's interpreter) stop at it in any thread, anything else only
        where a SIGALRM can interrupt it (the main thread of a POSIX process); a process
        backend leaves it None and kills a worker that runs too long instead.
        """
        if self.batch:
            yield from self._run_batch(specs, timeout)
        else:
            for spec in specs:
                yield spec, self._run_one(spec, timeout)

    def _run_one(
        self, spec: EpisodeSpec, timeout: float | None = None
    ) -> EpisodeResult | EpisodeFailure:
        try:
            with alarm(timeout):  # (a timer firing as the episode ends counts as a timeout)
                return self._play(spec)
        except EPISODE_ERRORS as exc:  # (the agent's or env's: it ends this episode only)
            self._drop(spec.env_id, 0)
            return _failure(spec, exc)

    def _play(self, spec: EpisodeSpec) -> EpisodeResult:
        slot = self._slot(spec.env_id, 0)
        obs, info = slot.reset(spec)
        self.agent.reset(spec.agent_seed)
        note = getattr(self.agent, "step_note", None)
        executed = None
        while True:
            action = self.agent.act(obs, self._view(slot, info, executed))
            if note is not None:
                slot.notes.append(note())
            obs, _, terminated, truncated, info = slot.env.step(action)
            executed = executed_action(action, info)
            if terminated or truncated:
                return slot.collect(spec, self.config.record_steps, self.serialize)

    def _run_batch(
        self, specs: Sequence[EpisodeSpec], timeout: float | None
    ) -> Iterator[tuple[EpisodeSpec, EpisodeResult | EpisodeFailure]]:
        # Slots stay full: an episode starts on a slot as soon as the one before it ends.
        # slot -> (spec, env slot, observation, info, the command the env ran last turn)
        live: dict[int, tuple[EpisodeSpec, Any, str, dict[str, Any], str | None]] = {}
        started: dict[int, float] = {}  # slot -> when its episode started (for the timeout)
        pending = list(specs)[::-1]
        free = list(range(max(1, int(self.agent.max_batch_size))))[::-1]
        alone: list[EpisodeSpec] = []
        while pending or live:
            finished: list[tuple[EpisodeSpec, EpisodeResult | EpisodeFailure]] = []
            seconds = None
            if timeout is not None:  # the turn may run until the earliest episode's deadline
                now = time.monotonic()
                ends = [started[i] + timeout for i in live]
                if pending and free:
                    ends.append(now + timeout)
                seconds = min(ends) - now
            try:
                with alarm(seconds, limit=timeout):
                    self._batch_turn(pending, free, live, started, finished)
            except EPISODE_ERRORS as exc:  # (a batch call fails every episode in flight)
                ended = {spec for spec, _ in finished}
                for i, (spec, *_) in live.items():
                    if spec in ended:  # (it ended just before the exception: its result stands)
                        pass
                    elif len(specs) > 1:  # replay it on its own: was it this episode's fault?
                        alone.append(spec)
                    else:
                        finished.append((spec, _failure(spec, exc)))
                    self._drop(spec.env_id, i)
                    try:
                        self.agent.end_episode(spec.episode_id)
                    except EPISODE_ERRORS:  # (cleanup of an agent that already failed)
                        logger.debug("end_episode after a failure raised", exc_info=True)
                    free.append(i)
                    started.pop(i, None)
                live.clear()
            yield from finished  # handed over as they end, even in a turn that then failed
        for spec in alone:  # an episode depends on its spec only, not on its batch mates
            yield from self._run_batch([spec], timeout)

    def _batch_turn(
        self,
        pending: list[EpisodeSpec],
        free: list[int],
        live: dict[int, tuple[EpisodeSpec, Any, str, dict[str, Any], str | None]],
        started: dict[int, float],
        finished: list[tuple[EpisodeSpec, EpisodeResult | EpisodeFailure]],
    ) -> None:
        """Start episodes on free slots, then one ``act_batch`` and one step of each live one."""
        agent = self.agent
        notes_of = getattr(agent, "step_notes", None)
        while pending and free:
            spec, i = pending.pop(), free.pop()
            live[i] = (spec, None, "", {}, None)  # in flight from here: a failure includes it
            started[i] = time.monotonic()
            slot = self._slot(spec.env_id, i)
            obs, info = slot.reset(spec)
            agent.reset_episode(spec.episode_id, spec.agent_seed)
            live[i] = (spec, slot, obs, info, None)
        order = sorted(live)
        ids = [live[i][0].episode_id for i in order]
        actions = agent.act_batch(
            ids,
            [live[i][2] for i in order],
            [self._view(live[i][1], live[i][3], live[i][4]) for i in order],
        )
        if len(actions) != len(order):
            raise RuntimeError(
                f"{type(agent).__name__}.act_batch returned {len(actions)} commands "
                f"for {len(order)} episodes"
            )
        notes = notes_of(ids) if notes_of is not None else [None] * len(order)
        for i, action, note in zip(order, actions, notes, strict=True):
            spec, slot, _, _, _ = live[i]
            if notes_of is not None:
                slot.notes.append(note)
            obs, _, terminated, truncated, info = slot.env.step(action)
            if terminated or truncated:
                finished.append(
                    (spec, slot.collect(spec, self.config.record_steps, self.serialize))
                )
                agent.end_episode(spec.episode_id)
                del live[i]
                del started[i]
                free.append(i)
            else:
                live[i] = (spec, slot, obs, info, executed_action(action, info))
