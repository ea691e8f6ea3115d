"""Budget visibility: hidden, shown every turn, or shown in the last k turns."""

from __future__ import annotations

import re
import string
from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium import spaces
from gymnasium.core import ActType

from turnbudget._checks import brief, check_positive_int
from turnbudget.envs.text_space import TextSpace
from turnbudget.wrappers._common import find_wrapper, record_args, require_single
from turnbudget.wrappers.turn_budget import TurnBudget

__all__ = ["RevealBudget", "budget_visible", "check_reveal", "widen_text_space"]

_MOST_K_DIGITS = 18  # (k in "final=k": a budget far past any episode's)

_MODES = ("never", "always", "final")
_WIDE = 10**9  # stand-in number used to size the observation space
_FIELDS = ("turns_left", "turns_used", "turn_budget")
_MAX_FORMAT_WIDTH = 256  # (a template's width or precision: 10**10 ran out of memory)
_SHOWN_LIMIT = 10_000  # most formatted budget texts kept


class RevealBudget(gym.Wrapper[str, ActType, str, ActType], gym.utils.RecordConstructorArgs):
    """Decide whether and how the agent sees its turn budget in the observation.

    - ``"never"``: the observation is unchanged (the budget is hidden).
    - ``"always"``: ``template`` is appended to every observation.
    - ``"final"`` (or the string ``"final=k"``): appended only while
      ``turns_left <= final_turns``.

    The template is formatted with ``turns_left``, ``turns_used`` and
    ``turn_budget`` from the `TurnBudget` inside. Nothing else changes: not
    the reward, the flags or the info, except ``info["budget_visible"]``
    (whether this observation showed the budget), which evaluators use to tell
    budget-aware runs apart (Pass@(K,T) needs the rerun mode for those).

    Args:
        env: An env with ``Text`` observations that contains a `TurnBudget`.
        mode: ``"never"``, ``"always"``, ``"final"`` or ``"final=k"``.
        final_turns: k for the ``"final"`` mode (a positive int).
        template: A ``str.format`` template.

    Example:
        >>> import gymnasium as gym
        >>> import turnbudget
        >>> env = RevealBudget(gym.make("turnbudget/Maze-Easy-v0", turn_budget=5), mode="final=2")
        >>> obs, info = env.reset(seed=0)
        >>> "turns left" in obs, info["budget_visible"]
        (False, False)
        >>> for _ in range(3):
        ...     obs, *_ = env.step("look")
        >>> obs.splitlines()[-1]
        '[2 turns left]'
    """

    def __init__(
        self,
        env: gym.Env[str, ActType],
        mode: str = "always",
        final_turns: int | None = None,
        template: str = "\n[{turns_left} turns left]",
    ):
        record_args(self, mode=mode, final_turns=final_turns, template=template)
        gym.Wrapper.__init__(self, env)
        name, final_turns, wide = check_reveal(mode, final_turns, template)
        require_single(env, RevealBudget)
        if find_wrapper(env, TurnBudget) is None:
            raise ValueError("RevealBudget needs a TurnBudget inside the env it wraps")
        space = env.observation_space
        if not isinstance(space, spaces.Text):
            raise ValueError(f"RevealBudget needs a Text observation space, got {space}")
        self.mode, self.final_turns, self.template = name, final_turns, template
        # (a template with no budget in it, "[turn {turns_used}]" or "[Hurry!]", shows none:
        # the agent's view and an LLM's budget line read ``budget_visible`` to show T)
        self._shows_budget = template_shows_budget(template)
        # (turns_left, turns_used, turn_budget) -> the text shown: formatting cost more than
        # the rest of a step here, and a run meets few such triples.
        self._shown: dict[tuple[int, int, int], str] = {}
        if name != "never":
            self.observation_space = widen_text_space(space, wide)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        return self._reveal(obs, info), info

    def step(self, action: ActType) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._reveal(obs, info), reward, terminated, truncated, info

    def _reveal(self, obs: str, info: dict[str, Any]) -> str:
        left = info["turns_left"]
        # (the common mode before the call: a call costs more than the rest of this check)
        visible = self.mode == "always" or budget_visible(self.mode, self.final_turns, left)
        assert "budget_visible" not in info, "info['budget_visible'] set twice"
        info["budget_visible"] = visible and self._shows_budget
        if not visible:
            return obs
        used, budget = info["turns_used"], info["turn_budget"]
        if not type(left) is type(used) is type(budget) is int:  # (1, 1.0 and True: one key)
            return obs + self.template.format(turns_left=left, turns_used=used, turn_budget=budget)
        shown = self._shown.get((left, used, budget))
        if shown is None:
            if len(self._shown) >= _SHOWN_LIMIT:
                self._shown.clear()
            shown = self._shown[left, used, budget] = self.template.format(
                turns_left=left, turns_used=used, turn_budget=budget
            )
        return obs + shown


def template_shows_budget(template: str) -> bool:
    """Whether a reveal template shows the budget: turns left, or the budget itself (a turn
    counter alone, or a hint, does not).

    Judged by what it writes, not by the fields it names: ``"{turns_left!s:.0}"`` names turns
    left and writes nothing of it. A template is rendered with turns left, then the budget,
    changed in every digit; it shows the budget if either changes the text.

    Example:
        >>> template_shows_budget("[{turns_left} left]"), template_shows_budget("[turn {turns_used}]")
        (True, False)
        >>> template_shows_budget("[Hurry!{turns_left!s:.0}]")
        False
    """

    def shown(turns_left: int, turn_budget: int) -> str:
        return template.format(turns_left=turns_left, turns_used=0, turn_budget=turn_budget)

    try:
        text = shown(12, 23)
        return shown(345_678, 23) != text or shown(12, 456_789) != text
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        # (a template `check_reveal` refuses: by the fields it names)
        fields = {field for _, field, _, _ in string.Formatter().parse(template) if field}
        return bool(fields & {"turns_left", "turn_budget"})


def check_reveal(mode: Any, final_turns: Any, template: Any) -> tuple[str, int | None, str]:
    """Check the visibility settings (`RevealBudget`'s, shared by the team wrapper).

    Returns the mode name, k for ``"final"`` (None otherwise) and the template
    formatted with very wide numbers (to size the observation space).
    """
    if not isinstance(mode, str):
        raise ValueError(f"Expect `mode` to be one of {_MODES} or 'final=k', got {brief(mode)}")
    name, _, k = mode.strip().lower().partition("=")
    if name not in _MODES or (k and name != "final"):
        raise ValueError(f"Expect `mode` to be one of {_MODES} or 'final=k', got {brief(mode)}")
    if k:
        if final_turns is not None:
            raise ValueError(
                f"Give k once: `mode`={brief(mode)} and `final_turns`={brief(final_turns)}"
            )
        k = k.strip()
        # (int() would take "1_0" and other digits, and refuse 4,300 digits in its own words)
        if not (k.isascii() and k.isdigit()) or len(k) > _MOST_K_DIGITS:
            raise ValueError(f"Expect k in `mode`='final=k' to be a positive int, got {brief(k)}")
        final_turns = int(k)
    if name == "final":
        if final_turns is None:
            raise ValueError(
                "Expect how many final turns show the budget with mode 'final': 'final=k' "
                "(--reveal final=3), or `final_turns`=k"
            )
        final_turns = check_positive_int(final_turns, "final_turns")  # (a NumPy int: a Python one)
    elif final_turns is not None:
        raise ValueError(
            f"Expect `final_turns` to be None: it is only for mode 'final', got "
            f"final_turns={brief(final_turns)} with mode={brief(mode)}"
        )
    if not isinstance(template, str):
        raise ValueError(f"Expect `template` to be a str, got {brief(template)}")
    # (the observation space widens to the template's characters: a NUL or a lone surrogate
    # then passed as an observation no UTF-8 client could send)
    unprintable = sorted({c for c in template if not (c.isprintable() or c in "\n\t")})
    if unprintable:
        raise ValueError(
            "Expect `template` to be printable text (newlines and tabs too), got "
            f"{brief(template)} with {', '.join(map(ascii, unprintable[:5]))}"
        )
    expect = (
        "Expect `template` to use only {turns_left}, {turns_used}, {turn_budget} (a format spec "
        f"without nested fields, widths at most {_MAX_FORMAT_WIDTH})"
    )
    try:
        for _, field, spec, _ in string.Formatter().parse(template):
            # (an attribute, an index or a nested field: an internal error, or a width of 10**9)
            if field is not None and (field not in _FIELDS or "{" in (spec or "")):
                raise ValueError(f"field {{{field}{':' + spec if spec else ''}}}")
            if spec and any(int(n) > _MAX_FORMAT_WIDTH for n in re.findall(r"\d+", spec)):
                raise ValueError(f"width in {{{field}:{spec}}}")
        wide = template.format(turns_left=_WIDE, turns_used=_WIDE, turn_budget=_WIDE)
    except (KeyError, IndexError, ValueError, TypeError, OverflowError) as err:
        raise ValueError(f"{expect}, got {brief(template)} ({err})") from None
    return name, final_turns, wide


def budget_visible(mode: str, final_turns: int | None, turns_left: int) -> bool:
    """Whether the budget shows now: always, or in the last ``final_turns`` turns."""
    return mode == "always" or (mode == "final" and turns_left <= (final_turns or 0))


def widen_text_space(space: spaces.Text, suffix: str) -> spaces.Text:
    """``space`` grown to hold observations with ``suffix`` appended."""
    return TextSpace(
        max_length=space.max_length + len(suffix),
        min_length=space.min_length,
        charset=set(space.character_set) | set(suffix),
    )
