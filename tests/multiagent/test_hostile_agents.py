"""Hostile agent names, game arguments and per-agent actions in the team games."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from turnbudget.multiagent import SoloRoleEnv, all_games, make_team
from turnbudget.multiagent.base import UnknownAgentError

GAMES = sorted(all_games.items())
HOSTILE_ACTIONS = [
    None, 3, b"look", ["look"], "", "   ", "x" * 10**6, "look\x00", "\ud800",
    "go north\ngo south", "\u200flook", "\x1b[2J",
]  # fmt: skip


def _stacks(module):
    yield module.raw_env()
    yield module.parallel_env()
    yield make_team(module, discrete_actions=True)
    yield make_team(module, text_features=True)
    yield make_team(module, reveal="always")


@pytest.mark.parametrize(("name", "module"), GAMES, ids=[n for n, _ in GAMES])
@pytest.mark.parametrize("agent", ["nobody", "", None, 0, ("player_0",), ["runner"]])
def test_spaces_of_an_unknown_agent_name_the_agents(name, module, agent):
    for env in _stacks(module):
        for method in (env.observation_space, env.action_space):
            # Before: a bare KeyError('nobody'), or TypeError: unhashable type: 'list'.
            with pytest.raises(UnknownAgentError, match="Expect `agent` to be one of") as caught:
                method(agent)
            # A KeyError for code written against PettingZoo, a ValueError for the rule.
            assert isinstance(caught.value, KeyError)
            assert isinstance(caught.value, ValueError)
            assert str(caught.value).startswith("Expect `agent`")


@pytest.mark.parametrize(("name", "module"), GAMES, ids=[n for n, _ in GAMES])
@pytest.mark.parametrize("agent", ["nobody", None, ["runner"]])
def test_aec_observe_of_an_unknown_agent_names_the_agents(name, module, agent):
    """PettingZoo's AEC conversion looked the agent up bare: KeyError('nobody'), or
    TypeError("unhashable type: 'list'"), where the spaces name the game's agents."""
    for env in (module.env(), make_team(module, aec=True, discrete_actions=True)):
        env.reset(seed=0)
        with pytest.raises(UnknownAgentError, match="Expect `agent` to be one of"):
            env.observe(agent)
        assert env.observe(env.agent_selection) is not None


@pytest.mark.parametrize(("name", "module"), GAMES, ids=[n for n, _ in GAMES])
@pytest.mark.parametrize("agent", ["nobody", ["runner"], "x" * 10**6])
def test_the_oracle_of_an_unknown_agent_is_refused(name, module, agent):
    """The game's oracle took any name: Vault applied the operator's setback for "nobody" (a
    door slammed shut), answered its distance, plan and info; Race's ``optimal_actions`` said
    "tuple.index(x): x not in tuple", its house and info a bare KeyError."""
    env = module.raw_env()
    env.reset(seed=0)
    snapshot = pickle.dumps(env)
    calls = [
        lambda: env.distance_to_goal(agent), lambda: env.optimal_actions(agent),
        lambda: env.joint_plan(agent), lambda: env.agent_info(agent),
        lambda: env.inject_setback(agent, np.random.default_rng(0)),
    ]  # fmt: skip
    if hasattr(env, "house_action"):
        calls.append(lambda: env.house_action(agent))
    for call in calls:
        with pytest.raises(UnknownAgentError, match="Expect `agent` to be one of") as caught:
            call()
        assert len(str(caught.value)) < 300
    assert pickle.dumps(env) == snapshot


def test_action_mask_of_an_unknown_agent_names_the_agents():
    env = make_team("vault_v0", discrete_actions=True)
    env.reset(seed=0)
    with pytest.raises(UnknownAgentError, match="one of"):
        env.action_mask("nobody")


@pytest.mark.parametrize(("name", "module"), GAMES, ids=[n for n, _ in GAMES])
def test_hostile_actions_cost_only_that_agents_turn(name, module):
    env = module.parallel_env()
    first, second = env.possible_agents
    for action in HOSTILE_ACTIONS:
        env.reset(seed=0)
        observations, _, _, _, infos = env.step({first: action, second: "wait"})
        assert infos[first]["valid_action"] is False
        assert infos[second]["valid_action"] is True
        for agent, observation in observations.items():
            assert env.observation_space(agent).contains(observation), (agent, action)


@pytest.mark.parametrize("game", [os, "x" * 10**6, 3, None, ["vault_v0"]])
def test_solo_role_env_refuses_what_is_not_a_team_game(game):
    # Before: a module without raw_env got AttributeError; a long name was quoted whole.
    with pytest.raises(ValueError) as caught:
        SoloRoleEnv(game)
    assert len(str(caught.value)) < 300


@pytest.mark.parametrize("kwargs", [{"role": "x" * 10**6}, {"partners": "y" * 10**6}])
def test_solo_role_env_quotes_a_hostile_argument_briefly(kwargs):
    with pytest.raises(ValueError, match="Expect") as caught:
        SoloRoleEnv("vault_v0", **kwargs)
    assert len(str(caught.value)) < 300


def _vault_at_a_locked_door():
    """Vault (easy, seed 0) played by its joint plan up to the first locked door: (env, game)."""
    from turnbudget.multiagent import vault_v0

    env = vault_v0.parallel_env(difficulty="easy")
    env.reset(seed=0)
    game = env.unwrapped
    while env.agents and not any(
        command.startswith("enter ") for command in game.world.admissible("runner")
    ):
        env.step(game.joint_plan()[0])
    assert env.agents, "the plan reaches a locked door before the end"
    return env, game


@pytest.mark.parametrize("digits", ["\u0661\u0662\u0663\u0664", "\uff11\uff12\uff13\uff14", "١٢34"])
def test_a_code_in_other_digits_is_a_spent_turn_the_operator_sees_in_its_space(digits):
    """Vault: at a locked door, a code in digits other than ASCII's is no code (it was parsed
    as an attempt, and its echo in the operator's monitor line left the printable space)."""
    env, game = _vault_at_a_locked_door()
    observations, _, _, _, infos = env.step({"operator": "wait", "runner": f"enter {digits}"})
    assert infos["runner"]["valid_action"] is False
    for agent in env.possible_agents:
        assert env.observation_space(agent).contains(observations[agent]), agent


@pytest.mark.parametrize(("name", "module"), GAMES, ids=[n for n, _ in GAMES])
@pytest.mark.parametrize("seed", [True, 1.5, -1, "3", 2**64])
def test_the_raw_game_refuses_a_bad_seed_as_every_stack_does(name, module, seed):
    """A seed that is not an int in [0, 2**64) is one ValueError naming it (the raw game left
    it to Gymnasium, which took True for 1 and raised its own error type for the rest)."""
    env = module.raw_env()
    with pytest.raises(ValueError, match="Expect `seed`"):
        env.reset(seed=seed)
    env.reset(seed=np.int64(3))  # NumPy ints are ints


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(("name", "module"), GAMES, ids=[n for n, _ in GAMES])
@pytest.mark.parametrize("action", [10**5000, _nested(100_000)], ids=["huge-int", "deep-list"])
@pytest.mark.parametrize(
    "stack", [{"record": True}, {"errors": {"schedule": {1: "slip"}}, "record": True}],
    ids=["record", "slips"],
)  # fmt: skip
def test_an_action_str_cannot_write_costs_its_turn_through_every_layer(name, module, action, stack):
    """The bare game spent the turn, but the recorder's ``str(action)`` raised (a
    RecursionError, or the ValueError of an int past 4,300 digits) after the round was played:
    its step record was lost (turns [2, 3] of 3), and a slip's narration raised before the
    round, leaving the error schedule a round ahead of the game."""
    env = make_team(module, turn_budget=3, **stack)
    first, second = env.possible_agents
    env.reset(seed=0)
    _, _, _, _, infos = env.step({first: action, second: "wait"})
    assert infos[first]["valid_action"] is False
    while env.agents:
        env.step({agent: "wait" for agent in env.agents})
    steps = [r for r in env.records if r["record"] == "step" and r["episode_id"].endswith(first)]
    assert [r["turn"] for r in steps] == [1, 2, 3]
    assert steps[0]["action"] == "<" + type(action).__name__ + ": too deep or too long to show>"


class _StrFails:
    def __repr__(self) -> str:
        raise RuntimeError("no text for this action")


@pytest.mark.parametrize(
    "stack", [{"record": True}, {"errors": {"schedule": {1: "slip"}}, "record": True}],
    ids=["record", "slips"],
)  # fmt: skip
def test_an_action_whose_str_raises_costs_its_turn_through_every_layer(stack):
    """`text_of` caught only the RecursionError and ValueError of ``str()``: an action whose
    ``__str__`` raised anything else (here a RuntimeError) crashed the recorder after the
    round was played, and a slip's narration before it."""
    env = make_team("vault_v0", turn_budget=3, **stack)
    first, second = env.possible_agents
    env.reset(seed=0)
    _, _, _, _, infos = env.step({first: _StrFails(), second: "wait"})
    assert infos[first]["valid_action"] is False
    while env.agents:
        env.step({agent: "wait" for agent in env.agents})
    steps = [r for r in env.records if r["record"] == "step" and r["episode_id"].endswith(first)]
    assert [r["turn"] for r in steps] == [1, 2, 3]
    assert steps[0]["action"] == "<_StrFails: its str() failed>"


@pytest.mark.parametrize(
    "bad", [10**5000, "x" * 10_000_000, 5, ["run"]], ids=["huge-int", "10-MB", "int", "list"]
)
def test_a_team_episode_id_that_is_no_short_str_is_refused_before_the_game_resets(bad):
    """The team recorder took any ``episode_id``: a 10 MB id made a 2-round episode 120 MB of
    records, and a huge int failed in str() after the game had reset (it played on with
    nothing recorded), as the single-agent recorder did before it was checked."""
    env = make_team("vault_v0", turn_budget=2, record=True)
    with pytest.raises(ValueError, match=r"Expect the `episode_id` option to be a str of at"):
        env.reset(seed=0, options={"episode_id": bad})
    assert env.agents == [] and env.records == []
    env.reset(seed=0, options={"episode_id": "task-a"})
    while env.agents:
        env.step({agent: "wait" for agent in env.agents})
    assert {r["team_episode_id"] for r in env.records} == {"task-a"}


@pytest.mark.parametrize(
    "template", ["\u212aey {code}", "enter\u00a0{code}", "ENTER\u3000{code}", "\u212aEY {code}"]
)
def test_a_look_alike_of_a_keypad_command_is_a_spent_turn(template):
    """Vault: at a locked door, "\\u212aey 1234" (the Kelvin sign lower-cases to "k") or
    "enter\\xa01234" (a no-break space split as a space) was an attempt at the keypad, while the
    native games play no look-alike of a command (case and whitespace fold in ASCII only)."""
    env, game = _vault_at_a_locked_door()
    code = next(c for c in game.world.admissible("runner") if c.startswith("enter "))[6:]
    _, _, _, _, infos = env.step({"operator": "wait", "runner": template.format(code=code)})
    assert infos["runner"]["valid_action"] is False
    _, _, _, _, infos = env.step({"operator": "wait", "runner": f"  KEY   {code} "})
    assert infos["runner"]["valid_action"] is True  # ASCII case and spacing: still an attempt


@pytest.mark.parametrize("last", ["dance", None, "wait"])
def test_the_last_round_tells_each_player_how_the_game_ended(last):
    """A losing racer whose last command was invalid read only "You can't do that": the loss
    ("your rival crafted first") went with the feedback it replaced. Vault's operator was
    never told in text that the runner made it."""
    from turnbudget.multiagent import race_v0, vault_v0

    env = race_v0.parallel_env()
    env.reset(seed=0)
    game = env.unwrapped
    while env.agents:
        actions = {"player_0": game.optimal_actions("player_0")[0],
                   "player_1": game.house_action("player_1")}  # fmt: skip
        if actions["player_0"] == "craft":
            actions["player_1"] = last
        observations, _, _, _, infos = env.step(actions)
    assert infos["player_1"]["lost"] and infos["player_0"]["won"]
    assert observations["player_1"]["text"].endswith("Your rival crafted first: you lose.")
    assert "lose" not in observations["player_0"]["text"]

    env = vault_v0.parallel_env()
    env.reset(seed=0)
    for commands in env.unwrapped.joint_plan(None):
        observations, *_ = env.step(commands)
    assert observations["operator"]["text"].endswith("The runner reaches the vault: you made it.")
    assert observations["runner"]["text"].endswith("You made it.")


@pytest.mark.parametrize("game", ["race_v0", "vault_v0"])
def test_a_transient_error_on_the_last_round_keeps_the_ending(game):
    """A transient error's narration replaces its turn's first paragraph, where the ending
    stood: the loser read only "Your attempt fails"."""
    from turnbudget.multiagent import make_team

    endings = {"race_v0": "Your rival crafted first: you lose.",
               "vault_v0": "The runner reaches the vault: you made it."}  # fmt: skip
    told = 0
    for seed in range(12):
        env = make_team(game, errors={"rate": 0.5, "kinds": ["transient"]})
        env.reset(seed=seed)
        inner = env.unwrapped
        while env.agents:
            if game == "race_v0":
                actions = {"player_0": (inner.optimal_actions("player_0") or ["look"])[0],
                           "player_1": inner.house_action("player_1")}  # fmt: skip
            else:
                actions = {r: (inner.optimal_actions(r) or ["wait"])[0] for r in env.agents}
            observations, _, _, _, infos = env.step(actions)
        for role, info in infos.items():
            event = info.get("injected_error") or {}
            if (info.get("lost") or role == "operator") and event.get("kind") == "transient":
                assert observations[role]["text"].endswith(endings[game])
                told += 1
    assert told
