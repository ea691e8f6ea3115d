"""RevealBudget: never / always / final=k, templates, and nothing else changes."""

from __future__ import annotations

import gymnasium as gym
import pytest
from _wrapper_stub import STUB_ID, LineWorld

from turnbudget.wrappers import RevealBudget


def play(env: gym.Env, n: int, action: str = "wait") -> list[tuple]:
    out = [env.reset(seed=0)]
    out += [env.step(action) for _ in range(n)]
    return out


def test_never_changes_nothing_but_the_visibility_flag():
    bare = play(gym.make(STUB_ID, length=100, turn_budget=5), 5)
    hidden = play(RevealBudget(gym.make(STUB_ID, length=100, turn_budget=5), mode="never"), 5)
    for a, b in zip(bare, hidden):
        assert b[-1].pop("budget_visible") is False
        assert a == b


def test_always_appends_turns_left_and_changes_nothing_else():
    env = RevealBudget(gym.make(STUB_ID, length=100, turn_budget=4), mode="always")
    bare = play(gym.make(STUB_ID, length=100, turn_budget=4), 4)
    shown = play(env, 4)
    for turn, (a, b) in enumerate(zip(bare, shown)):
        assert b[0] == a[0] + f"\n[{4 - turn} turns left]"
        assert b[1:-1] == a[1:-1] and b[-1].pop("budget_visible") is True and b[-1] == a[-1]
        assert env.observation_space.contains(b[0])


@pytest.mark.parametrize("mode", ["final=2", "FINAL = 2"])
def test_final_k_shows_only_the_last_k_turns(mode):
    env = RevealBudget(gym.make(STUB_ID, length=100, turn_budget=5), mode=mode.replace(" ", ""))
    flags = [step[-1]["budget_visible"] for step in play(env, 5)]
    assert flags == [False, False, False, True, True, True]  # turns_left 5,4,3,2,1,0


def test_final_with_final_turns_and_a_custom_template():
    env = RevealBudget(
        gym.make(STUB_ID, length=100, turn_budget=3),
        mode="final",
        final_turns=3,
        template=" ({turns_used}/{turn_budget})",
    )
    obs, _ = env.reset(seed=0)
    assert obs.endswith(" (0/3)")
    obs, *_ = env.step("wait")
    assert obs.endswith(" (1/3)")


def test_budget_from_reset_options_is_shown():
    env = RevealBudget(gym.make(STUB_ID), mode="always")
    obs, _ = env.reset(seed=0, options={"turn_budget": 77})
    assert obs.endswith("[77 turns left]")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "sometimes"}, "Expect `mode`"),
        ({"mode": 3}, "Expect `mode`"),
        ({"mode": "always=2"}, "Expect `mode`"),
        ({"mode": "final"}, "final_turns"),
        ({"mode": "final=0"}, "positive int"),
        ({"mode": "final=x"}, "positive int"),
        ({"mode": "final=1_0"}, "positive int"),  # (int() would read 10)
        ({"mode": "final=\u0663"}, "positive int"),  # (an Arabic-Indic 3: int() would read 3)
        ({"mode": "final=-1"}, "positive int"),
        ({"mode": "final", "final_turns": -1}, "positive int, got -1"),
        ({"mode": "final=2", "final_turns": 2}, "Give k once"),
        ({"mode": "always", "final_turns": 2}, "only for mode 'final'"),
        ({"mode": "always", "template": "{turns}"}, "Expect `template`"),
    ],
)
def test_bad_configuration_raises_at_construction(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RevealBudget(gym.make(STUB_ID), **kwargs)


@pytest.mark.parametrize(
    "template",
    [
        "{turns_left.real}",  # (an attribute: AttributeError, or a way into the int's object)
        "{turns_left[0]}",
        "{turns_left:c}",  # (OverflowError formatting the wide stand-in)
        "{turns_left:>10000000000}",  # (MemoryError: formatted once at construction)
        "{turns_left:.{turn_budget}}",  # (a nested field: a width of the budget itself)
        "{}",
        "{0}",
        "{turns_left!x}",
        "{turns_left",
    ],
)
def test_a_template_that_formats_more_than_the_three_numbers_is_a_value_error(template):
    from turnbudget.multiagent import make_team

    with pytest.raises(ValueError, match=r"Expect `template` to use only \{turns_left\}"):
        RevealBudget(gym.make(STUB_ID), mode="always", template=template)
    with pytest.raises(ValueError, match=r"Expect `template` to use only \{turns_left\}"):
        make_team("vault_v0", reveal={"mode": "always", "template": template})


@pytest.mark.parametrize(
    "template", ["\x00{turns_left}", "{turns_left}\udc80", "\r[{turns_left}]", "\x1b[2J"]
)
def test_a_template_with_unprintable_characters_is_a_value_error(template):
    """The observation space widens to the template's characters: a NUL or a lone surrogate
    was then an observation the space held and no UTF-8 client could send."""
    from turnbudget.multiagent import make_team

    with pytest.raises(ValueError, match="Expect `template` to be printable text"):
        RevealBudget(gym.make(STUB_ID), mode="always", template=template)
    with pytest.raises(ValueError, match="Expect `template` to be printable text"):
        make_team("vault_v0", reveal={"mode": "always", "template": template})
    # (text beyond ASCII, newlines and tabs are printable: shown as given)
    env = RevealBudget(gym.make(STUB_ID), mode="always", template="\n\t[{turns_left} tours ✓]")
    obs, info = env.reset(seed=0)
    assert obs.endswith(f"\n\t[{info['turns_left']} tours ✓]") and env.observation_space.contains(
        obs
    )


def test_a_template_may_pad_and_convert_its_numbers():
    template = " [{turns_left:>4}/{turn_budget:03d} {turns_used!r}]"
    env = RevealBudget(gym.make(STUB_ID), mode="always", template=template)
    obs, info = env.reset(seed=0)
    left, budget = info["turns_left"], info["turn_budget"]
    assert obs.endswith(f" [{left:>4}/{budget:03d} 0]") and len(f"{left:>4}") >= 4


def test_needs_a_turn_budget_and_wraps_once():
    with pytest.raises(ValueError, match="needs a TurnBudget"):
        RevealBudget(LineWorld())
    with pytest.raises(ValueError, match="already in this stack"):
        RevealBudget(RevealBudget(gym.make(STUB_ID)))


class _OddNumbers(gym.Wrapper):
    """Budget numbers that equal ints but are not ints (a bool, a float) while ``odd``."""

    odd = False

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.odd:
            if info["turns_used"] == 1:
                info["turns_used"] = True
            info["turn_budget"] = float(info["turn_budget"])
        return obs, reward, terminated, truncated, info


@pytest.mark.parametrize("kept", [3, 10_000])  # the texts kept are dropped often, or never
def test_the_text_shown_is_the_template_formatted_every_turn(monkeypatch, kept):
    import turnbudget.wrappers.reveal_budget as reveal_budget

    monkeypatch.setattr(reveal_budget, "_SHOWN_LIMIT", kept)
    template = "|{turns_left}/{turns_used}/{turn_budget}"
    numbers = _OddNumbers(gym.make(STUB_ID, length=100))
    env = RevealBudget(numbers, mode="always", template=template)
    for budget, odd in [(4, False), (6, False), (4, True), (4, False), (3, True)]:
        numbers.odd = odd  # the same numbers as ints, then as a bool and a float: other texts
        obs, _ = env.reset(seed=0, options={"turn_budget": budget})
        texts = [obs.split("|")[1]]
        for _ in range(budget):
            obs, *_ = env.step("wait")
            texts.append(obs.split("|")[1])
        used = [0, True, *range(2, budget + 1)] if odd else range(budget + 1)
        total = [budget] + [float(budget) if odd else budget] * budget
        assert texts == [f"{budget - n}/{u}/{t}" for n, u, t in zip(range(budget + 1), used, total)]


def test_a_numpy_final_turns_is_kept_as_a_python_int():
    """``final_turns=np.int64(3)`` (a sweep over np.arange) was kept as it came: the stack's
    encoding (`HistoryFeatures.spec_dict`, documented JSON-serialisable, what a saved policy
    holds) then failed in json.dumps: 'Object of type int64 is not JSON serializable'."""
    import json

    import numpy as np

    import turnbudget
    from turnbudget.wrappers import HistoryFeatures

    env = RevealBudget(gym.make(STUB_ID, length=100, turn_budget=4), "final", np.int64(3))
    assert type(env.final_turns) is int and env.final_turns == 3
    stack = turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=4, text_features=16,
                            info="text", reveal={"mode": "final", "final_turns": np.int64(3)})  # fmt: skip
    spec = HistoryFeatures(stack, budget=True).spec_dict()
    assert json.loads(json.dumps(spec))["reveal"]["final_turns"] == 3


@pytest.mark.parametrize(
    "template",
    # (the last names turns left and writes none of it)
    ["\n[turn {turns_used}]", "\n[Hurry!]", "\n[Hurry!{turns_left!s:.0}{turn_budget!r:.0}]"],
)
def test_a_template_that_shows_no_budget_does_not_make_it_visible(template):
    """``budget_visible`` was True on every turn the template was shown: the agent's view then
    carried turn_budget and turns_left, and an LLM's prompt "Turns left: 6 of 6"."""
    import turnbudget
    from turnbudget.eval.run.agent_view import agent_info

    env = turnbudget.make("turnbudget/Maze-Easy-v0", turn_budget=6,
                          reveal={"mode": "always", "template": template})  # fmt: skip
    obs, info = env.reset(seed=0)
    assert obs.endswith(template.format(turns_left=6, turns_used=0, turn_budget=6))
    assert info["budget_visible"] is False
    view = agent_info(info, show_budget=False)
    assert "turn_budget" not in view and "turns_left" not in view
    env = turnbudget.make("turnbudget/Maze-Easy-v0", turn_budget=6,
                          reveal={"mode": "always", "template": "\n[{turns_left} of {turn_budget}]"})  # fmt: skip
    _, info = env.reset(seed=0)
    assert info["budget_visible"] is True
    assert agent_info(info, show_budget=False)["turns_left"] == 6


def test_final_without_k_says_how_to_give_k(capsys):
    """A bare 'final' said "Expect `final_turns` (a positive int)", a keyword the command
    line has no flag for (it takes --reveal final=3)."""
    from turnbudget.cli import main

    with pytest.raises(ValueError, match=r"'final=k' \(--reveal final=3\), or `final_turns`=k"):
        gym.make("turnbudget/Maze-Easy-v0", reveal="final")
    assert main(["eval", "--env", "Maze-Easy-v0", "--reveal", "final", "--t", "5",
                 "--tasks", "1", "--no-plots", "--quiet"]) == 2  # fmt: skip
    assert "--reveal final=3" in capsys.readouterr().err


@pytest.mark.parametrize("template", ["\n[{turns_left:03d} left]", "\n[{turn_budget!r}]"])
def test_a_template_that_shows_the_budget_by_a_spec_or_conversion_makes_it_visible(template):
    import turnbudget

    env = turnbudget.make("turnbudget/Maze-Easy-v0", turn_budget=6,
                          reveal={"mode": "always", "template": template})  # fmt: skip
    obs, info = env.reset(seed=0)
    assert "6" in obs.splitlines()[-1] and info["budget_visible"] is True
