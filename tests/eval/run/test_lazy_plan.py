"""The plan is made when asked for (issue 26): the same episodes in the same order as the
list `plan_episodes` used to sort, resume skipping what is done, and no job held up front."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from turnbudget.agents import make_agent
from turnbudget.eval.run.driver import Driver
from turnbudget.eval.run.episodes import EvaluationEpisodes
from turnbudget.eval.run.evaluate import evaluate
from turnbudget.eval.run.jobs import Remaining
from turnbudget.eval.run.plan import (
    EpisodePlan,
    EpisodeSpec,
    agent_seed,
    make_config,
    plan_episodes,
)

MAZE, KEYQUEST = "turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0"


def old_plan_episodes(config):
    """`plan_episodes` as it was before the plan became lazy (commit 0f24d13): a sorted list."""
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


def _config(envs, tasks, ts=(4, 8, 16), n=3, mode="rerun", seed=0):
    return make_config(
        envs, make_agent("random"), ks=[1], ts=list(ts), n=n, tasks=tasks, mode=mode,
        reveal=None, errors=None, seed=seed, label=None, record_steps=True,
    )  # fmt: skip


CONFIGS = {
    "one env, rerun": _config([MAZE], 3),
    # env ids out of sorted order (env_index follows the config, order the id), seeds unsorted
    "two envs unsorted, seeds unsorted": _config([MAZE, KEYQUEST], [7, 2, 11, 0], seed=5),
    "truncate": _config([KEYQUEST, MAZE], 4, mode="truncate"),
    "both": _config([MAZE], [3, 1], ts=(16, 4), n=2, mode="both"),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_the_lazy_plan_is_the_old_list_in_the_same_order(name):
    config = CONFIGS[name]
    old, plan = old_plan_episodes(config), plan_episodes(config)
    assert isinstance(plan, EpisodePlan) and len(plan) == len(old)
    specs = list(plan)
    assert specs == old  # (identity fields)
    assert [(s.env_index, s.agent_seed) for s in specs] == [
        (s.env_index, s.agent_seed) for s in old
    ]
    assert [plan[i] for i in range(len(old))] == old  # index arithmetic, not only iteration
    assert [(s.env_index, s.agent_seed) for s in plan[1:-1:2]] == [
        (s.env_index, s.agent_seed) for s in old[1:-1:2]
    ]
    assert plan[-1] == old[-1] and plan == old
    with pytest.raises(IndexError):
        plan[len(old)]


def test_the_plan_holds_no_episode_until_asked():
    config = _config([MAZE, KEYQUEST], 1000, ts=(8, 16, 32, 64), n=50)  # 400,000 episodes
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        plan = plan_episodes(config)
        held = tracemalloc.get_traced_memory()[0] - before
        assert len(plan) == 400_000 and plan[-1].episode_id == f"{MAZE}|seed=999|rep=49|T=64"
    finally:
        tracemalloc.stop()
    assert held < 200_000  # bytes: the task seeds; a list of the specs took ~80 MB


@pytest.mark.parametrize(
    "done",
    [set(), {0}, {0, 1, 2, 3}, {5, 6, 7}, {1, 4, 9, 10, 11}, set(range(12)), {11}],
    ids=repr,
)
def test_remaining_is_the_filtered_list(done):
    specs = list(plan_episodes(_config([MAZE], 2, ts=(4, 8), n=3)))  # 12
    ids = {specs[i].episode_id for i in done}
    expected = [s for s in specs if s.episode_id not in ids]
    rest = Remaining(plan_episodes(_config([MAZE], 2, ts=(4, 8), n=3)), ids)
    assert len(rest) == len(expected) and list(rest) == expected
    assert [rest[j] for j in range(len(expected))] == expected
    for start in range(len(expected) + 1):
        for stop in range(start, len(expected) + 2):
            assert rest[start:stop] == expected[start:stop]
    assert rest[::2] == expected[::2] and rest[::-1] == expected[::-1]
    if expected:
        assert rest[-1] == expected[-1]
    with pytest.raises(IndexError):
        rest[len(expected)]


def test_a_batch_agent_takes_its_jobs_from_the_plan_as_slots_free(tmp_path):
    """The batch driver reads the plan as slots free up, and its results are the same."""

    class Batch:
        """`RandomAgent` behind the batch protocol (one generator per episode id)."""

        max_batch_size = 3

        def __init__(self):
            self.seen: list[int] = []
            self.agents: dict[str, object] = {}

        def reset_episode(self, episode_id, seed):
            self.agents[episode_id] = agent = make_agent("random")
            agent.reset(seed)

        def act_batch(self, ids, observations, infos):
            self.seen.append(len(ids))
            return [self.agents[i].act(o, f) for i, o, f in zip(ids, observations, infos)]

        def end_episode(self, episode_id):
            del self.agents[episode_id]

    config = _config([MAZE], 3, ts=(4, 8), n=2)
    taken = []

    class Counting(EpisodePlan):
        def __iter__(self):
            for spec in super().__iter__():
                taken.append(spec)
                yield spec

    driver = Driver(Batch(), config, kind=EvaluationEpisodes)
    stream = driver.stream(Counting(config))
    first = next(stream)  # the first episode to end: a few jobs read, not the whole plan
    assert len(taken) < len(plan_episodes(config))
    rest = [first, *stream]
    by_id = {job.episode_id: outcome for job, outcome in rest}
    assert set(by_id) == {s.episode_id for s in plan_episodes(config)}
    plain = evaluate(MAZE, make_agent("random"), ks=[1], ts=[4, 8], n=2, tasks=3, mode="rerun")
    for episode in plain.episodes:
        assert by_id[episode["episode_id"]][0] == episode


def test_resume_runs_only_what_is_missing_in_plan_order(tmp_path):
    kwargs = dict(ks=[1, 2], ts=[4, 8], n=2, tasks=4, mode="rerun", out=tmp_path / "run")
    full = evaluate(MAZE, make_agent("random"), **{**kwargs, "out": tmp_path / "full"})
    lines = (tmp_path / "full" / "episodes.jsonl").read_text().splitlines(keepends=True)
    first = evaluate(MAZE, make_agent("random"), **kwargs)
    assert first.n_run == 16
    log = tmp_path / "run" / "episodes.jsonl"
    kept = lines[:3] + lines[7:9]
    log.write_text("".join(kept))
    ids = {json.loads(line)["episode_id"] for line in kept}  # (their steps stay: resume checks)
    steps = tmp_path / "run" / "steps.jsonl"
    steps.write_text(
        "".join(s for s in steps.read_text().splitlines(True) if json.loads(s)["episode_id"] in ids)
    )
    again = evaluate(MAZE, make_agent("random"), **kwargs)
    assert again.n_run == 16 - len(kept)
    assert log.read_text().splitlines(keepends=True)[len(kept) :] == [
        line for line in lines if line not in kept
    ]  # the missing ones, appended in plan order
    assert list(again.episodes) == list(full.episodes)
