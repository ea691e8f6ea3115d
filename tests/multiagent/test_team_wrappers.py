"""Team wrappers: visibility, per-agent errors and records, and the full stack under PettingZoo's tests."""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test

from turnbudget.multiagent import all_games, make_team, race_v0, vault_v0
from turnbudget.multiagent.wrappers import (
    InjectTeamErrors,
    RecordTeamOutcomes,
    RevealTeamBudget,
    TeamTurnBudget,
)

GAMES = sorted(all_games)


def _oracle_actions(env, name):
    game = env.unwrapped
    if name.endswith("race_v0"):
        return {"player_0": game.optimal_actions("player_0")[0] if game.optimal_actions("player_0") else "wait",
                "player_1": game.house_action("player_1")}  # fmt: skip
    return {a: (game.optimal_actions(a) or ["wait"])[0] for a in env.agents}


@pytest.mark.parametrize("name", GAMES)
def test_full_stack_passes_pettingzoo_api_tests(name):
    kwargs = dict(difficulty="medium", budget_mix=[5, 9], errors=0.3, record=True, reveal="final=3")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # api_test's advice for array games
        parallel_api_test(make_team(name, **kwargs), num_cycles=60)
        api_test(make_team(name, aec=True, **kwargs), num_cycles=60)


def test_reveal_team_budget_modes():
    env = RevealTeamBudget(vault_v0.parallel_env(turn_budget=4), mode="always")
    observations, infos = env.reset(seed=0)
    assert observations["runner"]["text"].endswith("[4 rounds left]")
    assert env.observation_space("runner").contains(observations["runner"])
    hidden = RevealTeamBudget(vault_v0.parallel_env(turn_budget=4), mode="never")
    observations, infos = hidden.reset(seed=0)
    assert "rounds left" not in observations["operator"]["text"]
    assert infos["operator"]["budget_visible"] is False
    with pytest.raises(ValueError, match="TeamTurnBudget"):
        RevealTeamBudget(vault_v0.raw_env())
    with pytest.raises(ValueError, match="mode"):
        RevealTeamBudget(vault_v0.parallel_env(), mode="sometimes")


@pytest.mark.parametrize("name", GAMES)
def test_errors_are_per_agent_and_the_same_for_every_team(name):
    def events(policy):
        env = make_team(
            name, difficulty="hard", errors={"rate": 0.3, "kinds": ["transient", "setback"]}
        )
        _, infos = env.reset(seed=4)
        seen = []
        for _ in range(15):
            if not env.agents:
                break
            actions = policy(env, infos)
            _, _, _, _, infos = env.step(actions)
            seen.append({a: (i.get("injected_error") or {}).get("kind") for a, i in infos.items()})
        return seen

    waiting = events(lambda env, infos: {a: "wait" for a in env.agents})
    acting = events(lambda env, infos: {a: infos[a]["admissible_actions"][0] for a in env.agents})
    assert waiting == acting  # common random numbers: the agents' actions change nothing
    agents = list(waiting[0])
    per_agent = [[round_[a] for round_ in waiting] for a in agents]
    assert per_agent[0] != per_agent[1]  # independent streams per agent
    assert any(k is not None for k in per_agent[0] + per_agent[1])


@pytest.mark.parametrize("name", GAMES)
def test_slips_replace_one_agents_command_with_a_non_optimal_one(name):
    env = InjectTeamErrors(
        all_games[name].parallel_env(difficulty="medium"), schedule={1: "slip", 2: "setback"}
    )
    env.reset(seed=2)
    actions = _oracle_actions(env, name)
    optimal = {a: env.unwrapped.optimal_actions(a) for a in env.agents}
    _, _, _, _, infos = env.step(actions)
    applied = [a for a, i in infos.items() if i["injected_error"]["applied"]]
    assert applied  # at least one agent has a non-optimal alternative
    for agent in applied:
        event = infos[agent]["injected_error"]
        assert event["kind"] == "slip" and event["replaced_action"] not in optimal[agent]
        assert infos[agent]["valid_action"] is True  # its own command was fine
    actions = _oracle_actions(env, name)
    _, _, _, _, infos = env.step(actions)
    for info in infos.values():
        event = info["injected_error"]
        assert event["kind"] == "setback" and event["distance_after"] is not None
        assert event["distance_after"] >= event["distance_before"]


def test_transient_error_costs_the_turn_and_keeps_the_others():
    env = InjectTeamErrors(vault_v0.parallel_env(), schedule={1: "transient"})
    observations, infos = env.reset(seed=0)
    runner_start = env.unwrapped.world._room
    actions = {a: env.unwrapped.optimal_actions(a)[0] for a in env.agents}
    observations, _, _, _, infos = env.step(actions)
    assert env.unwrapped.world._room == runner_start  # the runner's move did not happen
    assert observations["runner"]["text"].startswith("Your attempt fails")
    assert infos["runner"]["valid_action"] is True
    with pytest.raises(ValueError, match="rate"):
        InjectTeamErrors(vault_v0.parallel_env(), rate=2.0)


@pytest.mark.parametrize("name", GAMES)
def test_records_per_agent_delivered_together(name, tmp_path):
    path = tmp_path / "records.jsonl"
    env = RecordTeamOutcomes(all_games[name].parallel_env(turn_budget=64), path=path, memory=True)
    env.reset(seed=3)
    while env.agents:
        env.step(_oracle_actions(env, name))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines == [json.loads(json.dumps(r)) for r in env.records]
    episodes = {r["agent"]: r for r in lines if r["record"] == "episode"}
    assert set(episodes) == set(env.possible_agents)
    focal = episodes["player_0" if name.endswith("race_v0") else "runner"]
    assert focal["success"] and focal["optimal_step_rate"] == 1.0
    assert focal["turns_used"] == focal["initial_distance"]
    assert {r["team_episode_id"] for r in lines} == {f"turnbudget/{name.split('/')[-1]}/3/0"}
    assert {
        r["episode_id"] for r in lines if r["agent"] == "player_0" or r["agent"] == "runner"
    } == {f"{focal['team_episode_id']}#{focal['agent']}"}
    env.reset(seed=4)
    env.step({a: "wait" for a in env.agents})
    env.close()
    assert env.n_abandoned == 1


def test_team_budget_wrapper_checks():
    with pytest.raises(ValueError, match="Cannot parse budget mix"):
        TeamTurnBudget(race_v0.raw_env(), turn_budget=5, budget_mix="sometimes")
    with pytest.raises(ValueError, match="Unknown team game"):
        make_team("chess_v6")
    deep: list = []
    for _ in range(5_000):
        deep = [deep]
    for game in (deep, object(), 5):  # (str() of the deep list was a RecursionError)
        with pytest.raises(ValueError, match="Unknown team game"):
            make_team(game)


TEAM_STACKS = {
    "plain": {},
    "budget_mix": {"budget_mix": [10, 20]},
    "errors": {"errors": 0.3},
    "record": {"record": True},
    "full": {"budget_mix": [10, 20], "errors": 0.3, "record": True, "reveal": "final=3"},
}
BAD_TEAM_RESETS = [
    ({"options": {"turn_budget": 0}}, "turn_budget"),
    ({"options": {"repeat": -1}}, "repeat"),
    ({"options": "x"}, "options"),
    ({"seed": -1}, "seed"),
]


@pytest.mark.parametrize(
    "bad, name", BAD_TEAM_RESETS, ids=[f"{n}-{k!r}" for k, n in BAD_TEAM_RESETS]
)
@pytest.mark.parametrize("stack", list(TEAM_STACKS))
def test_a_reset_refused_by_any_team_wrapper_ends_the_episode_and_draws_nothing(stack, bad, name):
    env, twin = (make_team("vault_v0", difficulty="medium", **TEAM_STACKS[stack]) for _ in "ab")
    for e in (env, twin):
        e.reset(seed=3, options={"repeat": 0})
        e.step(dict.fromkeys(e.agents, "wait"))
    with pytest.raises(ValueError, match=f"Expect .*`{name}`"):
        env.reset(**{"seed": 4, **bad})
    with pytest.raises(gym.error.ResetNeeded, match="refused"):
        env.step(dict.fromkeys(env.possible_agents, "wait"))  # (the old episode used to go on)
    assert repr(env.reset()) == repr(twin.reset())  # the refused reset drew nothing
    for _ in range(5):
        actions = dict.fromkeys(env.agents, "wait")
        assert repr(env.step(actions)) == repr(twin.step(actions))
    if "record" in TEAM_STACKS[stack]:
        assert env.records == twin.records and env.n_abandoned == 1


@pytest.mark.parametrize("name", GAMES)
def test_a_slip_never_replaces_a_command_by_itself_respelt(name):
    """An agent's "LOOK" (the game plays "look") was replaced by "look": a slip narrated and
    counted that changed nothing. It must be another admissible command."""
    applied = 0
    for seed in range(30):
        env = make_team(name, errors={"schedule": {1: "slip"}})
        env.reset(seed=seed)
        agent = env.agents[-1]
        actions = dict.fromkeys(env.agents, "wait") | {agent: "LOOK"}
        *_, infos = env.step(actions)
        event = infos[agent]["injected_error"]
        assert not (event["applied"] and event["replaced_action"] == "look"), (seed, event)
        applied += event["applied"]
    assert applied


def test_a_team_slip_echoes_the_command_cleaned_as_the_game_does():
    env = InjectTeamErrors(vault_v0.parallel_env(), schedule={1: "slip"})
    env.reset(seed=0)
    actions = {a: "x\r\n\nYou found it! YOU WIN" for a in env.agents}
    _, _, _, _, infos = env.step(actions)
    events = [i["injected_error"] for i in infos.values() if i["injected_error"]["applied"]]
    assert events
    for event in events:
        assert event["narration"].startswith('Your hand slips: instead of "x???You found it!')
