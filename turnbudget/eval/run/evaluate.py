"""`evaluate`: run an agent over env ids x task seeds x n episodes and score Pass@(K,T).

`evaluate` plans every episode up front from the configuration alone
(`turnbudget.eval.run.plan`), plays them on a backend
(`turnbudget.eval.run.backends`: this process, a local process pool, Ray)
through the episode driver (`turnbudget.eval.run.driver`, with
`EvaluationEpisodes`), writes per-step and per-episode JSONL records
(produced by `RecordStepOutcomes`, written by `turnbudget.records`) and
returns the Pass@(K,T) grids and the analysis. Reports (``report.md``,
``summary.json``, plots) are the caller's: `turnbudget.eval.report`.

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
  Injected errors are drawn per (task seed, repeat, turn) (``reset``
  option ``repeat``), so the n attempts at a task are independent and two
  agents on the same (task, repeat) face the same draws; ``error_draws=
  "shared"`` gives every repeat the task's one schedule instead.
  Results do not depend on the backend, the worker count or the order of
  execution; tables are built from records sorted by episode id, and the
  records drop the recorder's ``episode_index`` (a per-env-object counter) so
  the logs hold the same lines whatever the scheduling.
- **What agents see** (`turnbudget.eval.run.agent_view`: what a player
  would). Agents get a copy of the env's ``info``: the budget keys only on
  the turns the budget shows (``reveal``) or always for a ``budget_aware``
  agent (a hidden budget is hidden), injected errors without the oracle's
  distances, ``oracle_actions`` only with ``needs_oracle``, and
  ``executed_action``, the command the env ran on the previous turn. Batch
  agents know episodes by opaque ids with no budget in them.
- **Resume.** With ``out`` set, rerunning the same call skips the episodes
  already logged. Each episode's step lines are written before its episode
  line, which is what marks it complete; on resume, a torn last line and the
  steps of episodes that never completed are dropped before anything new is
  appended, so a killed run ends with no duplicated or missing episode. Resume
  deletes nothing else: a log it cannot account for (a corrupt line in the
  middle, a record that is not one of the run's) is refused with a
  `turnbudget.records.LogError` naming the file and line, and left as it is.
- **Faults.** An episode whose agent or env raises, whose worker dies (a
  killed process, a lost Ray node) or that runs past ``timeout`` seconds is
  rerun up to ``retries`` more times, then logged as *failed to run* (an
  episode record with ``failed_to_run: true`` and the error, no steps) and the
  run finishes. The analysis keeps those apart from the agent's failures
  (`turnbudget.eval.analysis`); rerunning the same call retries them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnbudget._checks import (
    PATH_CHARS,
    brief,
    check_agent,
    check_bool,
    check_dir_path,
    refuse_team_only,
)
from turnbudget.eval.analysis import ALL
from turnbudget.eval.run.backends import Backend, resolve_backend
from turnbudget.eval.run.driver import start_up
from turnbudget.eval.run.episodes import EvaluationEpisodes, check_envs
from turnbudget.eval.run.jobs import play_planned
from turnbudget.eval.run.lock import locks_run_dir
from turnbudget.eval.run.plan import (
    EpisodeSpec,
    EvalConfig,
    check_backend_options,
    check_retries,
    make_config,
    plan_episodes,
    read_config,
    record_plan,
)
from turnbudget.eval.run.sealed import driven_form
from turnbudget.records import (
    EPISODES_FILE,
    RUN_FILE,
    STEPS_FILE,
    EpisodeLog,
    read_jsonl,
)

__all__ = [
    "EPISODES_FILE",
    "RUN_FILE",
    "STEPS_FILE",
    "EpisodeSpec",
    "EvalConfig",
    "EvalResult",
    "evaluate",
    "load_run",
    "plan_episodes",
    "read_jsonl",
]


@dataclass
class EvalResult:
    """What `evaluate` returns: the configuration, the episode records and the summary.

    ``episodes`` holds the episode records sorted by episode id: a list when the run
    has no directory; with ``out``, an `EpisodeLog` (a sequence that reads
    ``episodes.jsonl`` when first used, and compares equal to a list of the same
    records), so a run of millions of episodes is summarised without holding them.
    The summary is summed as the episodes finish (a resumed run's earlier episodes are
    read from the log): it equals `turnbudget.eval.report.load_run_summary` of the run with
    the same ``n_bootstrap`` (the run's intervals are drawn from it; ``run.json`` does not
    keep it: ``turnbudget report`` draws the default 1000, as ``turnbudget eval`` does).
    """

    config: EvalConfig
    episodes: Sequence[dict[str, Any]]
    summary: dict[str, Any]
    out: Path | None = None
    n_run: int = 0  # episodes run by this call (the rest were resumed from the logs)
    steps: list[dict[str, Any]] = field(default_factory=list)  # in memory only when out is None

    def grid(self, group: str | None = None, mode: str | None = None) -> dict[str, Any]:
        """The summary's grid for an env group (an env id, or "all": every env, the default;
        with one env, its own) and mode (default: rerun when run, else truncate; "gap" is
        rerun minus truncate, with ``mode="both"``).

        Raises:
            ValueError: a group or mode this run has no grid of, naming those it has.
        """
        groups = self.summary["groups"]
        if group is None or (group == ALL and ALL not in groups and len(groups) == 1):
            group = ALL if ALL in groups else next(iter(groups))
        if not isinstance(group, str) or group not in groups:
            raise ValueError(
                f"Expect `group` to be one of this run's env groups {[*groups]}, got {brief(group)}"
            )
        modes = groups[group]
        if mode is None:
            mode = "rerun" if "rerun" in modes else "truncate"
        if not isinstance(mode, str) or mode not in modes:
            raise ValueError(
                f"Expect `mode` to be one of this run's modes {[*modes]}, got {brief(mode)}"
            )
        return modes[mode]

    def __repr__(self) -> str:
        # (the dataclass's own printed every episode and step record: about 1 MB for the
        # README's example, in a notebook cell or a REPL)
        # (the episode count from the summary: an EpisodeLog's len would read the log)
        summary = self.summary if isinstance(self.summary, Mapping) else {}
        return (
            f"EvalResult(label={summary.get('label')!r}, episodes={summary.get('n_episodes')}, "
            f"n_run={self.n_run}, steps in memory={len(self.steps)}, out={self.out!r})"
        )


@locks_run_dir  # one evaluation per output directory, its own
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
    backend: str | Backend | None = None,
    backend_options: dict[str, Any] | None = None,
    timeout: float | None = None,
    retries: int = 2,
    out: str | os.PathLike[str] | None = None,
    seed: int = 0,
    label: str | None = None,
    record_steps: bool = True,
    progress: bool = False,
    overwrite: bool = False,
    n_bootstrap: int = 1000,
    concurrency: int | None = None,
    error_draws: str = "per_repeat",
    sealed: bool = False,
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
        backend: where episodes run: a name from `list_backends` (``local``,
            ``pool``, ...) or a `Backend`; default ``local`` for one worker,
            else ``pool``; a `Backend` given here brings its own worker count.
            Results do not depend on it.
        backend_options: more arguments for the named backend's constructor,
            e.g. ``{"address": "auto"}`` for ``ray``.
        timeout: seconds one episode may run before it is stopped and counted
            as failed to run (None: no limit); a `Backend` instance keeps its own
            unless this is given.
        retries: how many more times an episode that failed to run is tried.
        out: a run directory for ``run.json``, ``episodes.jsonl`` and ``steps.jsonl``;
            an existing run there with the same settings resumes. (Its report is
            the caller's: `turnbudget.eval.report.write_run_summary` or ``build_report``.)
            A directory that is not a run's own is refused before anything is written
            (`turnbudget.eval.run.lock.check_not_foreign`): a training run or a policy, a
            summary.json or report.md of no report of ours, a folder of runs, or one inside a
            run's.
        seed: base of the agents' per-episode seeds (an int >= 0).
        label: the run's name in reports (default: the agent's name): printable text of
            at most 128 bytes of UTF-8 (`turnbudget._checks.check_label`).
        record_steps: also keep per-step records (needed by the step analysis).
        progress: show a progress bar on stderr.
        overwrite: discard a previous run in ``out`` instead of resuming it.
        n_bootstrap: bootstrap resamples for the confidence intervals (at most
            `turnbudget.eval.estimator.MAX_BOOTSTRAP`).
        concurrency: episodes in flight per process for an async agent (an
            LLM agent such as `ChatAgent`; default: the agent's own
            ``concurrency``), driven through `AsyncBatch` (`in_flight`); 1
            drives it one blocking call at a time. Results do not depend on it
            (given a deterministic server).
        error_draws: ``"per_repeat"`` (default): injected errors are drawn per
            (task seed, repeat, turn), so the n attempts at a task are
            independent while two agents on the same (task, repeat) face the
            same draws; ``"shared"``: every repeat of a task faces one schedule.
        sealed: run the agent in a process of its own that receives only its view
            of each turn (`turnbudget.eval.run.sealed.seal`), so it cannot reach
            the env, the oracle or a hidden budget; a process per worker, a few
            tens of microseconds per turn. Results do not depend on it (for an
            agent that plays by the rules). An agent sealed already (`seal`) is
            sealed whatever this says.
    """
    from turnbudget.eval.analysis import RunTally, summarize_run
    from turnbudget.eval.estimator import check_n_bootstrap

    # Every argument is checked before anything runs or is written (overwrite deletes).
    overwrite = check_bool(overwrite, "overwrite")
    progress = check_bool(progress, "progress")
    sealed = check_bool(sealed, "sealed")
    n_bootstrap = check_n_bootstrap(n_bootstrap)
    backend_options = check_backend_options(backend_options)
    config = make_config(
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
        error_draws=error_draws,
    )
    retries = check_retries(retries)
    backend = resolve_backend(backend, workers, backend_options, timeout)
    check_envs(config)
    check_agent(agent)
    refuse_team_only(agent)
    start_up(agent, "preflight")  # (an LLM agent's server: asked once, before any episode)
    given, agent = agent, driven_form(agent, concurrency=concurrency, sealed=sealed)
    specs = plan_episodes(config)
    # Summed as episodes finish (while the workers play on), not read back from the log after.
    tally: RunTally | None = RunTally(config)

    def count(episode: dict[str, Any]) -> None:
        nonlocal tally
        try:
            if tally is not None:
                tally.add(episode, checked=True)  # (made by the engine)
        except ValueError:  # (a backend that handed one over twice: the log reads it once)
            tally = None

    try:
        played = play_planned(
            backend, agent, config, specs, kind=EvaluationEpisodes,
            plan=record_plan(config), out=out, overwrite=overwrite,
            check_config=EvalConfig.from_dict, retries=retries, progress=progress,
            desc=config.label, on_episode=count,
        )  # fmt: skip
    finally:
        if agent is not given:  # the AsyncBatch or sealed proxy made here: close it
            agent.close()
    if tally is not None and played.n_run == tally.n_episodes == len(specs):
        summary = tally.summary(n_bootstrap=n_bootstrap)
    else:  # resumed (the calls before are in the log only), or a backend that sent a copy
        summary = summarize_run(config, played.stream(), n_bootstrap=n_bootstrap, checked=True)
    return EvalResult(
        config, played.episodes, summary, played.out, n_run=played.n_run, steps=played.records
    )


def load_run(out: str | os.PathLike[str]) -> tuple[EvalConfig, EpisodeLog]:
    """The configuration and the episode records of the run `evaluate` wrote in ``out``, both
    checked as they are read (`turnbudget.records.LogError` names a bad file and line); the
    records as an `EpisodeLog`: read when first used, or one at a time with its ``stream()``."""
    out = check_dir_path(out, "out")
    if out.exists() and not out.is_dir():  # (the OS's "Not a directory: .../run.json")
        raise ValueError(f"Expect `out` to be a run directory, got {brief(str(out), PATH_CHARS)}")
    config = read_config(out / RUN_FILE)
    return config, EpisodeLog(out / EPISODES_FILE, record_plan(config))
