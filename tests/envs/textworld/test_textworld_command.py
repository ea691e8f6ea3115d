"""One turn is one command: no input joins several commands, reaches a meta command or writes files.

The reference is the interpreter itself. A refused input must leave the
Z-machine memory exactly as it was; any other outcome is compared, through what
the interpreter answers to "look" and "inventory" (location, room contents,
inventory, score), with replaying single commands from the same state. The
memory alone cannot tell "a, b" from "a" then "b": it also holds the input line.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from _support import SHIPPED_TEXTWORLD_GAMES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnbudget  # noqa: F401 - registers the ids
from turnbudget.envs.textworld.command import PARSER_WORDS, CommandGrammar
from turnbudget.envs.textworld.sanitize import META_VERBS

GAMES = sorted(p.parent.name for p in SHIPPED_TEXTWORLD_GAMES.glob("*/0.z8"))
# Every way the Inform parser joins two commands or two objects, with spacing and case variants.
JOINERS = [
    ", ", ",", " , ", ". ", ".", " . ", " then ", " THEN ", "  then  ", " and ", " AND ",
    ", then ", ", and ", "; ", ";", ".then ", " ,and ", "\t,\t", " but ", ' "', " except ",
]  # fmt: skip
# Inputs the raw interpreter really plays as two commands (checked below, so the property is
# not vacuous): "go west, go north" is read as one verb with two objects, "west, north" is not.
SPLITTING = ["{a}. {b}", "{a}.{b}", "{a} then {b}", "{a} THEN {b}", "{sa}, {sb}", "{sa},{sb}"]
# The games whose joined pairs take ~20 s of the ~30 s (the `slow` suite joins their commands);
# a cooking, a treasure-hunter and every coin-collector game stay in the default suite.
LARGE = {
    "cooking-2ceb75f2ce",
    "cooking-6c670172e4",
    "custom-129ef7ebef",
    "treasure_hunter-fd2b30cf38",
}


def _interpreter(env: gym.Env) -> Any:
    """The jericho FrotzEnv under the TextWorld wrappers."""
    tw = env.unwrapped._tw
    while not hasattr(tw, "_jericho"):
        tw = tw._wrapped_env
    return tw._jericho


def _memory(frotz: Any) -> str:
    return hashlib.sha1(frotz.get_state()[0].tobytes()).hexdigest()


def _world(frotz: Any) -> tuple[str, ...]:
    """What the game says its world is, without changing it (turn counts left out)."""
    state = frotz.get_state()
    answers = []
    for probe in ("look", "inventory"):
        text = frotz.step(probe)[0]
        answers.append(re.sub(r"<moves>.*?</moves>|\n>[^\n]*$", "", text, flags=re.S))
    frotz.set_state(state)
    return tuple(answers)


def _make(shipped_cache: Path, game: str) -> gym.Env:
    path = shipped_cache / game / "0.z8"
    return gym.make("turnbudget/TextWorldFile-v0", game_file=path, turn_budget=10**9)


def _states(env: gym.Env, count: int) -> Any:
    """Yield the start of the game, then the states along its walkthrough."""
    env.reset(seed=0)
    walkthrough = env.unwrapped.walkthrough() or []
    for i in range(count):
        yield
        if i >= len(walkthrough) - 1:
            return
        env.step(walkthrough[i])


def _after_single(frotz: Any, start: Any, command: str) -> tuple[str, tuple[str, ...]]:
    """The memory and the world after playing ``command`` alone from ``start``."""
    frotz.set_state(start)
    frotz.step(command)
    after = _memory(frotz), _world(frotz)
    frotz.set_state(start)
    return after


@pytest.mark.parametrize("game", GAMES)
def test_every_admissible_command_is_one_command_of_the_grammar(shipped_cache, game):
    env = _make(shipped_cache, game)
    for _ in _states(env, 4):
        grammar = env.unwrapped._grammar
        for command in env.unwrapped.admissible_actions():
            assert grammar.parse(command) == (command.lower(), ""), command
    env.close()


def test_the_raw_interpreter_does_split_on_the_joiners(shipped_cache):
    """Without the grammar, ',', '.' and 'then' play two commands in one turn."""
    env = _make(shipped_cache, "coin_collector-1ad1367648")
    env.reset(seed=0)
    first, second = env.unwrapped.walkthrough()[:2]
    frotz = _interpreter(env)
    start = frotz.get_state()
    one = _after_single(frotz, start, first)[1]
    frotz.step(first)
    frotz.step(second)
    both = _world(frotz)
    assert both != one
    for form in SPLITTING:
        text = form.format(a=first, b=second, sa=first[3:], sb=second[3:])
        frotz.set_state(start)
        frotz.step(text)
        assert _world(frotz) == both, text
        assert env.unwrapped._grammar.parse(text)[0] is None
    env.close()


def test_the_raw_interpreter_plays_one_action_per_object_on_and(shipped_cache):
    """Without the grammar, 'take a and b' and 'take a, b' take both things in one turn."""
    env = _make(shipped_cache, "custom-129ef7ebef")
    env.reset(seed=0)
    takes = [c for c in env.unwrapped.admissible_actions() if c.startswith("take ")]
    first, second = (c.removeprefix("take ") for c in takes[:2])
    frotz = _interpreter(env)
    start = frotz.get_state()
    frotz.step(f"take {first}")
    frotz.step(f"take {second}")
    both = _world(frotz)
    for text in (f"take {first} and {second}", f"take {first}, {second}"):
        frotz.set_state(start)
        frotz.step(text)
        assert _world(frotz) == both, text
        assert env.unwrapped._grammar.parse(text)[0] is None
    env.close()


@pytest.mark.parametrize(
    "game", [pytest.param(g, marks=pytest.mark.slow) if g in LARGE else g for g in GAMES]
)
def test_joined_admissible_commands_advance_the_game_by_at_most_one_command(shipped_cache, game):
    """Every admissible command joined with every other by every joiner: at most one plays.

    The games with the most admissible commands (`LARGE`) run in the `slow` suite."""
    env = _make(shipped_cache, game)
    for depth, _ in enumerate(_states(env, 3)):
        frotz = _interpreter(env)
        commands = env.unwrapped.admissible_actions()
        start, before = frotz.get_state(), _memory(frotz)
        world = _world(frotz)
        single = {c: _after_single(frotz, start, c)[1] for c in commands}
        for (a, b), joiner in itertools.product(itertools.product(commands, repeat=2), JOINERS):
            for text in (a + joiner + b, (a + joiner + b).upper()):
                turns = env.unwrapped._moves
                _, _, _, _, info = env.step(text)
                if _memory(frotz) != before:  # it reached the interpreter: one command at most
                    assert _world(frotz) in {world, single[a], single[b]}, text
                    # back to the state under test
                    env.reset(seed=0)
                    for command in env.unwrapped.walkthrough()[:depth]:
                        env.step(command)
                    frotz = _interpreter(env)
                    assert _memory(frotz) == before
                else:
                    assert info["valid_action"] is False and env.unwrapped._moves == turns
    env.close()


@pytest.fixture(scope="module")
def cooking(shipped_cache):
    env = _make(shipped_cache, "cooking-c7d1f78f3b")
    env.reset(seed=0)
    yield env
    env.close()


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_generated_inputs_play_at_most_one_command_of_the_grammar(cooking, data):
    """Inputs built from the game's own words, parser words and punctuation."""
    env = cooking
    if env.unwrapped._episode_over:
        env.reset(seed=0)
    frotz = _interpreter(env)
    game = env.unwrapped._tw._game
    words = sorted(
        {w for c in env.unwrapped.admissible_actions() for w in c.split()}
        | {w.lower() for i in game.infos.values() if i.name for w in i.name.split()}
        | set(PARSER_WORDS)
    )
    tokens = st.one_of(st.sampled_from(words), st.sampled_from([",", ".", ";", '"', "!", "?"]))
    pieces = data.draw(st.lists(tokens, min_size=1, max_size=8))
    spaces = data.draw(st.lists(st.sampled_from(["", " ", "  "]), min_size=len(pieces)))
    text = "".join(s + p for s, p in zip(spaces, pieces, strict=False))
    start, before = frotz.get_state(), _memory(frotz)
    command, _ = env.unwrapped._grammar.parse(text)
    _, _, _, _, info = env.step(text)
    after = _memory(frotz)
    if command is None:
        assert after == before and info["valid_action"] is False
    else:
        assert not set(command.split()) & PARSER_WORDS
        assert all(ch.isalnum() or ch in " '-" for ch in command)
        assert after == _after_single(frotz, start, command)[0]
        env.reset(seed=0)  # back to the start for the next example


@pytest.mark.parametrize(
    "text", ["look, save", "look, quit", "save", "look. restore", "look then script", "undo",
             "look, transcript", "verbose", "restart", "look, again", "oops coin", "g"],
)  # fmt: skip
def test_meta_commands_never_reach_the_interpreter(shipped_cache, tmp_path, monkeypatch, text):
    monkeypatch.chdir(tmp_path)
    env = _make(shipped_cache, "coin_collector-1ad1367648")
    env.reset(seed=0)
    before = _memory(_interpreter(env))
    obs, _, terminated, truncated, info = env.step(text)
    assert info["valid_action"] is False and obs and not terminated and not truncated
    assert _memory(_interpreter(env)) == before
    _, _, _, _, info = env.step("look")  # the interpreter is not waiting for a yes/no answer
    assert info["valid_action"] is True
    assert os.listdir(tmp_path) == []
    env.close()


@pytest.mark.parametrize("text", ["lo\U0001f642ok", "\uff4c\uff4f\uff4f\uff4b", "loo\u212a"])
def test_a_look_alike_command_is_a_spent_turn_the_interpreter_never_sees(shipped_cache, text):
    """As every env reads its commands: an emoji inside a word, fullwidth letters and the
    Kelvin sign played ``look`` (folded or dropped into ASCII)."""
    env = _make(shipped_cache, "coin_collector-1ad1367648")
    env.reset(seed=0)
    before = _memory(_interpreter(env))
    obs, _, terminated, truncated, info = env.step(text)
    assert info["valid_action"] is False and "plain ASCII" in obs
    assert _memory(_interpreter(env)) == before and not terminated and not truncated
    env.close()


def test_comma_chaining_cannot_win_inside_the_budget():
    """The issue's reproducer: 'w, n, e, n' then 'take coin' won with turn_budget=2."""
    env = gym.make("turnbudget/CoinCollector-Easy-v0", turn_budget=2)
    env.reset(seed=0)
    _, _, _, _, info = env.step("w, n, e, n")
    assert info["valid_action"] is False
    _, _, terminated, truncated, info = env.step("take coin")
    assert not info["won"] and truncated and not terminated
    env.close()


def test_state_tracking_stays_in_sync_with_the_interpreter(shipped_cache):
    env = _make(shipped_cache, "coin_collector-1ad1367648")
    _, info = env.reset(seed=0)
    admissible = info["admissible_actions"]
    _, _, _, _, info = env.step("west, north")
    assert info["admissible_actions"] == admissible
    env.close()


def test_abbreviations_become_the_template_they_stand_for():
    grammar = CommandGrammar(
        ["go north", "examine {o}", "take {o}", "inventory", "look"], ["coin"], ["north"]
    )
    assert grammar.parse("N") == ("go north", "")
    assert grammar.parse("north") == ("go north", "")
    assert grammar.parse("go n") == ("go north", "")
    assert grammar.parse("x the coin") == ("examine the coin", "")
    assert grammar.parse("get coin") == ("take coin", "")
    assert grammar.parse("i") == ("inventory", "")
    assert grammar.parse("l") == ("look", "")
    for refused in ["south", "take", "take all", "take coin coin, look", "jump", "", "take it"]:
        assert grammar.parse(refused)[0] is None, refused


def test_entity_names_holding_parser_words_are_never_accepted():
    grammar = CommandGrammar(["take {o}"], ["salt and pepper", "coin"], [])
    assert grammar.parse("take coin") == ("take coin", "")
    assert grammar.parse("take salt")[0] is None
    assert grammar.parse("take salt and pepper")[0] is None


def test_a_name_holding_a_word_special_only_first_in_a_command_is_accepted():
    """TextWorld names keys and doors "type G ...": "g" (again) and "o" (oops) are special
    to the parser only as a command's first word, but every parser word kept a name out of
    the vocabulary, so a game's own walkthrough was refused and the game could not be won
    (TextWorldCustom-v0, game 82)."""
    grammar = CommandGrammar(
        ["take {o} from {c}", "open {c}", "unlock {c} with {k}"],
        ["type G passkey", "type O locker", "bowl", "salt and pepper"],
        [],
    )
    assert grammar.parse("take type G passkey from bowl")[0] == "take type g passkey from bowl"
    assert grammar.parse("open type O locker")[0] == "open type o locker"
    assert grammar.parse("unlock type O locker with type G passkey")[0] is not None
    assert grammar.parse("take salt and pepper from bowl")[0] is None  # (still split on)
    assert grammar.parse("g")[0] is None and grammar.parse("again")[0] is None


def test_templates_starting_with_a_meta_verb_are_dropped():
    grammar = CommandGrammar(["save {o}", "take {o}"], ["coin"], [])
    assert sorted(META_VERBS & {"save", "restore", "quit"}) == ["quit", "restore", "save"]
    assert grammar.parse("save coin")[0] is None and grammar.parse("take coin")[0] == "take coin"


def test_a_name_the_game_does_not_know_gets_what_a_thing_out_of_sight_gets():
    """The grammar's refusal told an agent which words name the game's things, the ones it
    has not seen too (ingredients in another room, the coin rooms away): Inform answers
    "You can't see any such thing." to both, and so does the grammar now."""
    env = gym.make("turnbudget/Cooking-Medium-v0")
    obs, _ = env.reset(seed=0)
    game = env.unwrapped._tw._game
    names = sorted({info.name for info in game.infos.values() if info.name})
    hidden = [name for name in names if name.lower() not in obs.lower()]
    assert hidden, "the game has things out of sight at its start"
    answers = set()
    for name in [*hidden[:4], "purple banana", "zorkmid"]:
        text, *_ = env.step(f"examine {name}")
        answers.add(text.splitlines()[0])
    assert answers == {"You can't see any such thing."}, answers
    # A command of no form of the game's is still refused as such.
    text, *_ = env.step("dance wildly")
    assert text.startswith("One command per turn")
