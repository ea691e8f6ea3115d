"""What agents are handed is theirs: an agent that wrecks every list and dict it receives
plays exactly the run a well-behaved agent with the same choices plays (issue 24); and it
is what a player would know: no hidden budget in its ids, text or info, and no oracle
distance in its injected errors (issue 21)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from turnbudget.agents import BUDGET_KEYS, OracleAgent, RandomAgent
from turnbudget.eval.probes.run import probe
from turnbudget.eval.run.agent_view import (
    PLAYER_EVENT_KEYS,
    agent_episode_id,
    agent_info,
    private_copy,
)
from turnbudget.eval.run.evaluate import evaluate

ENVS = ["turnbudget/Maze-Medium-v0", "turnbudget/KeyQuest-Medium-v0"]
ERRORS = {"rate": 0.3, "kinds": ["slip", "transient", "setback"]}


def _wreck(value: Any, turn: int) -> None:
    """Change every mutable thing in ``value``, nested ones first: lists sorted or cleared,
    dicts emptied or thinned, a junk key added."""
    if isinstance(value, (list, tuple, set)):
        for item in list(value):
            _wreck(item, turn)
    if isinstance(value, list):
        value.sort(key=str, reverse=True) if turn % 2 else value.clear()
    elif isinstance(value, set):
        value.clear()
    elif isinstance(value, dict):
        for item in list(value.values()):
            _wreck(item, turn)
        for key in list(value)[:: 1 + turn % 2]:
            value.pop(key)
        value["junk"] = turn


class Wrecker:
    """Decides as ``inner`` would, then wrecks the info it was given (and the forced turns')."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.needs_oracle = inner.needs_oracle
        self.name = inner.name
        self.turn = 0

    def reset(self, seed: int) -> None:
        self.inner.reset(seed)

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        action = self.inner.act(observation, info)
        self.observe(observation, info, action)
        return action

    def observe(self, observation: str, info: Mapping[str, Any], executed: str) -> None:
        self.turn += 1
        _wreck(info, self.turn)


class BatchWrecker:
    """The `BatchAgent` form: one `Wrecker` per episode."""

    max_batch_size = 3

    def __init__(self, make: Any) -> None:
        self.make = make
        self.needs_oracle = make().needs_oracle
        self.name = make().name
        self.agents: dict[str, Wrecker] = {}

    def reset_episode(self, episode_id: str, seed: int) -> None:
        self.agents[episode_id] = Wrecker(self.make())
        self.agents[episode_id].reset(seed)

    def act_batch(self, ids: Any, observations: Any, infos: Any) -> list[str]:
        return [self.agents[e].act(o, i) for e, o, i in zip(ids, observations, infos, strict=True)]

    def observe_batch(self, ids: Any, observations: Any, infos: Any, executed: Any) -> None:
        for e, o, i, a in zip(ids, observations, infos, executed, strict=True):
            self.agents[e].observe(o, i, a)

    def end_episode(self, episode_id: str) -> None:
        self.agents.pop(episode_id)


def _lines(records: list[dict[str, Any]]) -> list[str]:
    """The records as JSON lines, in a fixed order (a batch agent finishes episodes out of order)."""
    return sorted(json.dumps(r, sort_keys=True) for r in records)


def test_private_copy_shares_nothing_mutable():
    info = {"a": ["x", ["y"]], "b": {"c": {"d": [1]}}, "e": ("f", ["g"]), "h": {1, 2}}
    mine = private_copy(info)
    assert mine == info
    _wreck(mine, 0)
    assert info == {"a": ["x", ["y"]], "b": {"c": {"d": [1]}}, "e": ("f", ["g"]), "h": {1, 2}}
    view = agent_info(info, show_budget=True, oracle=lambda: ["x"])
    _wreck(view, 1)
    assert info == {"a": ["x", ["y"]], "b": {"c": {"d": [1]}}, "e": ("f", ["g"]), "h": {1, 2}}


@pytest.mark.parametrize("make", [RandomAgent, lambda: OracleAgent(0.3)], ids=["random", "oracle"])
def test_evaluate_records_do_not_depend_on_what_the_agent_does_to_its_info(make):
    kwargs = dict(ks=[1], ts=[40], n=2, tasks=3, errors=ERRORS, n_bootstrap=0)
    clean = evaluate(ENVS, make(), **kwargs)
    assert any(s["injected_error"] for s in clean.steps)
    for wrecker in (Wrecker(make()), BatchWrecker(make)):
        run = evaluate(ENVS, wrecker, **kwargs)
        assert _lines(run.episodes) == _lines(clean.episodes)
        assert _lines(run.steps) == _lines(clean.steps)


def test_probe_records_do_not_depend_on_what_the_agent_does_to_its_info():
    kwargs = dict(tasks=[0, 1], n_bootstrap=0, baseline_repeats=1, label="agent")
    clean = probe("turnbudget/KeyQuest-Medium-v0", OracleAgent(0.3), **kwargs)
    for wrecker in (Wrecker(OracleAgent(0.3)), BatchWrecker(lambda: OracleAgent(0.3))):
        run = probe("turnbudget/KeyQuest-Medium-v0", wrecker, **kwargs)
        assert _lines(run.records) == _lines(clean.records)


def test_team_records_do_not_depend_on_what_the_agents_do_to_their_info():
    pytest.importorskip("pettingzoo")
    from turnbudget.eval.probes.team import team_step_probe
    from turnbudget.eval.run.team import evaluate_team

    roles = ("operator", "runner")
    kwargs = dict(difficulty="medium", ks=[1], ts=[30], n=2, tasks=3, errors=0.3,
                  record=True, n_bootstrap=0)  # fmt: skip
    clean = evaluate_team("vault_v0", {r: OracleAgent(0.3) for r in roles}, **kwargs)
    run = evaluate_team("vault_v0", {r: Wrecker(OracleAgent(0.3)) for r in roles}, **kwargs)
    assert any(r.get("injected_error") for r in clean.records)
    assert _lines(run.records) == _lines(clean.records)
    assert _lines(run.episodes) == _lines(clean.episodes)
    clean_probe = team_step_probe("vault_v0", {r: OracleAgent(0.3) for r in roles}, tasks=4)
    wrecked = team_step_probe("vault_v0", {r: Wrecker(OracleAgent(0.3)) for r in roles}, tasks=4)
    assert wrecked == clean_probe


class Spy:
    """A batch agent (not budget-aware) that looks everywhere a hidden budget or the oracle
    could leak: its episode ids, its observations and every key of its info."""

    max_batch_size = 4

    def __init__(self) -> None:
        self.episodes: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = []
        self.live: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        self.rngs: dict[str, Any] = {}

    def reset_episode(self, episode_id: str, seed: int) -> None:
        assert episode_id not in self.live, "two episodes with one id in flight"
        self.live[episode_id] = []
        self.episodes.append((episode_id, self.live[episode_id]))
        self.rngs[episode_id] = np.random.default_rng(seed)

    def act_batch(self, ids: Any, observations: Any, infos: Any) -> list[str]:
        actions = []
        for e, o, i in zip(ids, observations, infos, strict=True):
            self.live[e].append((o, i))
            admissible = i["admissible_actions"]
            actions.append(admissible[int(self.rngs[e].integers(len(admissible)))])
        return actions

    def end_episode(self, episode_id: str) -> None:
        self.live.pop(episode_id)


SPY_KWARGS = dict(ks=[1], n=2, tasks=[3, 5], n_bootstrap=0, errors=ERRORS)


def test_a_hidden_budget_leaves_no_trace_in_ids_text_or_info():
    spy = Spy()
    run = evaluate("turnbudget/Maze-Medium-v0", spy, ts=[8, 16], mode="rerun", **SPY_KWARGS)
    assert len(spy.episodes) == len(run.episodes) == 8 and not spy.live
    ids = [episode_id for episode_id, _ in spy.episodes]
    for episode_id in ids:  # opaque: no budget, env id or task seed in it
        assert "T=" not in episode_id and "Maze" not in episode_id and "seed" not in episode_id
    # The same task and repeat at both budgets carry one id: it cannot tell them apart.
    assert len(set(ids)) == 4 and all(ids.count(i) == 2 for i in ids)
    turns = [turn for _, episode in spy.episodes for turn in episode]
    events = [info["injected_error"] for _, info in turns if "injected_error" in info]
    assert events  # the player's view of an error: never the oracle's distances
    assert all(set(e) <= set(PLAYER_EVENT_KEYS) and e["applied"] for e in events)
    for observation, info in turns:
        assert not set(info) & set(BUDGET_KEYS)
        assert "turns left" not in observation


def test_no_process_but_the_engines_can_tell_which_task_an_id_stands_for():
    """The ids were an unkeyed digest of env id, task seed and repeat: an agent hashed every
    task seed, found its episode's, rebuilt the game and played its oracle (Pass@(1,12) 1.0
    on KeyQuest-Easy, sealed or not). Hashing every task in another process (as a sealed
    agent's) finds none of the ids the agent was given."""
    import subprocess
    import sys

    spy = Spy()
    evaluate("turnbudget/Maze-Medium-v0", spy, ts=[8], **SPY_KWARGS)
    given = {episode_id for episode_id, _ in spy.episodes}
    assert len(given) == 4
    table = (
        "from turnbudget.eval.run.agent_view import agent_episode_id\n"
        "for seed in range(8):\n"
        "    for rep in range(2):\n"
        "        print(agent_episode_id('turnbudget/Maze-Medium-v0', seed, rep))\n"
    )
    hashed = subprocess.run(
        [sys.executable, "-c", table], capture_output=True, text=True, check=True
    ).stdout.split()
    assert len(hashed) == 16 and not given & set(hashed)
    # (in the engine's own process the same task and repeat keep one id: 2 x 2 tasks above)
    assert given == {
        agent_episode_id("turnbudget/Maze-Medium-v0", s, r) for s in (3, 5) for r in (0, 1)
    }


def test_a_budget_shown_in_the_last_k_turns_reaches_the_agent_only_then():
    spy = Spy()
    evaluate("turnbudget/Maze-Medium-v0", spy, ts=[10], reveal="final=3", **SPY_KWARGS)
    assert spy.episodes
    for _, episode in spy.episodes:
        for turn, (observation, info) in enumerate(episode, start=1):
            shown = 10 - (turn - 1) <= 3  # turns left when the agent answers turn t
            assert ("turns left" in observation) == shown
            assert bool(set(info) & {"turn_budget", "turns_used", "turns_left"}) == shown
            assert info["budget_visible"] == shown
    assert any(len(episode) == 10 for _, episode in spy.episodes)


@pytest.mark.parametrize(
    ("reveal", "visible"),
    [
        ("never", False), (" NEVER", False), ("Never", False), (None, False),
        ({"mode": "NEVER"}, False), ("always", True), ("FINAL=2", True), ({}, True),
    ],
)  # fmt: skip
def test_budget_visible_reads_reveal_as_the_env_does(reveal, visible):
    """Every spelling `check_reveal` takes for "never" hides the budget in the env, so the
    evaluator must not plan the run as if the agent could see it."""
    from turnbudget.eval.run.agent_view import budget_visible

    assert budget_visible(reveal) is visible


def test_an_agent_is_shown_what_the_record_grants_in_every_process():
    """The probe and team engines read the agents' flags again where the episodes ran (a
    worker, a sealed agent's process): an agent whose ``needs_oracle`` was False where the run
    was planned and True there played on the oracle's actions (single-step skill 1.0, the
    team won every episode), sealed or with two workers, while probe.json recorded nothing
    and run.json's ``grants`` said none. Every engine now shows what the record grants."""
    from _support import ElsewhereOracle

    from turnbudget.eval.run.team import evaluate_team

    kwargs = dict(tasks=[0, 1], n_bootstrap=0, baseline_repeats=1, prefixes=[0.0, 0.5])
    here = probe("turnbudget/KeyQuest-Easy-v0", ElsewhereOracle(), **kwargs)
    sealed = probe("turnbudget/KeyQuest-Easy-v0", ElsewhereOracle(), sealed=True, **kwargs)
    assert _lines(sealed.records) == _lines(here.records)
    assert here.config.grants == sealed.config.grants == {}
    team = dict(ks=[1], ts=[30], n=1, tasks=3, n_bootstrap=0)
    here = evaluate_team("vault_v0", {"operator": "oracle", "runner": ElsewhereOracle()}, **team)
    sealed = evaluate_team(
        "vault_v0", {"operator": "oracle", "runner": ElsewhereOracle()}, sealed=True, **team
    )
    assert _lines(sealed.episodes) == _lines(here.episodes)
    assert here.config["grants"] == sealed.config["grants"] == {"operator": ["needs_oracle"]}


def test_a_probe_records_what_each_agent_is_granted(tmp_path):
    """probe.json says which probed agent is shown the oracle's actions or its budget (as an
    evaluation's run.json does), and a probe.json from before it held `grants` is still the
    same probes (replaced without ``overwrite``)."""
    kwargs = dict(tasks=[0], n_bootstrap=0, baseline_repeats=1, prefixes=[0.0], out=tmp_path)
    result = probe("turnbudget/Maze-Easy-v0", [OracleAgent(0.0), RandomAgent()], **kwargs)
    saved = json.loads((tmp_path / "probe.json").read_text())
    assert saved["grants"] == result.config.grants == {"oracle-eps0": ["needs_oracle"]}
    del saved["grants"]
    (tmp_path / "probe.json").write_text(json.dumps(saved))
    probe("turnbudget/Maze-Easy-v0", [OracleAgent(0.0), RandomAgent()], overwrite=False, **kwargs)


class LateOracleReader:
    """Declares no ``needs_oracle`` when a run starts; on its first answer, unless ``honest``,
    grants it to itself; plays the oracle's actions wherever it is given them, else a seeded
    pick among the admissible commands."""

    name = "late"

    def __init__(self, honest: bool = False) -> None:
        self.honest = honest
        self.needs_oracle = False
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        self.needs_oracle = not self.honest
        if info.get("oracle_actions"):
            return sorted(info["oracle_actions"])[0]
        admissible = info["admissible_actions"] or ["wait"]
        return admissible[int(self.rng.integers(len(admissible)))]


def test_an_agent_that_grants_itself_the_oracle_midway_is_not_shown_it():
    """`team_step_probe` read ``needs_oracle`` at every state it probed: an operator that set
    it on its first answer scored a skill of 0.33 instead of its honest -0.33. Every engine
    reads the flags once, before any episode, and plays it as the agent that never set it."""
    pytest.importorskip("pettingzoo")
    from turnbudget.eval.probes.team import team_step_probe
    from turnbudget.eval.run.team import evaluate_team

    def team(honest: bool) -> dict[str, Any]:
        return {"operator": LateOracleReader(honest), "runner": "random"}

    assert team_step_probe("vault_v0", team(False), tasks=6) == team_step_probe(
        "vault_v0", team(True), tasks=6
    )
    kwargs = dict(ks=[1], ts=[30], n=1, tasks=3, n_bootstrap=0, record=True)
    late, fair = (evaluate_team("vault_v0", team(h), **kwargs) for h in (False, True))
    assert _lines(late.records) == _lines(fair.records)
    kwargs = dict(tasks=[0, 1], n_bootstrap=0, baseline_repeats=1, prefixes=[0.0, 0.5])
    late, fair = (probe(ENVS[1], LateOracleReader(h), **kwargs) for h in (False, True))
    assert _lines(late.records) == _lines(fair.records)
    kwargs = dict(ks=[1], ts=[20], n=1, tasks=2, n_bootstrap=0)
    late, fair = (evaluate(ENVS, LateOracleReader(h), **kwargs) for h in (False, True))
    assert _lines(late.steps) == _lines(fair.steps)


def test_the_team_probe_shows_a_budget_aware_agent_its_budget_as_an_episode_would():
    """The team probe showed no budget at all: an agent that reads ``turns_left`` failed it
    with a KeyError. It sees what `evaluate_team` shows it after t0 rounds, and an agent that
    does not read its budget still sees none."""
    from turnbudget.eval import evaluate_team
    from turnbudget.eval.probes.team import team_step_probe

    class Reader:
        budget_aware = True

        def __init__(self):
            self.seen: list[dict[str, Any]] = []

        def reset(self, seed):
            pass

        def act(self, observation, info):
            self.seen.append({k: info[k] for k in BUDGET_KEYS if k in info})
            return "wait"

    class Unaware(Reader):
        budget_aware = False

    probed, played, plain = Reader(), Reader(), Unaware()
    team_step_probe("vault_v0", {"operator": "oracle", "runner": probed}, tasks=1, t0s=[0, 3])
    evaluate_team("vault_v0", {"operator": "oracle", "runner": played}, ks=[1], ts=[30],
                  tasks=1, n_bootstrap=0)  # fmt: skip
    assert probed.seen == [played.seen[0], played.seen[3]]
    assert probed.seen[1]["turns_left"] == probed.seen[1]["turn_budget"] - 3
    team_step_probe("vault_v0", {"operator": "oracle", "runner": plain}, tasks=1, t0s=[0, 3])
    assert plain.seen == [{}, {}]


def test_the_team_probe_tells_the_agent_the_rounds_before_its_state_as_probe_does():
    """The team probe asked a freshly reset agent at round t0 with only that round's info: the
    runner never learnt its goal (the reset's ``info["goal"]``), so its single-step skill was
    judged on less than a player there knows. It is told each round before, as `probe` tells
    an agent the turns before its state: the first as `evaluate_team` shows it."""
    from turnbudget.eval import evaluate_team
    from turnbudget.eval.probes.team import team_step_probe

    class Listener:
        def __init__(self):
            self.told: list[tuple[str, dict[str, Any], str]] = []
            self.asked: list[tuple[str, dict[str, Any], int]] = []

        def reset(self, seed):
            self.told_now = 0

        def observe(self, observation, info, executed):
            self.told.append((observation, info, executed))
            self.told_now += 1

        def act(self, observation, info):
            self.asked.append((observation, info, self.told_now))
            return "wait"

    probed, played = Listener(), Listener()
    team_step_probe("vault_v0", {"operator": "oracle", "runner": probed}, tasks=1, t0s=[0, 3])
    evaluate_team("vault_v0", {"operator": "oracle", "runner": played}, ks=[1], ts=[30],
                  tasks=1, n_bootstrap=0)  # fmt: skip
    assert [told for _, _, told in probed.asked] == [0, 3]
    first_observation, first_info, _ = probed.told[0]
    assert (first_observation, first_info) == played.asked[0][:2] == probed.asked[0][:2]
    assert first_info["goal"]
    assert probed.asked[1][1]["executed_action"] == probed.told[2][2]
    assert [info.get("executed_action") for _, info, _ in probed.told] == [
        None, probed.told[0][2], probed.told[1][2]
    ]  # fmt: skip


def test_the_team_probe_tells_an_oracle_reader_the_rounds_before_as_evaluate_team_shows_them():
    """The rounds told before the probed state left out the oracle's commands, which
    `evaluate_team` shows an agent that declares ``needs_oracle`` on every round."""
    from turnbudget.eval import evaluate_team
    from turnbudget.eval.probes.team import team_step_probe

    class Reader:
        needs_oracle = True

        def __init__(self):
            self.seen: list[tuple[str, dict[str, Any]]] = []

        def reset(self, seed):
            self.seen = []

        def observe(self, observation, info, executed):
            self.seen.append((observation, info))

        def act(self, observation, info):
            self.seen.append((observation, info))
            return info["oracle_actions"][0]

    probed, played = Reader(), Reader()
    team_step_probe("vault_v0", {"operator": "oracle", "runner": probed}, tasks=[0], t0s=[3])
    evaluate_team("vault_v0", {"operator": "oracle", "runner": played}, ks=[1], ts=[30],
                  tasks=[0], n_bootstrap=0)  # fmt: skip
    assert len(probed.seen) == 4 and all("oracle_actions" in info for _, info in probed.seen)
    assert probed.seen[0] == played.seen[0]  # (then the joint plan and the agents part ways)
