"""How many workers a run starts: never more than it has work for, never an absurd number.

The issue: ``--workers 1000`` for one episode forked 988 processes, and ``--workers
100000`` forked until the machine gave out. No test here forks more than one process:
the backend says how many it would start, and a spy counts what it does start.
"""

from __future__ import annotations

import types

import pytest

from turnbudget.agents import OracleAgent
from turnbudget.cli import main
from turnbudget.eval.run.backends import MAX_LOCAL_WORKERS, make_backend, pool
from turnbudget.eval.run.evaluate import evaluate

MAZE = "turnbudget/Maze-Easy-v0"


@pytest.fixture
def forks(monkeypatch) -> list[int]:
    """The size of every set of pool processes started (they start for real)."""
    sizes: list[int] = []
    real = pool._Processes

    def spy(size, args):
        sizes.append(size)
        return real(size, args)

    monkeypatch.setattr(pool, "_Processes", spy)
    return sizes


def test_a_pool_starts_no_more_processes_than_chunks(forks, tmp_path):
    result = evaluate(MAZE, OracleAgent(0.0), ks=[1], ts=[20], n=1, tasks=1, workers=8,
                      backend="pool", out=tmp_path / "run")  # fmt: skip
    assert forks == [1] and len(result.episodes) == 1 and result.episodes[0]["success"]


def test_the_processes_a_pool_would_start():
    backend = make_backend("pool", workers=MAX_LOCAL_WORKERS)
    assert [backend.processes(n) for n in (0, 1, 7, 100_000)] == [0, 1, 7, MAX_LOCAL_WORKERS]
    assert make_backend("pool", workers=4).processes(3) == 3


@pytest.mark.parametrize("workers", [MAX_LOCAL_WORKERS + 1, 1000, 100_000])
def test_an_absurd_worker_count_is_refused_up_front(workers):
    with pytest.raises(ValueError, match=rf"at most {MAX_LOCAL_WORKERS} .*got {workers}"):
        make_backend("pool", workers=workers)


@pytest.mark.parametrize(
    "command",
    [
        ["eval", "--env", MAZE, "--k", "1", "--t", "5", "--tasks", "1", "--no-plots"],
        ["probe", "--env", MAZE, "--tasks", "1"],
        ["validate", "--env", MAZE, "--tasks", "1"],
    ],
    ids=["eval", "probe", "validate"],
)
def test_the_cli_refuses_an_absurd_worker_count_with_exit_2(command, forks, tmp_path, capsys):
    code = main([*command, "--quiet", "--workers", "100000", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and forks == []
    assert err == (
        f"turnbudget {command[0]}: error: Expect `workers` to be at most {MAX_LOCAL_WORKERS} "
        "for the pool backend (processes on this machine), got 100000\n"
    )


def test_a_local_ray_instance_is_capped_too(monkeypatch):
    """A Ray instance started for the run runs its actors on this machine (checked before
    ``ray.init``; Ray itself is not needed to tell)."""
    from turnbudget.eval.run.backends import ray as ray_backend

    started: list[dict] = []
    fake = types.SimpleNamespace(is_initialized=lambda: False, init=lambda **kw: started.append(kw))
    monkeypatch.setattr(ray_backend, "import_ray", lambda: fake)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(ValueError, match=f"at most {MAX_LOCAL_WORKERS} for the ray backend"):
        ray_backend.RayBackend(workers=100_000)._init()
    assert started == []
    assert ray_backend.RayBackend(workers=100_000, address="auto").workers == 100_000  # a cluster
