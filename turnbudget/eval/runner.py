"""The episode runner: one agent playing planned episodes on envs built by `turnbudget.make`.

Every backend (in-process, process pool, and any new one) runs episodes
through an `EpisodeRunner`, so they all produce the same records. A runner
keeps one env per (env id, slot) and reuses it across episodes; a
`BatchAgent` (one with ``act_batch``) gets up to ``max_batch_size`` episodes in
flight at once.

An exception raised by the agent or the env ends only the episode it came
from: it comes back as `EpisodeFailure`, the env it ran on is rebuilt, and the
runner goes on. (A `BatchAgent`'s ``act_batch`` serves several episodes at
once; when it raises, each episode then in flight is replayed on its own, so
only the one that raises again fails.) Deciding whether to retry is the caller's job
(`turnbudget.eval.backends.run_with_retries`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from turnbudget.eval.agent_view import agent_info, budget_visible, executed_action
from turnbudget.eval.analysis import budget_counts
from turnbudget.eval.logs import dumps
from turnbudget.eval.plan import EpisodeSpec, EvalConfig

__all__ = [
    "FAILURE_KINDS",
    "EpisodeFailure",
    "EpisodeOutcome",
    "EpisodeResult",
    "EpisodeRunner",
    "EpisodeTimeout",
    "build_env",
    "check_envs",
]

logger = logging.getLogger(__name__)

#: Why an episode failed to run: the agent or env raised, its worker died, it ran too long.
FAILURE_KINDS = ("exception", "worker_lost", "timeout")


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
    """``"TypeName: message"`` on one line, short enough for a log record."""
    text = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text if len(text) <= 500 else text[:497] + "..."


def _failure(spec: EpisodeSpec, exc: BaseException) -> EpisodeFailure:
    kind = "timeout" if isinstance(exc, EpisodeTimeout) else "exception"
    return EpisodeFailure(spec, kind, describe(exc))


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


class _Slot:
    """One env and the records it emits for the episode in flight."""

    def __init__(self, env_id: str, config: EvalConfig):
        self.records: list[dict[str, Any]] = []
        self.env = build_env(env_id, config, self.records.append)
        self.per_repeat = config.error_draws == "per_repeat"
        self.ts = config.ts

    def reset(self, spec: EpisodeSpec) -> tuple[str, dict[str, Any]]:
        self.records.clear()
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
        steps = (
            [_deterministic(r) for r in self.records if r.get("record") == "step"]
            if record_steps
            else []
        )
        if steps:  # the per-budget analysis then needs only the episode records
            episode["budget_counts"] = budget_counts(steps, self.ts)
        self.records.clear()
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
            except Exception:  # (a broken env may fail to close too; it is dropped)
                logger.debug("closing a failed env raised", exc_info=True)

    def _view(self, slot: _Slot, info: dict[str, Any], executed: str | None) -> dict[str, Any]:
        """What the agent may see of ``info`` (see `turnbudget.eval.agent_view`)."""
        oracle = slot.env.unwrapped.optimal_actions if self.config.needs_oracle else None
        return agent_info(info, show_budget=self.show_budget, oracle=oracle, executed=executed)

    def run(self, specs: Sequence[EpisodeSpec]) -> list[EpisodeResult | EpisodeFailure]:
        """Play ``specs``; one result or `EpisodeFailure` per spec, in the same order."""
        if self.batch:
            return self._run_batch(specs)
        return [self._run_one(spec) for spec in specs]

    def _run_one(self, spec: EpisodeSpec) -> EpisodeResult | EpisodeFailure:
        try:
            return self._play(spec)
        except Exception as exc:  # (the agent's or env's: it ends this episode only)
            self._drop(spec.env_id, 0)
            return _failure(spec, exc)

    def _play(self, spec: EpisodeSpec) -> EpisodeResult:
        slot = self._slot(spec.env_id, 0)
        obs, info = slot.reset(spec)
        self.agent.reset(spec.agent_seed)
        executed = None
        while True:
            action = self.agent.act(obs, self._view(slot, info, executed))
            obs, _, terminated, truncated, info = slot.env.step(action)
            executed = executed_action(action, info)
            if terminated or truncated:
                return slot.collect(spec, self.config.record_steps, self.serialize)

    def _run_batch(self, specs: Sequence[EpisodeSpec]) -> list[EpisodeResult | EpisodeFailure]:
        results: dict[EpisodeSpec, EpisodeResult | EpisodeFailure] = {}
        # slot -> (spec, env slot, observation, info, the command the env ran last turn)
        live: dict[int, tuple[EpisodeSpec, Any, str, dict[str, Any], str | None]] = {}
        pending = list(specs)[::-1]
        free = list(range(max(1, int(self.agent.max_batch_size))))[::-1]
        alone: list[EpisodeSpec] = []
        while pending or live:
            try:
                self._batch_turn(pending, free, live, results)
            except Exception as exc:  # (a batch call fails every episode in flight)
                for i, (spec, *_) in live.items():
                    if len(specs) > 1:  # replay it on its own: was it this episode's fault?
                        alone.append(spec)
                    else:
                        results[spec] = _failure(spec, exc)
                    self._drop(spec.env_id, i)
                    try:
                        self.agent.end_episode(spec.episode_id)
                    except Exception:  # (cleanup of an agent that already failed)
                        logger.debug("end_episode after a failure raised", exc_info=True)
                    free.append(i)
                live.clear()
        for spec in alone:  # an episode depends on its spec only, not on its batch mates
            results[spec] = self._run_batch([spec])[0]
        return [results[spec] for spec in specs]

    def _batch_turn(
        self,
        pending: list[EpisodeSpec],
        free: list[int],
        live: dict[int, tuple[EpisodeSpec, Any, str, dict[str, Any], str | None]],
        results: dict[EpisodeSpec, EpisodeResult | EpisodeFailure],
    ) -> None:
        """Start episodes on free slots, then one ``act_batch`` and one step of each live one."""
        agent = self.agent
        while pending and free:
            spec, i = pending.pop(), free.pop()
            live[i] = (spec, None, "", {}, None)  # in flight from here: a failure includes it
            slot = self._slot(spec.env_id, i)
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
        for i, action in zip(order, actions, strict=True):
            spec, slot, _, _, _ = live[i]
            obs, _, terminated, truncated, info = slot.env.step(action)
            if terminated or truncated:
                results[spec] = slot.collect(spec, self.config.record_steps, self.serialize)
                agent.end_episode(spec.episode_id)
                del live[i]
                free.append(i)
            else:
                live[i] = (spec, slot, obs, info, executed_action(action, info))
