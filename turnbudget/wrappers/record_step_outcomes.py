"""Record one outcome per step and one summary per episode (memory, JSONL file or callback)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, SupportsFloat, TypedDict

import gymnasium as gym

from turnbudget._checks import brief, check_bool, is_int
from turnbudget.wrappers._common import env_id_of, require_oracle
from turnbudget.wrappers.inject_errors import InjectedError
from turnbudget.wrappers.turn_budget import begin_reset

__all__ = [
    "MAX_RECORD_TEXT",
    "EpisodeRecord",
    "EpisodeTracker",
    "OutcomeRecord",
    "RecordSink",
    "RecordStepOutcomes",
    "StepRecord",
    "cap_strings",
    "cap_text",
    "check_env_index",
    "repair_torn_tail",
]

logger = logging.getLogger(__name__)

# -- the record schema (the evaluator reads these names: add fields, never rename) ------


class StepRecord(TypedDict):
    """One step. ``distance_*`` and ``optimal`` are None without the oracle."""

    record: Literal["step"]
    episode_id: str  # f"{env_id}/{seed}/{episode_index}" (env_index inserted in vector envs) or options["episode_id"]
    env_id: str
    env_index: int | None  # the sub-env index in a vector env
    seed: int | None  # the seed passed to this episode's reset (None: continued stream)
    episode_index: int  # episodes this wrapper has started before this one
    turn: int  # 1-based
    turn_budget: int
    action: str
    valid_action: bool
    optimal: bool | None  # the agent's command starts a shortest plan from the state it saw
    distance_before: int | None  # at the start of the turn: the state the agent saw
    distance_after: int | None
    # The injection's and the command's effects on the distance, judged apart:
    distance_injected: (
        int | None
    )  # after a setback fired, before the command (else distance_before)
    injection_increased: bool  # an injected error that raised the distance (or made it unsolvable)
    command_effect: int | None  # distance change caused by the agent's command (None: not executed)
    wasted: bool  # a valid, executed, non-optimal command that left the distance unchanged
    progress: float
    reward: float  # the env's own reward (wrap ProcessReward outside this wrapper)
    injected_error: (
        InjectedError | None
    )  # from InjectErrors; an error fires at the start of the turn
    error_self: bool  # a non-optimal command (for what the agent saw) that increased the distance
    errors_opened: int  # distance-increasing events this turn (injected, or after the command)
    recoveries: list[int]  # turns_to_recover of each error recovered this turn
    phase: (
        str  # "on_track" | "after_error" (right after a distance-increasing error) | "recovering"
    )
    terminated: bool
    truncated: bool
    won: bool


class EpisodeRecord(TypedDict):
    """One finished episode (written after its steps)."""

    record: Literal["episode"]
    episode_id: str
    env_id: str
    env_index: int | None
    seed: int | None
    episode_index: int
    success: bool
    first_success_turn: int | None
    turns_used: int
    turn_budget: int
    initial_distance: int | None  # optimal solution length at reset
    final_distance: int | None
    n_errors_injected: int  # injected errors that applied (any kind)
    n_errors_injected_increasing: int  # ... of which raised the distance
    n_errors_self: int  # non-optimal commands (for the state seen) that increased the distance
    n_wasted: int  # valid, executed, non-optimal commands that left the distance unchanged
    n_invalid: int  # commands that were not admissible (a spent turn)
    n_recovered: int  # distance-increasing errors after which the distance came back
    n_unrecovered: int  # ... and those still open at the episode's end
    turns_to_recover: list[int]  # per recovered error, turns from the error to the recovery
    optimal_step_rate: float | None
    optimal_step_rate_on_track: float | None  # steps taken with no open error
    optimal_step_rate_after_error: float | None  # steps right after an error
    n_steps_on_track: int
    n_steps_after_error: int
    # The integer counts behind the three rates (judged = steps with an oracle answer).
    n_steps_judged: int
    n_optimal_steps: int
    n_optimal_on_track: int
    n_optimal_after_error: int


OutcomeRecord = StepRecord | EpisodeRecord

#: The most characters a recorded string keeps (a command, an agent's note such as an
#: LLM's raw reply): a longer one keeps its start and end around a marker that gives
#: its full length and the start of its SHA-256, so a few huge strings cannot blow up
#: the records (the game itself treats a long command as a spent turn).
MAX_RECORD_TEXT = 4096


def cap_text(text: str, limit: int = MAX_RECORD_TEXT) -> str:
    """``text``, or when it is longer than ``limit`` characters, its start and end around a
    marker with its length and hash (``limit`` characters in all).

    Example:
        >>> cap_text("go north")
        'go north'
        >>> cap_text("go north " * 10_000, limit=80)
        'go north g [... 90000 characters in all, sha256 43ef6e8b6cd1272d ...]  go north '
    """
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    marker = f" [... {len(text)} characters in all, sha256 {digest} ...] "
    keep = max(0, limit - len(marker))
    return text[: keep - keep // 2] + marker + text[len(text) - keep // 2 :]


def cap_strings(value: Any, limit: int = MAX_RECORD_TEXT) -> Any:
    """``value`` with every string in it (keys too, in dicts and lists) cut by `cap_text`."""
    if isinstance(value, str):
        return cap_text(value, limit)
    if isinstance(value, Mapping):
        return {cap_text(str(k), limit): cap_strings(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [cap_strings(v, limit) for v in value]
    return value


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _increases(before: int | None, after: int | None) -> bool:
    """An error: the distance grew, or the task became unsolvable."""
    return before is not None and (after is None or after > before)


def _rate(hits: int, total: int) -> float | None:
    return hits / total if total else None


class _StepCounts:
    """Judged steps (those with an oracle answer) and the optimal ones among them, by phase."""

    __slots__ = (
        "after_error",
        "judged",
        "on_track",
        "optimal",
        "optimal_after_error",
        "optimal_on_track",
    )

    def __init__(self) -> None:
        self.optimal = self.judged = 0
        self.optimal_on_track = self.on_track = 0
        self.optimal_after_error = self.after_error = 0


def repair_torn_tail(path: str | os.PathLike[str]) -> int:
    """Cut the part of an episode that a writer killed mid-write left at the end of a
    records file; return the bytes cut (0 for a whole file).

    A whole file ends with a newline. Otherwise its last line is torn: it goes, and so
    do the whole lines before it that belong to the same episode (those after the last
    episode record). Episodes are delivered in one write each, so only the last can be
    torn. (A team file's torn delivery is cut back to its last agent's episode record.)
    The file is locked while it is checked, as `RecordSink` locks it to append.
    """
    fd = os.open(path, os.O_RDWR)
    try:
        _lock(fd)
        return _cut_torn_tail(fd, path)
    finally:
        os.close(fd)


def _open_to_append(path: str | os.PathLike[str]) -> int:
    """``path`` opened to append (created if missing) and locked, with its torn tail cut."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        _lock(fd)
        _cut_torn_tail(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _lock(fd: int) -> None:
    """Hold an exclusive lock on the file until ``fd`` is closed (POSIX; a no-op elsewhere).

    Every `RecordSink` takes it to append, so a file whose last line is torn once the
    lock is held was left so by a writer that died mid-write (the OS drops a dead
    process's locks), never by one still writing.
    """
    try:
        import fcntl
    except ImportError:  # (Windows: no flock)
        return
    fcntl.flock(fd, fcntl.LOCK_EX)


def _read_at(fd: int, offset: int, size: int) -> bytes:
    os.lseek(fd, offset, os.SEEK_SET)
    chunks = []
    while size > 0 and (chunk := os.read(fd, size)):
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _cut_torn_tail(fd: int, path: str | os.PathLike[str]) -> int:
    """`repair_torn_tail` on an open, locked file."""
    info = os.fstat(fd)
    size = info.st_size
    if not stat.S_ISREG(info.st_mode) or size == 0 or _read_at(fd, size - 1, 1) == b"\n":
        return 0
    # Read back from the end until an episode record's line (or the start) is in view.
    span = 1 << 16
    while True:
        start = max(0, size - span)
        tail = _read_at(fd, start, size - start)
        whole = tail.rfind(b"\n") + 1  # the torn line starts here
        end = tail.rfind(b'{"record":"episode"', 0, whole)
        if end >= 0 and (start + end == 0 or tail[end - 1 : end] == b"\n"):
            keep = start + tail.index(b"\n", end) + 1
            break
        if start == 0:
            keep = 0
            break
        span *= 2
    os.ftruncate(fd, keep)
    logger.warning(
        "Cut %d bytes from the end of %s: the torn episode of a writer killed mid-write",
        size - keep,
        os.fspath(path),
    )
    return size - keep


class RecordSink:
    """Where finished episodes' records go: a list in memory, a callback, a JSONL file.

    An episode's records are delivered together: appended to ``records`` (when
    ``memory``), passed one by one to ``callback``, and appended to ``path``
    with a single write, flushed and fsync-ed, so a finished episode is never
    lost (processes may share a file). Linux can cut a write of more than a page
    when the process is killed during it: the file then ends with part of one
    episode and a torn line. Each append holds a lock on the file and first cuts
    such a part off (`repair_torn_tail`), so appends always follow a whole
    episode, even in a file that another process, which died since, shares.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        callback: Callable[[OutcomeRecord], Any] | None = None,
        memory: bool | None = None,
        fsync: bool = True,
    ):
        if callback is not None and not callable(callback):
            raise ValueError(f"Expect `callback` to be callable, got {brief(callback)}")
        if path is not None and (not isinstance(path, (str, os.PathLike)) or not os.fspath(path)):
            raise ValueError(f"Expect `path` to be a file path or None, got {brief(path)}")
        self.path = None if path is None else Path(path)
        if self.path is not None:
            if not self.path.parent.is_dir():  # a typo in a folder name must not go unnoticed
                raise ValueError(
                    f"Cannot append records to {brief(str(self.path))}: its folder "
                    f"{brief(str(self.path.parent))} does not exist (create it first: expect "
                    "`path` in a folder that exists)"
                )
            try:  # fail now, not at the end of the first episode
                os.close(_open_to_append(self.path))
            except (OSError, ValueError) as err:  # (ValueError: a NUL byte in the path)
                reason = getattr(err, "strerror", None) or err
                raise ValueError(
                    f"Cannot append records to {brief(str(self.path))}: {reason} (expect `path` "
                    "to name a file this process can write, in a folder that exists)"
                ) from None
        self.callback = callback
        self.memory = (
            (path is None and callback is None) if memory is None else check_bool(memory, "memory")
        )
        self.fsync = check_bool(fsync, "fsync")
        self.records: list[OutcomeRecord] = []

    def deliver(self, records: list[OutcomeRecord]) -> None:
        if self.path is not None:
            self._append_lines(records)
        if self.memory:
            self.records.extend(records)
        if self.callback is not None:
            for record in records:
                self.callback(record)

    def _append_lines(self, records: list[OutcomeRecord]) -> None:
        data = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records).encode()
        fd = _open_to_append(self.path)  # (a writer sharing the file may have died mid-write)
        try:
            view = memoryview(data)
            while view:  # one write() in practice; loop in case the kernel takes less
                view = view[os.write(fd, view) :]
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)


class EpisodeTracker:
    """The bookkeeping of one episode's records, for one agent: what `RecordStepOutcomes`
    does per step, without the env (a team wrapper keeps one per agent).

    The caller queries the oracle (``optimal_now`` before the step, the
    distance after it) and passes what it got, None without an oracle.
    """

    def __init__(self, env_id: str, env_index: int | None, record_steps: bool = True):
        self.env_id, self.env_index, self.record_steps = env_id, env_index, bool(record_steps)
        self._pending: list[OutcomeRecord] | None = None  # None: no episode in progress

    @property
    def in_progress(self) -> bool:
        return self._pending is not None

    def abandon(self) -> None:
        self._pending = None

    def start(
        self,
        seed: int | None,
        episode_id: str,
        episode_index: int,
        turn_budget: int | None,
        initial_distance: int | None,
    ) -> None:
        self._seed, self._episode_id, self._episode_index = seed, episode_id, episode_index
        self._turn_budget = turn_budget
        self._distance_now = self._initial_distance = initial_distance
        self._turn = 0
        self._first_success: int | None = None
        self._n_injected = self._n_injected_up = self._n_self = self._n_wasted = 0
        self._n_invalid = 0
        # Open errors: (first turn whose command can recover, the distance to get back to).
        self._open: list[tuple[int, int]] = []
        self._recovered: list[int] = []
        self._last_was_error = False
        self._counts = _StepCounts()
        self._pending = []

    def _common(self) -> dict[str, Any]:
        return {
            "episode_id": self._episode_id, "env_id": self.env_id, "env_index": self.env_index,
            "seed": self._seed, "episode_index": self._episode_index,
        }  # fmt: skip

    def step(
        self,
        action: Any,
        optimal_now: list[str] | None,
        distance_after: int | None,
        reward: SupportsFloat,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
    ) -> None:
        """Record one step: ``optimal_now`` judged before it, ``distance_after`` queried after."""
        # The hot path of every recorded rollout: kept to plain locals and one dict literal.
        self._turn = turn = self._turn + 1
        before = self._distance_now
        self._distance_now = after = distance_after
        budget = info.get("turn_budget")
        if budget is not None:
            self._turn_budget = int(budget)
        valid = bool(info.get("valid_action", True))
        self._n_invalid += not valid
        event = info.get("injected_error")
        applied = event["kind"] if event and event.get("applied", True) else None
        # Where the agent's own command started from (after a setback), and whether it ran at all.
        injected = event["distance_after"] if applied == "setback" else before
        executed = applied != "slip" and applied != "transient"
        opened = self._open
        phase = "after_error" if self._last_was_error else ("recovering" if opened else "on_track")

        optimal = None
        if optimal_now is not None:
            # A team agent's action can be any value (a spent turn): only a str is compared.
            optimal = (isinstance(action, str) and action in optimal_now) or (
                executed and valid and applied is None
                and before is not None and after is not None and after == before - 1
            )  # fmt: skip
            counts = self._counts
            counts.optimal += optimal
            counts.judged += 1
            if phase == "on_track":
                counts.optimal_on_track += optimal
                counts.on_track += 1
            elif phase == "after_error":
                counts.optimal_after_error += optimal
                counts.after_error += 1

        command_effect = (
            after - injected if executed and injected is not None and after is not None else None
        )
        # Judged on the state the agent saw: an optimal command is never the agent's error.
        raised = executed and _increases(injected, after)
        error_self = raised and optimal is not True
        # An optimal command that still raised the distance with no injection this turn: an
        # env event the oracle did not foresee (a sudden loss). It is an error to recover
        # from, not the agent's. (After a setback, the setback's open error covers it.)
        raised = error_self or (raised and applied is None)
        wasted = executed and valid and optimal is False and command_effect == 0
        self._n_wasted += wasted
        injection_increased = False
        if applied is not None:
            self._n_injected += 1
            # A slip's effect is its substitute command's: judged from the start of the turn.
            injection_increased = _increases(
                event["distance_before"], after if applied == "slip" else injected
            )
            if injection_increased:
                self._n_injected_up += 1
                opened.append(
                    (turn if applied == "setback" else turn + 1, event["distance_before"])
                )
        self._n_self += error_self
        if raised:
            opened.append((turn + 1, injected))
        errors_opened = injection_increased + raised
        recoveries: list[int] = []
        if opened and after is not None:
            still_open = []
            for start, target in opened:
                if after <= target and turn >= start:
                    recoveries.append(turn - start + 1)
                else:
                    still_open.append((start, target))
            self._open = still_open
            self._recovered += recoveries
        self._last_was_error = injection_increased or raised
        won = bool(info.get("won", False))
        if won and self._first_success is None:
            self._first_success = turn
        if self.record_steps:
            self._pending.append(
                {
                    "record": "step",
                    "episode_id": self._episode_id,
                    "env_id": self.env_id,
                    "env_index": self.env_index,
                    "seed": self._seed,
                    "episode_index": self._episode_index,
                    "turn": turn,
                    "turn_budget": self._turn_budget,
                    "action": cap_text(str(action)),
                    "valid_action": valid,
                    "optimal": optimal,
                    "distance_before": before,
                    "distance_after": after,
                    "distance_injected": injected,
                    "injection_increased": injection_increased,
                    "command_effect": command_effect,
                    "wasted": wasted,
                    "progress": float(info.get("progress", 0.0)),
                    "reward": float(reward),
                    "injected_error": _jsonable(event) if event else None,
                    "error_self": error_self,
                    "errors_opened": errors_opened,
                    "recoveries": recoveries,
                    "phase": phase,
                    "terminated": bool(terminated),
                    "truncated": bool(truncated),
                    "won": won,
                }
            )

    def finish(self) -> list[OutcomeRecord]:
        counts = self._counts
        self._pending.append(
            EpisodeRecord(
                record="episode",
                **self._common(),
                success=self._first_success is not None,
                first_success_turn=self._first_success,
                turns_used=self._turn,
                turn_budget=self._turn_budget,
                initial_distance=self._initial_distance,
                final_distance=self._distance_now,
                n_errors_injected=self._n_injected,
                n_errors_injected_increasing=self._n_injected_up,
                n_errors_self=self._n_self,
                n_wasted=self._n_wasted,
                n_invalid=self._n_invalid,
                n_recovered=len(self._recovered),
                n_unrecovered=len(self._open),
                turns_to_recover=list(self._recovered),
                optimal_step_rate=_rate(counts.optimal, counts.judged),
                optimal_step_rate_on_track=_rate(counts.optimal_on_track, counts.on_track),
                optimal_step_rate_after_error=_rate(counts.optimal_after_error, counts.after_error),
                n_steps_on_track=counts.on_track,
                n_steps_after_error=counts.after_error,
                n_steps_judged=counts.judged,
                n_optimal_steps=counts.optimal,
                n_optimal_on_track=counts.optimal_on_track,
                n_optimal_after_error=counts.optimal_after_error,
            )
        )
        records, self._pending = self._pending, None
        return records


class RecordStepOutcomes(gym.Wrapper[Any, Any, Any, Any], gym.utils.RecordConstructorArgs):
    """Record what happened at every step and a summary of every episode.

    Records follow `StepRecord` and `EpisodeRecord`. The agent is judged on
    the state it saw, never blamed for what the env did to it:

    - a step is *optimal* when the agent's command is in ``optimal_actions()``
      of the state at the start of the turn (or, when it was executed with no
      injected error, it brought the distance down by exactly one: that
      covers synonyms such as ``n`` for ``go north``);
    - an injected error (from `InjectErrors`, read in
      ``info["injected_error"]``) and the agent's command are judged apart:
      ``distance_injected`` is the distance after a setback fired at the start
      of the turn, ``command_effect`` what the command then changed (None
      when a slip or a transient error kept it from running);
    - a *self-inflicted error* is an executed, non-optimal command that
      increased ``distance_to_goal()``, so an agent that always plays an
      optimal command for what it saw has none, whatever the error schedule;
    - a *wasted* turn is a valid, executed, non-optimal command that left the
      distance unchanged; invalid commands are counted on their own;
    - a step is *after an error* only right after an event (injected or not)
      that actually increased the distance; such an error is *recovered* once
      the distance is back to its value before it, and ``turns_to_recover``
      counts the turns that took.

    The oracle is only queried here when ``oracle=True``.

    An episode's records are delivered together when it ends (terminated or
    truncated): appended to ``records`` (in memory), passed one by one to
    ``callback``, and appended to the JSONL file at ``path`` with a single
    write, flushed and fsync-ed, so a killed process never leaves a torn line
    or loses a finished episode (several processes may share one file).
    An episode abandoned by an early reset or ``close()`` is dropped and
    counted in ``n_abandoned``.

    Episode ids default to ``f"{env_id}/{seed}/{episode_index}"`` (with
    ``env_index/`` before the seed when one is given); an evaluator can name
    an episode with ``reset(options={"episode_id": ...})``. A vector env passes
    the same options to every sub-env and none on autoreset, so in a vector env
    rely on ``env_index`` rather than on an ``episode_id`` option.

    Args:
        env: The env to record (wrap it outside `InjectErrors`, inside `ProcessReward`).
        path: A JSONL file to append to (created if missing; its folder must exist).
        callback: Called with each record.
        memory: Keep records in ``records``; default: only when there is no
            other sink.
        record_steps: Record steps (else only episode summaries).
        oracle: Query the oracle for distances and optimality (set False for
            envs without one: those fields are then None).
        env_index: The sub-env index in a vector env (goes into the records).
        fsync: fsync the file after each episode.

    Example:
        >>> import gymnasium as gym
        >>> import turnbudget
        >>> env = RecordStepOutcomes(gym.make("turnbudget/Maze-Easy-v0", turn_budget=3))
        >>> _ = env.reset(seed=0)
        >>> for _ in range(3):
        ...     _ = env.step("look")
        >>> [r["record"] for r in env.records]
        ['step', 'step', 'step', 'episode']
        >>> episode = env.records[-1]
        >>> episode["episode_id"], episode["success"], episode["turns_used"], episode["optimal_step_rate"]
        ('turnbudget/Maze-Easy-v0/0/0', False, 3, 0.0)
    """

    def __init__(
        self,
        env: gym.Env,
        path: str | os.PathLike[str] | None = None,
        callback: Callable[[OutcomeRecord], Any] | None = None,
        memory: bool | None = None,
        record_steps: bool = True,
        oracle: bool = True,
        env_index: int | None = None,
        fsync: bool = True,
    ):
        gym.utils.RecordConstructorArgs.__init__(
            self, path=path, callback=callback, memory=memory, record_steps=record_steps,
            oracle=oracle, env_index=env_index, fsync=fsync,
        )  # fmt: skip
        gym.Wrapper.__init__(self, env)
        env_index = check_env_index(env_index)
        oracle = check_bool(oracle, "oracle")
        record_steps = check_bool(record_steps, "record_steps")
        if oracle:
            require_oracle(
                env,
                ("optimal_actions", "distance_to_goal"),
                "RecordStepOutcomes",
                " (pass oracle=False)",
            )
        self.sink = RecordSink(path, callback, memory, fsync)
        self.record_steps, self.oracle = record_steps, oracle
        self.env_index = env_index
        self.env_id = env_id_of(env)
        self.n_abandoned = 0
        self._episode_index = -1
        self._tracker = EpisodeTracker(self.env_id, env_index, record_steps)

    @property
    def records(self) -> list[OutcomeRecord]:
        """The records kept in memory."""
        return self.sink.records

    @property
    def path(self) -> Path | None:
        return self.sink.path

    # -- gymnasium API -------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        options = begin_reset(self.env, seed, options)
        if self._tracker.in_progress:  # (dropped now: a reset that then fails counts it once)
            self.n_abandoned += 1
            self._tracker.abandon()
        obs, info = self.env.reset(seed=seed, options=options)
        self._episode_index += 1
        seed = _int_or_none(seed)
        episode_id = options.get("episode_id")
        if episode_id is None:
            where = "" if self.env_index is None else f"{self.env_index}/"
            episode_id = f"{self.env_id}/{where}{seed}/{self._episode_index}"
        self._tracker.start(
            seed, str(episode_id), self._episode_index,
            _int_or_none(info.get("turn_budget")), self._distance(),
        )  # fmt: skip
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        tracker = self._tracker
        if not tracker.in_progress:  # stepping a finished episode: nothing to record
            return self.env.step(action)
        optimal_now = self._optimal_actions()
        obs, reward, terminated, truncated, info = self.env.step(action)
        tracker.step(action, optimal_now, self._distance(), reward, terminated, truncated, info)
        if terminated or truncated:
            self.sink.deliver(tracker.finish())
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        if self._tracker.in_progress:
            self.n_abandoned += 1
            self._tracker.abandon()
        super().close()

    def _distance(self) -> int | None:
        return _int_or_none(self.env.unwrapped.distance_to_goal()) if self.oracle else None

    def _optimal_actions(self) -> list[str] | None:
        return list(self.env.unwrapped.optimal_actions()) if self.oracle else None


def check_env_index(env_index: Any) -> int | None:
    """``env_index`` as an int >= 0 or None, else ``ValueError``."""
    if env_index is not None and (not is_int(env_index) or env_index < 0):
        raise ValueError(f"Expect `env_index` to be an int >= 0 or None, got {brief(env_index)}")
    return None if env_index is None else int(env_index)


def _jsonable(event: Any) -> dict[str, Any] | None:
    if not event:
        return None
    return {k: (int(v) if is_int(v) else cap_strings(v)) for k, v in event.items()}
