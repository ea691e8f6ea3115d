"""Teacher-forced probes: single-step skill and recovery skill, normalized against chance.

Observational step records (`RecordStepOutcomes`) say how often an agent
played an optimal command on track or right after an error, but errors happen
in particular states, and a random walk returns to where it was by chance:
those rates measure where errors happen as much as skill. Probes put every
agent in the *same* states instead:

1. For each task, the engine fixes one optimal plan (a shortest path chosen
   with a seeded generator) and, for each prefix length ``t0`` (fractions of
   the plan's length), drives the episode along it for ``t0`` turns. The agent
   sees every observation and is told what was executed for it (the optional
   ``observe`` hook, and ``info["executed_action"]`` on its next call; see
   `turnbudget.agents.base`).
2. *single-step probe*: the agent answers once at that on-track state; the
   answer is optimal when it is in ``optimal_actions()`` (or, a synonym, it
   brings the distance down by one).
3. *recovery probe*, per error kind: one recoverable error that raises the
   distance fires at turn ``t0 + 1``. ``slip``: the engine plays a
   non-optimal admissible command for the agent (one that keeps the task
   solvable and raises the distance), as an injected slip would. ``setback``:
   the agent answers for the state it saw, the env's ``inject_setback`` fires,
   and the command runs in the changed state, as `InjectErrors` does. The
   agent then plays on; the probe records whether and after how many turns the
   distance is back to its pre-error value, and whether it wins within the
   budget ``B = ceil(budget_factor * d_after) + budget_slack`` turns after the
   prefix (``d_after``: the distance right after the error).
4. *control*: the same prefix and the same budget B with no error, so the
   error's cost (control win rate minus win rate after the error) is measured.

Every probe also runs for `RandomAgent` (``baseline_repeats`` times, with
seeds of its own), and each skill is normalized against it:
``skill = (p - p_random) / (1 - p_random)``: 0 for chance, 1 for a perfect
agent. `single_step_skill` uses p = the rate of optimal answers, and
`recovery_skill` p = the rate of recovered errors. Intervals are percentile
bootstraps over tasks (agent and baseline resampled together). For an
``OracleAgent(epsilon)`` the single-step skill is exactly ``1 - epsilon`` in
expectation: p = (1 - ε) + ε·c and p_random = c, with c the chance rate.

Everything is a pure function of (env id, task seed, prefix, probe, seed):
prefixes, errors and the agents' seeds. Probe episodes run on the evaluation
backends (``backend="local" | "pool" | "ray"``, ``workers=N``) as `ProbeJob`
work items played by `ProbeRunner` (the backends' runner hook), so results
are the same for any backend and worker count; a probe that fails to run
after its retries is left out of the skills and counted apart. Results are written to ``out`` as
``probe.json`` (the configuration), ``probes.jsonl`` (one line per probe and
agent), ``probe_summary.json`` and ``probe_report.md``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from turnbudget.agents.base import agent_flags, in_flight, observe, observe_batch
from turnbudget.eval.agent_view import agent_info
from turnbudget.eval.backends import Backend
from turnbudget.eval.probe_plan import (
    PROBE_KINDS,
    ProbeConfig,
    ProbeSpec,
    TaskStarts,
    derive_seed,
    plan_probes,
)
from turnbudget.wrappers.record_step_outcomes import cap_text

__all__ = [
    "PROBES_FILE",
    "PROBE_CONFIG_FILE",
    "PROBE_FAILURES_FILE",
    "PROBE_KINDS",
    "ProbeAgents",
    "ProbeConfig",
    "ProbeJob",
    "ProbeResult",
    "ProbeRunner",
    "ProbeSpec",
    "plan_probes",
    "probe",
]

PROBE_CONFIG_FILE = "probe.json"
PROBES_FILE = "probes.jsonl"
PROBE_FAILURES_FILE = "probe_failures.jsonl"
BASELINE = "random"  # the label of the chance baseline in the results


@dataclass
class ProbeResult:
    """What `probe` returns: the configuration, one record per probe and agent, the summary;
    ``failed``: the probes that failed to run (left out of ``records`` and the skills)."""

    config: ProbeConfig
    records: list[dict[str, Any]]
    summary: dict[str, Any]
    out: Path | None = None
    specs: list[ProbeSpec] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)


# --------------------------------------------------------------------------- running

# A probe episode is a generator: it yields ("observe", obs, info, executed) for a forced
# turn and ("act", obs, info) when it needs the agent's command, and returns its record.
Request = tuple[Any, ...]


def _episode(
    starts: TaskStarts, slot: int, spec: ProbeSpec, needs_oracle: bool, show_budget: bool
) -> Generator[Request, str | None, dict[str, Any]]:
    budget = spec.prefix + (1 if spec.probe == "single" else spec.budget)
    env, obs, info = starts.fresh(spec.env_id, spec.task_seed, budget, slot)
    game = env.unwrapped
    executed: str | None = None

    def view(info: dict[str, Any]) -> dict[str, Any]:
        oracle = game.optimal_actions if needs_oracle else None
        return agent_info(info, show_budget=show_budget, oracle=oracle, executed=executed)

    for action in spec.plan[: spec.prefix]:
        yield ("observe", obs, view(info), action)
        obs, _, _, _, info = env.step(action)
        executed = action
    record: dict[str, Any] = {"applied": spec.applied}
    if spec.probe == "single":
        optimal_now = set(game.optimal_actions())
        action = yield ("act", obs, view(info))
        before = spec.distance_before
        _, _, _, _, step_info = env.step(action)
        after = game.distance_to_goal()
        synonym = bool(step_info.get("valid_action")) and after is not None and after == before - 1
        record.update(action=cap_text(str(action)), optimal=action in optimal_now or synonym)
        return record
    if not spec.applied:
        return record
    target = int(spec.distance_before)
    turn = 0  # turns after the prefix
    start = 1  # the first turn whose command can bring the distance back
    if spec.probe == "recovery" and spec.kind == "slip":
        yield ("observe", obs, view(info), str(spec.error))
        obs, _, _, _, info = env.step(str(spec.error))
        obs = f"Your hand slips: you {spec.error}.\n\n{obs}"  # as InjectErrors narrates one
        executed, turn, start = str(spec.error), 1, 2
    recovered_at = None
    won = bool(info.get("won"))
    while turn < spec.budget and not won and not info.get("lost"):
        action = yield ("act", obs, view(info))
        turn += 1
        narration = ""
        if spec.probe == "recovery" and spec.kind == "setback" and turn == 1:
            narration = str(game.inject_setback(np.random.default_rng(int(spec.error))))
        obs, _, terminated, _, info = env.step(action)
        if narration:
            obs = f"{narration}\n\n{obs}"
        executed = action
        won = bool(info.get("won"))
        distance = game.distance_to_goal()
        if (
            spec.probe == "recovery" and recovered_at is None and turn >= start
            and distance is not None and distance <= target
        ):  # fmt: skip
            recovered_at = turn - start + 1
        if terminated:
            break
    record.update(won=won, turns=turn)
    if spec.probe == "recovery":
        record.update(recovered=recovered_at is not None, turns_to_recover=recovered_at)
    return record


class _Driver:
    """Runs probe episodes for one agent (an `Agent` or a `BatchAgent`)."""

    def __init__(self, agent: Any, starts: TaskStarts, show_budget: bool):
        self.agent = agent
        self.needs_oracle, _ = agent_flags(agent)
        self.show_budget = show_budget
        self.batch = hasattr(agent, "act_batch")
        self.starts = starts

    def run(self, jobs: Sequence[tuple[ProbeSpec, int]]) -> list[dict[str, Any]]:
        """Run (spec, agent seed) jobs; one record each, in order."""
        if self.batch:
            return self._run_batch(jobs)
        out = []
        for spec, seed in jobs:
            self.agent.reset(seed)
            gen = _episode(self.starts, 0, spec, self.needs_oracle, self.show_budget)
            try:
                request = next(gen)
                while True:
                    if request[0] == "observe":
                        observe(self.agent, *request[1:])
                        request = gen.send(None)
                    else:
                        request = gen.send(self.agent.act(request[1], request[2]))
            except StopIteration as stop:
                out.append(stop.value)
        return out

    def _run_batch(self, jobs: Sequence[tuple[ProbeSpec, int]]) -> list[dict[str, Any]]:
        agent = self.agent
        width = max(1, int(agent.max_batch_size))
        results: dict[int, dict[str, Any]] = {}
        pending = list(enumerate(jobs))[::-1]
        live: dict[int, tuple[int, Generator, Request]] = {}  # slot -> (job, generator, request)
        free = list(range(width))[::-1]

        def advance(slot: int, value: str | None) -> None:
            job, gen, _ = live[slot]
            try:
                live[slot] = (job, gen, gen.send(value))
            except StopIteration as stop:
                results[job] = stop.value
                agent.end_episode(f"probe-{job}")
                del live[slot]
                free.append(slot)

        while pending or live:
            while pending and free:
                (job, (spec, seed)), slot = pending.pop(), free.pop()
                agent.reset_episode(f"probe-{job}", seed)
                gen = _episode(self.starts, slot, spec, self.needs_oracle, self.show_budget)
                live[slot] = (job, gen, None)
                advance(slot, None)
            forced = [s for s in sorted(live) if live[s][2][0] == "observe"]
            if forced:
                observe_batch(
                    agent,
                    [f"probe-{live[s][0]}" for s in forced],
                    *([live[s][2][i] for s in forced] for i in (1, 2, 3)),
                )
                for s in forced:
                    advance(s, None)
                continue
            asking = sorted(live)
            actions = agent.act_batch(
                [f"probe-{live[s][0]}" for s in asking],
                [live[s][2][1] for s in asking],
                [live[s][2][2] for s in asking],
            )
            if len(actions) != len(asking):
                raise RuntimeError(
                    f"{type(agent).__name__}.act_batch returned {len(actions)} commands "
                    f"for {len(asking)} episodes"
                )
            for s, action in zip(asking, actions, strict=True):
                advance(s, action)
        return [results[i] for i in range(len(jobs))]


def _agent_name(agent: Any) -> str:
    return str(getattr(agent, "name", None) or type(agent).__name__)


@dataclass(frozen=True, order=True)
class ProbeJob:
    """One probe episode as a backend's work item: which agent plays which probe, with what seed.

    Jobs sort by ``index`` (their place in the results), so retries and
    failed-to-run records come in a fixed order; everything that decides the
    outcome (the probe, the agent, the seed) is in the job, never in the order
    jobs run.
    """

    index: int
    agent: int = field(compare=False)  # position in the tuple of agents the runner holds
    label: str = field(compare=False)
    role: str = field(compare=False)
    spec: ProbeSpec = field(compare=False)
    seed: int = field(compare=False)

    @property
    def episode_id(self) -> str:
        return f"probe-{self.index}"


@dataclass(frozen=True)
class ProbeAgents:
    """Every agent probed (the baseline last), as the backend's agent: ``max_batch_size``
    (the widest `BatchAgent`'s) sets how many probes a backend hands a worker at once."""

    agents: tuple[Any, ...]

    @property
    def max_batch_size(self) -> int:
        return max(int(getattr(a, "max_batch_size", 1)) for a in self.agents)


class ProbeRunner:
    """The runner hook for probes: a backend worker builds one and runs chunks of `ProbeJob`.

    Built as ``ProbeRunner(agents, config, serialize)`` (the `Backend` runner
    signature); ``agents`` is a `ProbeAgents` (or a sequence of agents).
    ``run`` returns, per job and in order, ``(job, record)`` or an
    `EpisodeFailure` when the agent or the env raised.
    """

    def __init__(
        self, agents: ProbeAgents | Sequence[Any], config: Any = None, serialize: bool = False
    ):
        self.agents = agents.agents if isinstance(agents, ProbeAgents) else tuple(agents)
        self.starts = TaskStarts()
        self._drivers: dict[int, _Driver] = {}

    def _driver(self, index: int) -> _Driver:
        if index not in self._drivers:
            agent = self.agents[index]
            _, budget_aware = agent_flags(agent)
            self._drivers[index] = _Driver(agent, self.starts, show_budget=budget_aware)
        return self._drivers[index]

    def run(self, jobs: Sequence[ProbeJob]) -> list[Any]:
        from turnbudget.eval.runner import EPISODE_ERRORS, _failure

        by_agent: dict[int, list[ProbeJob]] = {}
        for job in jobs:
            by_agent.setdefault(job.agent, []).append(job)
        done: dict[int, Any] = {}
        for index, group in by_agent.items():
            driver = self._driver(index)
            try:
                raw = driver.run([(j.spec, j.seed) for j in group])
                done.update({j.index: (j, r) for j, r in zip(group, raw, strict=True)})
            except EPISODE_ERRORS as exc:
                if len(group) == 1:
                    done[group[0].index] = _failure(group[0], exc)  # type: ignore[arg-type]
                    continue
                for job in group:  # one at a time: a probe depends on its job only
                    done[job.index] = self.run([job])[0]
        return [done[j.index] for j in jobs]

    def close(self) -> None:
        self.starts.close()


def _jobs(
    runs: Sequence[tuple[str, Any, str, int]], specs: list[ProbeSpec], config: ProbeConfig
) -> list[ProbeJob]:
    """Every probe ``repeats`` times for each agent. Seeds depend on the role ("agent" or
    "baseline"), so a `RandomAgent` probed as an agent is an independent draw from the baseline."""
    jobs: list[ProbeJob] = []
    for a, (label, _, role, repeats) in enumerate(runs):
        for spec in specs:
            for r in range(repeats):
                seed = derive_seed(config.seed, role, r, *spec.key[:3], spec.probe, spec.kind or "")
                jobs.append(ProbeJob(len(jobs), a, label, role, spec, seed))
    return jobs


def _identity(job: ProbeJob) -> dict[str, Any]:
    spec = job.spec
    return {
        "agent": job.label, "role": job.role, "env_id": spec.env_id, "task_seed": spec.task_seed,
        "prefix": spec.prefix, "plan_length": len(spec.plan), "probe": spec.probe,
        "kind": spec.kind, "distance_before": spec.distance_before,
        "distance_after": spec.distance_after, "budget": spec.budget,
        "n_admissible": spec.n_admissible, "n_optimal": spec.n_optimal, "agent_seed": job.seed,
    }  # fmt: skip


def _failed(failure: Any, attempts: int) -> tuple[ProbeJob, dict[str, Any]]:
    """A probe that failed to run on every attempt: its identity, no outcome."""
    job = failure.spec
    record = {**_identity(job), "failed_to_run": True, "failure": failure.kind}
    record.update(error=failure.error, attempts=attempts)
    return job, record


def probe(
    envs: str | Sequence[str],
    agent: Any | Sequence[Any],
    *,
    tasks: int | Sequence[int] = 20,
    prefixes: Sequence[float] = (0.0, 0.25, 0.5, 0.75),
    kinds: Sequence[str] = PROBE_KINDS,
    budget_factor: float = 1.5,
    budget_slack: int = 2,
    repeats: int = 1,
    baseline_repeats: int = 4,
    seed: int = 0,
    label: str | None = None,
    out: str | os.PathLike[str] | None = None,
    n_bootstrap: int = 1000,
    progress: bool = False,
    workers: int = 1,
    backend: str | Backend | None = None,
    backend_options: dict[str, Any] | None = None,
    timeout: float | None = None,
    retries: int = 2,
    concurrency: int | None = None,
) -> ProbeResult:
    """Run teacher-forced probes for ``agent`` and for the random baseline (see the module doc).

    Args:
        envs: one env id or several (each built with `turnbudget.make`; the
            game needs the oracle and, for setbacks, ``inject_setback``).
        agent: an `Agent` or a `BatchAgent` (optionally with ``observe`` /
            ``observe_batch`` to hear about forced turns), or a list of them
            (probed on the same states, against one baseline run).
        tasks: task seeds, or a count ``m`` for seeds ``0..m-1``.
        prefixes: prefix lengths as fractions in [0, 1) of each task's plan length.
        kinds: error kinds for the recovery probes (``slip``, ``setback``).
        budget_factor: with ``budget_slack``, the recovery and control budget,
            ``B = ceil(budget_factor * d_after) + budget_slack`` turns after the prefix.
        budget_slack: see ``budget_factor``.
        repeats: probes per state for ``agent`` (seeds of their own).
        baseline_repeats: probes per state for the random baseline.
        seed: base of every seed (plans, errors, agents).
        label: the agent's name in the results (default: its ``name``; one agent only).
        out: a directory for ``probe.json``, ``probes.jsonl``,
            ``probe_summary.json`` and ``probe_report.md`` (replaced).
        n_bootstrap: bootstrap resamples over tasks.
        progress: show a progress bar on stderr.
        workers: with ``backend``, ``backend_options``, ``timeout`` and ``retries``,
            where and how the probe episodes run, as in `turnbudget.eval.evaluate` (``local``,
            ``pool``, ``ray``, ...; default: local for one worker, else pool).
            Every agent must be picklable for more than one worker. Results
            do not depend on them: each probe's seeds come from its identity.
            A probe that fails to run on every attempt (the agent or env raised,
            its worker died, it ran past ``timeout``) is left out of the skills
            and listed in ``ProbeResult.failed`` and ``probe_failures.jsonl``.
        backend: see ``workers``.
        backend_options: see ``workers``.
        timeout: see ``workers``.
        retries: see ``workers``.
        concurrency: probes in flight for an async agent (an LLM agent such as
            `ChatAgent`, driven through `AsyncBatch`; default: the agent's own
            ``concurrency``); 1 drives it one blocking call at a time.

    Example:
        >>> from turnbudget.agents import OracleAgent
        >>> result = probe("turnbudget/Maze-Easy-v0", OracleAgent(0.0), tasks=2, baseline_repeats=1)
        >>> result.summary["agents"]["oracle-eps0"]["turnbudget/Maze-Easy-v0"]["single_step_skill"]["mean"]
        1.0
    """
    from turnbudget.eval.probe_report import render_probe_markdown, summarize_probes

    config = _make_config(
        envs, agent, tasks, prefixes, kinds, budget_factor, budget_slack, repeats,
        baseline_repeats, seed, label,
    )  # fmt: skip
    backend = _backend(workers, backend, backend_options, timeout, retries)
    starts = TaskStarts()
    try:
        specs = plan_probes(config, starts)
    finally:
        starts.close()
    if not specs:
        raise ValueError(f"No probe could be planned for {list(config.envs)}: no task is solvable")
    runs = _runs(config, agent, repeats, baseline_repeats)
    # an async (LLM) agent: many probes in flight; the baseline is driven as it is
    driven = [
        (label, in_flight(who, concurrency) if role == "agent" else who, role, reps)
        for label, who, role, reps in runs
    ]
    try:
        jobs = _jobs(driven, specs, config)
        agents = ProbeAgents(tuple(r[1] for r in driven))
        outcomes = _run_jobs(backend, agents, config, jobs, retries, progress)
    finally:
        for (_, who, _, _), (_, wrapper, _, _) in zip(runs, driven, strict=True):
            if wrapper is not who:
                wrapper.close()
    records = [{**_identity(j), **r} for j, r in outcomes if not r.get("failed_to_run")]
    failed = [r for _, r in outcomes if r.get("failed_to_run")]
    summary = summarize_probes(config.to_dict(), records, n_bootstrap=n_bootstrap)
    summary["failed_to_run"] = {
        label: sum(r["agent"] == label for r in failed) for label in (*config.labels, BASELINE)
    }
    out_path = Path(out) if out is not None else None
    if out_path is not None:
        out_path.mkdir(parents=True, exist_ok=True)
        (out_path / PROBE_CONFIG_FILE).write_text(json.dumps(config.to_dict(), indent=2) + "\n")
        with (out_path / PROBES_FILE).open("w") as f:
            f.writelines(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
        from turnbudget.eval.probe_report import write_probe_summary

        write_probe_summary(out_path, summary)
        failures = out_path / PROBE_FAILURES_FILE
        failures.unlink(missing_ok=True)
        if failed:
            with failures.open("w") as f:
                f.writelines(json.dumps(r, separators=(",", ":")) + "\n" for r in failed)
        (out_path / "probe_report.md").write_text(render_probe_markdown(summary) + "\n")
    return ProbeResult(config, records, summary, out_path, specs, failed)


def _backend(
    workers: int, backend: str | Backend | None, options: dict[str, Any] | None,
    timeout: float | None, retries: int,
) -> Backend:  # fmt: skip
    from turnbudget._checks import check_positive_int
    from turnbudget.eval.backends import check_timeout, make_backend

    timeout = check_timeout(timeout)
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        raise ValueError(f"Expect `retries` to be a non-negative int, got {retries!r}")
    if isinstance(backend, Backend):
        if timeout is not None:
            backend.timeout = timeout
        return backend
    check_positive_int(workers, "workers")
    name = backend if backend is not None else ("local" if workers == 1 else "pool")
    return make_backend(name, workers, timeout=timeout, **(options or {}))


def _run_jobs(
    backend: Backend, agents: ProbeAgents, config: ProbeConfig, jobs: list[ProbeJob],
    retries: int, progress: bool,
) -> list[tuple[ProbeJob, dict[str, Any]]]:  # fmt: skip
    """Run ``jobs`` on ``backend`` (with retries); ``(job, record)`` for each, in job order."""
    from tqdm.auto import tqdm

    from turnbudget.eval.backends import run_with_retries

    done: dict[int, tuple[ProbeJob, dict[str, Any]]] = {}
    with backend.start(agents, config, serialize=False, runner=ProbeRunner), tqdm(
        total=len(jobs), desc="probe", disable=not progress, unit="probe"
    ) as bar:  # fmt: skip
        for outcomes in run_with_retries(backend, jobs, retries, on_failure=_failed):  # type: ignore[arg-type]
            for job, record in outcomes:
                done[job.index] = (job, record)
            bar.update(len(outcomes))
    return [done[j.index] for j in jobs]


def _runs(
    config: ProbeConfig, agent: Any, repeats: int, baseline_repeats: int
) -> list[tuple[str, Any, str, int]]:
    """(label, agent, role, repeats) of every agent probed, the random baseline last."""
    from turnbudget.agents.baselines import RandomAgent

    agents = list(agent) if isinstance(agent, (list, tuple)) else [agent]
    runs = [(lbl, a, "agent", repeats) for lbl, a in zip(config.labels, agents, strict=True)]
    runs.append((BASELINE, RandomAgent(), "baseline", baseline_repeats))
    return runs


def _make_config(
    envs: str | Sequence[str],
    agent: Any,
    tasks: int | Sequence[int],
    prefixes: Sequence[float],
    kinds: Sequence[str],
    budget_factor: float,
    budget_slack: int,
    repeats: int,
    baseline_repeats: int,
    seed: int,
    label: str | None,
) -> ProbeConfig:
    from turnbudget.eval.plan import _agent_repr

    env_ids = (envs,) if isinstance(envs, str) else tuple(envs)
    if not env_ids or not all(isinstance(e, str) and e for e in env_ids):
        raise ValueError(f"Expect `envs` to be env ids, got {envs!r}")
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
    fractions = tuple(float(f) for f in prefixes)
    if not fractions or not all(0.0 <= f < 1.0 for f in fractions):
        raise ValueError(f"Expect `prefixes` to be fractions in [0, 1), got {prefixes!r}")
    kinds_t = tuple(kinds)
    if any(k not in PROBE_KINDS for k in kinds_t) or len(set(kinds_t)) != len(kinds_t):
        raise ValueError(f"Expect `kinds` to be distinct kinds from {PROBE_KINDS}, got {kinds!r}")
    if not (isinstance(budget_factor, (int, float)) and budget_factor >= 1.0):
        raise ValueError(f"Expect `budget_factor` to be a number >= 1, got {budget_factor!r}")
    for name, value, low in (
        ("budget_slack", budget_slack, 0), ("repeats", repeats, 1),
        ("baseline_repeats", baseline_repeats, 1),
    ):  # fmt: skip
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"Expect `{name}` to be an int >= {low}, got {value!r}")
    agents = list(agent) if isinstance(agent, (list, tuple)) else [agent]
    if not agents:
        raise ValueError("Expect at least one agent to probe, got none")
    if label is not None and len(agents) != 1:
        raise ValueError("Give `label` only when probing one agent")
    labels = (label,) if label is not None else tuple(_agent_name(a) for a in agents)
    if len(set(labels)) != len(labels):
        raise ValueError(f"Expect distinct agent names, got {list(labels)}")
    return ProbeConfig(
        labels=labels, envs=env_ids, agents=tuple(_agent_repr(a) for a in agents),
        tasks=task_seeds, prefixes=fractions, kinds=kinds_t, budget_factor=float(budget_factor),
        budget_slack=int(budget_slack), repeats=int(repeats),
        baseline_repeats=int(baseline_repeats), seed=int(seed),
    )  # fmt: skip
