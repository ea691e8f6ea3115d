"""Control agents: each does what its documentation says, from what a player sees."""

from __future__ import annotations

import re

import pytest

from turnbudget.agents import (
    LookOracle,
    OracleAgent,
    PingPong,
    RandomAgent,
    RecoveryControl,
    UndoReflex,
    make_agent,
)
from turnbudget.agents.controls import CONTROLS, inverse_command, noticed_error

MAZE = ["go north", "go south", "go east", "go west", "look"]


def test_every_control_is_a_registered_spec_with_its_name():
    names = {
        "undo": "undo-reflex", "pingpong": "ping-pong", "look-first": "look-first",
        "look-last": "look-last", "recovery-positive": "recovery-positive",
        "recovery-negative": "recovery-negative", "own-error-recovery": "own-error-recovery",
        "random": "random",
    }  # fmt: skip
    assert set(CONTROLS) == set(names)
    for spec, name in names.items():
        assert make_agent(f"control:{spec}").name == name
    assert repr(make_agent("control:oracle:0.3")) == "OracleAgent(epsilon=0.3)"
    with pytest.raises(ValueError, match="control:NAME"):
        make_agent("control:nope")
    with pytest.raises(ValueError, match="control:NAME"):
        make_agent("control:pingpong:3")


def test_errors_are_what_a_player_notices():
    assert noticed_error({"injected_error": {"kind": "slip", "applied": True}}, None) == "slip"
    assert noticed_error({"injected_error": {"kind": "slip", "applied": False}}, None) is None
    assert noticed_error({"injected_error": {"kind": "transient"}}, "go east") is None
    assert noticed_error({"executed_action": "go west"}, "go east") == "slip"
    assert noticed_error({"executed_action": "go west"}, None) is None  # a forced turn
    assert inverse_command("view p1", ["back", "look"]) == "back"
    assert inverse_command("next page", ["previous page"]) == "previous page"
    assert inverse_command("go north", ["go east"]) is None


def test_undo_reflex_is_random_without_errors():
    """Same seed, same observations, no error: the undo reflex plays what RandomAgent plays."""
    undo, rand = UndoReflex(), RandomAgent()
    undo.reset(7)
    rand.reset(7)
    info: dict = {"admissible_actions": MAZE}
    for turn in range(20):
        command = undo.act(f"room {turn}", info)
        assert command == rand.act(f"room {turn}", info)
        info = {"admissible_actions": MAZE, "executed_action": command}


def test_undo_reflex_undoes_a_slip_and_retraces_after_a_setback():
    agent = UndoReflex()
    agent.reset(0)
    agent.observe("Goal.\n\nRoom A", {"admissible_actions": MAZE}, "go east")
    agent.observe("You go east.\n\nRoom B", {"admissible_actions": MAZE}, "go north")
    agent.observe("You go north.\n\nRoom C", {"admissible_actions": MAZE}, "")  # setback turn
    setback = {"kind": "setback", "applied": True, "narration": "A gust sweeps you back!"}
    seen = {"admissible_actions": MAZE, "executed_action": "", "injected_error": setback}
    assert agent.act("A gust sweeps you back!\n\nRoom A", seen) == "go east"
    assert agent.act("You go east.\n\nRoom B", {"admissible_actions": MAZE,
                                               "executed_action": "go east"}) == "go north"  # fmt: skip
    # A slip its own command did not cause: it plays the inverse of what was executed.
    agent.act(
        "You go north.\n\nRoom C", {"admissible_actions": MAZE, "executed_action": "go north"}
    )
    command = agent._memory.commanded
    slipped = "go west" if command != "go west" else "go south"
    slip = {"admissible_actions": MAZE, "executed_action": slipped}
    undo = {"go west": "go east", "go south": "go north"}[slipped]
    assert agent.act("Your hand slips.\n\nRoom D", slip) == undo


def test_ping_pong_always_undoes_and_never_wins_a_maze():
    from turnbudget.wrappers.stack import make

    agent = PingPong()
    env = make("turnbudget/Maze-Easy-v0")
    wins = 0
    for seed in range(8):
        obs, info = env.reset(seed=seed)
        agent.reset(seed)
        last = None
        for _ in range(30):
            view = {"admissible_actions": info["admissible_actions"]}
            if last is not None:
                view["executed_action"] = last
            command = agent.act(obs, view)
            if last is not None and inverse_command(last, info["admissible_actions"]):
                assert command == inverse_command(last, info["admissible_actions"])
            obs, _, terminated, truncated, info = env.step(command)
            last = command
            if terminated or truncated:
                wins += bool(info["won"])
                break
    assert env.unwrapped.distance_to_goal() is not None
    assert wins <= 1  # it never gets more than one command away from where it started


def test_look_oracles_look_once_and_otherwise_follow_the_oracle():
    first, last = LookOracle("first"), LookOracle("last")
    assert not first.budget_aware and last.budget_aware and first.needs_oracle
    oracle_info = {"admissible_actions": MAZE, "oracle_actions": ["go west"]}
    for agent in (first, last):
        agent.reset(0)
    assert first.act("...", oracle_info) == "look"
    assert first.act("...", {**oracle_info, "executed_action": "look"}) == "go west"
    assert last.act("...", {**oracle_info, "turns_left": 5}) == "go west"
    assert last.act("...", {**oracle_info, "turns_left": 1}) == "look"
    with pytest.raises(ValueError, match="`when`"):
        LookOracle("middle")


@pytest.mark.parametrize(
    ("agent", "on_track", "after"),
    [(RecoveryControl(0.5, 0.0), 0.5, 0.0), (RecoveryControl(0.0, 0.8), 0.0, 0.8)],
)
def test_recovery_controls_change_epsilon_for_three_turns_after_an_error(agent, on_track, after):
    agent.reset(0)
    info = {"admissible_actions": MAZE, "oracle_actions": ["go west"]}
    agent.act("...", info)
    assert agent.epsilon == on_track
    agent.act("...", {**info, "injected_error": {"kind": "setback", "applied": True}})
    assert agent.epsilon == after
    commanded = agent._commanded
    for _ in range(2):  # the two turns after the one that showed the error
        agent.act("...", {**info, "executed_action": commanded})
        assert agent.epsilon == after
        commanded = agent._commanded
    agent.act("...", {**info, "executed_action": commanded})
    assert agent.epsilon == on_track
    # A slip it notices because something else than its command ran.
    agent.act("...", {**info, "executed_action": "not " + agent._commanded})
    assert agent.epsilon == after


def test_the_epsilon_oracle_control_is_the_oracle_agent():
    from turnbudget.agents.controls import EpsilonOracle

    assert EpsilonOracle is OracleAgent
    assert "memoryless" in OracleAgent.__doc__


def _baselines_and_controls() -> list:
    from turnbudget.agents import OracleAgent, RandomAgent
    from turnbudget.eval.probes.validate import control_agents

    return [RandomAgent(), OracleAgent(0.3), *control_agents()]


@pytest.mark.parametrize("agent", _baselines_and_controls(), ids=repr)
@pytest.mark.parametrize(
    ("info", "says"),
    [
        (None, "Expect `info` to be the env's info, a mapping, got None"),
        ({"admissible_actions": "look", "oracle_actions": ["look"]}, "a list of commands"),
    ],
    ids=["none", "str-commands"],
)
def test_a_turn_whose_info_is_no_envs_info_is_a_type_error_naming_it(agent, info, says):
    """The baselines and the controls read an info of None from inside (AttributeError,
    "argument of type 'NoneType' is not iterable"), and played a str of commands one
    character at a time ("l")."""
    agent.reset(0)
    with pytest.raises(TypeError, match=re.escape(says)):
        for _ in range(3):  # (a control may look first, or answer from its queue)
            agent.act("You are in a hall.", info)


@pytest.mark.parametrize("arg", [None, 3, ["pingpong"], b"pingpong"])
def test_make_control_refuses_a_name_that_is_no_str(arg):
    # (each was an AttributeError from arg.strip(), or a bytes TypeError naming nothing)
    from turnbudget.agents import make_control

    with pytest.raises(ValueError, match=r"Expect `arg` to be a control's NAME \(a str\), got "):
        make_control(arg)


def test_a_text_that_is_no_str_is_a_type_error_naming_it():
    """The undo reflex read a non-str observation with ``rsplit`` (an AttributeError, and only
    on the turn after the one that handed it over), and `inverse_command` read a non-str
    command (such as ``info["executed_action"]`` of 5, for the ping-pong) with ``partition``."""
    from turnbudget.agents.controls import PingPong, UndoReflex, state_text

    says = "Expect `observation` to be the env's text, a str, got "
    with pytest.raises(TypeError, match=re.escape(says + "None")):
        state_text(None)
    undo = UndoReflex()
    undo.reset(0)
    with pytest.raises(TypeError, match=re.escape(says + "5")):
        undo.act(5, {"admissible_actions": ["go north"]})
    with pytest.raises(TypeError, match=re.escape(says + "None")):
        undo.observe(None, {}, "go north")
    says = "Expect `command` to be a command (a str) or None, got "
    with pytest.raises(TypeError, match=re.escape(says + "['go north']")):
        inverse_command(["go north"], ["go south"])
    pingpong = PingPong()
    pingpong.reset(0)
    with pytest.raises(TypeError, match=re.escape(says + "5")):
        pingpong.act("x", {"admissible_actions": ["go north"], "executed_action": 5})
    assert inverse_command(None, ["go south"]) is None and inverse_command("", []) is None


def test_own_error_recovery_gains_only_by_recovering_from_its_own_errors():
    """A control good only after its own errors: random on track (single-step skill about
    0), far above random under errors in Pass@(1,T); the probes' recovery-specific skill,
    the response to an error it is told of, covers 0 (its own errors' repair cancels)."""
    from turnbudget.agents import RandomAgent
    from turnbudget.eval import evaluate, probe

    env = "turnbudget/Maze-Easy-v0"
    agent = make_agent("control:own-error-recovery")
    skills = probe(env, agent, tasks=60).summary["agents"]["own-error-recovery"][env]
    assert (
        skills["recovery_specific_skill"]["low"] <= 0 <= skills["recovery_specific_skill"]["high"]
    )
    assert skills["single_step_skill"]["low"] <= 0 <= skills["single_step_skill"]["high"]
    kwargs = dict(ks=[1], ts=[40], n=2, tasks=60, errors=0.1, record_steps=False)
    own = evaluate(env, agent, **kwargs).grid()
    chance = evaluate(env, RandomAgent(), **kwargs).grid()
    assert own["low"][0][0] > chance["high"][0][0]


def test_own_error_recovery_is_not_started_by_an_injected_setback():
    """After its own harmless `look`, an injected setback changed the state text, and the
    control took it for an error of its own (32 times in 20 Maze-Medium episodes)."""
    agent = make_agent("control:own-error-recovery")
    agent.reset(seed=0)
    info = {"admissible_actions": ["look"], "oracle_actions": ["go west"]}
    assert agent.act("You are in A.", info) == "look"
    setback = {"kind": "setback", "applied": True, "narration": "A gust sweeps you back."}
    after = {"admissible_actions": ["go east", "go west", "look"], "oracle_actions": ["go west"],
             "executed_action": "look", "injected_error": setback}  # fmt: skip
    agent.act("A gust sweeps you back.\n\nYou are in B.", after)
    assert agent._left == 0
