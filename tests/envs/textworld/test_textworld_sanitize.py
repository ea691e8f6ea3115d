"""Command sanitizing and text normalization, including property tests on the real env."""

from __future__ import annotations

import string
import time

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnbudget  # noqa: F401 - registers the ids
from turnbudget.envs.textworld.env import clean_feedback
from turnbudget.envs.textworld.sanitize import (
    MAX_COMMAND_LENGTH,
    META_VERBS,
    normalize_text,
    sanitize_command,
)


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("go north", "go north"),
        ("  Take   Type K Key \n", "take type k key"),
        ("\tlook\t", "look"),
        ("caf\u00e9", "cafe"),
        ("e\u0301xamine box", "examine box"),  # (an accent already apart from its letter)
        ("", ""),
    ],
)
def test_safe_commands_pass_cleaned(raw, expected):
    assert sanitize_command(raw) == (expected, "")


@pytest.mark.parametrize(
    "raw",
    ["\\q", "\\", "look\nquit", "look\rquit", "a\x00b", "\x1b[2J", "look. quit", "look;quit",
     "take key then quit", "yes", "x" * (MAX_COMMAND_LENGTH + 1), *sorted(META_VERBS),
     "QUIT", "  restart  "],
)  # fmt: skip
def test_unsafe_commands_are_refused_with_feedback(raw):
    command, feedback = sanitize_command(raw)
    assert command is None and feedback


@pytest.mark.parametrize(
    "raw",
    ["lo\U0001f642ok", "look\ud800", "lo\u00adok", "\uff4c\uff4f\uff4f\uff4b", "loo\u212a",
     "go\u00a0north", "examine \u2603 box", "  Caf\u00e9 \ufdfa "],
    ids=["emoji", "surrogate", "soft-hyphen", "fullwidth", "kelvin", "no-break-space", "snowman",
         "arabic-ligature"],
)  # fmt: skip
def test_a_character_outside_ascii_but_an_accent_is_refused(raw):
    """Every env's parser reads commands in ASCII, where a look-alike plays no command: here
    NFKD folded the Kelvin sign, a fullwidth letter or a no-break space into ASCII, and every
    other character was dropped, so ``lo🙂ok`` played ``look``."""
    command, feedback = sanitize_command(raw)
    assert command is None and "plain ASCII" in feedback


@pytest.mark.parametrize(
    "raw", ["look\u00a0", "\u3000look", "look\x85", "look\x1f", "\u2028look", " look\n", "look\x0b"]
)
def test_a_command_is_taken_or_refused_as_the_native_games_take_it(raw):
    """Python's str.strip() took Unicode whitespace and some control characters off a
    command's ends: "look\\u00a0" and "look\\x85" played "look" on TextWorld, where every
    native game refused them. Only ASCII whitespace is trimmed now."""
    native = gym.make("turnbudget/KeyQuest-Easy-v0")
    native.reset(seed=0)
    expected = native.step(raw)[4]["valid_action"]
    assert (sanitize_command(raw)[0] == "look") == expected
    native.close()


def test_a_long_command_is_refused_before_it_is_normalised(monkeypatch):
    """NFKD makes one U+FDFA 18 characters: 10 MB of them took 0.75 s and 350 MB before the
    length check refused them. The check comes first now: nothing long is normalised."""
    import unicodedata

    from turnbudget.envs.textworld import sanitize

    seen: list[int] = []
    original = unicodedata.normalize

    def normalize(form: str, text: str) -> str:
        seen.append(len(text))
        return original(form, text)

    monkeypatch.setattr(sanitize.unicodedata, "normalize", normalize)
    command, feedback = sanitize_command("\ufdfa" * 3_000_000)
    assert command is None and "too long" in feedback and not seen
    assert sanitize_command("  Caf\u00e9 ") == ("cafe", "")  # (folded as before)


@given(st.text(max_size=300))
def test_sanitized_commands_are_always_plain_single_commands(raw):
    command, feedback = sanitize_command(raw)
    if command is None:
        assert feedback
        return
    assert set(command) <= set(string.ascii_letters + string.digits + string.punctuation + " ")
    assert "\\" not in command and "." not in command and ";" not in command
    assert len(command) <= MAX_COMMAND_LENGTH
    assert command.split(" ")[0] not in META_VERBS


@given(st.text(max_size=500))
def test_normalized_text_fits_the_printable_charset(raw):
    assert set(normalize_text(raw)) <= set(string.printable)
    assert set(clean_feedback(raw)) <= set(string.printable)


def test_clean_feedback_drops_banner_and_prompt():
    raw = (
        "\n\n   ________  ________\n  |        \\|        \\\n   \\$$$$$$$$| $$$$$$$$\n"
        "Welcome to TextWorld!\n\n\n\n-= Kitchen =-\nA kitchen.\n\n>            -= Kitchen =-0/1"
    )
    assert clean_feedback(raw) == "Welcome to TextWorld!\n\n-= Kitchen =-\nA kitchen."
    end = "You eat the meal.\n\n                 *** The End ***\n\nWould you like to RESTART, RESTORE or QUIT?\n"
    assert clean_feedback(end) == "You eat the meal.\n\n*** The End ***"


@pytest.fixture(scope="module")
def easy_env():
    env = gym.make("turnbudget/TreasureHunter-Easy-v0", num_games=1, turn_budget=10**6)
    env.reset(seed=0)
    yield env
    env.close()


# 5 CPU seconds per step at most (Hypothesis's own deadline is wall time: a busy machine
# would trip it); a step blocked on I/O is caught by the timeout mark.
@pytest.mark.timeout(600, method="thread")
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.text(max_size=400))
def test_any_text_is_a_spent_turn_that_fits_the_space(easy_env, raw):
    began = time.thread_time()
    obs, reward, terminated, truncated, info = easy_env.step(raw)
    assert time.thread_time() - began < 5.0, f"step({raw[:20]!r}) too slow"
    assert easy_env.observation_space.contains(obs) and obs
    assert isinstance(info["valid_action"], bool)
    assert not truncated
    if terminated:  # a lucky "take ..." can win or lose: start over
        easy_env.reset(seed=0)


@pytest.mark.parametrize("method", ["optimal_actions", "distance_to_goal"])
def test_the_oracle_before_the_first_reset_is_reset_needed_as_in_the_native_games(method):
    """TextWorld answered [] and None before any reset (read as "no command starts a plan"
    and "unsolvable"), where every native game raises ResetNeeded."""
    for env_id in ("turnbudget/KeyQuest-Easy-v0", "turnbudget/TreasureHunter-Easy-v0"):
        game = gym.make(env_id).unwrapped
        with pytest.raises(gym.error.ResetNeeded, match=f"before {method}"):
            getattr(game, method)()
        game.close()


def test_a_setback_before_a_reset_or_from_no_generator_is_refused_as_in_the_native_games():
    """TextWorld's setback before any reset narrated nothing, and with an int for its rng
    failed inside TreasureHunter (AttributeError: 'int' object has no attribute 'integers')
    and played on in CoinCollector, whose state needed no draw."""
    import numpy as np

    for env_id in ("turnbudget/KeyQuest-Easy-v0", "turnbudget/TreasureHunter-Easy-v0",
                   "turnbudget/CoinCollector-Easy-v0"):  # fmt: skip
        game = gym.make(env_id).unwrapped
        with pytest.raises(gym.error.ResetNeeded, match="before inject_setback"):
            game.inject_setback(np.random.default_rng(0))
        game.reset(seed=0)
        with pytest.raises(TypeError, match=r"Expect `rng` to be a np\.random\.Generator"):
            game.inject_setback(5)
        assert isinstance(game.inject_setback(np.random.default_rng(0)), str)
        game.close()
