"""Non-string actions on a TextWorld game through the full stack: a TypeError that changes nothing."""

from __future__ import annotations

import pytest

import turnbudget
from turnbudget.envs.textworld.command import CommandGrammar
from turnbudget.wrappers import InjectErrors, TurnBudget
from turnbudget.wrappers._common import find_wrapper


@pytest.mark.parametrize("kind", ["slip", "setback", "transient"])
def test_non_string_actions_leave_the_schedule_and_the_game_untouched(kind):
    env = turnbudget.make(
        "turnbudget/TreasureHunter-Easy-v0", errors={"schedule": {1: kind}}, record=True
    )
    _, info = env.reset(seed=0)
    game = env.unwrapped
    history, admissible = list(game._history), info["admissible_actions"]
    for bad in (None, 7, b"look"):
        with pytest.raises(TypeError, match="str"):
            env.step(bad)
    assert game._history == history  # no slip or setback command reached the interpreter
    assert find_wrapper(env, InjectErrors)._turn == 0
    assert find_wrapper(env, TurnBudget).turns_used == 0
    assert game.admissible_actions() == admissible
    _, _, _, _, info = env.step("look")
    assert info["injected_error"]["kind"] == kind and info["injected_error"]["turn"] == 1
    env.close()


def test_a_listed_command_in_other_case_is_the_command_listed():
    """The grammar answers in lower case and TextWorld lists "examine BBQ": the command as
    listed, or as typed, played no admissible command (canonical_command None), so a slip
    "replaced" it with itself and the records judged it invalid."""
    import gymnasium as gym

    prefix = ["open screen door", "go west", "take carrot", "take orange bell pepper", "go east"]
    env = gym.make("turnbudget/Cooking-Hard-v0", num_games=1, errors={"schedule": {6: "slip"}})
    env.reset(seed=17)
    for action in prefix:
        env.step(action)
    game = env.unwrapped
    assert "examine BBQ" in game.admissible_actions()
    assert game.canonical_command("examine bbq") == game.canonical_command("examine BBQ")
    assert game.canonical_command("examine bbq") == "examine BBQ"
    info = env.step("examine bbq")[4]
    assert info["injected_error"]["replaced_action"] not in ("examine BBQ", "examine bbq")
    assert info["valid_action"]
    env.close()


def test_a_thing_named_in_part_is_the_listed_command_it_names():
    """ "take butter" plays "take stick of butter", and "take key" the listed "take key from
    box", but `canonical_command` gave None for both: on an error's turn the records judged
    the optimal command invalid, and a slip could "replace" it with the command it plays."""
    env = turnbudget.make("turnbudget/TextWorldCustom-v0")
    env.reset(seed=7)
    game = env.unwrapped
    assert "take stick of butter" in game.admissible_actions()
    assert game.canonical_command("take butter") == "take stick of butter"
    assert game.canonical_command("put towel on the couch") == "put paper towel on couch"
    env.reset(seed=2)
    assert game.optimal_actions() == ["take key from box"]
    assert game.canonical_command("take the key") == "take key from box"
    assert game.canonical_command("take box") is None  # (listed: no "take box")
    assert game.canonical_command("drop key") is None  # (the key is not held)
    env.close()

    env = turnbudget.make(
        "turnbudget/TextWorldCustom-v0", errors={"schedule": {1: "slip"}}, record=True
    )
    env.reset(seed=2)
    info = env.step("take key")[4]
    assert info["injected_error"]["applied"]
    assert info["injected_error"]["replaced_action"] != "take key from box"
    env.step("take key")  # the game's own reading of it: one turn nearer the goal
    assert env.unwrapped.distance_to_goal() == 4
    env.close()


def test_a_name_in_part_that_fits_several_listed_commands_names_none():
    grammar = CommandGrammar(
        ["take {o}", "take {o} from {c}", "put {o} on {s}"],
        ["red coin", "blue coin", "box", "key", "towel"],
        [],
    )
    listed = ["take red coin", "take blue coin", "take key from towel", "put red coin on box"]
    assert grammar.the_one_named("take coin", listed) is None  # (which coin?)
    assert grammar.the_one_named("take red", listed) == "take red coin"
    assert grammar.the_one_named("take key", listed) == "take key from towel"
    assert grammar.the_one_named("take towel", listed) is None  # (not the key from it)
    assert grammar.the_one_named("put coin on box", listed) == "put red coin on box"
    assert grammar.the_one_named("look", ["look"]) is None  # (names nothing: matched whole)
