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


@pytest.mark.parametrize("backend", [["local"], {"name": "pool"}, 3])
def test_a_backend_that_is_no_name_or_backend_is_refused_by_name(backend):
    """A list or a dict was "TypeError: unhashable type", naming nothing."""
    with pytest.raises(TypeError, match=r"Expect `backend` to be a backend's name .*local"):
        evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], tasks=1, backend=backend)
    with pytest.raises(ValueError, match=r"Unknown backend"):
        make_backend(backend)


def test_budgets_and_ks_may_come_from_generators():
    """`ks` from a generator was taken and `ts` from one was "object of type 'generator' has
    no len()"; too many budgets from a generator are refused without drawing them all."""
    from turnbudget.eval.run.plan import MAX_BUDGETS, positive_ints

    given = evaluate(MAZE, RandomAgent(), ks=[1, 2], ts=[4, 8], n=2, tasks=2)
    drawn = evaluate(
        MAZE, RandomAgent(), ks=(k for k in (1, 2)), ts=(t for t in (4, 8)), n=2, tasks=2
    )
    assert drawn.summary["groups"] == given.summary["groups"]

    def endless() -> Iterator[int]:
        t = 0
        while True:
            t += 1
            yield t

    with pytest.raises(ValueError, match=rf"`ts` to hold at most {MAX_BUDGETS:,} values, got more"):
        positive_ints(endless(), "ts", count=MAX_BUDGETS)
    with pytest.raises(ValueError, match=r"at most 2 values, got 3"):
        positive_ints([1, 2, 3], "ts", count=2)


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


class _Queued:
    """Fake workers holding up to ``depth`` chunks each, run in order; each wait returns the
    head chunk of every busy worker (what a pipelined Ray actor does). ``lose_at`` names the
    wait (or a set of waits) whose workers die (both chunks then come back lost, as Ray's
    calls do)."""

    def __init__(self, slots: int, depth: int, lose_at: int | set[int] | None = None, stuck=()):
        from collections import deque

        self.depth, self.slots = depth, list(range(slots))
        self.lose_at = {lose_at} if isinstance(lose_at, int) else set(lose_at or ())
        self.stuck = set(stuck)  # slots whose first chunk never returns
        self.held = {s: deque() for s in self.slots}
        self.log: list[tuple[str, int, list]] = []  # ("submit" | "done", slot, chunk)
        self.waits = 0

    def submit(self, slot, chunk):
        assert len(self.held[slot]) < self.depth
        self.held[slot].append(list(chunk))
        self.log.append(("submit", slot, list(chunk)))

    def wait(self, timeout):
        self.waits += 1
        if self.waits > 100:  # (a loop waiting on the stuck chunk alone: nothing else comes)
            raise RuntimeError("only the stuck chunk is left")
        out = []
        for slot, held in self.held.items():
            if not held or slot in self.stuck:
                continue
            if self.waits in self.lose_at:
                out += [(slot, "its Ray worker was lost") for _ in held]
                held.clear()
                continue
            chunk = held.popleft()
            self.log.append(("done", slot, chunk))
            out.append((slot, chunk))
        return out

    def joined(self):
        return []

    @property
    def starting(self):
        return False

    def replace(self, slot):
        self.held[slot].clear()
        return True


def test_supervise_queues_the_next_chunk_before_the_previous_returns():
    """Pipelined workers (Ray's actors hold two chunks): every worker has its next chunk
    before its first returns, and each chunk comes back once, whatever the depth."""
    from turnbudget.eval.run.backends.supervisor import supervise

    workers = _Queued(slots=2, depth=2)
    outcomes = list(supervise(workers, list(range(12)), size=2))
    assert sorted(x for out in outcomes for x in out) == list(range(12))
    first_done = workers.log.index(next(e for e in workers.log if e[0] == "done"))
    assert sorted(slot for _, slot, _ in workers.log[:first_done]) == [0, 0, 1, 1]
    for slot in (0, 1):  # a worker's chunks come back in the order it was given them
        given = [e[2] for e in workers.log if e[:2] == ("submit", slot)]
        done = [e[2] for e in workers.log if e[:2] == ("done", slot)]
        assert done == given
    plain = _Queued(slots=2, depth=1)  # the pool: one chunk at a time (`submit` checks it)
    assert sorted(x for out in supervise(plain, list(range(6)), size=2) for x in out) == [*range(6)]


def test_a_lost_pipelined_worker_plays_its_running_chunk_again_an_episode_a_chunk():
    """The chunk queued behind the running one never started: it goes back to the queue
    (played elsewhere, no failed attempt). The running one's worker cannot say which of its
    episodes was playing (Ray's): they failed together, though one at most was the cause;
    each goes back as a chunk of its own, and only one that is lost alone fails."""
    from turnbudget.eval.run.backends.supervisor import supervise
    from turnbudget.eval.run.driver import EpisodeFailure

    workers = _Queued(slots=1, depth=2, lose_at=1)
    outcomes = [o for out in supervise(workers, list(range(6)), size=2) for o in out]
    assert not any(isinstance(o, EpisodeFailure) for o in outcomes)
    assert sorted(outcomes) == [0, 1, 2, 3, 4, 5]
    submitted = [chunk for kind, _, chunk in workers.log if kind == "submit"]
    assert [0] in submitted and [1] in submitted  # the lost chunk, an episode at a time
    workers = _Queued(slots=1, depth=1, lose_at={1, 2})  # [0, 1] lost, then [0] alone
    outcomes = [o for out in supervise(workers, list(range(2)), size=2) for o in out]
    assert [o.spec for o in outcomes if isinstance(o, EpisodeFailure)] == [0]
    assert [o for o in outcomes if not isinstance(o, EpisodeFailure)] == [1]


def test_a_chunk_queued_behind_a_stuck_one_is_played_by_an_idle_worker():
    """Once nothing is left to hand out, an idle worker takes a copy of a chunk waiting
    behind another worker's running one (which may never end: a hanging episode with no
    timeout); every other chunk comes back, once."""
    from turnbudget.eval.run.backends.supervisor import supervise

    workers = _Queued(slots=2, depth=2, stuck={0})
    outcomes = []
    with pytest.raises(RuntimeError, match="only the stuck chunk is left"):
        for out in supervise(workers, list(range(8)), size=1):
            outcomes += out
    stuck = next(e[2] for e in workers.log if e[:2] == ("submit", 0))  # slot 0's first chunk
    assert sorted(outcomes) == sorted(set(range(8)) - set(stuck))  # each once


class _Dies(_Queued):
    """One worker whose first chunk ends with its death after it sent the outcomes of
    ``sent`` (positions in the chunk); ``in_order`` says whether it plays a chunk in order."""

    def __init__(self, sent: list[int], in_order: bool):
        super().__init__(slots=1, depth=1)
        self.sent, self.in_order, self.died = sent, in_order, False

    def wait(self, timeout):
        if self.died:
            return super().wait(timeout)
        self.died = True
        self.chunk = self.held[0].popleft()
        return [(0, "its worker process died")]

    def salvage(self, slot):
        playing = min(set(range(len(self.chunk))) - set(self.sent)) if self.in_order else None
        return {i: self.chunk[i] for i in self.sent}, playing


@pytest.mark.parametrize("in_order", [True, False], ids=["in-order", "batch"])
def test_a_lost_worker_keeps_what_it_finished_of_its_chunk(in_order):
    """A worker lost mid-chunk failed every episode of it: what it had sent counts, and
    where it plays in order (a plain agent) the episode it was playing fails while those
    after it never started and are played, with no failed attempt. A batch agent's worker
    cannot say which of its unfinished episodes was the cause: each is played again in a
    chunk of its own (here none is lost again)."""
    from turnbudget.eval.run.backends.supervisor import supervise
    from turnbudget.eval.run.driver import EpisodeFailure

    workers = _Dies(sent=[0, 2], in_order=in_order)
    outcomes = [o for out in supervise(workers, list(range(8)), size=4) for o in out]
    failed = sorted(o.spec for o in outcomes if isinstance(o, EpisodeFailure))
    assert failed == ([1] if in_order else [])
    played = sorted(o for o in outcomes if not isinstance(o, EpisodeFailure))
    assert played == sorted(set(range(8)) - set(failed)) and len(outcomes) == 8


@pytest.mark.parametrize("own", ["workers", "timeout"])
def test_workers_or_timeout_in_backend_options_is_a_clear_error(own):
    """They went to the backend's constructor beside evaluate's own: "make_backend() got
    multiple values for keyword argument"."""
    with pytest.raises(ValueError, match=f"Expect `{own}` as an argument of its own"):
        evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], tasks=1, backend="pool",
                 backend_options={own: 2})  # fmt: skip


def test_a_folder_named_ray_is_not_taken_for_ray(tmp_path, monkeypatch):
    """`python -m turnbudget eval --backend ray` run in /tmp, without Ray installed, imported
    Ray's own session folder /tmp/ray as an empty package: "AttributeError: module 'ray' has no
    attribute 'is_initialized'". (A package folder here, so that it shadows Ray where Ray is
    installed too.)"""
    import sys

    from turnbudget.eval.run.backends.ray import import_ray

    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = sys.modules.pop("ray", None)
    try:
        with pytest.raises(ImportError, match=r"`import ray` found .*which is not Ray"):
            import_ray()
    finally:
        sys.modules.pop("ray", None)
        if before is not None:
            sys.modules["ray"] = before


class UnavailableBackend(ReversedBackend):
    """A backend whose library is not installed here."""

    def check_available(self) -> None:
        raise ImportError("The unavailable backend needs its library: pip install it")


def test_a_backend_that_cannot_run_here_fails_before_overwrite_deletes_the_run(tmp_path):
    """`--backend ray --overwrite` without Ray deleted the finished run, then failed."""
    register_backend("unavailable", UnavailableBackend)
    out = tmp_path / "run"
    evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], n=1, tasks=2, out=out)
    before = (out / EPISODES_FILE).read_text()
    with pytest.raises(ImportError, match="needs its library"):
        evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], n=1, tasks=2, out=out, overwrite=True,
                 backend="unavailable")  # fmt: skip
    with pytest.raises(ImportError, match="needs its library"):  # a backend given as such
        evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], n=1, tasks=2, out=out, overwrite=True,
                 backend=UnavailableBackend())  # fmt: skip
    assert (out / EPISODES_FILE).read_text() == before


def test_ray_without_ray_fails_before_overwrite_deletes_the_run(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    common = ["eval", "--env", MAZE, "--t", "5", "--k", "1", "--tasks", "2", "--out", str(out)]
    assert main([*common, "--quiet"]) == 0
    before = (out / EPISODES_FILE).read_text()
    monkeypatch.setitem(__import__("sys").modules, "ray", None)  # (import ray: ImportError)
    assert main([*common, "--backend", "ray", "--overwrite", "--quiet"]) == 2
    assert "The ray backend needs Ray" in capsys.readouterr().err
    assert (out / EPISODES_FILE).read_text() == before


@pytest.mark.parametrize("timeout", [None, 600.0])  # (600 s: a hang guard, never reached)
def test_a_batch_agent_on_the_pool_plays_as_many_episodes_at_once_as_in_process(timeout):
    """In rerun mode a task's budgets share the batch agent's episode id, and the driver plays
    them one after another. The pool cut chunks by jobs: with 4 budgets a chunk held 1 (with a
    timeout) or 1 to 2 episodes of a batch of 4, and with a timeout it gave the chunk one
    timeout, which killed the last budget of a task (1.2 s into a 4 s timeout)."""
    from _spies import BatchWidthOracle

    widest = {}
    for backend in ("local", "pool"):
        result = evaluate(MAZE, BatchWidthOracle(0.2, max_batch_size=4), ks=[1], ts=[5, 6, 7, 8],
                          n=1, tasks=8, mode="rerun", backend=backend, workers=1,
                          timeout=timeout, n_bootstrap=0)  # fmt: skip
        widest[backend] = max(step["agent"]["batch"] for step in result.steps)
    assert widest == {"local": 4, "pool": 4}


def test_a_batch_agent_s_pool_starts_no_more_processes_than_it_has_chunks(monkeypatch):
    """Chunks of whole agent episodes: 4 tasks by 4 budgets are one chunk of a batch of 4,
    and 4 workers started 4 processes for it (3 never got a chunk, each loading the agent)."""
    from _spies import BatchNotingOracle

    from turnbudget.eval.run.backends import pool

    started = []
    processes = pool._Processes

    def counted(n, args):
        started.append(n)
        return processes(n, args)

    monkeypatch.setattr(pool, "_Processes", counted)
    for timeout in (None, 600.0):
        evaluate(MAZE, BatchNotingOracle(0.2, max_batch_size=4), ks=[1], ts=[5, 6, 7, 8], n=1,
                 tasks=4, mode="rerun", backend="pool", workers=4, timeout=timeout,
                 n_bootstrap=0)  # fmt: skip
    assert started == [1, 1]


def test_a_chunk_s_time_counts_the_budgets_an_agent_episode_plays_one_after_another():
    from turnbudget.eval.run.backends.supervisor import _Chunks, _rounds

    specs = [EpisodeSpec(MAZE, task, 0, t, 0, 0) for task in range(3) for t in (5, 6, 7, 8)]
    chunks = _Chunks(specs, 2, by_chain=True)
    cut = [chunks.popleft() for _ in range(2)]
    assert [len(c) for c in cut] == [8, 4] and not chunks
    assert [s for c in cut for s in c] == specs  # (in plan order, every job once)
    assert _rounds(cut[0], 2) == 4  # (2 episodes, 2 at a time: their budgets in turn; was 4)
    assert _rounds(specs, 2) == 10  # (3 episodes 2 at a time: 4 + 12 / 2 allowed)
    assert _rounds(specs[:4], 4) == 4  # (one task's budgets: one after another; it was 1)
    assert _rounds(specs[:4], 1) == 4 and _rounds([], 4) == 0
    assert [len(c) for c in iter(_Chunks(specs, 5).popleft, [])] == [5, 5, 2]  # (by jobs)
