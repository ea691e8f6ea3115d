"""The rollout engine: run an agent over env ids x task seeds x n episodes and score Pass@(K,T).

`evaluate` plans every episode up front from the configuration alone, runs
them in one process or a local process pool, writes per-step and
per-episode JSONL records (produced by `RecordStepOutcomes`) and returns the
Pass@(K,T) grids and the analysis.

- **Modes.** ``truncate`` runs each episode once at ``max(ts)``; the episode
  counts as a success at T when its first success came within T turns. That is
  exact only when the agent cannot see its budget. ``rerun`` runs each episode
  once per T. ``both`` runs both (sharing the runs at ``max(ts)``) and
  reports the gap. ``auto`` picks ``rerun`` when the budget is visible to the
  agent (``reveal`` other than ``never``, or ``agent.budget_aware``), else
  ``truncate``.
- **Determinism.** An episode is fully determined by its identity (env id,
  task seed, repeat, budget): the env is reset with the task seed and the
  agent with a seed derived from (``seed``, env id, task seed, repeat).
  Results do not depend on the worker count or the order of execution; tables
  are built from records sorted by episode id, and the records drop the
  recorder's ``episode_index`` (a per-env-object counter) so the logs hold the
  same lines whatever the scheduling.
- **Resume.** With ``out`` set, rerunning the same call skips the episodes
  already logged. Each episode's step lines are written before its episode
  line, which is what marks it complete; on resume, a torn last line and the
  steps of episodes that never completed are dropped before anything new is
  appended, so a killed run ends with no duplicated or missing episode.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
import os
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from turnbudget.agents.base import ORACLE_KEY, agent_flags, in_flight
from turnbudget.eval.logs import (
    EPISODES_FILE,
    RUN_FILE,
    STEPS_FILE,
    LogWriter,
    dumps,
    prepare_out,
    read_jsonl,
    repair_logs,
)

__all__ = [
    "EPISODES_FILE",
    "RUN_FILE",
    "STEPS_FILE",
    "EpisodeSpec",
    "EvalConfig",
    "EvalResult",
    "evaluate",
    "plan_episodes",
    "read_jsonl",
]

MODES = ("auto", "truncate", "rerun", "both")


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class EvalConfig:
    """Everything that determines an evaluation's results (JSON-serialisable).

    The worker count, progress bar and output path are not part of it: they
    change how a run executes, never what it produces.
    """

    label: str
    envs: tuple[str, ...]
    agent: str
    ks: tuple[int, ...]
    ts: tuple[int, ...]
    n: int
    tasks: tuple[int, ...]
    mode: str  # resolved: truncate | rerun | both
    reveal: Any = None
    errors: Any = None
    seed: int = 0
    needs_oracle: bool = False
    budget_aware: bool = False
    record_steps: bool = True

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("envs", "ks", "ts", "tasks"):
            d[key] = list(d[key])
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EvalConfig:
        d = dict(d)
        for key in ("envs", "ks", "ts", "tasks"):
            d[key] = tuple(d[key])
        return cls(**d)

    @property
    def run_budgets(self) -> tuple[int, ...]:
        """The budgets episodes are actually run at."""
        return (max(self.ts),) if self.mode == "truncate" else tuple(sorted(set(self.ts)))


def _positive_ints(values: Iterable[Any], name: str) -> tuple[int, ...]:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"Expect `{name}` to hold positive ints, got {v!r}")
        out.append(int(v))
    if not out:
        raise ValueError(f"Expect `{name}` to hold at least one value, got none")
    if len(set(out)) != len(out):
        raise ValueError(f"Expect `{name}` values to be distinct, got {out}")
    return tuple(sorted(out))


def _budget_visible(reveal: Any) -> bool:
    """Whether `turnbudget.make(reveal=...)` shows the budget (a mapping's mode defaults to always)."""
    if isinstance(reveal, Mapping):
        reveal = reveal.get("mode", "always")
    return reveal not in (None, False, "never")


def _agent_repr(agent: Any) -> str:
    """A repr that is the same in every process (a default repr holds a memory address)."""
    text = repr(agent)
    if " object at 0x" in text:
        cls = type(agent)
        return f"{cls.__module__}.{cls.__qualname__}"
    return text


def _make_config(
    envs: str | Sequence[str],
    agent: Any,
    *,
    ks: Sequence[int],
    ts: Sequence[int],
    n: int | None,
    tasks: int | Sequence[int],
    mode: str,
    reveal: Any,
    errors: Any,
    seed: int,
    label: str | None,
    record_steps: bool,
) -> EvalConfig:
    env_ids = (envs,) if isinstance(envs, str) else tuple(envs)
    if not env_ids or not all(isinstance(e, str) and e for e in env_ids):
        raise ValueError(f"Expect `envs` to be env ids, got {envs!r}")
    if len(set(env_ids)) != len(env_ids):
        raise ValueError(f"Expect distinct env ids, got {list(env_ids)}")
    ks_t = _positive_ints(ks, "ks")
    ts_t = _positive_ints(ts, "ts")
    n_val = max(ks_t) if n is None else n
    if isinstance(n_val, bool) or not isinstance(n_val, (int, np.integer)) or n_val < 1:
        raise ValueError(f"Expect `n` to be a positive int, got {n!r}")
    if max(ks_t) > n_val:
        raise ValueError(
            f"Pass@K needs n >= max(K) episodes per task: got n={n_val}, max(K)={max(ks_t)}"
        )
    if isinstance(tasks, (int, np.integer)) and not isinstance(tasks, bool):
        if tasks < 1:
            raise ValueError(
                f"Expect `tasks` to be a positive int or a list of seeds, got {tasks!r}"
            )
        task_seeds = tuple(range(int(tasks)))
    else:
        task_seeds = tuple(int(s) for s in tasks)  # type: ignore[union-attr]
        if not task_seeds or len(set(task_seeds)) != len(task_seeds) or min(task_seeds) < 0:
            raise ValueError(f"Expect `tasks` to be distinct non-negative seeds, got {tasks!r}")
    if mode not in MODES:
        raise ValueError(f"Expect `mode` to be one of {MODES}, got {mode!r}")
    needs_oracle, budget_aware = agent_flags(agent)
    if mode == "auto":
        mode = "rerun" if (budget_aware or _budget_visible(reveal)) else "truncate"
    for name, value in (("reveal", reveal), ("errors", errors)):
        try:
            json.dumps(value)
        except TypeError:
            raise ValueError(
                f"Expect `{name}` to be JSON-serialisable (it is logged and compared on resume), "
                f"got {value!r}"
            ) from None
    agent_name = getattr(agent, "name", None) or type(agent).__name__
    return EvalConfig(
        label=label or str(agent_name),
        envs=env_ids,
        agent=_agent_repr(agent),
        ks=ks_t,
        ts=ts_t,
        n=int(n_val),
        tasks=task_seeds,
        mode=mode,
        reveal=reveal,
        errors=errors,
        seed=int(seed),
        needs_oracle=needs_oracle,
        budget_aware=budget_aware,
        record_steps=bool(record_steps),
    )


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True, order=True)
class EpisodeSpec:
    """One episode to run; everything about it follows from these fields."""

    env_id: str
    task_seed: int
    rep: int
    turn_budget: int
    env_index: int = field(compare=False)
    agent_seed: int = field(compare=False)

    @property
    def episode_id(self) -> str:
        return f"{self.env_id}|seed={self.task_seed}|rep={self.rep}|T={self.turn_budget}"


def agent_seed(seed: int, env_id: str, task_seed: int, rep: int) -> int:
    """The agent's seed for one episode: independent of the budget and of execution order."""
    ss = np.random.SeedSequence([seed, zlib.crc32(env_id.encode()), task_seed, rep])
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def plan_episodes(config: EvalConfig) -> list[EpisodeSpec]:
    """Every episode the configuration asks for, in a fixed order."""
    return sorted(
        EpisodeSpec(
            env_id=env_id,
            task_seed=task,
            rep=rep,
            turn_budget=budget,
            env_index=i,
            agent_seed=agent_seed(config.seed, env_id, task, rep),
        )
        for i, env_id in enumerate(config.envs)
        for task in config.tasks
        for rep in range(config.n)
        for budget in config.run_budgets
    )


# --------------------------------------------------------------------------- running


def _build_env(env_id: str, config: EvalConfig, sink: Callable[[dict[str, Any]], None]) -> Any:
    from turnbudget.stack import make

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


def _check_envs(config: EvalConfig) -> None:
    """Build each env once, so an unknown id or a bad wrapper setting fails before any episode."""
    import gymnasium as gym

    for env_id in config.envs:
        try:
            _build_env(env_id, config, lambda record: None).close()
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


#: The key under which an agent's own account of a step (its ``step_note()``: an LLM's raw
#: reply, parse outcome, tokens, latency, retries) joins the step record; the episode
#: record holds the sums of its numbers and the counts of its flags.
AGENT_KEY = "agent"


def _tally(notes: Sequence[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """Per-episode totals of the agent's step notes: numbers summed, flags counted."""
    totals: dict[str, Any] = {}
    present = [n for n in notes if n]
    for note in present:
        for key, value in note.items():
            if isinstance(value, (bool, int, float)):
                totals[key] = totals.get(key, 0) + value
    if not present:
        return None
    totals = {k: round(v, 6) if isinstance(v, float) else int(v) for k, v in totals.items()}
    totals["steps"] = len(present)
    return totals


class _Slot:
    """One env, the records it emits and the agent's step notes for the episode in flight."""

    def __init__(self, env_id: str, config: EvalConfig):
        self.records: list[dict[str, Any]] = []
        self.notes: list[Mapping[str, Any] | None] = []
        self.env = _build_env(env_id, config, self.records.append)

    def reset(self, spec: EpisodeSpec) -> tuple[str, dict[str, Any]]:
        self.records.clear()
        self.notes.clear()
        return self.env.reset(
            seed=spec.task_seed,
            options={"turn_budget": spec.turn_budget, "episode_id": spec.episode_id},
        )

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
            for step in steps:  # turn t was decided by the t-th act call
                turn = int(step["turn"])
                if turn <= len(self.notes) and self.notes[turn - 1]:
                    step[AGENT_KEY] = dict(self.notes[turn - 1])  # type: ignore[arg-type]
        self.records.clear()
        self.notes.clear()
        if serialize:  # encode where the episode ran: in parallel, and cheap to send back
            return episode, "".join(dumps(r) + "\n" for r in steps)
        return episode, steps


class _Runner:
    """Runs chunks of episodes with one agent; one per process."""

    def __init__(self, agent: Any, config: EvalConfig, serialize: bool = False):
        self.agent = agent
        self.config = config
        self.serialize = serialize
        self.batch = hasattr(agent, "act_batch")
        self._slots: dict[str, list[_Slot]] = {}

    def _slot(self, env_id: str, index: int) -> _Slot:
        slots = self._slots.setdefault(env_id, [])
        while len(slots) <= index:
            slots.append(_Slot(env_id, self.config))
        return slots[index]

    def _oracle(self, slot: _Slot, info: dict[str, Any]) -> dict[str, Any]:
        if self.config.needs_oracle:
            info[ORACLE_KEY] = list(slot.env.unwrapped.optimal_actions())
        return info

    def run(
        self,
        specs: Sequence[EpisodeSpec],
        on_result: Callable[[EpisodeResult], None] | None = None,
    ) -> list[EpisodeResult]:
        """Run ``specs``; ``on_result`` gets each episode as soon as it ends (then the
        return value is empty), so a run that fails midway keeps what finished."""
        if self.batch:
            return self._run_batch(specs, on_result)
        results = []
        for spec in specs:
            result = self._run_one(spec)
            if on_result is None:
                results.append(result)
            else:
                on_result(result)
        return results

    def _run_one(self, spec: EpisodeSpec) -> EpisodeResult:
        slot = self._slot(spec.env_id, 0)
        obs, info = slot.reset(spec)
        self.agent.reset(spec.agent_seed)
        note = getattr(self.agent, "step_note", None)
        while True:
            action = self.agent.act(obs, self._oracle(slot, info))
            if note is not None:
                slot.notes.append(note())
            obs, _, terminated, truncated, info = slot.env.step(action)
            if terminated or truncated:
                return slot.collect(spec, self.config.record_steps, self.serialize)

    def _run_batch(
        self,
        specs: Sequence[EpisodeSpec],
        on_result: Callable[[EpisodeResult], None] | None = None,
    ) -> list[EpisodeResult]:
        agent = self.agent
        notes_of = getattr(agent, "step_notes", None)
        results: dict[EpisodeSpec, EpisodeResult] = {}
        pending = list(specs)[::-1]
        width = max(1, int(agent.max_batch_size))
        live: dict[int, tuple[EpisodeSpec, _Slot, str, dict[str, Any]]] = {}
        free = list(range(width))[::-1]
        while pending or live:
            while pending and free:
                spec, i = pending.pop(), free.pop()
                slot = self._slot(f"{spec.env_id}", i)
                obs, info = slot.reset(spec)
                agent.reset_episode(spec.episode_id, spec.agent_seed)
                live[i] = (spec, slot, obs, info)
            order = sorted(live)
            actions = agent.act_batch(
                [live[i][0].episode_id for i in order],
                [live[i][2] for i in order],
                [self._oracle(live[i][1], live[i][3]) for i in order],
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
                spec, slot, _, _ = live[i]
                if notes_of is not None:
                    slot.notes.append(note)
                obs, _, terminated, truncated, info = slot.env.step(action)
                if terminated or truncated:
                    result = slot.collect(spec, self.config.record_steps, self.serialize)
                    if on_result is None:
                        results[spec] = result
                    else:
                        on_result(result)
                    agent.end_episode(spec.episode_id)
                    del live[i]
                    free.append(i)
                else:
                    live[i] = (spec, slot, obs, info)
        return [results[spec] for spec in specs] if on_result is None else []


_WORKER: _Runner | None = None


def _init_worker(agent: Any, config: EvalConfig, serialize: bool) -> None:
    global _WORKER
    _WORKER = _Runner(agent, config, serialize)


def _run_chunk(specs: Sequence[EpisodeSpec]) -> list[EpisodeResult]:
    assert _WORKER is not None, "worker not initialised"
    return _WORKER.run(specs)


# --------------------------------------------------------------------------- results


@dataclass
class EvalResult:
    """What `evaluate` returns: the configuration, the episode records and the summary."""

    config: EvalConfig
    episodes: list[dict[str, Any]]
    summary: dict[str, Any]
    out: Path | None = None
    n_run: int = 0  # episodes run by this call (the rest were resumed from the logs)
    steps: list[dict[str, Any]] = field(default_factory=list)  # in memory only when out is None

    def grid(self, group: str | None = None, mode: str | None = None) -> dict[str, Any]:
        """The summary's grid for an env group (an env id, or "all": the default when
        there are several envs) and mode (default: rerun when run, else truncate)."""
        groups = self.summary["groups"]
        modes = groups[group or ("all" if "all" in groups else next(iter(groups)))]
        return modes[mode or ("rerun" if "rerun" in modes else "truncate")]


def _chunks(specs: list[EpisodeSpec], size: int) -> list[list[EpisodeSpec]]:
    return [specs[i : i + size] for i in range(0, len(specs), size)]


def evaluate(
    envs: str | Sequence[str],
    agent: Any,
    *,
    ks: Sequence[int] = (1, 2, 4, 8),
    ts: Sequence[int] = (10, 20, 40, 80),
    n: int | None = None,
    tasks: int | Sequence[int] = 10,
    mode: str = "auto",
    errors: Any = None,
    reveal: Any = None,
    workers: int = 1,
    out: str | os.PathLike[str] | None = None,
    seed: int = 0,
    label: str | None = None,
    record_steps: bool = True,
    progress: bool = False,
    overwrite: bool = False,
    n_bootstrap: int = 1000,
    concurrency: int | None = None,
) -> EvalResult:
    """Evaluate ``agent`` and return Pass@(K,T) grids with the analysis.

    Args:
        envs: one env id or several (each built with `turnbudget.make`).
        agent: an `Agent` or a `BatchAgent` (picklable when ``workers > 1``).
        ks: the K values; ``n`` must be at least ``max(ks)``.
        ts: the turn budgets T.
        n: episodes per task (default ``max(ks)``).
        tasks: task seeds, or a count ``m`` for seeds ``0..m-1``.
        mode: ``auto``, ``truncate``, ``rerun`` or ``both`` (see the module doc).
        errors: the ``errors=`` setting of `turnbudget.make` (None for none).
        reveal: the ``reveal=`` setting of `turnbudget.make` (None hides the budget).
        workers: processes; 1 runs in this process. Results do not depend on it.
        out: a run directory for ``run.json``, ``episodes.jsonl``, ``steps.jsonl``
            and the report; an existing run there with the same settings resumes.
        seed: base of the agents' per-episode seeds.
        label: the run's name in reports (default: the agent's name).
        record_steps: also keep per-step records (needed by the step analysis).
        progress: show a progress bar on stderr.
        overwrite: discard a previous run in ``out`` instead of resuming it.
        n_bootstrap: bootstrap resamples for the confidence intervals.
        concurrency: episodes in flight per process for an async agent (an
            LLM agent such as `ChatAgent`; default: the agent's own
            ``concurrency``); 1 drives it one blocking call at a time.
            Results do not depend on it (given a deterministic server).
    """
    from turnbudget.eval.analysis import summarize_run

    config = _make_config(
        envs,
        agent,
        ks=ks,
        ts=ts,
        n=n,
        tasks=tasks,
        mode=mode,
        reveal=reveal,
        errors=errors,
        seed=seed,
        label=label,
        record_steps=record_steps,
    )
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"Expect `workers` to be a positive int, got {workers!r}")
    given, agent = agent, in_flight(agent, concurrency)
    _check_envs(config)
    specs = plan_episodes(config)
    out_path = Path(out) if out is not None else None
    done: set[str] = set()
    if out_path is not None:
        prepare_out(out_path, config, overwrite)
        done = repair_logs(out_path, {s.episode_id for s in specs})
    todo = [s for s in specs if s.episode_id not in done]

    episodes: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    writer = LogWriter(out_path) if out_path is not None else None

    def sink(results: list[EpisodeResult]) -> None:
        for episode, episode_steps in results:
            if writer is not None:
                writer.write(episode, episode_steps)
            else:
                episodes.append(episode)
                steps.extend(episode_steps)  # type: ignore[arg-type]  # dicts when not serialising

    from tqdm.auto import tqdm

    def progress_bar() -> Any:
        return tqdm(
            total=len(specs),
            initial=len(specs) - len(todo),
            desc=config.label,
            unit="ep",
            disable=not progress,
            dynamic_ncols=True,
            leave=True,
        )

    try:
        if todo and workers == 1:
            runner = _Runner(agent, config, serialize=writer is not None)
            with progress_bar() as bar:

                def finished(result: EpisodeResult) -> None:
                    sink([result])  # written as it ends: a failure later loses nothing
                    bar.update(1)

                runner.run(todo, on_result=finished)
        elif todo:
            width = int(getattr(agent, "max_batch_size", 1))
            size = max(width, min(16, max(1, len(todo) // (workers * 8))))
            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
            with cf.ProcessPoolExecutor(
                max_workers=workers,
                mp_context=multiprocessing.get_context(method),
                initializer=_init_worker,
                initargs=(agent, config, writer is not None),
            ) as pool:
                futures = {pool.submit(_run_chunk, c): len(c) for c in _chunks(todo, size)}
                # The bar (and its monitor thread) starts only once the workers exist.
                with progress_bar() as bar:
                    try:
                        for future in cf.as_completed(futures):
                            sink(future.result())
                            bar.update(futures[future])
                    except BaseException:
                        for f in futures:
                            f.cancel()
                        raise
        else:
            progress_bar().close()  # show the finished bar of a fully resumed run
    finally:
        if writer is not None:
            writer.close()
        if agent is not given:  # the AsyncBatch made here: close its loop and clients
            agent.close()

    if out_path is not None:
        episodes = read_jsonl(out_path / EPISODES_FILE)[0]
    episodes.sort(key=lambda e: e["episode_id"])
    summary = summarize_run(config, episodes, n_bootstrap=n_bootstrap)
    if out_path is not None:
        from turnbudget.eval.report import write_run_summary

        write_run_summary(out_path, summary)
    return EvalResult(config, episodes, summary, out_path, n_run=len(todo), steps=steps)
