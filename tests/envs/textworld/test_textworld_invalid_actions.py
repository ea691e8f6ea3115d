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
    # (two coins in the game: Inform asks "Which do you mean", whatever is listed)
    assert grammar.the_one_named("put coin on box", listed) is None
    assert grammar.the_one_named("put red on box", listed) == "put red coin on box"
    assert grammar.the_one_named("look", ["look"]) is None  # (names nothing: matched whole)
    # A thing's whole name names it, not a longer name holding it: Inform reads "open chest"
    # as the chest (already open, so not listed), not the wooden chest.
    chests = CommandGrammar(["open {c}", "close {c}"], ["chest", "wooden chest"], [])
    assert chests.the_one_named("open chest", ["open wooden chest", "close chest"]) is None
    assert chests.the_one_named("open wooden", ["open wooden chest"]) == "open wooden chest"
    # With no chest in sight (no listed command names it), "chest" is the wooden one.
    assert chests.the_one_named("open chest", ["open wooden chest"]) == "open wooden chest"


def _named_in_part(grammar: CommandGrammar, command: str) -> set[str]:
    """``command`` with each thing it names cut to a part of its name (each subset of its
    words, in order), and with its second thing left out (``take key`` for ``take key from
    box``): what a player may type for it."""
    import itertools

    for _, pattern in grammar._forms:
        match = pattern.fullmatch(command)
        if match is not None:
            break
    else:
        return set()
    spans = [match.span(i + 1) for i in range(len(match.groups()))]
    parts = []
    for start, end in spans:
        words = command[start:end].split()
        parts.append({" ".join(c) for k in range(1, len(words) + 1)
                      for c in itertools.combinations(words, k)})  # fmt: skip
    typed = set()
    for choice in itertools.product(*parts):
        text = command
        for (start, end), part in sorted(zip(spans, choice, strict=True), reverse=True):
            text = text[:start] + part + text[end:]
        typed.add(text)
    if len(spans) > 1:
        typed |= {command[: spans[0][0]] + part for part in parts[0]}
    return typed - {command}


@pytest.mark.parametrize("seed, turns", [(2, 6), (7, 4)])
def test_a_command_named_in_part_plays_as_the_listed_command_it_is_mapped_to(seed, turns):
    """The reference is the interpreter: wherever `canonical_command` maps what a player
    types to a listed command, both reach the same state (played on copies). A first rule
    mapped "open door" to "open sliding patio door" where the game asked "Which do you
    mean, barn door or sliding patio door?", and "take of butter" to a command."""
    import copy
    import random

    env = turnbudget.make("turnbudget/TextWorldCustom-v0")
    env.reset(seed=seed)
    game, rng, mapped = env.unwrapped, random.Random(seed), 0
    for _ in range(turns):
        for listed in game.admissible_actions():
            for typed in sorted(_named_in_part(game._grammar, listed.lower())):
                command = game.canonical_command(typed)
                if command is None:
                    continue
                mapped += 1
                as_typed, as_listed = copy.deepcopy(game), copy.deepcopy(game)
                as_typed._play(typed)
                as_listed._play(command)
                assert as_typed.state_key() == as_listed.state_key(), (typed, command)
                as_typed.close()
                as_listed.close()
        optimal = game.optimal_actions()
        game._play(
            optimal[0] if optimal and rng.random() < 0.6 else rng.choice(game.admissible_actions())
        )
        if game._episode_over:
            break
    assert mapped > 5
    env.close()
