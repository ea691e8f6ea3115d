"""Faults on the local and pool backends: a raising agent, a hanging one, a killed worker.

An episode that cannot be run is retried, then logged as *failed to run*, kept
out of every table, and the run finishes; every other episode is exactly what a
clean run gives. (The same for Ray is in test_ray.py, marker ``ray``.)
"""

from __future__ import annotations

import functools
import json
import operator
import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _faults import (
    CrashingAgent,
    ExitingAgent,
    HangingAgent,
    KillOnceOracle,
    QuitsWhenLosing,
    QuitsWhenWrong,
    RaisingAgent,
    ReadyOnlyHere,
    block_forever,
    seeds_of,
    timeout_clear_of,
)

from turnbudget.agents import OracleAgent, registry
from turnbudget.cli import main
from turnbudget.eval.analysis import summarize_run
from turnbudget.eval.run.backends import make_backend, run_with_retries
from turnbudget.eval.run.driver import Driver, EpisodeFailure
from turnbudget.eval.run.episodes import EvaluationEpisodes
from turnbudget.eval.run.evaluate import EPISODES_FILE, STEPS_FILE, evaluate
from turnbudget.eval.run.plan import make_config, plan_episodes
from turnbudget.records import read_jsonl

MAZE = "turnbudget/Maze-Easy-v0"
KEYQUEST = "turnbudget/KeyQuest-Easy-v0"
GRID = dict(ks=[1, 2], ts=[8, 16], n=2, tasks=3, n_bootstrap=20)
BAD = [(MAZE, 1, 0), (KEYQUEST, 2, 1)]  # (env id, task seed, repeat) of the faulty episodes


def records(out: Path) -> list[dict]:
    return read_jsonl(out / EPISODES_FILE)[0]


def clean_run(tmp_path: Path) -> dict[str, dict]:
    return timed_clean_run(tmp_path)[0]


def timed_clean_run(tmp_path: Path) -> tuple[dict[str, dict], float]:
    """The clean run's episodes by id, and the per-episode timeout that keeps them clear of it."""
    start = time.perf_counter()
    result = evaluate([MAZE, KEYQUEST], OracleAgent(0.3), out=tmp_path / "clean", **GRID)
    timeout = timeout_clear_of(time.perf_counter() - start)
    return {e["episode_id"]: e for e in result.episodes}, timeout


def check_failed_run(
    out: Path, clean: dict[str, dict], kind: str, attempts: int, result: Any = None
) -> set[str]:
    """Every planned episode logged once; the faulty ones as failed, the rest as the clean run;
    the report says so (and ``result``, `evaluate`'s, holds the same failures). Returns the
    failed episodes' errors."""
    from turnbudget.eval.report import build_report

    build_report(out, plots=False)
    episodes = records(out)
    ids = [e["episode_id"] for e in episodes]
    assert sorted(ids) == sorted(clean) and len(set(ids)) == len(ids)
    failed = {e["episode_id"]: e for e in episodes if e.get("failed_to_run")}
    assert {(e["env_id"], e["seed"], e["rep"]) for e in failed.values()} == set(BAD)
    for e in failed.values():
        assert e["failure"] == kind and e["attempts"] == attempts and "success" not in e
    for e in episodes:
        if e["episode_id"] not in failed:
            assert e == clean[e["episode_id"]]
    steps = {s["episode_id"] for s in read_jsonl(out / STEPS_FILE)[0]}
    assert not steps & set(failed)
    (summary,) = json.loads((out / "summary.json").read_text())["runs"].values()
    assert summary["failed_to_run"] == {"episodes": 2, "by_kind": {kind: 2}}
    # Each faulty task keeps 1 < max(K) = 2 episodes at T=16: it leaves the grid.
    assert summary["analysis"][MAZE]["failed_to_run"]["tasks_dropped"] == {
        "truncate": [f"{MAZE}|seed=1"]
    }
    assert summary["groups"][MAZE]["truncate"]["n_tasks"] == 2
    assert summary["groups"]["all"]["truncate"]["n_tasks"] == 4
    assert summary["analysis"]["all"]["episodes"] == 2 * 3 * 2 - 2
    assert "failed to run" in (out / "report.md").read_text()
    errors = {e["error"] for e in failed.values()}
    if result is not None:
        assert {e["error"] for e in result.episodes if e.get("failed_to_run")} == errors
    return errors


@pytest.mark.parametrize("backend,workers", [("local", 1), ("pool", 2)])
def test_an_agent_that_raises_fails_its_episodes_and_the_run_finishes(tmp_path, backend, workers):
    clean = clean_run(tmp_path)
    agent = RaisingAgent(0.3, seeds_of(0, BAD))
    out = tmp_path / backend
    result = evaluate(
        [MAZE, KEYQUEST], agent, out=out, backend=backend, workers=workers, retries=1, **GRID
    )
    check_failed_run(out, clean, "exception", attempts=2)
    assert "agent bug" in next(e for e in result.episodes if e.get("failed_to_run"))["error"]
    # Resuming retries exactly the failed episodes (they fail again) and duplicates nothing.
    again = evaluate(
        [MAZE, KEYQUEST], agent, out=out, backend=backend, workers=workers, retries=0, **GRID
    )
    assert again.n_run == 2
    assert [e["attempts"] for e in records(out) if e.get("failed_to_run")] == [1, 1]
    assert len(records(out)) == len(clean)


@pytest.mark.parametrize("backend,workers", [("local", 1), ("pool", 2)])
def test_an_agent_that_calls_sys_exit_fails_its_episodes_alike_on_every_backend(
    tmp_path, backend, workers
):
    """Once: the local run ended (SystemExit) while a pool counted a lost worker."""
    clean = clean_run(tmp_path)
    out = tmp_path / backend
    result = evaluate(
        [MAZE, KEYQUEST], ExitingAgent(0.3, seeds_of(0, BAD)), out=out, backend=backend,
        workers=workers, retries=1, **GRID,
    )  # fmt: skip
    assert check_failed_run(out, clean, "exception", attempts=2, result=result) == {
        "SystemExit: sys.exit(3) was called"
    }


class AgentsOwnInterrupt(BaseException):
    """An agent's own subclass of BaseException (neither SystemExit nor KeyboardInterrupt)."""


@pytest.mark.parametrize("backend,workers", [("local", 1), ("pool", 2)])
def test_an_agents_own_base_exception_fails_its_episodes_alike_on_every_backend(
    tmp_path, backend, workers
):
    """It ended a local run, and a pool's worker (lost, with a traceback), while a sealed
    agent's episode failed by its name."""
    clean = clean_run(tmp_path)
    out = tmp_path / backend
    agent = ExitingAgent(0.3, seeds_of(0, BAD), interrupt=AgentsOwnInterrupt)
    result = evaluate(
        [MAZE, KEYQUEST], agent, out=out, backend=backend, workers=workers, retries=1, **GRID
    )
    assert check_failed_run(out, clean, "exception", attempts=2, result=result) == {
        "AgentsOwnInterrupt"
    }


def test_a_keyboard_interrupt_in_an_agent_still_stops_a_local_run(tmp_path):
    agent = ExitingAgent(0.3, seeds_of(0, BAD), interrupt=KeyboardInterrupt)
    with pytest.raises(KeyboardInterrupt):
        evaluate([MAZE, KEYQUEST], agent, out=tmp_path / "run", retries=1, **GRID)


def test_a_keyboard_interrupt_an_agent_raises_in_a_pool_worker_fails_its_episode(tmp_path):
    """A pool's workers ignore Ctrl-C (it is the evaluator's), so a KeyboardInterrupt there is
    the agent's own raise: it killed the worker (lost, with a multiprocessing traceback),
    while a sealed agent's episode failed by its name. It now fails its episode alike."""
    clean = clean_run(tmp_path)
    out = tmp_path / "pool"
    agent = ExitingAgent(0.3, seeds_of(0, BAD), interrupt=KeyboardInterrupt)
    result = evaluate(
        [MAZE, KEYQUEST], agent, out=out, backend="pool", workers=2, retries=1, **GRID
    )
    assert check_failed_run(out, clean, "exception", attempts=2, result=result) == {
        "KeyboardInterrupt"
    }


@pytest.mark.timeout(600, method="thread")  # a guard: the hanging episodes end only by the timeout
@pytest.mark.parametrize(
    "backend,workers",
    [("local", 1), pytest.param("pool", 1, marks=pytest.mark.slow)],  # (pool: ~9 s of waiting)
)
def test_a_hanging_agent_hits_the_timeout(tmp_path, backend, workers):
    clean, timeout = timed_clean_run(tmp_path)
    out = tmp_path / backend
    evaluate(
        [MAZE, KEYQUEST], HangingAgent(0.3, seeds_of(0, BAD)), out=out, backend=backend,
        workers=workers, timeout=timeout, retries=1, **GRID,
    )  # fmt: skip
    check_failed_run(out, clean, "timeout", attempts=2)


class GuardedHangingAgent(HangingAgent):
    """Hangs on the chosen episodes as `HangingAgent` does, inside a guard that falls back to
    the oracle's command on any ``Exception`` (as agents that guard their client do), once an
    episode."""

    name = "guarded-hanging"

    def reset(self, seed: int | None = None) -> None:
        self.fell_back = False
        super().reset(seed)

    def act(self, observation: str, info: Any) -> str:
        if self.current in self.seeds and not self.fell_back:
            try:
                block_forever()
            except Exception:
                self.fell_back = True
        return OracleAgent.act(self, observation, info)


def test_an_agents_guard_against_exceptions_does_not_catch_the_timeout(tmp_path):
    """The local backend's timeout was an ``Exception``: the agent's ``except Exception``
    caught it and played on, so the episode ran past its timeout and was logged as played
    (a pool, which kills the worker, logged it as a timeout)."""
    clean, timeout = timed_clean_run(tmp_path)
    out = tmp_path / "local"
    evaluate(
        [MAZE, KEYQUEST], GuardedHangingAgent(0.3, seeds_of(0, BAD)), out=out, timeout=timeout,
        retries=1, **GRID,
    )  # fmt: skip
    check_failed_run(out, clean, "timeout", attempts=2)


class SwallowingHangingAgent(GuardedHangingAgent):
    """`GuardedHangingAgent` with a guard that catches everything (``except BaseException``),
    the timeout too."""

    name = "swallowing-hanging"

    def act(self, observation: str, info: Any) -> str:
        if self.current in self.seeds and not self.fell_back:
            try:
                block_forever()
            except BaseException:
                self.fell_back = True
        return OracleAgent.act(self, observation, info)


def test_an_agent_that_swallows_the_timeout_still_times_out(tmp_path):
    """An agent that caught the timeout itself and played on finished its episode past the
    timeout, and the local backend logged it as played in time."""
    clean, timeout = timed_clean_run(tmp_path)
    out = tmp_path / "local"
    evaluate(
        [MAZE, KEYQUEST], SwallowingHangingAgent(0.3, seeds_of(0, BAD)), out=out,
        timeout=timeout, retries=1, **GRID,
    )  # fmt: skip
    check_failed_run(out, clean, "timeout", attempts=2)


@pytest.mark.timeout(600, method="thread")  # a guard: the other worker waits for the replacement
def test_a_killed_pool_worker_costs_nothing(tmp_path):
    """SIGKILL a pool worker mid-chunk: its chunk is rerun, every episode is logged once,
    and the logs and summary are the clean run's."""
    clean = clean_run(tmp_path)
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    result = evaluate(
        [MAZE, KEYQUEST], KillOnceOracle(0.3, str(pid_dir), workers=2), out=tmp_path / "pool",
        backend="pool", workers=2, **GRID,
    )  # fmt: skip
    victim = int((pid_dir / "victim").read_text())
    assert not _alive(victim)  # it killed itself on its first command
    assert len(list(pid_dir.glob("[0-9]*"))) == 3  # and its replacement played too
    assert {e["episode_id"]: e for e in result.episodes} == clean
    assert result.summary["failed_to_run"]["episodes"] == 0


def test_the_runner_turns_exceptions_into_failures():
    config = make_config(
        MAZE, RaisingAgent(0.0, seeds_of(0, [(MAZE, 0, 1)])), ks=[1], ts=[8], n=2, tasks=1,
        mode="auto", reveal=None, errors=None, seed=0, label=None, record_steps=True,
    )  # fmt: skip
    specs = plan_episodes(config)
    runner = Driver(RaisingAgent(0.0, seeds_of(0, [(MAZE, 0, 1)])), config, kind=EvaluationEpisodes)
    ok, bad = runner.run(specs)
    assert ok[0]["success"] and isinstance(bad, EpisodeFailure)
    assert bad.kind == "exception" and bad.error.startswith("RuntimeError: agent bug")
    # The retry loop gives up after 1 + retries attempts and yields a failed record last.
    make_runner = functools.partial(Driver, kind=EvaluationEpisodes)
    with make_backend("local").start(
        runner.agents[0], config, serialize=False, runner=make_runner
    ) as backend:
        chunks = list(run_with_retries(backend, specs, retries=3))
    assert chunks[-1][0][0]["failed_to_run"] and chunks[-1][0][0]["attempts"] == 4
    summary = summarize_run(config, [c[0][0] for c in chunks], n_bootstrap=10)
    assert summary["failed_to_run"]["episodes"] == 1
    assert summary["analysis"][MAZE]["episodes"] == 1
    with pytest.raises(ValueError, match="retries"):
        list(run_with_retries(backend, specs, retries=-1))
    with pytest.raises(ValueError, match="timeout"):
        make_backend("pool", timeout=0)


def test_a_pool_worker_that_died_while_idle_is_replaced_before_it_takes_a_chunk():
    """Only busy workers were watched: a worker killed between two passes (the OOM killer,
    an outside kill) was handed the next pass's chunk, and the send's BrokenPipeError ended
    the whole run. It is replaced, and its chunk runs."""
    config = make_config(
        MAZE, OracleAgent(0.0), ks=[1], ts=[8], n=2, tasks=2, mode="auto", reveal=None,
        errors=None, seed=0, label=None, record_steps=False,
    )  # fmt: skip
    specs = plan_episodes(config)
    make_runner = functools.partial(Driver, kind=EvaluationEpisodes)
    with make_backend("pool", workers=2).start(
        OracleAgent(0.0), config, serialize=False, runner=make_runner
    ) as backend:
        first = [o for chunk in backend.run(specs) for o in chunk]
        for worker in backend._procs._procs:  # both idle now: one dies, and is seen dead
            worker.kill()
            worker.join()
            break
        again = [o for chunk in backend.run(specs) for o in chunk]
    assert len(again) == len(first) == 4
    assert not any(isinstance(o, EpisodeFailure) for o in again)
    key = operator.itemgetter("episode_id")
    assert sorted((o[0] for o in again), key=key) == sorted((o[0] for o in first), key=key)


def test_a_run_where_everything_fails_stops_early(tmp_path):
    """25 first attempts failing in a row (a server down, say) stop the run instead of
    retrying every episode; what finished is kept for the resume."""
    from turnbudget.eval.run.backends import ABORT_AFTER, EvaluationAborted

    everything = [(MAZE, task, rep) for task in range(20) for rep in range(2)]
    agent = RaisingAgent(0.3, seeds_of(0, everything[2:]))  # two episodes still work
    with pytest.raises(EvaluationAborted, match=f"{ABORT_AFTER} episodes in a row"):
        evaluate(MAZE, agent, ks=[1, 2], ts=[8], n=2, tasks=20, out=tmp_path / "run")
    assert len(records(tmp_path / "run")) == 2


def test_one_task_that_always_fails_does_not_stop_the_run(tmp_path):
    """Every episode of one task failing (n x |T| = 32 of them, next to each other in the plan)
    stopped a local run, and every resume of it, where a pool run that scheduled them apart
    finished: one bad task is the agent's or the task's, not a broken run."""
    bad_task = [(MAZE, 3, rep) for rep in range(8)]
    kwargs = dict(ks=[1, 4], ts=[5, 10, 20, 40], n=8, tasks=6, mode="rerun", n_bootstrap=0)
    for attempt in range(2):  # (and its resume retries them, then finishes)
        evaluate(MAZE, RaisingAgent(0.3, seeds_of(0, bad_task)), out=tmp_path / "run", **kwargs)
        episodes = records(tmp_path / "run")
        failed = [e for e in episodes if e.get("failed_to_run")]
        assert len(failed) == 32 and {e["seed"] for e in failed} == {3}, attempt
        assert len(episodes) == 6 * 8 * 4


def test_two_crashing_episodes_do_not_stop_a_pool_run(tmp_path):
    """A lost worker failed its whole chunk (16 episodes here), and each counted toward the
    25 failures in a row that stop a run: two crashing episodes in two chunks stopped it, and
    every rerun of the same command, with nothing logged."""
    crashing = [(MAZE, 0, 0), (MAZE, 16, 0)]  # (the first episodes of the first two chunks)
    agent = CrashingAgent(0.0, seeds_of(0, crashing))
    result = evaluate(
        MAZE, agent, ks=[1], ts=[8], n=1, tasks=128, backend="pool", workers=1,
        out=tmp_path / "run", n_bootstrap=0,  # (the retries rerun chunk-mates in smaller chunks)
    )  # fmt: skip
    episodes = records(tmp_path / "run")
    failed = sorted(e["seed"] for e in episodes if e.get("failed_to_run"))
    assert len(episodes) == 128 and failed == [0, 16]
    assert result.summary["failed_to_run"]["by_kind"] == {"worker_lost": 2}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("backend,workers", [("local", 1), ("pool", 2)])
def test_a_failing_batch_call_costs_only_the_episode_that_fails(tmp_path, backend, workers):
    """act_batch raising takes its batch mates down; each is replayed alone, so only the
    faulty episode fails to run, and every other one is the clean run's."""
    from _faults import BatchRaisingAgent

    clean = clean_run(tmp_path)
    out = tmp_path / backend
    evaluate(
        [MAZE, KEYQUEST], BatchRaisingAgent(0.3, seeds_of(0, BAD)), out=out, backend=backend,
        workers=workers, retries=1, **GRID,
    )  # fmt: skip
    check_failed_run(out, clean, "exception", attempts=2)


@pytest.mark.slow  # (it waits out two or three timeouts clear of a clean run: ~15 s)
@pytest.mark.timeout(600, method="thread")  # a guard: the stuck batch call ends only by the timeout
@pytest.mark.parametrize("backend,workers", [("local", 1), ("pool", 1), ("pool", 2)])
def test_a_hanging_batch_call_times_out_only_its_episode(tmp_path, backend, workers):
    """The local backend keeps a batch agent's slots full and gives each episode its own
    deadline: a batch call stuck on one episode hits the timeout, its batch mates are
    replayed alone, and only the stuck episode fails to run. A pool's worker cannot say
    which episode of its chunk hung: its chunk failed whole (and the retry batched the
    innocent episodes with the stuck one again); each unfinished one is now played again
    in a chunk of its own."""
    from _faults import BatchHangingAgent

    clean, timeout = timed_clean_run(tmp_path)
    out = tmp_path / backend
    evaluate(
        [MAZE, KEYQUEST], BatchHangingAgent(0.3, seeds_of(0, BAD)), out=out, backend=backend,
        workers=workers, timeout=timeout, retries=1, **GRID,
    )  # fmt: skip
    check_failed_run(out, clean, "timeout", attempts=2)


@pytest.mark.timeout(300, method="thread")  # a guard: the run spun for ever once
@pytest.mark.parametrize("backend,workers", [("local", 1), ("pool", 2)])
def test_a_batch_agents_end_episode_that_raises_fails_only_that_episode(tmp_path, backend, workers):
    """Its slot was never freed (the run spun for ever once every slot was lost, or failed
    with a ValueError under a timeout), its batch mates were replayed, and the episode was
    logged as a success."""
    from _faults import BatchEndRaisingAgent

    clean = clean_run(tmp_path)
    out = tmp_path / backend
    result = evaluate(
        [MAZE, KEYQUEST], BatchEndRaisingAgent(0.3, seeds_of(0, BAD), max_batch_size=2),
        out=out, backend=backend, workers=workers, retries=1, timeout=600, **GRID,
    )  # fmt: skip
    assert check_failed_run(out, clean, "exception", attempts=2, result=result) == {
        "RuntimeError: end_episode failed"
    }


class ReadyWhenReset(OracleAgent):
    """Keeps a flag named as the driver's optional ``ready()`` hook."""

    ready = False

    def reset(self, seed=None):
        super().reset(seed)
        self.ready = True


@pytest.mark.parametrize("backend,workers", [("local", 1), ("pool", 2)])
def test_an_agents_own_attribute_named_ready_is_no_hook(tmp_path, backend, workers):
    """The driver called it: "'bool' object is not callable" ended a local run (a pool's
    workers failed to start), or failed every episode after the first."""
    clean = clean_run(tmp_path)
    result = evaluate(
        [MAZE, KEYQUEST], ReadyWhenReset(0.3), backend=backend, workers=workers, **GRID
    )
    assert {e["episode_id"]: e for e in result.episodes} == clean


def test_a_crashing_episode_costs_only_itself_even_without_retries(tmp_path):
    """A pool worker sent its chunk's outcomes at the chunk's end: one episode crashing
    it (retries=0) logged the whole chunk as failed to run, the episodes it had finished
    and those it had not started. Now only the crashing one is; the rest are the clean run's."""
    crashing = [(MAZE, 5, 0)]  # (mid-chunk: chunks of 8 episodes here)
    plan = dict(ks=[1], ts=[8], n=1, tasks=64, n_bootstrap=0)
    clean = {e["episode_id"]: e for e in evaluate(MAZE, OracleAgent(0.0), **plan).episodes}
    result = evaluate(
        MAZE, CrashingAgent(0.0, seeds_of(0, crashing)), backend="pool", workers=1,
        retries=0, out=tmp_path / "run", **plan,
    )  # fmt: skip
    episodes = records(tmp_path / "run")
    assert sorted(e["episode_id"] for e in episodes) == sorted(clean)
    failed = [e for e in episodes if e.get("failed_to_run")]
    assert [(e["seed"], e["failure"], e["attempts"]) for e in failed] == [(5, "worker_lost", 1)]
    for e in episodes:
        if not e.get("failed_to_run"):
            assert e == clean[e["episode_id"]]
    assert result.summary["failed_to_run"]["episodes"] == 1


def test_an_agent_that_cannot_get_ready_in_a_pool_worker_is_named(tmp_path, capsys):
    """The worker died with a traceback and the run said only "A pool worker failed to start
    (exit code 1); run with the local backend to see the error": now the error names the
    agent and what it raised, and the workers print no traceback."""
    from turnbudget.eval.run.backends import WorkersUnavailable

    with pytest.raises(WorkersUnavailable) as raised:
        evaluate(MAZE, ReadyOnlyHere(), ks=[1], ts=[4], tasks=4, workers=2, out=tmp_path / "r")
    message = str(raised.value)
    assert "'oracle-eps0'" in message and "RuntimeError: no license server" in message, message
    assert "Traceback" not in capsys.readouterr().err


class ReadyFailsOnCall(OracleAgent):
    """An agent whose ``ready()`` raises on its ``fail_on``-th call (counted on the instance)."""

    def __init__(self, fail_on: int) -> None:
        super().__init__(0.0)
        self.fail_on, self.calls = fail_on, 0

    def ready(self) -> None:
        self.calls += 1
        if self.calls == self.fail_on:
            raise RuntimeError("model not loaded")


def test_ready_is_called_as_the_agent_guide_says_on_the_local_backend(tmp_path):
    """docs/guides/agents.md: ``ready()`` runs when the driver is built (a raise ends the run
    with the agent's own error) and before each episode (a raise fails that episode's
    attempt, which is retried like an exception from ``act``)."""
    with pytest.raises(RuntimeError, match="model not loaded"):
        evaluate(MAZE, ReadyFailsOnCall(1), ks=[1], ts=[4], tasks=2, out=tmp_path / "a")
    agent = ReadyFailsOnCall(3)  # build, first episode, then the second episode's call
    result = evaluate(MAZE, agent, ks=[1], ts=[4], tasks=2, out=tmp_path / "b")
    assert agent.calls == 1 + 2 + 1  # once built, once per episode, once more for the retry
    assert result.summary["failed_to_run"]["episodes"] == 0
    evaluate(MAZE, ReadyFailsOnCall(0), ks=[1], ts=[4], tasks=2, out=tmp_path / "clean")
    assert records(tmp_path / "b") == records(tmp_path / "clean")  # the retry played it whole


class HangsInReadyFrom(OracleAgent):
    """An agent whose ``ready()`` blocks for good from its ``from_call``-th call on."""

    name = "hangs-in-ready-from"

    def __init__(self, from_call: int) -> None:
        super().__init__(0.0)
        self.from_call, self.calls = from_call, 0

    def ready(self) -> None:
        from _faults import block_forever

        self.calls += 1
        if self.calls >= self.from_call:
            block_forever()


@pytest.mark.timeout(300, method="thread")  # (a guard: the old code waited for ever)
@pytest.mark.parametrize("hook", ["ready", "preflight"])
def test_an_agent_in_process_that_hangs_in_ready_or_preflight_is_stopped_by_name(
    hook, monkeypatch, tmp_path
):
    """On the local backend, an agent in process whose ready() or preflight() hung stalled
    the whole run for ever, --timeout or not (both run outside an episode's clock); a
    sealed one's, and a pool worker's start, had READY_SECONDS. Now it has the same: when
    the driver is built or before the run, the run ends naming the agent; before an
    episode, that episode fails, as when ready() raises there."""
    from _faults import HangsInPreflight, HangsInReady

    from turnbudget.eval.run import sealed
    from turnbudget.eval.run.driver import AgentNotReady

    monkeypatch.setattr(sealed, "READY_SECONDS", 1.0)
    handler = signal.getsignal(signal.SIGALRM)
    agent = (HangsInReady if hook == "ready" else HangsInPreflight)(0.0)
    says = rf"The agent '{agent.name}' did not return from {hook}\(\) in 1s"
    with pytest.raises(AgentNotReady, match=says):
        evaluate(MAZE, agent, ks=[1], ts=[4], tasks=1, n_bootstrap=0, out=tmp_path / "run")
    assert signal.getsignal(signal.SIGALRM) is handler  # (put back, and disarmed)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    if hook == "ready":  # (built, one episode, then the second's call hangs: it fails)
        result = evaluate(MAZE, HangsInReadyFrom(3), ks=[1], ts=[4], tasks=2, retries=0,
                          n_bootstrap=0)  # fmt: skip
        [failed] = [e for e in result.episodes if e.get("failed_to_run")]
        assert "did not return from ready() in 1s" in failed["error"], failed


def test_an_agents_start_up_hook_leaves_a_timer_of_the_callers_alone():
    """`start_up` bounds a hook in process with SIGALRM, but not under a timer the caller
    armed (its own clock, or the local backend's): that timer runs on, untouched."""
    from turnbudget.eval.run.driver import start_up

    agent = ReadyFailsOnCall(0)  # (a ready() that returns)
    previous = signal.signal(signal.SIGALRM, lambda *_: None)
    signal.setitimer(signal.ITIMER_REAL, 3600)
    try:
        start_up(agent, "ready")
        assert agent.calls == 1 and signal.getitimer(signal.ITIMER_REAL)[0] > 3000
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class ForksThenDies(OracleAgent):
    """The oracle, whose first command in the process that claims ``dir/victim`` forks a
    helper (it holds a copy of every pipe its worker holds) and then ends that worker. The
    helper lives until ``dir/stop`` exists, or gives up after 300 s (``dir/gave-up``)."""

    def __init__(self, directory: str):
        super().__init__(0.0)
        self.dir = Path(directory)

    def act(self, observation, info):
        from _faults import claim

        if claim(self.dir / "victim"):
            if os.fork() == 0:
                end = time.monotonic() + 300
                while not (self.dir / "stop").exists():
                    if time.monotonic() > end:
                        (self.dir / "gave-up").write_text("")
                        break
                    time.sleep(0.05)
                os._exit(0)
            os._exit(3)
        return super().act(observation, info)


@pytest.mark.timeout(600, method="thread")  # a guard: the run waited for the helper once
def test_a_dead_worker_is_seen_while_a_process_it_forked_lives(tmp_path):
    """A pool worker's death was seen through pipes (its results', multiprocessing's
    sentinel) that a process it forked held open too: the run waited for that process to
    end (for good, for a server). Now it goes on at once."""
    try:
        result = evaluate(MAZE, ForksThenDies(str(tmp_path)), ks=[1], ts=[8], tasks=8,
                          workers=2, n_bootstrap=0)  # fmt: skip
        assert not (tmp_path / "gave-up").exists()  # (the run did not wait for the helper)
    finally:
        (tmp_path / "stop").write_text("")
    assert len(result.episodes) == 8 and result.summary["failed_to_run"]["episodes"] == 0


def test_a_task_whose_every_episode_failed_is_listed_as_dropped(tmp_path):
    """A task none of whose episodes ran has no tally, and was missing from ``tasks_dropped``
    (2 of 5 tasks dropped: ``[]`` and ``n_tasks`` 3), so nothing said which tasks the grid
    left out."""
    every_episode_of_task_1 = [(MAZE, 1, 0), (MAZE, 1, 1), (MAZE, 2, 0)]
    agent = RaisingAgent(0.3, seeds_of(0, every_episode_of_task_1))
    result = evaluate(MAZE, agent, retries=0, out=tmp_path / "run", **GRID)
    failures = result.summary["analysis"][MAZE]["failed_to_run"]
    assert failures["episodes"] == 3
    # task 1: no episode ran; task 2: one of the two K = 2 needs
    assert failures["tasks_dropped"] == {"truncate": [f"{MAZE}|seed=1", f"{MAZE}|seed=2"]}
    assert result.summary["groups"][MAZE]["truncate"]["n_tasks"] == 1


def test_failures_that_follow_the_outcome_are_bounded(tmp_path):
    """An agent that raises when it is losing fails to run exactly its lost episodes: the grid
    over the episodes that ran then counts only wins. ``bounds`` (each failure counted a loss,
    then a success) holds what the same agent scores when it plays on, and the report says so."""
    grid = dict(ks=[1], ts=[8, 16], n=2, tasks=12, n_bootstrap=50)
    honest = evaluate(MAZE, OracleAgent(0.85), **grid)
    quitter = evaluate(MAZE, QuitsWhenLosing(0.85, 16), retries=0, out=tmp_path / "q", **grid)
    truth = np.array(honest.summary["groups"][MAZE]["truncate"]["mean"][0])
    failures = quitter.summary["analysis"][MAZE]["failed_to_run"]
    assert 0 < failures["episodes"] < 24 and 0 < truth[1] < 1
    ran_only = quitter.summary["groups"][MAZE]["truncate"]["mean"][0]
    assert ran_only[1] == 1.0 > truth[1]  # (the hazard: every episode that ran is a win)
    bounds = failures["bounds"]["truncate"]
    low, high = (np.array(bounds[b]["mean"][0]) for b in ("as_losses", "as_successes"))
    assert bounds["as_losses"]["n_tasks"] == 12  # (every task: none dropped)
    # Its wins within 15 turns are the honest agent's, the same episodes: at T = 8 the losses
    # bound is the truth itself; at T = 16 it misses only wins on the 16th turn.
    assert low[0] == pytest.approx(truth[0]) and low[1] <= truth[1] <= high[1]
    assert high[1] == 1.0
    for bound in bounds.values():
        assert all(lo <= m <= hi for lo, m, hi in zip(bound["low"][0], bound["mean"][0],
                                                       bound["high"][0]))  # fmt: skip
    from turnbudget.eval.report import build_report

    build_report(tmp_path / "q", plots=False)
    report = (tmp_path / "q" / "report.md").read_text()
    assert f"{low[1]:.2f}" in report and "counted as losses" in report


def test_eval_prints_the_bounds_of_a_run_with_failures(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(registry._REGISTRY, "quitter", lambda arg: QuitsWhenLosing(0.85, 16))
    run = ["eval", "--env", "Maze-Easy-v0", "--agent", "quitter", "--k", "1", "--t", "8,16",
           "--tasks", "6", "--retries", "0", "--no-plots", "--out", str(tmp_path / "q")]  # fmt: skip
    assert main(run) == 0
    printed = capsys.readouterr().out
    bounds = json.loads((tmp_path / "q" / "summary.json").read_text())["runs"]
    (bounds,) = (run["analysis"][MAZE]["failed_to_run"]["bounds"] for run in bounds.values())
    low = bounds["truncate"]["as_losses"]["mean"][0]
    assert "Were they losses or successes" in printed
    assert f"counted as losses T=8: {low[0]:.2f}" in printed


def test_probes_that_fail_on_wrong_answers_are_bounded(tmp_path, capsys):
    """An agent that raises where it would answer wrong fails to run exactly its wrong
    answers: the single-step skill over the probes that ran is 1. ``failed_to_run_bounds``
    (each failed probe counted against the agent, then for it) holds what the same agent
    scores when it answers, and the report and the command line say so."""
    from turnbudget.eval import probe
    from turnbudget.eval.report import write_probe_report

    small = dict(tasks=4, n_bootstrap=0, baseline_repeats=1)
    honest = probe(MAZE, [OracleAgent(0.6)], **small).summary
    quitter = probe(MAZE, [QuitsWhenWrong(0.6)], retries=0, out=tmp_path, **small)
    label = "oracle-eps0.6"
    truth = honest["agents"][label][MAZE]["single_step_skill"]["mean"]
    ran = quitter.summary["agents"][label][MAZE]["single_step_skill"]["mean"]
    assert quitter.summary["failed_to_run"][label] > 0 and ran == 1.0 > truth
    bounds = quitter.summary["failed_to_run_bounds"][label][MAZE]
    against, for_ = bounds["single_step_skill"]
    assert against <= truth <= for_ == 1.0
    low, high = bounds["recovery_specific_skill"]
    assert low <= high
    write_probe_report(tmp_path, json.loads((tmp_path / "probe_summary.json").read_text()))
    report = (tmp_path / "probe_report.md").read_text()
    assert f"single step skill {against:.2f} to {for_:.2f}" in report


def test_a_probe_contrast_with_failures_is_bounded_by_them():
    """compare_probes read only the probes that ran: an ε-oracle that raises where it would
    answer wrong gained +0.47 [+0.10, +0.70] in single-step skill over the same ε-oracle
    answering, a clear gain over itself. With ``failed``, each gain's interval spans its
    bounds (the other's failed probes counted against it, then for it): no clear gain, and
    the bounds hold the honest gain, 0."""
    from turnbudget.eval import compare_probes, probe

    class Quitter(QuitsWhenWrong):
        @property
        def name(self) -> str:
            return "quitter"

    result = probe(MAZE, [OracleAgent(0.5), Quitter(0.5)], tasks=20, seed=0, retries=0,
                   n_bootstrap=200)  # fmt: skip
    config = result.config.to_dict()
    assert result.failed
    blind = compare_probes(config, result.records, "oracle-eps0.5", "quitter", n_bootstrap=200)
    assert blind[MAZE]["single_step_skill"]["low"] > 0  # the hazard: a "clear" gain
    gains = compare_probes(config, result.records, "oracle-eps0.5", "quitter",
                           n_bootstrap=200, failed=result.failed)  # fmt: skip
    single = gains[MAZE]["single_step_skill"]
    assert single["bounded_by_failures"] and single["low"] < 0 < single["high"]
    # (answered, on the same seeds, the gain is 0: between the bounds)
    assert single["bounds"]["against_other"]["mean"] <= 0.0 < single["bounds"]["for_other"]["mean"]
    assert single["bounds"]["for_other"] == blind[MAZE]["single_step_skill"]
    honest = compare_probes(config, result.records, "oracle-eps0.5", "oracle-eps0.5",
                            n_bootstrap=200, failed=result.failed)  # fmt: skip
    assert "bounds" not in honest[MAZE]["single_step_skill"]  # (no failure of theirs)
    with pytest.raises(ValueError, match="failed"):
        compare_probes(config, result.records, "oracle-eps0.5", "quitter", failed="x")


def test_probe_prints_the_bounds_of_probes_that_failed(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(registry._REGISTRY, "quitwrong", lambda arg: QuitsWhenWrong(0.6))
    argv = ["probe", "--env", "Maze-Easy-v0", "--agent", "quitwrong", "--tasks", "3",
            "--retries", "0", "--out", str(tmp_path / "p")]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    summary = json.loads((tmp_path / "p" / "probe_summary.json").read_text())
    (groups,) = summary["failed_to_run_bounds"].values()
    against, for_ = groups[MAZE]["single_step_skill"]
    assert "Counted against the agent, then for it" in printed
    assert f"Maze-Easy-v0: single step skill {against:.2f} to {for_:.2f}" in printed


def test_a_comparison_with_failures_is_judged_by_their_bounds():
    """The quitter's Pass@(1,16) over the episodes that ran (1.00) made it 'clearly' better
    than the same agent playing on (0.17). A verdict now holds only with the better run's
    failures counted as losses and the worse run's as successes; a better agent whose one
    failure has nothing to do with the outcome keeps its verdict."""
    import copy

    from turnbudget.eval.analysis import compare_runs

    grid = dict(ks=[1], ts=[8, 16], n=2, tasks=12, n_bootstrap=50)
    honest = evaluate(MAZE, OracleAgent(0.85), **grid).summary
    quitter = evaluate(MAZE, QuitsWhenLosing(0.85, 16), retries=0, **grid).summary
    (row,) = compare_runs({"honest": honest, "quitter": quitter})
    assert row["better"] == "quitter" and row["bounded_by_failures"]
    assert not row["clear_at_max_t"]
    unbounded = copy.deepcopy(quitter)  # (a summary without the bounds: the verdict before)
    del unbounded["analysis"][MAZE]["failed_to_run"]["bounds"]
    (before,) = compare_runs({"honest": honest, "quitter": unbounded})
    assert before["clear_at_max_t"] and not before["bounded_by_failures"]
    good = RaisingAgent(0.0, seeds_of(0, [(MAZE, 1, 0)]))  # (one failure, outcome aside)
    sound = evaluate(MAZE, good, retries=0, **grid).summary
    assert sound["failed_to_run"]["episodes"] == 1
    (row,) = compare_runs({"honest": honest, "sound": sound})
    assert row["better"] == "sound" and row["bounded_by_failures"] and row["clear_at_max_t"]


def test_a_run_that_cannot_be_scored_names_what_failed_its_episodes():
    """Every episode failed: the error said only how many, by kind, and "rerun the same
    command", which from Python (no command, no `out`) and for an agent's bug cannot help."""

    class ForgotTheSeed:
        def reset(self):  # (the protocol's reset takes the seed)
            pass

        def act(self, observation, info):
            return "look"

    with pytest.raises(ValueError) as error:
        evaluate(MAZE, ForgotTheSeed(), ks=[1], ts=[5], tasks=2, retries=0)
    message = str(error.value)
    assert "the last with TypeError: " in message and "reset()" in message
    assert "fix what failed them" in message


@pytest.mark.parametrize("backend", ["local", "pool"])
def test_an_env_that_fails_to_close_costs_no_result(backend, caplog):
    """The local backend raised the env's close() error after the last episode, and a run
    without `out` lost every result, where a pool run returned them."""
    from turnbudget.registration import register_game

    register_game("TestCloseRaisingMaze-v0", "_faults:CloseRaisingMaze", 30, difficulty="easy")
    result = evaluate(
        "turnbudget/TestCloseRaisingMaze-v0", OracleAgent(0.0), ks=[1], ts=[30], tasks=2,
        backend=backend, n_bootstrap=0,
    )  # fmt: skip
    assert result.n_run == 2 and result.grid()["mean"] == [[1.0]]


class _ObserveRaises(OracleAgent):
    """The oracle, but its ``observe`` raises: every probe with forced opening turns fails."""

    name = "observe-raises"

    def observe(self, observation, info, executed):
        raise RuntimeError("observe failed")


def test_a_failed_probe_of_a_pair_that_had_no_error_to_inject_is_left_out_of_the_bounds():
    """KeyQuest has states where no error of a kind fits (the pair is skipped): such a probe
    still plays its forced opening turns, and failing there gave it no outcome to bound.
    The bounds did arithmetic on its None distance: a TypeError after every probe had run,
    and nothing was written."""
    from turnbudget.eval import compare_probes, probe
    from turnbudget.eval.probes.summary import failure_bounds

    result = probe("turnbudget/KeyQuest-Easy-v0", _ObserveRaises(0.0), tasks=3, retries=0,
                   n_bootstrap=0)  # fmt: skip
    skipped = [r for r in result.failed if r["probe"] != "single" and r["distance_after"] is None]
    assert skipped  # (the case above)
    config = result.config.to_dict()
    bounds = failure_bounds(config, result.records, result.failed)
    assert set(bounds) == {"observe-raises"}
    compare_probes(config, result.records, "observe-raises", "observe-raises",
                   n_bootstrap=0, failed=result.failed)  # fmt: skip


@pytest.mark.timeout(300, method="thread")  # (a guard: the old code waited for ever)
def test_a_pool_worker_whose_agent_hangs_in_ready_is_given_up(monkeypatch):
    """The pool waited for each worker's "ready" with no deadline: an agent whose ready()
    hung in the worker stalled the whole run, --timeout or not. (Its agent is deaf to
    SIGALRM: the worker's own bound of ready(), `start_up`, cannot stop it, only this.)"""
    from _faults import HangsInReadyDeafToAlarms

    from turnbudget.eval.run import backends, sealed
    from turnbudget.eval.run.backends import WorkersUnavailable

    monkeypatch.setattr(sealed, "START_SECONDS", 0.5)  # (read when the pool starts)
    monkeypatch.setattr(sealed, "READY_SECONDS", 0.5)
    monkeypatch.setattr(backends, "WORKER_START_SECONDS", 1.0)
    with pytest.raises(WorkersUnavailable, match=r"did not become ready in 2s.*'hangs-in-ready'"):
        evaluate(MAZE, HangsInReadyDeafToAlarms(0.0), backend="pool", workers=1, ks=[1],
                 ts=[4], tasks=1, n_bootstrap=0, timeout=5)  # fmt: skip


@pytest.mark.timeout(300, method="thread")  # (a guard: the old code waited for ever)
@pytest.mark.parametrize("then,kind", [("hangs", "timeout"), ("dies", "worker_lost")])
def test_a_pool_worker_that_sends_part_of_an_outcome_fails_only_its_episode(then, kind, tmp_path):
    """The pool read an outcome with ``recv``, which reads a whole frame once any of it is
    there: a worker that sent a frame's length and a few bytes, then nothing, held the run
    for ever, whatever its timeout (stopped mid-send; or killed while a process it forked
    held its pipe, which a whole frame's reader saw end: `ForksThenDies`)."""
    from _faults import SendsPartOfAnOutcome

    agent = SendsPartOfAnOutcome(seeds_of(0, [(MAZE, 1, 0)]), then, str(tmp_path))
    try:
        result = evaluate(MAZE, agent, ks=[1], ts=[8], tasks=2, backend="pool", workers=1,
                          timeout=2, retries=0, n_bootstrap=0)  # fmt: skip
    finally:
        (tmp_path / "stop").write_text("")
    failed = [e for e in result.episodes if e.get("failed_to_run")]
    assert [(e["seed"], e["failure"]) for e in failed] == [(1, kind)]
    assert len(result.episodes) == 2 and result.summary["failed_to_run"]["episodes"] == 1


@pytest.mark.timeout(300, method="thread")  # (a guard: the old code waited for ever)
def test_a_pool_worker_that_sends_part_of_its_ready_message_is_given_up(monkeypatch):
    """As above, in the worker's "ready": its deadline (`ready_deadline`) did not hold."""
    from _faults import SendsPartOfReady

    from turnbudget.eval.run import backends, sealed
    from turnbudget.eval.run.backends import WorkersUnavailable

    monkeypatch.setattr(sealed, "START_SECONDS", 0.5)  # (read when the pool starts)
    monkeypatch.setattr(sealed, "READY_SECONDS", 0.5)
    monkeypatch.setattr(backends, "WORKER_START_SECONDS", 1.0)
    with pytest.raises(WorkersUnavailable, match=r"did not become ready in 2s"):
        evaluate(MAZE, SendsPartOfReady(0.0), backend="pool", workers=1, ks=[1], ts=[4],
                 tasks=1, n_bootstrap=0, timeout=5)  # fmt: skip
