"""The ray backend (marker ``ray``; needs the ray extra): the same records as the local
backends for any number of workers, and faults survived (a SIGKILLed worker, a raising
agent, a hanging one, Ctrl-C, Ray failing to start, a SIGKILLed driver); the TextWorld
cache's lock holds across Ray workers. No test races the clock: faults are set off by
the agents themselves, and waits are on files (see ``_faults``).

One local Ray instance (2 CPUs, small object store) serves the module and is shut
down at its end; some tests start and stop their own through the backend.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

import _faults  # noqa: E402
from _faults import (  # noqa: E402
    CountingOracle,
    ExitingAgent,
    GatedOracle,
    HangingAgent,
    KillOnceOracle,
    RaisingAgent,
    ReadyOnlyHere,
    seeds_of,
    timeout_clear_of,
    wait_until,
)
from _support import SHIPPED_TEXTWORLD_GAMES, copy_shipped_textworld_games  # noqa: E402

from turnbudget.agents import OracleAgent  # noqa: E402
from turnbudget.cli import main  # noqa: E402
from turnbudget.eval.run.backends.ray import (  # noqa: E402
    OBJECT_STORE_BYTES,
    RayBackend,
    release_workers,
)
from turnbudget.eval.run.evaluate import EPISODES_FILE, STEPS_FILE, evaluate  # noqa: E402
from turnbudget.records import read_jsonl  # noqa: E402

pytestmark = pytest.mark.ray

MAZE = "turnbudget/Maze-Easy-v0"
KEYQUEST = "turnbudget/KeyQuest-Easy-v0"
COIN = "turnbudget/CoinCollector-Easy-v0"  # played from the shipped game 0
GRID = dict(ks=[1, 2], ts=[8, 16], n=2, tasks=3, n_bootstrap=20)
BAD = [(MAZE, 1, 0), (KEYQUEST, 2, 1)]

# The workers cannot import the test suite: ship these modules' code by value.
ray.cloudpickle.register_pickle_by_value(_faults)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def tw_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped TextWorld games in a temporary cache, seen by the driver and the workers
    (a local instance's workers inherit the environment of the process that starts it)."""
    cache = copy_shipped_textworld_games(tmp_path_factory.mktemp("tw-cache"))
    old = os.environ.get("TURNBUDGET_TEXTWORLD_CACHE")
    os.environ["TURNBUDGET_TEXTWORLD_CACHE"] = os.fspath(cache)
    yield cache
    if old is None:
        os.environ.pop("TURNBUDGET_TEXTWORLD_CACHE", None)
    else:
        os.environ["TURNBUDGET_TEXTWORLD_CACHE"] = old


@pytest.fixture(scope="module")
def module_ray(tw_cache: Path):
    """Shut down at the end of the module, whoever started it."""
    yield
    ray.shutdown()


@pytest.fixture
def shared_ray(module_ray: None) -> None:
    if not ray.is_initialized():
        ray.init(
            address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
            object_store_memory=OBJECT_STORE_BYTES,
        )  # fmt: skip


@pytest.fixture(autouse=True)
def _no_kept_workers():
    """Actors a test kept (``keep_workers``) hold CPUs the next test needs."""
    yield
    release_workers()


def lines(out: Path, name: str) -> list[str]:
    return sorted((out / name).read_text().splitlines())


def test_ray_gives_the_local_records_for_any_worker_count(tmp_path, module_ray):
    """Local, Ray with 1 worker (a local instance started and shut down for the run) and
    Ray with 2 workers write the same logs and summaries, native and TextWorld envs."""
    from turnbudget.eval.report import write_run_summary

    kwargs = dict(ks=[1, 2], ts=[4, 8, 16], n=2, tasks=1, errors=0.1, mode="both", n_bootstrap=50)
    envs = [MAZE, KEYQUEST, COIN]
    local = evaluate(envs, OracleAgent(0.3), out=tmp_path / "local", **kwargs)
    ray.shutdown()
    own = evaluate(envs, OracleAgent(0.3), out=tmp_path / "ray1", backend="ray", **kwargs)
    assert not ray.is_initialized()  # the backend's own instance is gone
    ray.init(
        address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
        object_store_memory=OBJECT_STORE_BYTES,
    )  # fmt: skip
    two = evaluate(
        envs, OracleAgent(0.3), out=tmp_path / "ray2", backend="ray", workers=2, **kwargs
    )
    assert ray.is_initialized()  # a caller's instance is left running
    assert local.n_run == 3 * 2 * 3
    for _name, result in (("local", local), ("ray1", own), ("ray2", two)):
        write_run_summary(result.out, result.summary)  # the report is the caller's
    for name, result in (("ray1", own), ("ray2", two)):
        assert result.summary == local.summary, name
        for log in (EPISODES_FILE, STEPS_FILE):
            assert lines(tmp_path / name, log) == lines(tmp_path / "local", log), (name, log)
        summary = (tmp_path / name / "summary.json").read_text()
        assert summary == (tmp_path / "local" / "summary.json").read_text()


def test_ray_gives_the_local_records_for_team_runs_and_probes(tmp_path, shared_ray):
    """The two other kinds of run on the one driver, team episodes and probes, write the same
    records on Ray as in this process."""
    from turnbudget.eval import evaluate_team, probe

    roles = ("operator", "runner")
    kwargs = dict(ks=[1, 2], ts=[6, 12], n=2, tasks=3, errors=0.2, n_bootstrap=50)
    local = evaluate_team("vault_v0", {r: OracleAgent(0.3) for r in roles}, out=tmp_path / "tl",
                          **kwargs)  # fmt: skip
    remote = evaluate_team("vault_v0", {r: OracleAgent(0.3) for r in roles}, backend="ray",
                           workers=2, out=tmp_path / "tr", **kwargs)  # fmt: skip
    assert remote.episodes == local.episodes and remote.summary == local.summary
    for name in (EPISODES_FILE, STEPS_FILE):
        assert lines(tmp_path / "tr", name) == lines(tmp_path / "tl", name)
    small = dict(tasks=2, baseline_repeats=1, n_bootstrap=50)
    here = probe(MAZE, OracleAgent(0.3), out=tmp_path / "pl", **small)
    there = probe(MAZE, OracleAgent(0.3), out=tmp_path / "pr", backend="ray", workers=2, **small)
    assert there.records == here.records
    assert (tmp_path / "pr" / "probes.jsonl").read_bytes() == (
        tmp_path / "pl" / "probes.jsonl"
    ).read_bytes()


def test_a_sealed_agent_on_ray_gives_the_local_records(tmp_path, shared_ray):
    """The proxy travels to each actor without its process and starts one there."""
    kwargs = dict(ks=[1, 2], ts=[6, 12], n=2, tasks=3, errors=0.1, n_bootstrap=0)
    local = evaluate([MAZE, KEYQUEST], OracleAgent(0.3), out=tmp_path / "local", **kwargs)
    remote = evaluate(
        [MAZE, KEYQUEST], OracleAgent(0.3), out=tmp_path / "ray", backend="ray", workers=2,
        sealed=True, **kwargs,
    )  # fmt: skip
    assert remote.episodes == local.episodes
    for name in (EPISODES_FILE, STEPS_FILE):
        assert lines(tmp_path / "ray", name) == lines(tmp_path / "local", name)


class _Unpicklable(OracleAgent):
    def __init__(self) -> None:
        super().__init__(0.0)
        self.lock = threading.Lock()


def test_an_agent_that_cannot_be_pickled_for_ray_is_a_clear_error(tmp_path, shared_ray):
    """Ray's own TypeError came from deep in Ray, with a page of serializability report (the
    pool forks: the same agent plays there)."""
    with pytest.raises(ValueError, match=r"_Unpicklable cannot be pickled for Ray's workers"):
        evaluate(MAZE, _Unpicklable(), backend="ray", workers=2, ks=[1], ts=[8], tasks=2)


def test_the_agent_is_shipped_once_per_worker(tmp_path, shared_ray):
    trace = tmp_path / "trace"
    trace.mkdir()
    agent = CountingOracle(0.3, str(trace))
    result = evaluate(MAZE, agent, backend="ray", workers=2, ks=[1], ts=[8], n=4, tasks=8)
    assert len(result.episodes) == 32
    pids = [p.name.split("-")[0] for p in trace.iterdir()]
    assert len(pids) == 2 and len(set(pids)) == 2  # one copy per actor, however many chunks


def test_runs_on_ray_the_caller_keeps_reuse_kept_actors(tmp_path, shared_ray):
    """Ray initialised beforehand, ``keep_workers``: the second run plays on the first run's
    actors (no actor start), each given the new run's agent once, and gives the same records
    as a fresh run; without it, each run has actors of its own (they hold a CPU each)."""
    traces = [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    results = []
    for trace, keep in zip(traces, (True, True, False), strict=True):
        trace.mkdir()
        agent = CountingOracle(0.3, str(trace))
        results.append(
            evaluate(
                MAZE,
                agent,
                backend="ray",
                workers=2,
                ks=[1],
                ts=[8],
                n=4,
                tasks=8,
                backend_options={"keep_workers": keep},
            )
        )
    pids = [sorted(p.name.split("-")[0] for p in trace.iterdir()) for trace in traces]
    assert len(pids[0]) == 2 and len(set(pids[0])) == 2  # one copy per actor, per run
    assert pids[1] == pids[0]  # the same actors
    assert pids[2] == pids[0]  # (kept ones are taken, then go with that run)
    assert results[1].episodes == results[0].episodes
    local = evaluate(MAZE, CountingOracle(0.3, str(traces[0])), ks=[1], ts=[8], n=4, tasks=8)
    assert results[1].episodes == local.episodes
    assert release_workers() == 0  # the third run did not keep them
    evaluate(MAZE, OracleAgent(0.3), backend="ray", workers=2, ks=[1], ts=[8], tasks=1,
             backend_options={"keep_workers": True})  # fmt: skip
    assert release_workers() == 2 and release_workers() == 0  # their CPUs back to the cluster


def test_an_attached_cluster_is_joined_once_per_process(tmp_path, module_ray, monkeypatch):
    """``address=``: the first run connects, later runs use that connection (no second
    ``ray.init``, no shutdown between runs), and reuse the actors."""
    ray.shutdown()
    calls = []
    real_init = ray.init

    def attach(**kwargs):  # a local instance stands in for the cluster at that address
        calls.append(kwargs["address"])
        return real_init(
            address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
            object_store_memory=OBJECT_STORE_BYTES,
        )  # fmt: skip

    monkeypatch.setattr(ray, "init", attach)
    options = {"address": "10.0.0.9:6379", "keep_workers": True}
    runs = []
    for name in ("first", "second"):
        runs.append(
            evaluate(
                MAZE,
                OracleAgent(0.3),
                backend="ray",
                backend_options=options,
                workers=2,
                out=tmp_path / name,
                **GRID,
            )
        )
    assert calls == ["10.0.0.9:6379"] and ray.is_initialized()  # left attached
    assert runs[1].summary == runs[0].summary
    for log in (EPISODES_FILE, STEPS_FILE):
        assert lines(tmp_path / "second", log) == lines(tmp_path / "first", log)
    assert release_workers() == 2  # (the module's other tests need the CPUs)


@pytest.mark.timeout(600, method="thread")  # a guard: the other actor waits for the replacement
def test_a_sigkilled_ray_worker_costs_nothing(tmp_path, shared_ray):
    """An actor SIGKILLed mid-chunk (by its own agent, on its first command): its chunk is
    rerun, a replacement actor plays, and every episode is the clean run's, once."""
    clean = evaluate([MAZE, KEYQUEST], OracleAgent(0.3), **GRID)
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    result = evaluate(
        [MAZE, KEYQUEST], KillOnceOracle(0.3, str(pid_dir), workers=2), out=tmp_path / "run",
        backend="ray", workers=2, **GRID,
    )  # fmt: skip
    assert (pid_dir / "victim").exists()
    assert len(list(pid_dir.glob("[0-9]*"))) == 3  # a replacement actor played too
    ids = [e["episode_id"] for e in read_jsonl(tmp_path / "run" / EPISODES_FILE)[0]]
    assert sorted(ids) == sorted(e["episode_id"] for e in clean.episodes)  # each exactly once
    assert result.episodes == clean.episodes
    assert result.summary["failed_to_run"]["episodes"] == 0


def _failed(result) -> dict[tuple[str, int, int], dict]:
    return {
        (e["env_id"], e["seed"], e["rep"]): e for e in result.episodes if e.get("failed_to_run")
    }


@pytest.mark.parametrize(
    ("faulty", "error"),
    [
        (RaisingAgent, "agent bug"),
        (ExitingAgent, "SystemExit: sys.exit(3) was called"),
        (functools.partial(ExitingAgent, interrupt=KeyboardInterrupt), "KeyboardInterrupt"),
    ],
    # sys.exit once cost the actor (worker_lost), as on the pool; a KeyboardInterrupt did
    # still (a task cancelled, a Ray traceback with the actor's pid and address as its error)
    ids=["raise", "sys.exit", "ctrl-c"],
)
def test_a_raising_agent_on_ray_fails_its_episodes_and_the_run_finishes(
    tmp_path, shared_ray, faulty, error
):
    clean = {
        e["episode_id"]: e for e in evaluate([MAZE, KEYQUEST], OracleAgent(0.3), **GRID).episodes
    }
    result = evaluate(
        [MAZE, KEYQUEST], faulty(0.3, seeds_of(0, BAD)), out=tmp_path / "run",
        backend="ray", workers=2, retries=1, **GRID,
    )  # fmt: skip
    failed = _failed(result)
    assert set(failed) == set(BAD)
    assert all(e["failure"] == "exception" and e["attempts"] == 2 for e in failed.values())
    assert all(error in e["error"] for e in failed.values())
    for e in result.episodes:
        if not e.get("failed_to_run"):
            assert e == clean[e["episode_id"]]
    assert result.summary["failed_to_run"] == {"episodes": 2, "by_kind": {"exception": 2}}


@pytest.mark.timeout(900, method="thread")  # a guard: the hanging episodes end only by the timeout
def test_a_hanging_agent_on_ray_hits_the_timeout(tmp_path, shared_ray):
    """The agent blocks for good on the chosen episodes: the run ends only because the
    timeout kills their actors. The timeout is sized from a clean run of the whole grid, so
    a sound episode (up to 0.45 s on a fresh actor with 2 CPU burners beside it) is clear of
    it at any load."""
    start = time.monotonic()
    evaluate([MAZE, KEYQUEST], OracleAgent(0.3), **GRID)
    timeout = timeout_clear_of(time.monotonic() - start)
    result = evaluate(
        [MAZE, KEYQUEST], HangingAgent(0.3, seeds_of(0, BAD)), backend="ray", workers=2,
        timeout=timeout, retries=1, **GRID,
    )  # fmt: skip
    failed = _failed(result)
    assert set(failed) == set(BAD)
    assert all(e["failure"] == "timeout" and e["attempts"] == 2 for e in failed.values())
    assert len(result.episodes) == 2 * 3 * 2


def _generate_once(root: str, log: str, barrier: str, path_for: str) -> tuple[str, float, float]:
    """A Ray task: wait until both tasks are up, then ask the cache for one game that nobody
    has generated. Generation (a copy of a shipped game) is logged, and lasts until both
    tasks have asked: the other one always asks while the game is being made."""
    import shutil

    from turnbudget.envs.textworld.cache import GameCache

    Path(barrier, str(os.getpid())).write_text("")
    wait_until(lambda: len(list(Path(barrier).glob("[0-9]*"))) >= 2)

    def generate(path: Path) -> None:
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        wait_until(lambda: len(list(Path(barrier).glob("asked-*"))) >= 2)
        shutil.copy(Path(path_for, "0.z8"), path)
        shutil.copy(Path(path_for, "0.json"), path.with_suffix(".json"))

    asked = time.time()
    Path(barrier, f"asked-{os.getpid()}").write_text("")
    game = GameCache("lock_probe", {"level": 1}, root=root).get(0, generate)
    return os.fspath(game), asked, time.time()


@pytest.mark.timeout(600, method="thread")  # a guard: the tasks wait for each other
def test_the_textworld_cache_lock_holds_across_ray_workers(tmp_path, shared_ray):
    log, barrier = tmp_path / "generated.log", tmp_path / "barrier"
    barrier.mkdir()
    source = os.fspath(next(SHIPPED_TEXTWORLD_GAMES.glob("coin_collector-*")))
    task = ray.remote(num_cpus=1)(_generate_once)
    refs = [task.remote(os.fspath(tmp_path / "cache"), os.fspath(log), os.fspath(barrier), source)
            for _ in range(2)]  # fmt: skip
    (game_a, asked_a, done_a), (game_b, asked_b, done_b) = ray.get(refs)
    assert len(set(log.read_text().split())) == 1  # generated by one worker only
    assert game_a == game_b and Path(game_a).read_bytes() == Path(source, "0.z8").read_bytes()
    assert max(asked_a, asked_b) < min(done_a, done_b)  # both asked while it was being made
    assert len(list(barrier.glob("[0-9]*"))) == 2  # two distinct worker processes


def test_cli_backend_ray(tmp_path, shared_ray, capsys):
    common = ["eval", "--env", MAZE, "--agent", "oracle:0.2", "--k", "1", "--t", "4,8",
              "--tasks", "2", "--no-plots", "--quiet"]  # fmt: skip
    assert main([*common, "--backend", "ray", "--workers", "2", "--out", str(tmp_path / "r")]) == 0
    assert main([*common, "--out", str(tmp_path / "l")]) == 0
    assert lines(tmp_path / "r", EPISODES_FILE) == lines(tmp_path / "l", EPISODES_FILE)
    assert main([*common, "--ray-address", "auto", "--out", str(tmp_path / "x")]) == 2
    assert "--ray-address needs --backend ray" in capsys.readouterr().err
    assert repr(RayBackend(2, address="auto")) == "RayBackend(workers=2, address='auto')"


def test_workers_that_cannot_start_are_reported_or_done_without(tmp_path, shared_ray):
    """An agent the workers cannot rebuild stops the run at once with the reason; asking for
    more workers than free CPUs runs on those that start (as after losing a node), without
    waiting for the one that cannot."""
    from _faults import UnshippableAgent

    from turnbudget.eval.run.backends import WorkersUnavailable

    with pytest.raises(WorkersUnavailable, match=r"failed to start.*my_private_agents"):
        evaluate(MAZE, UnshippableAgent(0.1), ks=[1], ts=[8], tasks=2, backend="ray")
    result = evaluate(MAZE, OracleAgent(0.3), backend="ray", workers=3, **GRID)
    assert result.summary == evaluate(MAZE, OracleAgent(0.3), **GRID).summary


def test_an_agent_that_cannot_get_ready_on_ray_is_named_with_its_error(shared_ray):
    """The one line quoted Ray's error, which leads with its traceback: cut to 500
    characters, it ended before the agent's own error (and asked whether turnbudget was
    installed). Now it names the agent and what it raised, as the pool's does."""
    from turnbudget.eval.run.backends import WorkersUnavailable

    with pytest.raises(WorkersUnavailable) as raised:
        evaluate(MAZE, ReadyOnlyHere(), backend="ray", workers=1, ks=[1], ts=[4], tasks=1,
                 n_bootstrap=0)  # fmt: skip
    message = str(raised.value)
    assert "the agent 'oracle-eps0' could not be made ready" in message, message
    assert "RuntimeError: no license server in a worker" in message, message
    assert "installed on every node" not in message and "Traceback" not in message


def test_a_kept_actors_agent_that_cannot_get_ready_is_tried_once(tmp_path, shared_ray):
    """A kept actor whose configure call failed was taken for one lost since the last run,
    and a new actor ran the agent's start again: a ready() that raised ran twice, one that
    hung held the run for twice READY_SECONDS. Only a lost actor is replaced now."""
    from turnbudget.eval.run.backends import WorkersUnavailable

    grid = dict(ks=[1], ts=[4], tasks=1, n_bootstrap=0, backend="ray", workers=1)
    kept = {"keep_workers": True}
    evaluate(MAZE, OracleAgent(0.0), backend_options=kept, **grid)  # (its actor is kept)
    log = tmp_path / "ready.log"
    with pytest.raises(WorkersUnavailable, match="no license server in a worker"):
        evaluate(MAZE, ReadyOnlyHere(str(log)), backend_options=kept, **grid)
    assert log.read_text().count("ready") == 1


@pytest.mark.timeout(300, method="thread")  # (a guard: the old code waited START_TIMEOUT)
def test_an_agent_that_hangs_in_ready_on_ray_is_named(shared_ray, monkeypatch):
    """An actor's start and its agent's ready() shared START_TIMEOUT: an agent whose ready()
    hung was given up after 120 s as a cluster with "no free CPU". Now the actor comes up,
    then its agent has `ready_deadline` (read when the run starts) and is named past it."""
    from _faults import HangsInReady

    from turnbudget.eval.run import backends, sealed
    from turnbudget.eval.run.driver import AgentNotReady

    monkeypatch.setattr(sealed, "START_SECONDS", 0.5)
    monkeypatch.setattr(sealed, "READY_SECONDS", 0.5)
    monkeypatch.setattr(backends, "WORKER_START_SECONDS", 1.0)
    with pytest.raises(AgentNotReady, match=r"'hangs-in-ready' did not become ready in a Ray "):
        evaluate(MAZE, HangsInReady(0.0), backend="ray", workers=1, ks=[1], ts=[4], tasks=1,
                 n_bootstrap=0)  # fmt: skip


@pytest.mark.timeout(300, method="thread")  # (a guard: wait_until has no deadline)
def test_a_ready_slower_than_the_actors_start_limit_is_waited_for(
    tmp_path, shared_ray, monkeypatch
):
    """START_TIMEOUT bounded an actor's start and its agent's ready() together: a ready() that
    took longer (a model load, well within READY_SECONDS) failed the run. A kept actor is up
    already: its ready() is held until the test sees it begin, under a START_TIMEOUT of 0."""
    from _faults import GatedReady

    from turnbudget.eval.run.backends import ray as ray_backend

    grid = dict(ks=[1], ts=[8], tasks=1, n_bootstrap=0, backend="ray", workers=1)
    kept = {"keep_workers": True}
    evaluate(MAZE, OracleAgent(0.0), backend_options=kept, **grid)  # (its actor is kept)
    monkeypatch.setattr(ray_backend, "START_TIMEOUT", 0.0)
    entered, go = tmp_path / "entered", tmp_path / "go"

    def release() -> None:
        wait_until(lambda: entered.exists() or go.exists())
        go.write_text("")

    threading.Thread(target=release, daemon=True).start()
    try:
        result = evaluate(MAZE, GatedReady(str(tmp_path)), backend_options=kept, **grid)
    finally:
        go.write_text("")
    assert len(result.episodes) == 1 and result.summary["failed_to_run"]["episodes"] == 0


def test_a_ray_start_failure_is_a_clear_error(tmp_path, monkeypatch, capsys):
    """Ray's start-up timing out (as on a busy machine) or a cluster that does not answer:
    one line saying what failed and what to do, from the API and from the CLI."""
    from turnbudget.eval.run.backends import WorkersUnavailable

    ray.shutdown()  # a later test's `shared_ray` starts the module's instance again
    calls = []

    def timed_out(**kwargs):  # what Ray's node start raises when the raylet is late
        calls.append(kwargs)
        raise Exception(
            "The current node timed out during startup. This could happen because some of "
            "the raylet failed to startup or the GCS has become overloaded."
        )

    monkeypatch.setattr(ray, "init", timed_out)
    with pytest.raises(WorkersUnavailable, match=r"Could not start a local Ray instance: "
                       r"Exception: The current node timed out.*retry.*ray start --head"):  # fmt: skip
        evaluate(MAZE, OracleAgent(0.3), backend="ray", ks=[1], ts=[8], tasks=1)
    assert calls[0]["address"] == "local"  # a new instance, not one `ray start` left running
    common = ["eval", "--env", MAZE, "--agent", "oracle", "--k", "1", "--t", "8", "--tasks",
              "1", "--no-plots", "--quiet", "--backend", "ray"]  # fmt: skip
    assert main([*common, "--out", str(tmp_path / "a")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Could not start a local Ray instance" in err

    def refused(**kwargs):
        raise ConnectionError(f"Could not find any running Ray instance at {kwargs['address']}")

    monkeypatch.setattr(ray, "init", refused)
    assert main([*common, "--ray-address", "10.0.0.9:6379", "--out", str(tmp_path / "b")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "Could not connect to the Ray cluster at '10.0.0.9:6379'" in err and "ray status" in err


# A driver with a local Ray instance, held mid-episode (its agent waits on a gate) until killed.
DRIVER = """
import sys
import _faults, ray
ray.cloudpickle.register_pickle_by_value(_faults)
from turnbudget.eval.run.evaluate import evaluate
gate, out = sys.argv[1:]
agent = _faults.GatedOracle(0.3, gate, out + "/episodes.jsonl", 0)
evaluate("turnbudget/Maze-Easy-v0", agent, ks=[1], ts=[8], tasks=2, out=out, backend="ray")
"""


@pytest.mark.timeout(600, method="thread")  # a guard: the wait for the gate has no deadline
def test_a_killed_drivers_ray_processes_go_with_it(tmp_path):
    """SIGKILL the driver that started a local Ray instance: every process it started is gone
    soon after (the raylet's agents outlived it by 60-90 s before, on an idle machine)."""
    psutil = pytest.importorskip("psutil")
    repo = Path(__file__).resolve().parents[3]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join([str(repo), str(repo / "tests")])
    gate = tmp_path / "gate"
    gate.mkdir()
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(gate), str(tmp_path / "run")], env=env,
        start_new_session=True,
    )  # fmt: skip
    started: list = []
    try:
        assert wait_until((gate / "blocked").exists, driver), "the driver ended on its own"
        started = psutil.Process(driver.pid).children(recursive=True)
        names = {p.pid: p.name() for p in started}
        assert {"raylet", "gcs_server"} <= set(names.values()), names  # (its instance is up)
        driver.kill()  # SIGKILL: no atexit, no ray.shutdown()
        driver.wait()

        def alive() -> list[str]:
            left = []
            for p in started:
                with contextlib.suppress(psutil.NoSuchProcess):
                    if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                        left.append(f"{p.pid} {names[p.pid]}")
            return left

        # A bound for processes to be gone (not an event one can wait on): the reaper ends
        # them within a second or two, even on a busy machine; Ray's own timeouts take 60 s+.
        deadline = time.monotonic() + 30
        while alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive(), f"outlived the driver: {alive()}"
    finally:
        for p in started:  # whatever the outcome, nothing of this test outlives it
            with contextlib.suppress(psutil.Error):
                p.kill()
        driver.kill()
        driver.wait()


def _in_ray_wait(thread_id: int) -> bool:
    """Whether that thread is blocked in ``ray.wait`` (its innermost Python frame)."""
    frame = sys._current_frames().get(thread_id)
    return (
        frame is not None
        and frame.f_code.co_name == "wait"
        and (Path(frame.f_code.co_filename).parts[-3:] == ("ray", "_private", "worker.py"))
    )


@contextlib.contextmanager
def _interrupt_when(ready: Callable[[], bool]) -> Iterator[None]:
    """Ctrl-C: send this process SIGINT (from a thread) once ``ready()`` holds during the
    block, under Python's default SIGINT handler, as in a terminal. A process started in the
    background by a non-interactive shell (``cmd &``, as a CI script may be) inherits SIGINT
    ignored: the signal would be lost, and the interrupted run waited on for good."""
    ended = threading.Event()

    def interrupt() -> None:
        wait_until(lambda: ended.is_set() or ready())
        if not ended.is_set():
            os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupter = threading.Thread(target=interrupt, daemon=True)
    interrupter.start()
    try:
        yield
    finally:
        ended.set()
        interrupter.join()
        signal.signal(signal.SIGINT, previous)


@pytest.mark.timeout(600, method="thread")  # a guard: the waits below have no deadline
def test_an_interrupted_ray_run_resumes(tmp_path, shared_ray):
    """Ctrl-C in the driver while it waits on Ray for an actor that will never answer: the
    run stops at once, the actors go, the logs keep whole episodes only, and the same call
    resumes to the clean run's records."""
    from turnbudget.eval.run.backends.supervisor import chunk_size

    clean = evaluate([MAZE, KEYQUEST], OracleAgent(0.3), **GRID)
    total = len(clean.episodes)
    assert chunk_size(total, 2, 1, None) == 1  # one episode per chunk: see below
    out, gate = tmp_path / "run", tmp_path / "gate"
    gate.mkdir()
    log = out / EPISODES_FILE
    # The oracle, except that the first actor to start an episode once 3 are logged stops
    # there for good: the run cannot end. The other actor plays the other episodes; once they
    # are logged the driver has nothing to do but wait on Ray, and is interrupted there.
    agent = GatedOracle(0.3, os.fspath(gate), os.fspath(log), after=3)
    main_thread = threading.get_ident()

    def held() -> bool:
        return (
            (gate / "blocked").exists()
            and log.exists()
            and log.read_bytes().count(b"\n") == total - 1
            and _in_ray_wait(main_thread)
        )

    with _interrupt_when(held), pytest.raises(KeyboardInterrupt):
        evaluate([MAZE, KEYQUEST], agent, out=out, backend="ray", workers=2, **GRID)
    logged = len(read_jsonl(log)[0])
    assert 3 <= logged < total and logged == total - 1
    result = evaluate([MAZE, KEYQUEST], OracleAgent(0.3), out=out, backend="ray", workers=2, **GRID)
    assert result.n_run == total - logged
    assert result.episodes == clean.episodes


# The command line, with ``ray.init`` held once its instance is up until a signal ends it:
# the window between the raylet's agents starting and ``ray.init`` returning, which a test
# that only watched for the agents hit or missed by the machine's load (a run of 4 episodes
# was over, and exited 0, before its Ctrl-C came).
_HELD_IN_RAY_INIT = """
import runpy, sys, time
import ray
started = ray.init
def held(*args, **kwargs):
    context = started(*args, **kwargs)
    while True:  # (until the test's Ctrl-C raises KeyboardInterrupt here)
        time.sleep(0.05)
ray.init = held
sys.argv = ["turnbudget", *sys.argv[1:]]
runpy.run_module("turnbudget", run_name="__main__")
"""


@pytest.mark.timeout(600, method="thread")  # a guard: the wait for the agents has no deadline
def test_ctrl_c_while_the_local_ray_instance_starts_leaves_none_of_its_processes(tmp_path):
    """Ctrl-C once the raylet's agents run but before ``ray.init`` returned: no reaper watched
    the instance yet, and the agents outlived the evaluator by 60-75 s (a shutdown did not
    end them)."""
    psutil = pytest.importorskip("psutil")
    repo = Path(__file__).resolve().parents[3]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join([str(repo), str(repo / "tests")])
    evaluator = subprocess.Popen(
        [sys.executable, "-c", _HELD_IN_RAY_INIT, "eval", "--env", MAZE, "--agent",
         "oracle:0.3", "--k", "1", "--t", "8", "--tasks", "4", "--backend", "ray", "--workers",
         "2", "--no-plots", "--quiet", "--out", str(tmp_path / "run")],
        env=env, start_new_session=True, stderr=subprocess.PIPE,
    )  # fmt: skip
    seen: dict = {}

    def agents_up() -> bool:
        for p in psutil.Process(evaluator.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                seen.setdefault(p.pid, p)
        return any(p.name().startswith("ray::") for p in seen.values() if p.is_running())

    try:
        assert wait_until(agents_up, evaluator), "the evaluator ended on its own"
        os.killpg(evaluator.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the group
        assert evaluator.wait() == 130, evaluator.stderr.read()[-2000:]

        def alive() -> list[str]:
            left = []
            for p in seen.values():
                with contextlib.suppress(psutil.NoSuchProcess):
                    if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                        left.append(f"{p.pid} {p.name()}")
            return left

        deadline = time.monotonic() + 30  # (a bound, as above: they end within a second)
        while alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive(), f"outlived the evaluator: {alive()}"
    finally:
        for p in seen.values():
            with contextlib.suppress(psutil.Error):
                p.kill()
        evaluator.kill()
        evaluator.wait()
