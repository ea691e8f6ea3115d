"""The engine and async agents: concurrency, agents' step notes in the records, streaming writes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from turnbudget.agents import AsyncBatch, RandomAgent
from turnbudget.eval.run.evaluate import evaluate
from turnbudget.records import EPISODES_FILE, STEPS_FILE, read_jsonl

MAZE = "turnbudget/Maze-Easy-v0"


class AsyncRandom:
    """An `AsyncAgent` (and `Agent`) that waits like a server would, and notes each decision."""

    needs_oracle = False
    budget_aware = False
    default_concurrency = 4
    in_flight = 0  # class-wide: the most requests seen at once
    most_in_flight = 0

    def __init__(self) -> None:
        self._rng = np.random.default_rng(0)
        self._note: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return "AsyncRandom()"

    def reset(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    async def reset_async(self, seed: int) -> None:
        self.reset(seed)

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        actions = list(info["admissible_actions"])
        command = actions[int(self._rng.integers(len(actions)))]
        self._note = {"reply": command, "tokens_in": len(observation), "admissible": True}
        return command

    async def act_async(self, observation: str, info: Mapping[str, Any]) -> str:
        cls = type(self)
        cls.in_flight += 1
        cls.most_in_flight = max(cls.most_in_flight, cls.in_flight)
        try:
            await asyncio.sleep(0.001)
            return self.act(observation, info)
        finally:
            cls.in_flight -= 1

    def step_note(self) -> dict[str, Any] | None:
        return self._note


def _run(tmp_path, name: str, **kwargs: Any):
    out = tmp_path / name
    result = evaluate(MAZE, AsyncRandom(), ks=(1, 2), ts=(4, 8), tasks=3, n=2, out=out, **kwargs)
    return result, read_jsonl(out / EPISODES_FILE)[0], read_jsonl(out / STEPS_FILE)[0]


def test_concurrency_does_not_change_results_and_is_bounded(tmp_path):
    AsyncRandom.most_in_flight = 0
    one, eps1, steps1 = _run(tmp_path, "c1", concurrency=1)
    assert AsyncRandom.most_in_flight == 0  # concurrency 1: the blocking `act`
    four, eps4, steps4 = _run(tmp_path, "c4")  # the agent's default_concurrency: 4
    assert 1 < AsyncRandom.most_in_flight <= 4
    two_workers, eps2, _ = _run(tmp_path, "w2", workers=2)  # the AsyncBatch is pickled
    assert one.summary["groups"] == four.summary["groups"] == two_workers.summary["groups"]
    assert sorted(eps1, key=lambda e: e["episode_id"]) == sorted(
        eps2, key=lambda e: e["episode_id"]
    )
    assert sorted(eps1, key=lambda e: e["episode_id"]) == sorted(
        eps4, key=lambda e: e["episode_id"]
    )
    key = lambda s: (s["episode_id"], s["turn"])  # noqa: E731
    assert sorted(steps1, key=key) == sorted(steps4, key=key)


def test_step_notes_join_the_step_records_and_sum_per_episode(tmp_path):
    result, episodes, steps = _run(tmp_path, "notes", concurrency=3)
    assert steps and all(s["agent"]["reply"] == s["action"] for s in steps)
    for e in episodes:
        mine = [s for s in steps if s["episode_id"] == e["episode_id"]]
        assert e["agent"] == {
            "tokens_in": sum(s["agent"]["tokens_in"] for s in mine),
            "admissible": len(mine),
            "steps": len(mine),
        }
    usage = result.summary["agent_usage"]
    assert usage["steps"] == len(steps) and usage["admissible_rate"] == 1.0


def test_agents_without_notes_leave_records_unchanged(tmp_path):
    result = evaluate(MAZE, RandomAgent(), ks=(1,), ts=(4,), tasks=2, n=1, out=tmp_path / "r")
    steps = read_jsonl(tmp_path / "r" / STEPS_FILE)[0]
    assert "agent" not in steps[0] and "agent" not in result.episodes[0]
    assert "agent_usage" not in result.summary


def test_concurrency_argument_is_checked():
    with pytest.raises(ValueError, match=r"Expect `concurrency` to be an int from 1 to 4,096"):
        evaluate(MAZE, AsyncRandom(), ks=(1,), ts=(4,), tasks=1, concurrency=0)
    with pytest.raises(ValueError, match="needs an async agent"):
        evaluate(MAZE, RandomAgent(), ks=(1,), ts=(4,), tasks=1, concurrency=2)
    batch = AsyncBatch(AsyncRandom, max_batch_size=2)
    with pytest.raises(ValueError, match="batch agent"):
        evaluate(MAZE, batch, ks=(1,), ts=(4,), tasks=1, concurrency=2)


def test_async_batch_concurrency_limits_requests_in_flight():
    AsyncRandom.most_in_flight = 0
    batch = AsyncBatch(AsyncRandom, max_batch_size=8, concurrency=2)
    ids = [str(i) for i in range(8)]
    for i, e in enumerate(ids):
        batch.reset_episode(e, i)
    info = {"admissible_actions": ["north", "south"]}
    actions = batch.act_batch(ids, ["obs"] * 8, [info] * 8)
    assert len(actions) == 8 and AsyncRandom.most_in_flight == 2
    assert [n["reply"] for n in batch.step_notes(ids)] == actions
    batch.close()
    with pytest.raises(ValueError, match="concurrency"):
        AsyncBatch(AsyncRandom, concurrency=0)


class AsyncNeverAnswers(AsyncRandom):
    """An `AsyncRandom` whose requests never end (a server that holds them): its in-flight
    counts are its own."""

    in_flight = 0
    most_in_flight = 0

    async def act_async(self, observation: str, info: Mapping[str, Any]) -> str:
        cls = type(self)
        cls.in_flight += 1
        cls.most_in_flight = max(cls.most_in_flight, cls.in_flight)
        try:
            await asyncio.Event().wait()
            raise AssertionError("unreachable: nothing sets the event")
        finally:
            cls.in_flight -= 1


def test_an_episode_timeout_ends_the_batchs_requests(tmp_path):
    """An episode's timeout (a signal's handler, raised in the batch's event loop) left the
    batch's requests pending: the next batch ran beside them, more requests in flight than
    ``concurrency`` allows, and they resumed in later calls. They are now cancelled with the
    episodes."""
    with pytest.raises(ValueError, match="no task"):  # (every episode timed out)
        evaluate(
            MAZE, AsyncNeverAnswers(), ks=(1,), ts=(4,), tasks=4, concurrency=2, timeout=0.5,
            retries=0, n_bootstrap=0, backend="local", out=tmp_path / "run",
        )  # fmt: skip
    assert AsyncNeverAnswers.most_in_flight == 2 and AsyncNeverAnswers.in_flight == 0
    failures = [e["failure"] for e in read_jsonl(tmp_path / "run" / EPISODES_FILE)[0]]
    assert failures == ["timeout"] * 4


class AsyncBlocksItsLoop(AsyncRandom):
    """An `AsyncRandom` whose requests block its event loop for good (a blocking client
    called inside ``act_async``, its server holding the request)."""

    async def act_async(self, observation: str, info: Mapping[str, Any]) -> str:
        while True:
            time.sleep(3600)


@pytest.mark.timeout(600, method="thread")  # a guard: a regression hangs
def test_an_episode_timeout_ends_requests_that_block_the_event_loop(tmp_path):
    """The timeout's signal fired once: it ended the first blocked request, and the next
    request of the batch then blocked the loop for ever. It fires again while the batch
    call runs on, so each episode fails as a timeout and the run ends."""
    with pytest.raises(ValueError, match="no task"):  # (every episode timed out)
        evaluate(
            MAZE, AsyncBlocksItsLoop(), ks=(1,), ts=(4,), tasks=2, concurrency=2, timeout=0.5,
            retries=0, n_bootstrap=0, backend="local", out=tmp_path / "run",
        )  # fmt: skip
    failures = [e["failure"] for e in read_jsonl(tmp_path / "run" / EPISODES_FILE)[0]]
    assert failures == ["timeout"] * 2


class OddNotes(RandomAgent):
    """`RandomAgent`, noting each decision with keys and values JSON rewrites (an int, a bool
    and None as keys, a NumPy number, a tuple); on the episodes of ``bad_seeds`` its note is
    ``bad`` (what JSON cannot write, or not a mapping)."""

    def __init__(self, bad: Any = None, bad_seeds: frozenset[int] = frozenset()) -> None:
        super().__init__()
        self.bad, self.bad_seeds, self.seed = bad, bad_seeds, None

    def __repr__(self) -> str:
        return "OddNotes()"

    def reset(self, seed: int) -> None:
        self.seed = seed
        super().reset(seed)

    def step_note(self) -> Any:
        if self.seed in self.bad_seeds:
            return self.bad
        return {3: 1, True: 2, None: 0.5, "tokens_in": np.int64(4), "t": (1, "x")}


def test_an_episode_record_sums_a_bounded_number_of_bounded_note_keys(tmp_path):
    """An episode record summed every key of every note as it was: 700 keys of 100,000
    characters made a 70 MB episode line, which the records' reader refuses (the finished
    run could not be reported). The sums keep each key as the step records keep it, and at
    most `MAX_USAGE_KEYS` of them; every note stays whole in the steps."""
    from turnbudget.eval.report import load_run_summary
    from turnbudget.eval.run.episodes import MAX_USAGE_KEYS
    from turnbudget.records import MAX_RECORD_TEXT, cap_text

    keys = [f"long{i}" + "k" * 5000 for i in range(3)] + [f"{i:03d}" for i in range(MAX_USAGE_KEYS)]

    class ManyKeys:
        def reset(self, seed):
            self.turn = 0

        def act(self, observation, info):
            self.turn += 1
            return info["admissible_actions"][0]

        def step_note(self):
            return dict.fromkeys(keys[self.turn % 2 :: 2] if self.turn > 2 else keys, 1)

    out = tmp_path / "run"
    result = evaluate(MAZE, ManyKeys(), ks=(1,), ts=(4,), tasks=1, n=1, n_bootstrap=0, out=out)
    (episode,) = read_jsonl(out / EPISODES_FILE)[0]
    usage = episode["agent"]
    assert len(usage) == MAX_USAGE_KEYS + 1 and usage["steps"] == 4
    assert all(len(k) <= MAX_RECORD_TEXT for k in usage)
    assert {k: v for k, v in usage.items() if k != "steps"} == dict.fromkeys(
        map(cap_text, keys[:MAX_USAGE_KEYS]), 3
    )  # (the first 256 keys seen, each in the first two notes and in one of the next two)
    assert len(read_jsonl(out / STEPS_FILE)[0][0]["agent"]) == len(keys)
    assert result.summary == load_run_summary(out, n_bootstrap=0)


def test_a_note_total_past_1e15_is_left_out_and_the_run_resumes(tmp_path):
    """Each note's number was checked against the records' bound (1e15), their episode sum
    was not: a clock in nanoseconds or a running token count over a few turns made an
    episode line the records' reader refused, so the run could neither resume nor report."""
    from turnbudget.agents import OracleAgent
    from turnbudget.eval.report import load_run_summary

    class Clocked(OracleAgent):
        def step_note(self):
            return {"t_ns": 10**15, "tokens": 7}

        def __repr__(self) -> str:
            return "Clocked()"

    out = tmp_path / "run"
    grid = dict(ks=(1,), ts=(6,), tasks=2, n=1, n_bootstrap=0, out=out)
    result = evaluate(MAZE, Clocked(0.0), **grid)
    for episode in result.episodes:
        assert (
            "t_ns" not in episode["agent"]
            and episode["agent"]["tokens"] == 7 * episode["agent"]["steps"]
        )
    assert evaluate(MAZE, Clocked(0.0), **grid).n_run == 0  # (resumed: every line read back)
    assert result.summary == load_run_summary(out, n_bootstrap=0)
    assert read_jsonl(out / STEPS_FILE)[0][0]["agent"]["t_ns"] == 10**15  # (each step keeps it)


def test_a_step_note_is_kept_as_json_keeps_it_and_a_bad_one_fails_only_its_episode(tmp_path):
    """A note is what the log and a sealed agent's pipe make of it (JSON), so the summary
    summed in flight is the log's and sealing changes nothing; a note JSON cannot write, or
    one that is not a mapping, ends its episode with an error that says so (the run goes on:
    a note is never a crash)."""
    from _faults import seeds_of

    from turnbudget.eval.report import load_run_summary

    grid = dict(ks=(1,), ts=(4,), tasks=3, n=1, n_bootstrap=0, retries=0)
    out = tmp_path / "odd"
    odd = evaluate(MAZE, OddNotes(), out=out, **grid)
    steps = read_jsonl(out / STEPS_FILE)[0]
    assert steps[0]["agent"] == {"3": 1, "true": 2, "null": 0.5, "tokens_in": 4, "t": [1, "x"]}
    assert odd.summary["agent_usage"]["3"] == len(steps) == odd.summary["agent_usage"]["steps"]
    assert odd.summary == load_run_summary(out, n_bootstrap=0)
    sealed = evaluate(MAZE, OddNotes(), out=tmp_path / "sealed", sealed=True, **grid)
    assert read_jsonl(tmp_path / "sealed" / STEPS_FILE)[0] == steps
    assert sealed.summary["agent_usage"] == odd.summary["agent_usage"]

    bad = seeds_of(0, [(MAZE, 1, 0)])
    for note, why in [
        ({(1, 2): 1}, "Expect a step note that JSON can write, got one it cannot (TypeError: keys"),
        (
            {"a": [object()]},
            "Expect a step note that JSON can write, got one it cannot (TypeError: object",
        ),
        (["tokens", 3], "Expect a step note to be a mapping or None, got list"),
        # (a 70 MB line the records' reader refused: the run could not be resumed)
        (
            {"history": ["x" * 5000] * 300},
            "Expect a step note of at most 1,048,576 bytes as JSON once its strings are cut to "
            "4,096 characters, got 1,2",
        ),
        # (the agent's own "steps" was replaced by the count of notes, its sum lost)
        ({"steps": 5}, "Expect a step note without the key 'steps'"),
    ]:
        result = evaluate(MAZE, OddNotes(note, bad), **grid)
        (failed,) = [e for e in result.episodes if e.get("failed_to_run")]
        assert failed["seed"] == 1 and failed["error"].startswith(f"TypeError: {why}")
        assert result.summary["analysis"][MAZE]["episodes"] == 2
