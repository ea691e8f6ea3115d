"""Teacher-forced probes: single-step and recovery-specific skills, the budget shown, no-ops,
the executed-command hook, batch agents, CLI."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pytest

from turnbudget.agents import EXECUTED_KEY, AsyncBatch, OracleAgent, RandomAgent
from turnbudget.eval.probes.run import probe
from turnbudget.eval.probes.summary import skill

ENVS = ["turnbudget/Maze-Medium-v0", "turnbudget/KeyQuest-Medium-v0"]
EPSILON = 0.3


@pytest.fixture(scope="module")
def skills() -> dict[str, Any]:
    """One probe run of three agents against one random baseline (30 tasks per env)."""
    agents = [RandomAgent(), OracleAgent(0.0), OracleAgent(EPSILON)]
    result = probe(ENVS, agents, tasks=30, repeats=2, n_bootstrap=400)
    out = {label: groups["all"] for label, groups in result.summary["agents"].items()}
    q, singles = 1.0 - EPSILON, [s for s in result.specs if s.probe == "single"]
    hits = sum(q + EPSILON * s.n_optimal / s.n_admissible for s in singles)
    judged = sum(q + EPSILON * s.n_changing / s.n_admissible for s in singles)
    chance = sum(s.n_optimal / s.n_admissible for s in singles) / sum(
        s.n_changing / s.n_admissible for s in singles
    )
    out["_expected"] = (hits / judged - chance) / (1.0 - chance)
    return out


def test_random_agent_scores_chance(skills):
    g = skills["random"]
    assert abs(g["single_step_skill"]["mean"]) <= 0.1
    rs = g["recovery_specific_skill"]
    assert abs(rs["mean"]) <= 0.1 and rs["low"] <= 0.0 <= rs["high"]
    # Probed with seeds of its own, so the baseline is an independent draw, not itself.
    assert g["single_step"]["rate"] != g["single_step"]["baseline_rate"]
    assert g["single_step"]["probes"] > 300 and g["recovery"]["all"]["pairs"] > 300


def test_perfect_oracle_scores_one_with_an_honest_interval(skills):
    g = skills["oracle-eps0"]
    s = g["single_step_skill"]
    assert s["mean"] == s["high"] == 1.0
    assert 0.8 < s["low"] < 1.0  # every answer optimal: the interval still has a width
    rs = g["recovery_specific_skill"]
    assert rs["mean"] == 0.0 and rs["low"] < 0.0 < rs["high"]  # every pair agrees: not [0, 0]
    assert g["single_step"]["rate"] == 1.0
    assert g["recovery"]["all"]["recovery_rate"] == 1.0
    # The budget leaves room to win after the error, and the control wins too.
    assert g["recovery"]["all"]["win_rate"]["mean"] == 1.0
    assert g["recovery"]["all"]["control_win_rate"]["mean"] == 1.0
    assert g["recovery"]["all"]["win_rate"]["low"] < 1.0


def test_noisy_oracle_single_step_skill_is_its_exact_expectation(skills):
    """Among the answers that change the state, p = (q + eps a) / (q + eps b) per state (q = 1 -
    eps, a and b the shares of optimal and of state-changing admissible commands), and chance
    a / b: the skill is above 1 - eps (its random picks that are no-ops are not errors) and
    decreasing in eps."""
    s = skills[f"oracle-eps{EPSILON:g}"]["single_step_skill"]
    assert s["low"] <= skills["_expected"] <= s["high"]
    assert s["high"] - s["low"] < 0.3
    assert skills["_expected"] > 1.0 - EPSILON
    g = skills[f"oracle-eps{EPSILON:g}"]["single_step"]
    assert 0.1 < g["chance_rate"] < 0.6  # the exact chance rate, beside the measured one
    assert abs(g["baseline_rate"] - g["chance_rate"]) < 0.05
    assert 0.0 < g["noop_rate"]["mean"] < EPSILON  # its random looks, counted apart


def test_skill_formula():
    assert skill(0.2, 0.2) == 0.0
    assert skill(1.0, 0.3) == 1.0
    assert skill(0.5, 1.0) is None
    # NaN was a NaN skill, quietly, and a rate past 1 a number
    for p, p_random, name in ((math.nan, 0.1, "p"), (0.5, math.nan, "p_random"),
                              (1.5, 0.1, "p"), (0.5, True, "p_random")):  # fmt: skip
        with pytest.raises(ValueError, match=f"Expect `{name}` to be a number in"):
            skill(p, p_random)


class Recorder:
    """Follows the oracle and logs what the engine tells it."""

    needs_oracle = True
    budget_aware = False
    name = "recorder"

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self._oracle = OracleAgent(0.0)

    def reset(self, seed: int) -> None:
        self._oracle.reset(seed)
        self.events.append(("reset", seed))

    def observe(self, observation: str, info: Mapping[str, Any], executed: str) -> None:
        self.events.append(("observe", (executed, info.get(EXECUTED_KEY))))

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        assert "turns_left" not in info and "turn_budget" not in info  # a hidden budget
        self.events.append(("act", info.get(EXECUTED_KEY)))
        return self._oracle.act(observation, info)


def test_forced_prefix_and_slip_reach_the_agent_as_executed():
    agent = Recorder()
    result = probe("turnbudget/Maze-Medium-v0", agent, tasks=[3], kinds=["slip"], n_bootstrap=0)
    specs = [s for s in result.specs]
    episodes: list[list[tuple[str, Any]]] = []
    for event in agent.events:
        if event[0] == "reset":
            episodes.append([])
        else:
            episodes[-1].append(event)
    assert len(episodes) == len(specs)
    for spec, events in zip(specs, episodes, strict=True):
        forced = [e[1] for e in events if e[0] == "observe"]
        prefix = list(spec.plan[: spec.start])
        slip = [str(spec.error)] if spec.probe == "recovery" and spec.applied else []
        assert [executed for executed, _ in forced] == prefix + slip
        # Each call after the first turn carries the command executed on the previous turn.
        previous = [None, *(prefix + slip)]
        assert [seen for _, seen in forced] == previous[: len(forced)]
        acts = [e[1] for e in events if e[0] == "act"]
        if acts:
            assert acts[0] == previous[len(forced)]


class BatchOracle:
    """A `BatchAgent` running one Recorder per episode (to compare with the one-at-a-time engine)."""

    needs_oracle = True
    budget_aware = False
    max_batch_size = 5
    name = "recorder"

    def __init__(self) -> None:
        self._agents: dict[str, Recorder] = {}
        self.observed = 0

    def reset_episode(self, episode_id: str, seed: int) -> None:
        self._agents[episode_id] = Recorder()
        self._agents[episode_id].reset(seed)

    def observe_batch(self, ids: Sequence[str], observations, infos, executed) -> None:
        self.observed += len(ids)
        for e, o, i, a in zip(ids, observations, infos, executed, strict=True):
            self._agents[e].observe(o, i, a)

    def act_batch(self, ids: Sequence[str], observations, infos) -> list[str]:
        return [self._agents[e].act(o, i) for e, o, i in zip(ids, observations, infos, strict=True)]

    def end_episode(self, episode_id: str) -> None:
        self._agents.pop(episode_id)


def test_batch_agent_gives_the_same_records():
    kwargs = dict(tasks=[1, 2], n_bootstrap=0, baseline_repeats=1)
    one = probe("turnbudget/KeyQuest-Medium-v0", Recorder(), **kwargs)
    batch_agent = BatchOracle()
    many = probe("turnbudget/KeyQuest-Medium-v0", batch_agent, **kwargs)
    assert one.records == many.records
    assert batch_agent.observed > 0


def test_a_batch_agent_knows_its_probes_by_opaque_distinct_ids():
    """The ids were ``probe-<index>`` in plan order: a recovery probe's matched control was
    the next index, so an agent could tell a control from its probe (and play well only
    there: a recovery-specific skill of +1.0 for an agent with none)."""
    import re

    class IdSpy(BatchOracle):
        ids: ClassVar[list[str]] = []

        def reset_episode(self, episode_id: str, seed: int) -> None:
            IdSpy.ids.append(episode_id)
            super().reset_episode(episode_id, seed)

    result = probe("turnbudget/Maze-Easy-v0", IdSpy(), tasks=[1, 2], n_bootstrap=0,
                   baseline_repeats=1)  # fmt: skip
    assert len(IdSpy.ids) == sum(r["role"] == "agent" for r in result.records) > 4
    assert len(set(IdSpy.ids)) == len(IdSpy.ids)
    assert all(re.fullmatch(r"probe-[0-9a-f]{16}", i) for i in IdSpy.ids)
    assert IdSpy.ids != sorted(IdSpy.ids)  # (not in the order the probes were planned)
    # Nor a digest anyone can compute: hashing every place the old way finds none of them.
    import hashlib

    unkeyed = {
        "probe-" + hashlib.blake2b(f"probe\x1f{i}".encode(), digest_size=8).hexdigest()
        for i in range(1000)
    }
    assert not unkeyed & set(IdSpy.ids)


class AsyncRecorder:
    needs_oracle = True
    log: ClassVar[list[str]] = []

    async def reset_async(self, seed: int) -> None:
        self._oracle = OracleAgent(0.0)
        self._oracle.reset(seed)

    async def observe_async(self, observation: str, info: Mapping[str, Any], executed: str) -> None:
        AsyncRecorder.log.append(executed)

    async def act_async(self, observation: str, info: Mapping[str, Any]) -> str:
        return self._oracle.act(observation, info)


def test_async_batch_forwards_observe():
    AsyncRecorder.log.clear()
    agent = AsyncBatch(AsyncRecorder, max_batch_size=4)
    result = probe("turnbudget/Maze-Medium-v0", agent, tasks=[0], label="async", n_bootstrap=0)
    agent.close()
    # The prefix, and the error's turn of a recovery probe (a slip, or a setback's empty turn).
    forced = sum(s.start + (s.probe == "recovery" and s.applied) for s in result.specs)
    assert len(AsyncRecorder.log) == forced > 0
    assert (
        result.summary["agents"]["async"]["turnbudget/Maze-Medium-v0"]["single_step"]["rate"] == 1.0
    )


def test_probes_are_deterministic_and_controls_share_the_recovery_budget():
    a = probe("turnbudget/Maze-Medium-v0", OracleAgent(0.5), tasks=3, n_bootstrap=0)
    b = probe("turnbudget/Maze-Medium-v0", OracleAgent(0.5), tasks=3, n_bootstrap=0)
    assert a.records == b.records
    by_key = {(s.task_seed, s.prefix, s.kind, s.probe): s for s in a.specs}
    assert any(s.applied for s in a.specs if s.probe == "recovery")
    for (task, prefix, kind, name), spec in by_key.items():
        if name == "recovery":
            control = by_key[(task, prefix, kind, "control")]
            assert control.budget == spec.budget and control.plan == spec.plan
            if spec.applied:
                assert spec.distance_after > spec.distance_before
                # The matched control: the plan's on-track state as far from the goal.
                assert 1 <= control.start == len(spec.plan) - spec.distance_after < spec.prefix


def test_probe_rejects_bad_settings():
    with pytest.raises(ValueError, match="prefixes"):
        probe("turnbudget/Maze-Easy-v0", RandomAgent(), tasks=1, prefixes=[1.0])
    with pytest.raises(ValueError, match="kinds"):
        probe("turnbudget/Maze-Easy-v0", RandomAgent(), tasks=1, kinds=["transient"])
    with pytest.raises(ValueError, match="Cannot make"):
        probe("turnbudget/Nope-v0", RandomAgent(), tasks=1)
    with pytest.raises(ValueError, match="distinct agent names"):
        probe("turnbudget/Maze-Easy-v0", [RandomAgent(), RandomAgent()], tasks=1)


def test_cli_probe_writes_json(tmp_path, capsys):
    from turnbudget.cli import main

    out = tmp_path / "probe"
    code = main(
        ["probe", "--env", "turnbudget/Maze-Easy-v0", "--agent", "oracle:0.2", "--tasks", "3",
         "--out", str(out), "--quiet"]
    )  # fmt: skip
    assert code == 0
    assert "single_step_skill" in capsys.readouterr().out
    summary = json.loads((out / "probe_summary.json").read_text())
    assert summary["config"]["labels"] == ["oracle-eps0.2"]
    assert (out / "probes.jsonl").read_text().count("\n") == summary["n_records"]
    assert main(["probe", "--env", "turnbudget/Nope-v0", "--tasks", "2", "--out", str(out)]) == 2


class LongWinded:
    """Answers every probe with a 1 MB command (a spent turn)."""

    name = "long-winded"

    def reset(self, seed: int) -> None:
        pass

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        return "go " + "x" * 1_000_000


def test_probe_records_cap_the_agents_command():
    from turnbudget.records import MAX_RECORD_TEXT

    result = probe(
        "turnbudget/Maze-Medium-v0", LongWinded(), tasks=[0], kinds=["slip"], n_bootstrap=0
    )
    actions = [r["action"] for r in result.records if "action" in r]
    long = [a for a in actions if a.startswith("go xxx")]
    assert long and all(len(a) <= MAX_RECORD_TEXT for a in actions)
    assert all("[... 1000003 characters in all, sha256 " in a for a in long)


class BudgetSpy:
    """Budget-aware and oracle-led: logs ``turns_left`` at every call of every probe."""

    needs_oracle = True
    budget_aware = True
    name = "spy"

    def __init__(self) -> None:
        self.seen: list[list[int]] = []
        self._oracle = OracleAgent(0.0)

    def reset(self, seed: int) -> None:
        self._oracle.reset(seed)
        self.seen.append([])

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        self.seen[-1].append(int(info["turns_left"]))
        return self._oracle.act(observation, info)


@pytest.mark.parametrize("env_id", ["turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0"])
def test_budget_aware_agent_never_sees_fewer_turns_than_the_distance_left(env_id):
    """Every probe shows the budget a real episode would have there: a single-step probe what
    is left of ceil(1.5 L) + 2 after the prefix, a recovery probe and its control B turns
    (the old single-step probe showed turns_left = 1 whatever the distance)."""
    spy = BudgetSpy()
    result = probe(env_id, spy, tasks=6, n_bootstrap=0, baseline_repeats=1)
    assert len(spy.seen) == len(result.specs)
    checked = 0
    for spec, seen in zip(result.specs, spy.seen, strict=True):
        if not seen:
            continue  # a skipped recovery probe: nothing to answer
        distance = spec.distance_before if spec.probe == "single" else spec.distance_after
        assert seen[0] == spec.budget >= distance, spec
        if spec.probe == "single":
            assert seen[0] == math.ceil(1.5 * len(spec.plan)) + 2 - spec.prefix
        # The oracle brings the distance down by one a turn, and turns_left goes down by one.
        assert all(left >= distance - k for k, left in enumerate(seen))
        checked += 1
    assert checked > 20


class Looker:
    """Always looks: every answer is a no-op."""

    name = "looker"

    def reset(self, seed: int) -> None:
        pass

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        return "look"


def test_look_oracles_are_not_charged_for_their_looks():
    """A harmless information-gathering no-op is counted apart, never as a wrong answer: the
    look-first and look-last oracles score single-step skill 1 on the commands that change the
    state (the old probes scored them -0.55), with their no-op rate beside it."""
    from turnbudget.agents import LookOracle

    agents = [LookOracle("first"), LookOracle("last"), Looker()]
    result = probe("turnbudget/Maze-Easy-v0", agents, tasks=10, n_bootstrap=200)
    g = {
        label: groups["turnbudget/Maze-Easy-v0"]
        for label, groups in result.summary["agents"].items()
    }
    for label in ("look-first", "look-last"):
        assert g[label]["single_step_skill"]["mean"] >= 0.9
        assert g[label]["single_step"]["invalid_rate"] == 0.0
    # Look-first looks on the probes at turn 1 (prefix 0: a quarter of them); look-last never
    # reaches its last turn, since a probe shows the budget of a real episode.
    assert g["look-first"]["noop_rate"]["mean"] == 0.25
    assert g["look-last"]["noop_rate"]["mean"] == 0.0
    assert g["looker"]["noop_rate"]["mean"] == 1.0 and g["looker"]["single_step"]["judged"] == 0
    assert g["looker"]["single_step_skill"]["mean"] is None
    looks = [r for r in result.records if r["agent"] == "looker" and r["probe"] == "single"]
    assert all(r["noop"] and r["optimal"] is None and r["valid"] for r in looks)


def test_probe_files_replace_a_symlink_never_write_through_it(tmp_path):
    """``probe.json`` was written with ``write_text``, through a symlink planted in the output
    directory: another run's log it pointed at was overwritten with the probe's config."""
    victim = tmp_path / "other-run.jsonl"
    victim.write_text('{"record":"episode"}\n')
    out = tmp_path / "probe"
    out.mkdir()
    for name in ("probe.json", "probe_summary.json"):
        (out / name).symlink_to(victim)
    probe("turnbudget/Maze-Easy-v0", OracleAgent(0.0), tasks=[1], n_bootstrap=0, out=out)
    assert victim.read_text() == '{"record":"episode"}\n'
    for name in ("probe.json", "probe_summary.json"):
        assert not (out / name).is_symlink() and json.loads((out / name).read_text())
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]


def test_task_starts_close_every_env_when_one_fails_to_close():
    """One env that raised on close left the others open (a TextWorld start kept its
    interpreter process); the first error is still raised."""
    from turnbudget.eval.probes.plan import TaskStarts

    starts = TaskStarts()
    envs = [starts.fresh("turnbudget/Maze-Easy-v0", seed, 5)[0] for seed in (0, 1)]
    for env in envs:
        starts.release(env)
    bases = [entry[0] for entry in starts._base.values()]
    closed = []

    def broken_close():
        raise OSError("the interpreter went away")

    bases[0].close = broken_close
    bases[1].close = lambda: closed.append(True)
    with pytest.raises(OSError, match="went away"):
        starts.close()
    assert closed == [True]


def test_task_starts_keep_a_bounded_number_of_tasks_and_the_same_records(monkeypatch):
    """One start kept per task: a TextWorld start holds an interpreter process, and a probe
    of 30 tasks ran out of file handles at a limit of 64 (1,000 tasks: 1,000 processes).
    The least recently used are closed; the records do not change."""
    from turnbudget.eval.probes import plan as plan_module
    from turnbudget.eval.probes.plan import TaskStarts

    kwargs = dict(tasks=8, kinds=["slip", "setback"], baseline_repeats=1, n_bootstrap=0, seed=3)
    kept = probe("turnbudget/KeyQuest-Easy-v0", OracleAgent(0.3), **kwargs).records
    monkeypatch.setattr(plan_module, "MAX_TASK_STARTS", 3)
    starts = TaskStarts()
    closed = []
    for task in range(8):
        env, _, _ = starts.fresh("turnbudget/KeyQuest-Easy-v0", task, 10)
        starts.release(env)
        assert len(starts._base) <= 3
    first = starts._base.get(("turnbudget/KeyQuest-Easy-v0", 7))
    first[0].close = lambda: closed.append(1)  # (the newest: kept until others come)
    starts.close()
    assert closed == [1]
    assert probe("turnbudget/KeyQuest-Easy-v0", OracleAgent(0.3), **kwargs).records == kept


@pytest.mark.parametrize(
    "factor, d, slack, budget", [(1.1, 50, 0, 55), (2.2, 25, 0, 55), (1.5, 10, 2, 17)]
)
def test_a_probe_budget_is_the_ceiling_of_the_product_as_written(factor, d, slack, budget):
    """ceil(1.1 * 50) was 56: the product is 55.000000000000007 in binary."""
    from turnbudget.eval.probes.plan import ProbeConfig, probe_budget

    config = ProbeConfig((), (), (), (), budget_factor=factor, budget_slack=slack)
    assert probe_budget(d, config) == budget
