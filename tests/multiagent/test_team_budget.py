"""The shared team budget, bad actions, and determinism across processes."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import pytest

pytest.importorskip("pettingzoo")

from turnbudget.multiagent import all_games, race_v0, vault_v0
from turnbudget.multiagent.wrappers import TeamTurnBudget

GAMES = sorted(all_games)


@pytest.mark.parametrize("name", GAMES)
def test_budget_truncates_every_agent_at_the_same_round(name):
    env = all_games[name].parallel_env(turn_budget=4)
    _, infos = env.reset(seed=0)
    assert {i["turn_budget"] for i in infos.values()} == {4}
    for round_ in range(1, 5):
        assert env.agents == env.possible_agents
        _, _, terminations, truncations, infos = env.step({a: "wait" for a in env.agents})
        assert all(i["rounds_used"] == round_ and i["turns_used"] == round_ for i in infos.values())
        assert all(i["turns_left"] == 4 - round_ for i in infos.values())
        expected = round_ == 4
        assert truncations == dict.fromkeys(env.possible_agents, expected)
        assert not any(terminations.values())
    assert env.agents == []
    assert env.step({}) == ({}, {}, {}, {}, {})


@pytest.mark.parametrize("name", GAMES)
def test_win_on_the_last_budgeted_round_is_termination_not_truncation(name):
    env = all_games[name].parallel_env()
    env.reset(seed=1)
    game = env.unwrapped
    if name.endswith("race_v0"):
        distance = game.distance_to_goal("player_0")
    else:
        distance = game.distance_to_goal()
    env.reset(seed=1, options={"turn_budget": distance})
    while env.agents:
        if name.endswith("race_v0"):
            actions = {"player_0": game.optimal_actions("player_0")[0],
                       "player_1": game.house_action("player_1")}  # fmt: skip
        else:
            actions = {a: game.optimal_actions(a)[0] for a in env.agents}
        _, _, terminations, truncations, infos = env.step(actions)
    assert all(terminations.values()) and not any(truncations.values())
    assert {i["turns_left"] for i in infos.values()} == {0}


def test_budget_option_and_budget_mix():
    env = TeamTurnBudget(vault_v0.raw_env(), turn_budget=10, budget_mix=[3, 5, 7])
    drawn = [env.reset(seed=s)[1]["runner"]["turn_budget"] for s in range(20)]
    assert set(drawn) == {3, 5, 7}
    assert drawn == [env.reset(seed=s)[1]["runner"]["turn_budget"] for s in range(20)]
    _, infos = env.reset(seed=0, options={"turn_budget": 2})
    assert (
        infos["operator"]["turn_budget"] == 2 and infos["operator"]["sampled_turn_budget"] is None
    )
    with pytest.raises(ValueError, match="positive int"):
        TeamTurnBudget(vault_v0.raw_env(), turn_budget=0)
    with pytest.raises(ValueError, match="only once"):
        TeamTurnBudget(env, turn_budget=3)


@pytest.mark.parametrize("name", GAMES)
@pytest.mark.parametrize("bad", [123, None, "", "dance wildly", "x" * 300, "say", b"go north"])
def test_a_bad_action_costs_that_agents_turn_only(name, bad):
    module = all_games[name]
    reference = module.parallel_env()
    env = module.parallel_env()
    reference.reset(seed=5)
    env.reset(seed=5)
    first, second = env.possible_agents
    good = env.unwrapped.world.admissible(second)[0]
    _, _, _, _, ref_infos = reference.step({first: "wait", second: good})
    obs, rewards, terminations, truncations, infos = env.step({first: bad, second: good})
    assert infos[first]["valid_action"] is False
    assert infos[first]["turns_used"] == 1
    assert obs[first]["text"].strip()  # feedback, not silence
    assert infos[second]["valid_action"] is True
    # The other agent's round is exactly as if the bad agent had waited.
    assert infos[second]["admissible_actions"] == ref_infos[second]["admissible_actions"]
    assert infos[second]["progress"] == ref_infos[second]["progress"]


@pytest.mark.parametrize("name", GAMES)
def test_a_missing_action_costs_a_turn_and_unknown_agents_are_an_error(name):
    env = all_games[name].parallel_env()
    env.reset(seed=0)
    first, second = env.possible_agents
    _, _, _, _, infos = env.step({second: "wait"})
    assert infos[first]["valid_action"] is False and infos[second]["valid_action"] is True
    with pytest.raises(ValueError, match="live agents"):
        env.step({"nobody": "wait"})


def test_step_before_reset_raises():
    with pytest.raises(gym.error.ResetNeeded, match="reset"):
        race_v0.raw_env().step({"player_0": "wait", "player_1": "wait"})


_SCRIPT = """
import json, numpy as np
from turnbudget.multiagent import all_games
out = {}
for name, module in sorted(all_games.items()):
    for difficulty in ("easy", "hard"):
        env = module.parallel_env(difficulty=difficulty)
        rng = np.random.default_rng(7)
        obs, infos = env.reset(seed=11)
        trace = [obs, infos]
        while env.agents:
            actions = {}
            for a in env.agents:
                options = infos[a]["admissible_actions"]
                actions[a] = options[int(rng.integers(len(options)))]
            obs, rewards, terminations, truncations, infos = env.step(actions)
            trace.append([obs, rewards, terminations, truncations, infos])
        out[f"{name}-{difficulty}"] = trace
print(json.dumps(out, sort_keys=True))
"""


def test_cross_process_determinism():
    runs = [
        subprocess.run(
            [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=True,
            env={"PYTHONHASHSEED": str(seed), "PATH": ""},
        ).stdout
        for seed in (1, 2)
    ]  # fmt: skip
    assert runs[0] == runs[1]
    assert len(json.loads(runs[0])) == 2 * len(all_games)


def test_cli_lists_the_team_games(capsys):
    from turnbudget.cli import main

    assert main(["list", "--team", "--seeds", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["game", "roles", "difficulty"]
    listed = [line.split()[0] for line in lines[1:] if line.strip()]
    for name in GAMES:
        assert listed.count(name.removeprefix("turnbudget/")) == 3  # Easy, Medium, Hard


@pytest.mark.parametrize(
    "template", ["\n[round {turns_used}]", "\n[Hurry!]", "\n[Hurry!{turns_left!s:.0}]"]
)
def test_a_team_template_that_shows_no_budget_does_not_make_it_visible(template):
    """The team wrapper set ``budget_visible`` on every round it showed the template, as
    `RevealBudget` did once: `evaluate_team` then gave the agents turns_left and turn_budget,
    and an LLM's prompt "Turns left: 14 of 17"."""
    from turnbudget.agents import RandomAgent
    from turnbudget.eval.run.team import evaluate_team
    from turnbudget.multiagent import make_team

    reveal = {"mode": "always", "template": template}
    observations, infos = make_team("vault_v0", reveal=reveal, turn_budget=17).reset(seed=0)
    shown = template.format(turns_left=17, turns_used=0, turn_budget=17)
    assert observations["runner"]["text"].endswith(shown)
    assert infos["runner"]["budget_visible"] is False

    seen = []

    class Spy(RandomAgent):
        def act(self, observation, info):
            seen.append({k: info.get(k) for k in ("turns_left", "turn_budget")})
            return super().act(observation, info)

    evaluate_team("vault_v0", {"operator": Spy(), "runner": Spy()}, ts=[17], ks=[1], n=1,
                  tasks=1, reveal=reveal)  # fmt: skip
    assert seen and all(shown == {"turns_left": None, "turn_budget": None} for shown in seen)
    _, infos = make_team("vault_v0", reveal={"mode": "always"}, turn_budget=17).reset(seed=0)
    assert infos["runner"]["budget_visible"] is True
