"""Record one outcome per step and one summary per episode (memory, JSONL file or callback)."""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium import spaces

from turnbudget._checks import (
    MAX_TURN_BUDGET,
    brief,
    check_bool,
    is_int,
    is_listlike,
    text_of,
)
from turnbudget.envs.core import check_distance, oracle_distance
from turnbudget.records import (
    MAX_RECORD_TEXT,
    EpisodeRecord,
    OutcomeRecord,
    RecordSink,
    StepRecord,
    cap_strings,
    cap_text,
    encodes_alike,
    feasibility,
)
from turnbudget.wrappers._common import env_id_of, find_wrapper, record_args, require_oracle
from turnbudget.wrappers.turn_budget import begin_reset

__all__ = [
    "PLAIN_STEP_KEYS",
    "STEP_KEY_SET",
    "EpisodeTracker",
    "RecordStepOutcomes",
    "check_budget_counts",
    "check_env_index",
]

logger = logging.getLogger(__name__)


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _increases(before: int | None, after: int | None) -> bool:
    """An error: the distance grew, or the task became unsolvable."""
    return before is not None and (after is None or after > before)


#: A step record's keys, in `StepRecord`'s order (the order its JSON line keeps).
_STEP_KEYS = tuple(StepRecord.__annotations__)
#: `EpisodeTracker.step`'s default ``own_after``: the distance after the step.
_AS_AFTER = object()

#: The keys of `RecordStepOutcomes`' step records whose values it builds itself as str, int,
#: bool, None or lists of ints (literals, ``str()``, ``int()``, ``bool()``, its own counters),
#: never from a value it was handed as it is: `turnbudget.records.dumps_template_lines` need
#: not check their types. Keep a key here only while `EpisodeTracker.step` and
#: `RecordStepOutcomes` build its value so (``optimal``, the event's distances and what is
#: computed from them and the floats are checked).
PLAIN_STEP_KEYS = frozenset({
    "record", "episode_id", "env_id", "env_index", "seed", "episode_index", "turn",
    "turn_budget", "action", "valid_action", "distance_before", "distance_after",
    "recoveries", "phase", "terminated", "truncated", "won",
})  # fmt: skip
#: Every key of a step record: what `RecordStepOutcomes.plain_step_keys` vouches for after an
#: episode whose values `EpisodeTracker` found all plain (``plain_steps``).
STEP_KEY_SET = frozenset(_STEP_KEYS)


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
        "plain_steps",
    )

    def __init__(self) -> None:
        self.optimal = self.judged = 0
        self.optimal_on_track = self.on_track = 0
        self.optimal_after_error = self.after_error = 0
        # Whether every value of the episode's step records so far is one orjson writes as
        # json.dumps does (`encodes_alike`). Values outside `PLAIN_STEP_KEYS` can stop being
        # so only on the turns `EpisodeTracker.step` checks (an injected error's distances and
        # what follows from them, a reward or progress that is not 0; a team agent's own
        # distance is not vouched for), so the writer need not check every column of every
        # record (`RecordStepOutcomes.plain_step_keys`). (Here, not on the tracker: there, a
        # Maze-Medium evaluation counted 0.63M instructions an episode more, likely CPython's
        # fast attribute layout lost; not checked.)
        self.plain_steps = True


def check_episode_id(episode_id: Any) -> str | None:
    """A recorder's ``episode_id`` reset option, checked before its game resets: None, or a
    str of at most `MAX_RECORD_TEXT` characters (any object went through ``str()`` into
    every record: a 10 MB id made a 2-turn episode 30 MB, and a huge int failed in ``str()``
    after the game had reset, so the steps after it played with nothing recorded)."""
    if episode_id is not None and not (
        isinstance(episode_id, str) and len(episode_id) <= MAX_RECORD_TEXT
    ):
        raise ValueError(
            f"Expect the `episode_id` option to be a str of at most {MAX_RECORD_TEXT:,} "
            f"characters, got {brief(episode_id)}"
        )
    return episode_id


class EpisodeTracker:
    """The bookkeeping of one episode's records, for one agent: what `RecordStepOutcomes`
    does per step, without the env (a team wrapper keeps one per agent).

    The caller queries the oracle (``optimal_now`` before the step, the
    distance after it) and passes what it got, None without an oracle.
    ``budget_counts``: the budgets T at which the episode record gives its
    `turnbudget.records.BUDGET_COUNTERS` (see `RecordStepOutcomes`). ``oracle``: whether the
    caller queries the oracle; without it no error is opened (none could be seen to close:
    an oracle agent that won was logged with an injected setback never recovered).
    """

    def __init__(
        self,
        env_id: str,
        env_index: int | None,
        record_steps: bool = True,
        budget_counts: Sequence[int] | None = None,
        oracle: bool = True,
    ):
        self.env_id, self.env_index, self.record_steps = env_id, env_index, bool(record_steps)
        self._oracle = bool(oracle)
        self.budget_counts = check_budget_counts(budget_counts)
        # The positive budgets, the nearest last (each episode pops them as turns reach them).
        self._budgets_ahead = sorted((t for t in self.budget_counts or () if t > 0), reverse=True)
        # Every per-episode attribute set now, then no episode in progress: set first at a
        # later start, they may not fit CPython's fast layout of an instance once more
        # trackers exist (a vector env's), and every step would read them slower (see
        # `turnbudget.envs.native.base.MAX_FAST_ATTRIBUTES`).
        self.start(None, "", -1, None, None)
        self._pending: list[OutcomeRecord] | None = None  # None: no episode in progress

    @property
    def plain_steps(self) -> bool:
        """Whether the episode's step records hold only values orjson writes as json.dumps
        does (see `_StepCounts`)."""
        return self._counts.plain_steps

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
        # Every step record's keys in `StepRecord`'s order, the episode's own values filled in.
        self._step_template = dict.fromkeys(_STEP_KEYS)
        self._step_template.update(record="step", **self._common())
        self._count_at = list(self._budgets_ahead)  # (the budgets still to count at)
        self._counted: dict[str, list[int]] = {}
        if self.budget_counts and 0 in self.budget_counts:
            self._counted["0"] = self._totals()  # (nothing played yet)

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
        own_after: object = _AS_AFTER,
    ) -> None:
        """Record one step: ``optimal_now`` judged before it, ``distance_after`` queried after.

        ``own_after``: where the agent's own command took the distance, when other agents'
        commands moved it too (a team's round: `RecordTeamOutcomes` gives the distance
        after the agent's command with the best the others could have played). The command's
        effect, and whether it was the agent's error, are judged by it; the errors opened and
        recovered, by ``distance_after``. Default: ``distance_after``."""
        # The hot path of every recorded rollout: plain locals, counters written only when they
        # change, and one dict copied from the episode's template.
        self._turn = turn = self._turn + 1
        before = self._distance_now
        self._distance_now = after = distance_after
        get = info.get
        budget = get("turn_budget")
        if budget is not None:
            self._turn_budget = int(budget)
        valid = bool(get("valid_action", True))
        if not valid:
            self._n_invalid += 1
        event = get("injected_error")
        applied = event["kind"] if event and event.get("applied", True) else None
        # Where the agent's own command started from (after a setback), and whether it ran at all.
        injected = event["distance_after"] if applied == "setback" else before
        executed = applied != "slip" and applied != "transient"
        opened = self._open
        phase = "after_error" if self._last_was_error else ("recovering" if opened else "on_track")

        optimal = None
        # (no optimal command and no distance: nothing can win from here, as a race player
        # once its rival took the last copy; its steps were judged, all "not optimal")
        if optimal_now is not None and (optimal_now or before is not None):
            # A team agent's action can be any value (a spent turn): only a str is compared.
            optimal = (isinstance(action, str) and action in optimal_now) or (
                executed and valid and applied is None
                and before is not None and after is not None and after == before - 1
            )  # fmt: skip
            counts = self._counts
            counts.judged += 1
            if optimal:
                counts.optimal += 1
            if phase == "on_track":
                counts.on_track += 1
                if optimal:
                    counts.optimal_on_track += 1
            elif phase == "after_error":
                counts.after_error += 1
                if optimal:
                    counts.optimal_after_error += 1

        own = after if own_after is _AS_AFTER else own_after
        command_effect = (
            own - injected if executed and injected is not None and own is not None else None
        )
        wasted = executed and valid and optimal is False and command_effect == 0
        if wasted:
            self._n_wasted += 1
        injection_increased = False
        if applied is not None:
            self._n_injected += 1
            # A slip's effect is its substitute command's: judged from the start of the turn.
            injection_increased = _increases(
                event["distance_before"], after if applied == "slip" else injected
            )
            if injection_increased:
                self._n_injected_up += 1
                if self._oracle:  # (else no distance after it would ever close it)
                    opened.append(
                        (turn if applied == "setback" else turn + 1, event["distance_before"])
                    )
        # Judged on the state the agent saw: an optimal command is never the agent's error.
        # (Without the oracle, ``after`` is None as no distance, not as no way left to win.)
        raised = (
            executed and injected is not None and (after is None or after > injected)
            and self._oracle
        )  # fmt: skip
        if own_after is not _AS_AFTER:  # (the agent's part of the rise: its own command's)
            self._counts.plain_steps = False  # (a team's distances: checked whole when written)
            own_raised = executed and injected is not None and (own is None or own > injected)
        else:
            own_raised = raised
        error_self = own_raised and optimal is False  # (a step not judged is no one's error)
        # An optimal command that still raised the distance, with no injected error that raised
        # it this turn: an env event the oracle did not foresee (a sudden loss, or a setback
        # that left the distance as it was but made the command a step back). It is an error
        # to recover from, not the agent's. (After a setback that raised the distance, the
        # setback's open error covers it: its target is lower.)
        raised = error_self or (raised and not injection_increased)
        if error_self:
            self._n_self += 1
        if raised:
            opened.append((turn + 1, injected))
        errors_opened = (injection_increased and self._oracle) + raised
        recoveries: list[int] = []
        if opened and after is not None:
            still_open = []
            for start, target in opened:
                if after <= target and turn >= start:
                    recoveries.append(turn - start + 1)
                else:
                    still_open.append((start, target))
            self._open = still_open
            if recoveries:
                self._recovered += recoveries
        self._last_was_error = injection_increased or raised
        won = bool(get("won", False))
        if won and self._first_success is None:
            self._first_success = turn
        if self._count_at and turn == self._count_at[-1]:
            self._counted[str(self._count_at.pop())] = self._totals()
        if self.record_steps:
            # A copy of the episode's template, its keys already in place: a 27-key dict
            # literal grows its table twice and costs twice as much (measured: 2.0 vs 0.7 µs).
            record = self._step_template.copy()
            record["turn"] = turn
            record["turn_budget"] = self._turn_budget
            record["action"] = (
                action
                if type(action) is str and len(action) <= MAX_RECORD_TEXT
                else cap_text(text_of(action))
            )
            record["valid_action"] = valid
            record["optimal"] = optimal
            record["distance_before"] = before
            record["distance_after"] = after
            record["distance_injected"] = injected
            record["injection_increased"] = injection_increased
            record["command_effect"] = command_effect
            record["wasted"] = wasted
            record["progress"] = progress = float(get("progress", 0.0))
            record["reward"] = reward = float(reward)
            record["injected_error"] = _jsonable(event) if event else None
            record["error_self"] = error_self
            record["errors_opened"] = errors_opened
            record["recoveries"] = recoveries
            record["phase"] = phase
            record["terminated"] = bool(terminated)
            record["truncated"] = bool(truncated)
            record["won"] = won
            self._pending.append(record)
            # (0.0 and -0.0: both encoders write them alike; an error's turn: the whole record)
            if (event or progress or reward) and self._counts.plain_steps:
                self._counts.plain_steps = encodes_alike(
                    record.values() if event else (progress, reward)
                )

    def _totals(self) -> list[int]:
        """The episode's counters so far: what `turnbudget.eval.analysis.budget_counts`
        sums from the step records (each opened error is recovered or still open)."""
        counts, recovered = self._counts, self._recovered
        return [
            self._turn, counts.judged, counts.optimal, counts.on_track, counts.optimal_on_track,
            counts.after_error, counts.optimal_after_error, self._n_self, self._n_injected,
            self._n_injected_up, self._n_wasted, self._n_invalid,
            len(recovered) + len(self._open), len(recovered), sum(recovered),
        ]  # fmt: skip

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
                **feasibility(self._initial_distance, self._turn_budget, self._first_success),
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
        if self.budget_counts is not None:  # budgets past the episode's end: its totals
            totals = self._totals()
            counted = self._counted
            self._pending[-1]["budget_counts"] = {
                str(t): counted.get(str(t)) or list(totals) for t in self.budget_counts
            }
        records, self._pending = self._pending, None
        return records


class RecordStepOutcomes(gym.Wrapper[Any, Any, Any, Any], gym.utils.RecordConstructorArgs):
    """Record what happened at every step and a summary of every episode.

    Records follow `StepRecord` and `EpisodeRecord`. The agent is judged on
    the state it saw, never blamed for what the env did to it:

    - a step is *optimal* when the agent's command, or the listed command its
      spelling plays (``n`` or ``GO NORTH`` for ``go north``: the game's
      ``canonical_command``), is in ``optimal_actions()`` of the state at the
      start of the turn, or, when it was executed with no injected error, it
      brought the distance down by exactly one (a synonym of a game without
      ``canonical_command``);
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
    ``env_index/`` before the seed when one is given), the seed of an unseeded
    reset being the last one given (a vector env seeds its sub-envs apart once,
    then resets them unseeded: their ids stay apart); an evaluator can name
    an episode with ``reset(options={"episode_id": ...})``. A vector env passes
    the same options to every sub-env and none on autoreset, so in a vector env
    rely on ``env_index`` rather than on an ``episode_id`` option.

    Args:
        env: The env to record (wrap it outside `InjectErrors`, inside `ProcessReward` and
            `DiscreteActions`).
        path: A JSONL file to append to (created if missing; its folder must exist), or
            ``os.devnull``; a FIFO is refused.
        callback: Called with each record.
        memory: Keep records in ``records``; default: only when there is no
            other sink.
        record_steps: Record steps (else only episode summaries).
        oracle: Query the oracle for distances and optimality (set False for
            envs without one: those fields are then None).
        env_index: The sub-env index in a vector env (goes into the records).
        fsync: fsync the file after each episode.
        budget_counts: Budgets T (ints >= 0): the episode record then also holds
            ``budget_counts``, for each T the episode's
            `turnbudget.records.BUDGET_COUNTERS` over its first T turns (its totals
            for a T past its end), as `turnbudget.eval.analysis.budget_counts` sums
            them from its step records. `turnbudget.eval.evaluate` asks for its
            budgets, so the per-budget analysis reads only the episode records.

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

    #: Why it must sit outside a `TurnBudget` (which refuses it underneath): it must see the
    #: episode end the budget makes.
    outside_turn_budget = "it delivers an episode's records when it sees the episode end"

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
        budget_counts: Sequence[int] | None = None,
    ):
        record_args(
            self, path=path, callback=callback, memory=memory, record_steps=record_steps,
            oracle=oracle, env_index=env_index, fsync=fsync, budget_counts=budget_counts,
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
            # The oracle's optimal actions are commands: an index from DiscreteActions below
            # was never one of them, so every step of an oracle agent was judged non-optimal.
            if not isinstance(env.action_space, spaces.Text):
                raise ValueError(
                    "RecordStepOutcomes judges the agent's commands against the oracle's: it "
                    f"needs a Text action space, got {env.action_space} (put DiscreteActions "
                    "outside it: turnbudget.make(..., record=..., discrete_actions=N) stacks "
                    "them in order)"
                )
        from turnbudget.wrappers.inject_errors import InjectErrors
        from turnbudget.wrappers.numeric_info import NumericInfo  # (it imports this module)
        from turnbudget.wrappers.process_reward import ProcessReward

        if find_wrapper(env, ProcessReward) is not None:
            # (the records' ``reward`` then held the shaped reward, not the env's own)
            raise ValueError(
                "RecordStepOutcomes records the env's own reward, which ProcessReward below it "
                "replaces by the shaped one: put ProcessReward outside RecordStepOutcomes "
                "(turnbudget.make(..., record=..., process_reward=...) stacks them in order; "
                "the shaping is in info['process_reward'])"
            )

        numeric = find_wrapper(env, NumericInfo)
        if numeric is not None and find_wrapper(numeric, InjectErrors) is not None:
            # (the records then counted no injected error, and a setback as the agent's own)
            raise ValueError(
                "RecordStepOutcomes reads info['injected_error'], which NumericInfo drops: "
                "put NumericInfo outside RecordStepOutcomes (turnbudget.make(..., errors=..., "
                "record=..., info='numeric') stacks them in order)"
            )
        self.sink = RecordSink(path, callback, memory, fsync)
        self.record_steps, self.oracle = record_steps, oracle
        self.env_index = env_index
        self.env_id = env_id_of(env)
        self.n_abandoned = 0
        self._episode_index = -1
        self._id_seed: int | None = None  # the last seed a reset was given (episode ids)
        self._tracker = EpisodeTracker(self.env_id, env_index, record_steps, budget_counts, oracle)
        self._game = env.unwrapped  # the oracle's owner, queried every step
        # The listed command an agent's spelling plays (native games), judged optimal as it
        self._canonical = getattr(self._game, "canonical_command", None)
        self._listed: Sequence[str] = ()  # the commands the last observation listed

    @property
    def records(self) -> list[OutcomeRecord]:
        """The records kept in memory."""
        return self.sink.records

    @property
    def path(self) -> Path | None:
        return self.sink.path

    @property
    def plain_step_keys(self) -> frozenset[str]:
        """The keys of the last episode's step records that hold only values orjson writes as
        json.dumps does, as `turnbudget.records.dumps_template_lines` takes them: every key
        (`STEP_KEY_SET`) when the tracker found all of them so (``plain_steps``), else those
        it builds so on every turn (`PLAIN_STEP_KEYS`)."""
        return STEP_KEY_SET if self._tracker.plain_steps else PLAIN_STEP_KEYS

    # -- gymnasium API -------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        options = begin_reset(self.env, seed, options)
        episode_id = check_episode_id(options.get("episode_id"))
        if self._tracker.in_progress:  # (dropped now: a reset that then fails counts it once)
            self.n_abandoned += 1
            self._tracker.abandon()
        obs, info = self.env.reset(seed=seed, options=options)
        self._episode_index += 1
        seed = _int_or_none(seed)
        if seed is not None:
            self._id_seed = seed
        if episode_id is None:
            # (an unseeded reset goes by the last seed given: a vector env seeds each sub-env
            # once, then resets them unseeded, and every sub-env's ids read ".../None/k")
            where = "" if self.env_index is None else f"{self.env_index}/"
            episode_id = f"{self.env_id}/{where}{self._id_seed}/{self._episode_index}"
        self._tracker.start(
            seed, str(episode_id), self._episode_index,
            _int_or_none(info.get("turn_budget")), self._distance(),
        )  # fmt: skip
        # (a copy: the caller's list is theirs to change, and a command appended to it was
        # taken for a listed spelling and not judged)
        self._listed = tuple(info.get("admissible_actions") or ())
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        if type(action) is not str and isinstance(action, str):
            action = str.__str__(action)  # (a subclass's own __eq__ must not judge it optimal)
        tracker = self._tracker
        if tracker._pending is None:  # stepping a finished episode: nothing to record
            return self.env.step(action)
        # The oracle's two queries inlined: this runs on every recorded turn.
        game, oracle = self._game, self.oracle
        optimal_now = list(game.optimal_actions()) if oracle else None
        if (
            optimal_now is not None
            and type(action) is str
            and action not in optimal_now
            and action not in self._listed  # (a listed command is its own spelling: most turns)
        ):
            # Another spelling of an optimal command ("n", "GO NORTH") is optimal on any turn,
            # an injected error's too (the rule by distance below holds only on quiet turns).
            canonical = self._canonical
            if canonical is not None and canonical(action) in optimal_now:
                optimal_now.append(action)
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._listed = tuple(info.get("admissible_actions") or ())
        after = game.distance_to_goal() if oracle else None
        # (a native game's int passes at once; anything else is a custom game's, checked)
        if after is not None and (type(after) is not int or after < 0):
            after = check_distance(after, game)
        tracker.step(action, optimal_now, after, reward, terminated, truncated, info)
        if terminated or truncated:
            self.sink.deliver(tracker.finish())
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        if self._tracker.in_progress:
            self.n_abandoned += 1
            self._tracker.abandon()
        super().close()

    def _distance(self) -> int | None:
        return oracle_distance(self._game) if self.oracle else None


#: The most budgets `RecordStepOutcomes` counts at (each adds a list to every episode record).
MAX_BUDGET_COUNTS = 10_000


def check_budget_counts(budgets: Any) -> tuple[int, ...] | None:
    """``budgets`` as a tuple of distinct ints in [0, `MAX_TURN_BUDGET`] in their order (at most
    `MAX_BUDGET_COUNTS`), or None, else ``ValueError``."""
    if budgets is None:
        return None
    if not is_listlike(budgets):
        raise ValueError(
            f"Expect `budget_counts` to be a sequence of ints >= 0 or None, got {brief(budgets)}"
        )
    values = list(itertools.islice(budgets, MAX_BUDGET_COUNTS + 1))  # (however long it is)
    if len(values) > MAX_BUDGET_COUNTS:
        raise ValueError(f"Expect at most {MAX_BUDGET_COUNTS:,} `budget_counts`, got more")
    for t in values:
        if not is_int(t) or not 0 <= t <= MAX_TURN_BUDGET:
            raise ValueError(
                f"Expect `budget_counts` to hold turn budgets, ints from 0 to "
                f"{MAX_TURN_BUDGET:,}, got {brief(t)}"
            )
    return tuple(dict.fromkeys(int(t) for t in values))


def check_env_index(env_index: Any) -> int | None:
    """``env_index`` as an int from 0 to 2**63 - 1 or None, else ``ValueError`` (a longer
    one was taken, then failed at the first reset that wrote it)."""
    if env_index is not None and (not is_int(env_index) or not 0 <= env_index < 2**63):
        raise ValueError(
            f"Expect `env_index` to be an int from 0 to 2**63 - 1 or None, got {brief(env_index)}"
        )
    return None if env_index is None else int(env_index)


# Event values recorded as they are (an `InjectedError`'s own types, checked exactly: an
# ABC check such as `is_int` costs more than the rest of a value's handling).
_AS_IS = frozenset({int, bool, float, type(None)})


def _jsonable(event: Any) -> dict[str, Any] | None:
    if not event:
        return None
    return {
        k: v
        if type(v) in _AS_IS or (type(v) is str and len(v) <= MAX_RECORD_TEXT)
        else (int(v) if is_int(v) else cap_strings(v))
        for k, v in event.items()
    }
