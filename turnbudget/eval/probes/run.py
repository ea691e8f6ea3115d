"""Teacher-forced probes: single-step skill and recovery-specific skill, checked by controls.

Observational step records (`RecordStepOutcomes`) say how often an agent
played an optimal command on track or right after an error, but errors happen
in particular states, and a random walk returns to where it was by chance:
those rates measure where errors happen as much as skill. Probes put every
agent in the *same* states instead:

1. For each task, the engine fixes one optimal plan (a shortest path chosen
   with a seeded generator) and, for each prefix length ``t0`` (fractions of
   the plan's length L), drives the episode along it for ``t0`` turns. The
   agent sees every observation and is told what was executed for it (the
   optional ``observe`` hook, and ``info["executed_action"]`` on its next
   call; see `turnbudget.agents.base`).
2. *single-step probe*: the agent answers once at that on-track state, with
   the budget a real episode of ``T = ceil(budget_factor * L) + budget_slack``
   turns would have left there (``turns_left = T - t0``, never below the
   distance left). A valid answer that leaves the state unchanged (``look``)
   is a *no-op*, counted apart; any other answer is judged: optimal when it is
   in ``optimal_actions()`` (or, a synonym, it brings the distance down by one).
3. *recovery probe*, per error kind (from ``t0 >= 2``): one recoverable error
   that raises the distance fires on turn ``t0 + 1``, a turn the engine plays
   for the agent. ``slip``: a non-optimal admissible command (one that keeps the
   task solvable); ``setback``: the env's ``inject_setback`` and a turn in which
   nothing is played, so the agent sees the setback before it answers. The
   observation carries the error's narration and ``info["injected_error"]``
   its kind and narration (as `InjectErrors` shows one; never the oracle's
   distances). The agent then plays on for ``B = ceil(budget_factor * d1) +
   budget_slack`` turns (``d1``: the distance after the error): did it win,
   did it get back to the pre-error distance, how fast.
4. *control* (the matched control): the agent plays from the on-track state
   of the same plan that is as far from the goal as the state after the error
   (after ``L - d1`` plan commands), with the same B turns. An error's
   unavoidable cost (the distance it added) is the same in both, so
   ``recovery_specific_skill`` = win rate after the error - win rate in the
   control measures only the agent's response to having erred: 0 for any
   memoryless agent, whatever its skill. Errors are drawn so that the control
   exists (``d1 <= L``); a state with none is skipped and counted.

Every probe also runs for `RandomAgent` (``baseline_repeats`` times, with
seeds of its own): the single-step skill is normalized against it,
``(p - p_random) / (1 - p_random)`` (0 for chance, 1 for a perfect agent),
with p the rate of optimal answers among the judged ones. For an
``OracleAgent(epsilon)`` that is ``(1 - ε) / (1 - ε + ε·b)`` in expectation,
b the share of admissible commands that change the state (its random picks
that are no-ops are not errors). `turnbudget.eval.probes.summary` has the
intervals (none collapses at 0 or 1) and the contrasts between agents;
`turnbudget.eval.probes.validate` runs the control agents whose true skills
are known (`turnbudget.agents.controls`) and checks every metric against them.

Everything is a pure function of (env id, task seed, prefix, probe, seed):
prefixes, errors and the agents' seeds (a recovery probe and its control share
one). Probe episodes run on the evaluation backends (``backend="local" |
"pool" | "ray"``, ``workers=N``) as `ProbeJob` work items, each a program of
the episode driver (`ProbeEpisodes`, the kind of run), so results are the same
for any backend and worker count; a probe that fails to run after its
retries is left out of the skills and counted apart. Results are written to
``out`` as ``probe.json`` (the configuration, with ``grants``: what each agent's own
flags show it beyond a player's view), ``probes.jsonl`` (one line per
probe and agent) and ``probe_summary.json``; ``probe_report.md`` is the
caller's (`turnbudget.eval.report`).
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from turnbudget._checks import (
    PATH_CHARS,
    brief,
    check_agent,
    check_bool,
    check_label,
    check_seed,
    is_finite,
    is_int,
    is_listlike,
    is_real,
    refuse_team_only,
)
from turnbudget.agents.base import agent_flags
from turnbudget.envs.core import oracle_distance
from turnbudget.eval.estimator import check_n_bootstrap
from turnbudget.eval.probes.plan import (
    PROBE_KINDS,
    ProbeConfig,
    ProbeSpec,
    TaskStarts,
    plan_probes,
    state_signature,
)
from turnbudget.eval.probes.summary import (
    PROBE_SUMMARY_FILE,
    failure_bounds,
    summarize_probes,
    write_probe_summary,
)
from turnbudget.eval.run.agent_view import agent_info, grants, opaque_id
from turnbudget.eval.run.backends import (
    KEPT_ON_ABORT,
    Backend,
    EvaluationAborted,
    resolve_backend,
)
from turnbudget.eval.run.driver import Act, AgentSet, Observe, Player, Program, start_up
from turnbudget.eval.run.jobs import run_jobs
from turnbudget.eval.run.lock import locks_output_dir
from turnbudget.eval.run.plan import (
    _agent_repr,
    check_backend_options,
    check_retries,
    derive_seed,
    env_id_tuple,
    task_seeds,
)
from turnbudget.eval.run.sealed import driven_form
from turnbudget.records import LogError, cap_text, write_json, write_jsonl
from turnbudget.records.files import MAX_JSON_BYTES, open_regular
from turnbudget.wrappers.inject_errors import narrate

__all__ = [
    "PROBES_FILE",
    "PROBE_CONFIG_FILE",
    "PROBE_FAILURES_FILE",
    "PROBE_KINDS",
    "ProbeConfig",
    "ProbeEpisodes",
    "ProbeJob",
    "ProbeResult",
    "ProbeSpec",
    "plan_probes",
    "probe",
]

#: The most prefix fractions a probe run takes (each adds a probe per task and kind).
MAX_PREFIXES = 1000

PROBE_CONFIG_FILE = "probe.json"
PROBES_FILE = "probes.jsonl"
PROBE_FAILURES_FILE = "probe_failures.jsonl"
BASELINE = "random"  # the label of the chance baseline in the results
#: What a probe run leaves beside its probe.json, with what its callers make of it
#: (`turnbudget.eval.report`'s probe_report.md, `turnbudget.eval.probes.validate`'s
#: validation.json): a run into the same directory replaces all of them.
PROBE_RESULT_FILES = (PROBES_FILE, PROBE_FAILURES_FILE, PROBE_SUMMARY_FILE, "probe_report.md",
                      "validation.json")  # fmt: skip


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

    def __repr__(self) -> str:  # (the dataclass's own printed every record: ~200 kB)
        return (
            f"ProbeResult(records={len(self.records)}, failed={len(self.failed)}, out={self.out!r})"
        )


# --------------------------------------------------------------------------- running


def _episode(
    starts: TaskStarts, slot: int, spec: ProbeSpec, needs_oracle: bool, show_budget: bool
) -> Program:
    """One probe as a driver program (see `turnbudget.eval.run.driver`); returns its record.
    Its env goes back to ``starts`` when the program ends, however it ends (closed with it)."""
    recovery = spec.probe == "recovery"
    budget = spec.start + recovery + spec.budget  # the agent's first call sees B turns left
    env, obs, info = starts.fresh(spec.env_id, spec.task_seed, budget, slot)
    try:
        return (yield from _play_probe(env, obs, info, spec, needs_oracle, show_budget))
    finally:
        starts.release(env)


def _play_probe(
    env: Any, obs: str, info: dict[str, Any], spec: ProbeSpec, needs_oracle: bool,
    show_budget: bool,
) -> Program:  # fmt: skip
    recovery = spec.probe == "recovery"
    game = env.unwrapped
    executed: str | None = None

    def view(info: dict[str, Any]) -> dict[str, Any]:
        oracle = game.optimal_actions if needs_oracle else None
        return agent_info(info, show_budget=show_budget, oracle=oracle, executed=executed)

    for action in spec.plan[: spec.start]:
        yield Observe(0, obs, view(info), action)
        obs, _, _, _, info = env.step(action)
        executed = action
    record: dict[str, Any] = {"applied": spec.applied}
    if spec.probe == "single":
        before = state_signature(game, obs)
        optimal_now = set(game.optimal_actions())
        action, _ = yield Act(0, obs, view(info))
        # Judged as the text it plays: a str subclass's own __eq__ and __hash__ made a rigged
        # answer "optimal" (in optimal_now), and its __str__ could fail the probe.
        action = str.__str__(action) if isinstance(action, str) else action
        obs, _, _, _, step_info = env.step(action)
        valid = bool(step_info.get("valid_action"))
        noop = valid and state_signature(game, obs) == before
        after = oracle_distance(game)
        synonym = valid and after is not None and after == int(spec.distance_before) - 1
        # (a command the game refused is never optimal, whatever the oracle listed)
        optimal = None if noop else valid and (action in optimal_now or synonym)
        record.update(action=cap_text(str(action)), valid=valid, noop=noop, optimal=optimal)
        return record
    if not spec.applied:
        return record
    if recovery:  # the error's turn, forced: the agent sees what happened before it plays on
        obs, info, executed = yield from _inject(env, obs, view(info), spec)
    target = int(spec.distance_before)
    turn = 0  # the agent's turns
    recovered_at = None
    won = bool(info.get("won"))
    while turn < spec.budget and not won and not info.get("lost"):
        action, _ = yield Act(0, obs, view(info))
        turn += 1
        obs, _, terminated, _, info = env.step(action)
        executed = action
        won = bool(info.get("won"))
        distance = oracle_distance(game)
        if recovery and recovered_at is None and distance is not None and distance <= target:
            recovered_at = turn
        if terminated:
            break
    record.update(won=won, turns=turn)
    if recovery:
        record.update(recovered=recovered_at is not None, turns_to_recover=recovered_at)
    return record


def _inject(env: Any, obs: str, seen: dict[str, Any], spec: ProbeSpec) -> Any:
    """The forced turn of a recovery probe's error: a slip the engine plays for the agent, or
    a setback and a turn in which nothing is played (so the agent sees the setback before it
    answers). Returns the observation (with the error's narration), the env's info (with the
    event as a player sees it: kind and narration) and what was executed."""
    if spec.kind == "slip":
        executed = str(spec.error)
        yield Observe(0, obs, seen, executed)
        obs, _, _, _, info = env.step(executed)
        narration = f"Your hand slips: you {executed}."
    else:
        narration = str(env.unwrapped.inject_setback(np.random.default_rng(int(spec.error))))
        executed = ""
        yield Observe(0, obs, seen, executed)
        obs, _, _, _, info = env.step(executed)  # a no-op: any non-command spends the turn
        # Drop the feedback on the empty command, as InjectErrors' transient does: a refusal
        # alone (TextWorld's is one paragraph) was shown whole, a reply to a command the
        # agent never gave, on the very turn its recovery is measured from.
        obs = obs.partition("\n\n")[2]
    info = dict(info)
    info["valid_action"] = True  # the agent gave no command to refuse
    info["injected_error"] = {
        "kind": spec.kind, "turn": spec.start + 1, "applied": True, "narration": narration,
        "replaced_action": executed if spec.kind == "slip" else None,
    }  # fmt: skip
    return narrate(narration, obs, env.observation_space), info, executed


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
    repeat: int = field(compare=False, default=0)

    @property
    def episode_id(self) -> str:
        """The id a batch agent knows this probe by: an `opaque_id` of the job's place, not the
        place itself (``probe-12`` then ``probe-13`` told an agent that a recovery probe's
        matched control came next, and so when to play well; an unkeyed digest of it told the
        same to an agent that hashed every place)."""
        return opaque_id("probe", str(self.index))


class ProbeEpisodes:
    """The `Kind` of `probe`'s runs: each job is a `ProbeJob`, played by the agent it names
    (the driver holds every probed agent and the baseline, as an `AgentSet`); its
    outcome is ``(job, record)``."""

    def __init__(self, agents: Sequence[Any], config: Any = None, serialize: bool = False):
        # What probe.json's `grants` says each agent is shown, as read where the probes were
        # planned: the flags read again here (in a worker, or a sealed agent's process) handed
        # an agent whose flag differed there the oracle's actions, the record saying none.
        # (Without a config: the agents' own flags.)
        self.grants = None if config is None else config.grants
        self.flags = [agent_flags(a) for a in agents] if config is None else []
        self.starts = TaskStarts(config is None or "setback" in config.kinds)

    def players(self, job: ProbeJob) -> list[Player]:
        return [Player(job.agent, job.episode_id, job.seed)]

    def program(self, job: ProbeJob, slot: int) -> Program:
        if self.grants is None:
            needs_oracle, budget_aware = self.flags[job.agent]
        else:  # (the random baseline declares nothing, whatever an agent is labelled)
            granted = self.grants.get(job.label, ()) if job.role == "agent" else ()
            needs_oracle, budget_aware = "needs_oracle" in granted, "budget_aware" in granted
        record = yield from _episode(self.starts, slot, job.spec, needs_oracle, budget_aware)
        return job, record

    def discard(self, job: ProbeJob, slot: int) -> None:
        """Nothing to forget: every probe plays on a fresh copy of its task's start."""

    def close(self) -> None:
        self.starts.close()


def _jobs(
    runs: Sequence[tuple[str, Any, str, int]], specs: list[ProbeSpec], config: ProbeConfig
) -> list[ProbeJob]:
    """Every probe ``repeats`` times for each agent. Seeds depend on the role ("agent" or
    "baseline"), so a `RandomAgent` probed as an agent is an independent draw from the baseline;
    a recovery probe and its control share the agent's seed (common random numbers)."""
    jobs: list[ProbeJob] = []
    for a, (label, _, role, repeats) in enumerate(runs):
        for spec in specs:
            probe = "pair" if spec.probe in ("recovery", "control") else spec.probe
            for r in range(repeats):
                seed = derive_seed(config.seed, role, r, *spec.key[:3], probe, spec.kind or "")
                jobs.append(ProbeJob(len(jobs), a, label, role, spec, seed, r))
    return jobs


def _identity(job: ProbeJob) -> dict[str, Any]:
    spec = job.spec
    return {
        "agent": job.label, "role": job.role, "env_id": spec.env_id, "task_seed": spec.task_seed,
        "prefix": spec.prefix, "start": spec.start, "plan_length": len(spec.plan),
        "probe": spec.probe, "kind": spec.kind, "distance_before": spec.distance_before,
        "distance_after": spec.distance_after, "budget": spec.budget,
        "n_admissible": spec.n_admissible, "n_optimal": spec.n_optimal,
        "n_changing": spec.n_changing, "repeat": job.repeat, "agent_seed": job.seed,
    }  # fmt: skip


def _failed(failure: Any, attempts: int) -> tuple[ProbeJob, dict[str, Any]]:
    """A probe that failed to run on every attempt: its identity, no outcome."""
    job = failure.spec
    record = {**_identity(job), "failed_to_run": True, "failure": failure.kind}
    record.update(error=failure.error, attempts=attempts)
    return job, record


@locks_output_dir  # one run per output directory, checked before any probe is played
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
    sealed: bool = False,
    overwrite: bool = True,
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
        budget_factor: with ``budget_slack``, the budgets:
            ``ceil(budget_factor * d) + budget_slack`` turns for d the plan's length (a
            single-step probe shows what is left of it after the prefix) or the distance
            after the error (B, the turns of a recovery probe and of its control).
        budget_slack: see ``budget_factor``.
        repeats: probes per state for ``agent`` (seeds of their own).
        baseline_repeats: probes per state for the random baseline.
        seed: base of every seed (plans, errors, agents).
        label: the agent's name in the results (default: its ``name``; one agent only).
        out: a directory for ``probe.json``, ``probes.jsonl`` and
            ``probe_summary.json`` (replaced, with the report of the probes there
            before; ``probe.json`` is written last, once the results are);
            ``probe_report.md`` is the caller's (`turnbudget.eval.report.write_probe_report`).
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
        sealed: run each probed agent in a process of its own that receives only
            its view of each turn (`turnbudget.eval.run.sealed.seal`), so it
            cannot reach the env or its oracle (the random baseline, built in,
            runs in-process). Results do not depend on it for an agent that plays
            by the rules.
        overwrite: replace the results of other probes in ``out`` (its ``probe.json``
            differs from this call's); False refuses them before any probe runs, as
            ``turnbudget probe`` does without ``--overwrite``. The same probes again
            are always replaced (they give the same results).

    Example:
        >>> from turnbudget.agents import OracleAgent
        >>> result = probe("turnbudget/Maze-Easy-v0", OracleAgent(0.0), tasks=2, baseline_repeats=1)
        >>> result.summary["agents"]["oracle-eps0"]["turnbudget/Maze-Easy-v0"]["single_step_skill"]["mean"]
        1.0
    """
    config = _make_config(
        envs, agent, tasks, prefixes, kinds, budget_factor, budget_slack, repeats,
        baseline_repeats, seed, label,
    )  # fmt: skip
    progress, sealed = check_bool(progress, "progress"), check_bool(sealed, "sealed")
    if not check_bool(overwrite, "overwrite") and out is not None:
        _check_other_probes(Path(out), config)
    if out is not None:
        _check_result_paths(Path(out))
    n_bootstrap = check_n_bootstrap(n_bootstrap)
    backend_options = check_backend_options(backend_options)
    retries = check_retries(retries)
    backend = resolve_backend(backend, workers, backend_options, timeout)
    starts = TaskStarts("setback" in config.kinds)
    try:
        specs = plan_probes(config, starts)
    finally:
        starts.close()
    if not specs:
        raise ValueError(f"No probe could be planned for {list(config.envs)}: no task is solvable")
    runs = _runs(config, agent, repeats, baseline_repeats)
    for _, who, _, _ in runs:
        start_up(who, "preflight")  # (an LLM agent's server: asked once, before any probe)
    # an async (LLM) agent: many probes in flight; the baseline is driven as it is
    driven: list[tuple[str, Any, str, int]] = []
    done: dict[int, tuple[ProbeJob, dict[str, Any]]] = {}
    try:
        for label, who, role, reps in runs:
            if role == "agent":
                who = driven_form(who, concurrency=concurrency, sealed=sealed)
            driven.append((label, who, role, reps))
        jobs = _jobs(driven, specs, config)
        try:
            run_jobs(
                backend, AgentSet(tuple(r[1] for r in driven)), config, jobs,
                kind=ProbeEpisodes, serialize=False, retries=retries, on_failure=_failed,
                progress=progress, desc="probe", unit="probe",
                sink=lambda outcomes: done.update((job.index, (job, r)) for job, r in outcomes),
            )  # fmt: skip
        except EvaluationAborted as exc:  # (its "kept ... resume" is an evaluation's, not ours)
            raise EvaluationAborted(
                str(exc).removesuffix(KEPT_ON_ABORT) + "No probe result is saved (they are "
                "written when every probe has run); fix the cause and rerun to start again."
            ) from None
    finally:
        for (_, who, _, _), (_, wrapper, _, _) in zip(runs, driven, strict=False):
            if wrapper is not who:
                wrapper.close()
    outcomes = [done[j.index] for j in jobs]
    records = [{**_identity(j), **r} for j, r in outcomes if not r.get("failed_to_run")]
    failed = [r for _, r in outcomes if r.get("failed_to_run")]
    summary = summarize_probes(config.to_dict(), records, n_bootstrap=n_bootstrap)
    summary["failed_to_run"] = {
        label: sum(r["role"] == "agent" and r["agent"] == label for r in failed)
        for label in config.labels
    }
    # (the baseline's own key, unless a probed agent has its label: `validate` probes a
    # RandomAgent, and the baseline's failures were counted as that agent's)
    baseline_key = BASELINE if BASELINE not in config.labels else f"{BASELINE} (baseline)"
    summary["failed_to_run"][baseline_key] = sum(r["role"] == "baseline" for r in failed)
    if any(r["role"] == "agent" for r in failed):  # (what the skills would be either way)
        summary["failed_to_run_bounds"] = failure_bounds(config.to_dict(), records, failed)
    out_path = Path(out) if out is not None else None
    if out_path is not None:
        out_path.mkdir(parents=True, exist_ok=True)
        # The probes there before go first, their reports with them, and probe.json comes
        # last: a failure while these are written left this probe.json beside the other
        # probes' summary (which `turnbudget report` showed), and their probe_report.md
        # stayed beside this call's results.
        for name in (PROBE_CONFIG_FILE, *PROBE_RESULT_FILES):
            (out_path / name).unlink(missing_ok=True)
        write_jsonl(out_path / PROBES_FILE, records)
        if failed:
            write_jsonl(out_path / PROBE_FAILURES_FILE, failed)
        write_probe_summary(out_path, summary)
        write_json(out_path / PROBE_CONFIG_FILE, config.to_dict(), indent=2)
    return ProbeResult(config, records, summary, out_path, specs, failed)


def _check_result_paths(out: Path) -> None:
    """A ValueError, before any probe runs, when a file the results go to is a directory
    (the results replace what is there, which cannot be done to a directory: one named
    probes.jsonl failed the run after every probe had run, and nothing was saved)."""
    for name in (PROBE_CONFIG_FILE, *PROBE_RESULT_FILES):
        path = out / name
        if path.is_dir() and not path.is_symlink():
            raise ValueError(
                f"Cannot write the probe results to {brief(str(path), PATH_CHARS)}: it is a "
                "directory; move it, or probe into another directory"
            )


def _check_other_probes(out: Path, config: ProbeConfig) -> None:
    """A ValueError when ``out`` holds the results of probes other than ``config``'s, or
    results beside no probe.json (whose they are cannot be told: they were replaced)."""
    saved = out / PROBE_CONFIG_FILE
    if not saved.exists():
        held = [n for n in PROBE_RESULT_FILES if (out / n).exists() or (out / n).is_symlink()]
        if held:
            raise ValueError(
                f"`out` {out} holds {', '.join(held)} but no {PROBE_CONFIG_FILE}, so which "
                "probes they are the results of cannot be told: probe into another "
                "directory, or pass --overwrite (overwrite=True) to replace them"
            )
        return
    try:  # (a FIFO read with read_text blocked for ever, a link to /dev/zero filled the memory)
        with open_regular(saved) as f:
            text = f.read(MAX_JSON_BYTES + 1)  # (a sparse file of GiBs was read whole)
        theirs = json.loads(text) if len(text) <= MAX_JSON_BYTES else None
    except LogError:  # (not a regular file: named as such)
        raise
    except (OSError, ValueError, RecursionError):
        theirs = None
    ours = json.loads(json.dumps(config.to_dict()))  # (as probe.json reads back)
    if isinstance(theirs, dict):  # (probe.json holds `grants` since this release)
        theirs.setdefault("grants", ours["grants"])
    if theirs == ours:
        return
    differ = (
        sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
        if isinstance(theirs, dict)
        else ["all of it"]
    )
    if {"agents", "labels"} & set(differ):  # (`grants` follows from them: named once)
        differ = [k for k in differ if k != "grants"]
    raise ValueError(
        f"`out` {out} holds the results of other probes (its {PROBE_CONFIG_FILE} differs in "
        f"{', '.join(differ)}): probe into another directory, or pass --overwrite "
        "(overwrite=True) to replace them"
    )


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
    env_ids = env_id_tuple(envs)
    if not env_ids or not all(isinstance(e, str) and e for e in env_ids):
        raise ValueError(f"Expect `envs` to be env ids, got {envs!r}")
    if len(set(env_ids)) != len(env_ids):  # (as `evaluate`: each env's probes once)
        raise ValueError(f"Expect distinct env ids, got {list(env_ids)}")
    seeds = task_seeds(tasks)
    if not is_listlike(prefixes):
        raise ValueError(f"Expect `prefixes` to be fractions in [0, 1), got {brief(prefixes)}")
    fractions = tuple(itertools.islice(prefixes, MAX_PREFIXES + 1))  # (never an endless one)
    if len(fractions) > MAX_PREFIXES:
        raise ValueError(f"Expect at most {MAX_PREFIXES} `prefixes`, got more")
    if not fractions or not all(is_real(f) and 0.0 <= f < 1.0 for f in fractions):
        raise ValueError(f"Expect `prefixes` to be fractions in [0, 1), got {brief(prefixes)}")
    fractions = tuple(float(f) for f in fractions)
    if len(set(fractions)) != len(fractions):  # (as `--prefixes`: a repeat is a typo, not weight)
        raise ValueError(f"Expect distinct `prefixes`, got {brief(list(fractions))}")
    # (no set: its order, which orders the probes, changes between processes)
    listed = is_listlike(kinds) and not isinstance(kinds, AbstractSet)
    kinds_t = tuple(itertools.islice(kinds, len(PROBE_KINDS) + 1)) if listed else (None,)
    if any(k not in PROBE_KINDS for k in kinds_t) or len(set(kinds_t)) != len(kinds_t):
        raise ValueError(
            f"Expect `kinds` to be distinct kinds from {PROBE_KINDS}, got {brief(kinds)}"
        )
    if not (is_finite(budget_factor) and budget_factor >= 1.0):
        raise ValueError(f"Expect `budget_factor` to be a number >= 1, got {brief(budget_factor)}")
    for name, value, low in (
        ("budget_slack", budget_slack, 0), ("repeats", repeats, 1),
        ("baseline_repeats", baseline_repeats, 1),
    ):  # fmt: skip
        if not is_int(value) or value < low:
            raise ValueError(f"Expect `{name}` to be an int >= {low}, got {brief(value)}")
    agents = list(agent) if isinstance(agent, (list, tuple)) else [agent]
    if not agents:
        raise ValueError("Expect at least one agent to probe, got none")
    for i, each in enumerate(agents):
        check_agent(each, "agent" if len(agents) == 1 else f"agent[{i}]")
        refuse_team_only(each, "agent" if len(agents) == 1 else f"agent[{i}]")
    seed = check_seed(seed)
    if label is not None:
        label = check_label(label)
    if label is not None and len(agents) != 1:
        raise ValueError("Give `label` only when probing one agent")
    labels = (label,) if label is not None else tuple(_agent_name(a) for a in agents)
    if len(set(labels)) != len(labels):
        raise ValueError(f"Expect distinct agent names, got {list(labels)}")
    return ProbeConfig(
        labels=labels, envs=env_ids, agents=tuple(_agent_repr(a) for a in agents),
        tasks=seeds, prefixes=fractions, kinds=kinds_t, budget_factor=float(budget_factor),
        budget_slack=int(budget_slack), repeats=int(repeats),
        baseline_repeats=int(baseline_repeats), seed=int(seed),
        grants={lbl: g for lbl, a in zip(labels, agents, strict=True) if (g := grants(a))},
    )  # fmt: skip
