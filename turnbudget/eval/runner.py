"""The episode runner: one agent playing planned episodes on envs built by `turnbudget.make`.

Every backend (in-process, process pool, and any new one) runs episodes
through an `EpisodeRunner`, so they all produce the same records. A runner
keeps one env per (env id, slot) and reuses it across episodes; a
`BatchAgent` (one with ``act_batch``) gets up to ``max_batch_size`` episodes in
flight at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from turnbudget.eval.agent_view import agent_info, budget_visible, executed_action
from turnbudget.eval.analysis import budget_counts
from turnbudget.eval.logs import dumps
from turnbudget.eval.plan import EpisodeSpec, EvalConfig

__all__ = ["AGENT_KEY", "EpisodeResult", "EpisodeRunner", "build_env", "check_envs"]

#: The key under which an agent's own account of a step (its ``step_note()``: an LLM's raw
#: reply, parse outcome, tokens, latency, retries) joins the step record; the episode
#: record holds the sums of its numbers and the counts of its flags.
AGENT_KEY = "agent"


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


def _tally(notes: Sequence[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """Per-episode totals of the agent's step notes: numbers summed, flags counted."""
    present = [n for n in notes if n]
    if not present:
        return None
    totals: dict[str, Any] = {}
    for note in present:
        for key, value in note.items():
            if isinstance(value, (bool, int, float)):
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
                    step[AGENT_KEY] = dict(self.notes[turn - 1])  # type: ignore[arg-type]
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
        self._slots: dict[str, list[_Slot]] = {}

    def _slot(self, env_id: str, index: int) -> _Slot:
        slots = self._slots.setdefault(env_id, [])
        while len(slots) <= index:
            slots.append(_Slot(env_id, self.config))
        return slots[index]

    def _view(self, slot: _Slot, info: dict[str, Any], executed: str | None) -> dict[str, Any]:
        """What the agent may see of ``info`` (see `turnbudget.eval.agent_view`)."""
        oracle = slot.env.unwrapped.optimal_actions if self.config.needs_oracle else None
        return agent_info(info, show_budget=self.show_budget, oracle=oracle, executed=executed)

    def run(self, specs: Sequence[EpisodeSpec]) -> list[EpisodeResult]:
        """Run ``specs``; their results in the same order."""
        results = dict(self.stream(specs))
        return [results[spec] for spec in specs]

    def stream(self, specs: Sequence[EpisodeSpec]) -> Iterator[tuple[EpisodeSpec, EpisodeResult]]:
        """Run ``specs``, yielding each episode as soon as it ends (a batch agent finishes
        them out of order), so a run that fails midway has handed over what finished."""
        if self.batch:
            yield from self._run_batch(specs)
        else:
            for spec in specs:
                yield spec, self._run_one(spec)

    def _run_one(self, spec: EpisodeSpec) -> EpisodeResult:
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
        self, specs: Sequence[EpisodeSpec]
    ) -> Iterator[tuple[EpisodeSpec, EpisodeResult]]:
        agent = self.agent
        notes_of = getattr(agent, "step_notes", None)
        pending = list(specs)[::-1]
        width = max(1, int(agent.max_batch_size))
        live: dict[int, tuple[EpisodeSpec, _Slot, str, dict[str, Any], str | None]] = {}
        free = list(range(width))[::-1]
        while pending or live:
            while pending and free:
                spec, i = pending.pop(), free.pop()
                slot = self._slot(f"{spec.env_id}", i)
                obs, info = slot.reset(spec)
                agent.reset_episode(spec.episode_id, spec.agent_seed)
                live[i] = (spec, slot, obs, info, None)
            order = sorted(live)
            actions = agent.act_batch(
                [live[i][0].episode_id for i in order],
                [live[i][2] for i in order],
                [self._view(live[i][1], live[i][3], live[i][4]) for i in order],
            )
            if len(actions) != len(order):
                raise RuntimeError(
                    f"{type(agent).__name__}.act_batch returned {len(actions)} commands "
                    f"for {len(order)} episodes"
                )
            notes = (
                notes_of([live[i][0].episode_id for i in order])
                if notes_of is not None
                else [None] * len(order)
            )
            for i, action, note in zip(order, actions, notes, strict=True):
                spec, slot, _, _, _ = live[i]
                if notes_of is not None:
                    slot.notes.append(note)
                obs, _, terminated, truncated, info = slot.env.step(action)
                if terminated or truncated:
                    yield spec, slot.collect(spec, self.config.record_steps, self.serialize)
                    agent.end_episode(spec.episode_id)
                    del live[i]
                    free.append(i)
                else:
                    live[i] = (spec, slot, obs, info, executed_action(action, info))
