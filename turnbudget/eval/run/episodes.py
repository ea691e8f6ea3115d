"""Evaluation episodes: one agent playing planned episodes on envs built by `turnbudget.make`.

`EvaluationEpisodes` is the `Kind` of run `turnbudget.eval.evaluate` hands the
driver (`turnbudget.eval.run.driver`): each job is an `EpisodeSpec`, played on
an env kept per (env id, slot) and reused across episodes, whose
`RecordStepOutcomes` records become the episode's result: its episode record
(with the agent's step-note totals and the per-budget counts the analysis
reads) and its step records.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from turnbudget._checks import brief, make_failure
from turnbudget.eval.run.agent_view import agent_episode_id, agent_info, executed_action
from turnbudget.eval.run.driver import NOTES_COUNT_KEY, Act, Driver, Player, Program
from turnbudget.eval.run.plan import EpisodeSpec, EvalConfig
from turnbudget.records import cap_strings, cap_text, dumps_template_lines
from turnbudget.records.schema import usage_number
from turnbudget.wrappers._common import find_wrapper
from turnbudget.wrappers.record_step_outcomes import PLAIN_STEP_KEYS, RecordStepOutcomes

__all__ = [
    "AGENT_KEY",
    "MAX_USAGE_KEYS",
    "EpisodeResult",
    "EvaluationEpisodes",
    "build_env",
    "check_envs",
    "evaluation_runner",
]

#: The key under which an agent's own account of a step (its ``step_note()``: an LLM's raw
#: reply, parse outcome, tokens, latency, retries) joins the step record; the episode
#: record holds the sums of its numbers and the counts of its flags.
AGENT_KEY = "agent"
#: The most keys of an agent's step notes an episode record sums (the step records keep
#: every note whole).
MAX_USAGE_KEYS = 256

_RECORD_KIND = operator.methodcaller("get", "record")

# An episode's record, and its step records (as dicts, or as JSON lines ready to write).
EpisodeResult = tuple[dict[str, Any], "list[dict[str, Any]] | str"]


def build_env(env_id: str, config: EvalConfig, sink: Callable[[dict[str, Any]], None]) -> Any:
    """The env stack for ``env_id`` under ``config``, sending its records to ``sink``; without
    ``gym.make``'s call checks (`drop_checks`): the driver resets before it steps."""
    from turnbudget.wrappers.stack import drop_checks, make

    return drop_checks(
        make(
            env_id,
            reveal=config.reveal,
            errors=config.errors,
            record={
                "callback": sink,
                "record_steps": config.record_steps,
                # (counted as the episode runs, so the analysis needs only the episode records)
                "budget_counts": config.ts if config.record_steps else None,
                # (an env of the user's own without one is judged by its outcomes alone)
                "oracle": has_oracle(env_id),
            },
            env_index=config.envs.index(env_id),
        )
    )


def check_text_observation(observation: Any, env_id: str) -> None:
    """A TypeError naming ``env_id`` when its reset gave an observation that is no text (an
    env of the user's own: agents and wrappers read text, and failed deep inside)."""
    if not isinstance(observation, str):
        raise TypeError(
            f"Expect {env_id!r} to give str observations (a text env), got {brief(observation)} "
            "from its reset"
        )


def namespace_hint(env_id: str) -> str:
    """``"; did you mean 'turnbudget/ID'?"`` for an id without its namespace that names one of
    turnbudget's (Gymnasium said "Environment `Maze-Easy` doesn't exist" of one that does,
    under the namespace), else ``""``.

    Example:
        >>> namespace_hint("Maze-Easy"), namespace_hint("Nope-v0")
        ("; did you mean 'turnbudget/Maze-Easy-v0'?", '')
    """
    import gymnasium as gym

    from turnbudget.eval.run.plan import played_env_id

    if not isinstance(env_id, str) or "/" in env_id:
        return ""
    named = played_env_id(f"turnbudget/{env_id}")
    return f"; did you mean {named!r}?" if named in gym.registry else ""


@functools.lru_cache(maxsize=256)
def has_oracle(env_id: str) -> bool:
    """Whether the game ``env_id`` makes has the oracle the step records judge by
    (``optimal_actions`` and ``distance_to_goal``): every turnbudget game has; an env of the
    user's own may not, and its runs then record outcomes, with no step judged. Read from
    its class where the id names one, else from a game made once."""
    import gymnasium as gym

    needed = ("optimal_actions", "distance_to_goal")
    if env_id.startswith("turnbudget/"):
        return True
    try:
        entry_point = gym.spec(env_id).entry_point
        creator = (
            entry_point
            if callable(entry_point)
            else gym.envs.registration.load_env_creator(entry_point)
        )
    except Exception:  # (an unknown id: `make` says so, with gym's own message)
        return True
    if isinstance(creator, type):
        return all(callable(getattr(creator, name, None)) for name in needed)
    game = gym.make(env_id).unwrapped
    try:
        return all(callable(getattr(game, name, None)) for name in needed)
    finally:
        game.close()


def _deterministic(record: dict[str, Any]) -> dict[str, Any]:
    """Drop ``episode_index``: it counts episodes per env object, so it depends on scheduling."""
    record.pop("episode_index", None)
    return record


def check_envs(config: EvalConfig) -> None:
    """Build each env once, so an unknown id or a bad wrapper setting fails before any episode."""
    import gymnasium as gym

    from turnbudget.wrappers.stack import NoTurnBudgetError

    for env_id in config.envs:
        if config.needs_oracle and not has_oracle(env_id):
            raise ValueError(
                f"Cannot evaluate {config.agent!r} on {env_id!r}: the agent needs the oracle "
                "(needs_oracle), and the env has none (optimal_actions, distance_to_goal)"
            )
        try:
            build_env(env_id, config, lambda record: None).close()
        except gym.error.Error as exc:
            raise ValueError(
                f"Cannot make {brief(env_id)}: {make_failure(exc, env_id in gym.registry)}"
                f"{namespace_hint(env_id)} (`turnbudget list` shows the registered ids)"
            ) from exc
        except NoTurnBudgetError as exc:  # (its advice, `turn_budget`, is no run's argument)
            raise exc.for_engines() from None
        except (TypeError, ValueError) as exc:
            why = str(exc)  # (a wrapper's message may quote the value whole)
            why = why if len(why) <= 500 else f"{why[:480]}... ({len(why)} characters)"
            raise ValueError(
                f"Cannot build {brief(env_id)} with errors={brief(config.errors)}, "
                f"reveal={brief(config.reveal)}: {why}"
            ) from exc


def _tally(notes: Sequence[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """Per-episode totals of the agent's step notes: numbers summed, flags counted, under
    their keys as the step records keep them (`cap_text`), the first `MAX_USAGE_KEYS` of
    them (the line of an episode record whose notes named 700 keys of 100,000 characters
    was 70 MB, which the records' reader refuses), each total at most 1e15 in size
    (`usage_number`; a larger one is left out); the count of notes under
    `NOTES_COUNT_KEY`."""
    present = list(filter(None, notes))  # (in C: most agents keep no notes)
    if not present:
        return None
    totals: dict[str, Any] = {}
    for note in present:
        for key, value in note.items():
            if isinstance(value, bool):  # a flag: counted
                value = int(value)
            if usage_number(value):  # (not NaN, inf or a number too large to sum)
                key = cap_text(key)
                if key in totals or len(totals) < MAX_USAGE_KEYS:
                    totals[key] = totals.get(key, 0) + value
    # (a sum past what one number may be is left out: each step's was within it, and the
    # records' reader refused the episode's line, so the run could not resume or report)
    totals = {
        k: round(v, 6) if isinstance(v, float) else int(v)
        for k, v in totals.items()
        if usage_number(v)
    }
    totals[NOTES_COUNT_KEY] = len(present)
    return totals


class _Slot:
    """One env, the records it emits and the agent's step notes for the episode in flight."""

    def __init__(self, env_id: str, config: EvalConfig):
        self.records: list[dict[str, Any]] = []
        self.notes: list[Mapping[str, Any] | None] = []
        self.env = build_env(env_id, config, self.records.append)
        self.recorder = find_wrapper(self.env, RecordStepOutcomes)
        self.per_repeat = config.error_draws == "per_repeat"

    def reset(self, spec: EpisodeSpec) -> tuple[str, dict[str, Any]]:
        self.records.clear()
        self.notes.clear()
        options = {"turn_budget": spec.turn_budget, "episode_id": spec.episode_id}
        if self.per_repeat:  # InjectErrors draws per (task seed, repeat, turn)
            options["repeat"] = spec.rep
        observation, info = self.env.reset(seed=spec.task_seed, options=options)
        check_text_observation(observation, spec.env_id)
        return observation, info

    def collect(self, spec: EpisodeSpec, record_steps: bool, serialize: bool) -> EpisodeResult:
        records = self.records
        kinds = list(map(_RECORD_KIND, records))  # (in C: an episode has a record per step)
        if kinds and kinds[-1] == "episode" and kinds.count("step") == len(kinds) - 1:
            # As `RecordStepOutcomes` delivers them: the steps, then the episode record.
            episodes, steps = records[-1:], records[:-1] if record_steps else []
        else:
            episodes = [r for r, kind in zip(records, kinds) if kind == "episode"]
            steps = [r for r, kind in zip(records, kinds) if kind == "step" and record_steps]
        for step in steps:
            step.pop("episode_index", None)  # (`_deterministic`, without a call per step)
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
        if totals is not None:
            for step in steps:  # turn t was decided by the t-th call for a command
                turn = int(step["turn"])
                if turn <= len(self.notes) and self.notes[turn - 1]:
                    step[AGENT_KEY] = cap_strings(self.notes[turn - 1])
        if "budget_counts" in episode:  # (last, where the records always had it)
            episode["budget_counts"] = episode.pop("budget_counts")
        self.records.clear()
        self.notes.clear()
        if serialize:  # encode where the episode ran: in parallel, and cheap to send back
            recorder = self.recorder  # (its step records' values, checked as they were made)
            vouched = PLAIN_STEP_KEYS if recorder is None else recorder.plain_step_keys
            return episode, dumps_template_lines(steps, vouched)
        return episode, steps


class EvaluationEpisodes:
    """The `Kind` of `evaluate`'s runs: one agent, one seat, an `EpisodeSpec` per job.

    ``serialize=True`` returns each episode's step records as JSON lines,
    encoded where the episode ran (in parallel, and cheap to send back).
    """

    def __init__(self, agents: Sequence[Any], config: EvalConfig, serialize: bool = False):
        self.config = config
        self.serialize = serialize
        self.show_budget = config.budget_aware  # (a revealed budget: on the turns it shows)
        self._slots: dict[tuple[str, int], _Slot] = {}

    def players(self, spec: EpisodeSpec) -> list[Player]:
        agent_id = agent_episode_id(spec.env_id, spec.task_seed, spec.rep)  # (no budget in it)
        return [Player(0, agent_id, spec.agent_seed)]

    def _slot(self, env_id: str, index: int) -> _Slot:
        key = (env_id, index)
        if key not in self._slots:
            self._slots[key] = _Slot(env_id, self.config)
        return self._slots[key]

    def discard(self, spec: EpisodeSpec, index: int) -> None:
        """Forget an env an exception went through: its state is unknown, the next episode
        gets a fresh one."""
        slot = self._slots.pop((spec.env_id, index), None)
        if slot is not None:
            slot.env.close()

    def close(self) -> None:
        """Close every env (a TextWorld env's interpreter process ends with it), each one even
        when one before it raised; then raise the first error."""
        slots, self._slots = self._slots, {}
        first: Exception | None = None
        for slot in slots.values():
            try:
                slot.env.close()
            except Exception as exc:  # (the others still hold their processes)
                first = first or exc
        if first is not None:
            raise first

    def program(self, spec: EpisodeSpec, index: int) -> Program:
        slot = self._slot(spec.env_id, index)
        env = slot.env
        oracle = env.unwrapped.optimal_actions if self.config.needs_oracle else None
        obs, info = slot.reset(spec)
        executed = None
        show_budget, notes = self.show_budget, slot.notes
        while True:
            view = agent_info(info, show_budget=show_budget, oracle=oracle, executed=executed)
            # (tuple.__new__: the NamedTuple's own __new__ is a Python call every turn)
            action, note = yield tuple.__new__(Act, (0, obs, view))
            notes.append(note)
            obs, _, terminated, truncated, info = env.step(action)
            executed = action if "injected_error" not in info else executed_action(action, info)
            if terminated or truncated:
                return slot.collect(spec, self.config.record_steps, self.serialize)


def evaluation_runner(agent: Any, config: EvalConfig, serialize: bool = False) -> Driver:
    """The driver of evaluation episodes: the backends' default runner hook."""
    return Driver(agent, config, serialize, kind=EvaluationEpisodes)
