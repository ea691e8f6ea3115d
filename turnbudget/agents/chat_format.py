"""What a chat agent sends and how its reply becomes a command (no client, no server).

Three pieces, each usable on its own and covered by the default test suite:

- `PromptTemplates`, `render_turn` and `build_prompt`: a conversation with one
  user message per turn (the observation, the admissible commands and, when
  the env reveals it, the budget) and the executed command as the model's
  answer, after the instructions and the goal. It only grows at the end, so a
  server reuses the evaluated tokens of the previous turn's prompt. Instructions
  go in the first user message: some chat formats (Gemma's) drop the system
  message.
- `parse_command`: a reply to one command, ``strict`` (the reply must be an
  admissible command) or ``lenient`` (also find one inside the reply, or the
  closest one). The outcome is returned with the command, so the step record
  can say how the command was obtained.
- `constraint_body`: the request fields that restrict the reply to the
  admissible commands on servers that support it (a llama.cpp GBNF
  ``grammar``, vLLM ``guided_choice``, an OpenAI-style JSON schema).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from turnbudget._checks import brief, check_positive_int, is_listlike
from turnbudget.agents.secrets import redact

__all__ = [
    "CONSTRAINTS",
    "PARSE_MODES",
    "Parsed",
    "PromptTemplates",
    "build_prompt",
    "constraint_body",
    "gbnf_choice",
    "parse_command",
    "render_turn",
]

PARSE_MODES = ("strict", "lenient")
#: How replies are restricted: ``auto`` picks from the server (see `ChatAgent`), ``none`` never.
CONSTRAINTS = ("auto", "grammar", "guided_choice", "json_schema", "none")

_BUDGET_FIELDS = ("turns_left", "turn_budget", "turns_used")


def _check_text(value: Any, name: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"Expect `{name}` to be a str, got {brief(value)}")


def _check_texts(values: Any, name: str) -> list[str]:
    """``values`` as a list of str: a str is one command, never its characters, so it is
    refused, like a list holding anything but str."""
    if not is_listlike(values):
        raise TypeError(f"Expect `{name}` to be a list of str, got {brief(values)}")
    values = list(values)
    if not all(isinstance(value, str) for value in values):
        raise TypeError(f"Expect `{name}` to be a list of str, got {brief(values)}")
    return values


_DEFAULT_INTRO = """\
You are playing a text adventure game. Reach the goal in as few turns as you can.

Goal: {goal}

"""

_DEFAULT_TURN = """\
Now:
{observation}
{budget}
Admissible commands: {commands}

Reply with exactly one command from the admissible commands and nothing else.
Command:"""


@dataclass(frozen=True)
class PromptTemplates:
    """The ``str.format`` templates of a chat agent's prompt (override any of them).

    The prompt is a conversation, one user message per turn and the executed
    command as the model's answer, so it only ever grows at the end: turn
    t + 1's prompt starts with turn t's prompt and reply, and a server reuses
    the tokens it has already evaluated (see `build_prompt`).

    Attributes:
        intro: put before the first user message shown; field ``goal``.
        turn: one turn's user message; fields ``observation``, ``commands``
            (comma-separated admissible commands), ``budget`` (the rendered
            budget line, empty when the budget is hidden) and ``turn``.
        budget: the budget line; fields ``turns_left``, ``turn_budget``, ``turns_used``.
        system: an optional system message (None: none; Gemma drops it anyway).

    Example:
        >>> PromptTemplates(budget="({turns_left} left)").budget
        '({turns_left} left)'
    """

    intro: str = _DEFAULT_INTRO
    turn: str = _DEFAULT_TURN
    budget: str = "Turns left: {turns_left} of {turn_budget}.\n"
    system: str | None = None

    def __post_init__(self) -> None:
        samples = {
            "intro": dict(goal=""),
            "turn": dict(observation="", commands="", budget="", turn=1),
            "budget": dict(turns_left=1, turn_budget=1, turns_used=0),
        }
        for name, fields in samples.items():
            template = getattr(self, name)
            if not isinstance(template, str):
                raise ValueError(f"Expect template `{name}` to be a str, got {template!r}")
            try:
                template.format(**fields)
            # (an attribute or an index of a field, "{goal.x}" or "{turns_left[0]}", raises
            # AttributeError or TypeError: a template that does not format all the same)
            except (KeyError, IndexError, ValueError, AttributeError, TypeError) as exc:
                raise ValueError(
                    f"Template `{name}` does not format with the fields {sorted(fields)}: {exc!r}"
                ) from None
        if self.system is not None and not isinstance(self.system, str):
            raise ValueError(f"Expect template `system` to be a str or None, got {self.system!r}")


def render_turn(
    templates: PromptTemplates,
    *,
    observation: str,
    commands: Sequence[str],
    budget: Mapping[str, Any] | None,
    turn: int,
) -> str:
    """One turn's user message: rendered once, when the turn is played, and shown
    unchanged in every later prompt that holds the turn.

    Args:
        templates: the templates to fill.
        observation: the observation to act on.
        commands: the admissible commands (may be empty).
        budget: ``turns_left``/``turn_budget``/``turns_used`` when the budget is
            revealed, else None.
        turn: the 1-based turn about to be played.

    Example:
        >>> text = render_turn(PromptTemplates(), observation="A hall.",
        ...     commands=["north", "look"], budget=None, turn=1)
        >>> "A hall." in text, "Admissible commands: north, look" in text
        (True, True)
    """
    _check_text(observation, "observation")
    commands = _check_texts(commands, "commands")
    if budget is not None and not (
        isinstance(budget, Mapping) and all(key in budget for key in _BUDGET_FIELDS)
    ):
        raise ValueError(
            f"Expect `budget` to be None or a mapping with the keys {_BUDGET_FIELDS}, "
            f"got {brief(budget)}"
        )
    return templates.turn.format(
        observation=observation.strip(),
        commands=", ".join(commands) if commands else "(any command)",
        budget="" if budget is None else templates.budget.format(**budget),
        turn=turn,
    )


def build_prompt(
    templates: PromptTemplates,
    *,
    goal: str,
    history: Sequence[tuple[str, str]],
    current: str,
) -> list[dict[str, str]]:
    """The chat messages for one decision: the past turns as user and assistant
    messages, then the current turn's user message.

    Instructions go in the first user message (``intro``), not in a system
    message: some chat formats (Gemma's) drop it. Append-only: when ``history``
    gains the current turn (with the command played) and a new ``current``, the
    new messages start with these ones, so a rendered prompt starts with the
    previous prompt and its reply.

    Args:
        templates: the templates to fill.
        goal: the episode's goal (from the reset info).
        history: the past turns shown, oldest first, as ``(user message,
            executed command)``; the caller decides how many.
        current: the current turn's user message (`render_turn`).

    Example:
        >>> t = PromptTemplates(intro="Goal: {goal}. ", turn="{observation}?")
        >>> one = render_turn(t, observation="A hall.", commands=[], budget=None, turn=1)
        >>> two = render_turn(t, observation="A den.", commands=[], budget=None, turn=2)
        >>> build_prompt(t, goal="exit", history=[(one, "north")], current=two)
        ... # doctest: +NORMALIZE_WHITESPACE
        [{'role': 'user', 'content': 'Goal: exit. A hall.?'},
         {'role': 'assistant', 'content': 'north'}, {'role': 'user', 'content': 'A den.?'}]
    """
    _check_text(goal, "goal")
    _check_text(current, "current")
    if not is_listlike(history) or not all(
        isinstance(turn, (tuple, list)) and len(turn) == 2 and all(isinstance(t, str) for t in turn)
        for turn in history
    ):
        raise TypeError(
            f"Expect `history` to be a list of (user message, command) str pairs, got {brief(history)}"
        )
    intro = templates.intro.format(goal=goal.strip() or "(not given)")
    system = templates.system is not None
    messages = [{"role": "system", "content": templates.system}] if system else []
    for user, command in history:
        messages.append({"role": "user", "content": user})
        messages.append({"role": "assistant", "content": command})
    messages.append({"role": "user", "content": current})
    first = 1 if system else 0
    messages[first] = {"role": "user", "content": intro + messages[first]["content"]}
    return messages


class Parsed(NamedTuple):
    """A reply turned into a command, and how.

    ``outcome`` is one of ``exact`` (the reply is an admissible command),
    ``json`` (a JSON ``{"command": ...}`` reply naming one), ``contained``
    (an admissible command found inside the reply, lenient only), ``fuzzy``
    (the closest admissible command, lenient only), ``free`` (no admissible
    list: the reply's first line is the command) or ``invalid`` (nothing
    matched: the first line is sent as is, and the env spends a turn on it).

    A command taken from the reply's own words (``free``, ``invalid``) has every
    secret blanked (`turnbudget.agents.secrets.redact`): it is played, echoed by
    the env and recorded, and a server may have put the API key in it. The
    blanked command is the one played, so the records show what ran.
    """

    command: str
    outcome: str


_PRINTABLE = re.compile(r"[^\x20-\x7e]")
_PREFIX = re.compile(r"^(?:command|action|answer|>)\s*:?\s*", re.IGNORECASE)
_LEFT_WRAP = re.compile(r"[\s`'\"]*")  # (what `_unwrapped` takes off the start of a line)
_RIGHT_WRAP = re.compile(r"[\s`'\".!]*")  # (and off its end, matched on the line reversed)
# A Markdown code fence's own line (```, ```text): the command is on the next line.
_FENCE = re.compile(r"`{3,}[\w+-]*")


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _unwrapped(line: str) -> str:
    """``line`` without the quotes and closing ``.`` or ``!`` around it, in either order
    ('"go north".' and '"go north!"' are both go north; the quotes were stripped first, and
    '"go north".' became 'go north"'): from its first character that is no quote or space to
    its last that is no quote, space, ``.`` or ``!``. (Computed once: a loop that took a
    layer at a time copied the line each time, and a reply of '."' repeated over 512 KB took
    15 s to parse.)"""
    start = _LEFT_WRAP.match(line).end()  # type: ignore[union-attr] (it matches "" anywhere)
    end = len(line) - _RIGHT_WRAP.match(line[::-1]).end()  # type: ignore[union-attr]
    return line[start:end] if start < end else ""


def _first_line(reply: str, max_length: int, *, blank: bool = False) -> str:
    """The reply's first printable line, at most ``max_length`` characters; with ``blank``,
    its secrets blanked before it is cut (a cut could leave half of one)."""
    for line in reply.splitlines():
        if blank:  # (before its characters are cut too: a secret ending in "!" or holding
            line = redact(line)  # an "ä" was no longer itself, and was played as it was)
        line = _PRINTABLE.sub("", line).strip()
        if line and not _FENCE.fullmatch(line):
            line = _unwrapped(_PREFIX.sub("", line).strip())
            if not line:  # ("Command:" alone, the command on the next line)
                continue
            return (redact(line) if blank else line)[:max_length]
    return ""


def _forms(reply: str, line: str) -> list[str]:
    """What the reply may say as one command, the most literal first: the reply as it is,
    its first line (past a code fence's), that line without its wrappings, also without a
    ``Command:`` prefix, and `_first_line`'s printable form. (Only that last one was tried:
    an admissible command that begins with "answer", ends in a quote or holds a character
    that is not printable ASCII lost it, and a strict agent played "take caf" where a
    constrained model had chosen "take café".)"""
    text = reply.strip()
    first = next(
        (
            s
            for s in map(str.strip, text.splitlines())
            if s and not _FENCE.fullmatch(s) and _unwrapped(_PREFIX.sub("", s).strip())
        ),
        "",
    )
    return [text, first, _unwrapped(first), _unwrapped(_PREFIX.sub("", first).strip()), line]


def parse_command(
    reply: str, admissible: Sequence[str], mode: str = "lenient", max_length: int = 200
) -> Parsed:
    """Turn a model's reply into one command.

    The command is an admissible command as it is written, or else one printable line
    of at most ``max_length`` characters (a reply cannot smuggle a second command
    through a newline). A reply matches a command exactly (``exact``) as it is, or by its
    first line (past a code fence's) without quotes, closing ``.``/``!``, a ``Command:``
    prefix, case or spacing.

    Example:
        >>> cmds = ["go north", "take key", "look"]
        >>> parse_command("take key", cmds, "strict")
        Parsed(command='take key', outcome='exact')
        >>> parse_command("I will take key now.", cmds, "strict").outcome
        'invalid'
        >>> parse_command("I will take key now.", cmds, "lenient")
        Parsed(command='take key', outcome='contained')
        >>> parse_command("go nort", cmds, "lenient")
        Parsed(command='go north', outcome='fuzzy')
    """
    if mode not in PARSE_MODES:
        raise ValueError(f"Expect `mode` to be one of {PARSE_MODES}, got {mode!r}")
    _check_text(reply, "reply")
    admissible = _check_texts(admissible, "admissible")
    max_length = check_positive_int(max_length, "max_length")
    line = _first_line(reply, max_length)
    if not admissible:
        return Parsed(_first_line(reply, max_length, blank=True), "free")
    forms = _forms(reply, line)
    # The command as written first ("Go North" where "go north" is admissible too), then
    # any case and spacing (but not across lines).
    commands = set(admissible)
    matched = next((form for form in forms if form in commands), None)
    if matched is not None:
        return Parsed(matched, "exact")
    by_norm = {_norm(c): c for c in admissible}
    matched = next((_norm(form) for form in forms[1:] if _norm(form) in by_norm), None)
    if matched is not None:
        return Parsed(by_norm[matched], "exact")
    named = _json_command(reply)
    if named is not None and named in commands:  # (as written first, as a text reply is)
        return Parsed(named, "json")
    if named is not None and _norm(named) in by_norm:
        return Parsed(by_norm[_norm(named)], "json")
    if mode == "lenient":
        text = _norm(reply)
        # The longest admissible command found as whole words, earliest first on ties.
        best: tuple[int, int, str] | None = None
        for key, command in by_norm.items():
            match = re.search(rf"(?<![a-z0-9]){re.escape(key)}(?![a-z0-9])", text)
            if match and (best is None or (-len(key), match.start()) < best[:2]):
                best = (-len(key), match.start(), command)
        if best is not None:
            return Parsed(best[2], "contained")
        close = difflib.get_close_matches(_norm(line), list(by_norm), n=1, cutoff=0.6)
        if close:
            return Parsed(by_norm[close[0]], "fuzzy")
    return Parsed(_first_line(reply, max_length, blank=True), "invalid")


def _json_command(reply: str) -> str | None:
    text = reply.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return None
    command = value.get("command") if isinstance(value, dict) else None
    return command if isinstance(command, str) else None


# Control characters go into a grammar as ``\\xHH``: llama.cpp reads it as a C string, so a
# raw NUL ended it mid-literal, and the grammar's parse error killed the process (SIGSEGV).
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _hex(match: re.Match[str]) -> str:
    return f"\\x{ord(match[0]):02x}"


def gbnf_choice(commands: Sequence[str]) -> str:
    """A llama.cpp GBNF grammar whose only sentences are ``commands``.

    Example:
        >>> print(gbnf_choice(['go north', 'say "hi"']))
        root ::= "go north" | "say \\"hi\\""
    """
    commands = _check_texts(commands, "commands")
    if not commands:
        raise ValueError("Expect at least one command to build a grammar")
    literals = (
        '"' + _CONTROL.sub(_hex, c.replace("\\", "\\\\").replace('"', '\\"')) + '"'
        for c in commands
    )
    return "root ::= " + " | ".join(literals)


def constraint_body(kind: str, commands: Sequence[str]) -> dict[str, Any]:
    """The request fields (``extra_body`` for the OpenAI client) restricting a reply to
    ``commands``; ``{}`` when ``kind`` is ``none`` or there are no commands.

    Example:
        >>> constraint_body("guided_choice", ["look", "north"])
        {'guided_choice': ['look', 'north']}
        >>> constraint_body("none", ["look"])
        {}
    """
    if kind not in CONSTRAINTS or kind == "auto":
        raise ValueError(f"Expect a resolved constraint kind in {CONSTRAINTS[1:]}, got {kind!r}")
    commands = _check_texts(commands, "commands")
    if kind == "none" or not commands:
        return {}
    if kind == "grammar":
        return {"grammar": gbnf_choice(commands)}
    if kind == "guided_choice":
        return {"guided_choice": list(commands)}
    schema = {
        "type": "object",
        "properties": {"command": {"type": "string", "enum": list(commands)}},
        "required": ["command"],
        "additionalProperties": False,
    }
    return {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "command", "schema": schema, "strict": True},
        }
    }
