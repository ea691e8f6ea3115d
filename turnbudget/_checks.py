"""Argument checks shared by every layer, and the one ``"module:attr"`` loader.

A leaf module: it imports nothing from turnbudget, so envs, wrappers, agents,
eval and the command line can all use it without bending the layers.

``bool`` is an ``int`` subclass in Python; every check here refuses it, since
``turn_budget=True`` is always a mistake and never a budget of one.

Example:
    >>> check_positive_int(3, "turn_budget")
    3
    >>> check_positive_int(True, "turn_budget")
    Traceback (most recent call last):
    ...
    ValueError: Expect `turn_budget` to be a positive int, got True
    >>> load_object("math:sqrt")(9.0)
    3.0
"""

from __future__ import annotations

import contextlib
import importlib
import math
import numbers
import os
import re
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "AGENT_FLAGS",
    "MAX_BATCH_SIZE",
    "MAX_LABEL_BYTES",
    "MAX_SEED",
    "MAX_TURN_BUDGET",
    "Each",
    "Items",
    "Maybe",
    "agent_flag",
    "brief",
    "check_agent",
    "check_batch_size",
    "check_bool",
    "check_label",
    "check_positive_int",
    "check_probability",
    "check_reset_options",
    "check_seed",
    "check_turn_budget",
    "field_problem",
    "is_finite",
    "is_int",
    "is_listlike",
    "is_real",
    "is_whole",
    "json_int_keys",
    "load_object",
    "make_failure",
    "make_folders",
    "normalize_weights",
    "renamed",
]

#: The largest turn budget: what the records hold as a count (`turnbudget.eval.logs.MAX_COUNT`,
#: an int32), far above any real episode.
MAX_TURN_BUDGET = 2**31 - 1
#: The largest run seed (the base every per-episode seed is derived from): a 64-bit word.
MAX_SEED = 2**64 - 1
#: The longest label, in bytes of UTF-8: a label names files and directories (a report's plots,
#: the command line's ``runs/<label>``), whose names stop at 255 bytes.
MAX_LABEL_BYTES = 128
#: The most parts a label's ``/`` may make (``runs/<label>`` nests that deep; a report
#: searches ``runs`` to `turnbudget.records.files.MAX_RUN_DEPTH`, the same).
MAX_LABEL_PARTS = 16
#: The most episodes one agent may have in flight (a batch agent's ``max_batch_size``, an async
#: agent's ``concurrency``): each holds an env of its own (a TextWorld one, a process).
MAX_BATCH_SIZE = 4096
#: What an agent may declare (`agent_flag`): the oracle's actions, its budget on every turn,
#: a house player's hints (team games).
AGENT_FLAGS = ("needs_oracle", "budget_aware", "needs_house")
_BRIEF = 80  # characters of a value quoted in a message
#: Characters of a path's repr a message shows whole (a tmp path of a test run is ~150; a
#: longer one is cut, as any hostile value is).
PATH_CHARS = 512


def brief(value: Any, most: int | None = None) -> str:
    """``repr(value)``, cut to 80 characters (or ``most``): a message may quote a hostile value,
    never repeat it. A path is shown whole up to `PATH_CHARS` (``most=PATH_CHARS``).

    Example:
        >>> brief([1, 2])
        '[1, 2]'
        >>> brief("x" * 10**6)[-30:]
        'xxxxxx... (1000002 characters)'
    """
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # (nested past the interpreter; an int too long to write)
        return f"<{type(value).__name__}: too deep or too long to show>"
    except Exception:  # (a __repr__ that raises, or returns no str)
        return f"<{type(value).__name__}: its repr() failed>"
    most = _BRIEF if most is None else most
    return text if len(text) <= most else f"{text[: most - 5]}... ({len(text)} characters)"


def make_failure(exc: BaseException, registered: bool) -> str:
    """What ``gym.make`` said when it failed, short: its message repeats the id whole (a 1 MB
    id made a 2 MB message, one with a lone surrogate a message no stream could write).
    ``registered``: whether the id is registered (else that is what is said of it)."""
    detail = str(exc)
    if len(detail) > 500 or not detail.isprintable():
        detail = brief(detail) if registered else "no such id is registered"
    return detail


# Characters a terminal acts on (C0 and C1 controls, bidirectional overrides).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def escaped_controls(text: str) -> str:
    r"""``text`` with the characters a terminal acts on written as escapes: a message may
    quote what an agent or a user wrote (ESC sequences set a terminal's title, cleared its
    screen).

    Example:
        >>> escaped_controls("boom\x1b[2J\n")
        'boom\\x1b[2J\\n'
    """
    return _CONTROL.sub(lambda m: repr(m[0])[1:-1], text)


def text_of(value: Any) -> str:
    """``str(value)``, or for a value ``str()`` cannot write (nested past the interpreter, an
    int of over 4,300 digits, a ``__str__`` that raises) a short stand-in: what a record or a
    narration shows of a hostile action, which ``str()`` alone raised from after the turn was
    played.

    Example:
        >>> text_of(5), text_of(10**5000)
        ('5', '<int: too deep or too long to show>')
    """
    try:
        return str(value)
    except (RecursionError, ValueError):
        return f"<{type(value).__name__}: too deep or too long to show>"
    except Exception:  # (a __str__ or __repr__ that raises, or returns no str: as `brief`)
        return f"<{type(value).__name__}: its str() failed>"


#: The deepest a stack option may nest (its dicts and lists): far above any real setting, far
#: below the interpreter's recursion limit, which copying or checking a deeper one hit.
MAX_OPTION_DEPTH = 32
#: The most bits of an int in an option: far past any count, seed or budget, far below the
#: 4,300 digits past which ``str()`` refuses to write one (and a refusal's message failed).
MAX_OPTION_INT_BITS = 8192


def check_option(value: Any, name: str, most: int = MAX_OPTION_DEPTH) -> None:
    """A ValueError naming ``name`` when ``value``'s dicts, lists, tuples and sets nest deeper
    than ``most``, or hold an int of more than `MAX_OPTION_INT_BITS` bits, found without
    recursion.

    Example:
        >>> check_option({"rate": [0.1]}, "errors")
        >>> nested = []
        >>> for _ in range(40):
        ...     nested = [nested]
        >>> check_option(nested, "errors")
        Traceback (most recent call last):
        ...
        ValueError: Expect `errors` to nest at most 32 deep (dicts and lists), got one deeper
        >>> check_option({"weights": [10**4000]}, "budget_mix")
        Traceback (most recent call last):
        ...
        ValueError: Expect `budget_mix` to hold no int of more than 8,192 bits, got one of 13,288
    """
    level = [value]
    for _ in range(most + 1):
        inner = []
        for item in level:
            if isinstance(item, int) and item.bit_length() > MAX_OPTION_INT_BITS:
                raise ValueError(
                    f"Expect `{name}` to hold no int of more than {MAX_OPTION_INT_BITS:,} bits, "
                    f"got one of {item.bit_length():,}"
                )
            if isinstance(item, Mapping):
                inner.extend(item.values())
            elif isinstance(item, (list, tuple, set, frozenset)):
                inner.extend(item)
        if not inner:
            return
        level = inner
    raise ValueError(
        f"Expect `{name}` to nest at most {most} deep (dicts and lists), got one deeper"
    )


def is_listlike(value: Any) -> bool:
    """True for an iterable of values that is not text (str, bytes) or a mapping, whose
    items would be characters or keys: ``"look"`` is one command, never four.

    Example:
        >>> [is_listlike(v) for v in (["a"], ("a",), range(2), "ab", b"ab", {"a": 1}, 3, None)]
        [True, True, True, False, False, False, False, False]
    """
    # (a 0-d NumPy array is an Iterable whose iteration raises "iteration over a 0-d array")
    return (
        isinstance(value, Iterable)
        and not isinstance(value, (str, bytes, bytearray, Mapping))
        and getattr(value, "ndim", None) != 0
    )


# (NumPy registers ``np.timedelta64`` as a signed integer, so ``numbers.Integral`` takes it:
# a duration is no count, and comparing one with a Python int overflows or raises)
_NOT_NUMBERS = (bool, np.bool_, np.timedelta64, np.datetime64)


def is_int(value: Any) -> bool:
    """True for a Python or NumPy integer, False for ``bool``, NumPy's time types and
    everything else.

    Example:
        >>> is_int(3), is_int(np.uint8(3)), is_int(True), is_int(np.timedelta64(5))
        (True, True, False, False)
    """
    return isinstance(value, numbers.Integral) and not isinstance(value, _NOT_NUMBERS)


def is_real(value: Any) -> bool:
    """True for a real number (int, float, NumPy scalar), False for ``bool`` and NumPy's
    time types."""
    return isinstance(value, numbers.Real) and not isinstance(value, _NOT_NUMBERS)


def is_finite(value: Any) -> bool:
    """True for a real number that is a finite float (``10**400`` is not: it overflows), never ``bool``."""
    if not is_real(value):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def is_whole(value: Any) -> bool:
    """True for a finite real number with no fractional part (``3``, ``3.0``), never ``bool``."""
    return is_finite(value) and value == int(value)


# A *field spec* says what a field of a summary dict holds, for `field_problem`: a kind
# (``"str"``, ``"count"``: an int >= 0, ``"number"``: a finite real, ``"any"``), a dict of the
# keys a mapping must have (a key written ``"name?"`` is optional), ``Items``/``[spec]`` (a
# list), ``Each`` (a mapping's values), ``Maybe`` (or None), or a function ``(value, where)
# -> problem or None`` for what the rest cannot say.
_KINDS = {
    "str": ("a str", lambda v: isinstance(v, str)),
    "bool": ("true or false", lambda v: isinstance(v, bool)),
    # (at most 2**53, exact as a float: a count of 10**400 overflowed the rates made of it)
    "count": ("an int >= 0", lambda v: is_int(v) and 0 <= v <= 2**53),
    "number": ("a finite number", is_finite),
    "any": ("a value", lambda v: True),
}


class Items:
    """A field spec: a list (or tuple) of at least ``least`` items, each matching ``spec``."""

    def __init__(self, spec: Any, least: int = 0):
        self.spec, self.least = spec, least


class Each:
    """A field spec: a mapping of at least ``least`` entries, each value matching ``spec``."""

    def __init__(self, spec: Any, least: int = 0):
        self.spec, self.least = spec, least


class Maybe:
    """A field spec: None, or what ``spec`` says."""

    def __init__(self, spec: Any):
        self.spec = spec


def _noun(spec: Any) -> str:
    if isinstance(spec, str):
        return _KINDS[spec][0]
    if isinstance(spec, Maybe):
        return f"{_noun(spec.spec)} or None"
    if isinstance(spec, (Items, list)):
        return "a list" if isinstance(spec, list) or not spec.least else "a non-empty list"
    if isinstance(spec, Each) and spec.least:
        return "a non-empty mapping"
    return "a mapping" if isinstance(spec, (dict, Each)) else "a value"


def _got(value: Any) -> str:
    return "None" if value is None else f"{type(value).__name__} {brief(value, 60)}"


def field_problem(value: Any, spec: Any, where: str) -> str | None:
    """What is wrong with ``value`` by the field spec ``spec`` (None: nothing), naming the
    field by its path from ``where``: the check of a summary dict before it is read (a
    malformed one was a bare ``KeyError: 'mean'`` or ``'NoneType' object is not subscriptable``).

    Example:
        >>> spec = {"ks": Items("count", least=1), "note?": "str"}
        >>> field_problem({"ks": [1, 2]}, spec, "grid") is None
        True
        >>> field_problem({"ks": "12"}, spec, "grid")
        "Expect grid['ks'] to be a non-empty list, got str '12'"
        >>> field_problem({"ks": [1, -2]}, spec, "grid")
        "Expect grid['ks'][1] to be an int >= 0, got int -2"
        >>> field_problem({}, spec, "grid")
        "Expect grid['ks'] to be a non-empty list, but it is missing"
    """
    if isinstance(spec, Maybe):
        return None if value is None else field_problem(value, spec.spec, where)
    if isinstance(spec, str):
        ok = _KINDS[spec][1](value)
    elif isinstance(spec, (list, Items)):
        spec = spec if isinstance(spec, Items) else Items(spec[0])
        ok = isinstance(value, (list, tuple)) and len(value) >= spec.least
    elif isinstance(spec, (dict, Each)):
        ok = isinstance(value, Mapping) and (not isinstance(spec, Each) or len(value) >= spec.least)
    else:
        return spec(value, where)
    if not ok:
        return f"Expect {where} to be {_noun(spec)}, got {_got(value)}"
    if isinstance(spec, Items):
        items: Iterable[tuple[Any, Any]] = enumerate(value)
    elif isinstance(spec, Each):
        items = value.items()
    elif isinstance(spec, dict):
        for key, inner in spec.items():
            name = key.rstrip("?")
            if name in value:
                problem = field_problem(value[name], inner, f"{where}[{name!r}]")
                if problem is not None:
                    return problem
            elif not key.endswith("?"):
                return f"Expect {where}[{name!r}] to be {_noun(inner)}, but it is missing"
        return None
    else:
        return None
    for key, item in items:
        problem = field_problem(item, spec.spec, f"{where}[{brief(key, 60)}]")
        if problem is not None:
            return problem
    return None


def json_int_keys(mapping: Mapping[Any, Any]) -> dict[Any, Any]:
    """``mapping`` with each key that is a string of ASCII digits as the int it spells: JSON
    writes an int key as a string (a spec stored as JSON: ``{4: 1}`` comes back ``{"4": 1}``).
    Other keys stay as they are, for the caller's own check to judge.

    Example:
        >>> json_int_keys({"4": 1, 8: 3, "x": 0, "٤": 2})
        {4: 1, 8: 3, 'x': 0, '٤': 2}
    """
    return {
        int(key) if isinstance(key, str) and key.isascii() and key.isdigit() else key: value
        for key, value in mapping.items()
    }


def check_positive_int(value: Any, name: str, *, subject: str | None = None) -> int:
    """Return ``value`` as an ``int`` if it is an integer >= 1, else raise ``ValueError``.

    Args:
        value: The value to check.
        name: The argument's name, quoted in the message.
        subject: Replaces "`name`" in the message (e.g. "every turn in `schedule`").
    """
    if not is_int(value) or value <= 0:
        raise ValueError(
            f"Expect {subject or f'`{name}`'} to be a positive int, got {brief(value)}"
        )
    return int(value)


def check_turn_budget(value: Any, name: str = "turn_budget") -> int:
    """Return ``value`` as an int if it is an integer from 1 to `MAX_TURN_BUDGET`, else raise
    ``ValueError``.

    Example:
        >>> check_turn_budget(10**12)
        Traceback (most recent call last):
        ...
        ValueError: Expect `turn_budget` to be at most 2,147,483,647, got 1000000000000
    """
    value = check_positive_int(value, name)
    if value > MAX_TURN_BUDGET:
        raise ValueError(f"Expect `{name}` to be at most {MAX_TURN_BUDGET:,}, got {brief(value)}")
    return value


def check_bool(value: Any, name: str) -> bool:
    """Return ``value`` as a ``bool`` if it is one (Python or NumPy), else raise ``ValueError``.

    A switch given ``"no"``, ``0.5`` or a list is a mistake, never a truthy ``True``.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"Expect `{name}` to be True or False, got {brief(value)}")
    return bool(value)


def check_dir_path(value: Any, name: str) -> Path:
    """``value`` as a ``Path`` when it names a directory: a str or a Path, neither empty (it
    would be the working directory) nor holding a NUL byte; else a ``ValueError`` naming it
    (pathlib's and the OS's errors name no argument)."""
    text = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    if not isinstance(text, str):  # (bytes, a number, None)
        raise ValueError(
            f"Expect `{name}` to be a directory path (a str or a Path), got {brief(value)}"
        )
    if isinstance(value, str) and not text.strip():  # (as the command line's `directory_path`)
        raise ValueError(
            f"Expect `{name}` to be a directory path, got an empty one (it would be the working "
            "directory: give '.' to mean it)"
        )
    if "\0" in text:
        raise ValueError(
            f"Expect `{name}` to be a directory path, got one with a NUL byte: "
            f"{brief(text, PATH_CHARS)}"
        )
    return Path(text)


def check_batch_size(value: Any, name: str = "max_batch_size") -> int:
    """Return ``value`` as an ``int`` if it is an integer from 1 to `MAX_BATCH_SIZE` (episodes
    in flight), else raise ``ValueError``."""
    if not is_int(value) or not 1 <= value <= MAX_BATCH_SIZE:
        raise ValueError(
            f"Expect `{name}` to be an int from 1 to {MAX_BATCH_SIZE:,} (episodes in flight), "
            f"got {brief(value)}"
        )
    return int(value)


def agent_flag(agent: Any, flag: str, name: str = "agent") -> bool:
    """``agent``'s declared ``flag`` (`AGENT_FLAGS`; False when it declares none), or
    ``TypeError`` unless it is a bool: ``needs_oracle = "False"`` is a mistake, never a grant
    of the oracle's actions or the hidden budget."""
    value = getattr(agent, flag, False)
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"Expect `{name}.{flag}` to be True or False, got {brief(value)}")
    return bool(value)


def refuse_team_only(agent: Any, name: str = "agent") -> None:
    """A ValueError for an agent that plays a team game's house policy (``needs_house``): a
    single-agent engine has no house to hand it, and each of its episodes failed to run,
    retried, before the run advised a rerun that could never succeed."""
    if agent_flag(agent, "needs_house", name):
        raise ValueError(
            f"Expect `{name}` to play a single-agent game, got {brief(agent)}: it plays a team "
            "game's house policy (needs_house); run it through turnbudget.eval.evaluate_team"
        )


def check_seed(value: Any, name: str = "seed", *, most: int = MAX_SEED) -> int:
    """Return ``value`` as an ``int`` if it is an integer from 0 to ``most`` (NumPy ints too,
    never ``bool``), else raise ``ValueError``: ``1.9`` or ``"7"`` is a mistake, never seed 1 or 7.

    Example:
        >>> check_seed(-1)
        Traceback (most recent call last):
        ...
        ValueError: Expect `seed` to be an int from 0 to 18,446,744,073,709,551,615, got -1
    """
    if not is_int(value) or not 0 <= value <= most:
        raise ValueError(f"Expect `{name}` to be an int from 0 to {most:,}, got {brief(value)}")
    return int(value)


def check_label(value: Any, name: str = "label", *, subject: str | None = None) -> str:
    """Return ``value`` if it is a usable label, else raise ``ValueError``.

    A label is a non-empty string of printable Unicode (it can be written as
    UTF-8: no lone surrogate such as ``"\\udcff"``, no control character), at
    most `MAX_LABEL_BYTES` bytes of UTF-8, that stays inside a directory when it
    names something in it (the command line's ``runs/<label>``; an agent's name
    such as ``policy:zoo/maze`` may hold a ``/``): no part ``.`` or ``..``, no
    leading ``/`` or ``\\``.

    Args:
        value: The value to check.
        name: The argument's name, quoted in the message.
        subject: Replaces "`name`" in the message.

    Example:
        >>> check_label("oracle-eps0.1")
        'oracle-eps0.1'
        >>> check_label("../runs")
        Traceback (most recent call last):
        ...
        ValueError: Expect `label` to stay inside a directory (no part '.' or '..', no leading '/' or backslash), got '../runs'
    """
    what = subject or f"`{name}`"
    if not isinstance(value, str) or not value:
        raise ValueError(f"Expect {what} to be a non-empty string, got {brief(value)}")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError(
            f"Expect {what} to be valid Unicode text (writable as UTF-8; a lone surrogate is "
            f"not), got {brief(value)}"
        ) from None
    if size > MAX_LABEL_BYTES:
        raise ValueError(
            f"Expect {what} to be at most {MAX_LABEL_BYTES} bytes of UTF-8 (it names files), "
            f"got {size} bytes: {brief(value)}"
        )
    if not value.isprintable():
        raise ValueError(
            f"Expect {what} to be printable text (no control characters), got {brief(value)}"
        )
    if value != value.strip():  # (" " names a directory no one can tell from another)
        raise ValueError(f"Expect {what} to have no leading or trailing spaces, got {brief(value)}")
    parts = value.replace("\\", "/").split("/")
    if not parts[0] or any(part in (".", "..") for part in parts):
        raise ValueError(
            f"Expect {what} to stay inside a directory (no part '.' or '..', no leading '/' or "
            f"backslash), got {brief(value)}"
        )
    # (``runs/<label>`` must be where a report looks: it skips hidden folders, and searches
    # as deep as a label may nest)
    if any(part.startswith(".") for part in parts):
        raise ValueError(
            f"Expect {what} to have no part starting with '.' (a hidden folder, which reports "
            f"do not search), got {brief(value)}"
        )
    if len(parts) > MAX_LABEL_PARTS:
        raise ValueError(
            f"Expect {what} to nest at most {MAX_LABEL_PARTS} folders deep (parts between "
            f"'/'; a report searches no deeper), got {len(parts)}: {brief(value)}"
        )
    return value


# The optional methods the engines call when an agent has them.
_AGENT_HOOKS = ("observe", "observe_batch", "step_note", "step_notes", "end_episode", "preflight")


def check_agent(value: Any, name: str = "agent", *, also: str = "") -> Any:
    """Return ``value`` if it is an agent the engine can drive, else raise ``TypeError``.

    An agent is an instance with ``reset(seed)`` and ``act(observation, info)``
    (`turnbudget.agents.Agent`), ``reset_episode`` and ``act_batch``
    (`turnbudget.agents.BatchAgent`), or ``reset_async`` and ``act_async``
    (`turnbudget.agents.AsyncAgent`). A class is not one: the message says to
    instantiate it. Its declared flags (`AGENT_FLAGS`) must be bools and a batch agent's
    ``max_batch_size`` an int from 1 to `MAX_BATCH_SIZE`. ``also`` ends the message of a
    value that is no agent (what else the caller takes).

    Example:
        >>> check_agent(None)
        Traceback (most recent call last):
        ...
        TypeError: Expect `agent` to be an agent: an object with reset(seed) and act(observation, info) (an Agent), reset_episode(episode_id, seed) and act_batch(episode_ids, observations, infos) (a BatchAgent), or reset_async and act_async (an AsyncAgent), got None
    """
    if isinstance(value, type):
        raise TypeError(
            f"Expect `{name}` to be an agent instance, got the class {value.__qualname__}: "
            f"instantiate it, e.g. {value.__name__}(){also}"
        )
    forms = (("reset", "act"), ("reset_episode", "act_batch"), ("reset_async", "act_async"))
    if not any(all(callable(getattr(value, m, None)) for m in form) for form in forms):
        hint = (
            " (a spec string: build it with turnbudget.agents.make_agent)"
            if isinstance(value, str)
            else ""
        )
        raise TypeError(
            f"Expect `{name}` to be an agent: an object with reset(seed) and act(observation, "
            "info) (an Agent), reset_episode(episode_id, seed) and act_batch(episode_ids, "
            "observations, infos) (a BatchAgent), or reset_async and act_async (an AsyncAgent), "
            f"got {brief(value)}{hint}{also}"
        )
    for flag in AGENT_FLAGS:
        agent_flag(value, flag, name)
    for hook in _AGENT_HOOKS:  # (one that is there but no method failed every call to it)
        method = getattr(value, hook, None)
        if method is not None and not callable(method):
            raise TypeError(
                f"Expect `{name}.{hook}` to be a method (or absent: it is optional), got "
                f"{brief(method)}"
            )
    if callable(getattr(value, "act_batch", None)):
        check_batch_size(getattr(value, "max_batch_size", 1), f"{name}.max_batch_size")
    return value


def check_probability(value: Any, name: str) -> float:
    """Return ``value`` as a ``float`` if it is a number in [0, 1], else raise ``ValueError``.
    ``-0.0`` is 0.0 (its sign made another label and another run: ``oracle-eps-0``)."""
    if not is_real(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"Expect `{name}` to be a number in [0, 1], got {brief(value)}")
    return float(value) + 0.0


#: The reset options a turnbudget stack reads (`check_reset_options`).
STACK_RESET_OPTIONS = frozenset({"turn_budget", "repeat", "episode_id"})


# Other names of a stack option, as the docs and papers call it (matched lower-cased, but
# "T": a lower-case "t" may well be an env's own).
_OPTION_ALIASES = {"budget": "turn_budget"}
# The prefixes of options of their own: a stack option's name extended (`turn_budget_s`).
_EXTENDED = tuple(f"{option}_" for option in sorted(STACK_RESET_OPTIONS))


def _refuse_misspelt_option(key: str) -> None:
    """A ``ValueError`` for a reset option spelt like one of `STACK_RESET_OPTIONS` but not it:
    ``{"turn_budgt": 5}`` passed through as an env's own option, and the episode played under
    the default budget without a word."""
    import difflib

    lowered = key[:100].lower()
    if key == "T" or lowered in _OPTION_ALIASES:
        near = [_OPTION_ALIASES.get(lowered, "turn_budget")]
    elif lowered.startswith(_EXTENDED):
        return
    else:
        near = difflib.get_close_matches(lowered, sorted(STACK_RESET_OPTIONS), n=1, cutoff=0.8)
    if near:
        raise ValueError(
            f"Unknown reset option {brief(key)}: did you mean {near[0]!r}? (The stack reads "
            f"{', '.join(sorted(STACK_RESET_OPTIONS))}; an env's own option passes through, "
            "spelt unlike them.)"
        )


def check_reset_options(seed: Any, options: Any) -> dict[str, Any]:
    """Check the arguments of a turn-budget stack's ``reset`` and return ``options`` as a new dict.

    ``seed`` is None or an int from 0 to `MAX_SEED` (Gymnasium's rule, bools refused);
    ``options`` is None or a mapping, whose stack options are checked when
    present and not None: ``turn_budget`` a positive int (`check_turn_budget`),
    ``repeat`` an int >= 0.
    Other keys pass through unchecked (an env may read its own), but for one spelt like a
    stack option and not it (``turn_budgt``), which is refused, naming the option meant.

    Example:
        >>> check_reset_options(0, {"turn_budget": 5, "repeat": 0})
        {'turn_budget': 5, 'repeat': 0}
        >>> check_reset_options(0, {"repeat": -1})
        Traceback (most recent call last):
        ...
        ValueError: Expect the `repeat` option to be an int >= 0, got -1
    """
    if is_int(seed) and not isinstance(seed, int) and seed >= 0:
        # (Gymnasium's rule: its np_random refuses a NumPy integer, which "an int >= 0"
        # alone would leave the caller to puzzle out)
        raise ValueError(
            "Expect `seed` to be a Python int >= 0 or None (Gymnasium's rule), "
            f"got {brief(seed)}: pass int(seed)"
        )
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
        raise ValueError(f"Expect `seed` to be an int >= 0 or None, got {brief(seed)}")
    # (a 64-bit word, as the team games and the evaluator take: a recorder wrote a seed of
    # 4,301 digits into its episode id with str(), which raised after the game had reset)
    if seed is not None and seed > MAX_SEED:
        raise ValueError(f"Expect `seed` to be at most {MAX_SEED:,} (64 bits), got {brief(seed)}")
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValueError(f"Expect `options` to be a dict or None, got {brief(options)}")
    options = dict(options)
    for key in options:
        if key not in STACK_RESET_OPTIONS and isinstance(key, str):
            _refuse_misspelt_option(key)
    if options.get("turn_budget") is not None:
        check_turn_budget(options["turn_budget"])
    repeat = options.get("repeat")
    if repeat is not None and (not is_int(repeat) or repeat < 0):
        raise ValueError(f"Expect the `repeat` option to be an int >= 0, got {brief(repeat)}")
    return options


def normalize_weights(weights: Iterable[Any] | None, n: int, per: str) -> tuple[float, ...]:
    """Check ``n`` finite weights >= 0 with a positive sum and return them summing to 1.

    ``None`` means uniform. ``per`` names what each weight belongs to, for the
    message ("kind", "value").
    """
    if weights is None:
        return (1.0 / n,) * n
    if not is_listlike(weights):
        raise ValueError(
            f"Expect `weights` to be a sequence of numbers (one per {per}) or None, "
            f"got {brief(weights)}"
        )
    weights = list(weights)
    if len(weights) != n:
        raise ValueError(f"Expect `weights` to have one weight per {per} ({n}), got {len(weights)}")
    for w in weights:
        if not is_finite(w) or w < 0:
            raise ValueError(f"Expect every weight to be a finite number >= 0, got {brief(w)}")
    total = float(sum(weights))
    if not 0 < total < math.inf:
        raise ValueError(
            f"Expect `weights` to have a positive sum that is finite, got {brief(weights)}"
        )
    return tuple(float(w) / total for w in weights)


def renamed(new: Any, old: Any, new_name: str, old_name: str, where: str) -> Any:
    """The value of an argument renamed ``old_name`` -> ``new_name``: ``old`` warns (one release).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     renamed(None, 8, "turn_budget", "budget", "make")
        8
        >>> str(caught[0].message)
        'make(budget=) is deprecated: use make(turn_budget=); budget= will be removed in the next release'
    """
    if old is None:
        return new
    if new is not None:
        raise TypeError(
            f"{where}() got `{new_name}` and its old name `{old_name}`: pass `{new_name}`"
        )
    warnings.warn(
        f"{where}({old_name}=) is deprecated: use {where}({new_name}=); "
        f"{old_name}= will be removed in the next release",
        DeprecationWarning,
        stacklevel=3,
    )
    return old


def load_object(spec: str, *, what: str = "entry point") -> Any:
    """Import ``"package.module:attr"`` and return the attribute.

    Args:
        spec: ``module:attr``; ``attr`` may be dotted (``module:Class.method``).
        what: What the spec names, for the error messages.

    Raises:
        ValueError: ``spec`` is not of the form ``module:attr``.
        ImportError: the module cannot be imported (the message names the spec).
        AttributeError: the module has no such attribute.
    """
    if not isinstance(spec, str):
        raise ValueError(f"Expect the {what} to be a 'module:attr' string, got {spec!r}")
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"Expect the {what} to be a 'module:attr' string, got {spec!r}")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise ImportError(f"Cannot import {module_name!r} for {what} {spec!r}: {err}") from err
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AttributeError(
                f"{module_name!r} has no attribute {attr!r} ({what} {spec!r})"
            ) from None
    return obj


def make_folders(path: Path) -> list[Path]:
    """``path.mkdir(parents=True, exist_ok=True)``, returning the folders it made, innermost
    first. When it fails (an ``OSError``: a name too long, no permission), the folders it
    made are removed again before the error is raised: a refused output directory left the
    parents it had just made."""
    created: list[Path] = []
    try:
        created = [d for d in (path, *path.parents) if not d.exists()]
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        for folder in created:  # (one not made, or not empty: another process's since)
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    return created
