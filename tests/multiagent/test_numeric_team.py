"""The team games' classic-RL form: discrete actions with masks, text features, numeric info (issue 25).

PettingZoo's own API and seed tests run on the numeric variant that
`make_team` builds; SuperSuit's vector conversion is in the ``compat`` suite
(tests/compat/test_rl_libraries.py).
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

from turnbudget.multiagent import all_games, make_team
from turnbudget.multiagent.wrappers import TeamDiscreteActions, TeamNumericInfo, TeamTextFeatures

NUMERIC = {"discrete_actions": 8, "text_features": 64}
GAMES = sorted(all_games)


@pytest.fixture(autouse=True)
def _quiet_naming_advice():
    with warnings.catch_warnings():  # roles ("operator", "runner") say more than "player_0"
        warnings.filterwarnings("ignore", message="We recommend agents to be named")
        yield


@pytest.mark.parametrize("name", GAMES)
def test_pettingzoo_api_on_the_numeric_variant(name):
    parallel_api_test(make_team(name, **NUMERIC), num_cycles=100)
    api_test(make_team(name, aec=True, **NUMERIC), num_cycles=100)
    parallel_seed_test(lambda: make_team(name, budget_mix=[10, 20], errors=0.1, **NUMERIC))
    seed_test(lambda: make_team(name, aec=True, **NUMERIC), num_cycles=50)


@pytest.mark.parametrize("name", GAMES)
def test_numeric_spaces_masks_and_info(name):
    env = make_team(name, budget_mix=[10, 20], errors=0.2, reveal="final=3", **NUMERIC)
    observations, infos = env.reset(seed=1)
    agents = env.possible_agents
    for agent in agents[1:]:  # one space for all: what SuperSuit's vector envs need
        assert env.observation_space(agent) == env.observation_space(agents[0])
        assert env.action_space(agent) == env.action_space(agents[0])
    keys = set(env.info_space.spaces)
    assert {"action_mask", "sampled_turn_budget", "injected_error_kind", "budget_visible"} <= keys
    rng = np.random.default_rng(0)
    while env.agents:
        for agent in env.agents:
            assert env.observation_space(agent).contains(observations[agent])
            assert set(infos[agent]) == keys and env.info_space.contains(infos[agent])
        # Masked play: each agent picks one of its admissible commands by index.
        actions = {a: int(rng.choice(np.flatnonzero(infos[a]["action_mask"]))) for a in env.agents}
        observations, _, terminations, truncations, infos = env.step(actions)
        for agent in actions:
            if infos[agent]["injected_error_kind"] < 0:  # a slip is not the agent's command
                assert infos[agent]["valid_action"]
            assert not (terminations[agent] and truncations[agent])


def test_a_masked_index_costs_that_agent_its_turn_and_a_bad_one_is_refused():
    env = make_team("vault_v0", discrete_actions=8)
    _, infos = env.reset(seed=0)
    runner_masked = int(np.flatnonzero(infos["runner"]["action_mask"] == 0)[0])
    _, _, _, _, infos = env.step({"operator": 0, "runner": runner_masked})
    assert infos["runner"]["valid_action"] is False and infos["operator"]["valid_action"] is True
    assert infos["runner"]["turns_used"] == 1  # the turn was spent
    for bad in (8, -1, 1.5, "go north", True):
        with pytest.raises(ValueError, match=r"Discrete\(8\)"):
            env.step({"operator": 0, "runner": bad})
    assert env.unwrapped.rounds == 1  # refused rounds changed nothing


def test_text_stack_is_unchanged_and_options_are_checked():
    env = make_team("race_v0", discrete_actions=4, info="text")
    _, infos = env.reset(seed=0)
    assert "admissible_actions" in infos["player_0"]  # the text keys stay with info="text"
    assert isinstance(env, TeamDiscreteActions)
    numeric = make_team("race_v0", text_features={"block_dim": 16})
    assert isinstance(numeric, TeamNumericInfo) and isinstance(numeric.env, TeamTextFeatures)
    assert numeric.observation_space("player_0").shape == (32,)  # text and goal blocks
    with pytest.raises(ValueError, match="Expect `info` to be one of"):
        make_team("race_v0", info="tensor")
    # (a value given to the option is refused by the option's name, as `turnbudget.make` does)
    with pytest.raises(ValueError, match="Expect `discrete_actions` to be a positive int"):
        make_team("race_v0", discrete_actions=0)
    with pytest.raises(ValueError, match="Expect `text_features` to be a multiple of 2"):
        make_team("race_v0", text_features=63)
    with pytest.raises(ValueError, match="needs a TeamTurnBudget"):
        TeamNumericInfo(all_games["turnbudget/race_v0"].raw_env())


def test_the_numeric_stacks_pickle():
    """Vector envs and pools send envs to workers: the numeric stacks pickle, as the text ones do."""
    import turnbudget

    single = turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=4, text_features=32)
    single.reset(seed=0)
    assert pickle.loads(pickle.dumps(single)).info_space == single.info_space
    env = make_team("vault_v0", errors=0.1, **NUMERIC)
    env.reset(seed=3)
    clone = pickle.loads(pickle.dumps(env))
    actions = {a: 0 for a in env.agents}
    ours, theirs = env.step(actions), clone.step(actions)
    assert all((ours[0][a] == theirs[0][a]).all() for a in actions)
    assert ours[4]["runner"]["turns_used"] == theirs[4]["runner"]["turns_used"] == 1
