"""Evaluation backends: every backend gives the same records; a new one is one small class."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from turnbudget.agents import OracleAgent, RandomAgent
from turnbudget.cli import main
from turnbudget.eval.run import backends
from turnbudget.eval.run.backends import Backend, list_backends, make_backend, register_backend
from turnbudget.eval.run.episodes import EpisodeResult
from turnbudget.eval.run.evaluate import EPISODES_FILE, STEPS_FILE, evaluate
from turnbudget.eval.run.plan import EpisodeSpec, EvalConfig

MAZE = "turnbudget/Maze-Easy-v0"
KEYQUEST = "turnbudget/KeyQuest-Easy-v0"
KWARGS = dict(ks=[1, 2], ts=[4, 8, 16], n=2, tasks=3, errors=0.1, n_bootstrap=50, mode="both")


@pytest.fixture(autouse=True)
def _own_registry(monkeypatch):
    """Each test registers into a copy, so no name leaks into other tests."""
    monkeypatch.setattr(backends, "_REGISTRY", dict(backends._REGISTRY))


class ReversedBackend(Backend):
    """A third backend as a user would write one: in-process, last episode first, one by one."""

    name = "reversed"

    def start(
        self, agent: Any, config: EvalConfig, *, serialize: bool, runner: Any
    ) -> ReversedBackend:
        self.runner = runner(agent, config, serialize)
        self.started = True
        return self

    def run(self, specs: Sequence[EpisodeSpec]) -> Iterator[list[EpisodeResult]]:
        for spec in reversed(specs):
            yield self.runner.run([spec])

    def close(self) -> None:
        self.closed = True


def lines(out: Path, name: str) -> list[str]:
    return sorted((out / name).read_text().splitlines())


def test_every_backend_writes_the_same_records(tmp_path):
    register_backend("reversed", ReversedBackend)
    runs = {
        "local": dict(backend="local"),
        "pool1": dict(backend="pool", workers=1),
        "pool2": dict(workers=2),  # the default for several workers: pool
        "reversed": dict(backend="reversed"),
    }
    results = {
        name: evaluate([MAZE, KEYQUEST], OracleAgent(0.3), out=tmp_path / name, **KWARGS, **kw)
        for name, kw in runs.items()
    }
    assert results["local"].n_run == 2 * 3 * 2 * 3
    for name in runs:
        assert results[name].summary == results["local"].summary, name
        for log in (EPISODES_FILE, STEPS_FILE):
            assert lines(tmp_path / name, log) == lines(tmp_path / "local", log), (name, log)


def test_a_backend_instance_is_started_and_closed():
    backend = ReversedBackend()
    result = evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], n=1, tasks=2, backend=backend)
    assert backend.started and backend.closed
    assert len(result.episodes) == 2 and len(result.steps) == 10


def test_backend_errors_are_clear():
    assert {"local", "pool"} <= set(list_backends())
    with pytest.raises(ValueError, match=r"Unknown backend 'nope'.*local"):
        evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], tasks=1, backend="nope")
    with pytest.raises(ValueError, match="workers"):
        evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], tasks=1, backend="local", workers=2)
    with pytest.raises(ValueError, match="workers"):
        make_backend("pool", workers=0)
    register_backend("not-a-backend", "turnbudget.eval.run.plan:EvalConfig")
    with pytest.raises(TypeError, match="not a Backend subclass"):
        make_backend("not-a-backend")
    register_backend("missing", "turnbudget.eval.run.backends.nowhere:Backend")
    with pytest.raises(ImportError, match="nowhere"):
        make_backend("missing")
    with pytest.raises(RuntimeError, match="before start"):
        next(make_backend("local").run([]))


def test_cli_backend_flag(tmp_path, capsys):
    common = ["eval", "--env", MAZE, "--agent", "oracle:0.2", "--k", "1", "--t", "4,8",
              "--tasks", "2", "--no-plots", "--quiet"]  # fmt: skip
    assert main([*common, "--backend", "pool", "--workers", "2", "--out", str(tmp_path / "p")]) == 0
    assert main([*common, "--out", str(tmp_path / "l")]) == 0
    assert lines(tmp_path / "p", EPISODES_FILE) == lines(tmp_path / "l", EPISODES_FILE)
    assert main([*common, "--backend", "ray-nope", "--out", str(tmp_path / "x")]) == 2
    assert "Unknown backend 'ray-nope'" in capsys.readouterr().err


def test_supervise_runs_on_workers_up_and_takes_those_that_join_later():
    """Workers that start in the background (Ray actors waiting for a CPU): the loop runs on
    those up, gives chunks to one that comes up later, waits for a replacement still starting
    instead of giving up, and says so clearly once no worker is left or starting."""
    from turnbudget.eval.run.backends import WorkersUnavailable
    from turnbudget.eval.run.backends.supervisor import Workers, supervise
    from turnbudget.eval.run.driver import EpisodeFailure

    class Late(Workers):
        """Slot 0 is up; slot 1 comes up at the first wait; the first chunk's worker dies
        and its replacement comes up at the next wait (``lose=True``)."""

        def __init__(self, lose: bool, replaceable: bool = True):
            self.slots, self.later, self.busy, self.used = [0], [1], {}, []
            self.lose, self.replaceable, self.waits = lose, replaceable, 0

        def submit(self, slot, chunk):
            self.busy[slot] = list(chunk)
            self.used.append(slot)

        def wait(self, timeout):
            self.waits += 1
            if self.waits == 2:
                self.slots.append(1)
            done, self.busy = self.busy, {}
            if self.lose:
                self.lose = False
                return [(s, "its worker died") for s in done]
            return list(done.items())

        def joined(self):
            up = [s for s in self.later if s in self.slots]
            self.later = [s for s in self.later if s not in up]
            return up

        @property
        def starting(self):
            return bool(self.later)

        def replace(self, slot):
            self.slots.remove(slot)
            if self.replaceable:
                self.later.append(slot)
            return False

    workers = Late(lose=False)
    assert sorted(x for out in supervise(workers, list(range(6)), size=1) for x in out) == list(
        range(6)
    )
    assert workers.used[0] == 0 and 1 in workers.used  # the late worker took chunks too
    workers = Late(lose=True)  # slot 0 lost: wait for slot 1 and slot 0's replacement
    outcomes = list(supervise(workers, list(range(4)), size=1))
    failed = [o for out in outcomes for o in out if isinstance(o, EpisodeFailure)]
    assert [f.kind for f in failed] == ["worker_lost"] and len(outcomes) == 4
    workers = Late(lose=True, replaceable=False)
    workers.later = []  # nothing else starting: the run cannot go on
    with pytest.raises(WorkersUnavailable, match="Every worker was lost"):
        list(supervise(workers, list(range(4)), size=1))
