"""Non-string actions on a TextWorld game through the full stack: a TypeError that changes nothing."""

from __future__ import annotations

import pytest

import turnbudget
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
