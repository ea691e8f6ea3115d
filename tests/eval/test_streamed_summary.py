"""Summaries streamed episode by episode (issue 26: memory flat in the number of episodes).

`RunTally` folds episode records one at a time into per-task and per-(T, outcome)
counts; `summarize_run` is that fold. The summaries it gives must be exactly
those of the batch analysis that sorted and filtered the whole episode list:
`DIGESTS` are the SHA-256 of ``json.dumps(summary, sort_keys=True)`` computed by
that batch code (commit 70cdabc) on the synthetic runs of `synthetic_run`, which
cover truncate, rerun and both modes, errors on and off, episodes that failed to
run (tasks dropped for it), older records without the integer counts or
``budget_counts``, missing and zero optimal lengths, and several envs.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import pytest

from turnbudget.eval.analysis import RunTally, summarize_run
from turnbudget.records import BUDGET_COUNTERS, format_episode_id

ENVS = ("turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0")

#: name -> (envs, mode, ts, ks, n, tasks, failure rate, errors, counts): the synthetic runs.
SCENARIOS: dict[str, tuple[Any, ...]] = {
    "truncate-1env": (ENVS[:1], "truncate", (4, 8, 16), (1, 2), 4, 6, 0.0, False, True),
    "truncate-2env-errors-failures": (
        ENVS,
        "truncate",
        (3, 6, 12),
        (1, 2, 4),
        5,
        7,
        0.08,
        True,
        True,
    ),
    "rerun-2env-failures": (ENVS, "rerun", (5, 10), (1, 3), 4, 5, 0.1, False, True),
    "both-1env-errors": (ENVS[:1], "both", (2, 4, 8, 16), (1, 2, 4), 4, 9, 0.0, True, True),
    "both-2env-old-records": (ENVS, "both", (6, 12), (1, 2), 3, 4, 0.05, True, False),
}

#: The batch analysis's summaries of the synthetic runs (n_bootstrap=50), recorded on the old code
#: (the rerun and "both" ones remade when the step regret came to count the runs at max(T)
#: only: nothing else in them moved; all remade when the rates' score intervals took the
#: modified Wilson's Poisson bounds next to 0 and 1: only interval bounds moved; and
#: "both-2env-old-records" when `length_buckets` gave a bucket to each of no more lengths
#: than buckets: only its long-horizon table moved; all when a rate of none or all below 16
#: trials took the exact bound, and the Poisson's on either side of 1/2: only interval
#: bounds moved; and all when a count some record lacks was totalled as unknown, not as 0:
#: only the totals of the counts these records lack, and their rates, moved, to None).
DIGESTS = {
    "truncate-1env": "8ef9c354813b9725dde12203eda70e2419e05c929f7c73bde64880a0552eb33f",
    "truncate-2env-errors-failures": "9908293e98271b6a7d8bf44ab24a371f78fc466d55a5d4f03ce75ae12429d98c",
    "rerun-2env-failures": "4496a7cdffc1a42eb197b6bf1bf701e94acc66bd874c1e2719bbdf745b60dc78",
    "both-1env-errors": "b4d82b85e255dc56b8c2e23f3a2f689bd0b5cb2f19acd2cb5a0f15332b07e02b",
    "both-2env-old-records": "0daeb496ee23fe1f63a214b3d1c73993782714cc2810d449072b97d438575bbe",
}


def synthetic_run(name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A run configuration and its episode records (in a shuffled order), drawn from a seed."""
    envs, mode, ts, ks, n, tasks, fail, errors, counts = SCENARIOS[name]
    rng = random.Random(name)
    config = {"label": name, "envs": list(envs), "ks": list(ks), "ts": list(ts), "n": n,
              "tasks": list(range(tasks)), "mode": mode, "errors": 0.1 if errors else None}  # fmt: skip
    budgets = [max(ts)] if mode == "truncate" else list(ts)
    episodes = []
    for env_id in envs:
        for seed in range(tasks):
            d_star = None if seed == 1 else 0 if seed == 2 else rng.randint(1, max(ts))
            for rep in range(n):
                for budget in budgets:
                    episodes.append(_episode(rng, env_id, seed, rep, budget, ts, d_star, fail,
                                             errors, counts))  # fmt: skip
    rng.shuffle(episodes)
    return config, episodes


def _episode(rng, env_id, seed, rep, budget, ts, d_star, fail, errors, counts) -> dict[str, Any]:
    base = {"record": "episode", "episode_id": format_episode_id(env_id, seed, rep, budget),
            "env_id": env_id, "seed": seed, "rep": rep, "turn_budget": budget}  # fmt: skip
    if rng.random() < fail:
        return {**base, "failed_to_run": True, "failure": rng.choice(["exception", "timeout"])}
    used = rng.randint(1, budget)
    success = rng.random() < 0.5
    fst = rng.randint(1, used) if success else None
    n_on = rng.randint(0, used)
    e = {**base, "success": success, "first_success_turn": fst, "turns_used": used,
         "initial_distance": d_star, "n_steps_on_track": n_on, "n_steps_after_error": used - n_on,
         "n_errors_self": rng.randint(0, 3), "n_wasted": rng.randint(0, 2),
         "n_invalid": rng.randint(0, 2)}  # fmt: skip
    if counts:
        judged = rng.randint(0, used)
        e.update(n_steps_judged=judged, n_optimal_steps=rng.randint(0, judged),
                 n_optimal_on_track=rng.randint(0, n_on), n_optimal_after_error=0,
                 budget_counts={str(t): [rng.randint(0, 9) for _ in BUDGET_COUNTERS] for t in ts})  # fmt: skip
    else:  # an older record: rates only, no budget_counts
        e["optimal_step_rate"] = round(rng.random(), 6)
    if errors:
        e.update(n_errors_injected=rng.randint(0, 3), n_recovered=rng.randint(0, 2),
                 n_unrecovered=rng.randint(0, 1),
                 turns_to_recover=[rng.randint(1, 6) for _ in range(rng.randint(0, 3))])  # fmt: skip
    if rng.random() < 0.7:  # an agent's own account (sums exact in binary: any order gives them)
        e["agent"] = {"steps": used, "tokens_in": rng.randint(10, 99), "latency_s": used / 8}
    return e


def _digest(summary: dict[str, Any]) -> str:
    """The summary's digest without ``bounds`` and a gap's ``episodes_failed`` (which the
    batch code did not compute: the bounds have their own test below, the count is the
    run's ``failed_to_run`` count, checked here)."""
    summary = json.loads(json.dumps(summary))
    for stats in summary["analysis"].values():
        stats["failed_to_run"].pop("bounds", None)
    for group, entry in summary["groups"].items():
        if "gap" in entry:
            failed = entry["gap"].pop("episodes_failed", None)
            assert failed == (summary["analysis"][group]["failed_to_run"]["episodes"] or None)
    return hashlib.sha256(json.dumps(summary, sort_keys=True).encode()).hexdigest()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_streamed_summary_is_the_batch_summary(name):
    """Fed one record at a time, in any order, the tally gives the batch analysis's JSON."""
    config, episodes = synthetic_run(name)
    for order in range(3):
        random.Random(order).shuffle(episodes)
        tally = RunTally(config)
        for e in episodes:
            tally.add(e)
        assert _digest(tally.summary(n_bootstrap=50)) == DIGESTS[name]
    assert _digest(summarize_run(config, iter(episodes), n_bootstrap=50)) == DIGESTS[name]
    # (records a log's reader checked are not checked again: the same summary)
    checked = summarize_run(config, iter(episodes), n_bootstrap=50, checked=True)
    assert _digest(checked) == DIGESTS[name]


def _direct_bounds(config, episodes, group, mode) -> dict[str, list[float]]:
    """Pass@(1,T) per T over every task of ``group``, each failed episode a loss, then a
    success, straight from the records (the mean over tasks of successes / episodes)."""
    envs = config["envs"] if group == "all" else [group]
    ts = config["ts"]
    rates: dict[str, list[list[float]]] = {"as_losses": [], "as_successes": []}
    for env in envs:
        for seed in config["tasks"]:
            mine = [e for e in episodes if e["env_id"] == env and e["seed"] == seed]
            lost, won = [], []
            for t in ts:
                played = [e for e in mine if e["turn_budget"] == (max(ts) if mode == "truncate"
                                                                  else t)]  # fmt: skip
                wins = sum(bool(e.get("success")) and e["first_success_turn"] <= t for e in played)
                failed = sum(bool(e.get("failed_to_run")) for e in played)
                lost.append(wins / len(played))
                won.append((wins + failed) / len(played))
            rates["as_losses"].append(lost)
            rates["as_successes"].append(won)
    return {bound: [sum(col) / len(col) for col in zip(*rows)] for bound, rows in rates.items()}


@pytest.mark.parametrize("name", [name for name in sorted(SCENARIOS) if SCENARIOS[name][6]])
def test_failure_bounds_are_the_records_counted_each_way_in_any_order(name):
    """``bounds``: every task's failed episodes counted as losses, then as successes, whatever
    the order the records came in."""
    config, episodes = synthetic_run(name)
    modes = ["truncate", "rerun"] if config["mode"] == "both" else [config["mode"]]
    summaries = []
    for order in range(3):
        random.Random(order).shuffle(episodes)
        tally = RunTally(config)
        for e in episodes:
            tally.add(e)
        summaries.append(tally.summary(n_bootstrap=50))
    summaries.append(summarize_run(config, iter(episodes), n_bootstrap=50))
    first = summaries[0]["analysis"]
    assert all(s["analysis"] == first for s in summaries[1:])
    for group, stats in first.items():
        bounds = stats["failed_to_run"]["bounds"]
        assert sorted(bounds) == sorted(modes)
        for mode in modes:
            direct = _direct_bounds(config, episodes, group, mode)
            for bound, rates in direct.items():
                grid = bounds[mode][bound]
                assert grid["n_tasks"] == len(config["tasks"]) * (2 if group == "all" else 1)
                assert grid["mean"][grid["ks"].index(1)] == pytest.approx(rates, abs=1e-6)


if __name__ == "__main__":  # (how DIGESTS were made, on the batch code; remade when
    # Student's t became exact at small df, which moved every interval by < 1%, when a
    # task whose outcomes all agree became one trial of a rate's interval, and when the
    # modified Wilson's Poisson bounds came in next to 0 and 1)
    for scenario in SCENARIOS:
        cfg, eps = synthetic_run(scenario)
        print(f"    {scenario!r}: {_digest(summarize_run(cfg, eps, n_bootstrap=50))!r},")


@pytest.mark.parametrize(
    "grid",
    [
        {"mode": "truncate", "ts": [3, 6]},
        {"mode": "rerun", "ts": [4, 8], "errors": 0.2},
        {"mode": "both", "ts": [3, 6], "errors": 0.2, "record_steps": False},
    ],
    ids=["truncate", "rerun-errors", "both-errors-no-steps"],
)
def test_a_run_directory_is_summarised_from_its_log_without_holding_it(tmp_path, grid):
    """`evaluate` with ``out`` summarises its log one record at a time: the summary is the
    batch analysis of the same records, and ``result.episodes`` reads the log only when used."""
    from turnbudget.agents import OracleAgent
    from turnbudget.eval.report import load_run_summary
    from turnbudget.eval.run.evaluate import evaluate, load_run
    from turnbudget.records import EpisodeLog

    kwargs = {"ks": [1, 2], "n": 2, "tasks": 3, "n_bootstrap": 30, **grid}
    result = evaluate(list(ENVS), OracleAgent(0.3), out=tmp_path / "run", **kwargs)
    assert isinstance(result.episodes, EpisodeLog) and result.episodes._records is None
    memory = evaluate(list(ENVS), OracleAgent(0.3), **kwargs)  # no directory: a list
    assert result.episodes == memory.episodes and len(result.episodes) == len(memory.episodes)
    assert [e["episode_id"] for e in result.episodes] == sorted(
        e["episode_id"] for e in memory.episodes
    )
    batch = summarize_run(result.config, list(result.episodes), n_bootstrap=30)
    assert json.dumps(result.summary, sort_keys=True) == json.dumps(batch, sort_keys=True)
    assert result.summary == memory.summary == load_run_summary(tmp_path / "run", n_bootstrap=30)
    config, log = load_run(tmp_path / "run")
    assert list(log) == list(result.episodes) and sorted(log.stream(), key=str) == sorted(
        log, key=str
    )


def test_an_episode_log_reads_a_copy_once_and_refuses_a_conflicting_one(tmp_path):
    """Streaming keeps `read_episodes`'s rules: an identical copy is read once, a copy with
    different content is a `LogError` naming both lines."""
    from turnbudget.agents import RandomAgent
    from turnbudget.eval.run.evaluate import evaluate, load_run
    from turnbudget.records import LogError

    out = tmp_path / "run"
    evaluate(ENVS[0], RandomAgent(), ks=[1], ts=[3], n=2, tasks=2, out=out, n_bootstrap=0)
    path = out / "episodes.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines) + lines[1])
    assert len(list(load_run(out)[1].stream())) == len(lines)
    # (a field no rule reads: an agent_seed of another run is refused on its own now)
    changed = json.loads(lines[1]) | {"note": "written again"}
    path.write_text("".join(lines) + json.dumps(changed) + "\n")
    with pytest.raises(
        LogError, match=r"line 5: .* logged again with different content \(first at line 2\)"
    ):
        list(load_run(out)[1].stream())


def test_a_result_whose_run_directory_is_gone_says_so_rather_than_reading_empty(tmp_path):
    """``result.episodes`` reads the log on first use: if the directory went first, that is
    an error naming the fix, never an empty run."""
    import shutil

    from turnbudget.agents import RandomAgent
    from turnbudget.eval.run.evaluate import evaluate

    out = tmp_path / "run"
    result = evaluate(ENVS[0], RandomAgent(), ks=[1], ts=[3], n=2, tasks=2, out=out, n_bootstrap=0)
    kept = evaluate(ENVS[0], RandomAgent(), ks=[1], ts=[3], n=2, tasks=2, out=tmp_path / "kept")
    copy = list(kept.episodes)
    shutil.rmtree(out)
    shutil.rmtree(tmp_path / "kept")
    with pytest.raises(
        FileNotFoundError, match=r"episode log .* is missing.*list\(result.episodes\)"
    ):
        len(result.episodes)
    assert len(copy) == 4 and list(kept.episodes) == copy  # read before: held


@pytest.mark.parametrize("backend,workers", [("local", 1), ("pool", 2)])
def test_a_fresh_run_is_summarised_as_its_episodes_finish_and_a_resumed_one_from_its_log(
    tmp_path, monkeypatch, backend, workers
):
    """`evaluate` folds each episode record into the summary as the episode finishes (the
    driver sums while the workers play): a fresh run never reads its log back, and its
    summary is the one `load_run_summary` reads from that log, episodes that failed to run
    and the agent's notes (floats summed) included. A resumed run reads the episodes of the
    calls before from the log, and its summary is the log's too."""
    from _faults import RaisingAgent, seeds_of
    from _spies import NotingOracle

    from turnbudget.eval.report import load_run_summary
    from turnbudget.eval.run.evaluate import evaluate
    from turnbudget.records import EpisodeLog

    reads: list[int] = []
    stream = EpisodeLog.stream
    monkeypatch.setattr(EpisodeLog, "stream", lambda log: reads.append(1) or stream(log))
    grid = dict(
        ks=[1, 2], ts=[4, 8], n=2, tasks=3, mode="both", errors=0.2, n_bootstrap=30,
        backend=backend, workers=workers,
    )  # fmt: skip

    def check(result, out):
        assert not reads  # (load_run_summary's own reads come after)
        from_log = load_run_summary(out, n_bootstrap=30)
        assert json.dumps(result.summary, sort_keys=True) == json.dumps(from_log, sort_keys=True)
        reads.clear()
        return result.summary

    noted = check(evaluate(list(ENVS), NotingOracle(0.3), out=tmp_path / "noted", **grid),
                  tmp_path / "noted")  # fmt: skip
    assert noted["agent_usage"]["p"] > 0 and noted["agent_usage"]["decisions"] > 0

    bad = [(ENVS[0], 1, 0), (ENVS[1], 2, 1)]
    agent = RaisingAgent(0.3, seeds_of(0, bad))
    out = tmp_path / "failing"
    failing = check(evaluate(list(ENVS), agent, out=out, retries=0, **grid), out)
    assert failing["failed_to_run"]["episodes"] == 2 * len(grid["ts"])  # (rerun: every T)

    resumed = evaluate(list(ENVS), agent, out=out, retries=0, **grid)  # (the failed ones again)
    assert resumed.n_run == failing["failed_to_run"]["episodes"] and reads
    assert resumed.summary == load_run_summary(out, n_bootstrap=30) == failing


def test_a_backend_that_hands_an_episode_over_twice_still_gets_the_logs_summary(tmp_path):
    """The log reads an identical copy once; a summary summed in flight would count it twice,
    so then `evaluate` summarises from the log as before (the run is not called incomplete)."""
    from turnbudget.agents import RandomAgent
    from turnbudget.eval.report import load_run_summary
    from turnbudget.eval.run.backends.local import LocalBackend
    from turnbudget.eval.run.evaluate import evaluate

    class Repeating(LocalBackend):
        def run(self, specs):
            for i, outcomes in enumerate(super().run(specs)):
                yield outcomes
                if i == 1:
                    yield outcomes

    out = tmp_path / "run"
    result = evaluate(ENVS[0], RandomAgent(), ks=[1], ts=[3, 6], n=2, tasks=2, out=out,
                      backend=Repeating(), n_bootstrap=20)  # fmt: skip
    lines = (out / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 5 and len(set(lines)) == 4 == result.summary["n_episodes"]
    assert result.summary == load_run_summary(out, n_bootstrap=20)


# -- records made in memory, malformed: each a ValueError naming the field -------------

_RECORD = "truncate-1env"


def _broken(change: Any) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """The synthetic run with its first episode that ran changed by ``change``, and its id."""
    config, episodes = synthetic_run(_RECORD)
    first = next(e for e in episodes if not e.get("failed_to_run"))
    change(first)
    return config, episodes, first["episode_id"]


@pytest.mark.parametrize(
    "change,expect",
    [
        (lambda e: e.pop("turns_used"), "Expect `turns_used` to be an int from 0 to 2147483647, but it is missing"),
        (lambda e: e.pop("env_id"), "Expect `env_id` to be a string, but it is missing"),
        (lambda e: e.pop("turn_budget"), "Expect `turn_budget` to be an int from 0 to 2147483647, but it is missing"),
        (lambda e: e.pop("n_optimal_steps"), "Expect `n_optimal_steps` to be an int from 0 to 2147483647, but it is missing"),
        (lambda e: e.update(seed="x"), "Expect `seed` to be an int, got 'x'"),
        (lambda e: e.update(env_id=None), "Expect `env_id` to be a string, got None"),
        (lambda e: e.update(turns_used=None), "Expect `turns_used` to be an int from 0 to 2147483647, got None"),
        (lambda e: e.update(agent=[1]), "Expect `agent` to be an object of finite numbers"),
        (lambda e: e.update(turns_to_recover=5), "Expect `turns_to_recover` to be a list of such ints, got 5"),
        (lambda e: e.update(budget_counts={"4": [1]}), "Expect `budget_counts` to map each budget"),
        (lambda e: e.update(roles={"a": {}}), "role 'a': Expect `turns_used` to be an int from 0 to 2147483647, but it is missing"),
    ],
    ids=["no-turns_used", "no-env_id", "no-turn_budget", "no-n_optimal_steps", "str-seed",
         "null-env_id", "null-turns_used", "agent-list", "int-turns_to_recover",
         "short-budget_counts", "empty-role"],
)  # fmt: skip
def test_a_malformed_record_in_memory_names_its_field(change, expect):
    """`summarize_run` and `RunTally` of records made in memory: a missing or mistyped field
    was a bare ``KeyError: 'turns_used'`` (or a TypeError, an AttributeError) naming no record."""
    config, episodes, episode_id = _broken(change)
    with pytest.raises(ValueError, match="Cannot read episode record") as caught:
        summarize_run(config, episodes, n_bootstrap=0)
    assert repr(episode_id) in str(caught.value) and expect in str(caught.value)
    with pytest.raises(ValueError, match="Cannot read episode record") as caught:
        tally = RunTally(config)
        for e in episodes:
            tally.add(e)
        tally.summary(n_bootstrap=0)
    assert expect in str(caught.value)


def test_a_record_without_its_identity_is_refused_before_it_is_counted():
    config, episodes, _ = _broken(lambda e: e.pop("seed"))
    tally = RunTally(config)
    bad = next(e for e in episodes if "seed" not in e)
    with pytest.raises(ValueError, match="Expect `seed` to be an int, but it is missing"):
        tally.add(bad)
    assert tally.n_episodes == 0 and not tally.tasks


@pytest.mark.parametrize("bad", [None, 1, "episode", ["a"]])
def test_an_episode_record_that_is_no_dict_is_named(bad):
    from turnbudget.eval.analysis import (
        agent_usage,
        failure_counts,
        feasibility_analysis,
        step_stats,
        task_grid_arrays,
    )  # fmt: skip

    config, episodes = synthetic_run(_RECORD)
    expect = "Expect an episode record (a dict), got "
    calls = [
        lambda: summarize_run(config, [bad, *episodes], n_bootstrap=0),
        lambda: task_grid_arrays([bad], [1], [4], "truncate"),
        lambda: feasibility_analysis([bad], [1], [4], "truncate", n_bootstrap=0),
        lambda: step_stats([bad]),
        lambda: failure_counts([bad]),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="Cannot read episode record") as caught:
            call()
        assert expect + repr(bad) in str(caught.value)
    with pytest.raises(ValueError, match="Expect `agent` to be an object of numbers"):
        agent_usage([bad])


def test_the_other_entry_points_name_a_missing_field():
    from turnbudget.eval.analysis import (
        agent_usage,
        budget_analysis,
        budget_counts,
        feasibility_analysis,
        step_stats,
        task_grid_arrays,
    )  # fmt: skip

    config, episodes = synthetic_run(_RECORD)
    e = next(e for e in episodes if not e.get("failed_to_run"))
    no_seed = [{k: v for k, v in e.items() if k != "seed"}]
    for call in (
        lambda: task_grid_arrays(no_seed, [1], [4], "truncate"),
        lambda: feasibility_analysis(no_seed, [1], [4], "truncate", n_bootstrap=0),
    ):
        with pytest.raises(ValueError, match="Expect `seed` to be an int, but it is missing"):
            call()
    # (step_stats reads no identity: what it misses is named)
    with pytest.raises(ValueError, match=r"Expect `turns_used` to be an int .*, but it is missing"):
        step_stats([{"success": False, "first_success_turn": None}])
    with pytest.raises(
        ValueError, match=r"Expect `agent` to be an object of numbers, got \{'steps': 'x'\}"
    ):
        agent_usage([{"agent": {"steps": 1}}, {"agent": {"steps": "x"}}])
    step = {"turn": 1, "optimal": True, "phase": "on_track"}
    with pytest.raises(ValueError, match=r"Cannot read step record .*Expect `turn` to be an int"):
        budget_counts([step, {"optimal": True}], [1, 2])
    with pytest.raises(ValueError, match="Expect `recoveries` to be a list of such ints, got 'ab'"):
        budget_counts([{**step, "recoveries": "ab"}], [1])
    with pytest.raises(ValueError, match="Expect `injected_error` to be null or an object"):
        budget_counts([{**step, "injected_error": "ab"}], [1])
    old = {k: v for k, v in e.items() if k != "budget_counts"}
    steps = [{**step, "turn": t} for t in range(1, old["turns_used"] + 1)]  # (no episode_id)
    with pytest.raises(ValueError, match="Expect `episode_id` to be a string, but it is missing"):
        budget_analysis(config, [old], steps)
    with pytest.raises(ValueError, match="Expect `episode_id` to be a string, but it is missing"):
        summarize_run(config, [old], n_bootstrap=0, steps=steps)


@pytest.mark.parametrize(
    "change,expect",
    [
        (lambda c: c.pop("ts"), r"Expect `config` to hold .*; it lacks \['ts'\]"),
        (lambda c: c.pop("label"), r"it lacks \['label'\]"),
        (lambda c: c.update(ts=[]), "Expect `ts` to hold at least one value, got none"),
        (lambda c: c.update(ks="12"), "Expect `ks` to be a list of positive ints, got '12'"),
        (lambda c: c.update(mode="x"), "Expect `config` mode truncate, rerun or both, got 'x'"),
    ],
    ids=["no-ts", "no-label", "empty-ts", "str-ks", "bad-mode"],
)
def test_a_malformed_config_is_named(change, expect):
    config, episodes = synthetic_run(_RECORD)
    change(config)
    with pytest.raises(ValueError, match=expect):
        summarize_run(config, episodes, n_bootstrap=0)
    with pytest.raises(
        TypeError, match=r"Expect `config` to be an EvalConfig or a dict, got \[1\]"
    ):
        RunTally([1])


def test_a_count_older_records_lack_is_unknown_not_zero():
    """Records written before ``n_wasted`` and ``n_invalid`` were counted: their totals read
    0, and the report said no turn was wasted, beside a table of wasted turns per budget."""
    config, episodes = synthetic_run("truncate-1env")
    full = summarize_run(config, iter(episodes), n_bootstrap=0)["analysis"][ENVS[0]]
    assert full["wasted_rate"] > 0 and full["invalid_rate"] > 0
    older = [{k: v for k, v in e.items() if k != "n_wasted"} for e in episodes]
    older[0] = episodes[0]  # (one record that has it is not enough: the total is unknown)
    stats = summarize_run(config, iter(older), n_bootstrap=0)["analysis"][ENVS[0]]
    assert stats["wasted"] is None and stats["wasted_rate"] is None
    assert stats["invalid_rate"] == full["invalid_rate"]  # (the others as they were)
